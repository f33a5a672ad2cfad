"""Trusted archive folders: checked once, then used only through a descriptor (docs/design.md, "Trust")."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from compactcli.core.errors import IO_ERR, CompactError
from compactcli.storage.archives import ARCHIVE_DIR_NAME
from compactcli.storage.fileio import _fsync_fd, _io_errors, _make_private_dirs


def default_archive_dir(path: Path, archive_dir: Path | None) -> Path:
    """``--archive-dir``, else ``.transcripts/`` beside the file a symlink points to (the archive
    and the lock of a file belong to the file, not to a link naming it)."""
    if archive_dir is not None:
        return archive_dir
    return Path(os.path.realpath(path)).parent / ARCHIVE_DIR_NAME


class Untrusted(CompactError):
    """An archive folder, or a name in it, that compactcli refuses to use (exit 74)."""

    exit_code = IO_ERR


_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _refuse_unless_mine(what: Path, st: os.stat_result, kind: str) -> None:
    if st.st_uid != os.geteuid():
        raise Untrusted(f"{what}: {kind} owned by uid {st.st_uid}, not by you (uid {os.geteuid()}); not used")
    if st.st_mode & 0o022:
        raise Untrusted(
            f"{what}: {kind} writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"not used (chmod go-w it if it is yours)"
        )


class ArchiveFolder:
    """An archive folder checked once and then used only through a descriptor of it.

    docs/design.md, "Trust": a real directory owned by the user and not writable by group or others;
    every name in it is opened relative to that descriptor without following symlinks, so a
    link planted in it (``manifest.jsonl`` -> ``~/.bashrc``) is refused, never written through.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd

    @classmethod
    def open(cls, path: Path, *, create: bool) -> ArchiveFolder | None:
        """The folder at ``path``, made private if missing and ``create``; None if missing and not.

        Raises Untrusted (exit 74) saying why when the folder must not be used.
        """
        path = Path(path)
        with _io_errors(path):
            if create:
                _make_private_dirs(path)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
            except FileNotFoundError:
                if create:
                    raise
                return None
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
                    raise Untrusted(f"{path}: archive folder is a symbolic link; not used") from None
                raise
        try:
            _refuse_unless_mine(path, os.fstat(fd), "archive folder")
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> ArchiveFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        return str(self.path)

    def same_folder(self, other: Path) -> bool:
        try:
            st = os.stat(other)
        except OSError:
            return False
        here = os.fstat(self.fd)
        return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)

    def create(self, name: str) -> int:
        """A new file ``name`` (0600) in the folder; never an existing name, never through a link."""
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=self.fd)
        os.fchmod(fd, 0o600)  # the open mode is masked by the umask
        return fd

    def open_member(self, name: str, flags: int = os.O_RDONLY) -> tuple[int, os.stat_result]:
        """Open a file compactcli made in the folder: a regular file of the user's, one link."""
        try:
            fd = os.open(name, flags | _NOFOLLOW, dir_fd=self.fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Untrusted(
                    f"{self.path / name}: a symbolic link in the archive folder; not used"
                ) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Untrusted(f"{self.path / name}: not a regular file; not used")
            if st.st_nlink != 1:
                raise Untrusted(f"{self.path / name}: has {st.st_nlink} hard links; not used")
            _refuse_unless_mine(self.path / name, st, "file")
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def link(self, src: str, dst: str) -> None:
        os.link(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def fsync(self) -> None:
        _fsync_fd(self.fd)


@contextlib.contextmanager
def _archive_folder(
    folder: Path, *, create: bool = True, for_file: Path | None = None
) -> Iterator[ArchiveFolder]:
    """The opened archive folder; an error opening it names ``for_file`` first (the file that failed)."""
    try:
        opened = ArchiveFolder.open(folder, create=create)
    except CompactError as e:
        if for_file is None:
            raise
        raise type(e)(f"{for_file}: {e}", e.exit_code) from e
    if opened is None:
        raise CompactError(f"{folder}: no such archive folder", IO_ERR)
    with opened:
        yield opened
