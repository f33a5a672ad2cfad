"""Temp files of killed runs are removed by a later run (docs/design.md, "Concurrency"): a writer holds a
lock on its temp file from its creation, the kernel drops it when the writer is killed, and the next
run that writes in that folder removes the temp files of its own naming that nobody holds and nobody
touched for a minute. A live writer's temp file, a fresh one and another program's file stay."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers.cli import run_cli
from helpers.files import write_jsonl

RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 500}
CALL = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
RECORDS = [
    {"role": "user", "content": "List the files."},
    {"role": "assistant", "content": [CALL]},
    {"role": "user", "content": [RESULT]},
    {"role": "assistant", "content": "Done."},
]

# A writer of a replacement of argv[1] that dies by SIGKILL (or, with "live", waits to be killed) after
# writing part of it: what a kill -9 of micro in the middle of its write leaves.
WRITER = r"""
import os, signal, sys, time
from pathlib import Path
from compactcli.storage.replace import Replacement
repl = Replacement(Path(sys.argv[1]))
repl.file.write(b'{"role": "user", "content": "half')
repl.file.flush()
print(repl.temp_path, flush=True)
if sys.argv[2] == "live":
    time.sleep(120)
os.kill(os.getpid(), signal.SIGKILL)
"""


def transcript(folder: Path) -> Path:
    path = folder / "t.jsonl"
    write_jsonl(path, RECORDS)
    return path


def aged(path: Path, seconds: float = 600) -> Path:
    past = time.time() - seconds
    os.utime(path, (past, past))
    return path


def killed_writer_temp(target: Path) -> Path:
    done = subprocess.run([sys.executable, "-c", WRITER, str(target), "die"], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    temp = Path(done.stdout.strip())
    assert temp.exists() and temp.name.startswith(".t.jsonl.") and temp.name.endswith(".tmp")
    return temp


def test_a_killed_writers_temp_file_is_removed_by_the_next_run(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    temps = [aged(killed_writer_temp(path)) for _ in range(3)]

    run = run_cli("micro", "--keep", "0", path, text=True)

    assert run.returncode == 0, run.stderr
    assert [temp for temp in temps if temp.exists()] == []
    assert "x" * 500 not in path.read_text()  # the run did its own work too
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_live_writers_fresh_and_foreign_temp_files_stay(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    live = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), "live"], stdout=subprocess.PIPE, text=True
    )
    try:
        held = aged(Path(live.stdout.readline().strip()))  # type: ignore[union-attr]
        fresh = killed_writer_temp(path)  # its writer is dead, but it was written to a moment ago
        foreign = tmp_path / ".notes.txt.abcd1234.tmp"  # no notes.txt here: not one of ours
        foreign.write_text("someone else's")
        aged(foreign)

        run = run_cli("micro", "--keep", "0", path, text=True)

        assert run.returncode == 0, run.stderr
        assert held.exists() and fresh.exists() and foreign.exists()
    finally:
        live.kill()
        live.wait()
