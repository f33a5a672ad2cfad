"""Inputs that real folders hold and a careful run must survive: odd file names, unreadable folders,
byte-order marks, pipes; and what the summary says for previews. Each through the installed command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DATA_ERR, IO_ERR = 65, 74
LONG = "x" * 300


def compactcli(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "compactcli", *args],
        cwd=cwd,
        capture_output=True,
        timeout=60,
        **kwargs,
    )


def transcript(results: int = 5) -> bytes:
    """A user task, `results` bash calls each answered by 300 characters, a final answer."""
    records: list[dict] = [{"role": "user", "content": "Fix the build."}]
    for i in range(results):
        call = {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {"command": "make"}}
        records.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": LONG}
        records.append({"role": "user", "content": [result]})
    records.append({"role": "assistant", "content": "Done."})
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def cleared(data: bytes) -> int:
    return data.count(b'"[Previous: used bash]"')


# ------------------------------------------------------------------ file names that are not UTF-8


def test_file_name_not_utf8_is_compacted_recorded_and_restorable(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.jsonl")  # Latin-1 name, as old tools write them
    original = transcript()
    (tmp_path / name).write_bytes(original)
    (tmp_path / "plain.jsonl").write_bytes(original)

    run = compactcli("micro", "--json", ".", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # 5 results, the last 3 kept: 2 cleared in each file.
    assert cleared((tmp_path / name).read_bytes()) == 2
    assert cleared((tmp_path / "plain.jsonl").read_bytes()) == 2
    assert len(run.stdout.splitlines()) == 2
    assert b"Traceback" not in run.stderr

    listed = compactcli("restore", "--list", name, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    back = compactcli("restore", name, cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / name).read_bytes() == original
