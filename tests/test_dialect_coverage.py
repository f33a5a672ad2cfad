"""Every registered dialect is covered by the tests' own data: a bundled sample, a property-test
generator and a big-file generator for the bench (scripts/make_big.py). The tests iterate the registry,
not lists of their own, so a new dialect that forgets one of these fails here by name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from helpers import bigfile, strategies

from compactcli import dialects

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

# Dialects scripts/bench.py cannot generate yet (scripts/make_big.py), each with why; remove the entry
# when its generator lands.
NO_BIG_FILE_YET: dict[str, str] = {}


def bench_dialects() -> tuple[str, ...]:
    spec = importlib.util.spec_from_file_location("make_big", ROOT / "scripts" / "make_big.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DIALECTS


@pytest.mark.parametrize("name", dialects.NAMES)
def test_every_dialect_has_a_bundled_sample(name: str) -> None:
    assert sorted((SAMPLES / name).rglob("*.jsonl")), f"samples/{name}/ holds no .jsonl sample"


@pytest.mark.parametrize("name", dialects.NAMES)
def test_every_dialect_has_a_property_generator(name: str) -> None:
    assert name in strategies.GENERATORS, f"tests/helpers/strategies.py has no generator for {name}"


def test_the_bench_generates_every_dialect_or_says_why_not() -> None:
    generated = set(bench_dialects())
    assert set(dialects.NAMES) - generated == set(NO_BIG_FILE_YET)
    assert generated <= set(dialects.NAMES)


def test_the_tests_big_files_are_in_registered_dialects() -> None:
    assert {d.removesuffix("-repr") for d in bigfile.DIALECTS} <= set(dialects.NAMES)
