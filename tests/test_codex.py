"""The codex dialect (OpenAI Codex CLI rollouts) through every command, on a rollout written for these tests
(tests/helpers/codex_rollout.py) and on generated ones."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import codex_rollout
from helpers.cli import run_cli, stats_of
from helpers.corpus import CORPUS
from helpers.files import write_jsonl
from helpers.invariants import assert_only_results_cleared, is_default_placeholder, violations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactcli.dialects import CODEX
from compactcli.layers.micro import DEFAULT_PRESERVE, MicroOptions
from compactcli.pipelines.micro_file import analyze
from compactcli.pipelines.transcript import detect_dialect


def lines_of(path: Path) -> list[dict]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines()]


def line_of(records: list[dict], predicate) -> int:
    """1-based line of the only record that satisfies `predicate`."""
    found = [n for n, record in enumerate(records, 1) if predicate(record)]
    assert len(found) == 1, found
    return found[0]


def output_line(records: list[dict], call_id: str) -> int:
    return line_of(
        records,
        lambda r: (
            r["type"] == "response_item"
            and r["payload"].get("call_id") == call_id
            and r["payload"]["type"].endswith("_output")
        ),
    )


def copy_line(records: list[dict], call_id: str) -> int:
    return line_of(records, lambda r: r["type"] == "event_msg" and r["payload"].get("call_id") == call_id)


@pytest.fixture
def rollout(tmp_path: Path) -> Path:
    return codex_rollout.write(tmp_path / "rollout-2026-05-04T09-00-00-0199a1b2.jsonl")


# --- detection ------------------------------------------------------------------------------------------


def test_a_rollout_is_detected_as_codex(rollout: Path):
    with open(rollout, "rb") as f:
        assert detect_dialect(f) == "codex"


def test_a_rollout_starting_with_event_records_is_still_codex(tmp_path: Path):
    records = [r for r in codex_rollout.records() if r["type"] == "event_msg"][:3]
    path = codex_rollout.write(tmp_path / "events.jsonl", records)
    with open(path, "rb") as f:
        assert detect_dialect(f) == "codex"


# --- micro ----------------------------------------------------------------------------------------------


def test_micro_clears_old_outputs_and_their_ui_copies(rollout: Path, tmp_path: Path):
    before_bytes = rollout.read_bytes()
    before = lines_of(rollout)
    run = run_cli("micro", "--json", str(rollout), cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)["stats"]
    assert stats["dialect"] == "codex"
    assert (stats["tool_results"], stats["cleared"], stats["ui_copies_cleared"]) == (7, 2, 2)
    after = lines_of(rollout)

    changed = {n for n, (old, new) in enumerate(zip(before, after, strict=True), 1) if old != new}
    # Cleared: the rg output (exec_command) and the apply_patch output, with their exec_command_end and
    # patch_apply_end copies. Kept: the short ls output, the read_file output (preserved), the last three.
    expected = {
        output_line(before, "call_grep"),
        copy_line(before, "call_grep"),
        output_line(before, "call_patch"),
        copy_line(before, "call_patch"),
    }
    assert changed == expected
    assert after[output_line(before, "call_grep") - 1]["payload"]["output"] == "[Previous: used exec_command]"
    assert after[output_line(before, "call_patch") - 1]["payload"]["output"] == "[Previous: used apply_patch]"
    grep_copy = after[copy_line(before, "call_grep") - 1]["payload"]
    assert grep_copy["aggregated_output"] == "[Previous: used exec_command]"
    assert grep_copy["formatted_output"] == "" and grep_copy["exit_code"] == 0
    patch_copy = after[copy_line(before, "call_patch") - 1]["payload"]
    assert patch_copy["stdout"] == "[Previous: used apply_patch]"
    # The diff in `changes` is the patch the model wrote, not output: it stays.
    assert patch_copy["changes"] == before[copy_line(before, "call_patch") - 1]["payload"]["changes"]
    assert after[output_line(before, "call_read") - 1] == before[output_line(before, "call_read") - 1]

    assert (
        assert_only_results_cleared("codex", before_bytes, rollout.read_bytes(), is_default_placeholder) == 2
    )
    assert violations("codex", rollout.read_bytes()) == []
    archives = list((tmp_path / ".transcripts").glob(f"{rollout.stem}.*.jsonl"))
    assert len(archives) == 1 and archives[0].read_bytes() == before_bytes

    once = rollout.read_bytes()
    again = run_cli("micro", str(rollout), cwd=tmp_path, text=True)
    assert again.returncode == 0 and rollout.read_bytes() == once


def test_micro_clear_multimodal_clears_an_image_output_not_the_users_image(rollout: Path, tmp_path: Path):
    before = lines_of(rollout)
    run = run_cli(
        "micro",
        "--keep",
        "1",
        "--min-chars",
        "0",
        "--clear-multimodal",
        "--no-preserve",
        str(rollout),
        cwd=tmp_path,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    after = lines_of(rollout)
    assert after[output_line(before, "call_view") - 1]["payload"]["output"] == "[Previous: used view_image]"
    assert after[output_line(before, "call_read") - 1]["payload"]["output"] == "[Previous: used read_file]"
    screenshot = line_of(
        before,
        lambda r: (
            "input_image" in json.dumps(r)
            and r["type"] == "response_item"
            and r["payload"]["type"] == "message"
        ),
    )
    assert after[screenshot - 1] == before[screenshot - 1]
    # Without --clear-multimodal the image output is kept.
    rollout.write_bytes(codex_rollout.dumps(before))
    run_cli(
        "micro", "--keep", "1", "--min-chars", "0", "--no-preserve", str(rollout), cwd=tmp_path, text=True
    )
    assert (
        lines_of(rollout)[output_line(before, "call_view") - 1]
        == before[output_line(before, "call_view") - 1]
    )


# --- generated rollouts: micro's properties -------------------------------------------------------------


@st.composite
def rollouts(draw: st.DrawFn) -> list[dict]:
    """Turns of parallel calls (function and custom) answered in any order, UI copies before or after their
    output, token counts, an optional compaction, and an optional aborted turn at the end."""
    out = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s", "base_instructions": None}}]

    def add(kind: str, payload: dict) -> None:
        out.append({"timestamp": "t", "type": kind, "payload": payload})

    text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20).map(
        lambda s: s * draw(st.integers(1, 12))
    )
    call_number = 0
    for turn in range(draw(st.integers(1, 4))):
        if turn and draw(st.booleans()):
            add(
                "compacted",
                {
                    "message": "",
                    "replacement_history": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "input_text", "text": "summary"}],
                        }
                    ],
                },
            )
            add("event_msg", {"type": "context_compacted"})
        add(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        )
        for _ in range(draw(st.integers(0, 3))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_number += 1
                call_id = f"call_{call_number}"
                name = draw(st.sampled_from(["exec_command", "read_file", "apply_patch", "write_stdin"]))
                custom = name == "apply_patch"
                if custom:
                    add(
                        "response_item",
                        {"type": "custom_tool_call", "call_id": call_id, "name": name, "input": "x"},
                    )
                else:
                    add(
                        "response_item",
                        {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"},
                    )
                calls.append((call_id, custom))
            if draw(st.booleans()):
                add(
                    "event_msg",
                    {
                        "type": "token_count",
                        "info": {"last_token_usage": {"input_tokens": 5, "total_tokens": 9}},
                    },
                )
            for call_id, custom in draw(st.permutations(calls)):
                content = draw(
                    st.one_of(
                        text, st.just([{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}])
                    )
                )
                copy = draw(st.sampled_from(["none", "before", "after"]))
                event = {
                    "type": "exec_command_end",
                    "call_id": call_id,
                    "stdout": "",
                    "stderr": "",
                    "aggregated_output": content if isinstance(content, str) else "",
                    "exit_code": 0,
                }
                if copy == "before":
                    add("event_msg", event)
                kind = "custom_tool_call_output" if custom else "function_call_output"
                add("response_item", {"type": kind, "call_id": call_id, "output": content})
                if copy == "after":
                    add("event_msg", event)
        add(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
        )
    if draw(st.booleans()):
        add(
            "response_item",
            {"type": "function_call", "call_id": "call_open", "name": "exec_command", "arguments": "{}"},
        )
        add("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
    return out


def micro_bytes(data: bytes, options: MicroOptions) -> tuple[bytes, int]:
    source = io.BytesIO(data)
    edit = analyze(source, "generated.jsonl", options=options, fmt="codex")
    try:
        if not edit.changed:
            return data, 0
        out = io.BytesIO()
        edit.write(source, out)
        return out.getvalue(), edit.stats["cleared"]
    finally:
        edit.close()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=rollouts(),
    keep=st.integers(0, 3),
    min_chars=st.sampled_from([0, 30, 100]),
    preserve=st.sampled_from([DEFAULT_PRESERVE, frozenset()]),
    clear_multimodal=st.booleans(),
)
def test_micro_properties_on_generated_rollouts(records, keep, min_chars, preserve, clear_multimodal):
    options = MicroOptions(
        keep=keep, min_chars=min_chars, preserve=preserve, clear_multimodal=clear_multimodal
    )
    before = codex_rollout.dumps(records)
    after, cleared = micro_bytes(before, options)
    # Only outputs and their UI copies change; every other line is byte-exact.
    assert assert_only_results_cleared("codex", before, after, is_default_placeholder) == cleared
    assert violations("codex", before) == [] and violations("codex", after) == []
    assert micro_bytes(after, options) == (after, 0)


# --- validate -------------------------------------------------------------------------------------------


def test_validate_accepts_the_rollout_and_its_aborted_turn(rollout: Path, tmp_path: Path):
    run = run_cli("validate", str(rollout), cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def before_compaction() -> list[dict]:
    """The rollout up to its compaction (after it, the first turns are no longer sent)."""
    records = codex_rollout.records()
    return records[: next(n for n, r in enumerate(records) if r["type"] == "compacted")]


def _without(records: list[dict], predicate) -> list[dict]:
    return [r for r in records if not predicate(r)]


def _is_output(call_id: str):
    return lambda r: (
        r["type"] == "response_item"
        and r["payload"].get("call_id") == call_id
        and (r["payload"]["type"].endswith("_output"))
    )


@pytest.mark.parametrize(
    ("change", "rule", "call_id"),
    [
        ("drop-output", "missing-tool-result", "call_grep"),
        ("drop-call", "orphan-tool-result", "call_grep"),
        ("repeat-output", "duplicate-tool-result", "call_ls"),
        ("repeat-call", "duplicate-tool-use", "call_ls"),
    ],
)
def test_validate_names_a_broken_pairing_and_its_line(tmp_path: Path, change: str, rule: str, call_id: str):
    records = before_compaction()
    if change == "drop-output":
        records = _without(records, _is_output(call_id))
        bad = next(
            n
            for n, r in enumerate(records, 1)
            if r["payload"].get("call_id") == call_id and r["type"] == "response_item"
        )
    elif change == "drop-call":
        records = _without(
            records,
            lambda r: (
                r["type"] == "response_item"
                and r["payload"].get("call_id") == call_id
                and r["payload"]["type"] == "function_call"
            ),
        )
        bad = next(n for n, r in enumerate(records, 1) if _is_output(call_id)(r))
    elif change == "repeat-output":
        at = next(n for n, r in enumerate(records) if _is_output(call_id)(r))
        records.insert(at + 1, records[at])
        bad = at + 2
    else:
        at = next(
            n
            for n, r in enumerate(records)
            if r["type"] == "response_item" and r["payload"].get("call_id") == call_id
        )
        records.insert(at + 1, records[at])
        bad = at + 2
    path = codex_rollout.write(tmp_path / "broken.jsonl", records)
    run = run_cli("validate", str(path), cwd=tmp_path, text=True)
    assert run.returncode == 1
    assert f"broken.jsonl:{bad}: {rule}" in run.stdout + run.stderr


def test_validate_starts_again_at_a_compaction(tmp_path: Path):
    """A broken pairing before a recorded compaction is no longer sent: not a violation."""
    broken = _without(codex_rollout.records(), _is_output("call_grep"))
    compaction = next(n for n, r in enumerate(broken) if r["type"] == "compacted")
    path = codex_rollout.write(tmp_path / "before-compaction.jsonl", broken[:compaction])
    assert run_cli("validate", str(path), cwd=tmp_path, text=True).returncode == 1
    path = codex_rollout.write(tmp_path / "compacted.jsonl", broken)
    assert run_cli("validate", str(path), cwd=tmp_path, text=True).returncode == 0


# --- estimate -------------------------------------------------------------------------------------------


def test_estimate_usage_is_the_last_token_count(rollout: Path, tmp_path: Path):
    result = stats_of("estimate", "--json", "--method", "usage", rollout, cwd=tmp_path)
    # The last call recorded input 3300 and wrote 150: the next call sends both again.
    assert result["tokens"] == 3450
    # The active context starts at the compaction: after it, one size-only count and two calls.
    assert result["usage"] == {"calls": 2, "output_tokens": 80 + 150}


def test_estimate_counts_the_context_from_the_compaction_on(rollout: Path, tmp_path: Path):
    result = stats_of("estimate", "--json", "--method", "seed", rollout, cwd=tmp_path)
    stats = result.get("stats", result)
    # The five items of replacement_history, then the user message, call, output and answer after it.
    assert stats["messages"] == 9
    assert stats["active_from"] == line_of(lines_of(rollout), lambda r: r["type"] == "compacted")


def test_estimate_heuristic_counts_the_base_instructions(rollout: Path, tmp_path: Path):
    records = lines_of(rollout)
    with_prompt = stats_of("estimate", "--json", "--method", "heuristic", rollout, cwd=tmp_path)["tokens"]
    records[0]["payload"]["base_instructions"] = None
    without = codex_rollout.write(tmp_path / "no-prompt.jsonl", records)
    without_prompt = stats_of("estimate", "--json", "--method", "heuristic", without, cwd=tmp_path)["tokens"]
    # About 2,400 characters of English prose: several hundred tokens.
    assert 300 < with_prompt - without_prompt < 1200
    # seed counts messages only, as for the other dialects.
    seed = [
        stats_of("estimate", "--json", "--method", "seed", p, cwd=tmp_path)["tokens"]
        for p in (rollout, without)
    ]
    assert seed[0] == seed[1]


@pytest.mark.parametrize("kind", ["compaction", "context_compaction"])
def test_estimate_heuristic_counts_a_remote_compaction_summary(rollout: Path, tmp_path: Path, kind: str):
    """Codex 0.171 writes a remote compaction's encrypted summary as a `context_compaction` item, as it
    wrote a `compaction` item before: the model is sent it, so it is counted (as opaque text)."""
    records = lines_of(rollout)
    before = stats_of("estimate", "--json", "--method", "heuristic", rollout, cwd=tmp_path)["tokens"]
    last_user = max(n for n, r in enumerate(records) if (r.get("payload") or {}).get("role") == "user")
    summary = {"type": kind, "encrypted_content": "gAAAAB" + "Zm9vYmFy" * 1000}
    records.insert(
        last_user, {"timestamp": records[last_user]["timestamp"], "type": "response_item", "payload": summary}
    )
    path = codex_rollout.write(tmp_path / f"{kind}.jsonl", records)
    after = stats_of("estimate", "--json", "--method", "heuristic", path, cwd=tmp_path)["tokens"]
    assert 1000 < after - before < 8006  # 8,006 characters of base64


def test_estimate_usage_without_token_counts_is_no_usage(rollout: Path, tmp_path: Path):
    records = [r for r in lines_of(rollout) if r["payload"].get("type") != "token_count"]
    path = codex_rollout.write(tmp_path / "no-usage.jsonl", records)
    run = run_cli(
        "estimate", "--method", "usage", "--max-tokens", "100000", str(path), cwd=tmp_path, text=True
    )
    assert run.returncode == 1
    assert "no usage recorded" in run.stdout + run.stderr


def test_dialect_reads_calls_and_outputs_by_call_id():
    records = codex_rollout.records()
    uses = [use for r in records for use in CODEX.tool_uses(r)]
    results = [res for r in records for res in CODEX.tool_results(r)]
    assert [u.name for u in uses] == [
        "exec_command",
        "read_file",
        "exec_command",
        "apply_patch",
        "exec_command",
        "exec_command",
        "view_image",
        "exec_command",
    ]
    assert {res.tool_use_id for res in results} == {u.id for u in uses} - {"call_rerun"}


# --- summarize, replay, restore ------------------------------------------------------------------------


def summary_prefix_of(text: str) -> str:
    return text.split("]", 1)[0] + "]" if text.startswith("[Conversation compressed. Transcript: ") else ""


def test_summarize_writes_what_codex_writes_at_a_compaction(rollout: Path, tmp_path: Path):
    before = rollout.read_bytes()
    out = tmp_path / "out.jsonl"
    run = run_cli(
        "summarize", "--backend", "digest", "--keep-last", "0", "-o", out, rollout, cwd=tmp_path, text=True
    )
    assert run.returncode == 0, run.stderr
    lines = out.read_bytes().splitlines(keepends=True)
    assert lines[0] == before.splitlines(keepends=True)[0], "session_meta is kept byte for byte, first"
    records = [json.loads(raw) for raw in lines]
    assert [(r["type"], r["payload"].get("type")) for r in records] == [
        ("session_meta", None),
        ("compacted", None),
        ("event_msg", "context_compacted"),
    ]
    compacted = records[1]["payload"]
    history = compacted["replacement_history"]
    texts = [(item["role"], item["content"][0]["text"]) for item in history]
    # The initial context, the user's own messages (the earlier summary left out: the new one covers it),
    # then the summary as a user message.
    assert texts[:5] == [
        ("developer", codex_rollout.DEVELOPER),
        ("user", codex_rollout.ENVIRONMENT),
        ("user", codex_rollout.ASK_1),
        ("user", codex_rollout.ASK_2),
        ("user", codex_rollout.ASK_3),
    ]
    assert len(history) == 6 and texts[5] == ("user", compacted["message"])
    archive = Path(
        summary_prefix_of(compacted["message"])[len("[Conversation compressed. Transcript: ") : -1]
    )
    assert archive.read_bytes() == before
    assert "Add a --json flag" in compacted["message"]  # the digest names the task

    # Read back: the conversation starts at the new compacted record.
    seed = stats_of("estimate", "--json", "--method", "seed", out, cwd=tmp_path)
    stats = seed.get("stats", seed)
    assert (stats["active_from"], stats["messages"]) == (2, 6)
    assert run_cli("validate", out, cwd=tmp_path, text=True).returncode == 0
    # Nothing left to summarize: a second run changes nothing.
    again = run_cli("summarize", "--backend", "digest", "--keep-last", "0", out, cwd=tmp_path, text=True)
    assert again.returncode == 0 and out.read_bytes() == b"".join(lines)


def test_summarize_keeps_the_tail_byte_for_byte_and_calls_with_their_outputs(tmp_path: Path):
    records = before_compaction()
    path = codex_rollout.write(tmp_path / "rollout.jsonl", records)
    before = path.read_bytes().splitlines(keepends=True)
    run = run_cli("summarize", "--backend", "digest", "--keep-last", "3", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    after = path.read_bytes().splitlines(keepends=True)
    # The last three items are the view_image call, its output and the answer; the cut moves to the call.
    view_call = line_of(
        records, lambda r: r["payload"].get("call_id") == "call_view" and "name" in r["payload"]
    )
    assert after[3:] == before[view_call - 1 :]
    assert [json.loads(raw)["type"] for raw in after[:3]] == ["session_meta", "compacted", "event_msg"]
    assert run_cli("validate", path, cwd=tmp_path, text=True).returncode == 0


def test_summarize_keeps_the_users_recent_messages_within_a_budget():
    from compactcli.dialects import base  # the rule Codex's compaction uses (summarize's too)

    # 20,000 tokens at 4 bytes each: two messages of 30,000 bytes fit, the third is cut to its last 20,000.
    texts = ["a" * 30_000, "b" * 30_000, "c" * 30_000]
    kept = base.recent_within(texts)
    assert kept[1:] == ["b" * 30_000, "c" * 30_000]
    assert kept[0] == base.TRUNCATED + "\n" + "a" * 20_000
    assert base.recent_within(["x" * 10], tokens=0) == []


def test_replay_counts_model_calls_and_resets_at_the_recorded_compaction(rollout: Path, tmp_path: Path):
    timeline = tmp_path / "timeline.jsonl"
    run = run_cli(
        "replay",
        "--backend",
        "digest",
        "--threshold",
        "1000000",
        "--timeline",
        timeline,
        rollout,
        cwd=tmp_path,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in timeline.read_text().splitlines()]
    records = lines_of(rollout)
    # One model call per response: the first item the model wrote after something it did not.
    calls = [row["index"] + 1 for row in rows if row["event"] is None]
    first_items = [
        n
        for n, r in enumerate(records, 1)
        if r["type"] == "response_item"
        and (
            r["payload"]["type"] in ("reasoning", "function_call", "custom_tool_call")
            or r["payload"].get("role") == "assistant"
        )
        and not _model_item(_previous_item(records, n))
    ]
    assert calls == first_items and len(calls) == 8
    recorded = [row for row in rows if row["event"] == "recorded"]
    assert [row["index"] + 1 for row in recorded] == [line_of(records, lambda r: r["type"] == "compacted")]
    assert recorded[0]["tokens_after"] < recorded[0]["tokens"]


def _model_item(record: dict | None) -> bool:
    if record is None or record["type"] != "response_item":
        return False
    payload = record["payload"]
    return (
        payload["type"] in ("reasoning", "function_call", "custom_tool_call")
        or payload.get("role") == "assistant"
    )


def _previous_item(records: list[dict], line: int) -> dict | None:
    """The response_item (or compacted record) before 1-based `line`."""
    for record in reversed(records[: line - 1]):
        if record["type"] in ("response_item", "compacted"):
            return record
    return None


def test_replay_auto_compacts_the_way_codex_does(rollout: Path, tmp_path: Path):
    out = tmp_path / "context.jsonl"
    run = run_cli(
        "replay", "--backend", "digest", "--threshold", "300", "-o", out, rollout, cwd=tmp_path, text=True
    )
    assert run.returncode == 0, run.stderr
    records = lines_of(out)
    assert records[0] == lines_of(rollout)[0]
    assert [r["type"] for r in records[1:3]] == ["compacted", "event_msg"]
    assert records[1]["payload"]["replacement_history"][-1]["content"][0]["text"].startswith(
        "[Conversation compressed. Transcript: "
    )
    assert run_cli("validate", out, cwd=tmp_path, text=True).returncode == 0


def test_restore_puts_the_original_back(rollout: Path, tmp_path: Path):
    before = rollout.read_bytes()
    assert run_cli("micro", rollout, cwd=tmp_path, text=True).returncode == 0
    assert run_cli("summarize", "--backend", "digest", rollout, cwd=tmp_path, text=True).returncode == 0
    summarized = rollout.read_bytes()
    assert summarized != before and b'"type":"compacted"' in summarized
    assert run_cli("restore", rollout, cwd=tmp_path, text=True).returncode == 0
    micro_only = rollout.read_bytes()  # the latest archive: what micro wrote, before the summary
    assert micro_only not in (summarized, before) and assert_only_results_cleared(
        "codex", before, micro_only, is_default_placeholder
    )
    assert run_cli("restore", "--which", "0", rollout, cwd=tmp_path, text=True).returncode == 0
    assert rollout.read_bytes() == before


# --- the real rollout in ../shared/corpus ---------------------------------------------------------------

CORPUS_ROLLOUTS = sorted((CORPUS / "codex").glob("*.jsonl"))


def last_recorded_context(path: Path) -> int:
    """The total_tokens of the last token_count event that has one, read here without compactcli."""
    found = 0
    for raw in path.read_bytes().splitlines():
        record = json.loads(raw)
        payload = record.get("payload") or {}
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if isinstance(info, dict) and info.get("last_token_usage"):
            found = info["last_token_usage"]["total_tokens"]
    return found


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS_ROLLOUTS, reason="../shared/corpus/codex is not present")
@pytest.mark.parametrize("original", CORPUS_ROLLOUTS, ids=lambda p: p.name)
def test_real_rollout_through_every_command(original: Path, tmp_path: Path):
    work = tmp_path / original.name
    work.write_bytes(original.read_bytes())
    before = work.read_bytes()

    assert run_cli("validate", str(work), cwd=tmp_path, text=True).returncode == 0
    usage = stats_of("estimate", "--json", "--method", "usage", work, cwd=tmp_path)
    assert usage["tokens"] == last_recorded_context(work) > 0
    heuristic = stats_of("estimate", "--json", "--method", "heuristic", work, cwd=tmp_path)["tokens"]
    assert 0.5 * usage["tokens"] < heuristic < 1.5 * usage["tokens"]

    run = run_cli("micro", "--json", str(work), cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)["stats"]
    after = work.read_bytes()
    assert stats["cleared"] > 0 and stats["ui_copies_cleared"] > 0 and len(after) < len(before)
    assert assert_only_results_cleared("codex", before, after, is_default_placeholder) == stats["cleared"]
    assert run_cli("validate", str(work), cwd=tmp_path, text=True).returncode == 0

    out = tmp_path / "summarized.jsonl"
    run = run_cli(
        "summarize", "--backend", "digest", "--keep-last", "0", "-o", out, work, cwd=tmp_path, text=True
    )
    assert run.returncode == 0, run.stderr
    records = lines_of(out)
    assert records[0] == json.loads(before.splitlines()[0])
    assert [r["type"] for r in records] == ["session_meta", "compacted", "event_msg"]
    history = records[1]["payload"]["replacement_history"]
    assert history[-1]["content"][0]["text"] == records[1]["payload"]["message"]
    assert any(item.get("role") == "developer" for item in history)
    assert run_cli("validate", out, cwd=tmp_path, text=True).returncode == 0
    seed = stats_of("estimate", "--json", "--method", "seed", out, cwd=tmp_path)
    assert seed.get("stats", seed)["active_from"] == 2

    replayed = run_cli(
        "replay", "--backend", "digest", "-o", tmp_path / "replayed.jsonl", work, cwd=tmp_path, text=True
    )
    assert replayed.returncode == 0, replayed.stderr


# --- rollouts of Codex 0.171: numbered lines, command output copied as an item_completed event -----------

LOG = "".join(f"compiling module {n} of 40\n" for n in range(1, 41))


def _numbered_rollout(path: Path) -> list[dict]:
    """A rollout the way Codex 0.171 writes one: every line has its `ordinal` (session_meta 0), and a
    command's output is copied for the UI in an `item_completed` event with a CommandExecution item."""

    def command(call_id: str, cmd: str, output: str) -> list[tuple[str, dict]]:
        return [
            ("response_item", {"type": "function_call", "name": "exec_command", "call_id": call_id,
                               "arguments": json.dumps({"cmd": cmd})}),
            ("event_msg", {"type": "item_completed", "turn_id": "turn-1",
                           "item": {"type": "CommandExecution", "id": call_id, "command": cmd,
                                    "status": "completed", "aggregated_output": output, "exit_code": 0}}),
            ("response_item", {"type": "function_call_output", "call_id": call_id,
                               "output": f"Process exited with code 0\nOutput:\n{output}"}),
        ]  # fmt: skip

    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Build it."}]}
    done = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Built."}]}
    steps = [
        ("session_meta", {"id": "0199a1b2-0000-7000-8000-0000000000aa", "cwd": "/home/dev/tally"}),
        ("event_msg", {"type": "task_started", "turn_id": "turn-1"}),
        ("response_item", user),
        *command("call_make", "make", LOG),
        *command("call_test", "make test", LOG.replace("compiling", "testing")),
        *command("call_ls", "ls", "Makefile\n"),
        ("response_item", done),
        ("event_msg", {"type": "task_complete", "turn_id": "turn-1"}),
    ]
    records = [
        {"timestamp": f"2026-11-30T10:00:{n:02d}.000Z", "ordinal": n, "type": kind, "payload": payload}
        for n, (kind, payload) in enumerate(steps)
    ]
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    return records


def test_micro_clears_the_output_copy_in_an_item_completed_event(tmp_path: Path):
    rollout = tmp_path / "rollout.jsonl"
    before = _numbered_rollout(rollout)
    run = run_cli("micro", "--keep", "1", "--json", rollout, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)["stats"]
    assert (stats["cleared"], stats["ui_copies_cleared"]) == (2, 2)
    after = lines_of(rollout)
    copies = [r["payload"]["item"] for r in after if r["payload"].get("type") == "item_completed"]
    assert [c["aggregated_output"] for c in copies] == [
        "[Previous: used exec_command]",
        "[Previous: used exec_command]",
        "Makefile\n",
    ]
    assert all(c["exit_code"] == 0 and c["status"] == "completed" for c in copies)
    assert LOG[:40] not in rollout.read_text()
    assert [r["ordinal"] for r in after] == [r["ordinal"] for r in before]


def test_summarize_numbers_its_records_in_a_numbered_rollout(tmp_path: Path):
    """Codex 0.171 refuses to resume a rollout whose last line has no ordinal."""
    rollout = tmp_path / "rollout.jsonl"
    _numbered_rollout(rollout)
    run = run_cli("summarize", "--backend", "digest", rollout, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    after = lines_of(rollout)
    assert [(r["ordinal"], r["type"]) for r in after] == [
        (0, "session_meta"),
        (1, "compacted"),
        (2, "event_msg"),
    ]
    assert list(after[1]) == ["timestamp", "ordinal", "type", "payload"]  # Codex's own key order


def test_summarize_writes_no_ordinal_into_a_rollout_without_them(rollout: Path, tmp_path: Path):
    run = run_cli("summarize", "--backend", "digest", rollout, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    assert not any("ordinal" in r for r in lines_of(rollout))


# --- --drop-thinking and item ids ---------------------------------------------------------------------


def _responses_with_ids(ids: bool) -> list[dict]:
    """Three turns; each response reasons, then calls a tool or answers. With `ids`, the model's items
    carry the API's ids, as recent Codex versions store them."""
    payloads: list[dict] = [{"id": "s1", "cwd": "/w", "base_instructions": {"text": "Be brief."}}]

    def model(payload: dict, item_id: str) -> None:
        payloads.append({**payload, "id": item_id} if ids else payload)

    for turn in (1, 2, 3):
        payloads.append(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
        )
        model({"type": "reasoning", "summary": [], "encrypted_content": f"ZW5j{turn}"}, f"rs_{turn}a")
        model(
            {"type": "function_call", "name": "ls", "arguments": "{}", "call_id": f"c{turn}"}, f"fc_{turn}a"
        )
        payloads.append({"type": "function_call_output", "call_id": f"c{turn}", "output": "a.txt"})
        model({"type": "reasoning", "summary": [], "encrypted_content": f"ZW5q{turn}"}, f"rs_{turn}b")
        model(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            f"m{turn}",
        )
    kinds = ["session_meta"] + ["response_item"] * (len(payloads) - 1)
    return [
        {"timestamp": f"2026-05-04T10:00:{n:02d}.000Z", "type": kind, "payload": payload}
        for n, (kind, payload) in enumerate(zip(kinds, payloads, strict=True))
    ]


@pytest.mark.parametrize("ids", [True, False])
def test_drop_thinking_takes_the_ids_of_the_items_whose_reasoning_it_drops(tmp_path: Path, ids: bool) -> None:
    # Sent with its id but without the reasoning item of its response, an item is refused by the
    # Responses API ("provided without its required 'reasoning' item"): the id goes too.
    path = tmp_path / "rollout.jsonl"
    records = _responses_with_ids(ids)
    write_jsonl(path, records)
    original = path.read_bytes().splitlines(keepends=True)

    done = run_cli("micro", "--keep", "10", "--drop-thinking", path, cwd=tmp_path, text=True)
    assert done.returncode == 0, done.stderr

    out = path.read_bytes().splitlines(keepends=True)
    payloads = [json.loads(line)["payload"] for line in out]
    kinds = [p.get("type") for p in payloads]
    assert kinds.count("reasoning") == 2  # the current turn's (turn 3), untouched
    assert [line for line in out if b'"reasoning"' in line] == [
        line for line in original[-5:] if b'"reasoning"' in line
    ]
    assert out[-5:] == original[-5:]  # the current turn keeps its ids
    earlier = [json.loads(line)["payload"] for line in original[1:-5] if b'"reasoning"' not in line]
    expected = [{k: v for k, v in p.items() if k != "id"} for p in earlier]
    assert payloads[1:-5] == expected
    if not ids:  # nothing but the reasoning lines changed
        assert out[1:-5] == [line for line in original[1:-5] if b'"reasoning"' not in line]
    again = run_cli("micro", "--keep", "10", "--drop-thinking", path, cwd=tmp_path, text=True)
    assert again.returncode == 0 and path.read_bytes() == b"".join(out)


def test_dry_run_says_that_drop_thinking_takes_an_item_s_id(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    records = _responses_with_ids(True)
    write_jsonl(path, records)
    done = run_cli(
        "micro", "--keep", "10", "--drop-thinking", "--dry-run", "-v", path, cwd=tmp_path, text=True
    )
    assert done.returncode == 0, done.stderr
    said = {}
    for line in done.stdout.splitlines() + done.stderr.splitlines():
        if line.startswith(f"{path}:"):
            number, what = line[len(f"{path}:") :].split(": ", 1)
            said[int(number)] = what
    takes_id = "drop the item's API id: its response's reasoning is dropped (--drop-thinking)"
    for number, record in enumerate(records[:-5], 1):  # the current turn (the last five) is left alone
        kind = record["payload"].get("type")
        if kind == "reasoning":
            assert said.pop(number) == "drop the record"
        elif record["type"] == "response_item" and "id" in record["payload"]:
            assert said.pop(number) == takes_id, number
    assert said == {}
