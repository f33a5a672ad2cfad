"""Numbers on a rewritten line are written back as they were read (docs/design.md, "Lossless"): `1e400` stays
`1e400` (never `Infinity`), `1.0000000000000000001` is not rounded, big integers stay exact."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from helpers.cli import run_cli
from hypothesis import given
from hypothesis import strategies as st

from compactcli.core import jsonio

LITERALS = ["1e400", "-1E+400", "1.0000000000000000001", "123456789012345678901234567890", "-1e-400",
            "123456789.123456789", "0.1", "18446744073709551616"]  # fmt: skip


def transcript_with(literals: list[str]) -> bytes:
    """Five bash calls with long outputs; each result line carries the literals in "metrics"."""
    metrics = "{" + ",".join(f'"n{i}":{lit}' for i, lit in enumerate(literals)) + "}"
    lines = [json.dumps({"role": "user", "content": "go"})]
    for i in range(5):
        call = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": f"ls {i}"}}
        lines.append(json.dumps({"role": "assistant", "content": [call]}))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"line {i} " * 60}
        lines.append(json.dumps({"role": "user", "content": [result]})[:-1] + f', "metrics": {metrics}}}')
    lines.append(json.dumps({"role": "assistant", "content": "done"}))
    return ("\n".join(lines) + "\n").encode()


def test_micro_keeps_every_number_literal_on_the_lines_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    original = transcript_with(LITERALS)
    path.write_bytes(original)
    run = run_cli("micro", path, text=True)
    assert run.returncode == 0, run.stderr
    new = path.read_bytes().splitlines()
    changed = [line for line, old in zip(new, original.splitlines(), strict=True) if line != old]
    assert len(changed) == 2  # the two oldest results were cleared
    metrics = "{" + ", ".join(f'"n{i}": {lit}' for i, lit in enumerate(LITERALS)) + "}"
    for line in changed:
        assert b"[Previous: used bash]" in line
        assert line.endswith(f'"metrics": {metrics}}}'.encode()), line[-300:]
        assert b"Infinity" not in line


@given(
    big=st.integers(min_value=2**64).map(str) | st.integers(max_value=-(2**64)).map(str),
    digits=st.text("0123456789", min_size=17, max_size=40),
    exponent=st.integers(min_value=309, max_value=99999),
)
def test_a_changed_line_keeps_big_integers_long_fractions_and_huge_exponents(
    big: str, digits: str, exponent: int
) -> None:
    literals = [big, f"1.{digits}1", f"2e{exponent}", f"-3.5e-{exponent + 20}"]
    raw = ("{" + ",".join(f'"n{i}":{lit}' for i, lit in enumerate(literals)) + ',"text":"old"}').encode()
    value, slow = jsonio.loads(raw)
    value["text"] = "new"
    out = jsonio.dumps_like(value, raw, slow)
    assert out == raw.replace(b'"old"', b'"new"')


@given(
    big=st.integers(min_value=2**64, max_value=10**40).map(str),
    digits=st.text("0123456789", min_size=17, max_size=40),
    sign=st.sampled_from(["", "-"]),
    spaced=st.booleans(),
)
def test_literals_orjson_reads_as_floats_are_kept_in_arrays_and_after_whitespace(
    big: str, digits: str, sign: str, spaced: bool
) -> None:
    # orjson reads these (no stdlib fallback) but as floats: the line must still be written back exactly.
    colon, comma = (": ", ", ") if spaced else (":", ",")
    items = comma.join([sign + big, f"{sign}1.{digits}1", "7"])
    raw = f'{{"a"{colon}{{"b"{colon}[{items}]}}{comma}"text"{colon}"old"}}'.encode()
    value, slow = jsonio.loads(raw)
    assert not slow
    value["text"] = "new"
    assert jsonio.dumps_like(value, raw, slow) == raw.replace(b'"old"', b'"new"')


def test_digits_inside_strings_do_not_change_a_line_without_numbers() -> None:
    raw = b'{"text":"old","log":"id 12345678901234567890 took 1.25e300 s, [1.000000000000000001]"}'
    value, slow = jsonio.loads(raw)
    value["text"] = "new"
    assert jsonio.dumps_like(value, raw, slow) == raw.replace(b'"old"', b'"new"')


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from(list('0123456789.eE+-:,[]{}"\\ xZ\n')), max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=20,
)


@given(value=JSON_VALUES)
def test_the_float_check_on_the_sketch_finds_every_float_the_full_search_finds(value: object) -> None:
    # The sketch only skips the full search where it cannot match: same answer on any value's text,
    # strings full of digits, dots, exponents and separators included.
    compact = orjson.dumps(value)
    assert jsonio.holds_float(compact) == (jsonio._FLOAT_OUT.search(compact) is not None)


def test_the_float_check_tells_a_float_from_a_timestamp_and_from_digits_in_text() -> None:
    assert jsonio.holds_float(b'{"a":[1,2.5]}')
    assert jsonio.holds_float(b'{"a":-1e-07}')
    assert jsonio.holds_float(b'{"a":1.5e+300,"b":1}')
    assert not jsonio.holds_float(b'{"t":"2026-01-21T06:21:47.327Z","n":12}')


ODD_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too: orjson cannot write those
    | st.floats()  # NaN and infinities too: orjson writes them as null
    | st.text(),  # control characters, DEL, lone surrogates
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=20,
)


@given(value=ODD_VALUES | JSON_VALUES)
def test_compact_text_is_the_stdlibs_text_of_any_value(value: object) -> None:
    assert jsonio.compact_text(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
