"""Progress bars through a real terminal (a pty): on stderr only when it is a terminal, and never on
a line that printed output shares (docs/design.md, "Reports").

A tiny terminal model replays what the pty received (carriage return, newline, overwriting) and gives
the lines a user would see at the end; they must be exactly the lines the same command prints when
nothing is a terminal.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import termios
from pathlib import Path

import pytest
from helpers.cli import run_cli, start_cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
COLUMNS = 80
BAR = re.compile(r"\d+/\d+ \[|file/s|\|[ #▏▎▍▌▋▊▉█]*\|")
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(args: list[str], cwd: Path) -> str:
    """Run with stdout and stderr on one pty of COLUMNS columns; everything the terminal received."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
    env = dict(os.environ, COLUMNS=str(COLUMNS), TERM="xterm")
    proc = start_cli(*args, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, cwd=cwd, env=env)
    os.close(follower)
    received = bytearray()
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output for 60 s")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    assert proc.wait(timeout=60) in (0, 1)
    return received.decode("utf-8", "replace")


def screen_lines(received: str) -> list[str]:
    """The lines left on a terminal after `received`: `\\r` returns to column 0 and later characters
    overwrite earlier ones; `\\n` starts a new line (the pty turns it into `\\r\\n`)."""
    lines: list[list[str]] = [[]]
    col = 0
    for char in CSI.sub("", received):
        if char == "\r":
            col = 0
        elif char == "\n":
            lines.append([])
            col = 0
        else:
            line = lines[-1]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = char
            col += 1
    return ["".join(line).rstrip() for line in lines]


def run_in_pipes(args: list[str], cwd: Path) -> list[str]:
    done = run_cli(*args, text=True, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines() + done.stderr.splitlines()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Every sample twice: enough files for a bar."""
    for n in range(2):
        for sample in sorted(SAMPLES.glob("*/*.jsonl")):
            shutil.copy(sample, tmp_path / f"{n}-{sample.parent.name}-{sample.name}")
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "."],
        ["estimate", "--top", "2", "-v", "."],
        ["validate", "-v", "."],
        ["micro", "-v", "--dry-run", "."],
        ["micro", "-v", "--jobs", "2", "--check", "."],
    ],
    ids=" ".join,
)
def test_bar_never_shares_a_line_with_output(folder: Path, args: list[str]) -> None:
    received = run_in_terminal(args, folder)
    assert BAR.search(received), "a terminal gets a progress bar"
    seen = [line for line in screen_lines(received) if line.strip()]
    fused = [line for line in seen if BAR.search(line)]
    assert fused == [], "a bar is left on the screen, or fused with output"
    assert sorted(seen) == sorted(line for line in run_in_pipes(args, folder) if line.strip())


def test_no_bar_when_stderr_is_not_a_terminal(folder: Path) -> None:
    leader, follower = pty.openpty()
    try:
        done = run_cli("estimate", ".", stdout=follower, cwd=folder)
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0
    assert not BAR.search(done.stderr.decode())
    assert f"{2 * len(list(SAMPLES.glob('*/*.jsonl')))} files" in done.stderr.decode()
