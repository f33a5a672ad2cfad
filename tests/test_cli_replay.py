"""`compactcli replay`: where each layer fires on hand-built transcripts whose sizes are computed here,
independently, with the reference formula len(str(messages)) // 4 (docs/design.md, "Layers").

The main transcript (TASK) has seven model calls. With --keep 10 micro never clears anything in it,
so the estimate before the call on line k is seed(RECORDS[:k]). The threshold is set one below the
size at the fourth call (line 7), so that call, and no earlier one, compacts. The assistant on line 9
calls `compact` with a focus; the user message on line 10 answers it, so a manual compaction follows.
"""

from __future__ import annotations

import csv
import json
import os
import struct
import sys
from pathlib import Path

import pytest
from helpers.cli import invoke, run_cli
from helpers.corpus import corpus_params, expectation

from compactcli import dialects
from compactcli.layers.replay import Row
from compactcli.layers.validate import validate_records
from compactcli.report.chart import text_chart, text_series

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
FOCUS = "the empty-line handling"
PREFIX = "[Conversation compressed. Transcript: "


def replay_json(line: str) -> dict:
    """The figures of replay's JSON object, after checking the keys every command's object has."""
    obj = json.loads(line)
    assert list(obj) == ["schema_version", "command", "path", "status", "exit_code", "message", "stats"]
    assert obj["command"] == "replay" and obj["status"] in ("replayed", "what-if", "compared")
    return obj["stats"]


def seed(messages: list) -> int:
    """The reference agent's estimate, written out here rather than imported."""
    return len(str(messages)) // 4


def call(call_id: str, name: str = "bash", tool_input: dict | None = None, text: str | None = None) -> dict:
    blocks: list[dict] = [{"type": "text", "text": text}] if text else []
    blocks.append(
        {"type": "tool_use", "id": call_id, "name": name, "input": tool_input or {"command": "pytest"}}
    )
    return {"role": "assistant", "content": blocks}


def result(call_id: str, content: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}]}


RECORDS = [
    {"role": "user", "content": "Fix the parser bug in tally/parse.py and run the tests."},  # 0
    call("c1", text="Running the tests first."),  # 1  call 1
    result("c1", "E" * 2000),  # 2
    call("c2"),  # 3  call 2
    result("c2", "F" * 2000),  # 4
    call("c3"),  # 5  call 3
    result("c3", "G" * 2000),  # 6
    call("c4"),  # 7  call 4: over the threshold -> auto
    result("c4", "H" * 2000),  # 8
    call("c5", "compact", {"focus": FOCUS}),  # 9  call 5
    result("c5", "Compressing..."),  # 10 answers compact -> manual
    {"role": "assistant", "content": [{"type": "text", "text": "Continuing from the summary."}]},  # 11 call 6
    {"role": "user", "content": "Thanks. Is it done?"},  # 12
    {"role": "assistant", "content": "Yes: the parser accepts empty lines now."},  # 13 call 7
]
THRESHOLD = seed(RECORDS[:7]) - 1


def dump(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)


def write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(dump(records))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def summary_message(archive: str, summary: str) -> dict:
    return {"role": "user", "content": f"{PREFIX}{archive}]\n\n{summary}"}


def user_section(*texts: str) -> str:
    """What follows a summary as summarize writes it (README, --keep-user-messages, default 20,000
    tokens): the user's own messages of the summarized part, verbatim; written out here."""
    count = len(texts)
    head = f"## The user's own messages, verbatim (the newest {count} of {count} user messages, within "
    head += "20,000 tokens)"
    body = "\n\n".join(f"[user message {n} of {count}]\n{text}" for n, text in enumerate(texts, 1))
    return f"\n\n{head}\n\n{body}"


def test_threshold_and_focus_through_the_api(tmp_path: Path, fake_api) -> None:
    """Auto compaction exactly at call 4, manual compaction after line 10 with the call's focus; both
    summaries written by the (fake) Messages API."""
    assert seed(RECORDS[:5]) <= THRESHOLD < seed(RECORDS[:7])  # the fixture is what the docstring says
    replies = iter(["SUMMARY-ONE", "SUMMARY-TWO"])
    fake_api.reply_text = lambda body: next(replies)
    source = write(tmp_path / "task.jsonl", RECORDS)
    timeline, out = tmp_path / "timeline.jsonl", tmp_path / "out.jsonl"
    archives_dir = tmp_path / "archives"
    got = invoke("replay",
        source,
        "--backend", "anthropic", "--threshold", THRESHOLD, "--keep", 10, "--timeline", timeline,
        "-o", out, "--archive-dir", archives_dir, "--json"
    )  # fmt: skip
    assert got.exit_code == 0, got.output + got.stderr
    report = replay_json(got.stdout)
    assert report["compactions"] == {"auto": 1, "manual": 1, "recorded": 0}
    assert report["summarizer_calls"] == 2 and report["calls"] == 7
    first, second = report["archives"]

    # What each compaction archived: the context it replaced, line for line.
    assert Path(first).read_bytes() == dump(RECORDS[:7])
    # The first summary is followed by the user's words it replaced; the second replaced none (an
    # earlier summary is no user's words).
    summary_one = summary_message(first, "SUMMARY-ONE" + user_section(RECORDS[0]["content"]))
    assert Path(second).read_bytes() == dump([summary_one, *RECORDS[7:11]])
    assert Path(first).parent == archives_dir.resolve()

    # The focus reached the model on the manual compaction only.
    requests = fake_api.calls("messages")
    assert len(requests) == 2
    assert FOCUS not in json.dumps(requests[0].body) and "Focus:" not in json.dumps(requests[0].body)
    assert f"Focus: keep every detail about {FOCUS}" in requests[1].body["messages"][-1]["content"]

    rows = read_jsonl(timeline)
    after_auto = seed([summary_one])
    expected = [
        {"index": 1, "turn": 1, "tokens": seed(RECORDS[:1]), "event": None},
        {"index": 3, "turn": 2, "tokens": seed(RECORDS[:3]), "event": None},
        {"index": 5, "turn": 3, "tokens": seed(RECORDS[:5]), "event": None},
        {"index": 7, "turn": 4, "tokens": seed(RECORDS[:7]), "event": "auto", "tokens_after": after_auto},
        {"index": 9, "turn": 5, "tokens": seed([summary_one, *RECORDS[7:9]]), "event": None},
        {"index": 10, "turn": 5, "tokens": seed([summary_one, *RECORDS[7:11]]), "event": "manual"},
        {"index": 11, "turn": 6, "event": None},
        {"index": 13, "turn": 7, "event": None},
    ]
    assert [{k: row[k] for k in want} for row, want in zip(rows, expected, strict=True)] == expected

    # -o: what the next call would receive; it validates and names an archive that exists.
    final = read_jsonl(out)
    # The second summary builds on the first (docs/design.md, "Summaries that build on the last one").
    second_prompt = requests[1].body["messages"][-1]["content"]
    assert (
        second_prompt.startswith("<previous_summary>\n[Conversation compressed.")
        and "SUMMARY-ONE" in second_prompt
    )
    depth = "\n\n(Compaction 2: this summary builds on the one before it.)"
    assert final == [summary_message(second, "SUMMARY-TWO" + depth), *RECORDS[11:]]
    assert validate_records(dialects.ANTHROPIC, enumerate(final, 1)) == []
    assert report["final_tokens"] == seed(final)


def test_keep_user_messages_0_leaves_the_summary_alone(tmp_path: Path, fake_api) -> None:
    fake_api.reply_text = lambda body: "SUMMARY"
    source = write(tmp_path / "task.jsonl", RECORDS[:9])
    out = tmp_path / "out.jsonl"
    args = ("--backend", "anthropic", "--threshold", THRESHOLD, "--keep", 10, "-o", out, "--json")
    got = invoke("replay", source, *args, "--keep-user-messages", 0)
    assert got.exit_code == 0, got.output + got.stderr
    (archive,) = replay_json(got.stdout)["archives"]
    assert read_jsonl(out) == [summary_message(archive, "SUMMARY"), *RECORDS[7:9]]
    # By default the user's words follow it, and the context after the compaction counts them.
    got = invoke("replay", source, *args)
    (archive,) = replay_json(got.stdout)["archives"]
    with_words = summary_message(archive, "SUMMARY" + user_section(RECORDS[0]["content"]))
    assert read_jsonl(out) == [with_words, *RECORDS[7:9]]
    assert replay_json(got.stdout)["final_tokens"] == seed([with_words, *RECORDS[7:9]])


def test_digest_backend_fires_at_the_same_places(tmp_path: Path) -> None:
    source = write(tmp_path / "task.jsonl", RECORDS)
    timeline = tmp_path / "t.jsonl"
    got = invoke(
        "replay",
        source,
        "--backend",
        "digest",
        "--threshold",
        THRESHOLD,
        "--keep",
        10,
        "--timeline",
        timeline,
    )
    assert got.exit_code == 0, got.output + got.stderr
    events = [(row["index"], row["event"]) for row in read_jsonl(timeline) if row["event"]]
    assert events == [(7, "auto"), (10, "manual")]
    assert "model calls           7" in got.stdout
    assert "compactions           2 (auto 1, manual 1" in got.stdout
    archives = sorted((tmp_path / ".transcripts").glob("task.*.jsonl"))
    assert len(archives) == 2
    assert dump(RECORDS[:7]) in [archive.read_bytes() for archive in archives]


def test_the_estimate_must_exceed_the_threshold(tmp_path: Path) -> None:
    """At a threshold equal to the size at call 4, call 4 does not compact; call 5 (larger) does."""
    source = write(tmp_path / "task.jsonl", RECORDS)
    timeline = tmp_path / "t.jsonl"
    got = invoke(
        "replay",
        source,
        "--backend",
        "digest",
        "--threshold",
        THRESHOLD + 1,
        "--keep",
        10,
        "--timeline",
        timeline,
    )
    assert got.exit_code == 0, got.output + got.stderr
    events = [(row["index"], row["tokens"], row["event"]) for row in read_jsonl(timeline) if row["event"]]
    assert events[0] == (9, seed(RECORDS[:9]), "auto")


def test_tokens_are_counted_after_micro(tmp_path: Path) -> None:
    """Default micro (keep 3, min-chars 100): before each call the older results are placeholders."""
    records: list[dict] = [{"role": "user", "content": "Look around."}]
    for n in range(1, 7):
        records += [call(f"c{n}"), result(f"c{n}", f"{n}" * 500)]
    records.append({"role": "assistant", "content": "Done."})
    timeline = tmp_path / "t.jsonl"
    got = invoke(
        "replay", write(tmp_path / "m.jsonl", records), "--backend", "digest", "--timeline", timeline
    )
    assert got.exit_code == 0, got.output + got.stderr
    rows = read_jsonl(timeline)
    assert len(rows) == 7
    for row in rows:
        context = json.loads(json.dumps(records[: row["index"]]))
        results = [
            m for m in context if isinstance(m["content"], list) and m["content"][0]["type"] == "tool_result"
        ]
        for message in results[:-3]:
            message["content"][0]["content"] = "[Previous: used bash]"
        assert row["tokens"] == seed(context), row
        assert row["event"] is None
    # One more result becomes old at each call from the fifth on.
    assert [row["cleared"] for row in rows] == [0, 0, 0, 0, 1, 1, 1]


def test_timeline_jsonl_and_csv_agree(tmp_path: Path) -> None:
    source = write(tmp_path / "task.jsonl", RECORDS)
    base = ["--backend", "digest", "--threshold", THRESHOLD, "--keep", 10, "-q"]
    assert invoke("replay", source, *base, "--timeline", tmp_path / "t.jsonl").exit_code == 0
    assert invoke("replay", source, *base, "--timeline", tmp_path / "t.csv").exit_code == 0
    from_jsonl = read_jsonl(tmp_path / "t.jsonl")
    with open(tmp_path / "t.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames[:4] == ["index", "turn", "tokens", "event"]
        from_csv = [{k: (v or None) if k == "event" else int(v) for k, v in row.items()} for row in reader]
    assert from_csv == from_jsonl
    assert len(from_csv) == 8  # seven calls and the manual compaction


def test_timeline_needs_a_known_extension(tmp_path: Path) -> None:
    got = invoke(
        "replay",
        write(tmp_path / "a.jsonl", RECORDS),
        "--timeline",
        tmp_path / "t.txt",
        "--backend",
        "digest",
    )
    assert got.exit_code == 2
    assert ".jsonl or .csv" in got.stderr
    assert not (tmp_path / "t.txt").exists()


def test_what_if_table(tmp_path: Path) -> None:
    source = write(tmp_path / "task.jsonl", RECORDS)
    low, high = THRESHOLD, seed(RECORDS) * 2  # the high one is never reached
    got = invoke(
        "replay", source, "--backend", "digest", "--threshold", f"{low},{high}", "--keep", "3,10", "--json"
    )
    assert got.exit_code == 0, got.output + got.stderr
    rows = [replay_json(line) for line in got.stdout.splitlines()]
    assert [(r["threshold"], r["keep"]) for r in rows] == [(low, 3), (low, 10), (high, 3), (high, 10)]
    for r in rows:
        total = sum(r["compactions"].values())
        if r["threshold"] == high:
            assert r["compactions"] == {"auto": 0, "manual": 1, "recorded": 0}
        else:
            assert total > 1  # more compactions at the lower threshold
        assert r["summarizer_calls"] == total
    # keep 10 clears nothing, keep 3 clears: the peak before compaction is larger with keep 10.
    assert rows[3]["peak_tokens"] > rows[2]["peak_tokens"]
    # Nothing written: no archive folder.
    assert not (tmp_path / ".transcripts").exists()
    table = invoke("replay", source, "--backend", "digest", "--threshold", f"{low},{high}")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert "what-if" in lines[0] and lines[1].split()[:3] == ["threshold", "keep", "calls"]
    assert len(lines) == 4 and lines[2].split()[0] == f"{low:,}" and lines[3].split()[0] == f"{high:,}"


def test_what_if_writes_nothing_so_outputs_are_refused(tmp_path: Path) -> None:
    source = write(tmp_path / "task.jsonl", RECORDS)
    got = invoke("replay", source, "--keep", "3,4", "--timeline", tmp_path / "t.csv", "--backend", "digest")
    assert got.exit_code == 2
    assert not (tmp_path / "t.csv").exists()


def test_output_to_stdout_moves_the_report_to_stderr(tmp_path: Path) -> None:
    source = write(tmp_path / "task.jsonl", RECORDS)
    got = invoke("replay", source, "--backend", "digest", "--threshold", 10**9, "--keep", 10, "-o", "-")
    assert got.exit_code == 0, got.stderr
    final = [json.loads(line) for line in got.stdout_bytes.splitlines()]
    assert final[0]["content"].startswith(PREFIX)  # the manual compaction still fired
    assert final[1:] == RECORDS[11:]
    assert "model calls" in got.stderr and "threshold" in got.stderr


def test_api_estimator_counts_each_context_with_count_tokens(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake server answers 1000 tokens per turn, so the size before the call on line k is 1000 * k
    (the roles alternate: every message is a turn) until a compaction."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake_api.token_count = lambda body: 1000 * len(body["messages"])
    timeline = tmp_path / "t.jsonl"
    got = invoke("replay", write(tmp_path / "task.jsonl", RECORDS), "--estimator", "api", "--backend",
                 "digest", "--threshold", 4500, "--keep", 10, "--timeline", timeline)  # fmt: skip
    assert got.exit_code == 0, got.output + got.stderr
    rows = [(row["index"], row["tokens"], row["event"]) for row in read_jsonl(timeline)]
    assert rows == [
        (1, 1000, None),
        (3, 3000, None),
        (5, 5000, "auto"),  # then: the summary and line 5
        (7, 3000, None),
        (9, 5000, "auto"),
        (10, 3000, "manual"),  # the summary, lines 9 and 10
        (11, 1000, None),
        (13, 3000, None),
    ]
    assert fake_api.calls("count_tokens") and not fake_api.calls("messages")


def test_usage_is_no_estimator_for_a_simulated_context(tmp_path: Path) -> None:
    got = invoke(
        "replay", write(tmp_path / "task.jsonl", RECORDS), "--estimator", "usage", "--backend", "digest"
    )
    assert got.exit_code == 2


# --- Claude Code -------------------------------------------------------------------------------------

SESSION = "5e55i0n0-0000-4000-8000-000000000001"


def cc(kind: str, uuid: str, parent: str | None, message: dict | None = None, **extra: object) -> dict:
    record: dict = {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "type": kind,
        "uuid": uuid,
    }
    if message is not None:
        record["message"] = message
    record.update(extra)
    return record


def use_block(call_id: str, name: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {}}


def assistant(message_id: str, content: list | str) -> dict:
    return {"id": message_id, "type": "message", "role": "assistant", "model": "claude-x", "content": content}


CC_RECORDS = [
    {"type": "summary", "summary": "Parser fix", "leafUuid": "u9"},  # 0 skipped
    cc("user", "u0", None, {"role": "user", "content": "Fix the parser."}),  # 1
    cc("assistant", "u1", "u0", assistant("msg_1", [{"type": "text", "text": "Looking."}])),  # 2 call 1
    cc("assistant", "u2", "u1", assistant("msg_1", [use_block("ta", "Bash")])),  # 3
    cc("assistant", "u3", "u2", assistant("msg_1", [use_block("tb", "Grep")])),  # 4
    {"type": "progress", "uuid": "p1", "parentUuid": "u3", "data": {"type": "bash_progress"}},  # 5 skipped
    cc("user", "u4", "u3", result("ta", "a" * 300)),  # 6
    cc("user", "u5", "u4", result("tb", "b" * 300)),  # 7
    {**cc("user", "s1", None, {"role": "user", "content": "task " * 50}), "isSidechain": True},  # 8 skipped
    {**cc("assistant", "s2", "s1", assistant("msg_s", "sub-agent answer")), "isSidechain": True},  # 9 skipped
    cc("assistant", "u6", "u5", assistant("msg_2", [{"type": "text", "text": "Found it."}])),  # 10 call 2
    cc("assistant", "u7", "u6", {**assistant("msg_e", "API Error: overloaded"), "model": "<synthetic>"},
       isApiErrorMessage=True),  # 11 no call
    cc("system", "b1", None, None, subtype="compact_boundary", content="Conversation compacted",
       compactMetadata={"trigger": "auto", "preTokens": 155000}),  # 12
    cc("user", "u8", "b1", {"role": "user", "content": "This session is being continued. Summary: parser."},
       isCompactSummary=True),  # 13 recorded
    cc("assistant", "u9", "u8", assistant("msg_3", [{"type": "text", "text": "Done."}])),  # 14 call 3
]  # fmt: skip


def messages_of(records: list[dict]) -> list[dict]:
    return [r["message"] for r in records]


def test_claude_code_split_responses_and_recorded_compactions(tmp_path: Path) -> None:
    source = write(tmp_path / "cc.jsonl", CC_RECORDS)
    timeline, out = tmp_path / "t.jsonl", tmp_path / "out.jsonl"
    got = invoke(
        "replay", source, "--backend", "digest", "--keep", 10, "--timeline", timeline, "-o", out, "--json"
    )
    assert got.exit_code == 0, got.output + got.stderr
    main_before_boundary = [CC_RECORDS[i] for i in (1, 2, 3, 4, 6, 7, 10, 11)]
    summary = CC_RECORDS[13]
    assert read_jsonl(timeline) == [
        {"index": 2, "turn": 1, "tokens": seed(messages_of(CC_RECORDS[1:2])), "event": None,
         "tokens_after": seed(messages_of(CC_RECORDS[1:2])), "cleared": 0},
        {"index": 10, "turn": 2, "tokens": seed(messages_of([CC_RECORDS[i] for i in (1, 2, 3, 4, 6, 7)])),
         "event": None, "tokens_after": seed(messages_of([CC_RECORDS[i] for i in (1, 2, 3, 4, 6, 7)])),
         "cleared": 0},
        {"index": 13, "turn": 2, "tokens": seed(messages_of(main_before_boundary)), "event": "recorded",
         "tokens_after": seed(messages_of([summary])), "cleared": 0},
        {"index": 14, "turn": 3, "tokens": seed(messages_of([summary])), "event": None,
         "tokens_after": seed(messages_of([summary])), "cleared": 0},
    ]  # fmt: skip
    report = replay_json(got.stdout)
    assert report["calls"] == 3 and report["compactions"]["recorded"] == 1 and report["archives"] == []
    # The final context is the recorded compaction onwards, byte for byte.
    assert out.read_bytes() == dump(CC_RECORDS[12:])


def test_claude_code_auto_compaction_writes_what_claude_code_writes(tmp_path: Path) -> None:
    records = CC_RECORDS[:12]  # no recorded compaction
    threshold = seed(messages_of([records[i] for i in (1, 2, 3, 4, 6, 7)])) - 1  # crossed at call 2
    out = tmp_path / "out.jsonl"
    source = write(tmp_path / "cc.jsonl", records)
    got = invoke(
        "replay", source, "--backend", "digest", "--keep", 10, "--threshold", threshold, "-o", out, "--json"
    )
    assert got.exit_code == 0, got.output + got.stderr
    report = replay_json(got.stdout)
    assert report["compactions"]["auto"] == 1
    final = read_jsonl(out)
    boundary, summary, *rest = final
    assert boundary["subtype"] == "compact_boundary" and boundary["compactMetadata"]["trigger"] == "auto"
    assert boundary["logicalParentUuid"] == "u5" and boundary["sessionId"] == SESSION
    assert summary["isCompactSummary"] is True and summary["parentUuid"] == boundary["uuid"]
    archive = summary["message"]["content"][len(PREFIX) :].split("]")[0]
    assert archive == report["archives"][0] and Path(archive).is_file()
    # The records after the summary are linked to it, then to each other.
    assert [r["uuid"] for r in rest] == ["u6", "u7"]
    assert rest[0]["parentUuid"] == summary["uuid"] and rest[1]["parentUuid"] == "u6"
    assert validate_records(dialects.CLAUDE_CODE, enumerate(final, 1)) == []


# --- OpenAI ------------------------------------------------------------------------------------------


def test_openai_manual_compaction_waits_for_the_other_results(tmp_path: Path) -> None:
    arguments = json.dumps({"focus": FOCUS})
    records = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix {FOCUS} in the parser."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "k1", "type": "function", "function": {"name": "compact", "arguments": arguments}},
            {"id": "k2", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "k1", "content": "Compressing..."},  # 3: answers compact
        {"role": "tool", "tool_call_id": "k2", "content": "ok"},  # 4: same batch
        {"role": "assistant", "content": "Continuing."},  # 5
    ]  # fmt: skip
    timeline, out = tmp_path / "t.csv", tmp_path / "out.jsonl"
    got = invoke(
        "replay",
        write(tmp_path / "o.jsonl", records),
        "--backend",
        "digest",
        "--timeline",
        timeline,
        "-o",
        out,
    )
    assert got.exit_code == 0, got.output + got.stderr
    with open(timeline, newline="") as f:
        rows = [(int(r["index"]), int(r["turn"]), r["event"]) for r in csv.DictReader(f)]
    assert rows == [(2, 1, ""), (3, 1, "manual"), (5, 2, "")]
    final = read_jsonl(out)
    assert final[0] == records[0]  # the system message stays on top
    assert final[1]["role"] == "user" and final[1]["content"].startswith(PREFIX)
    assert f"## About {FOCUS}" in final[1]["content"]  # the digest got the focus
    assert final[2:] == records[5:]
    assert validate_records(dialects.OPENAI, enumerate(final, 1)) == []


# --- failures, plot, chart ---------------------------------------------------------------------------


def test_api_failure_exits_69_and_archives_nothing(tmp_path: Path, fake_api) -> None:
    from helpers.fakeapi import error_reply

    fake_api.always("messages", error_reply(500))
    source = write(tmp_path / "task.jsonl", RECORDS)
    got = invoke("replay", source, "--backend", "anthropic", "--threshold", THRESHOLD, "--keep", 10,
                 "--max-retries", 0, "--timeline", tmp_path / "t.jsonl")  # fmt: skip
    assert got.exit_code == 69, got.output + got.stderr
    assert "500" in got.stderr
    assert not (tmp_path / ".transcripts").exists()  # the summary comes first, the archive after it
    assert not (tmp_path / "t.jsonl").exists()


def test_plot_without_matplotlib_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    source = write(tmp_path / "task.jsonl", RECORDS)
    got = invoke(
        "replay",
        source,
        "--backend",
        "digest",
        "--plot",
        tmp_path / "p.png",
        "--timeline",
        tmp_path / "t.csv",
    )
    assert got.exit_code == 2
    assert "--plot needs matplotlib: pip install 'compactcli[plot]'" in got.stderr
    assert not (tmp_path / "t.csv").exists() and not (tmp_path / "p.png").exists()


def test_plot_writes_a_png(tmp_path: Path) -> None:
    # matplotlib is in the test extra: the installed command draws the chart for real.
    png = tmp_path / "p.png"
    got = run_cli("replay", write(tmp_path / "task.jsonl", RECORDS), "--backend", "digest", "--threshold",
                  THRESHOLD, "--keep", 10, "--plot", png, "-q", text=True)  # fmt: skip
    assert got.returncode == 0, got.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 400 and height >= 200, (width, height)


def test_text_chart_fits_80_columns_and_marks_the_calls_over_the_threshold() -> None:
    tokens = [1000 * n for n in range(1, 151)]  # 150 calls: 3 per column
    rows = [
        Row(i, i + 1, t, "auto" if t > 120_000 and i % 30 == 0 else None, t) for i, t in enumerate(tokens)
    ]
    rows.append(Row(200, 60, 5000, "manual", 100))
    text = text_chart(rows, 100_000)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    threshold_line = next(line for line in lines if line.endswith(" threshold"))
    cells = threshold_line.split("|", 1)[1].removesuffix(" threshold")
    assert len(cells) == 50
    # Column c holds calls 3c+1..3c+3 and shows the largest: over 100,000 from call 101 (column 33).
    assert cells == "-" * 33 + "#" * 17
    marks = lines[lines.index(next(line for line in lines if line.lstrip().startswith("0 +"))) + 1]
    offset = len(threshold_line.split("|", 1)[0]) + 1
    assert marks[offset + 19] == "M"  # after call 60 (column 19)
    assert marks[offset + 40] == "A"  # call 121 (index 120), the only auto row
    assert marks.count("A") == 1 and marks.count("M") == 1


# --- samples, through the installed command ----------------------------------------------------------


@pytest.mark.parametrize("sample", sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.glob("*/*.jsonl")))
def test_samples_in_a_subprocess(tmp_path: Path, sample: str) -> None:
    out, timeline, archives = tmp_path / "out.jsonl", tmp_path / "t.csv", tmp_path / "archives"
    env = dict(os.environ)  # without credentials (the autouse fixture removed them)
    # The Codex sample ends with a short turn after the compaction recorded in it: a lower threshold
    # makes one of replay's own compactions the last.
    # So does Copilot's (its summary and a few calls after it, about 500 tokens).
    # So does Qwen Code's (its recorded compression, then about 370 tokens).
    thresholds = {"codex": "400", "copilot": "300", "qwen-code": "300"}
    threshold = thresholds.get(sample.split("/")[0], "1500")
    done = run_cli(
        "replay", SAMPLES / sample, "--threshold", threshold, "--backend", "auto", "-o", out,
        "--timeline", timeline, "--archive-dir", archives, text=True, env=env, cwd=tmp_path
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "summarizer digest (--backend auto: no API key" in done.stderr
    assert "model calls" in done.stdout and " threshold" in done.stdout
    chart = done.stdout.split("\n\n", 1)[1]
    assert max(len(line) for line in chart.splitlines()) <= 80
    with open(timeline, newline="") as f:
        rows = list(csv.DictReader(f))
    assert any(row["event"] == "auto" for row in rows)
    dialect = dialects.get(sample.split("/")[0])
    final = read_jsonl(out)
    assert validate_records(dialect, enumerate(final, 1)) == []
    # What the model is sent: the messages, and what a compaction restarts the context with (Codex).
    seen = [part for record in final for part in (record, *dialect.restarted_with(record))]
    texts = [str(dialect.normalize(record)["content"]) for record in seen if dialect.message(record)]
    named = [text.split(PREFIX, 1)[1].split("]", 1)[0] for text in texts if PREFIX in text]
    assert len(named) == 1 and Path(named[0]).is_file() and Path(named[0]).parent == archives.resolve()
    assert not (SAMPLES / sample).parent.joinpath(".transcripts").exists()


# --- optional tier: the real transcripts in ../shared/corpus ---------------------------------------


def expected_calls(path: Path, dialect: str) -> int:
    """Model calls counted straight from the file: assistant lines; for Claude Code, runs of main-chain
    assistant records with one message.id, without API error notices; for Codex, the token_count events
    of a call (input tokens, and a running total that moved: the same count is sometimes written twice)."""
    calls, last_id, sidechain_file = 0, object(), None
    seen_ids: set[str] = set()
    for raw in path.read_bytes().splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if dialect == "codex":
            info = (record.get("payload") or {}).get("info") if record.get("type") == "event_msg" else None
            if isinstance(info, dict) and info.get("last_token_usage", {}).get("input_tokens"):
                total = info.get("total_token_usage")
                calls += total != last_id
                last_id = total
            continue
        if dialect == "pi":  # an error or aborted message is never sent again
            message = record.get("message") if record.get("type") == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant":
                calls += message.get("stopReason") not in ("error", "aborted")
        if dialect == "gemini-cli":  # each gemini record (upserted by id) is one call
            if record.get("type") == "gemini" and record.get("id") != last_id:
                calls += record["id"] not in seen_ids
                seen_ids.add(record["id"])
        if dialect == "copilot":  # one assistant.message per model response, sub-agents' left out
            data = record.get("data") or {}
            main = "agentId" not in record and "parentToolCallId" not in data
            calls += record.get("type") == "assistant.message" and main
            continue
        if dialect != "claude-code":
            calls += record.get("role") == "assistant"
            continue
        if record.get("type") not in ("user", "assistant"):
            continue
        if sidechain_file is None:
            sidechain_file = record.get("isSidechain") is True
        if (record.get("isSidechain") is True) != sidechain_file or record["type"] != "assistant":
            continue
        if record.get("isApiErrorMessage") or record["message"].get("model") == "<synthetic>":
            continue
        message_id = record["message"].get("id")
        if message_id is None or message_id != last_id:
            calls += 1
        last_id = message_id
    return calls


def _parses(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True


@pytest.mark.corpus
@pytest.mark.parametrize("original", corpus_params())
def test_replay_on_corpus_file(original: Path, tmp_path: Path) -> None:
    expect = expectation(original)
    out, archives, timeline = tmp_path / "out.jsonl", tmp_path / "archives", tmp_path / "timeline.jsonl"
    got = invoke("replay", original, "--backend", "digest", "--on-invalid", "keep", "--threshold", 20_000,
                 "-o", out, "--archive-dir", archives, "--timeline", timeline, "--json")  # fmt: skip
    if expect.dialect is None:  # refused: tests/test_corpus.py checks the message
        assert got.exit_code == 65 and not out.exists(), got.output + got.stderr
        return
    dialect = dialects.get(expect.dialect)
    assert got.exit_code == 0, got.output + got.stderr
    report = replay_json(got.stdout)
    assert report["calls"] == expected_calls(original, dialect.name)
    compactions = report["compactions"]["auto"] + report["compactions"]["manual"]
    # Every call whose context is over the threshold compacts first, and only those.
    rows = [json.loads(line) for line in timeline.read_text().splitlines()]
    calls = [row for row in rows if row["event"] in (None, "auto")]  # not manual or recorded compactions
    assert len(calls) == report["calls"]
    assert [row["event"] == "auto" for row in calls] == [row["tokens"] > 20_000 for row in calls]
    assert sum(row["event"] == "auto" for row in calls) == report["compactions"]["auto"]
    if original.stat().st_size > 400_000:  # far more than 20,000 tokens of text: it must compact
        assert report["compactions"]["auto"] >= 1
    assert report["summarizer_calls"] == compactions
    assert len(report["archives"]) == compactions
    for path in report["archives"]:
        assert Path(path).is_file()
    # --on-invalid keep: a torn line reaches the output unchanged (it may hold conversation).
    written = out.read_bytes().splitlines()
    torn = [raw for raw in original.read_bytes().splitlines() if raw.strip() and not _parses(raw)]
    assert [raw for raw in written if not _parses(raw)] == torn
    final = [json.loads(raw) for raw in written if _parses(raw)]
    for record in final:
        message = dialect.normalize(record)
        text = str(message["content"]) if message else ""
        if PREFIX in text:
            assert Path(text.split(PREFIX, 1)[1].split("]", 1)[0]).is_file()
    if not expect.violations:  # a torn line may have held a tool result: such files start invalid
        assert validate_records(dialect, enumerate(final, 1)) == []


# --- replay --compare ---------------------------------------------------------------------------------
# A four-call transcript whose figures are worked out here by hand. With --keep 1 micro clears c1's
# result before call 3 and c2's before call 4. The threshold is one below the whole context at call 3,
# so `summarize` compacts there (the fake API writes "SUM") and nowhere else, while `hybrid`, whose
# micro has shrunk that context, never compacts.

CMP = [
    {"role": "user", "content": "Tidy the logs in app/log.py."},  # 0
    call("c1", text="Looking first."),  # 1 call 1
    result("c1", "A" * 400),  # 2
    call("c2"),  # 3 call 2
    result("c2", "B" * 400),  # 4
    call("c3"),  # 5 call 3
    result("c3", "C" * 400),  # 6
    {"role": "assistant", "content": "Done: the logs are tidy."},  # 7 call 4
]
CMP_THRESHOLD = seed(CMP[:5]) - 1
CMP_PRICE = (3.0, 0.3, 15.0)
NOT_ARCHIVED = "(not archived: comparison)"
MICRO_STRATEGIES = ("dedupe-reads", "keep-images", "truncate", "drop-thinking")


def cleared(record: dict) -> dict:
    """The record with its tool result replaced by micro's default placeholder."""
    block = dict(record["content"][0], content="[Previous: used bash]")
    return {"role": "user", "content": [block]}


def cost(input_tokens: int, cached: int, output: int, summ_in: int = 0, summ_out: int = 0) -> float:
    price_in, price_cached, price_out = CMP_PRICE
    fresh = input_tokens - cached + summ_in
    return (fresh * price_in + cached * price_cached + (output + summ_out) * price_out) / 1_000_000


def compare_rows(tmp_path: Path, *args: object) -> list[dict]:
    source = write(tmp_path / "cmp.jsonl", CMP)
    got = invoke("replay", source, "--compare", "--keep", 1, "--json", *args)
    assert got.exit_code == 0, got.output + got.stderr
    return [replay_json(line) for line in got.stdout.splitlines()]


def test_compare_figures_by_hand(tmp_path: Path, fake_api) -> None:
    fake_api.reply_text = lambda body: "SUM"
    price = ",".join(str(p) for p in CMP_PRICE)
    rows = compare_rows(tmp_path, "--backend", "anthropic", "--threshold", CMP_THRESHOLD, "--price", price)
    assert [(r["strategy"], r["threshold"]) for r in rows] == [
        ("none", None), ("micro", None), *((name, None) for name in MICRO_STRATEGIES),
        ("summarize", CMP_THRESHOLD), ("hybrid", CMP_THRESHOLD),
    ]  # fmt: skip
    output = sum(seed([CMP[line]]) for line in (1, 3, 5, 7))  # what the four calls wrote
    c2, c4 = cleared(CMP[2]), cleared(CMP[4])
    summary = summary_message(NOT_ARCHIVED, "SUM" + user_section(CMP[0]["content"]))

    # none: every call gets the whole history; each call's prefix is the previous call's context.
    sent = [seed(CMP[:1]), seed(CMP[:3]), seed(CMP[:5]), seed(CMP[:7])]
    cached = [0, sent[0], sent[1], sent[2]]
    # micro: c1's result is cleared before call 3 (the prefix ends at line 2), c2's before call 4.
    micro_sent = [
        sent[0],
        sent[1],
        seed([*CMP[:2], c2, *CMP[3:5]]),
        seed([*CMP[:2], c2, CMP[3], c4, *CMP[5:7]]),
    ]
    micro_cached = [0, sent[0], seed(CMP[:2]), seed([*CMP[:2], c2, CMP[3]])]
    # summarize: call 3 is over the threshold and gets the summary alone; nothing of it was cached.
    summ_sent = [sent[0], sent[1], seed([summary]), seed([summary, *CMP[5:7]])]
    summ_cached = [0, sent[0], 0, seed([summary])]
    assert seed(CMP[:3]) <= CMP_THRESHOLD and summ_sent[3] <= CMP_THRESHOLD  # compacts once, at call 3
    assert micro_sent[2] <= CMP_THRESHOLD and micro_sent[3] <= CMP_THRESHOLD  # hybrid never compacts

    named = {row["strategy"]: row for row in rows}
    none, micro, summarized, hybrid = (named[name] for name in ("none", "micro", "summarize", "hybrid"))
    expected = [(none, sent, cached), (micro, micro_sent, micro_cached),
                (summarized, summ_sent, summ_cached), (hybrid, micro_sent, micro_cached)]  # fmt: skip
    for row, contexts, prefix in expected:
        assert row["calls"] == 4 and row["output_tokens"] == output, row["strategy"]
        assert row["contexts"] == contexts, row["strategy"]
        assert row["peak_sent_tokens"] == max(contexts)
        assert row["input_tokens"] == sum(contexts) and row["cached_input_tokens"] == sum(prefix), row[
            "strategy"
        ]
    # No file is read, no image or thinking is sent: those strategies clear what micro clears. Each
    # 400-character result is shorter than --truncate 200:200 plus its mark, so truncate keeps it whole.
    for name in ("dedupe-reads", "keep-images", "drop-thinking"):
        assert named[name]["contexts"] == micro_sent and named[name]["cost"] == micro["cost"], name
    assert named["truncate"]["contexts"] == sent and named["truncate"]["cleared"] == 0
    assert [r["summarizer_calls"] for r in (none, micro, summarized, hybrid)] == [0, 0, 1, 0]
    assert summarized["compactions"] == {"auto": 1, "manual": 0, "recorded": 0}
    assert summarized["summarizer_input_tokens"] == seed(CMP[:5])
    assert summarized["summarizer_output_tokens"] == seed([summary])
    assert [r["cleared"] for r in (none, micro, summarized, hybrid)] == [0, 2, 0, 2]
    assert none["cost"] == pytest.approx(cost(sum(sent), sum(cached), output), abs=1e-6)
    assert micro["cost"] == pytest.approx(cost(sum(micro_sent), sum(micro_cached), output), abs=1e-6)
    want = cost(sum(summ_sent), sum(summ_cached), output, seed(CMP[:5]), seed([summary]))
    assert summarized["cost"] == pytest.approx(want, abs=1e-6)
    assert all(r["price"] == {"input": 3.0, "cached": 0.3, "output": 15.0} for r in rows)
    assert len(fake_api.calls("messages")) == 1  # only `summarize` asked for a summary
    assert not (tmp_path / ".transcripts").exists()  # compare writes nothing


def test_compare_default_thresholds_and_price(tmp_path: Path) -> None:
    rows = compare_rows(tmp_path, "--backend", "digest")
    assert [(r["strategy"], r["threshold"]) for r in rows] == [
        ("none", None), ("micro", None), *((name, None) for name in MICRO_STRATEGIES),
        ("summarize", 50_000), ("summarize", 100_000), ("summarize", 150_000),
        ("hybrid", 50_000), ("hybrid", 100_000), ("hybrid", 150_000),
    ]  # fmt: skip
    # The default price: Claude Sonnet 5.5, USD 2 / 0.10 / 10 per million tokens.
    assert rows[0]["price"] == {"input": 2.0, "cached": 0.1, "output": 10.0}
    assert rows[0]["backend"] == "digest" and rows[0]["keep"] == 1 and rows[0]["estimator"] == "seed"
    opus = compare_rows(tmp_path, "--backend", "digest", "--price-model", "claude-opus-4-6")
    assert opus[0]["price"] == {"input": 5.0, "cached": 0.5, "output": 25.0}
    tokens = opus[0]["input_tokens"], opus[0]["cached_input_tokens"], opus[0]["output_tokens"]
    assert tokens == (rows[0]["input_tokens"], rows[0]["cached_input_tokens"], rows[0]["output_tokens"])
    fresh, cached, output = tokens[0] - tokens[1], tokens[1], tokens[2]
    assert opus[0]["cost"] == pytest.approx((fresh * 5 + cached * 0.5 + output * 25) / 1e6, abs=1e-6)
    assert rows[0]["cost"] == pytest.approx((fresh * 2 + cached * 0.1 + output * 10) / 1e6, abs=1e-6)


def test_compare_price_defaults_are_the_sdks_models() -> None:
    import typing

    from anthropic.types.model_param import ModelParam

    from compactcli.backends.anthropic import DEFAULT_MODEL
    from compactcli.counting.pricing import DEFAULT_PRICE_MODEL, PRICES

    named = set(typing.get_args(typing.get_args(ModelParam)[0]))
    assert DEFAULT_PRICE_MODEL == DEFAULT_MODEL
    assert set(PRICES) <= named
    assert named - set(PRICES) == {"claude-mythos-5-2", "claude-mythos-preview"}  # no published price


def test_compare_csv_and_table(tmp_path: Path) -> None:
    source = write(tmp_path / "cmp.jsonl", CMP)
    got = invoke(
        "replay", source, "--compare", "--backend", "digest", "--threshold", CMP_THRESHOLD, "--format", "csv"
    )
    assert got.exit_code == 0, got.stderr
    table = list(csv.DictReader(got.stdout.splitlines()))
    assert list(table[0]) == [
        "strategy", "threshold", "calls", "auto", "manual", "recorded", "cleared", "peak_sent_tokens",
        "input_tokens", "cached_input_tokens", "output_tokens", "summarizer_calls", "summarizer_input_tokens",
        "summarizer_output_tokens", "cost",
    ]  # fmt: skip
    assert [(r["strategy"], r["threshold"]) for r in table] == [
        ("none", ""), ("micro", ""), *((name, "") for name in MICRO_STRATEGIES),
        ("summarize", str(CMP_THRESHOLD)), ("hybrid", str(CMP_THRESHOLD)),
    ]  # fmt: skip
    assert table[0]["input_tokens"] == str(seed(CMP[:1]) + seed(CMP[:3]) + seed(CMP[:5]) + seed(CMP[:7]))
    text = invoke(
        "replay",
        source,
        "--compare",
        "--backend",
        "digest",
        "--threshold",
        CMP_THRESHOLD,
        "--format",
        "table",
    )
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"{source}: anthropic; estimator seed; summarizer digest")
    assert lines[1] == "USD per million tokens: input 2, cached input 0.1, output 10"
    assert lines[2].split()[:4] == ["strategy", "threshold", "calls", "compact"]
    names = ["none", "micro", *MICRO_STRATEGIES, "summarize", "hybrid"]
    assert [line.split()[0] for line in lines[3:11]] == names
    chart_lines = lines[lines.index("tokens sent per model call (seed estimate)") + 1 :]
    assert [line.split()[0] for line in chart_lines[:8]] == names
    assert max(len(line) for line in chart_lines) <= 80


def test_compare_plot_writes_a_png(tmp_path: Path) -> None:
    png = tmp_path / "cmp.png"
    got = run_cli("replay", write(tmp_path / "cmp.jsonl", CMP), "--compare", "--backend", "digest",
                  "--plot", png, "-q", text=True)  # fmt: skip
    assert got.returncode == 0, got.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp.jsonl", "cmp.png"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--price", "3,0.3"), "--price"),
        (("--price", "3,x,15"), "--price"),
        (("--price", "3,-1,15"), "--price"),
        (("--price", "nan,1,1"), "--price"),
        (("--price-model", "claude-nonesuch"), "--price-model"),
        (("--price", "1,1,1", "--price-model", "claude-opus-4-6"), "--price-model"),
        (("-o", "out.jsonl"), "-o"),
        (("--keep", "1,2"), "--keep"),
    ],
)
def test_compare_usage_errors(tmp_path: Path, args: tuple[str, ...], named: str) -> None:
    source = write(tmp_path / "cmp.jsonl", CMP)
    got = invoke("replay", source, "--compare", "--backend", "digest", *args)
    assert got.exit_code == 2, got.stdout
    assert named in got.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp.jsonl"]


def test_price_and_csv_need_compare(tmp_path: Path) -> None:
    source = write(tmp_path / "cmp.jsonl", CMP)
    for args in (("--price", "1,1,1"), ("--format", "csv")):
        got = invoke("replay", source, "--backend", "digest", *args)
        assert got.exit_code == 2 and "--compare" in got.stderr, args


def test_compare_chart_scale_and_width() -> None:
    # On the scale of the largest value (100): 50 is level round(4.5) = 4 of LEVELS " .:-=+*#%@".
    assert text_series({"a": [0, 50, 100], "bb": [10, 10, 10]}).splitlines() == [
        "a  | =@| 100",
        "bb |...| 10",
        "    calls 1-3; '@' = 100 tokens sent",
    ]
    long = {f"strategy {n}": [1000 * c for c in range(1, 301)] for n in range(3)}  # 300 calls
    lines = text_series(long).splitlines()
    assert max(len(line) for line in lines) <= 80
    # 80 columns less the name (10), " |", "| " and "300k" leave 62: 300 calls take 5 a column.
    assert lines[-1].endswith("calls 1-300, 5 a column (largest); '@' = 300k tokens sent")
