"""Claude Code conversations follow the parentUuid chain and message.id, not the file order.

The fixtures in tests/fixtures/claude-code/ were written for this project, one per pattern real sessions
show: a response split over records with results written between its parts, records written out of
order, a rewind that leaves an abandoned branch, sub-agent files in <session>/subagents/.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.files import write_jsonl

from compactcli import dialects
from compactcli.layers.validate import validate_records
from compactcli.pipelines.transcript import ConversationLines

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"
CLAUDE_CODE = dialects.get("claude-code")


def file_order_violations(path: Path) -> list[tuple[int, str]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [(v.line, v.rule) for v in validate_records(CLAUDE_CODE, enumerate(records, 1))]


def chain_lines(path: Path) -> list[int]:
    with open(path, "rb") as f:
        return [line.number for line in ConversationLines(f, str(path), "error", CLAUDE_CODE)]


@pytest.mark.parametrize(
    ("fixture", "order", "in_file_order"),
    [
        # msg_A's four parts first, then the progress record and the result written between them
        (
            "split-message.jsonl",
            [1, 2, 3, 4, 7, 5, 6, 8, 9, 10],
            {(4, "missing-tool-result"), (8, "orphan-tool-result")},
        ),
        # line 3's parent is line 4: the result comes before the answer that follows it (validate merges
        # the two assistant records into one turn either way; estimate and replay see the order)
        ("out-of-order.jsonl", [1, 2, 4, 3], set()),
        # lines 5-7 are the first attempt after the rewind: outside the conversation (valid in file
        # order too; estimate and micro see the difference)
        ("rewind.jsonl", [1, 2, 3, 4, 8, 9, 10, 11], set()),
    ],
)
def test_a_valid_session_is_read_in_chain_order(fixture, order, in_file_order):
    path = FIXTURES / fixture
    # The fixture reproduces the pattern: read in file order it looks broken.
    assert set(file_order_violations(path)) == in_file_order
    assert chain_lines(path) == order
    result = invoke("validate", "--json", path)
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["status"] == "valid"


def test_a_broken_pairing_on_the_chain_still_fails_with_its_line():
    path = FIXTURES / "broken-pairing.jsonl"
    result = invoke("validate", path)
    assert result.exit_code == 1
    assert f"{path}:3: missing-tool-result: tool_use toolu_2" in result.stdout


def test_the_abandoned_branch_is_not_counted_but_stays_in_the_file(tmp_path):
    path = tmp_path / "rewind.jsonl"
    shutil.copyfile(FIXTURES / "rewind.jsonl", path)
    whole = invoke("estimate", "--method", "seed", "--format", "json", path)
    assert whole.exit_code == 0
    assert json.loads(whole.stdout)["stats"]["messages"] == 8  # 11 message records, 3 abandoned
    before = path.read_bytes().splitlines()
    micro = invoke("micro", "--keep", "1", "--min-chars", "0", path)
    assert micro.exit_code == 0, micro.output
    after = path.read_bytes().splitlines()
    assert after[4:7] == before[4:7], "the abandoned branch is untouched"
    assert b"[Previous: used Bash]" in after[2]  # the older result of the conversation
    assert after[9] == before[9]  # its last result (--keep 1)


def test_sub_agent_files_are_conversations_of_their_own():
    result = invoke("validate", "-v", "--json", FIXTURES / "session.jsonl", FIXTURES / "session")
    assert result.exit_code == 0, result.stdout
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted(Path(r["path"]).name for r in reports) == ["agent-a1b2c3d.jsonl", "session.jsonl"]
    assert all(r["status"] == "valid" and r["stats"]["conversations"] == 1 for r in reports)


@pytest.mark.parametrize("odd_id", [{"x": 1}, ["msg_A"], 7])
def test_a_message_id_that_is_no_string_groups_nothing(tmp_path, odd_id):
    # A damaged log: two assistant records whose message.id is no string. The chain cannot group by such
    # an id (a dict or list cannot even be looked up), so each record stands alone; reading goes on.
    def record(uuid, parent, kind, content, **message):
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
                "message": {"role": kind, "content": content, **message}}  # fmt: skip

    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * 200}
    records = [
        record("u1", None, "user", "List the files."),
        record("a1", "u1", "assistant", [use], id=odd_id),
        record("u2", "a1", "user", [result]),
        record("a2", "u2", "assistant", [{"type": "text", "text": "Done."}], id=odd_id),
    ]
    path = tmp_path / "odd-id.jsonl"
    write_jsonl(path, records)
    for args in (["validate"], ["estimate"], ["replay"], ["micro", "--keep", "0", "-o", "-"]):
        run = invoke(*args, path)
        assert run.exit_code == 0, (args, run.output, run.exception)
    micro = invoke("micro", "--keep", "0", "-o", "-", path)
    assert (
        json.loads(micro.stdout.splitlines()[2])["message"]["content"][0]["content"]
        == "[Previous: used Bash]"
    )
