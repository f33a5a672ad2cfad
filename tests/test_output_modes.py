"""New files take the permission bits of the transcript they were made from, as `cp` does (docs/design.md,
"Trust"): a private transcript (0600, it holds keys) is not copied world-readable by -o (micro, summarize,
replay) or --output-dir, whose manifest is private too; an existing output keeps its mode; archives stay
0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.files import write_jsonl

RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 500}
CALL = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "cat key.pem"}}
RECORDS = [
    {"role": "user", "content": "Show me the key."},
    {"role": "assistant", "content": [CALL]},
    {"role": "user", "content": [RESULT]},
    {"role": "assistant", "content": "Done."},
]


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def transcript(folder: Path, bits: int) -> Path:
    path = folder / "t.jsonl"
    write_jsonl(path, RECORDS)
    os.chmod(path, bits)
    return path


WRITERS = {
    "micro": ("micro", "--keep", "0"),
    "summarize": ("summarize", "--backend", "digest"),
}
# replay -o writes the final context of one transcript: a new file too.
OUTPUT_WRITERS = {**WRITERS, "replay": ("replay", "--backend", "digest")}


MODES = [(0o600, 0o022, 0o600), (0o640, 0o022, 0o640), (0o666, 0o027, 0o640), (0o644, 0o022, 0o644)]


@pytest.mark.parametrize("command", OUTPUT_WRITERS.values(), ids=OUTPUT_WRITERS.keys())
@pytest.mark.parametrize(("source", "umask", "expected"), MODES)
def test_a_new_output_file_takes_the_sources_bits_less_the_umask(
    tmp_path: Path, command: tuple[str, ...], source: int, umask: int, expected: int
) -> None:
    path = transcript(tmp_path, source)
    out = tmp_path / "out.jsonl"
    run = run_cli(*command, "-o", out, path, umask=umask, text=True)
    assert run.returncode == 0, run.stderr
    assert mode(out) == expected


@pytest.mark.parametrize("command", WRITERS.values(), ids=WRITERS.keys())
def test_output_dir_files_and_their_manifest_are_as_private_as_the_source(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = transcript(tmp_path, 0o600)
    out = tmp_path / "out"
    run = run_cli(*command, "--output-dir", out, path, umask=0o022, text=True)
    assert run.returncode == 0, run.stderr
    assert mode(out / "t.jsonl") == 0o600
    assert mode(out / ".compactcli-manifest.jsonl") == 0o600


def test_an_existing_output_keeps_its_mode_and_stdin_gets_the_shells(tmp_path: Path) -> None:
    path = transcript(tmp_path, 0o600)
    out = tmp_path / "out.jsonl"
    out.write_text("")
    os.chmod(out, 0o640)
    assert run_cli("micro", "--keep", "0", "-o", out, path, umask=0o022).returncode == 0
    assert mode(out) == 0o640
    piped = tmp_path / "piped.jsonl"
    run = run_cli(
        "micro", "--keep", "0", "-o", piped, "-", stdin=path.read_bytes(), umask=0o022, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert mode(piped) == 0o644  # as `> piped.jsonl` would make it


def test_in_place_keeps_the_mode_and_the_archive_is_0600(tmp_path: Path) -> None:
    path = transcript(tmp_path, 0o644)
    run = run_cli("micro", "--keep", "0", path, umask=0o000, text=True)
    assert run.returncode == 0, run.stderr
    assert mode(path) == 0o644
    archives = [p for p in (tmp_path / ".transcripts").rglob("*") if p.is_file()]
    assert archives
    assert {mode(p) for p in archives} == {0o600}
