"""JSON for JSONL lines: orjson for speed, the stdlib where orjson says no.

Python's json accepts what orjson rejects (NaN, integers beyond 64 bits, lone surrogate escapes).
Such lines are still valid transcripts, so they are parsed with the stdlib and, if they change,
written back with it too.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark, as some Windows tools start a file with


class LineError(ValueError):
    """Why a line is not a JSON object (the caller adds file and line)."""


def loads(raw: bytes) -> tuple[Any, bool]:
    """Parse one line. Returns (value, needed_stdlib). Raises LineError."""
    try:
        return orjson.loads(raw), False
    except orjson.JSONDecodeError as fast_error:
        try:
            # utf-8-sig drops a leading BOM, as json.loads does for bytes.
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            start = exc.start + (len(BOM) if raw.startswith(BOM) else 0)
            raise LineError(f"invalid UTF-8 at byte {start}") from None
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


def _is_spaced(raw: bytes) -> bool:
    """Whether the line uses json.dumps' default ": " separator, judged by its first key."""
    head = raw[:256].lstrip()
    if not head.startswith(b'{"'):
        return False
    end = head.find(b'"', 2)
    return end > 0 and head[end + 1 : end + 3] == b": "


def dumps_like(value: Any, raw: bytes, needed_stdlib: bool = False) -> bytes:
    """Serialize `value` the way the line `raw` was written (separators, ASCII escapes), no newline."""
    if raw.startswith(BOM):
        return BOM + dumps_like(value, raw[len(BOM) :], needed_stdlib)
    spaced = _is_spaced(raw)
    if not spaced and not needed_stdlib:
        out = orjson.dumps(value)
        # Escaping only matters when the output has non-ASCII text and the original line had none.
        if out.isascii() or not raw.isascii():
            return out
    separators = (", ", ": ") if spaced else (",", ":")
    # Lone surrogates cannot be encoded as UTF-8: escape everything on stdlib lines.
    ensure_ascii = needed_stdlib or raw.isascii()
    return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators).encode("utf-8")
