"""summarize reads a Claude Code session in the order the model saw it, and accounts for every line.

The fixtures in tests/fixtures/claude-code/ (written for this project) reproduce what real sessions show:
records written out of order, a rewind that leaves an abandoned branch, a response split over records.
Expected outputs are worked out by hand from the fixtures' uuids and parentUuids.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.files import write_jsonl
from helpers.sessions import ClaudeCodeSession

from compactcli import dialects
from compactcli.layers.validate import validate_records

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"
CLAUDE_CODE = dialects.get("claude-code")


def summarize(tmp_path: Path, fixture: str, *args: str) -> tuple[list[bytes], list[bytes], dict]:
    """(input lines, output lines, the JSON report) of `summarize --backend digest` in place."""
    path = tmp_path / fixture
    shutil.copy(FIXTURES / fixture, path)
    before = path.read_bytes().splitlines(keepends=True)
    done = run_cli("summarize", "--backend", "digest", "--json", *args, path.name, cwd=tmp_path, text=True)
    assert done.returncode == 0, done.stderr
    return before, path.read_bytes().splitlines(keepends=True), json.loads(done.stdout)


def summary_of(lines: list[bytes]) -> str:
    records = [json.loads(line) for line in lines]
    return next(r["message"]["content"] for r in records if r.get("isCompactSummary"))


def test_out_of_order_records_are_cut_where_the_model_saw_them(tmp_path: Path) -> None:
    # Chain order 1, 2, 4, 3: the answer (line 3) comes after the result (line 4) it follows. Keeping
    # the last message keeps the answer alone; in file order the result (line 4) would have been the
    # last message, pulling its call (line 2) back with it.
    before, after, report = summarize(tmp_path, "out-of-order.jsonl", "--keep-last", "1")
    records = [json.loads(line) for line in after]
    assert [r.get("subtype") or r["type"] for r in records] == ["compact_boundary", "user", "assistant"]
    kept = records[2]
    assert kept["uuid"] == "a2"
    assert kept["parentUuid"] == records[1]["uuid"]  # relinked: its parent r1 was summarized
    assert b'"uuid":"r1"' not in b"".join(after)  # the result, written after the kept answer, is left out
    assert report["stats"]["summarized"] == 3
    assert report["stats"]["replaced_lines"] == 3  # lines 1, 2 and 4, all in the archive
    archive = Path(report["stats"]["archive"])
    assert archive.read_bytes().splitlines(keepends=True) == before
    assert validate_records(CLAUDE_CODE, enumerate(records, 1)) == []


def test_an_abandoned_branch_is_not_summarized(tmp_path: Path) -> None:
    # Lines 5-7 are the attempt the user rewound (it ran `rm -rf tests`); the conversation goes on at
    # line 8. Keeping the last 3 messages (lines 9-11) summarizes lines 1-4 and 8 only.
    _, after, report = summarize(tmp_path, "rewind.jsonl", "--keep-last", "3")
    summary = summary_of(after)
    assert "rm -rf tests" not in summary
    user_lines = [line for line in summary.splitlines() if line.startswith("- [message")]
    assert [line.split("] ", 1)[1] for line in user_lines] == ["now add tests for it, in tests/test_cli.py"]
    assert report["stats"]["summarized"] == 5
    records = [json.loads(line) for line in after]
    assert [r.get("uuid") for r in records[2:]] == ["a4", "r3", "a5"]


def test_an_abandoned_branch_after_the_cut_stays_untouched(tmp_path: Path) -> None:
    # Keeping 6 messages puts the cut at line 2 (the result at line 3 needs its call): lines 5-7 lie
    # after it and are copied byte for byte, parents and all.
    before, after, report = summarize(tmp_path, "rewind.jsonl", "--keep-last", "6")
    assert report["stats"]["summarized"] == 1
    assert after[-7:] == before[-7:]  # lines 5-11, untouched (line 5's parent a2 is still there)
    assert json.loads(after[2])["uuid"] == "a1"
    assert json.loads(after[2])["parentUuid"] == json.loads(after[1])["uuid"]


@pytest.mark.parametrize("fixture", ["split-message.jsonl", "out-of-order.jsonl", "rewind.jsonl"])
@pytest.mark.parametrize("keep_last", range(0, 10))
def test_every_cut_of_a_chain_fixture_validates(tmp_path: Path, fixture: str, keep_last: int) -> None:
    path = tmp_path / fixture
    shutil.copy(FIXTURES / fixture, path)
    done = run_cli("summarize", "--backend", "digest", "--keep-last", str(keep_last), path.name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    checked = run_cli("validate", path.name, cwd=tmp_path, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def meta_session() -> list[dict]:
    """A Claude Code session with isMeta records after the task: a skill's body and an image note."""
    session = ClaudeCodeSession()
    add = session.add
    add("user", "Port the parser to the new tokenizer")
    add("assistant", [{"type": "text", "text": "Looking at the parser."}])
    skill = "Base directory for this skill: /skills/refactor\n\nSKILL BODY TEXT"
    add("user", [{"type": "text", "text": skill}], isMeta=True)
    add("user", "[Image: original 1200x800, displayed at 600x400]", isMeta=True)
    add("user", "also keep the old API working")
    add("assistant", [{"type": "text", "text": "Done."}])
    return session.records


def test_meta_records_are_counted_but_never_the_users_words(tmp_path: Path) -> None:
    path = tmp_path / "meta.jsonl"
    records = meta_session()
    write_jsonl(path, records)
    without = tmp_path / "without.jsonl"
    write_jsonl(without, [r for r in records if not r.get("isMeta")])
    counts = {}
    for name in ("meta.jsonl", "without.jsonl"):
        done = run_cli("estimate", "--method", "heuristic", "--json", name, cwd=tmp_path, text=True)
        counts[name] = json.loads(done.stdout)["stats"]["tokens"]
    assert counts["meta.jsonl"] > counts["without.jsonl"]  # the model is sent them: they are counted

    done = run_cli("summarize", "--backend", "digest", "meta.jsonl", cwd=tmp_path, text=True)
    assert done.returncode == 0, done.stderr
    summary = summary_of(path.read_bytes().splitlines())
    later = summary.split("## Later user messages\n", 1)[1].split("\n\n", 1)[0]
    assert later == "- [message 5] also keep the old API working"
    assert "SKILL BODY" not in summary and "[Image:" not in summary
    assert "Port the parser to the new tokenizer" in summary.split("## Task\n", 1)[1]


def test_meta_records_are_labelled_for_the_model(fake_api, tmp_path: Path) -> None:
    path = tmp_path / "meta.jsonl"
    write_jsonl(path, meta_session())
    args = ("summarize", "--backend", "anthropic", "meta.jsonl")
    done = run_cli(*args, cwd=tmp_path, env=fake_api.env(), text=True)
    assert done.returncode == 0, done.stderr
    [call] = fake_api.calls("messages")
    sent = call.body["messages"][0]["content"]
    assert "--- message 3 (user turn, added by the agent, not the user's words)\n" in sent
    assert "--- message 5 (user)\nalso keep the old API working" in sent


GARBAGE = b"this line is not JSON {\n"


@pytest.mark.parametrize("keep_last", [0, 1, 2])
def test_kept_unreadable_lines_reach_the_output_in_place(tmp_path: Path, keep_last: int) -> None:
    messages = [
        {"role": "user", "content": "Fix the bug in calc.py"},
        {"role": "assistant", "content": "Looking."},
        {"role": "user", "content": "and the docs"},
        {"role": "assistant", "content": "Both done."},
    ]
    lines = [json.dumps(m).encode() + b"\n" for m in messages]
    path = tmp_path / "t.jsonl"
    path.write_bytes(lines[0] + GARBAGE + b"".join(lines[1:3]) + GARBAGE.replace(b"this", b"that") + lines[3])
    done = run_cli(
        "summarize",
        "--backend",
        "digest",
        "--on-invalid",
        "keep",
        "--keep-last",
        str(keep_last),
        "--json",
        path.name,
        cwd=tmp_path,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    out = path.read_bytes().splitlines(keepends=True)
    summary_at = next(i for i, line in enumerate(out) if b"Conversation compressed" in line)
    expected = {
        # both unreadable lines lie before the cut: above the summary, in their order
        0: [GARBAGE, GARBAGE.replace(b"this", b"that"), "summary"],
        1: [GARBAGE, GARBAGE.replace(b"this", b"that"), "summary", lines[3]],
        # the second one lies after the cut: it stays between the kept messages
        2: [GARBAGE, "summary", lines[2], GARBAGE.replace(b"this", b"that"), lines[3]],
    }[keep_last]
    assert [("summary" if i == summary_at else line) for i, line in enumerate(out)] == expected
    stats = json.loads(done.stdout)["stats"]
    assert stats["replaced_lines"] == {0: 4, 1: 3, 2: 2}[keep_last]
