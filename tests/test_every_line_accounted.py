"""Every input line is accounted for, in every dialect: it is in the output, in the archive (and the report
counts it), or the run is refused. Lines `--on-invalid keep` passes through unread reach the output
unchanged, in their place.

Generated transcripts (tests/helpers/strategies.py; Codex: prefixes of tests/helpers/codex_rollout.py) get
unreadable lines inserted at drawn places; summarize, micro and replay -o run through the CLI. What is
expected is worked out from the input alone: which lines were inserted, and which lines the output holds
byte for byte.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

from helpers import codex_rollout
from helpers.cli import invoke_on
from helpers.strategies import conversations, jsonl_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactcli.dialects import NAMES

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DIALECTS = NAMES  # every registered dialect; one without a generator fails here
JUNK = (b"not json at all\n", b'{"torn": "half a rec\n', b"[1, 2, 3]\n")


@st.composite
def transcripts(draw: st.DrawFn, dialect: str) -> tuple[list[bytes], set[int]]:
    """(lines, indexes of the unreadable lines inserted)."""
    if dialect == "codex":
        records = codex_rollout.records()
        records = records[: draw(st.integers(2, len(records)))]
        lines = codex_rollout.dumps(records).splitlines(keepends=True)
    else:
        lines = jsonl_bytes(draw(conversations(dialect))).splitlines(keepends=True)
    inserts = draw(st.lists(st.tuples(st.integers(1, max(1, len(lines))), st.sampled_from(JUNK)), max_size=3))
    junk: set[int] = set()
    for place, raw in sorted(inserts, reverse=True):
        lines.insert(place, raw)
    for index, raw in enumerate(lines):
        if raw in JUNK:
            junk.add(index)
    return lines, junk


def split(written: bytes | None) -> list[bytes] | None:
    return written.splitlines(keepends=True) if written is not None else None


def in_order(wanted: list[bytes], out: list[bytes]) -> bool:
    """Whether `wanted` appear in `out` in this order."""
    position = 0
    for raw in wanted:
        try:
            position = out.index(raw, position) + 1
        except ValueError:
            return False
    return True


def uuid_of(raw: bytes) -> str | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record.get("uuid") if isinstance(record, dict) and isinstance(record.get("uuid"), str) else None


@PROPERTY
@given(data=st.data(), dialect=st.sampled_from(DIALECTS), keep_last=st.integers(0, 6))
def test_summarize_keeps_or_archives_every_line(data, dialect: str, keep_last: int) -> None:
    lines, junk = data.draw(transcripts(dialect))
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        archives = tmp / "archives"
        result, written = invoke_on(b"".join(lines), "summarize", "--backend", "digest", "--json",
                                    "--keep-last", keep_last, "--archive-dir", archives,
                                    "--on-invalid", "keep", folder=tmp)  # fmt: skip
        out = split(written)
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        if report["status"] == "unchanged":  # nothing to summarize: the output is the input
            assert out in (None, lines)
            return
        assert report["status"] == "changed"
        [archive] = list(archives.glob("t.*.jsonl"))
        assert archive.read_bytes() == b"".join(lines)
        assert in_order([lines[i] for i in sorted(junk)], out)  # unread lines: unchanged, in order
        kept_uuids = {uuid_of(raw) for raw in out} - {None}
        not_written = Counter(raw for raw in lines if raw.strip()) - Counter(out)  # lines repeat
        missing = [raw for raw in not_written.elements() if (uuid_of(raw) or "") not in kept_uuids]
        blank = sum(1 for raw in lines if not raw.strip())
        # Every line the output does not hold (byte for byte, or relinked with its uuid) was replaced, and
        # the report counts it; blank lines before the cut may go too.
        assert len(missing) <= report["stats"]["replaced_lines"] <= len(missing) + blank


@PROPERTY
@given(data=st.data(), dialect=st.sampled_from(DIALECTS))
def test_micro_writes_every_line_in_place(data, dialect: str) -> None:
    lines, junk = data.draw(transcripts(dialect))
    with tempfile.TemporaryDirectory() as scratch:
        result, written = invoke_on(b"".join(lines), "micro", "--keep", "1", "--min-chars", "0",
                                    "--on-invalid", "keep", folder=Path(scratch))  # fmt: skip
        out = split(written)
        assert result.exit_code == 0, result.output
        out = out if out is not None else lines
        assert len(out) == len(lines)
        assert [out[i] for i in sorted(junk)] == [lines[i] for i in sorted(junk)]


@PROPERTY
@given(data=st.data(), dialect=st.sampled_from(DIALECTS), threshold=st.sampled_from([50, 400, 100_000]))
def test_replay_output_accounts_for_every_line(data, dialect: str, threshold: int) -> None:
    lines, junk = data.draw(transcripts(dialect))
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        result, written = invoke_on(b"".join(lines), "replay", "--backend", "digest", "--format", "json",
                                    "--threshold", threshold, "--archive-dir", tmp / "archives",
                                    "--on-invalid", "keep", folder=tmp)  # fmt: skip
        out = split(written)
        assert result.exit_code == 0, result.output
        stats = json.loads(result.stdout)["stats"]
        assert stats["lines"] == len(lines)
        assert stats["lines_in_output"] + stats["lines_archived"] + stats["lines_left_out"] == len(lines)
        assert in_order([lines[i] for i in sorted(junk)], out or [])
        if dialect in ("anthropic", "openai"):
            # Every line is a message of the one conversation: none is left out, and without a
            # compaction every line is in the output.
            assert stats["lines_left_out"] == 0
            if not stats["archives"]:
                assert stats["lines_in_output"] == len(lines)
