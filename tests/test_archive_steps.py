"""Archive before replace, step by step: an in-place `micro` is stopped dead right after each call that
changes the disk (os.write, fsync, link, replace, unlink, chmod...), one run per step, and the folder is
checked after each stop (docs/design.md, "Archive before replace").

After any stop: the transcript is the original or the whole result, nothing else; once it is the result,
the archive holding the original and its manifest line are already on disk; a file under an archive's final
name is always complete; and a run after the stop finishes the job, with `restore` bringing back the
original. Unlike the kill -9 storm in test_crash_safety.py, every step is hit, every time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import run_cli

LONG = "x" * 300
STOPPED = 86  # the exit status of a run stopped by the hook below

# Counts the calls that change the disk and ends the process, without cleanup, right after call STOP_AT.
HOOK = r"""
import functools, os, sys

stop_at, seen = int(sys.argv[1]), 0
def stopping(call):
    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        global seen
        result = call(*args, **kwargs)
        seen += 1
        if seen == stop_at:
            os._exit(86)
        return result
    return wrapper

steps = ("write", "fsync", "link", "replace", "rename", "unlink", "chmod", "fchmod", "ftruncate", "mkdir")
for name in steps:
    setattr(os, name, stopping(getattr(os, name)))

from compactcli.cli import main
sys.argv = ["compactcli", *sys.argv[2:]]
main()
"""


def transcript() -> bytes:
    records: list[dict] = [{"role": "user", "content": "Fix the build."}]
    for i in range(5):
        use = {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {"command": "make"}}
        records.append({"role": "assistant", "content": [use]})
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": LONG}],
            }
        )
    records.append({"role": "assistant", "content": "Done."})
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


ORIGINAL = transcript()
# Results 1 and 2 of 5 are older than the last three: cleared, by hand.
RESULT = ORIGINAL.replace(
    json.dumps({"type": "tool_result", "tool_use_id": "toolu_0", "content": LONG}).encode(),
    json.dumps(
        {"type": "tool_result", "tool_use_id": "toolu_0", "content": "[Previous: used bash]"}
    ).encode(),
).replace(
    json.dumps({"type": "tool_result", "tool_use_id": "toolu_1", "content": LONG}).encode(),
    json.dumps(
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[Previous: used bash]"}
    ).encode(),
)


def stopped_run(folder: Path, step: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", HOOK, str(step), "micro", str(folder / "t.jsonl")],
        cwd=folder,
        capture_output=True,
        timeout=60,
    )


def manifest_archives(archive_dir: Path) -> list[str]:
    """The archives named by the manifest's complete lines (a torn last line is skipped, as readers do)."""
    manifest = archive_dir / "manifest.jsonl"
    named = []
    for line in manifest.read_bytes().splitlines() if manifest.exists() else []:
        try:
            named.append(json.loads(line)["archive"])
        except ValueError:
            continue
    return named


def check_state(folder: Path, step: int) -> str:
    now = (folder / "t.jsonl").read_bytes()
    assert now in (ORIGINAL, RESULT), f"step {step}: the transcript is half-written"
    visible = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    assert visible == ["t.jsonl"], f"step {step}: left beside the transcript: {visible}"
    archive_dir = folder / ".transcripts"
    finals = sorted(archive_dir.glob("t.*.jsonl")) if archive_dir.exists() else []
    for archive in finals:
        assert archive.read_bytes() == ORIGINAL, f"step {step}: incomplete archive {archive.name}"
    if now == RESULT:
        assert finals, f"step {step}: replaced before the original was archived"
        assert {str(a.resolve()) for a in finals} & set(manifest_archives(archive_dir)), (
            f"step {step}: replaced before the manifest named the archive"
        )
        return "replaced"
    return "archived" if finals else "untouched"


def test_sanity_of_the_hand_written_result(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_bytes(ORIGINAL)
    assert RESULT != ORIGINAL
    run = run_cli("micro", tmp_path / "t.jsonl")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "t.jsonl").read_bytes() == RESULT


def test_stopping_after_each_step_never_loses_the_original(tmp_path: Path) -> None:
    states = []
    for step in range(1, 200):
        folder = tmp_path / f"step{step}"
        folder.mkdir()
        (folder / "t.jsonl").write_bytes(ORIGINAL)
        run = stopped_run(folder, step)
        if run.returncode == 0:  # fewer steps than `step`: the run went through
            assert (folder / "t.jsonl").read_bytes() == RESULT
            break
        assert run.returncode == STOPPED, run.stderr
        states.append(check_state(folder, step))

        again = run_cli("micro", folder / "t.jsonl", cwd=folder)
        assert again.returncode == 0, (step, again.stderr)
        assert (folder / "t.jsonl").read_bytes() == RESULT, f"step {step}: the next run did not finish"
        back = run_cli("restore", folder / "t.jsonl", cwd=folder)
        assert back.returncode == 0, (step, back.stderr)
        assert (folder / "t.jsonl").read_bytes() == ORIGINAL, f"step {step}: restore did not bring it back"
    else:
        pytest.fail("the run never finished")
    # The stops fell before the archive, between archive and replace, and after the replace.
    assert {"untouched", "archived", "replaced"} <= set(states), states
