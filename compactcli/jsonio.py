"""JSON for JSONL lines: orjson for speed, the stdlib where orjson says no.

Python's json accepts what orjson rejects (NaN, integers beyond 64 bits, lone surrogate escapes).
Such lines are still valid transcripts, so they are parsed with the stdlib and, if they change,
written back with it too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson


class LineError(ValueError):
    """Why a line is not a JSON object (the caller adds file and line)."""


@dataclass(frozen=True)
class Style:
    """How a line was serialized, so a changed line is written back the same way."""

    spaced: bool = False  # json.dumps default separators (", ", ": ") rather than compact
    ascii: bool = False  # non-ASCII escaped as \\uXXXX
    stdlib: bool = False  # needed the stdlib parser: write with the stdlib too


def loads(raw: bytes) -> tuple[Any, bool]:
    """Parse one line. Returns (value, needed_stdlib). Raises LineError."""
    try:
        return orjson.loads(raw), False
    except orjson.JSONDecodeError as fast_error:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LineError(f"invalid UTF-8 at byte {exc.start}") from None
        try:
            return json.loads(text), True
        except json.JSONDecodeError as exc:
            raise LineError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise LineError(f"not valid JSON: {fast_error}") from None


def loads_object(raw: bytes) -> tuple[dict, bool]:
    value, slow = loads(raw)
    if not isinstance(value, dict):
        raise LineError(f"not a JSON object (a JSON {type(value).__name__})")
    return value, slow


def detect_style(raw: bytes, needed_stdlib: bool) -> Style:
    head = raw[:4096]
    spaced = b'": ' in head or b'", "' in head
    ascii_only = raw.isascii() and b"\\u" in raw
    return Style(spaced=spaced, ascii=ascii_only, stdlib=needed_stdlib)


def dumps(value: Any, style: Style = Style()) -> bytes:
    """Serialize without a trailing newline, in the given style."""
    if not (style.spaced or style.ascii or style.stdlib):
        return orjson.dumps(value)
    separators = (", ", ": ") if style.spaced else (",", ":")
    # Lone surrogates cannot be encoded as UTF-8: escape everything on stdlib lines.
    ensure_ascii = style.ascii or style.stdlib
    return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators).encode("utf-8")
