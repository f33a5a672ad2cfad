"""jsonio.splice: a value replaced in a line's bytes, or None where the value is not found once, as the
line writes it, where a key starts (docs/design.md, "Lossless")."""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from compactcli.core import jsonio


def test_a_value_is_replaced_in_place_in_each_style() -> None:
    compact = b'{"a":1.50,"out":"long \\u00e9 text","b":[1, 2]}\n'  # ASCII: escaped as the stdlib does
    assert jsonio.splice(compact, [("out", "long \u00e9 text", "P")]) == b'{"a":1.50,"out":"P","b":[1, 2]}\n'
    utf8 = '{"a":1.50,"out":"long é text","b":"ü"}\n'.encode()  # not ASCII: as orjson writes it
    assert jsonio.splice(utf8, [("out", "long é text", "P")]) == '{"a":1.50,"out":"P","b":"ü"}\n'.encode()
    escaped = utf8.replace("é".encode(), b"\\u00e9")  # escaped where orjson would not
    assert jsonio.splice(escaped, [("out", "long é text", "P")]) is None
    spaced = b'{"a": 1.50, "out": {"output": "caf\\u00e9"}, "b": "caf\\u00e9"}\n'
    edit = ("out", {"output": "caf\u00e9"}, {"output": "x\u00fc"})
    assert jsonio.splice(spaced, [edit]) == b'{"a": 1.50, "out": {"output": "x\\u00fc"}, "b": "caf\\u00e9"}\n'


def test_an_ascii_compact_line_gets_an_escaped_placeholder() -> None:
    raw = b'{"out":"old"}'
    assert jsonio.splice(raw, [("out", "old", "n\u00e9w")]) == b'{"out":"n\\u00e9w"}'
    assert (
        jsonio.splice(raw, [("out", "old", "n\u00e9w")])
        == json.dumps({"out": "n\u00e9w"}, separators=(",", ":")).encode()
    )


def test_values_that_begin_alike_are_told_apart_by_the_whole() -> None:
    # Two results of one tool in a line start with the same words; each is found by all of its text.
    first, second = (f"The file /home/dev/project/src/{name}.py was updated successfully." for name in "ab")
    raw = json.dumps({"c": [{"out": first}, {"out": second}]}).encode() + b"\n"
    assert (
        jsonio.splice(raw, [("out", second, "P")])
        == b'{"c": [{"out": "' + first.encode() + b'"}, {"out": "P"}]}\n'
    )
    assert (
        jsonio.splice(raw, [("out", first, "P")])
        == b'{"c": [{"out": "P"}, {"out": "' + second.encode() + b'"}]}\n'
    )
    twice = json.dumps({"c": [{"out": first}, {"out": first}]}).encode()
    assert jsonio.splice(twice, [("out", first, "P")]) is None


def test_nothing_is_spliced_that_is_not_found_once_where_a_key_starts() -> None:
    twice = b'{"a":{"out":"old"},"b":{"out":"old"}}'
    assert jsonio.splice(twice, [("out", "old", "new")]) is None
    # inside another string the key's quote is escaped: `\"out":"old"` is no key
    inside = b'{"note":"say \\"out\\":\\"old\\"","x\\"out":"old"}'
    assert jsonio.splice(inside, [("out", "old", "new")]) is None
    assert jsonio.splice(b'{"out":"older"}', [("out", "old", "new")]) is None
    assert jsonio.splice(jsonio.BOM + b'{"out":"old"}', [("out", "old", "new")]) is None


def test_overlapping_values_are_left_to_the_caller() -> None:
    raw = b'{"r":{"out":"old"}}'
    assert jsonio.splice(raw, [("r", {"out": "old"}, "new"), ("out", "old", "new")]) is None
    assert jsonio.splice(raw, [("r", {"out": "old"}, "new")]) == b'{"r":"new"}'


TEXT = st.text(st.sampled_from('ab"\\\n\té中\x7f'), min_size=0, max_size=300)
# Around the value no DEL: dumps_like itself writes one escaped or not by whether the rest is ASCII.
OTHER = st.text(st.sampled_from('ab"\\\n\té中'), min_size=0, max_size=300)


@given(out=TEXT, other=OTHER, spaced=st.booleans(), ascii_only=st.booleans(), wrapped=st.booleans())
def test_a_spliced_line_is_the_line_the_changed_record_would_be(
    out: str, other: str, spaced: bool, ascii_only: bool, wrapped: bool
) -> None:
    # Written as the stdlib writes each style; orjson writes a compact non-ASCII line's strings alike.
    separators = (", ", ": ") if spaced else (",", ":")
    old = {"output": out} if wrapped else out
    record = {"a": other, "r": [{"out": old, "n": 1.5}], "z": other + "!"}
    raw = json.dumps(record, separators=separators, ensure_ascii=ascii_only).encode() + b"\n"
    if not spaced and not raw.isascii():
        raw = orjson.dumps(record) + b"\n"
    canonical = raw == jsonio.dumps_like(record, raw) + b"\n"  # not with DEL escaped in an ASCII line
    new = {"output": "P"} if wrapped else "P"
    record["r"][0]["out"] = new
    got = jsonio.splice(raw, [("out", old, new)])
    if got is None:  # DEL: escaped in an ASCII line by the stdlib, not by orjson; looked for escaped
        assert "\x7f" in out and raw.isascii()
    elif canonical:
        assert got == jsonio.dumps_like(record, raw) + b"\n"
    else:
        assert json.loads(got) == record
