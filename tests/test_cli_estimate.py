"""estimate: the active context, each method, the gate, the output formats, the API cache.

Expected token counts are computed here independently: the seed formula literally as
`len(str(list)) // 4` over the json.loads'ed messages picked by hand, image tokens from their
pixel size by Anthropic's published rule, recorded usage added up by hand.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import pickle
import re
import struct
import subprocess
import sys
import zlib
from functools import partial
from pathlib import Path

import pytest
from helpers.bigfile import write as write_big
from helpers.cli import invoke, run_cli
from helpers.fakeapi import FakeAnthropic, error_reply
from helpers.files import write_jsonl

from compactcli import dialects
from compactcli.layers.estimate import (
    TopResults,
    UsageTracker,
    count_request,
    request_key,
)
from compactcli.pipelines.context import ContextCounter, TokenCache, estimator
from compactcli.report import annotation

REPO = Path(__file__).resolve().parent.parent


# --- helpers --------------------------------------------------------------------------------------


write = partial(write_jsonl, ensure_ascii=False)


def run(*args: object, input: str | bytes | None = None, env: dict | None = None):
    return invoke("estimate", *args, input=input, env=env)


def rows(result) -> list[dict]:
    """Each file's JSON object with its figures (`stats`) lifted beside path, status and message."""
    flat = []
    for line in result.stdout.splitlines():
        obj = json.loads(line)
        assert obj["command"] == "estimate" and obj["schema_version"] == 1
        flat.append({**obj["stats"], **{k: obj[k] for k in ("path", "status", "exit_code", "message")}})
    return flat


def one(*args: object) -> dict:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    [row] = rows(result)
    return row


def seed(messages: list) -> int:
    return len(str(messages)) // 4


def png(width: int, height: int) -> str:
    """Base64 of a PNG header (signature and IHDR chunk) for an image of this size."""
    ihdr = struct.pack(">II", width, height) + bytes([8, 2, 0, 0, 0])
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk + b"\0" * 64).decode()


# Claude Code records ---------------------------------------------------------------------------


def cc_user(content, uuid: str, **extra) -> dict:
    return {
        "type": "user",
        "uuid": uuid,
        "isSidechain": False,
        "sessionId": "s1",
        "message": {"role": "user", "content": content},
        **extra,
    }


def cc_assistant(content, uuid: str, *, msg_id: str = "m", usage: dict | None = None, **extra) -> dict:
    message = {"id": msg_id, "role": "assistant", "model": "claude-opus-4-5", "content": content}
    if usage is not None:
        message["usage"] = usage
    return {
        "type": "assistant",
        "uuid": uuid,
        "isSidechain": False,
        "sessionId": "s1",
        "message": message,
        **extra,
    }


def use(call_id: str, name: str, **tool_input) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def result(call_id: str, content) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def usage(inp: int, created: int = 0, read: int = 0, out: int = 1) -> dict:
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": read,
        "output_tokens": out,
    }


def messages_of(records: list[dict]) -> list[dict]:
    return [r["message"] for r in records if r.get("type") in ("user", "assistant")]


# --- seed: the literal formula, per dialect -------------------------------------------------------


@pytest.mark.parametrize("dialect", ["anthropic", "anthropic-repr", "openai", "claude-code"])
def test_seed_is_the_literal_formula_on_generated_files(tmp_path: Path, dialect: str) -> None:
    path = tmp_path / "t.jsonl"
    write_big(path, dialect, turns=25, result_chars=300, seed=3)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    if dialect == "claude-code":
        messages = messages_of(records)  # one main conversation, no compaction
    else:
        messages = records  # every line is a message object, stringified blocks included
    row = one(path, "--method", "seed")
    assert row["tokens"] == len(str(messages)) // 4
    assert row["messages"] == len(messages)


def test_seed_keeps_stringified_blocks_as_the_strings_they_are(tmp_path: Path) -> None:
    block = (
        "ToolUseBlock(id='toolu_1', caller=None, input={'path': 'a.py'}, name='read_file', type='tool_use')"
    )
    records = [
        {"role": "user", "content": "Read a.py — ünïcode ✓ 🚀"},
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": [result("toolu_1", "x = 1\n" * 40)]},
    ]
    path = write(tmp_path / "t.jsonl", records)
    assert one(path, "--method", "seed")["tokens"] == seed(records)


def test_seed_counts_openai_messages_as_they_are_in_the_file(tmp_path: Path) -> None:
    records = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
    ]
    path = write(tmp_path / "t.jsonl", records)
    row = one(path, "--method", "seed")
    assert row["tokens"] == seed(records)
    assert (row["dialect"], row["messages"], row["tool_results"]) == ("openai", 4, 1)


# --- Claude Code: active context, sidechains ------------------------------------------------------


def compacted_session() -> tuple[list[dict], int]:
    """A session with a compaction: its records, and the index where the active context starts."""
    before = [
        {"type": "summary", "summary": "old", "leafUuid": "u2"},
        cc_user("first task " * 200, "u1"),
        cc_assistant([use("t1", "Bash", command="ls")], "a1", msg_id="m1", usage=usage(5000)),
        cc_user([result("t1", "file\n" * 500)], "u2"),
        cc_assistant([{"type": "text", "text": "done " * 300}], "a2", msg_id="m2", usage=usage(9000)),
        {"type": "system", "subtype": "compact_boundary", "parentUuid": None, "uuid": "b1"},
    ]
    after = [
        cc_user("This session is being continued. Summary: did things.", "u3", isCompactSummary=True),
        cc_assistant([use("t2", "Read", file_path="a.py")], "a3", msg_id="m3"),
        {"type": "progress", "data": {"type": "bash_progress"}, "uuid": "p1"},
        cc_user([result("t2", "print(1)\n" * 30)], "u4"),
    ]
    return before + after, len(before)


def test_only_the_context_after_the_last_compaction_counts(tmp_path: Path) -> None:
    records, start = compacted_session()
    whole = write(tmp_path / "whole.jsonl", records)
    # The same active context without the history before it, as its own file.
    tail = write(tmp_path / "tail.jsonl", records[start:])
    active = messages_of(records[start:])
    row = one(whole, "--method", "seed")
    assert row["tokens"] == seed(active)
    assert row["messages"] == 3
    assert row["tool_results"] == 1
    assert row["active_from"] == start  # the boundary's line (1-based) is the last line before
    for method in ("heuristic", "seed"):
        assert one(whole, "--method", method)["tokens"] == one(tail, "--method", method)["tokens"]
        assert one(whole, "--method", method)["by_category"] == one(tail, "--method", method)["by_category"]


def test_a_compact_summary_without_boundary_also_starts_the_context(tmp_path: Path) -> None:
    records, start = compacted_session()
    del records[start - 1]  # older Claude Code: no boundary record
    path = write(tmp_path / "t.jsonl", records)
    row = one(path, "--method", "seed")
    assert row["tokens"] == seed(messages_of(records[start - 1 :]))
    assert row["active_from"] == start  # the summary's line


def test_inline_sidechain_records_are_not_counted(tmp_path: Path) -> None:
    main = [
        cc_user("run the sub-agent", "u1"),
        cc_assistant([use("t1", "Task", prompt="look")], "a1"),
    ]
    side = [
        {**cc_user("look around " * 50, "s1"), "isSidechain": True, "parentUuid": None},
        {**cc_assistant([{"type": "text", "text": "found " * 80}], "s2"), "isSidechain": True},
    ]
    records = [*main, *side, cc_user([result("t1", "the sub-agent's report")], "u2")]
    path = write(tmp_path / "t.jsonl", records)
    row = one(path, "--method", "seed")
    assert row["tokens"] == seed(messages_of([*main, records[-1]]))
    assert row["conversation"] == "main"


def test_a_file_of_sidechain_records_only_is_its_own_conversation(tmp_path: Path) -> None:
    records = [
        {
            **cc_user("look around " * 50, "s1"),
            "isSidechain": True,
            "agentId": "x1",
            "parentUuid": None,
        },
        {
            **cc_assistant([use("t1", "Grep", pattern="TODO")], "s2"),
            "isSidechain": True,
            "agentId": "x1",
        },
        {
            **cc_user([result("t1", "a.py:3: TODO\n" * 20)], "s3"),
            "isSidechain": True,
            "agentId": "x1",
        },
    ]
    path = write(tmp_path / "agent-x1.jsonl", records)
    row = one(path, "--method", "seed")
    assert row["tokens"] == seed(messages_of(records)) > 0
    assert row["conversation"] == "sidechain"
    assert row["messages"] == 3
    heuristic = one(path)
    assert heuristic["tokens"] > 0 and heuristic["by_category"]["tool_results"] > 0


# --- images ---------------------------------------------------------------------------------------


def test_image_tokens_come_from_pixel_size_and_land_in_images(tmp_path: Path) -> None:
    small = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": png(1000, 500)},
    }
    # 3000x2000 is scaled to fit 1568 px: 1568 x 1045.3 px / 750 = 2185, capped at 1600.
    large = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": png(3000, 2000)},
    }
    records = [
        {"role": "user", "content": [small, {"type": "text", "text": "what is this?"}]},
        {"role": "assistant", "content": [use("t1", "screenshot")]},
        {"role": "user", "content": [result("t1", [large])]},
    ]
    row = one(write(tmp_path / "t.jsonl", records), "--dialect", "anthropic")
    # 1000 * 500 / 750 = 666.7 -> 667
    assert row["by_category"]["images"] == 667 + 1600
    table = run(tmp_path / "t.jsonl")
    header, line = table.stdout.splitlines()[:2]
    images_at = header.split().index("images")
    assert line.split()[images_at] == "2,267"


def test_openai_data_url_images_are_priced_by_pixels(tmp_path: Path) -> None:
    url = "data:image/png;base64," + png(750, 300)  # 750 * 300 / 750 = 300
    records = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    row = one(write(tmp_path / "t.jsonl", records), "--dialect", "openai")
    assert row["by_category"]["images"] == 300


# --- the gate and the output formats --------------------------------------------------------------


BIG = [{"role": "user", "content": "word " * 4000}]
BIG_SEED = len(str(BIG)) // 4  # 20,033 characters: 5,008


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    small = write(tmp_path / "small.jsonl", [{"role": "user", "content": "hi"}])
    big = write(tmp_path / "big.jsonl", [{"role": "user", "content": "word " * 4000}])
    return small, big


def test_gate_exits_0_under_the_limit_and_1_over_it(two_files: tuple[Path, Path]) -> None:
    small, big = two_files
    seed_big = BIG_SEED
    assert run(small, big, "--method", "seed", "--max-tokens", seed_big).exit_code == 0
    over = run(small, big, "--method", "seed", "--max-tokens", seed_big - 1)
    assert over.exit_code == 1
    assert f"{seed_big:,} tokens > {seed_big - 1:,}" in over.stdout
    assert f"1 over {seed_big - 1:,}" in over.stderr
    assert run(small, "--max-tokens", 100).exit_code == 0
    assert run(small, "--max-tokens", 0).exit_code == 1
    assert run(small, big).exit_code == 0  # no limit, no gate


def test_json_lines_one_object_per_file(two_files: tuple[Path, Path]) -> None:
    small, big = two_files
    result = run(small.parent, "--method", "seed", "--max-tokens", 1000, "--format", "json")
    assert result.exit_code == 1
    by_path = {r["path"]: r for r in rows(result)}
    assert set(by_path) == {str(small), str(big)}
    assert by_path[str(big)]["status"] == "over" and by_path[str(big)]["exit_code"] == 1
    assert by_path[str(small)]["status"] == "ok" and by_path[str(small)]["exit_code"] == 0
    assert by_path[str(small)]["tokens"] == seed([{"role": "user", "content": "hi"}])
    assert by_path[str(big)]["share"] == pytest.approx(BIG_SEED / 1000)
    assert set(by_path[str(small)]["by_category"]) == {
        "text",
        "tool_inputs",
        "tool_results",
        "thinking",
        "images",
    }
    assert rows(run(small, "--json")) == rows(run(small, "--format", "json"))


def test_csv_has_a_header_and_a_row_per_file(two_files: tuple[Path, Path]) -> None:
    small, big = two_files
    result = run(small, big, "--method", "seed", "--format", "csv", "--max-tokens", 1000)
    parsed = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["path"] for r in parsed] == [str(small), str(big)]
    assert [r["status"] for r in parsed] == ["ok", "over"]
    assert int(parsed[1]["tokens"]) == BIG_SEED
    assert float(parsed[1]["share"]) == pytest.approx(BIG_SEED / 1000, abs=1e-4)
    assert int(parsed[0]["bytes"]) == small.stat().st_size


def test_github_annotates_files_over_the_limit_only(two_files: tuple[Path, Path]) -> None:
    small, big = two_files
    result = run(small, big, "--format", "github", "--max-tokens", 1000, "--top", 1)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 1  # the big file has no tool results for --top
    match = re.fullmatch(r"::error file=([^,]+),title=([^:]+)::(.+)", lines[0])
    assert match, lines[0]
    assert match[1] == str(big)
    assert "over the limit of 1,000" in match[3]
    assert run(small, "--format", "github", "--max-tokens", 1000).stdout == ""


def test_github_annotations_escape_what_would_break_them() -> None:
    line = annotation("error", "50%\nnext", file="dir,a:b.jsonl", line=3, title="a: b")
    assert line == "::error file=dir%2Ca%3Ab.jsonl,line=3,title=a%3A b::50%25%0Anext"


def test_table_has_a_total_line_and_the_share_of_the_limit(two_files: tuple[Path, Path]) -> None:
    small, big = two_files
    result = run(small, big, "--method", "seed", "--max-tokens", 10000)
    header, first, second, total = result.stdout.splitlines()
    assert header.split()[:2] == ["tokens", "%max"]
    assert second.split()[:2] == [f"{BIG_SEED:,}", "50%"]
    expected_total = seed([{"role": "user", "content": "hi"}]) + BIG_SEED
    assert total.split()[0] == f"{expected_total:,}"
    assert total.endswith("total (2 files, seed)")
    assert result.stderr.strip() == f"2 files, {expected_total:,} tokens (seed), 0 over 10,000"


def test_top_lists_the_heaviest_results_micro_would_clear_with_tool_and_line(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("a", "Bash", command="ls")]},
        {"role": "user", "content": [result("a", "short")]},  # 3: at most --min-chars: kept by micro
        {
            "role": "assistant",
            "content": [use("b", "Read", file_path="x"), use("c", "Grep", pattern="y")],
        },
        # 5: Read is preserved by micro (the heaviest result, yet not listed); Grep is cleared
        {"role": "user", "content": [result("b", "long line\n" * 300), result("c", "medium\n" * 50)]},
        {"role": "assistant", "content": [use("d", "Bash", command="make"), use("e", "Bash", command="ls")]},
        {"role": "user", "content": [result("d", "build log\n" * 200)]},  # 7: cleared
        {
            "role": "assistant",
            "content": [use("f", "Bash", command="make test"), use("g", "Bash", command="df")],
        },
        # 9, 10 and 11 hold the last three results: kept by micro
        {"role": "user", "content": [result("e", "listing\n" * 400)]},
        {"role": "user", "content": [result("f", "test log\n" * 400)]},
        {"role": "user", "content": [result("g", "disk usage\n" * 400)]},
    ]
    path = write(tmp_path / "t.jsonl", records)
    top = one(path, "--top", 5)["top"]
    assert [(t["tool"], t["line"]) for t in top] == [("Bash", 7), ("Grep", 5)]
    assert top[0]["tokens"] > top[1]["tokens"] > 0
    table = run(path, "--top", 1).stdout
    assert f"    {path}:7: Bash result, {top[0]['tokens']:,} tokens" in table
    assert "Grep result" not in table


def test_top_results_keeps_the_heaviest_of_the_clearable() -> None:
    top = TopResults(2)
    for tokens, line in [(5, 1), (50, 2), (7, 3), (50, 4), (1, 5)]:
        top.add(tokens, line, f"id{line}")
    every = {(line, f"id{line}") for line in range(1, 6)}
    picked = top.result({"id2": "Bash"}, every)
    assert [(h.tokens, h.line, h.tool) for h in picked] == [(50, 2, "Bash"), (50, 4, "unknown")]
    picked = top.result({}, every - {(2, "id2")})
    assert [(h.tokens, h.line) for h in picked] == [(50, 4), (7, 3)]


@pytest.mark.parametrize(
    "sample",
    sorted((Path(__file__).resolve().parent.parent / "samples").glob("*/*.jsonl")),
    ids=lambda p: p.name,
)
def test_top_names_exactly_the_lines_micro_changes(sample: Path, tmp_path: Path) -> None:
    listed = run_cli("estimate", "--top", 1000, "--json", sample, text=True)
    assert listed.returncode == 0, listed.stderr
    top_lines = {item["line"] for item in json.loads(listed.stdout)["stats"]["top"]}
    out = tmp_path / "out.jsonl"
    assert run_cli("micro", "-o", out, sample).returncode == 0
    before, after = sample.read_bytes().splitlines(), out.read_bytes().splitlines()
    changed = {n for n, (old, new) in enumerate(zip(before, after, strict=True), 1) if old != new}
    if sample.parent.name == "claude-code":
        # estimate counts the main conversation after the last compaction; micro also clears before
        # it and in sub-agent conversations
        assert top_lines <= changed
        assert top_lines
    elif sample.parent.name == "pi":
        # micro also clears the first task's results, which the sample's compaction replaced
        assert top_lines <= changed and changed
    elif sample.parent.name == "codex":
        # the sample's results all come before its compaction (line 44), which estimate starts from
        assert top_lines == set() and changed and max(changed) < 44
    elif sample.parent.name == "qwen-code":
        # the result micro clears comes before the sample's chat_compression (line 18): estimate starts there
        assert top_lines == set() and changed and max(changed) < 18
    elif sample.parent.name == "copilot":
        # the results micro clears (keep 3) all come before Copilot's compaction, which estimate starts from
        compaction = next(n for n, raw in enumerate(before, 1) if b'"session.compaction_complete"' in raw)
        assert top_lines == set() and changed and max(changed) < compaction
    else:
        assert top_lines == changed
    top = json.loads(listed.stdout)["stats"]["top"]
    assert all(item["tool"] not in ("Read", "read_file", "read", "view") for item in top)


# --- bad input, stdin, jobs -----------------------------------------------------------------------


@pytest.mark.parametrize("end", ["\n", ""])  # a bad last line, and one torn off (no newline)
def test_bad_line_exits_65_with_path_and_line_and_other_files_are_counted(tmp_path: Path, end: str) -> None:
    good = write(tmp_path / "a.jsonl", [{"role": "user", "content": "hi"}])
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{"role": "assist' + end)
    result = run(good, bad, "--format", "json")
    assert result.exit_code == 65
    assert f"{bad}:2:" in result.stderr
    parsed = {r["path"]: r for r in rows(result)}
    assert parsed[str(good)]["status"] == "ok"
    assert parsed[str(bad)]["status"] == "failed" and parsed[str(bad)]["exit_code"] == 65
    github = run(bad, "--format", "github")
    assert github.stdout.startswith(f"::error file={bad},line=2,title=compactcli::")
    kept = run(bad, "--on-invalid", "keep", "--format", "json", "--method", "seed")
    assert kept.exit_code == 0
    assert rows(kept)[0]["tokens"] == seed([{"role": "user", "content": "hi"}])
    assert rows(kept)[0]["unreadable_lines"] == 1


def test_stdin(tmp_path: Path) -> None:
    records = [{"role": "user", "content": "from a pipe"}]
    result = run("-", "--method", "seed", "--format", "json", input=json.dumps(records[0]) + "\n")
    assert result.exit_code == 0
    [row] = rows(result)
    assert (row["path"], row["tokens"]) == ("<stdin>", seed(records))


def test_jobs_gives_the_same_rows(two_files: tuple[Path, Path]) -> None:
    folder = two_files[0].parent
    serial = rows(run(folder, "--format", "json"))
    parallel = rows(run(folder, "--format", "json", "--jobs", "2"))
    assert parallel == serial and len(serial) == 2


def test_dialect_option_overrides_detection(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "x"}],
    )
    assert one(path)["dialect"] == "openai"
    assert one(path, "--dialect", "anthropic")["dialect"] == "anthropic"


# --- usage ----------------------------------------------------------------------------------------


def split_response_session() -> list[dict]:
    """Two model calls; the second response is split over three records that repeat its usage."""
    second = usage(1200, created=300, read=5000, out=90)
    return [
        cc_user("fix it", "u1"),
        cc_assistant(
            [use("t1", "Bash", command="make")],
            "a1",
            msg_id="m1",
            usage=usage(3000, read=100, out=40),
        ),
        cc_user([result("t1", "error: x")], "u2"),
        cc_assistant(
            [{"type": "thinking", "thinking": "hmm", "signature": "s"}],
            "a2",
            msg_id="m2",
            usage=second,
        ),
        cc_assistant([{"type": "text", "text": "Fixing."}], "a3", msg_id="m2", usage=second),
        cc_assistant([use("t2", "Edit", file_path="x")], "a4", msg_id="m2", usage=second),
        cc_user([result("t2", "ok")], "u3"),
        # An API error notice: no model call; its zero usage is not the context.
        cc_assistant(
            [{"type": "text", "text": "API Error: overloaded"}],
            "a5",
            msg_id="m3",
            usage=usage(0, out=0),
            isApiErrorMessage=True,
        ),
    ]


def test_usage_is_the_context_of_the_last_call_counted_once(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", split_response_session())
    row = one(path, "--method", "usage")
    assert row["tokens"] == 1200 + 300 + 5000
    assert row["usage"] == {"calls": 2, "output_tokens": 40 + 90}


def test_usage_tracker_counts_split_records_once() -> None:
    tracker = UsageTracker()
    for message in [r["message"] for r in split_response_session() if r["type"] == "assistant"]:
        tracker.add(message["usage"], message["id"])
    assert (tracker.last, tracker.calls, tracker.output_tokens) == (6500, 2, 130)


def test_no_usage_is_reported_and_fails_only_a_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [{"role": "user", "content": "hi"}])
    plain = run(path, "--method", "usage", "--format", "json")
    assert plain.exit_code == 0
    [row] = rows(plain)
    assert (row["status"], row["tokens"], row["message"]) == ("no-usage", None, "no usage recorded")
    gated = run(path, "--method", "usage", "--max-tokens", 1000)
    assert gated.exit_code == 1
    assert "no usage recorded" in gated.stdout
    github = run(path, "--method", "usage", "--max-tokens", 1000, "--format", "github")
    assert github.stdout.startswith(f"::error file={path},title=Token count unavailable::")


def test_usage_before_a_compaction_is_not_the_active_context(tmp_path: Path) -> None:
    records, _ = compacted_session()  # usage only before the boundary
    row = rows(run(write(tmp_path / "t.jsonl", records), "--method", "usage", "--format", "json"))[0]
    assert row["tokens"] is None
    assert row["message"] == "no usage recorded since the last compaction"


# --- api: count_tokens against the fake server ----------------------------------------------------


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def api_session(tmp_path: Path) -> Path:
    return write(
        tmp_path / "chat.jsonl",
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            {"role": "user", "content": "and now?"},
        ],
    )


def test_api_sends_a_valid_request_and_reports_the_count(
    tmp_path: Path, fake_api: FakeAnthropic, cache_home: Path
) -> None:
    fake_api.token_count = lambda body: 4242
    row = one(api_session(tmp_path), "--method", "api", "--model", "claude-test")
    assert row["tokens"] == 4242
    [call] = fake_api.calls("count_tokens")
    assert call.body == {
        "model": "claude-test",
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "list files"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}],
            },
            # The tool message and the next user message are one user turn, result first.
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "a.py"},
                    {"type": "text", "text": "and now?"},
                ],
            },
        ],
    }


def test_api_answers_are_cached_by_content(tmp_path: Path, fake_api: FakeAnthropic, cache_home: Path) -> None:
    path = api_session(tmp_path)
    first = one(path, "--method", "api")
    assert len(fake_api.calls("count_tokens")) == 1
    assert one(path, "--method", "api") == first  # from the cache
    assert len(fake_api.calls("count_tokens")) == 1
    assert (cache_home / "compactcli" / "count_tokens.json").is_file()
    one(path, "--method", "api", "--no-cache")
    assert len(fake_api.calls("count_tokens")) == 2
    one(path, "--method", "api", "--model", "another-model")  # the model is part of the key
    assert len(fake_api.calls("count_tokens")) == 3
    with path.open("a") as f:
        f.write(json.dumps({"role": "assistant", "content": "Two files."}) + "\n")
    one(path, "--method", "api")
    assert len(fake_api.calls("count_tokens")) == 4


def test_api_retries_a_429(tmp_path: Path, fake_api: FakeAnthropic, cache_home: Path) -> None:
    fake_api.plan("count_tokens", error_reply(429, retry_after=0.01))
    fake_api.token_count = lambda body: 77
    assert one(api_session(tmp_path), "--method", "api")["tokens"] == 77
    assert [c.status for c in fake_api.calls("count_tokens")] == [429, 200]


def test_api_overloaded_after_retries_exits_69(
    tmp_path: Path, fake_api: FakeAnthropic, cache_home: Path
) -> None:
    fake_api.always("count_tokens", error_reply(529, retry_after=0.01))
    result = run(api_session(tmp_path), "--method", "api", "--format", "json")
    assert result.exit_code == 69
    assert len(fake_api.calls("count_tokens")) == 3  # the first try and the SDK's 2 retries
    assert "HTTP 529" in result.stderr and "req_fake_" in result.stderr
    assert rows(result)[0]["status"] == "failed"


def test_api_without_a_key_exits_69_but_a_cached_count_needs_none(
    tmp_path: Path, fake_api: FakeAnthropic, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = api_session(tmp_path)
    counted = one(path, "--method", "api")["tokens"]
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert one(path, "--method", "api")["tokens"] == counted
    missing = run(path, "--method", "api", "--no-cache")
    assert missing.exit_code == 69
    assert "ANTHROPIC_API_KEY" in missing.stderr
    assert f"error: {path}: " in missing.stderr  # the error names its file


def test_api_in_a_subprocess(tmp_path: Path, fake_api: FakeAnthropic) -> None:
    fake_api.token_count = lambda body: 31337
    env = fake_api.env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = run_cli("estimate", api_session(tmp_path), "--method", "api", "--json", env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["tokens"] == 31337


def test_count_request_merges_roles_and_moves_system_out() -> None:
    turns, system = count_request(
        [
            {"role": "system", "content": [{"type": "text", "text": "rules"}]},
            {"role": "user", "content": "a"},
            {"role": "system", "content": "more rules"},
            {"role": "user", "content": [{"type": "text", "text": ""}]},  # empty: dropped
            {"role": "user", "content": [{"type": "text", "text": "b"}, result("t", "r")]},
            {"role": "assistant", "content": [use("u", "ls")]},  # unanswered at the end: fine
        ]
    )
    assert system == "rules\n\nmore rules"
    assert turns == [
        {
            "role": "user",
            "content": [
                result("t", "r"),
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"},
            ],
        },
        {"role": "assistant", "content": [use("u", "ls")]},
    ]
    assert request_key("m", turns, system) != request_key("m2", turns, system)
    assert request_key("m", turns, system) == request_key("m", json.loads(json.dumps(turns)), system)


def test_token_cache_survives_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("{not json")
    cache = TokenCache(path)
    assert cache.get("k") is None
    cache.put("k", 5)
    assert TokenCache(path).get("k") == 5
    assert TokenCache(None).get("k") is None


# --- reuse by other commands ----------------------------------------------------------------------


def test_context_counter_streams_records_and_the_estimator_pickles() -> None:
    records, start = compacted_session()
    make = pickle.loads(pickle.dumps(estimator("seed")))
    counter = make(dialects.CLAUDE_CODE)
    for line, record in enumerate(records, 1):
        counter.add(record, line)
    assert counter.tokens == seed(messages_of(records[start:]))
    assert counter.by_category == {}  # no detail by default: only the method's total
    detailed = ContextCounter(dialects.CLAUDE_CODE)
    for record in records:
        detailed.add(record)
    assert detailed.tokens == sum(detailed.by_category.values()) > 0


def test_micro_trigger_tokens_uses_the_estimate(tmp_path: Path) -> None:
    records = [{"role": "user", "content": "go"}]
    for i in range(5):
        records.append({"role": "assistant", "content": [use(f"t{i}", "bash", command="ls")]})
        records.append({"role": "user", "content": [result(f"t{i}", f"output {i} " * 60)]})
    path = write(tmp_path / "t.jsonl", records)
    tokens = one(path)["tokens"]
    assert invoke("micro", path, "--check", "--trigger-tokens", tokens).exit_code == 0
    assert invoke("micro", path, "--check", "--trigger-tokens", tokens - 1).exit_code == 1


# --- calibration ----------------------------------------------------------------------------------


def test_calibrate_prints_each_methods_error(tmp_path: Path) -> None:
    # Three recorded calls: two intervals of growth (1000 and 1500 tokens, both counted).
    records = [
        cc_user("task " * 100, "u1"),
        cc_assistant([use("t1", "Bash", command="ls")], "a1", msg_id="m1", usage=usage(1000)),
        cc_user([result("t1", "x " * 2000)], "u2"),
        cc_assistant([use("t2", "Bash", command="ls")], "a2", msg_id="m2", usage=usage(2000)),
        cc_user([result("t2", "y " * 3000)], "u3"),
        cc_assistant([{"type": "text", "text": "done"}], "a3", msg_id="m3", usage=usage(3500)),
    ]
    folder = tmp_path / "sessions"
    folder.mkdir()
    write(folder / "s.jsonl", records)
    table = run("--calibrate", folder)
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["method", "intervals", "median", "p90", "worst", "bias", "total"]
    assert [line.split()[:2] for line in lines[1:3]] == [["seed", "2"], ["heuristic", "2"]]
    parsed = json.loads(run(folder, "--calibrate", "--format", "json").stdout)
    assert parsed["seed"]["n"] == parsed["heuristic"]["n"] == 2
    # The seed formula's error on each interval, computed here: the context it predicts grows by what
    # was added between two calls, against the recorded growth of 1000 and 1500 tokens.
    m = messages_of(records)
    errors = [
        (seed(m[:3]) - seed(m[:1]) - 1000) / 1000,
        (seed(m[:5]) - seed(m[:3]) - 1500) / 1500,
    ]
    assert parsed["seed"]["median"] == pytest.approx(sum(abs(e) for e in errors) / 2, abs=0.005)
    assert parsed["seed"]["worst"] == pytest.approx(max(abs(e) for e in errors), abs=0.005)
    assert parsed["seed"]["bias"] == pytest.approx(sum(errors) / 2, abs=0.005)


# --- start-up ---------------------------------------------------------------------------------


def test_the_cli_in_a_subprocess_without_importing_anthropic(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [{"role": "user", "content": "word " * 4000}])
    code = (
        "import sys; from compactcli.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('anthropic' in sys.modules, file=sys.stderr); sys.exit(code)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "estimate",
            str(path),
            "--max-tokens",
            "100",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "over"
    assert done.stderr.strip().splitlines()[-1] == "False"


# --- auto (the default): the last recorded context plus what came after it; else heuristic + overhead --


def test_auto_is_the_last_recorded_context_plus_the_heuristic_of_what_followed(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "cache_read_input_tokens": 5000, "cache_creation_input_tokens": 0}
    after = [
        cc_assistant([{"type": "text", "text": "I will read it. " * 40}], "a1", usage=usage),
        cc_user("now the other file " * 30, "u2"),
    ]
    path = write(tmp_path / "t.jsonl", [cc_user("read setup.py", "u1"), *after])
    row = one(path)  # no --method: auto
    assert row["method"] == "usage+heuristic"
    followed = one(write(tmp_path / "after.jsonl", after), "--method", "heuristic")["tokens"]
    assert followed > 150
    assert row["tokens"] == 6000 + followed
    # --overhead is not added where a call is recorded: the recording holds the system prompt already.
    assert one(path, "--overhead", "999")["tokens"] == row["tokens"]


def test_auto_without_a_recorded_call_is_heuristic_plus_the_dialects_overhead(tmp_path: Path) -> None:
    plain = write(tmp_path / "plain.jsonl", [{"role": "user", "content": "hello " * 50}])
    heuristic = one(plain, "--method", "heuristic")["tokens"]
    row = one(plain)
    assert (row["method"], row["tokens"]) == ("heuristic+overhead", heuristic)  # anthropic: 0 by default
    assert one(plain, "--overhead", "1500")["tokens"] == heuristic + 1500
    assert one(plain, "--method", "heuristic", "--overhead", "1500")["tokens"] == heuristic + 1500
    claude_code = write(tmp_path / "cc.jsonl", [cc_user("hello " * 50, "u1")])
    measured = dialects.get("claude-code").default_overhead
    assert measured == 17_586  # docs: the median over the sessions it was tuned on
    cc_heuristic = one(claude_code, "--method", "heuristic")["tokens"]
    assert one(claude_code)["tokens"] == cc_heuristic + measured


def test_what_an_opus_4_7_session_sends_that_its_log_does_not_spell_out(tmp_path: Path) -> None:
    """Through the installed CLI: a tool_reference result loads a tool's definition (1,300 tokens), a
    thought logged without its text is priced by its signature (0.18 a character past 280), and Opus
    4.7's tokenizer makes 1.2 tokens of what earlier models make one of."""

    def session(model: str) -> list[dict]:
        thought = {"type": "thinking", "thinking": "", "signature": "E" * 1280}
        ask = cc_assistant([thought, use("t1", "ToolSearch", query="select:Monitor")], "a1")
        ask["message"]["model"] = model
        found = cc_user([result("t1", [{"type": "tool_reference", "tool_name": "Monitor"}])], "u2")
        return [cc_user("watch the build", "u1"), ask, found]

    counted = {}
    for model in ("claude-opus-4-6", "claude-opus-4-7"):
        path = write(tmp_path / f"{model}.jsonl", session(model))
        done = run_cli("estimate", "--method", "heuristic", "--json", path, text=True)
        assert done.returncode == 0, done.stderr
        counted[model] = json.loads(done.stdout)["stats"]["by_category"]
    earlier, opus_4_7 = counted["claude-opus-4-6"], counted["claude-opus-4-7"]
    assert earlier["thinking"] == 180
    assert earlier["tool_results"] == 28 + 1300  # the result's framing and the definition
    for category, tokens in earlier.items():
        assert abs(opus_4_7[category] - 1.2 * tokens) <= 1, category


def test_attachments_are_counted_where_the_model_sees_them(tmp_path: Path) -> None:
    records = [cc_user("fix the build", "u1")]
    attachment = {
        "type": "attachment",
        "uuid": "at1",
        "parentUuid": "u1",
        "isSidechain": False,
        "sessionId": "s1",
        "attachment": {"type": "queued_command", "prompt": "also update the changelog " * 40},
    }
    without = one(write(tmp_path / "a.jsonl", records), "--method", "heuristic")["tokens"]
    with_it = one(write(tmp_path / "b.jsonl", [*records, attachment]), "--method", "heuristic")["tokens"]
    assert with_it - without >= 120  # 1,040 characters of prompt
    seed_with = one(write(tmp_path / "c.jsonl", [*records, attachment]), "--method", "seed")["tokens"]
    assert seed_with == seed([records[0]["message"]])  # seed is the formula over message objects only


# --- the table: every number has a column, and it fits the terminal --------------------------------


def table_rows(stdout: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header's titles and each row as title -> cell, cut where the header puts each column (numbers
    end under their title, dialect starts under its own; the path, notes and all, runs to the end)."""
    header, *lines = stdout.splitlines()
    found = list(re.finditer(r"\S+", header))
    titles = [m[0] for m in found]
    spans, start = [], 0
    for i, m in enumerate(found):
        if m[0] == "path":
            spans.append((m.start(), None))
            break
        end = found[i + 1].start() - 2 if m[0] == "dialect" else m.end()
        spans.append((start, end))
        start = end + 2
    return titles, [{t: line[a:b].strip() for t, (a, b) in zip(titles, spans, strict=True)} for line in lines]


def number(cell: str) -> int:
    return 0 if cell == "-" else int(cell.replace(",", ""))


def table_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, **extra}


def test_table_tokens_are_recorded_plus_added_plus_overhead(tmp_path: Path) -> None:
    recorded = write(tmp_path / "recorded.jsonl", split_response_session())
    plain = write(tmp_path / "plain.jsonl", [{"role": "user", "content": "hello " * 50}])
    done = run_cli("estimate", "--overhead", "700", recorded, plain, text=True, env=table_env())
    assert done.returncode == 0, done.stderr
    titles, rows = table_rows(done.stdout)
    assert titles[:4] == ["tokens", "recorded", "added", "overhead"]
    by_path = {row["path"]: row for row in rows}
    # The last call's context, added up by hand: 1,200 input + 300 cache writes + 5,000 cache reads.
    assert by_path[str(recorded)]["recorded"] == "6,500"
    assert by_path[str(recorded)]["overhead"] == "-"  # the recording holds the system prompt already
    assert by_path[str(plain)]["recorded"] == "-" and by_path[str(plain)]["overhead"] == "700"
    split = ("text", "tool_in", "tool_out", "thinking", "images")
    # Nothing recorded: what is added is the heuristic's count of it all, which the split divides.
    assert number(by_path[str(plain)]["added"]) == sum(number(by_path[str(plain)][t]) for t in split) > 0
    for row in rows:
        parts = number(row["recorded"]) + number(row["added"]) + number(row["overhead"])
        assert number(row["tokens"]) == parts, row
    assert rows[-1]["path"] == "total (2 files, auto)"


@pytest.mark.parametrize("width", [50, 80, 100, 130])
def test_table_fits_the_terminal_dropping_the_least_needed_columns(tmp_path: Path, width: int) -> None:
    for name in ("a", "b"):
        write(tmp_path / f"{name}.jsonl", split_response_session())
    done = run_cli(
        "estimate", "--max-tokens", "100000", ".", cwd=tmp_path, text=True, env=table_env(COLUMNS=str(width))
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= width for line in lines), (width, lines)
    titles, rows = table_rows(done.stdout)
    assert titles[:2] == ["tokens", "%max"] and titles[-1] == "path"  # always there
    assert [row["path"] for row in rows] == ["a.jsonl", "b.jsonl", "total (2 files, auto)"]
    everything = run_cli("estimate", "--max-tokens", "100000", ".", cwd=tmp_path, text=True, env=table_env())
    all_titles, all_rows = table_rows(everything.stdout)
    assert len(all_titles) == 15 and len(max(everything.stdout.splitlines(), key=len)) > 130
    # The columns kept are the full table's, in its order, with the same cells.
    assert [t for t in all_titles if t in titles] == titles
    assert [{t: row[t] for t in titles} for row in all_rows] == rows
    if width >= 100:
        assert "recorded" in titles and "bytes" not in titles


def test_a_wide_terminal_and_a_pipe_get_every_column(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", split_response_session())
    wide = run_cli("estimate", path, text=True, env=table_env(COLUMNS="400"))
    piped = run_cli("estimate", path, text=True, env=table_env())
    assert wide.stdout == piped.stdout
    assert table_rows(piped.stdout)[0] == [
        "tokens", "recorded", "added", "overhead", "text", "tool_in", "tool_out", "thinking", "images",
        "msgs", "results", "bytes", "dialect", "path",
    ]  # fmt: skip
