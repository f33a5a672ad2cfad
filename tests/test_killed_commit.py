"""A kill between an in-place commit's manifest line and its rename (docs/design.md, "Files and archives").

The original was archived by a hard link, the manifest line written and fsynced, and the process killed
before the rename: the transcript is unchanged and the archive is a second name of it. The next
command on the file recognises that state and takes it back (the record and the link go), so restore
neither refuses a file with two links nor lists a change that never happened. The kill is real:
strace injects SIGKILL at the rename(2) of the installed command, nothing in the code under test knows.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.cli import run_cli

from compactcli.core.errors import CHECK_FAILED, OK

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "claude-code" / "session.jsonl"
STRACE = shutil.which("strace")


def _strace_works() -> bool:
    if STRACE is None:
        return False
    probe = subprocess.run([STRACE, "-qq", "-o", "/dev/null", "true"], capture_output=True, timeout=60)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _strace_works(), reason="strace is missing or may not trace here")


def killed_at_the_rename(
    *args: object, cwd: Path, calls: str = "rename,renameat,renameat2"
) -> subprocess.CompletedProcess:
    """The installed command, killed by SIGKILL as it enters its first of ``calls``; by default rename(2),
    the replacement."""
    command = [STRACE, "-f", "-qq", "-o", "/dev/null", "-e", f"trace={calls}"]
    command += ["-e", f"inject={calls}:signal=KILL:when=1"]
    return run_cli(*args, prefix=command, cwd=cwd)


def manifest_lines(folder: Path) -> list[dict]:
    manifest = folder / ".transcripts" / "manifest.jsonl"
    return [json.loads(line) for line in manifest.read_bytes().splitlines()] if manifest.exists() else []


def archives(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / ".transcripts").glob("a.*.jsonl"))


@pytest.fixture
def killed(tmp_path: Path) -> Path:
    """A folder whose a.jsonl was left by a micro killed between the manifest line and the rename."""
    transcript = tmp_path / "a.jsonl"
    shutil.copyfile(SAMPLE, transcript)
    done = killed_at_the_rename("micro", transcript, cwd=tmp_path)
    assert done.returncode == -9, done.stderr
    # The state the kill leaves: unchanged file, recorded, its archive a second name of it.
    assert transcript.read_bytes() == SAMPLE.read_bytes()
    assert os.stat(transcript).st_nlink == 2
    [archive] = archives(tmp_path)
    assert os.path.samefile(archive, transcript)
    [record] = manifest_lines(tmp_path)
    assert record["archive"] == str(archive)
    return tmp_path


def test_the_next_micro_takes_the_killed_commit_back_and_restore_puts_the_original_back(killed: Path) -> None:
    transcript = killed / "a.jsonl"
    done = run_cli("micro", "--json", transcript, text=True)
    assert done.returncode == OK, done.stderr
    report = json.loads(done.stdout.splitlines()[0])
    [phantom] = report["stats"]["taken_back"]
    assert not os.path.lexists(phantom)
    assert os.stat(transcript).st_nlink == 1
    [record] = manifest_lines(killed)  # only the replacement that happened
    assert record["archive"] == report["stats"]["archive"] != phantom
    assert transcript.read_bytes() != SAMPLE.read_bytes()

    listed = run_cli("restore", "--list", "--json", transcript, text=True)
    assert listed.returncode == OK
    assert len(json.loads(listed.stdout.splitlines()[0])["stats"]["history"]) == 1
    back = run_cli("restore", transcript, text=True)
    assert back.returncode == OK, back.stderr
    assert transcript.read_bytes() == SAMPLE.read_bytes()


def test_restore_after_the_kill_neither_refuses_nor_lists_a_change_that_never_happened(killed: Path) -> None:
    transcript = killed / "a.jsonl"
    listed = run_cli("restore", "--list", "--json", transcript, text=True)
    assert listed.returncode == OK
    assert json.loads(listed.stdout.splitlines()[0])["stats"]["history"] == []
    assert "killed before its rename" in listed.stderr
    assert manifest_lines(killed) != []  # --list only reads

    done = run_cli("restore", transcript, text=True)
    # Nothing to put back (the file never changed): said as such, not "has 2 hard links" (exit 74).
    assert done.returncode == CHECK_FAILED, done.stderr
    assert "hard links" not in done.stderr and "no archived original" in done.stderr
    assert manifest_lines(killed) == []
    assert archives(killed) == []
    assert os.stat(transcript).st_nlink == 1
    assert transcript.read_bytes() == SAMPLE.read_bytes()


def test_lines_appended_after_the_kill_are_kept_in_what_the_next_run_archives(killed: Path) -> None:
    """The agent went on writing: the phantom archive, the same inode, got the lines too; the next run
    archives the file as it now is, and that is what restore puts back."""
    transcript = killed / "a.jsonl"
    first = SAMPLE.read_bytes().splitlines(keepends=True)[0]
    with open(transcript, "ab") as f:
        f.write(first)
    now = transcript.read_bytes()
    assert run_cli("micro", transcript).returncode == OK
    assert [r["sha256_before"] for r in manifest_lines(killed)] == [hashlib.sha256(now).hexdigest()]
    assert run_cli("restore", transcript).returncode == OK
    assert transcript.read_bytes() == now


def test_a_real_earlier_original_is_what_restore_puts_back_after_a_later_kill(tmp_path: Path) -> None:
    transcript = tmp_path / "a.jsonl"
    shutil.copyfile(SAMPLE, transcript)
    assert run_cli("micro", transcript).returncode == OK
    compacted = transcript.read_bytes()
    shutil.copyfile(SAMPLE, transcript)  # the same inode, the pristine bytes: micro changes it again
    assert killed_at_the_rename("micro", transcript, cwd=tmp_path).returncode == -9
    assert len(manifest_lines(tmp_path)) == 2

    done = run_cli("restore", transcript, text=True)
    assert done.returncode == OK, done.stderr  # the file already holds the original: unchanged
    assert transcript.read_bytes() == SAMPLE.read_bytes() != compacted
    assert len(manifest_lines(tmp_path)) == 1
    assert os.stat(transcript).st_nlink == 1


def test_a_link_left_by_a_kill_before_the_manifest_line_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """Killed after linking the original but before recording it (at the chmod of the new content, the
    first chmod(2) once the archive folder exists): a link no record names, which the next run removes."""
    transcript = tmp_path / "a.jsonl"
    shutil.copyfile(SAMPLE, transcript)
    (tmp_path / ".transcripts").mkdir(mode=0o700)
    os.chmod(tmp_path / ".transcripts", 0o700)
    assert killed_at_the_rename("micro", transcript, cwd=tmp_path, calls="chmod,fchmodat").returncode == -9
    [orphan] = archives(tmp_path)
    assert os.path.samefile(orphan, transcript) and manifest_lines(tmp_path) == []

    assert run_cli("micro", transcript).returncode == OK
    assert not os.path.lexists(orphan)
    [record] = manifest_lines(tmp_path)
    assert [str(p) for p in archives(tmp_path)] == [record["archive"]]
    assert run_cli("restore", transcript).returncode == OK
    assert transcript.read_bytes() == SAMPLE.read_bytes()
