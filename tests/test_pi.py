"""pi sessions (docs/design.md, "pi sessions"): the path pi sends, micro, summarize's appended compaction."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import pytest
from helpers import reference
from helpers.cli import run_cli
from helpers.files import write_jsonl
from helpers.invariants import assert_only_results_cleared, is_default_placeholder, violations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactcli.dialects.pi import PI, PathOrder

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "pi" / "session.jsonl"
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def entry(own: str, parent: str | None, kind: str = "message", **fields: object) -> dict:
    return {"type": kind, "id": own, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", **fields}


def user(own: str, parent: str | None, text: str) -> dict:
    return entry(own, parent, message={"role": "user", "content": [{"type": "text", "text": text}]})


def assistant(own: str, parent: str | None, *blocks: dict, stop: str = "toolUse", context: int = 0) -> dict:
    usage = {"input": context, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": context + 10}
    message = {"role": "assistant", "content": list(blocks), "stopReason": stop, "usage": usage}
    return entry(own, parent, message=message)


def call(call_id: str, name: str = "bash", **arguments: object) -> dict:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments or {"command": "ls"}}


def result(
    own: str, parent: str | None, call_id: str, text: str, name: str = "bash", **extra: object
) -> dict:
    message = {"role": "toolResult", "toolCallId": call_id, "toolName": name, "isError": False, **extra}
    message["content"] = [{"type": "text", "text": text}]
    return entry(own, parent, message=message)


def order_of(records: list[dict]) -> list[int]:
    """The 1-based lines PathOrder gives."""
    order = PathOrder()
    for line, record in enumerate(records, 1):
        order.add(line, line * 100, record)
    return [line for line, _ in order.order()]


write = partial(write_jsonl, separators=(",", ":"))


def test_the_path_from_the_last_entry_leaves_an_abandoned_branch_out():
    records = [
        HEADER,
        user("u1", None, "first"),  # 2
        assistant("a1", "u1", {"type": "text", "text": "answer"}, stop="stop"),  # 3
        user("u2", "a1", "abandoned"),  # 4
        assistant("a2", "u2", {"type": "text", "text": "gone"}, stop="stop"),  # 5
        user("u3", "a1", "asked again"),  # 6: a sibling of u2
        assistant("a3", "u3", {"type": "text", "text": "kept"}, stop="stop"),  # 7
    ]
    assert order_of(records) == [1, 2, 3, 6, 7]  # the header first


def test_the_last_compaction_comes_before_its_first_kept_entry_and_earlier_ones_go():
    records = [
        HEADER,
        user("u1", None, "one"),  # 2
        assistant("a1", "u1", {"type": "text", "text": "1"}, stop="stop"),  # 3
        user("u2", "a1", "two"),  # 4
        entry("c1", "u2", "compaction", summary="s1", firstKeptEntryId="u2", tokensBefore=5),  # 5
        assistant("a2", "c1", {"type": "text", "text": "2"}, stop="stop"),  # 6
        user("u3", "a2", "three"),  # 7
        entry("c2", "u3", "compaction", summary="s2", firstKeptEntryId="a2", tokensBefore=9),  # 8
        user("u4", "c2", "four"),  # 9
    ]
    assert order_of(records) == [1, 2, 3, 4, 8, 6, 7, 9]


def test_a_version_1_compaction_names_its_first_kept_entry_by_index():
    plain = [
        {"type": "session", "id": "s1", "timestamp": "t", "cwd": "/w"},
        {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "one"}},  # index 1
        {"type": "message", "timestamp": "t", "message": {"role": "assistant", "content": []}},  # 2
        {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "two"}},  # 3
        {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 3, "tokensBefore": 1},
        {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "three"}},
    ]
    assert order_of(plain) == [1, 2, 3, 5, 4, 6]


def test_a_file_starting_with_the_header_is_pi(tmp_path: Path):
    done = run_cli("validate", "--json", SAMPLE, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["dialect"] == "pi"
    assert PI.fit(HEADER) == 2 and PI.fit({"type": "message", "role": "user", "content": "x"}) == 0


def test_an_aborted_or_failed_response_is_not_sent(tmp_path: Path):
    records = [
        HEADER,
        user("u1", None, "go"),
        assistant("a1", "u1", call("c1"), stop="aborted"),  # its call was never answered: pi drops it
        assistant("a2", "a1", {"type": "text", "text": ""}, stop="error"),
        user("u2", "a2", "again"),
        assistant("a3", "u2", call("c2"), stop="toolUse", context=1000),
        result("r3", "a3", "c2", "ok"),
    ]
    path = write(tmp_path / "s.jsonl", records)
    done = run_cli("validate", path, text=True)
    assert done.returncode == 0, done.stderr
    estimate = json.loads(run_cli("estimate", "--json", "--method", "usage", path, text=True).stdout)
    assert estimate["stats"]["tokens"] == 1000  # the context of the one call pi made and kept


def test_an_unanswered_call_is_reported(tmp_path: Path):
    records = [HEADER, user("u1", None, "go"), assistant("a1", "u1", call("c1")), user("u2", "a1", "next")]
    records.append(assistant("a2", "u2", {"type": "text", "text": "ok"}, stop="stop"))
    done = run_cli("validate", write(tmp_path / "s.jsonl", records), text=True)
    assert done.returncode == 1 and "s.jsonl:3: missing-tool-result" in done.stdout


def test_micro_writes_the_placeholder_as_a_text_block_drops_details_and_keeps_reads(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLE, path)
    before = path.read_text().splitlines()
    assert run_cli("micro", "--keep", "1", "--min-chars", "10", path).returncode == 0
    after = path.read_text().splitlines()
    changed = [n for n, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
    assert changed
    for n in changed:
        message = json.loads(after[n])["message"]
        assert message["role"] == "toolResult" and message["toolName"] != "read"
        assert message["content"] == [{"type": "text", "text": f"[Previous: used {message['toolName']}]"}]
        assert "details" not in message
        old = json.loads(before[n])
        old["message"].pop("details", None)
        old["message"]["content"] = message["content"]
        assert old == json.loads(after[n])  # nothing else changed
    edits = [n for n in changed if json.loads(before[n])["message"].get("details")]
    assert edits  # an edit's diff went with its output
    again = path.read_bytes()
    assert run_cli("micro", "--keep", "1", "--min-chars", "10", path).returncode == 0
    assert path.read_bytes() == again


def test_summarize_appends_the_compaction_pi_writes(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLE, path)
    before = path.read_bytes()
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "4", path, text=True)
    assert done.returncode == 0, done.stderr
    written = path.read_bytes()
    assert written.startswith(before) and written.count(b"\n") == before.count(b"\n") + 1
    records = [json.loads(line) for line in written.splitlines()]
    compaction, leaf = records[-1], records[-2]
    assert set(compaction) == {
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
    }
    assert compaction["type"] == "compaction" and len(compaction["id"]) == 8
    assert compaction["parentId"] == leaf["id"]
    assert compaction["summary"].startswith("[Conversation compressed. Transcript: ")
    # The last 4 messages are kept: the user's last prompt and what followed it.
    kept = next(r for r in records if r.get("id") == compaction["firstKeptEntryId"])
    assert kept["message"] == {**kept["message"], "role": "user"}
    assert kept["message"]["content"][0]["text"] == "run the tests once more"
    # What pi now sends: the summary, then the kept messages.
    order = order_of(records)
    at = order.index(len(records))
    assert order[at + 1 :] == list(range(records.index(kept) + 1, len(records)))
    assert run_cli("summarize", "--backend", "digest", "--keep-last", "4", path).returncode == 0
    assert path.read_bytes() == written  # nothing left to summarize
    estimate = json.loads(run_cli("estimate", "--json", path, text=True).stdout)["stats"]["tokens"]
    original = json.loads(run_cli("estimate", "--json", SAMPLE, text=True).stdout)["stats"]["tokens"]
    assert estimate < original  # the kept responses' usage measured the context before the compaction


def test_summarize_a_version_1_file_names_the_kept_entry_by_index(tmp_path: Path):
    records = [{"type": "session", "id": "s1", "timestamp": "t", "cwd": "/w"}]
    for n in range(4):
        records.append(
            {"type": "message", "timestamp": "t", "message": {"role": "user", "content": f"task {n}"}}
        )
        reply = {
            "role": "assistant",
            "content": [{"type": "text", "text": f"done {n}"}],
            "stopReason": "stop",
        }
        records.append({"type": "message", "timestamp": "t", "message": reply})
    path = write(tmp_path / "v1.jsonl", records)
    assert run_cli("summarize", "--backend", "digest", "--keep-last", "2", path).returncode == 0
    compaction = json.loads(path.read_text().splitlines()[-1])
    assert "id" not in compaction and "parentId" not in compaction
    assert compaction["firstKeptEntryIndex"] == 7  # the header is 0: "task 3"
    assert records[7]["message"]["content"] == "task 3"


def test_a_pinned_message_keeps_the_conversation_from_it_on(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLE, path)
    done = run_cli(
        "summarize", "--backend", "digest", "--keep-last", "2", "--pin", "git diff", path, text=True
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in path.read_text().splitlines()]
    kept = next(r for r in records if r.get("id") == records[-1]["firstKeptEntryId"])
    assert kept["message"]["role"] == "bashExecution" and kept["message"]["command"] == "git diff --stat"


@pytest.mark.parametrize("command", ["micro", "summarize"])
def test_a_dry_run_changes_nothing(command: str, tmp_path: Path):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLE, path)
    extra = ["--backend", "digest", "--keep-last", "4"] if command == "summarize" else []
    done = run_cli(command, *extra, "--diff", path, text=True)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == SAMPLE.read_bytes() and done.stdout.count("\n+") >= 1


TOOLS = ("bash", "read", "edit", "grep")


@st.composite
def sessions(draw: st.DrawFn) -> list[dict]:
    """A pi session: turns of tool calls with outputs of any size, sometimes a branch left behind."""
    records: list[dict] = [HEADER]
    parent: str | None = None
    count = 0

    def add(record: dict) -> None:
        nonlocal parent
        records.append(record)
        parent = record["id"]

    for turn in range(draw(st.integers(1, 4))):
        add(user(f"u{turn}", parent, f"task {turn}"))
        if draw(st.booleans()):  # an answer the user went back from
            fork = parent
            add(assistant(f"x{turn}", parent, {"type": "text", "text": "abandoned"}, stop="stop"))
            parent = fork
        for _ in range(draw(st.integers(0, 4))):
            count += 1
            name = draw(st.sampled_from(TOOLS))
            add(assistant(f"a{count}", parent, call(f"c{count}", name)))
            text = draw(st.text(alphabet="ab\n", min_size=0, max_size=300))
            details = {"diff": text} if name == "edit" else None
            extra = {"details": details} if details else {}
            add(result(f"r{count}", parent, f"c{count}", text, name, **extra))
        add(assistant(f"e{turn}", parent, {"type": "text", "text": "done"}, stop="stop"))
    return records


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=sessions(), keep=st.integers(0, 3))
def test_micro_changes_only_results_once_and_keeps_the_session_valid(records, keep, tmp_path_factory):
    path = write(tmp_path_factory.mktemp("pi") / "s.jsonl", records)
    before = path.read_bytes()
    assert run_cli("micro", "--keep", keep, "--min-chars", "50", path).returncode == 0
    after = path.read_bytes()
    assert_only_results_cleared("pi", before, after, is_default_placeholder)
    rules = reference.MicroRules(keep=keep, min_chars=50, preserve=frozenset({"read_file", "Read", "read"}))
    expected, _ = reference.micro(records, "pi", rules)
    assert [json.loads(line) for line in after.splitlines()] == expected
    assert violations("pi", after) == violations("pi", before) == []
    assert run_cli("micro", "--keep", keep, "--min-chars", "50", path).returncode == 0
    assert path.read_bytes() == after  # idempotent
    # Nothing off the path (an abandoned answer) and no read is cleared.
    for old, new in zip(before.splitlines(), after.splitlines(), strict=True):
        if old != new:
            message = json.loads(new)["message"]
            assert message["toolName"] != "read" and not json.loads(new)["id"].startswith("x")


def test_replay_output_is_a_session_pi_reads_with_its_kept_entries_on_the_path(tmp_path: Path):
    """The sample records a compaction that keeps entries before it: replay -o (no compaction of its own)
    writes the header first and the entries as written, so that the context pi reads from the output is
    the one it reads from the sample."""
    out = tmp_path / "out.jsonl"
    args = ("--threshold", "100000", "--keep", "100", "--backend", "digest", "-o", out)
    done = run_cli("replay", SAMPLE, *args, text=True)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().splitlines()[0] == SAMPLE.read_bytes().splitlines()[0]

    def context(path: Path) -> list[tuple[str | None, str]]:
        order = PathOrder()
        lines = path.read_bytes().splitlines()
        for number, raw in enumerate(lines, 1):
            order.add(number, number, json.loads(raw))
        records = [json.loads(lines[number - 1]) for number, _ in order.order()]
        start = max(i for i, r in enumerate(records) if r.get("type") == "compaction")  # the context's start
        messages = [PI.normalize(r) for r in records[start:]]
        return [(m["role"], json.dumps(m["content"])) for m in messages if m is not None]

    assert context(out) == context(SAMPLE)
    kept = [json.loads(raw) for raw in out.read_bytes().splitlines()]
    compaction = next(r for r in kept if r["type"] == "compaction")
    assert compaction["firstKeptEntryId"] in {r.get("id") for r in kept[: kept.index(compaction)]}
