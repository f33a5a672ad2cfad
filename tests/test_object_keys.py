"""Every key an object-store listing gives is processed or reported (docs/design.md, "Many machines"):
a key with `//` is read under its own name, one with a `..` segment is read, and refused by name where it
would be a path (--output-dir). fsspec's in-memory file system stands in for the bucket: the keys are
its own names, as an object store's are."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import invoke

LINE = json.dumps({"role": "user", "content": "Summarize the ledger."}).encode() + b"\n"
KEYS = ("e.jsonl", "a//b.jsonl", "c/../d.jsonl")


@pytest.fixture
def bucket() -> Iterator[str]:
    import fsspec

    fs = fsspec.filesystem("memory")
    for key in KEYS:
        fs.pipe_file(f"/keys-bucket/{key}", LINE)
    try:
        yield "memory://keys-bucket"
    finally:
        fs.rm("/keys-bucket", recursive=True)


def test_every_listed_key_is_read_under_its_own_name(bucket: str) -> None:
    result = invoke("estimate", "--format", "json", bucket)
    assert result.exit_code == 0, result.stderr
    paths = [json.loads(line)["path"] for line in result.stdout.splitlines() if '"path"' in line]
    assert sorted(paths) == sorted(f"{bucket}/{key}" for key in KEYS)


def test_a_dot_dot_key_is_reported_not_written_outside_the_output_dir(bucket: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("micro", "--output-dir", out, bucket)
    assert result.exit_code == 74, result.stderr
    assert f"{bucket}/c/../d.jsonl: the key has a '.' or '..' segment" in result.stderr
    assert (out / "e.jsonl").exists() and (out / "a" / "b.jsonl").exists()
    assert not (out / "d.jsonl").exists() and not (tmp_path / "d.jsonl").exists()
