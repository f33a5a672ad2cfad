"""What the model is sent of a Codex tool output. The rollout keeps every output whole; Codex cuts each one to
its turn's `truncation_policy` (times 1.2) before the model sees it, keeping both ends around a marker
(docs/design.md, "Codex rollouts"). The cut texts below are worked out by hand from that rule, and the counts
from the heuristic's rates (compactcli.counting.tokens)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from helpers.cli import run_cli
from helpers.files import write_jsonl

from compactcli.counting import calibrate
from compactcli.counting import tokens as tok
from compactcli.dialects.codex import truncated_items, truncated_text

TOKENS_10 = {"mode": "tokens", "limit": 10}  # 12 tokens with the allowance: 48 bytes
BYTES_50 = {"mode": "bytes", "limit": 50}  # 60 bytes

# The outputs of the rollout below, as the model is sent them.
A_CUT = "a" * 24 + "…88 tokens truncated…" + "a" * 24  # 400 bytes: (400 - 48) / 4 = 88 tokens cut
B_WHOLE = "b" * 48  # exactly the budget: whole
C_CUT = "c" * 30 + "…40 chars truncated…" + "c" * 30  # 100 bytes, 60 kept
E_CUT = "eeeee…10 chars truncated…eeeee"  # the 10 bytes left of the budget after 50 of d
OMITTED = "[omitted 1 text items ...]"


def _record(records: list[dict], kind: str, payload: dict) -> None:
    second = len(records)
    records.append({"timestamp": f"2026-05-04T09:00:{second:02d}.000Z", "type": kind, "payload": payload})


def _turn(records: list[dict], policy: dict | None) -> None:
    payload: dict = {"cwd": "/home/dev/tally", "model": "gpt-5-codex"}
    if policy is not None:
        payload["truncation_policy"] = policy
    _record(records, "turn_context", payload)


def _item(records: list[dict], payload: dict) -> None:
    _record(records, "response_item", payload)


def _user(records: list[dict], text: str) -> None:
    _item(records, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def _call(records: list[dict], call_id: str) -> None:
    _item(records, {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": call_id})


def _output(records: list[dict], call_id: str, output: object, kind: str = "function_call_output") -> None:
    _item(records, {"type": kind, "call_id": call_id, "output": output})


def _token_count(records: list[dict], total: int) -> None:
    usage = {"input_tokens": total - 10, "cached_input_tokens": 0, "output_tokens": 10, "total_tokens": total}
    info = {"total_token_usage": {**usage, "total_tokens": total * 7}, "last_token_usage": usage}
    _record(records, "event_msg", {"type": "token_count", "info": info})


def rollout(first: dict | None = TOKENS_10, last: dict | None = None) -> list[dict]:
    """Two turns: the first under `first` (two calls, one output over the budget, one at it), the second
    under BYTES_50 (a custom tool's output, and an output of text items that crosses the budget); then,
    with `last`, a third turn whose policy would leave everything whole."""
    records: list[dict] = []
    _record(records, "session_meta", {"id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "cwd": "/home/dev/tally"})
    _turn(records, first)
    _user(records, "go")
    _call(records, "c1")
    _call(records, "c2")
    _token_count(records, 1000)
    _output(records, "c1", "a" * 400)
    _output(records, "c2", "b" * 48)
    _item(
        records, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}
    )
    _token_count(records, 1500)
    _turn(records, BYTES_50)
    _user(records, "next")
    _item(records, {"type": "custom_tool_call", "name": "apply_patch", "input": "p", "call_id": "c3"})
    _output(records, "c3", "c" * 100, "custom_tool_call_output")
    _call(records, "c4")
    items = [{"type": "input_text", "text": text} for text in ("d" * 50, "e" * 20, "f")]
    _output(records, "c4", items)
    if last is not None:
        _turn(records, last)
        _user(records, "more")
    return records


write = partial(write_jsonl, ensure_ascii=False)


def estimate(path: Path, cwd: Path, *options: str) -> dict:
    run = run_cli("estimate", "--format", "json", "--method", "heuristic", *options, path, cwd=cwd, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["stats"]


# The heuristic's price of each output's text, by hand: letters, digits, spaces, the two "…" (U+2026), and
# for the note its "...]" (a run of four dense characters).
MARKER = tok.LETTER * 15 + tok.DENSE * 2 + tok.SPACE * 2 + tok.SYMBOL * 2  # "…88 tokens truncated…"
CHARS_MARKER = tok.LETTER * 14 + tok.DENSE * 2 + tok.SPACE * 2 + tok.SYMBOL * 2  # "…40 chars truncated…"
NOTE = tok.LETTER * 16 + tok.DENSE * 6 + tok.SPACE * 4 + tok.DENSE_RUN
RESULT = tok.TOOL_RESULT_OVERHEAD
SECOND_TURN = (
    (RESULT + tok.LETTER * 60 + CHARS_MARKER)  # c3
    + (RESULT + tok.LETTER * 50 + tok.LETTER * 10 + CHARS_MARKER + NOTE)  # c4: d whole, e cut, f left out
)


def test_the_cut_keeps_half_the_budget_at_each_end_on_character_boundaries() -> None:
    assert truncated_text("a" * 400, (True, 12)) == A_CUT
    assert truncated_text("b" * 48, (True, 12)) == B_WHOLE
    assert truncated_text("c" * 100, (False, 60)) == C_CUT
    # 20 two-byte characters (40 bytes) in 9: the head's 4 bytes are two characters; the tail's 5 bytes
    # would start inside one, so it starts at the next: two characters; the 16 between are cut.
    assert truncated_text("é" * 20, (False, 9)) == "éé…16 chars truncated…éé"
    # No budget at all: only the marker (tokens: the bytes / 4, rounded up).
    assert truncated_text("abcde", (True, 0)) == "…2 tokens truncated…"
    assert truncated_text("abcde", (False, 0)) == "…5 chars truncated…"


def test_text_items_share_the_budget_and_images_stay() -> None:
    image = {"type": "input_image", "image_url": "https://example.invalid/shot.png"}
    items = [{"type": "input_text", "text": "d" * 50}, image, {"type": "input_text", "text": "e" * 20}]
    items.append({"type": "input_text", "text": "f"})
    # tokens: each text costs its bytes / 4 rounded up (13 for the 50 d's), the e's get the 2 left (8 bytes)
    assert [part.get("text") for part in truncated_items(items, (True, 15))] == [
        "d" * 50,
        None,
        "eeee…3 tokens truncated…eeee",
        OMITTED,
    ]


def test_estimate_counts_each_output_as_its_turn_cut_it(tmp_path: Path) -> None:
    path = write(tmp_path / "rollout.jsonl", rollout())
    first_turn = (RESULT + tok.LETTER * 48 + MARKER) + (RESULT + tok.LETTER * 48)  # c1 cut, c2 whole
    stats = estimate(path, tmp_path)
    assert stats["by_category"]["tool_results"] == round(first_turn + SECOND_TURN) == 168
    # The rollout itself is left as it was: the cut is only counted.
    assert [json.loads(line) for line in path.read_text().splitlines()] == rollout()


def test_a_turn_without_a_policy_keeps_its_outputs_whole(tmp_path: Path) -> None:
    # Rollouts written before Codex recorded the policy: what was cut is unknown, so nothing is.
    path = write(tmp_path / "rollout.jsonl", rollout(first=None))
    first_turn = (RESULT + tok.LETTER * 400) + (RESULT + tok.LETTER * 48)
    assert estimate(path, tmp_path)["by_category"]["tool_results"] == round(first_turn + SECOND_TURN)


def test_estimate_top_lists_an_output_at_what_the_model_was_sent(tmp_path: Path) -> None:
    # micro keeps the last 3 results: c1 is the one it would clear, and what that saves is the cut output.
    path = write(tmp_path / "rollout.jsonl", rollout())
    run = run_cli("estimate", "--format", "json", "--top", "5", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    top = json.loads(run.stdout)["stats"]["top"]
    assert [(entry["tool_use_id"], entry["tokens"]) for entry in top] == [("c1", 41)]
    assert round(RESULT + tok.LETTER * 48 + MARKER) == 41


def test_replay_counts_an_output_under_the_policy_of_its_own_turn(tmp_path: Path) -> None:
    # A later turn's policy would leave every output whole; replay counts its context at each call, after
    # that turn_context: each output still counts as its own turn cut it, as estimate reads it.
    path = write(tmp_path / "rollout.jsonl", rollout(last={"mode": "tokens", "limit": 1_000_000}))
    stats = estimate(path, tmp_path)
    run = run_cli(
        "replay",
        "--json",
        "--estimator",
        "heuristic",
        "--backend",
        "digest",
        "--threshold",
        "10000000",
        "--keep",
        "100",
        path,
        cwd=tmp_path,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["stats"]["final_tokens"] == stats["tokens"]
    assert stats["by_category"]["tool_results"] == 168


def test_calibrate_measures_codex_calls_against_what_the_model_was_sent(tmp_path: Path) -> None:
    path = write(tmp_path / "rollout.jsonl", rollout())
    intervals = calibrate.walk(calibrate.read_records(path))
    # Two token_count events: one interval, from the first call to the second, over the two outputs and
    # the answer between them.
    assert [(interval.line, interval.recorded) for interval in intervals] == [(10, 500)]
    between = tok.HeuristicCounter()
    between.add({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": A_CUT}]})
    between.add(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": B_WHOLE}]}
    )
    between.add({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    # (each category is rounded on its own at both calls: the difference may be one off; the whole output
    # would add about 45)
    assert abs(intervals[0].estimated["heuristic"] - between.tokens) <= 1
    run = run_cli("estimate", "--calibrate", "--format", "json", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["next_call"]["auto"]["n"] == 1
