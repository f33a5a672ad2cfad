"""Every registered dialect is covered by the tests' own data: a bundled sample, a property-test
generator and a big-file generator for the bench. The tests iterate the registry, not lists of their own,
so a new dialect that forgets one of these fails here by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import bigfile, strategies

from compactcli import dialects

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

# Dialects the bench cannot generate yet, each with why; remove the entry when its generator lands.
NO_BIG_FILE_YET = {
    "codex": "a rollout's event records are not generated at scale yet",
    "pi": "a session tree is not generated at scale yet",
}


@pytest.mark.parametrize("name", dialects.NAMES)
def test_every_dialect_has_a_bundled_sample(name: str) -> None:
    assert sorted((SAMPLES / name).rglob("*.jsonl")), f"samples/{name}/ holds no .jsonl sample"


@pytest.mark.parametrize("name", dialects.NAMES)
def test_every_dialect_has_a_property_generator(name: str) -> None:
    assert name in strategies.GENERATORS, f"tests/helpers/strategies.py has no generator for {name}"


def test_every_dialect_has_a_big_file_generator_or_says_why_not() -> None:
    generated = {d.removesuffix("-repr") for d in bigfile.DIALECTS}
    assert set(dialects.NAMES) - generated == set(NO_BIG_FILE_YET)
    assert generated <= set(dialects.NAMES)
