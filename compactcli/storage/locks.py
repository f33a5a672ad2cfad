"""The one-writer lock of a transcript (docs/design.md, "Concurrency")."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from compactcli.core.errors import Busy
from compactcli.storage.fileio import _NAME_ATTEMPTS, _io_errors


@contextlib.contextmanager
def file_lock(path: Path, archive_dir: Path | None = None) -> Iterator[None]:
    """Hold the one-writer lock of ``path`` or raise Busy (docs/design.md, "Concurrency").

    The lock is an flock on the transcript itself (the file a symlink points to), so nothing is
    created to lock it and nothing is left behind. After the lock is acquired the path must still
    name the locked file: one that another process replaced meanwhile is locked again. A file
    that does not exist (a restore recreating it) locks its folder. flock locks belong to an
    open file description, so two threads of one process exclude each other too.
    ``archive_dir`` is accepted for callers that pass it; the lock does not depend on it.
    """
    real = Path(os.path.realpath(path))
    for _ in range(_NAME_ATTEMPTS):
        with _io_errors(path):
            try:
                # O_NONBLOCK: a FIFO put in the file's place must not hang the open.
                fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except FileNotFoundError:
                fd = os.open(real.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise Busy(f"{path}: busy: another compactcli process is rewriting it") from None
            held = os.fstat(fd)
            try:
                now = os.stat(real)
            except FileNotFoundError:
                now = None
            if stat.S_ISDIR(held.st_mode) and now is None:
                yield
                return
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                yield
                return
        finally:
            os.close(fd)  # closing the last descriptor of the description releases the flock
    raise Busy(f"{path}: busy: replaced again and again while it was being locked")
