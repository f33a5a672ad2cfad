"""Optional tier: micro and validate over the real transcripts in ../shared/corpus, when it is there."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compactcli.transcript import detect_dialect
from tests.invariants import assert_only_results_cleared, is_default_placeholder, violations

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
FILES = sorted(CORPUS.glob("*/*.jsonl")) if CORPUS.is_dir() else []

pytestmark = pytest.mark.corpus


def compactcli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "compactcli", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(not FILES, reason="../shared/corpus is not present")
@pytest.mark.parametrize("original", FILES, ids=lambda p: p.name)
def test_micro_on_corpus_file(original: Path, tmp_path: Path):
    work = tmp_path / original.name
    shutil.copyfile(original, work)
    before = work.read_bytes()
    with open(work, "rb") as f:
        dialect = detect_dialect(f)
    valid_before = not violations(dialect, before)

    run = compactcli("micro", "--on-invalid", "keep", "--json", str(work), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    after = work.read_bytes()
    cleared = assert_only_results_cleared(dialect, before, after, is_default_placeholder)
    if after != before:
        archives = list((tmp_path / ".transcripts").glob(f"{work.stem}.*.jsonl"))
        assert len(archives) == 1 and archives[0].read_bytes() == before
        assert cleared > 0
    if valid_before:
        assert violations(dialect, after) == []

    again = compactcli("micro", "--on-invalid", "keep", str(work), cwd=tmp_path)
    assert again.returncode == 0 and work.read_bytes() == after, "micro must be idempotent"
