"""Corpus tier: validate and micro over every real transcript in ../shared/corpus, each against its row
in tests/helpers/corpus.py (dialect, violations, whether micro changes it)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.corpus import EXPECTED, corpus_files, corpus_params, expectation, name, needs_corpus
from helpers.invariants import assert_only_results_cleared, is_default_placeholder

pytestmark = pytest.mark.corpus


def torn_lines(data: bytes) -> set[int]:
    torn = set()
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            json.loads(raw)
        except ValueError:
            torn.add(number)
    return torn


@needs_corpus
def test_every_corpus_file_has_one_expectation() -> None:
    found = {name(path) for path in corpus_files()}
    assert found == set(EXPECTED), (sorted(found - set(EXPECTED)), sorted(set(EXPECTED) - found))
    # Sub-agent files in nested folders are part of the corpus.
    assert any(path.count("/") > 1 for path in found)


@pytest.mark.parametrize("original", corpus_params())
def test_validate_on_corpus_file(original: Path) -> None:
    expect = expectation(original)
    assert torn_lines(original.read_bytes()) == set(expect.torn)
    run = run_cli("validate", "--on-invalid", "keep", "--json", original, text=True)
    assert run.returncode == expect.validate_exit, run.stderr
    if expect.dialect is None:
        assert f"{original}:" in run.stderr
        return
    report = json.loads(run.stdout)
    assert report["stats"]["dialect"] == expect.dialect
    assert Counter(v["rule"] for v in report["stats"]["violations"]) == Counter(expect.violations)


@pytest.mark.parametrize("original", corpus_params())
def test_micro_on_corpus_file(original: Path, tmp_path: Path) -> None:
    expect = expectation(original)
    work = tmp_path / original.name
    shutil.copyfile(original, work)
    before = work.read_bytes()

    run = run_cli("micro", "--on-invalid", "keep", "--json", work, cwd=tmp_path, text=True)
    after = work.read_bytes()
    archives = list((tmp_path / ".transcripts").glob(f"{work.stem}.*.jsonl"))
    if expect.dialect is None:
        assert run.returncode == 65, run.stderr
        assert after == before and archives == []
        return
    assert run.returncode == 0, run.stderr
    assert (after != before) == expect.micro_changes
    cleared = assert_only_results_cleared(expect.dialect, before, after, is_default_placeholder)
    assert (cleared > 0) == expect.micro_changes
    if expect.micro_changes:
        assert len(archives) == 1 and archives[0].read_bytes() == before
    else:
        assert archives == []
    if not expect.violations:
        check = run_cli("validate", work, text=True)
        assert check.returncode == 0, check.stdout

    again = run_cli("micro", "--on-invalid", "keep", work, cwd=tmp_path)
    assert again.returncode == 0 and work.read_bytes() == after, "micro must be idempotent"


COMMANDS = {
    "micro": ("micro",),
    "summarize": ("summarize", "--backend", "digest"),
    "estimate": ("estimate",),
    "validate": ("validate",),
    "replay": ("replay", "--backend", "digest", "-o", "out.jsonl"),
}
REFUSED = [
    pytest.param(path, id=name(path)) for path in corpus_files() if expectation(path).dialect is None
] or [
    pytest.param(
        None,
        id="none",
        marks=pytest.mark.skip(
            reason="every corpus file is read by a dialect; tests/test_detection.py refuses fixtures"
        ),
    )
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("original", REFUSED)
def test_corpus_file_in_a_format_no_dialect_reads_is_refused(original: Path, command: str, tmp_path: Path):
    work = tmp_path / original.name
    shutil.copyfile(original, work)
    run = run_cli(*COMMANDS[command], "--on-invalid", "keep", work, cwd=tmp_path, text=True)
    assert run.returncode == 65, run.stderr
    assert f"{work}:1: not a transcript compactcli reads" in run.stderr
    assert expectation(original).refused_as in run.stderr
    assert work.read_bytes() == original.read_bytes()
    assert list(tmp_path.rglob("*.jsonl")) == [work], "nothing archived or written"
