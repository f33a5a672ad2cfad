"""The archive as a hard link to the original (docs/design.md, "Archive before replace").

Where the archive folder would accept the original as its own member, the archive is the original's
inode itself, named in the folder before the replacement: no copy. Everywhere else (another file
system, a file of another account, writable by group or others, with a second name) it is a copy.
Either way the archive holds the original's bytes, is private (0600) and restores. Real files, real
processes; nothing is mocked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.other_user import NOBODY

from compactcli.core.errors import BUSY, IO_ERR, Busy, CompactError
from compactcli.storage import writers
from compactcli.storage.fileio import snapshot
from compactcli.storage.locks import file_lock
from compactcli.storage.manifest import ArchiveRecord, _ManifestAppend
from compactcli.storage.replace import Replacement
from compactcli.storage.restore import restore

ORIGINAL = b'{"role":"user","content":"hi"}\r\n{"role":"assistant","content":"caf\xc3\xa9"}\n'
COMPACTED = b'{"role":"user","content":"[summary]"}\n'
APPENDED = b'{"role":"user","content":"written while it was open"}\n'
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "anthropic" / "session.jsonl"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def make(path: Path, perm: int = 0o644) -> Path:
    path.write_bytes(ORIGINAL)
    os.chmod(path, perm)
    return path


def compact(path: Path, archive_dir: Path | None = None) -> ArchiveRecord:
    state = snapshot(path)
    read = path.read_bytes()
    with file_lock(path), Replacement(path) as repl:
        repl.file.write(COMPACTED)
        return repl.commit_in_place(
            expected=state, archive_dir=archive_dir, command="micro", options={}, expected_sha256=sha(read)
        )


def archives(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name != "manifest.jsonl")


def test_the_archive_is_the_original_inode_made_private(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl", 0o644)
    original_inode = os.stat(src).st_ino

    record = compact(src)

    archive = Path(record.archive)
    assert archives(tmp_path / ".transcripts") == [archive]
    assert os.stat(archive).st_ino == original_inode  # linked, not copied
    assert os.stat(archive).st_nlink == 1  # the transcript's name now holds the new file
    assert archive.read_bytes() == ORIGINAL
    assert mode(archive) == 0o600  # as private as a copy, though the original was 0644
    assert (record.sha256_before, record.size_before) == (sha(ORIGINAL), len(ORIGINAL))
    assert archive.name.endswith(f".{sha(ORIGINAL)[:12]}.jsonl")
    assert src.read_bytes() == COMPACTED and mode(src) == 0o644
    assert os.stat(src).st_ino != original_inode

    restore(src, None)
    assert src.read_bytes() == ORIGINAL


def _second_name(src: Path) -> Callable[[], None]:
    other = src.with_name("other-name.jsonl")
    os.link(src, other)
    return lambda: None if other.read_bytes() == ORIGINAL else pytest.fail("the second name changed")


def _group_writable(src: Path) -> Callable[[], None]:
    os.chmod(src, 0o664)
    return lambda: None


def _another_account(src: Path) -> Callable[[], None]:
    if os.geteuid() != 0:
        pytest.skip("needs root: a file of another uid")
    os.chown(src, NOBODY, NOBODY)
    return lambda: None


@pytest.mark.parametrize("why", [_second_name, _group_writable, _another_account])
def test_an_original_the_folder_would_not_accept_as_its_own_is_copied(
    tmp_path: Path, why: Callable[[Path], Callable[[], None]]
) -> None:
    src = make(tmp_path / "t.jsonl")
    original_inode = os.stat(src).st_ino
    check_other = why(src)

    record = compact(src)

    archive = Path(record.archive)
    assert os.stat(archive).st_ino != original_inode  # a copy
    assert archive.read_bytes() == ORIGINAL and mode(archive) == 0o600
    assert record.sha256_before == sha(ORIGINAL)
    check_other()
    restore(src, None)
    assert src.read_bytes() == ORIGINAL


@pytest.fixture
def other_file_system() -> Iterator[Path]:
    """A folder on another file system than pytest's tmp_path (tmpfs at /dev/shm)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm: no second file system to archive onto")
    folder = Path(tempfile.mkdtemp(prefix="compactcli-archive-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_an_archive_folder_on_another_file_system_gets_a_copy(
    tmp_path: Path, other_file_system: Path
) -> None:
    src = tmp_path / "t.jsonl"
    shutil.copyfile(SAMPLE, src)
    original = src.read_bytes()
    if os.stat(src).st_dev == os.stat(other_file_system).st_dev:
        pytest.skip("/dev/shm is on the same file system as the test's folder")
    folder = other_file_system / "archives"

    assert run_cli("micro", src, "--archive-dir", folder, text=True).returncode == 0
    assert src.read_bytes() != original

    [archive] = archives(folder)
    assert archive.read_bytes() == original and mode(archive) == 0o600
    assert run_cli("restore", src, "--archive-dir", folder, text=True).returncode == 0
    assert src.read_bytes() == original


HOLDER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("open", flush=True)
sys.stdin.readline()
os.write(fd, sys.argv[2].encode())
os.close(fd)
"""


def test_a_writer_holding_the_original_open_is_refused_before_anything_is_linked(tmp_path: Path) -> None:
    # Its appends would land in the old inode: with a link, in the archive. It must be busy instead.
    src = make(tmp_path / "t.jsonl")
    original_inode = os.stat(src).st_ino
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(src), APPENDED.decode()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(Busy) as err:
            compact(src)
    finally:
        holder.communicate("go\n", timeout=30)
    assert err.value.exit_code == BUSY
    assert f"process {holder.pid} holds it open for writing" in str(err.value)
    assert src.read_bytes() == ORIGINAL + APPENDED  # the append went to the transcript
    assert os.stat(src).st_ino == original_inode and os.stat(src).st_nlink == 1
    assert archives(tmp_path / ".transcripts") == []


OPENS_LATE = r"""
import os, sys
print("opening", flush=True)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)  # waits while the file is leased
os.write(fd, sys.argv[2].encode())
os.close(fd)
"""


def test_a_writer_that_opens_the_original_after_the_check_is_refused_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check for writers comes before the manifest line is written and fsynced: a writer that
    # opens the file then would append to the archive once the file is replaced.
    if not writers._read_lease_available(tmp_path):
        pytest.skip("no read leases here: only the check itself holds (see _NoWriters)")
    src = make(tmp_path / "t.jsonl")
    original_inode = os.stat(src).st_ino
    append = _ManifestAppend.append
    late: list[subprocess.Popen] = []

    def append_while_a_writer_opens(self, record) -> None:
        append(self, record)
        child = subprocess.Popen(
            [sys.executable, "-c", OPENS_LATE, str(src), APPENDED.decode()], stdout=subprocess.PIPE, text=True
        )
        late.append(child)
        assert child.stdout is not None and child.stdout.readline().strip() == "opening"
        time.sleep(0.5)  # into its open()

    monkeypatch.setattr(_ManifestAppend, "append", append_while_a_writer_opens)
    with pytest.raises(Busy) as err:
        compact(src)
    [child] = late
    assert child.wait(timeout=30) == 0
    assert err.value.exit_code == BUSY
    assert "opened it for writing meanwhile" in str(err.value)
    assert src.read_bytes() == ORIGINAL + APPENDED  # the append went to the transcript
    assert os.stat(src).st_ino == original_inode and os.stat(src).st_nlink == 1
    assert archives(tmp_path / ".transcripts") == []
    assert (tmp_path / ".transcripts" / "manifest.jsonl").read_bytes() == b""  # taken back


def test_a_failure_after_the_link_takes_the_link_back(tmp_path: Path) -> None:
    # A manifest planted as a symlink is refused after the archive was linked: the link must go.
    src = make(tmp_path / "t.jsonl")
    folder = tmp_path / ".transcripts"
    folder.mkdir(mode=0o700)
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(b"")
    (folder / "manifest.jsonl").symlink_to(target)

    with pytest.raises(CompactError) as err:
        compact(src)

    assert err.value.exit_code == IO_ERR
    assert src.read_bytes() == ORIGINAL
    assert os.stat(src).st_nlink == 1  # no second name of the transcript left in the folder
    assert archives(folder) == []
    assert target.read_bytes() == b""


def test_in_place_micro_through_the_cli_links_and_restores(tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    shutil.copyfile(SAMPLE, src)
    original = src.read_bytes()
    original_inode = os.stat(src).st_ino

    run = run_cli("micro", src, text=True)
    assert run.returncode == 0, run.stderr
    assert src.read_bytes() != original

    [line] = (tmp_path / ".transcripts" / "manifest.jsonl").read_text().splitlines()
    archive = Path(json.loads(line)["archive"])
    assert os.stat(archive).st_ino == original_inode
    assert archive.read_bytes() == original and mode(archive) == 0o600
    back = run_cli("restore", src, text=True)
    assert back.returncode == 0, back.stderr
    assert src.read_bytes() == original
