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


def test_a_key_whose_place_differs_only_by_slashes_is_refused_by_name(tmp_path: Path) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    first, twin = (json.dumps({"role": "user", "content": text}).encode() + b"\n" for text in ("one", "two"))
    fs.pipe_file("/twins-bucket/a//b.jsonl", first)
    fs.pipe_file("/twins-bucket/a/b.jsonl", twin)
    fs.pipe_file("/twins-bucket/e.jsonl", LINE)
    bucket = "memory://twins-bucket"
    out = tmp_path / "out"
    try:
        result = invoke("micro", "--output-dir", out, bucket)
    finally:
        fs.rm("/twins-bucket", recursive=True)
    assert result.exit_code == 74, result.stderr
    # The listing's order decides which is second; that one is refused, naming the first.
    said = "not written under --output-dir, where it would be written to the same path as"
    keys = {"a//b.jsonl": first, "a/b.jsonl": twin}
    refused = [key for key in keys if f"{bucket}/{key}: {said} " in result.stderr]
    assert len(refused) == 1, result.stderr
    (kept,) = set(keys) - set(refused)
    assert f"{said} {bucket}/{kept} " in result.stderr
    assert (out / "a" / "b.jsonl").read_bytes() == keys[kept]  # the twin is not written over it
    assert (out / "e.jsonl").read_bytes() == LINE
