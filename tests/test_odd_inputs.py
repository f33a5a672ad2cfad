"""Inputs that never end, a run stopped by SIGTERM, and files the user cannot read (docs/design.md, "Files
and archives").
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import run_cli, start_cli
from helpers.other_user import NOBODY, cli_as, needs_root

DATA_ERR, IO_ERR = 65, 74
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "anthropic" / "session.jsonl"


def private_tmp(tmp_path: Path) -> dict:
    spools = tmp_path / "spools"
    spools.mkdir()
    return dict(os.environ, TMPDIR=str(spools))


def test_a_stream_without_line_breaks_is_refused_and_its_spool_bounded(tmp_path: Path) -> None:
    env = private_tmp(tmp_path)
    started = time.monotonic()
    run = run_cli("micro", "/dev/zero", "-o", tmp_path / "out.jsonl", env=env, timeout=120, text=True)
    assert run.returncode == DATA_ERR, run.stderr
    assert "/dev/zero:1: a line longer than 256 MiB without a line break" in run.stderr
    assert time.monotonic() - started < 60
    assert os.listdir(tmp_path / "spools") == []
    assert not (tmp_path / "out.jsonl").exists()
    estimate = run_cli("estimate", "/dev/zero", env=env, timeout=120, text=True)
    assert estimate.returncode == DATA_ERR, estimate.stderr
    assert os.listdir(tmp_path / "spools") == []


def test_sigterm_while_spooling_stdin_leaves_no_spool(tmp_path: Path) -> None:
    env = private_tmp(tmp_path)
    proc = start_cli(
        "micro",
        "-",
        "-o",
        tmp_path / "out.jsonl",
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(SAMPLE.read_bytes())  # and the pipe stays open: the spool waits for more
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not os.listdir(tmp_path / "spools") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.listdir(tmp_path / "spools"), "no spool appeared"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    proc.stdin.close()
    assert proc.returncode == 128 + signal.SIGTERM
    assert os.listdir(tmp_path / "spools") == []
    assert not (tmp_path / "out.jsonl").exists()


@pytest.fixture
def open_dir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="compactcli-shared-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_root
@pytest.mark.parametrize("command", ["micro", "estimate", "validate"])
def test_an_unreadable_file_is_the_same_io_error_named_or_found_in_a_folder(
    open_dir: Path, command: str
) -> None:
    folder = open_dir / "t"
    folder.mkdir()
    secret = folder / "secret.jsonl"
    shutil.copyfile(SAMPLE, secret)
    os.chmod(secret, 0o600)  # root's; nobody cannot read it
    named = cli_as(NOBODY, command, secret, cwd=open_dir)
    found = cli_as(NOBODY, command, folder, cwd=open_dir)
    assert named.returncode == found.returncode == IO_ERR, (named.stderr, found.stderr)
    for run in (named, found):
        assert f"{secret}: Permission denied" in run.stderr
