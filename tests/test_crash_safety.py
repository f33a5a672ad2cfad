"""kill -9 during an in-place `compactcli micro`: the transcript is never left half-written.

After every kill the transcript is byte-identical either to the original or to the full result;
when it changed, the original is in the archive folder byte for byte and the manifest names it;
whatever the interrupted run left beside the transcript is a dot-file that discovery skips, and a
rerun on the folder completes the job. A file in the archive folder under an archive name holds the
original, whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import bigfile
from helpers.cli import run_cli, start_cli

SEED = 20261130
TRIALS = 15
DIALECT = "claude-code"
TURNS = 1800  # about 31 MB with 8000-character results and their toolUseResult copies
RESULT_CHARS = 8000
ARCHIVE_RE = re.compile(r"^(?P<stem>.+)\.\d{8}T\d{12}Z\.(?P<sha>[0-9a-f]{12})\.jsonl$")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def manifest_records(folder: Path) -> list[dict]:
    manifest = folder / ".transcripts" / "manifest.jsonl"
    if not manifest.exists():
        return []
    # Every line must parse: a manifest line is one write(2), which a kill cannot tear.
    return [json.loads(line) for line in manifest.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The original, the result micro -o gives on a copy, and how long an in-place run takes."""
    root = tmp_path_factory.mktemp("big")
    original = root / "original.jsonl"
    _, generated = bigfile.write(original, DIALECT, turns=TURNS, result_chars=RESULT_CHARS, seed=1)
    size = original.stat().st_size
    assert 20e6 <= size <= 40e6, size

    copy = root / "copy.jsonl"
    shutil.copyfile(original, copy)
    result = root / "result.jsonl"
    run = run_cli("micro", copy, "-o", result)
    assert run.returncode == 0, run.stderr
    full = result.read_bytes()
    # The generator knows the result independently; both must agree before kills are judged by it.
    assert full == generated
    assert copy.read_bytes() == original.read_bytes()

    timing = root / "timing"
    timing.mkdir()
    shutil.copyfile(original, timing / "t.jsonl")
    started = time.monotonic()
    run = run_cli("micro", timing / "t.jsonl")
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    assert (timing / "t.jsonl").read_bytes() == full
    shutil.rmtree(timing)
    return {
        "path": original,
        "sha_before": file_sha(original),
        "size_before": size,
        "sha_after": sha(full),
        "size_after": len(full),
        "seconds": elapsed,
    }


def judge(folder: Path, big: dict) -> tuple[str, list[str]]:
    """Check one interrupted run; return what state it was left in and any damaged archive files."""
    transcript = folder / "t.jsonl"
    now = file_sha(transcript)
    assert now in (big["sha_before"], big["sha_after"]), "transcript is neither original nor result"

    beside = sorted(p.name for p in folder.iterdir() if p.name not in ("t.jsonl", ".transcripts"))
    assert all(name.startswith(".") for name in beside), f"non-dot files left beside it: {beside}"

    archive_dir = folder / ".transcripts"
    archives = sorted(archive_dir.glob("t.*.jsonl")) if archive_dir.exists() else []
    assert all(ARCHIVE_RE.match(p.name) for p in archives), archives
    intact = [p for p in archives if file_sha(p) == big["sha_before"]]
    damaged = [p.name for p in archives if p not in intact]

    records = [r for r in manifest_records(folder) if r["source"] == str(transcript.resolve())]
    for record in records:
        archived = Path(record["archive"])
        assert archived.parent == archive_dir.resolve()
        assert archived.exists(), f"manifest names a missing archive: {archived}"
        assert record["sha256_before"] == big["sha_before"] == file_sha(archived)
        assert record["size_before"] == big["size_before"]
        assert record["sha256_after"] == big["sha_after"]
        assert record["size_after"] == big["size_after"]
        assert record["command"] == "micro"

    if now == big["sha_after"]:
        assert intact, "the transcript changed but no archive holds the original bytes"
        assert records, "the transcript changed but the manifest has no line for it"
        return "replaced", damaged
    if records:
        return "recorded, not replaced", damaged
    return ("archived, not recorded" if intact else "untouched"), damaged


def interrupted_run(
    folder: Path, big: dict, kill: Callable[[subprocess.Popen], None], mode: int = 0o640
) -> tuple[str, list[str]]:
    """Run micro in place on a fresh copy until `kill` ends it, judge the remains, and rerun.

    Returns the state the kill left and the archive files that do not hold the original. A `mode`
    writable by the group makes the run copy the original into the archive folder; otherwise the
    archive is a hard link to it.
    """
    folder.mkdir()
    transcript = folder / "t.jsonl"
    shutil.copyfile(big["path"], transcript)
    os.chmod(transcript, mode)
    proc = start_cli("micro", transcript, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        kill(proc)
    finally:
        proc.kill()
        code = proc.wait()
    state, damaged = judge(folder, big)
    if code == 0:
        state = "finished"

    rerun = run_cli("micro", folder, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert file_sha(transcript) == big["sha_after"], "the rerun did not finish the job"
    assert os.stat(transcript).st_mode & 0o777 == mode
    records = [r for r in manifest_records(folder) if r["source"] == str(transcript.resolve())]
    assert records and records[-1]["sha256_after"] == big["sha_after"]
    assert file_sha(Path(records[-1]["archive"])) == big["sha_before"]
    shutil.rmtree(folder)  # 30 MB per trial
    return state, damaged


def test_kill_9_at_random_moments_never_leaves_a_half_written_transcript(tmp_path: Path, big: dict) -> None:
    rng = random.Random(SEED)
    states: Counter[str] = Counter()
    damaged: list[str] = []
    for trial in range(TRIALS):
        # Most kills in the second half, where the result, the archive and the manifest are written.
        share = rng.uniform(0.05, 0.4) if trial % 4 == 0 else rng.uniform(0.4, 1.05)
        delay = share * big["seconds"]

        def after_delay(proc: subprocess.Popen, delay: float = delay) -> None:
            time.sleep(delay)

        state, bad = interrupted_run(tmp_path / f"trial{trial}", big, after_delay)
        states[state] += 1
        damaged += [f"trial {trial}, killed after {delay:.3f}s: {name}" for name in bad]
    # Where random kills land depends on the machine's load; the phase-targeted test below makes sure
    # every phase is hit. Here every outcome, wherever it landed, must be whole.
    print(f"\nkill -9 outcomes over {TRIALS} trials: {dict(states)}")
    assert not damaged, f"truncated archives left under an archive name: {damaged}"


def _temp_beside(folder: Path) -> bool:
    return any(p.name.startswith(".t.jsonl") for p in folder.iterdir())


def _partial_archive(folder: Path, big: dict) -> bool:
    """A copy of the original under way in the archive folder, whatever it is named meanwhile."""
    archive_dir = folder / ".transcripts"
    if not archive_dir.exists():
        return False
    return any(
        0 < p.stat().st_size < big["size_before"]
        for p in archive_dir.iterdir()
        if p.name != "manifest.jsonl" and not p.name.endswith(".lock")
    )


def _archive_named(folder: Path) -> bool:
    """An archive under its final name (a hard link to the original appears at once, whole)."""
    archive_dir = folder / ".transcripts"
    return archive_dir.exists() and any(ARCHIVE_RE.match(p.name) for p in archive_dir.iterdir())


def _manifest_written(folder: Path) -> bool:
    manifest = folder / ".transcripts" / "manifest.jsonl"
    return manifest.exists() and manifest.stat().st_size > 0


@pytest.mark.parametrize(
    "phase", ["writing the result", "copying the archive", "linking the archive", "after the manifest"]
)
def test_kill_9_in_each_phase(tmp_path: Path, big: dict, phase: str) -> None:
    """Kills timed by what the run has put on disk, so each phase is hit on every run."""
    folder = tmp_path / "t"
    reached = {
        "writing the result": lambda: _temp_beside(folder),
        "copying the archive": lambda: _partial_archive(folder, big),
        "linking the archive": lambda: _archive_named(folder),
        "after the manifest": lambda: _manifest_written(folder),
    }[phase]
    # A file writable by its group is never linked into the private archive folder: it is copied.
    mode = 0o660 if phase == "copying the archive" else 0o640
    seen = []

    def when_reached(proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if reached():
                    proc.send_signal(signal.SIGKILL)
                    seen.append(phase)
                    return
            except FileNotFoundError:
                pass  # a file vanished between listing and stat
            time.sleep(0.0002)

    state, damaged = interrupted_run(folder, big, when_reached, mode)
    assert seen, f"the run ended before {phase!r} was observed"
    print(f"\nkilled while {phase}: {state}")
    assert not damaged, f"truncated archives left under an archive name: {damaged}"
