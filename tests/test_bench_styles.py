"""The bench's two line styles (scripts/make_big.py --style): the same records in both, and micro keeps the
style of every line it changes (docs/design.md, "Lossless"), so the spaced files measure what they claim."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from helpers.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent


def make_big():
    spec = importlib.util.spec_from_file_location("make_big", ROOT / "scripts" / "make_big.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE_BIG = make_big()


@pytest.mark.parametrize("dialect", MAKE_BIG.DIALECTS)
def test_spaced_lines_hold_the_same_records_and_micro_keeps_their_style(dialect: str, tmp_path: Path) -> None:
    compact, spaced = tmp_path / "compact.jsonl", tmp_path / "spaced.jsonl"
    MAKE_BIG.generate(compact, 0.3, dialect, 3, "compact")
    MAKE_BIG.generate(spaced, 0.3, dialect, 3, "spaced")
    compact_lines = compact.read_bytes().splitlines()
    spaced_lines = spaced.read_bytes().splitlines()
    # The same records (the spaced file stops at its size a little earlier: its lines are longer).
    assert 20 < len(spaced_lines) <= len(compact_lines)
    for a, b in zip(compact_lines, spaced_lines, strict=False):
        assert json.loads(a) == json.loads(b)
        assert b'", "' in b or b'": ' in b
        assert b.isascii()
    out = tmp_path / "out.jsonl"
    run = run_cli("micro", "-q", spaced, "-o", out)
    assert run.returncode == 0, run.stderr
    after = out.read_bytes().splitlines()
    changed = [line for line, before in zip(after, spaced_lines, strict=True) if line != before]
    assert changed, "micro cleared nothing: the test checks no changed line"
    for line in changed:
        assert line == json.dumps(json.loads(line)).encode(), line[:200]
