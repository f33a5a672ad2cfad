"""Gemini CLI sessions (docs/design.md, "Gemini CLI sessions"): detection, the history as Gemini CLI loads
it, micro in every version of a record, summarize's checkpoint, through the installed CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.files import write_jsonl

from compactcli import dialects
from compactcli.dialects.gemini_cli import GEMINI_CLI, UpsertOrder

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "gemini-cli" / "session.jsonl"
HEADER = {"sessionId": "s-1", "projectHash": "ab12", "startTime": "t", "lastUpdated": "t", "kind": "main"}
BIG = "x" * 2000


def user(mid: str, text: str) -> dict:
    return {"id": mid, "timestamp": "t", "type": "user", "content": [{"text": text}]}


def gemini(mid: str, text: str = "", calls: list[dict] | None = None) -> dict:
    record = {"id": mid, "timestamp": "t", "type": "gemini", "content": text, "thoughts": []}
    if calls is not None:
        record["toolCalls"] = calls
    return record


def call(cid: str, name: str = "run_shell_command", output: str | None = BIG) -> dict:
    entry = {"id": cid, "name": name, "args": {"command": "ls"}, "status": "success", "timestamp": "t"}
    if output is not None:
        entry["result"] = [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]
        entry["resultDisplay"] = output
    return entry


write = write_jsonl


def order_of(records: list[dict], micro: bool = False) -> list[int]:
    order = UpsertOrder()
    for number, record in enumerate(records, 1):
        (order.add_scan if micro else order.add)(number, 0, record)
    return [line for line, _ in order.order()]


def test_the_header_and_patches_prove_the_dialect():
    assert dialects.get("gemini-cli") is GEMINI_CLI
    assert GEMINI_CLI.fit(HEADER) == 2
    assert GEMINI_CLI.fit({"$set": {"lastUpdated": "t"}}) == 2
    assert GEMINI_CLI.fit(gemini("a")) == 2
    assert GEMINI_CLI.fit(user("a", "hi")) == 1
    assert GEMINI_CLI.fit({"role": "user", "content": "hi"}) == 0


def test_the_sample_is_detected_and_valid():
    run = run_cli("validate", "--json", SAMPLE, text=True)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)["stats"]
    assert stats["dialect"] == "gemini-cli" and stats["violations"] == []
    assert stats["messages"] == 12  # 2 user turns and 10 gemini records, each id once


def test_an_older_session_document_is_refused_by_name(tmp_path):
    path = write(tmp_path / "session-old.json", [{**HEADER, "messages": [user("a", "hi")]}])
    run = run_cli("estimate", path, text=True)
    assert run.returncode == 65
    assert "an older Gemini CLI session" in run.stderr and f"{path}:1" in run.stderr


def test_upserts_stand_where_the_id_first_stood_and_rewinds_and_checkpoints_restart():
    # The header (line 1) stays first through rewinds and checkpoints: Gemini CLI finds the session by it.
    records = [HEADER, user("u1", "a"), gemini("g1"), user("u2", "b"), gemini("g1", "again")]
    assert order_of(records) == [1, 2, 5, 4]  # g1's last version, at g1's place
    assert order_of(records, micro=True) == [1, 2, 3, 5, 4]  # every version, for micro
    assert order_of([*records, {"$rewindTo": "u2"}]) == [1, 2, 5]
    assert order_of([*records, {"$rewindTo": "gone"}]) == [1]
    checkpoint = {"$set": {"messages": [user("u9", "z")]}}
    assert order_of([*records, checkpoint, gemini("g1", "new")]) == [1, 6, 7]


def test_estimate_counts_the_last_version_once(tmp_path):
    once = write(tmp_path / "once.jsonl", [HEADER, user("u1", "a"), gemini("g1", "", [call("c1")])])
    twice = write(
        tmp_path / "twice.jsonl",
        [
            HEADER,
            user("u1", "a"),
            gemini("g1", ""),
            {"$set": {"lastUpdated": "t"}},
            gemini("g1", "", [call("c1")]),
        ],
    )
    counts = []
    for path in (once, twice):
        run = run_cli("estimate", "--json", "--method", "heuristic", path, text=True)
        assert run.returncode == 0, run.stderr
        counts.append(json.loads(run.stdout)["stats"]["tokens"])
    assert counts[0] == counts[1] > 300


def test_micro_clears_an_output_in_every_version_and_keep_counts_calls(tmp_path):
    first = gemini("g1", "", [call("c1"), call("c2", output=None)])  # c2 still running
    second = gemini("g1", "", [call("c1"), call("c2")])
    later = [gemini(f"g{n}", "", [call(f"c{n + 1}")]) for n in range(2, 5)]
    records = [HEADER, user("u1", "go"), first, {"$set": {"lastUpdated": "t"}}, second, *later]
    path = write(tmp_path / "s.jsonl", records)
    before = path.read_bytes().splitlines(keepends=True)
    run = run_cli("micro", "--json", "--keep", "3", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    after = path.read_bytes().splitlines(keepends=True)
    parsed = [json.loads(line) for line in after]
    outputs = {
        (number, c["id"]): c["result"][0]["functionResponse"]["response"]["output"]
        for number, r in enumerate(parsed)
        for c in r.get("toolCalls", [])
        if c.get("result")
    }
    placeholder = "[Previous: used run_shell_command]"
    # c1 and c2 are the oldest of five calls; c1 is in two versions of g1, cleared in both
    assert outputs[(2, "c1")] == outputs[(4, "c1")] == outputs[(4, "c2")] == placeholder
    assert [outputs[(n, f"c{n - 2}")] for n in (5, 6, 7)] == [BIG] * 3
    displays = {
        (number, c["id"]): c["resultDisplay"]
        for number, r in enumerate(parsed)
        for c in r.get("toolCalls", [])
        if "resultDisplay" in c
    }
    # the UI's rendering of a cleared output shows the placeholder, in every version; the kept ones stay
    assert displays[(2, "c1")] == displays[(4, "c1")] == displays[(4, "c2")] == placeholder
    assert [displays[(n, f"c{n - 2}")] for n in (5, 6, 7)] == [BIG] * 3
    assert [a == b for a, b in zip(before, after, strict=True)] == [
        True,
        True,
        False,
        True,
        False,
        True,
        True,
        True,
    ]
    validate = run_cli("validate", path, text=True)
    assert validate.returncode == 0, validate.stdout
    again = run_cli("micro", path, cwd=tmp_path)
    assert again.returncode == 0 and path.read_bytes() == b"".join(after)


# resultDisplay as Gemini CLI writes it: a shell's output as lines of styled tokens (AnsiOutput), an edit's
# file diff, the todo list.
ANSI = [[{"text": "x" * 300, "bold": False, "fg": "", "bg": ""}], [{"text": "done", "bold": True}]]
FILE_DIFF = {
    "fileDiff": "--- a\n+++ b\n",
    "fileName": "a.py",
    "filePath": "/p/a.py",
    "originalContent": "old",
    "newContent": "new",
}
TODOS = {"todos": [{"description": "fix the loader", "status": "in_progress"}]}


@pytest.mark.parametrize(
    ("display", "cleared"),
    [(BIG, True), (ANSI, True), ("", False), (None, False), (FILE_DIFF, False), (TODOS, False)],
    ids=["text", "ansi-lines", "empty", "null", "file-diff", "todo-list"],
)
def test_micro_clears_the_rendering_of_a_cleared_output_and_keeps_what_gemini_cli_reads(
    tmp_path, display, cleared
):
    old = [call("c0"), call("c1")]
    for entry in old:
        entry["resultDisplay"] = display
    checkpoint = {"$set": {"messages": [user("u", "go"), gemini("g0", "", old[:1])], "lastUpdated": "t"}}
    later = [gemini(f"g{n}", "", [call(f"c{n}")]) for n in range(2, 5)]
    path = write(tmp_path / "s.jsonl", [HEADER, checkpoint, gemini("g1", "", old[1:]), *later])
    run = run_cli("micro", "--json", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["stats"]["cleared"] == 2  # c0 in the checkpoint, c1 in its record
    parsed = [json.loads(line) for line in path.read_text().splitlines()]
    copies = [parsed[1]["$set"]["messages"][1]["toolCalls"][0], parsed[2]["toolCalls"][0]]
    placeholder = "[Previous: used run_shell_command]"
    assert [c["resultDisplay"] for c in copies] == [placeholder if cleared else display] * 2
    assert [c["resultDisplay"] for r in parsed[3:] for c in r["toolCalls"]] == [BIG] * 3


@pytest.mark.parametrize(
    ("display", "cleared"),
    [(BIG, True), (ANSI, True), ("", False), (FILE_DIFF, False), (TODOS, False)],
    ids=["text", "ansi-lines", "empty", "file-diff", "todo-list"],
)
def test_micro_clears_the_rendering_an_earlier_version_left_beside_an_output_it_cleared(
    tmp_path, display, cleared
):
    """A session an earlier micro cleared: the outputs hold the placeholder, their renderings what it
    left (this micro's output with the renderings put back). The next run clears those it would clear
    with a fresh output and keeps what Gemini CLI reads; the run after changes nothing (docs/design.md,
    "A result cleared before")."""
    placeholder = "[Previous: used run_shell_command]"
    old = [call("c0", output=placeholder), call("c1", output=placeholder)]
    for entry in old:
        entry["resultDisplay"] = display
    checkpoint = {"$set": {"messages": [user("u", "go"), gemini("g0", "", old[:1])], "lastUpdated": "t"}}
    later = [gemini(f"g{n}", "", [call(f"c{n}")]) for n in range(2, 5)]
    path = write(tmp_path / "s.jsonl", [HEADER, checkpoint, gemini("g1", "", old[1:]), *later])
    before = path.read_bytes()
    # Among the last --keep, or preserved, a cleared output's rendering stays as a fresh output's would.
    for kept in (("--keep", "5"), ("--preserve", "run_shell_command")):
        assert run_cli("micro", *kept, path, cwd=tmp_path).returncode == 0
        assert path.read_bytes() == before
    run = run_cli("micro", "--json", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)["stats"]
    assert (stats["cleared"], stats.get("ui_copies_cleared", 0)) == (0, 2 if cleared else 0)
    parsed = [json.loads(line) for line in path.read_text().splitlines()]
    copies = [parsed[1]["$set"]["messages"][1]["toolCalls"][0], parsed[2]["toolCalls"][0]]
    assert [c["resultDisplay"] for c in copies] == [placeholder if cleared else display] * 2
    assert [c["result"][0]["functionResponse"]["response"]["output"] for c in copies] == [placeholder] * 2
    after = path.read_bytes()
    assert (after != before) == cleared
    changed = [
        n for n, (a, b) in enumerate(zip(before.splitlines(), after.splitlines(), strict=True)) if a != b
    ]
    assert changed == ([1, 2] if cleared else [])
    assert run_cli("micro", path, cwd=tmp_path).returncode == 0
    assert path.read_bytes() == after


def test_micro_keeps_read_file_by_default(tmp_path):
    calls = [
        gemini(f"g{n}", "", [call(f"c{n}", "read_file" if n == 0 else "run_shell_command")]) for n in range(5)
    ]
    path = write(tmp_path / "s.jsonl", [HEADER, user("u", "go"), *calls])
    assert run_cli("micro", path, cwd=tmp_path).returncode == 0
    records = [json.loads(line) for line in path.read_text().splitlines()]
    outputs = [r["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"] for r in records[2:]]
    assert outputs == [BIG, "[Previous: used run_shell_command]", BIG, BIG, BIG]


def test_summarize_writes_gemini_clis_compression_checkpoint(tmp_path):
    path = tmp_path / SAMPLE.name
    shutil.copyfile(SAMPLE, path)
    run = run_cli("summarize", "--backend", "digest", "--keep-last", "4", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0] == json.loads(SAMPLE.read_text().splitlines()[0])  # the header stays first
    messages = records[1]["$set"]["messages"]
    assert [m["type"] for m in messages] == ["user", "gemini"]
    snapshot = messages[0]["content"][0]["text"]
    assert snapshot.startswith("<state_snapshot>\n[Conversation compressed. Transcript: ")
    assert snapshot.endswith("</state_snapshot>")
    assert "The tally CLI crashes on a CSV" in snapshot  # the user's words follow the digest
    assert messages[1]["content"] == [{"text": "Got it. Thanks for the additional context!"}]
    # the records kept after the checkpoint are the sample's own lines, byte for byte
    kept = path.read_bytes().splitlines(keepends=True)[2:]
    assert b"".join(kept) in SAMPLE.read_bytes()
    assert run_cli("validate", path).returncode == 0
    again = run_cli("summarize", "--backend", "digest", "--keep-last", "4", path, cwd=tmp_path, text=True)
    assert again.returncode == 0 and "1 unchanged" in again.stderr


@pytest.mark.parametrize("text", ["plain summary", "<state_snapshot>\nalready\n</state_snapshot>"])
def test_the_summary_is_one_state_snapshot(text):
    (record,) = GEMINI_CLI.summary_records(text, context_records=[], new_uuid=lambda: "id")
    content = record["$set"]["messages"][0]["content"][0]["text"]
    assert content.count("<state_snapshot>") == 1 and content.count("</state_snapshot>") == 1


def test_the_fake_gemini_api_refuses_unanswered_calls():
    from helpers.fakegemini import unanswered

    call = {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "read_file", "args": {}}}]}
    answer = {
        "role": "user",
        "parts": [{"functionResponse": {"id": "a", "name": "read_file", "response": {}}}],
    }
    ask = {"role": "user", "parts": [{"text": "hi"}]}
    assert unanswered([ask, call, answer, {"role": "model", "parts": [{"text": "ok"}]}]) is None
    twice = {"role": "user", "parts": answer["parts"] * 2}
    assert unanswered([ask, call, twice]) is None  # a response repeated, as Gemini CLI 0.61 sends it
    assert unanswered([ask, call, answer, answer]) is not None  # a turn of responses to no call
    assert "immediately after a user turn" in unanswered([ask, call, ask])
    other = {
        "role": "model",
        "parts": [*call["parts"], {"functionCall": {"id": "c", "name": "ls", "args": {}}}],
    }
    assert "has a function response" in unanswered([ask, other, answer])
    assert "immediately after a function call turn" in unanswered([ask, answer])
    wrong = {
        "role": "user",
        "parts": [{"functionResponse": {"id": "b", "name": "read_file", "response": {}}}],
    }
    assert unanswered([ask, call, wrong]) is not None


def test_scan_and_result_count_say_what_tool_uses_and_tool_results_say():
    # micro's first pass takes every record's calls and outputs from scan: it must say what the two
    # questions asked apart say, on the sample and on the shapes the format allows.
    response = {"functionResponse": {"id": "u1", "name": "grep", "response": {"matches": [1, 2]}}}
    odd = [
        user("m1", "hi") | {"content": [{"functionCall": {"id": "c1", "name": "grep"}}, response]},
        gemini("m2", "", [call("c2"), {"id": 7, "name": "bad"}, {"name": "no id"}, "not a call"])
        | {"content": [{"functionCall": {"id": "c3", "name": "ls"}}, {"functionCall": {"name": "x"}}]},
        gemini("m3", "", [call("c4") | {"result": "as a string"}, call("c5", output=None)]),
        {"id": "m4", "type": "info", "content": [{"functionCall": {"id": "c6", "name": "ls"}}]},
        {"$set": {"messages": [gemini("m5", "", [call("c7")]), user("m6", "x"), 3]}},
        {"$set": {"messages": []}},
        {"$set": {"lastUpdated": "t"}, "type": "gemini", "toolCalls": [call("c8")]},
        {"$rewindTo": "m1"},
        HEADER,
    ]
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()] + odd
    for record in records:
        uses, results = GEMINI_CLI.scan(record)  # sequences: NOTHING_SCANNED's are tuples
        assert (list(uses), list(results)) == (
            list(GEMINI_CLI.tool_uses(record)),
            GEMINI_CLI.tool_results(record),
        )
        assert GEMINI_CLI.result_count(record) == len(GEMINI_CLI.tool_results(record))
    assert any(GEMINI_CLI.scan(record)[1] for record in odd)


def test_with_truncate_the_rendering_shows_what_the_model_keeps(tmp_path):
    old = call("c0")
    old["resultDisplay"] = ANSI
    later = [gemini(f"g{n}", "", [call(f"c{n}")]) for n in range(1, 4)]
    path = write(tmp_path / "s.jsonl", [HEADER, user("u", "go"), gemini("g0", "", [old]), *later])
    run = run_cli("micro", "--truncate", "10:10", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    (cleared,) = json.loads(path.read_text().splitlines()[2])["toolCalls"]
    kept = cleared["result"][0]["functionResponse"]["response"]["output"]
    assert kept.startswith("x" * 10) and "characters truncated" in kept and len(kept) < 100
    assert cleared["resultDisplay"] == kept


@pytest.mark.parametrize("threshold", ["100000", "2000"])
def test_replay_output_starts_with_the_header_gemini_cli_finds_the_session_by(tmp_path, threshold):
    """Without the header Gemini CLI has no sessionId to resume the file by: replay -o writes it first,
    with no compaction (the last version of each message after it) and after a simulated one (its
    checkpoint after it)."""
    path = tmp_path / SAMPLE.name
    shutil.copyfile(SAMPLE, path)
    out = tmp_path / "out.jsonl"
    args = ("--threshold", threshold, "--keep", "1", "--backend", "digest", "-o", out)
    done = run_cli("replay", path, *args, cwd=tmp_path, text=True)
    assert done.returncode == 0, done.stderr
    lines = out.read_bytes().splitlines()
    assert lines[0] == SAMPLE.read_bytes().splitlines()[0]
    records = [json.loads(line) for line in lines]
    assert sum(1 for r in records if "projectHash" in r) == 1
    if threshold == "2000":
        assert "<state_snapshot>" in records[1]["$set"]["messages"][0]["content"][0]["text"]
    else:
        assert all(r.get("type") in ("user", "gemini") for r in records[1:])
    run = run_cli("validate", "--json", out, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["stats"]["dialect"] == "gemini-cli"


def response(cid: str, name: str, output: str = BIG) -> dict:
    return {"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}


def test_micro_clears_every_copy_of_parallel_outputs_in_the_checkpoint_of_a_resume(tmp_path):
    # When Gemini CLI resumes a session it writes a checkpoint (updateMessagesFromHistory) in which each
    # call of a turn has, as its result, every part of the turn's answer, and the answer is a user record
    # of its own: the output of c2 is then in c1's result, in c2's and in g1_response. Gemini CLI sends
    # them all, so each copy is an output to clear.
    both = [response("c1", "run_shell_command"), response("c2", "grep_search")]
    calls = [call("c1") | {"result": both}, call("c2", "grep_search") | {"result": both}]
    turn = gemini("g1", "", calls) | {
        "content": [{"functionCall": {"id": c, "name": "x"}} for c in ("c1", "c2")]
    }
    later = [gemini(f"g{n}", "", [call(f"c{n + 1}")]) for n in range(2, 5)]
    messages = [user("u1", "go"), turn, user("g1_response", "") | {"content": both}, *later]
    path = write(tmp_path / "s.jsonl", [HEADER, {"$set": {"messages": messages, "lastUpdated": "t"}}])
    run = run_cli("micro", "--json", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    kept = json.loads(path.read_text().splitlines()[1])["$set"]["messages"]
    copies = [part for c in kept[1]["toolCalls"] for part in c["result"]] + kept[2]["content"]
    outputs = [(p["functionResponse"]["id"], p["functionResponse"]["response"]["output"]) for p in copies]
    shell, grep = "[Previous: used run_shell_command]", "[Previous: used grep_search]"
    assert outputs == [("c1", shell), ("c2", grep)] * 3
    assert [c["resultDisplay"] for c in kept[1]["toolCalls"]] == [shell, grep]
    assert [r["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"] for r in kept[3:]] == [
        BIG
    ] * 3
    assert run_cli("validate", path).returncode == 0


PNG = "iVBORw0KGgo" + "A" * 4000
IMAGE = {"inlineData": {"mimeType": "image/png", "data": PNG}}


def image_calls() -> list[dict]:
    """A screenshot inside its response (a model that takes multimodal responses), one beside it (one that
    does not: Gemini CLI's convertToFunctionResponse puts it after the response), then a later call."""
    inside = response("c1", "take_screenshot", "Binary content provided (1 item(s)).")
    inside["functionResponse"]["parts"] = [IMAGE]
    beside = [response("c2", "take_screenshot", "Binary content provided (1 item(s))."), IMAGE]
    return [
        HEADER,
        user("u1", "look"),
        gemini("g1", "", [call("c1", "take_screenshot") | {"result": [inside]}]),
        gemini("g2", "", [call("c2", "take_screenshot") | {"result": beside}]),
        gemini("g3", "", [call("c3")]),
    ]


def test_keep_images_reaches_the_images_a_tool_returned(tmp_path):
    path = write(tmp_path / "s.jsonl", image_calls())
    run = run_cli("micro", "--keep-images", "0", "--keep", "3", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in path.read_text().splitlines()]
    placeholder = {"text": "[image removed: image/png, 3,008 bytes]"}
    assert records[2]["toolCalls"][0]["result"][0]["functionResponse"]["parts"] == [placeholder]
    assert records[3]["toolCalls"][0]["result"][1] == placeholder
    assert PNG not in path.read_text()
    assert run_cli("validate", path).returncode == 0


def test_an_image_beside_a_response_is_the_calls_output(tmp_path):
    # Kept with the output it belongs to, as any multimodal output is; cleared with it when asked to.
    records = image_calls()
    path = write(tmp_path / "s.jsonl", records)
    run = run_cli("micro", "--keep", "0", "--min-chars", "0", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    assert [json.loads(line) for line in path.read_text().splitlines()][:4] == records[:4]
    run = run_cli(
        "micro", "--keep", "0", "--min-chars", "0", "--clear-multimodal", path, cwd=tmp_path, text=True
    )
    assert run.returncode == 0, run.stderr
    (beside,) = json.loads(path.read_text().splitlines()[3])["toolCalls"]
    assert beside["result"] == [response("c2", "take_screenshot", "[Previous: used take_screenshot]")]
    assert PNG not in path.read_text()
    assert run_cli("validate", path).returncode == 0


def test_a_summary_built_on_an_earlier_state_snapshot_is_one_and_says_so(tmp_path):
    # A <state_snapshot> user turn is a compression's summary (Gemini CLI's or summarize's), not the user's
    # words: the next summary starts with it as the earlier summary and is itself one <state_snapshot>.
    path = tmp_path / SAMPLE.name
    shutil.copyfile(SAMPLE, path)
    assert run_cli("summarize", "--backend", "digest", "--keep-last", "4", path, cwd=tmp_path).returncode == 0
    more = [user("n1", "now add a test for the CSV header"), gemini("n2", "Added tests/test_header.py.")]
    write(path, [json.loads(line) for line in path.read_text().splitlines()] + more)
    run = run_cli("summarize", "--backend", "digest", "--keep-last", "1", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in path.read_text().splitlines()]
    snapshot = records[1]["$set"]["messages"][0]["content"][0]["text"]
    assert snapshot.startswith("<state_snapshot>\n[Conversation compressed. Transcript: ")
    assert snapshot.endswith("</state_snapshot>")
    assert "## Earlier summary (the conversation starts with it)\n> <state_snapshot>" in snapshot
    assert "(Compaction 2: this summary builds on the one before it.)" in snapshot
    users = snapshot[snapshot.index("## The user's own messages") :]
    assert "<state_snapshot>" not in users and "now add a test for the CSV header" in users


def test_micro_changes_no_byte_of_a_spaced_line_but_the_cleared_outputs(tmp_path):
    # Written as Python's json.dumps writes lines, but for escapes it would not write (`\/`, `\u00E9`): they
    # stay where a value is cleared, so the line is not written anew; the output and its rendering are
    # replaced where they stood.
    records = [HEADER, user("u", "go"), *[gemini(f"g{n}", "", [call(f"c{n}")]) for n in range(4)]]
    lines = [json.dumps(r) for r in records]
    lines[2] = lines[2].replace('"content": ""', '"content": "caf\\u00E9 a\\/b"')
    path = tmp_path / "s.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    expected = lines[2].replace(f'"{BIG}"', '"[Previous: used run_shell_command]"')
    assert expected.count("[Previous: used run_shell_command]") == 2
    # The preview shows the line the write makes (both splice the values the first pass found).
    preview = run_cli("micro", "--diff", path, cwd=tmp_path, text=True)
    assert f"-{lines[2]}\n+{expected}\n" in preview.stdout, preview.stderr
    run = run_cli("micro", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    assert path.read_text(encoding="utf-8").splitlines() == [*lines[:2], expected, *lines[3:]]
