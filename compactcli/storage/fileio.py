"""Small I/O pieces of the storage tier: file identity, fsync, private folders, the umask, archive
names and times, copying through descriptors."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from compactcli.core.errors import IO_ERR, CompactError

_CHUNK = 1 << 20
# A new file is written in few large write(2) calls: each call costs the file system a lock and a
# timestamp update, which with the default 4-8 KiB buffer was a third of micro's write pass.
WRITE_BUFFER = 1 << 20
_NAME_ATTEMPTS = 1000


@dataclass(frozen=True)
class FileState:
    """Identity of a file's content at a moment; any append or replacement changes it."""

    size: int
    mtime_ns: int
    inode: int


def snapshot(path: Path) -> FileState:
    st = os.stat(path)
    return FileState(size=st.st_size, mtime_ns=st.st_mtime_ns, inode=st.st_ino)


@contextlib.contextmanager
def _io_errors(what: object) -> Iterator[None]:
    """Turn an OSError into a CompactError (exit 74) whose message names the file."""
    try:
        yield
    except OSError as e:
        reason = e.strerror or str(e)
        if e.filename is not None and str(e.filename) != str(what):
            reason = f"{reason}: {e.filename}"
        raise CompactError(f"{what}: {reason}", IO_ERR) from e


def _fsync_fd(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as e:
        # Some filesystems cannot fsync a directory; the rename is still atomic there.
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _fsync_fd(fd)
    finally:
        os.close(fd)


def _make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and each missing parent 0700, whatever the umask (docs/design.md, "Trust")."""
    missing = []
    for part in (folder, *folder.parents):
        if os.path.lexists(part):
            break
        missing.append(part)
    for part in reversed(missing):
        try:
            os.mkdir(part, 0o700)
        except FileExistsError:
            continue  # made by a process running beside this one; trust is checked on opening
        os.chmod(part, 0o700, follow_symlinks=False)  # mkdir's mode is masked by the umask
        _fsync_dir(part.parent)


_umask_lock = threading.Lock()


def current_umask() -> int:
    """The process umask, read without setting it where possible (other threads create files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _umask_lock:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _iso_utc(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def archive_name(stem: str, when: datetime, sha256_hex: str) -> str:
    """``<stem>.<UTC %Y%m%dT%H%M%S%fZ>.<first 12 hex of sha256>.jsonl``."""
    return f"{stem}.{when.astimezone(UTC).strftime('%Y%m%dT%H%M%S%fZ')}.{sha256_hex[:12]}.jsonl"


def _copy_fd(src: BinaryIO, fd: int) -> tuple[str, int]:
    """Copy ``src`` to the descriptor ``fd``; returns the sha256 and size of what was copied."""
    h = hashlib.sha256()
    size = 0
    while chunk := src.read(_CHUNK):
        h.update(chunk)
        size += len(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]
    return h.hexdigest(), size
