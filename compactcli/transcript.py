"""Streaming read of a JSONL transcript, line by line, with byte-exact passthrough of what does not change."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from compactcli import dialects, jsonio
from compactcli.errors import BadInput

ON_INVALID = ("error", "keep")
DETECT_MAX_LINES = 2000


@dataclass(slots=True)
class Line:
    number: int  # 1-based, as editors count
    raw: bytes  # exactly as in the file, line ending included
    record: dict | None  # None for blank lines and for bad lines passed through with --on-invalid keep
    slow: bool = False  # parsed by the stdlib (orjson refused it)


def line_ending(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return b"\r\n"
    return b"\n" if raw.endswith(b"\n") else b""


def parse_line(raw: bytes, path: str, number: int, on_invalid: str = "error") -> Line:
    if not raw.strip():
        return Line(number, raw, None)
    try:
        record, slow = jsonio.loads_object(raw)
    except jsonio.LineError as exc:
        if on_invalid == "keep":
            return Line(number, raw, None)
        reason = str(exc)
        if not raw.endswith(b"\n"):
            reason = f"torn last line (no newline at the end; still being written?): {reason}"
        raise BadInput(f"{path}:{number}: {reason}") from None
    return Line(number, raw, record, slow)


def read_lines(f: BinaryIO, path: str, on_invalid: str = "error") -> Iterator[Line]:
    """Parsed lines of a file from its current position; memory is bounded by the longest line."""
    for number, raw in enumerate(f, 1):
        yield parse_line(raw, path, number, on_invalid)


def dump_line(line: Line) -> bytes:
    """A changed record serialized the way its line was, with the same line ending."""
    return jsonio.dumps_like(line.record, line.raw, line.slow) + line_ending(line.raw)


def detect_dialect(f: BinaryIO) -> str:
    """The dialect the first lines prove; plain text messages alone fit all, so they read as anthropic."""
    start = f.tell()
    try:
        for number, raw in enumerate(f, 1):
            if number > DETECT_MAX_LINES:
                break
            try:
                record, _ = jsonio.loads_object(raw)
            except jsonio.LineError:
                continue
            found = dialects.vote(record)
            if found:
                return found
        return dialects.ANTHROPIC.name
    finally:
        f.seek(start)
