"""JSON for JSONL lines: orjson for speed, the stdlib where orjson says no or would change a number.

Python's json accepts what orjson rejects (NaN, lone surrogate escapes). Such lines are still valid
transcripts, so they are parsed with the stdlib and, if they change, written back with it too.

Numbers are written back as they were read (docs/design.md, "Lossless"): orjson turns `1e400` into
an error, `1.0000000000000000001` into `1.0` and an integer beyond 64 bits into a float. The stdlib reads a
float that would not survive as a `Number` that remembers its text. Reading stays fast: only when a
changed line is written, its new value holds a float, and its original bytes hold such a literal where
a number starts (long digit runs, three-digit exponents: cheap scans whose false alarms only cost
speed), is the original read again with the stdlib and its numbers put back where the new value still
holds them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

import orjson

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark, as some Windows tools start a file with

# A literal a double may not hold: 16+ digits in a row, 17+ digits and dots, a 3-digit exponent. Only
# where a number can start (after `:`, `,` or `[`): digits inside strings raise fewer false alarms.
_RISKY_NUMBER = re.compile(rb"[:,\[][ \t\r\n]*-?(?:[0-9]{16}|[0-9.]{18}|[0-9][0-9.]*[eE][+-]?[0-9]{3})")
# A float as orjson writes it (always with "." or "e"; compact, so right after `:`, `,` or `[` and
# right before `,`, `}` or `]`). A line whose new value holds no float holds no literal a double changed.
_FLOAT_OUT = re.compile(rb"[:,\[]-?[0-9]+(?:\.[0-9]+(?:e[+-]?[0-9]+)?|e[+-]?[0-9]+)[,}\]]")
# The same search, first on a sketch of the line: its digits deleted, the bytes around a number mapped to
# classes (`:,[]}` to `:`, `.e` to `.`, `+-` to `-`, the rest to `x`). Every float of _FLOAT_OUT leaves
# `:-?\.\.?-?:` there, and the sketch has few places where such a match can start, so the regex over it
# runs several times faster than _FLOAT_OUT over the line (a timestamp's `:47.327Z` leaves `:.x`). Only
# where the sketch matches is the line itself searched.
_SKETCH = bytes(
    ord(":") if byte in b":,[]}" else ord(".") if byte in b".e" else ord("-") if byte in b"+-" else ord("x")
    for byte in range(256)
)
_DIGITS = b"0123456789"
_FLOAT_SKETCH = re.compile(rb":-?\.\.?-?:")


def holds_float(compact: bytes) -> bool:
    """Whether orjson's (compact) text of a value holds a float."""
    return _FLOAT_SKETCH.search(compact.translate(_SKETCH, _DIGITS)) is not None and (
        _FLOAT_OUT.search(compact) is not None
    )


class Number(float):
    """A float read from a literal that a float cannot give back (`1e400`, `1.0000000000000000001`);
    it compares as the float and is written back as the literal."""

    literal: str

    def __new__(cls, literal: str) -> Number:
        number = super().__new__(cls, literal)
        number.literal = literal
        return number


def _parse_float(literal: str) -> float:
    """A float, or a Number when writing the float back would give another value (1e400 -> inf)."""
    from decimal import Decimal

    value = float(literal)
    if math.isfinite(value) and Decimal(repr(value)) == Decimal(literal):
        return value
    return Number(literal)


# Python refuses to convert integers of more digits to or from text (a guard against slow conversions).
_INT_DIGITS = 4300


def _parse_int(literal: str) -> int | float:
    """An int; a Number (which keeps its literal) past the digits Python converts, so that a line with a
    huge integer is read and written back as it was instead of failing."""
    if len(literal) <= _INT_DIGITS:
        return int(literal)
    return Number(literal)


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
            return json.loads(text, parse_float=_parse_float, parse_int=_parse_int), True
        except json.JSONDecodeError as exc:
            raise LineError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise LineError(f"not valid JSON: {fast_error}") from None


def loads_object(raw: bytes) -> tuple[dict, bool]:
    value, slow = loads(raw)
    if not isinstance(value, dict):
        raise LineError(f"not a JSON object (a JSON {type(value).__name__})")
    return value, slow


def is_spaced(raw: bytes) -> bool:
    """Whether the line uses json.dumps' default ": " separator, judged by its first key."""
    head = raw[:256].lstrip()
    if not head.startswith(b'{"'):
        return False
    end = head.find(b'"', 2)
    return end > 0 and head[end + 1 : end + 3] == b": "


def _compact_or_float(value: Any) -> bytes:
    """orjson's text of `value`, or a float where orjson cannot write it (an int beyond 64 bits), so
    that the original's numbers are looked at."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return b"[0.0]"


def dumps_like(value: Any, raw: bytes, needed_stdlib: bool = False) -> bytes:
    """Serialize `value` the way the line `raw` was written (separators, ASCII escapes, number
    literals), no newline."""
    if raw.startswith(BOM):
        return BOM + dumps_like(value, raw[len(BOM) :], needed_stdlib)
    spaced = is_spaced(raw)
    out = None if needed_stdlib or spaced else orjson.dumps(value)
    numbers = needed_stdlib
    # The new line (short: a result was cleared) is scanned first; the original only if it has a float.
    # A spaced line is written by the stdlib, but the scan reads orjson's compact text of the new value
    # all the same: far cheaper than scanning the whole original line (docs/design.md, "Lossless").
    probe = out if out is not None or numbers else _compact_or_float(value)
    if not numbers and holds_float(probe) and _RISKY_NUMBER.search(raw):
        value = _put_back_numbers(value, json.loads(raw, parse_float=_parse_float, parse_int=_parse_int))
        numbers = True
    if out is not None and not numbers:
        # Escaping only matters when the output has non-ASCII text and the original line had none.
        if out.isascii() or not raw.isascii():
            return out
    separators = (", ", ": ") if spaced else (",", ":")
    # Lone surrogates cannot be encoded as UTF-8: escape everything on stdlib lines.
    ensure_ascii = needed_stdlib or raw.isascii()
    literals: list[str] = []
    if numbers:
        value = _mark_numbers(value, literals)
    out = _ENCODERS[separators, ensure_ascii].encode(value)
    for index, literal in enumerate(literals):
        out = out.replace(f'"{_MARK}compactcli-number-{index}{_MARK}"', literal, 1)
    return out.encode("utf-8")


# Made once: json.dumps builds an encoder on every call that passes separators.
_ENCODERS = {
    (separators, ascii_only): json.JSONEncoder(ensure_ascii=ascii_only, separators=separators)
    for separators in ((", ", ": "), (",", ":"))
    for ascii_only in (True, False)
}

# Stands in for a Number while the stdlib writes the line; json.dumps escapes it as \u0000.
_MARK_CHAR = "\x00"
_MARK = "\\u0000"


def _mark_numbers(value: Any, literals: list[str]) -> Any:
    """A copy of `value` with each Number replaced by a marker string naming its literal."""
    if isinstance(value, Number):
        literals.append(value.literal)
        return f"{_MARK_CHAR}compactcli-number-{len(literals) - 1}{_MARK_CHAR}"
    if isinstance(value, dict):
        return {k: _mark_numbers(v, literals) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark_numbers(v, literals) for v in value]
    return value


def _put_back_numbers(new: Any, old: Any) -> Any:
    """`new` with each float that orjson read from a literal it could not hold (an int beyond 64 bits,
    a Number) replaced by what the stdlib read there, where `old` (the original) holds it."""
    if isinstance(new, float) and isinstance(old, int | Number) and not isinstance(old, bool):
        return old if float(old) == new else new
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: _put_back_numbers(v, old[k]) if k in old else v for k, v in new.items()}
    if isinstance(new, list) and isinstance(old, list):
        return [_put_back_numbers(v, old[i]) if i < len(old) else v for i, v in enumerate(new)]
    return new


def plain(value: Any) -> Any:
    """orjson's `default`: a Number as the float it compares equal to."""
    if isinstance(value, Number):
        return float(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def compact_text(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, written by orjson where it gives the
    same text: not where it holds a float (orjson and repr may write one differently) or a null (orjson
    writes NaN and infinities so), nor what orjson cannot write (an int beyond 64 bits, a lone surrogate)."""
    try:
        raw = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is one
        raw = b"null"
    if b"null" in raw or holds_float(raw):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return raw.decode()


def json_strings(value: object) -> Iterator[str]:
    """The text in a parsed JSON value: its strings, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


# A value as a line of each style writes it: (spaced, ASCII-only line) -> encoder. orjson where the line
# is compact and holds non-ASCII text (what dumps_like writes there), else the stdlib's (which escapes
# DEL where orjson does not: such a value is not found in a line orjson wrote, and the line is re-serialized).
_VALUE_ENCODERS = {
    (False, False): orjson.dumps,
    (False, True): lambda value: _ENCODERS[(",", ":"), True].encode(value).encode(),
    (True, False): lambda value: _ENCODERS[(", ", ": "), False].encode(value).encode("utf-8"),
    (True, True): lambda value: _ENCODERS[(", ", ": "), True].encode(value).encode(),
}


# A string as the same encoders write it, without their Python layer: JSONEncoder.encode hands a str
# to these very functions (the values spliced are almost all strings, several per changed line).
_STRING_ENCODERS = {
    (False, False): orjson.dumps,
    (False, True): lambda text: encode_basestring_ascii(text).encode(),
    (True, False): lambda text: encode_basestring(text).encode("utf-8"),
    (True, True): lambda text: encode_basestring_ascii(text).encode(),
}


_KEY_STARTS = b"{, "  # the byte before a key's opening quote: `{`, `,` or the space of `, `
# A long string is looked for by its first characters and checked by its last ones where it ends (its
# closing quote): the whole of it is neither encoded again nor searched for.
_AFFIX = 24


def _string_end(raw: bytes, start: int) -> int:
    """Where the JSON string that starts at `start` (its opening quote) ends, after its closing quote:
    the first quote not escaped (preceded by an even number of backslashes); -1 if none."""
    end = start
    while True:
        end = raw.find(b'"', end + 1)
        if end < 0:
            return -1
        back = end - 1
        while raw[back] == 0x5C:  # a backslash
            back -= 1
        if (end - 1 - back) % 2 == 0:
            return end + 1


def _found_once(raw: bytes, head: bytes, value: bytes) -> tuple[int, int] | None:
    """Where `value`'s bytes are in `raw` (start, end) as the value of the key `head` (the key and its
    separator), if written there once, where a key starts, and nowhere else; else None."""
    needle = head + value
    at = raw.find(needle)
    if at < 1 or raw[at - 1] not in _KEY_STARTS or raw.find(needle, at + 1) != -1:
        return None
    return at + len(head), at + len(needle)


def _span(
    raw: bytes, head: bytes, old: object, encode, text_encode, separator: bytes
) -> tuple[int, int] | None:
    """Where the value `old` of the key written `head` is in `raw` (start, end), as the line's style
    writes it."""
    if type(old) is dict and len(old) == 1:  # {"output": text}, a tool's answer
        ((inner, text),) = old.items()
        opening, closing = b"{" + orjson.dumps(inner) + separator, b"}"
    else:
        text, opening, closing = old, b"", b""
    if type(text) is not str or len(text) <= 2 * _AFFIX:
        return _found_once(raw, head, _value_bytes(old, encode, text_encode, separator))
    needle = head + opening + text_encode(text[:_AFFIX])[:-1]
    at = raw.find(needle)
    if at < 1 or raw[at - 1] not in _KEY_STARTS:
        return None
    start = at + len(head) + len(opening)  # the string's opening quote
    end = _string_end(raw, start)
    last = text_encode(text[-_AFFIX:])[1:]
    # The string's bytes: its first and last characters as written, and at least a byte a character.
    if end < 0 or raw[end - len(last) : end] != last or end - start < len(text) + 2:
        return None
    if not raw.startswith(closing, end):
        return None
    # Looked for again only after this value: no key starts inside it (a quote in a string is escaped,
    # and the keys and their separators around it hold none but their own).
    if raw.find(needle, end + len(closing)) != -1:  # another value begins alike: the whole tells them apart
        return _found_once(raw, head, opening + text_encode(text) + closing)
    return at + len(head), end + len(closing)


def _value_bytes(value: object, encode, text_encode, separator: bytes) -> bytes:
    """`value` as the line's style writes it: a string, or a one-string object (a tool's answer), without
    the stdlib encoder's Python layer; anything else through it."""
    if type(value) is str:
        return text_encode(value)
    if type(value) is dict and len(value) == 1:
        ((key, text),) = value.items()
        if type(key) is str and type(text) is str:
            return b"{" + text_encode(key) + separator + text_encode(text) + b"}"
    return encode(value)


Span = tuple[int, int, bytes]  # bytes [start, end) of a line and what replaces them


def splice_spans(raw: bytes, edits: list[tuple[str, object, object]]) -> list[Span] | None:
    """Where in `raw` the value of each (key, old, new) of `edits` is, and its replacement: `new` as the
    line's style writes it; in order, none overlapping. None where that cannot be done with certainty,
    so that the caller re-serializes the record (dumps_like). Each `"key": old` must be found written as
    the line's style writes it (separators, escapes) once, where a key starts, and no two may overlap: a
    JSON string holds a quote only escaped, so the bytes found are that key and its whole value."""
    if raw.startswith(BOM) or not edits:
        return None
    style = is_spaced(raw), raw.isascii()
    encode, text_encode = _VALUE_ENCODERS[style], _STRING_ENCODERS[style]
    separator = b": " if style[0] else b":"
    spans = []
    try:
        for key, old, new in edits:
            span = _span(raw, orjson.dumps(key) + separator, old, encode, text_encode, separator)
            if span is None:
                return None
            spans.append((*span, _value_bytes(new, encode, text_encode, separator)))
    except (TypeError, ValueError):  # a value orjson cannot write (an int beyond 64 bits): not here
        return None
    spans.sort()
    position = 0
    for start, end, _ in spans:
        if start < position:
            return None
        position = end
    return spans


def apply_spans(raw: bytes, spans: list[Span]) -> bytes:
    """`raw` with each span's bytes replaced (splice_spans), the rest of its bytes kept as they are."""
    pieces = []
    position = 0
    for start, end, value in spans:
        pieces += (raw[position:start], value)
        position = end
    pieces.append(raw[position:])
    return b"".join(pieces)


def splice(raw: bytes, edits: list[tuple[str, object, object]]) -> bytes | None:
    """`raw` with the value of each (key, old, new) of `edits` replaced by `new` (splice_spans), or None."""
    spans = splice_spans(raw, edits)
    return None if spans is None else apply_spans(raw, spans)
