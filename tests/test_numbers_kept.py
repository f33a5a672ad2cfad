"""Numbers on a rewritten line are written back as they were read (DESIGN.md 4): `1e400` stays
`1e400` (never `Infinity`), `1.0000000000000000001` is not rounded, big integers stay exact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from compactcli import jsonio

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
    run = subprocess.run(
        [sys.executable, "-m", "compactcli", "micro", str(path)], capture_output=True, text=True
    )
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
