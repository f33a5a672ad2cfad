"""Properties of summarize on drawn transcripts of every dialect (in process, digest backend).

For any valid conversation and any --keep-last: the result is a valid conversation; it starts
(after OpenAI system messages) with the summary message naming the archive; the kept tail is the
original's, byte for byte (Claude Code: but for re-linked parents); the Claude Code chain runs from
the last record back to the new boundary; and a second run with the same options changes nothing.
"""

from __future__ import annotations

import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import conversations, jsonl_bytes

from compactcli import dialects
from compactcli.backends.digest import DigestSummarizer
from compactcli.layers.summarize import SUMMARY_PREFIX
from compactcli.layers.validate import validate_records
from compactcli.summarize_file import SummarizeOptions, analyze

ARCHIVE = "/archive/t.20260101T000000000000Z.0123456789ab.jsonl"
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def summarize_bytes(data: bytes, dialect: str, keep_last: int) -> tuple[bytes | None, object]:
    source = io.BytesIO(data)
    edit = analyze(
        source,
        "t.jsonl",
        options=SummarizeOptions(keep_last=keep_last),
        summarizer=DigestSummarizer(),
        fmt=dialect,
    )
    if not edit.changed:
        return None, edit
    edit.prepare(source)
    edit.use_archive(ARCHIVE)
    out = io.BytesIO()
    edit.write(source, out)
    return out.getvalue(), edit


def records(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines()]


def check(data: bytes, dialect: str, keep_last: int) -> None:
    result, edit = summarize_bytes(data, dialect, keep_last)
    if result is None:
        return
    out = records(result)
    assert validate_records(dialects.get(dialect), list(enumerate(out, 1))) == []
    carrier = next(
        r for r in out if r.get("isCompactSummary") or (r.get("role") == "user" and dialect != "claude-code")
    )
    content = carrier["message"]["content"] if dialect == "claude-code" else carrier["content"]
    assert content.startswith(f"{SUMMARY_PREFIX}{ARCHIVE}]\n\n")
    tail = data[edit.cut_offset :]
    if dialect != "claude-code":
        assert result.endswith(tail)
        above = [r for r in out[: out.index(carrier)]]
        assert all(r.get("role") in ("system", "developer") for r in above)
    else:
        assert len(result.splitlines()) - len(tail.splitlines()) == len(edit.top) + 2
        by_uuid = {r["uuid"]: r for r in out if isinstance(r.get("uuid"), str)}
        conversation = [r for r in out if r.get("isSidechain") is carrier.get("isSidechain")]
        record = conversation[-1]
        seen = set()
        while record.get("parentUuid") is not None and id(record) not in seen:
            seen.add(id(record))
            record = by_uuid[record["parentUuid"]]
        assert record.get("subtype") == "compact_boundary"
    again, _ = summarize_bytes(result, dialect, keep_last)
    assert again is None  # idempotent


@PROPERTY
@given(conversations("anthropic"), st.integers(0, 8), st.sampled_from(["compact", "default"]))
def test_anthropic(records_: list[dict], keep_last: int, style: str) -> None:
    check(jsonl_bytes(records_, style=style), "anthropic", keep_last)


@PROPERTY
@given(conversations("openai"), st.integers(0, 8))
def test_openai(records_: list[dict], keep_last: int) -> None:
    check(jsonl_bytes(records_, style="unicode"), "openai", keep_last)


@PROPERTY
@given(conversations("claude-code"), st.integers(0, 8))
def test_claude_code(records_: list[dict], keep_last: int) -> None:
    check(jsonl_bytes(records_), "claude-code", keep_last)
