"""summarize through the CLI (digest backend) against the reference model in tests/helpers/reference.py, on
generated transcripts of every dialect and any --keep-last.

The model says whether the file changes at all, where the cut falls (the last N messages, moved earlier so
that no kept result loses its call and no assistant turn is split) and which lines above the cut stay on top.
The output must then be: those top lines, the summary (Claude Code: a compact_boundary record and the summary
record), and every line from the cut on, byte for byte (Claude Code: but for the parent links of records whose
parent was summarized). The archive holds the original, the output validates, and a second run changes
nothing.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from helpers import reference
from helpers.cli import invoke, invoke_on
from helpers.strategies import conversations, jsonl_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STYLE = {"anthropic": "compact", "openai": "unicode", "claude-code": "compact"}


def run_summarize(data: bytes, dialect: str, keep_last: int, tmp: Path) -> tuple[bytes, list[Path]]:
    archives = tmp / "archives"
    result, out = invoke_on(data, "summarize", "--backend", "digest", "--dialect", dialect,
                            "--keep-last", keep_last, "--archive-dir", archives, folder=tmp)  # fmt: skip
    assert result.exit_code == 0, result.output
    written = sorted(archives.glob("t.*.jsonl")) if archives.exists() else []
    return (out if out is not None else data), written


def check(records: list[dict], dialect: str, keep_last: int) -> None:
    data = jsonl_bytes(records, style=STYLE[dialect])
    lines = data.splitlines(keepends=True)
    plan = reference.summarize_plan(records, dialect, keep_last)
    with tempfile.TemporaryDirectory() as tmp:
        result, archives = run_summarize(data, dialect, keep_last, Path(tmp))
        if plan is None:
            assert (result, archives) == (data, []), "the reference model summarizes nothing here"
        else:
            first_kept, top = plan
            [archive] = archives
            assert archive.read_bytes() == data
            out = result.splitlines(keepends=True)
            added = 2 if dialect == "claude-code" else 1
            assert len(out) == len(top) + added + len(lines) - first_kept
            assert out[: len(top)] == [lines[n] for n in top]
            summary = [json.loads(line) for line in out[len(top) : len(top) + added]]
            carrier = summary[-1]["message"] if dialect == "claude-code" else summary[-1]
            assert carrier["role"] == "user"
            assert carrier["content"].startswith(f"{reference.SUMMARY_PREFIX}{archive.resolve()}]\n\n")
            tail, kept = out[len(top) + added :], lines[first_kept:]
            if dialect != "claude-code":
                assert tail == kept
            else:
                check_claude_code(records, summary, tail, kept, first_kept)
            again, more = run_summarize(result, dialect, keep_last, Path(tmp) / "again")
            assert (again, more) == (result, []), "a second run must change nothing"
        Path(tmp, "checked.jsonl").write_bytes(result)
        valid = invoke("validate", "--dialect", dialect, Path(tmp, "checked.jsonl"))
        assert valid.exit_code == 0, valid.output


def check_claude_code(
    records: list[dict], summary: list[dict], tail: list[bytes], kept: list[bytes], cut: int
):
    boundary, carrier = summary
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None and carrier["parentUuid"] == boundary["uuid"]
    assert carrier["isCompactSummary"] is True
    gone = {r.get("uuid") for r in records[:cut]} - {None}
    for new, old in zip(tail, kept, strict=True):
        record, original = json.loads(new), json.loads(old)
        if original.get("parentUuid") in gone:  # re-linked to the summary: nothing else changes
            assert record.pop("parentUuid") == carrier["uuid"]
            original.pop("parentUuid")
            assert record == original
        else:
            assert new == old


@pytest.mark.parametrize("dialect", reference.DIALECTS)
@PROPERTY
@given(data=st.data())
def test_summarize_cuts_where_the_reference_model_cuts(dialect: str, data) -> None:
    records = data.draw(conversations(dialect), label="records")
    keep_last = data.draw(st.integers(0, 8), label="keep_last")
    check(records, dialect, keep_last)


def test_the_reference_cut_by_hand() -> None:
    # user, assistant(call a), user(result a), assistant, user: --keep-last 3 would keep the result of a
    # without its call, so the cut moves to the call (index 1); --keep-last 2 cuts at index 3.
    records = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]
    assert reference.summarize_plan(records, "anthropic", 3) == (1, [])
    assert reference.summarize_plan(records, "anthropic", 2) == (3, [])
    assert reference.summarize_plan(records, "anthropic", 0) == (5, [])
    assert reference.summarize_plan(records, "anthropic", 5) is None  # nothing before the cut
