"""Archive, manifest, atomic replacement, per-file locks and restore (docs/design.md, "Files and archives").

Order of an in-place commit, and why:
  1. the new content is fsynced in a temp file beside the target (same folder, so that
     ``os.replace`` is atomic);
  2. the target must still be what the caller read (``FileState`` and, if given, its sha256):
     a file still being appended to is left alone and reported busy;
  3. the original is archived byte-exact under a name that is never reused (``O_EXCL``, ``link``
     never overwrites): by a hard link to its inode where that is safe (``_link_original``), else
     by a copy. The link costs no copy: after ``os.replace`` the inode is no longer at the path, so
     the name in the archive folder holds the original's bytes, hashed and fsynced before it is named;
  4. the target is checked once more, the manifest line is written, the target is replaced.
     The manifest goes before the replacement so that a crash can never leave a replaced file
     whose original is archived but not recorded (``restore`` would not find it). A crash between
     the two leaves the file unchanged and a record whose ``sha256_after`` does not match it
     (and, for a linked archive, a second name of the live file: ``restore`` refuses a file with
     two links, and its sha256 stops matching as soon as the file is appended to);
  5. a linked archive is made private (0600) through its descriptor once it is only the archive.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from compactcli import __version__
from compactcli.core.errors import CHECK_FAILED, IO_ERR, Busy, CompactError
from compactcli.storage.archives import ARCHIVE_DIR_NAME, MANIFEST_NAME

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


@dataclass(frozen=True)
class ArchiveRecord:
    """One line of ``manifest.jsonl``: one in-place replacement of ``source``."""

    source: str
    archive: str
    sha256_before: str
    size_before: int
    sha256_after: str
    size_after: int
    command: str
    options: dict
    version: str
    time: str  # ISO-8601 UTC with microseconds, e.g. 2026-11-30T07:15:02.123456Z


def snapshot(path: Path) -> FileState:
    st = os.stat(path)
    return FileState(size=st.st_size, mtime_ns=st.st_mtime_ns, inode=st.st_ino)


def default_archive_dir(path: Path, archive_dir: Path | None) -> Path:
    """``--archive-dir``, else ``.transcripts/`` beside the file a symlink points to (the archive
    and the lock of a file belong to the file, not to a link naming it)."""
    if archive_dir is not None:
        return archive_dir
    return Path(os.path.realpath(path)).parent / ARCHIVE_DIR_NAME


# ---------------------------------------------------------------- small I/O pieces


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


# ---------------------------------------------------------------- trusted archive folders


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


# ---------------------------------------------------------------- locks


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


# ---------------------------------------------------------------- archive and manifest


def archive_copy(
    path: Path,
    archive_dir: Path | None,
    *,
    clock: Callable[[], datetime] = _utc_now,
    stem: str | None = None,
) -> tuple[Path, str, int]:
    """Copy ``path`` byte-exact into the archive folder under a name that is never reused.

    Returns (archive path, sha256 hex, size). The name comes from the hash of the bytes copied;
    a change during the copy is caught by the caller's snapshot check that follows.
    ``stem`` names the archive instead of the file's own stem (a spooled stdin).
    """
    folder_path = default_archive_dir(path, archive_dir)
    with _archive_folder(folder_path, for_file=path) as folder, _io_errors(path):
        return _archive_copy(path, folder, clock, stem or path.stem)


def _archive_copy(
    path: Path, folder: ArchiveFolder, clock: Callable[[], datetime], stem: str
) -> tuple[Path, str, int]:
    for _ in range(_NAME_ATTEMPTS):
        partial = f".{stem}.{os.urandom(6).hex()}.partial"
        try:
            fd = folder.create(partial)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder.path))
    try:
        try:
            with open(path, "rb") as src:
                sha, size = _copy_fd(src, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        for _ in range(_NAME_ATTEMPTS):
            final = archive_name(stem, clock(), sha)
            try:
                folder.link(partial, final)
            except FileExistsError:
                time.sleep(1e-6)
                continue
            break
        else:
            raise FileExistsError(errno.EEXIST, "no free archive name", str(folder.path / final))
        folder.unlink(partial)
        folder.fsync()
    except BaseException:
        with contextlib.suppress(OSError):
            folder.unlink(partial)
        raise
    return Path(os.path.realpath(folder.path)) / final, sha, size


# Linking by descriptor needs /proc (Linux), which is also where a writer holding the file open can be
# seen: elsewhere such a writer would go on appending to the archive, so the original is copied.
_PROC_FD = Path("/proc/self/fd")
_CANNOT_LINK = (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOENT, errno.EOPNOTSUPP, errno.EACCES)


@dataclass
class _Linked:
    """An archive that is a hard link to the original, and a descriptor of it for the chmod after."""

    path: Path
    sha256: str
    size: int
    fd: int

    def make_private(self) -> None:
        """0600 like a copied archive, once the replacement left the inode only in the archive folder."""
        with contextlib.suppress(OSError):  # the folder is 0700: nothing reaches it by name meanwhile
            os.fchmod(self.fd, 0o600)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _link_original(
    real: Path, expected: FileState, folder: ArchiveFolder, clock: Callable[[], datetime], stem: str
) -> _Linked | None:
    """Archive ``real`` by a hard link to its inode; None where a copy must be made instead.

    Linked only when the archive folder would accept the file as its own member (a regular file of
    the user's, not writable by group or others, with no other name that could change it) on the
    same file system, and the file is still the inode first read. The bytes are hashed and fsynced
    through one descriptor and that very inode is linked (``/proc/self/fd``), so the name holds what
    was hashed; a later change is caught by the checks before the replacement, as for a copy.
    """
    if not _PROC_FD.is_dir():
        return None
    fd = os.open(real, os.O_RDONLY | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_ino != expected.inode
            or st.st_nlink != 1
            or st.st_uid != os.geteuid()
            or st.st_mode & 0o022
            or st.st_dev != os.fstat(folder.fd).st_dev
        ):
            os.close(fd)
            return None
        sha, size = _hash_fd(fd)
        os.fsync(fd)  # the archive must be on disk before the manifest names it
        for _ in range(_NAME_ATTEMPTS):
            final = archive_name(stem, clock(), sha)
            try:
                os.link(_PROC_FD / str(fd), final, dst_dir_fd=folder.fd, follow_symlinks=True)
            except FileExistsError:
                time.sleep(1e-6)
                continue
            except OSError as e:
                if e.errno in _CANNOT_LINK:
                    os.close(fd)
                    return None
                raise
            break
        else:
            raise FileExistsError(errno.EEXIST, "no free archive name", str(folder.path / final))
        try:
            folder.fsync()
        except BaseException:
            with contextlib.suppress(OSError):
                folder.unlink(final)
            raise
    except BaseException:
        os.close(fd)
        raise
    return _Linked(Path(os.path.realpath(folder.path)) / final, sha, size, fd)


def _hash_fd(fd: int) -> tuple[str, int]:
    """sha256 and size of a file read from its start through ``fd``."""
    h = hashlib.sha256()
    size = 0
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    while n := os.readv(fd, [buffer]):
        h.update(view[:n])
        size += n
    return h.hexdigest(), size


def _remove_archive(archive: Path) -> None:
    """Remove an archive this run made and did not record."""
    with contextlib.suppress(OSError), _archive_folder(archive.parent, create=False) as folder:
        folder.unlink(archive.name)


def _json_line(obj: dict) -> bytes:
    """One JSON line in UTF-8; a file name that is not UTF-8 (lone surrogates) is written escaped."""
    try:
        return (json.dumps(obj, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(obj, default=str) + "\n").encode("ascii")


class _ManifestAppend:
    """An append to ``manifest.jsonl`` under an flock on it, that can be taken back until released.

    The lock orders appends from several processes, lets a line torn by a crash or a full disk be
    closed with a newline before the next record (so it never swallows that record), and lets a
    record whose replacement then failed be cut off again.
    """

    def __init__(self, folder: ArchiveFolder) -> None:
        self.path = folder.path / MANIFEST_NAME
        self.created = False
        while True:
            try:
                self.fd = _open_manifest_locked(folder, os.O_RDWR | os.O_APPEND)
                break
            except FileNotFoundError:
                try:
                    os.close(folder.create(MANIFEST_NAME))
                    self.created = True
                except FileExistsError:  # created by a process running beside this one
                    pass
        self._folder = folder
        self.offset: int | None = None

    def append(self, record: ArchiveRecord) -> None:
        data = _json_line(dataclasses.asdict(record))
        end = os.fstat(self.fd).st_size
        if end and os.pread(self.fd, 1, end - 1) != b"\n":
            data = b"\n" + data  # a torn line: close it, never glue this record onto it
        self.offset = end
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
            os.fsync(self.fd)
        except BaseException:
            self.take_back()
            raise
        if self.created:
            self._folder.fsync()

    def take_back(self) -> None:
        """Cut the file back to before this append (the record describes nothing that happened)."""
        if self.offset is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.offset)
                os.fsync(self.fd)
            self.offset = None

    def close(self) -> None:
        os.close(self.fd)  # releases the flock


def append_manifest(archive_dir: Path, record: ArchiveRecord) -> None:
    """Append one JSON line to ``<archive_dir>/manifest.jsonl`` (0600)."""
    with _io_errors(archive_dir / MANIFEST_NAME), _archive_folder(archive_dir) as folder:
        manifest = _ManifestAppend(folder)
        try:
            manifest.append(record)
        finally:
            manifest.close()


def _open_manifest_locked(folder: ArchiveFolder, flags: int) -> int:
    """Open the manifest (never through a link) and hold its flock. ``compactcli prune`` replaces
    the manifest under the same lock, so a descriptor whose file is no longer the manifest once
    the lock is held is dropped and the new manifest opened."""
    while True:
        fd, held = folder.open_member(MANIFEST_NAME, flags)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = os.stat(MANIFEST_NAME, dir_fd=folder.fd, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


class ManifestRewrite:
    """A trusted archive folder's manifest held under its lock (no append meanwhile), with the means
    to replace it and to remove archives, all through the folder's descriptor (``compactcli prune``)."""

    def __init__(self, folder: ArchiveFolder, content: bytes) -> None:
        self.folder = folder
        self.content = content

    def replace(self, lines: list[bytes]) -> None:
        """The manifest becomes ``lines`` (each ending in a newline) at once: temp file, fsync, rename."""
        temp = f".{MANIFEST_NAME}.{os.getpid()}.{time.monotonic_ns()}.partial"
        with _io_errors(self.folder.path / MANIFEST_NAME):
            fd = self.folder.create(temp)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.writelines(lines)
                    f.flush()
                    os.fsync(f.fileno())
                os.rename(temp, MANIFEST_NAME, src_dir_fd=self.folder.fd, dst_dir_fd=self.folder.fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    self.folder.unlink(temp)
                raise
            self.folder.fsync()

    def _member(self, archive: str) -> tuple[str, os.stat_result] | None:
        """The name and status of an archive a record names, when it is a regular file directly in
        this folder (never a link, never a file elsewhere that a manifest line names)."""
        if not archive or Path(archive).parent != self.folder.path.resolve():
            return None
        name = Path(archive).name
        try:
            st = os.stat(name, dir_fd=self.folder.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return (name, st) if stat.S_ISREG(st.st_mode) else None

    def archive_size(self, archive: str) -> int:
        with _io_errors(archive):
            member = self._member(archive)
        return member[1].st_size if member else 0

    def remove_archive(self, archive: str) -> None:
        with _io_errors(archive):
            member = self._member(archive)
            if member is not None:
                with contextlib.suppress(FileNotFoundError):
                    self.folder.unlink(member[0])


@contextlib.contextmanager
def rewriting_manifest(archive_dir: Path) -> Iterator[ManifestRewrite | None]:
    """The manifest of a trusted archive folder under its lock; None when the folder does not exist.
    An untrusted folder raises Untrusted (exit 74)."""
    with _io_errors(archive_dir):
        folder = ArchiveFolder.open(archive_dir, create=False)
    if folder is None:
        yield None
        return
    with folder:
        with _io_errors(archive_dir / MANIFEST_NAME):
            try:
                fd = _open_manifest_locked(folder, os.O_RDONLY)
            except FileNotFoundError:
                fd = None
        if fd is None:
            yield ManifestRewrite(folder, b"")
            return
        with os.fdopen(fd, "rb") as f:
            yield ManifestRewrite(folder, f.read())


def parse_record(line: bytes) -> ArchiveRecord | None:
    """One manifest line as a record; None for a line that cannot be read (a line torn by a crash)."""
    try:
        return _record_from(json.loads(line))
    except ValueError:
        return None


def _record_from(obj: object) -> ArchiveRecord | None:
    if not isinstance(obj, dict):
        return None
    try:
        fields = {f.name: obj[f.name] for f in dataclasses.fields(ArchiveRecord)}
    except KeyError:
        return None
    return ArchiveRecord(**fields)


@dataclass(frozen=True)
class History:
    """A file's manifest entries, oldest first, and the manifest lines that could not be read."""

    records: list[ArchiveRecord]
    skipped: list[str]  # "<manifest>:<line>: why", for the user to see


def read_history(path: Path, archive_dir: Path | None) -> History:
    """Manifest entries whose source is ``path`` (the file a symlink points to). Reads only."""
    folder_path = default_archive_dir(path, archive_dir)
    source = str(Path(path).resolve())
    manifest = folder_path / MANIFEST_NAME
    with _io_errors(manifest):
        folder = ArchiveFolder.open(folder_path, create=False)
        if folder is None:
            return History([], [])
        with folder:
            try:
                fd, _ = folder.open_member(MANIFEST_NAME)
            except FileNotFoundError:
                return History([], [])
            with open(fd, "rb") as f:
                lines = f.read().splitlines()
    records, skipped = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = parse_record(line)
        if record is None:
            skipped.append(f"{manifest}:{number}: skipped: not a manifest record (a line torn by a crash?)")
        elif record.source == source:
            records.append(record)
    return History(records, skipped)


def history(path: Path, archive_dir: Path | None) -> list[ArchiveRecord]:
    """Manifest entries whose source is ``path`` (resolved), oldest first; unreadable lines skipped."""
    return read_history(path, archive_dir).records


def sources(folder: Path, selected: Callable[[str], bool]) -> list[str]:
    """The transcripts (resolved paths) that `folder`'s manifest holds entries for and `selected` picks."""
    try:
        raw = (folder / MANIFEST_NAME).read_bytes()
    except FileNotFoundError:
        return []
    found = {record.source for record in map(parse_record, raw.splitlines()) if record is not None}
    return sorted(name for name in found if selected(name))


# ---------------------------------------------------------------- atomic replacement


class _HashingWriter:
    """A binary file that hashes what is written to it, so the result need not be read back."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self._sha.update(data)
        self.size += len(data)
        return self._raw.write(data)

    def hexdigest(self) -> str:
        return self._sha.hexdigest()

    def __getattr__(self, name: str):  # flush, fileno, close, closed, ...
        return getattr(self._raw, name)


class Replacement:
    """A temp file in the same folder as ``target`` that atomically becomes ``target`` on commit.

    Symlinks are followed: the file they point to is replaced and the link stays a link.
    Use as a context manager; leaving it without a commit (also by an exception) removes the temp.
    """

    def __init__(self, target: Path, *, hashed: bool = True) -> None:
        """``hashed=False``: the content is not hashed as it is written (a -o output needs no hash)."""
        self.target = Path(target)
        self._real = Path(os.path.realpath(self.target))
        with _io_errors(self.target):
            fd, tmp = tempfile.mkstemp(prefix=f".{self._real.name}.", suffix=".tmp", dir=self._real.parent)
        self.temp_path = Path(tmp)
        raw = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
        self.file = _HashingWriter(raw) if hashed else raw
        self._done = False

    def __enter__(self) -> Replacement:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._done:
            self.discard()

    def discard(self) -> None:
        self._done = True
        with contextlib.suppress(OSError):
            self.file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temp_path)

    def _flush(self) -> tuple[str, int]:
        """fsync the new content and return its sha256 and size (hashed as it was written; empty and
        -1 when it was not)."""
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        if not isinstance(self.file, _HashingWriter):
            return "", -1
        return self.file.hexdigest(), self.file.size

    def _require_unchanged(self, expected: FileState) -> os.stat_result:
        try:
            st = os.stat(self._real)
        except FileNotFoundError:
            st = None
        if st is None or FileState(st.st_size, st.st_mtime_ns, st.st_ino) != expected:
            raise Busy(f"{self.target}: busy: changed while it was processed")
        return st

    def _take_mode(self, st: os.stat_result) -> None:
        os.chmod(self.temp_path, stat.S_IMODE(st.st_mode))
        if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
            # Only root can give a file away; anyone else keeps the file as their own.
            with contextlib.suppress(PermissionError):
                os.chown(self.temp_path, st.st_uid, st.st_gid)

    def _replace(self) -> None:
        os.replace(self.temp_path, self._real)
        self._done = True
        _fsync_dir(self._real.parent)

    def commit_in_place(
        self,
        *,
        expected: FileState,
        archive_dir: Path | None,
        command: str,
        options: dict,
        expected_sha256: str | None = None,
        archived: tuple[Path, str, int] | None = None,
    ) -> ArchiveRecord:
        """Archive the original, record it, and replace it with the new content.

        ``expected`` is the snapshot taken before the original was read; ``expected_sha256`` (the
        hash of the bytes that were read) also catches a same-size rewrite within one mtime tick.
        Raises Busy, leaving the target untouched and nothing new in the archive, if it changed.
        ``archived`` is an archive_copy made earlier (when the new content names it); it is
        removed like a fresh one if the commit fails before the manifest records it.
        A replacement that fails (EPERM, a full disk) takes its manifest line back and removes its
        archive: the history never names a replacement that did not happen.
        """
        if self._done:
            raise ValueError("replacement already committed or discarded")
        if not isinstance(self.file, _HashingWriter):
            raise ValueError("an in-place replacement records its sha256: make it with hashed=True")
        archive: Path | None = archived[0] if archived else None
        linked: _Linked | None = None
        alone: _NoWriters | None = None
        try:
            with _io_errors(self.target):
                sha_after, size_after = self._flush()
                self._require_unchanged(expected)
                folder_path = default_archive_dir(self.target, archive_dir)
                with _archive_folder(folder_path, for_file=self.target) as folder:
                    if archived is None:
                        linked = _link_original(self._real, expected, folder, _utc_now, self._real.stem)
                        if linked is not None:
                            archived = (linked.path, linked.sha256, linked.size)
                        else:
                            archived = _archive_copy(self._real, folder, _utc_now, self._real.stem)
                        archive = archived[0]
                    _, sha_before, size_before = archived
                    if expected_sha256 is not None and sha_before != expected_sha256:
                        raise Busy(f"{self.target}: busy: changed while it was processed")
                    st = self._require_unchanged(expected)
                    self._take_mode(st)
                    alone = _NoWriters(self.target, self._real, st)
                    record = ArchiveRecord(
                        source=str(self._real),
                        archive=str(archive),
                        sha256_before=sha_before,
                        size_before=size_before,
                        sha256_after=sha_after,
                        size_after=size_after,
                        command=command,
                        options=options,
                        version=__version__,
                        time=_iso_utc(_utc_now()),
                    )
                    manifest = _ManifestAppend(folder)
                    try:
                        manifest.append(record)
                        try:
                            # The manifest fsync takes time: an append during it must not be
                            # replaced away.
                            self._require_unchanged(expected)
                            alone.still()
                            os.replace(self.temp_path, self._real)
                        except BaseException:
                            manifest.take_back()
                            raise
                        self._done = True
                        archive = None  # recorded: it stays
                    finally:
                        manifest.close()
                if linked is not None:
                    linked.make_private()
                _fsync_dir(self._real.parent)
                return record
        finally:
            if alone is not None:
                alone.close()  # a writer that opened meanwhile waited; it now opens the file as it is
            if linked is not None:
                linked.close()
            if archive is not None:
                _remove_archive(archive)
            if not self._done:
                self.discard()

    def commit_new(self) -> None:
        """Write an output file (``-o PATH``): keep an existing file's mode, no archive."""
        if self._done:
            raise ValueError("replacement already committed or discarded")
        try:
            with _io_errors(self.target):
                self._flush()
                try:
                    st = os.stat(self._real)
                except FileNotFoundError:
                    os.chmod(self.temp_path, 0o666 & ~current_umask())
                else:
                    self._take_mode(st)
                self._replace()
        finally:
            if not self._done:
                self.discard()


@contextlib.contextmanager
def output_file(target: Path) -> Iterator[BinaryIO]:
    """Where ``-o PATH`` writes (docs/design.md, "Output targets"). A regular file (or a new one) is
    replaced atomically when the block ends without an error. Anything else — a device such as
    /dev/null, a FIFO, a terminal — is written into, as the shell's ``>`` would, and never
    replaced by a regular file."""
    target = Path(target)
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CompactError(f"{target}: is a directory; -o needs a file, a device or a FIFO", IO_ERR)
    if st is not None and not stat.S_ISREG(st.st_mode):
        with _io_errors(target):
            fd = os.open(target, os.O_WRONLY | os.O_CLOEXEC)  # never O_CREAT: it exists, as it is
            with open(fd, "wb") as out:
                yield out
        return
    with Replacement(target, hashed=False) as replacement:
        yield replacement.file  # type: ignore[misc]
        replacement.commit_new()


# ---------------------------------------------------------------- writers holding the file open


class _NoWriters:
    """Busy if another process holds ``target`` open for writing, from now until the replacement.

    Such a writer (an agent keeping its transcript open) would go on appending to the replaced
    inode after the replacement, and those lines would be lost (with an archive link, they would
    land in the archive). Where the file system grants it (Linux, the file's owner or CAP_LEASE), a
    read lease answers in one call, whatever the number of processes: the kernel refuses it while
    any process has the file open for writing (a writable mapping too, and processes /proc does
    not show us). Held until the replacement, it also makes an open for writing by anyone else
    wait, and tells us: `still()` just before the rename refuses the file then. What is left is the
    time between that check and the rename, two system calls; the writer that opens then waits
    for `close()` and writes to the old inode.

    Without a lease (another file system, another owner, no fcntl leases), the open files in /proc
    are looked through (``open_writer``), once, here: an unprivileged user sees only their own
    processes, which is where such a writer runs. Without /proc either, nothing is checked.
    """

    def __init__(self, target: Path, real: Path, st: os.stat_result) -> None:
        self.target = target
        self._fd: int | None = None
        try:
            self._fd = _read_lease(real, st)
        except BlockingIOError:
            self._refuse(open_writer(st))
            raise Busy(f"{target}: busy: another process holds it open for writing") from None
        except OSError:
            self._fd = None
        if self._fd is None:
            self._refuse(open_writer(st))

    def _refuse(self, writer: int | None) -> None:
        if writer is not None:
            raise Busy(
                f"{self.target}: busy: process {writer} holds it open for writing; its appends would be lost"
            )

    def still(self) -> None:
        """Busy if, since the check, another process has begun opening the file for writing."""
        if self._fd is not None and fcntl.fcntl(self._fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK:
            raise Busy(f"{self.target}: busy: another process opened it for writing meanwhile")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # the lease goes with it
            self._fd = None


def _read_lease_available(folder: Path) -> bool:
    """Whether a file made in ``folder`` can be leased (for tests and diagnostics)."""
    probe = Path(tempfile.mkdtemp(dir=folder)) / "lease"
    try:
        probe.write_bytes(b"")
        fd = _read_lease(probe, os.stat(probe))
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
            probe.parent.rmdir()
    if fd is None:
        return False
    os.close(fd)
    return True


def _read_lease(real: Path, st: os.stat_result) -> int | None:
    """A descriptor of the file of ``st`` holding a read lease on it; None where leases are not to be
    had. BlockingIOError: a process holds the file open for writing (or a lease of its own)."""
    set_lease = getattr(fcntl, "F_SETLEASE", None)
    if set_lease is None:
        return None
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        if (os.fstat(fd).st_ino, os.fstat(fd).st_dev) != (st.st_ino, st.st_dev):
            raise Busy(f"{real}: busy: changed while it was processed")
        # A lease break is told by a signal, SIGIO unless set: its default is to end the process.
        # SIGURG's default is to ignore it; still() asks the lease instead.
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_writer(st: os.stat_result) -> int | None:
    """The id of another process holding the file of ``st`` open for writing, if any."""
    me = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            try:
                fst = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if (fst.st_ino, fst.st_dev) != (st.st_ino, st.st_dev):
                continue
            if _open_for_writing(f"/proc/{pid}/fdinfo/{fd}"):
                return pid
    return None


def _open_for_writing(fdinfo: str) -> bool:
    try:
        with open(fdinfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except (OSError, ValueError):
        pass
    return False


# ---------------------------------------------------------------- restore


RESTORE = "restore"  # the command name a restore records in the manifest


def is_original(entry: ArchiveRecord) -> bool:
    """Whether the entry's archive is an original a compacting command kept (micro, summarize...):
    a restore's own archive is the compacted file it replaced, never an original."""
    return bool(entry.archive) and entry.command != RESTORE


def pristine_index(entries: list[ArchiveRecord]) -> int | None:
    """The entry (oldest first) whose archive is the pristine original: the file as it was before
    compactcli first changed it, i.e. the oldest original kept (prune keeps it unless told)."""
    return next((i for i, entry in enumerate(entries) if is_original(entry)), None)


def latest_original(entries: list[ArchiveRecord]) -> int | None:
    """The entry a plain restore puts back: the latest original, skipping restores' own archives, so
    that restoring twice leaves the same bytes as restoring once."""
    return next((i for i in range(len(entries) - 1, -1, -1) if is_original(entries[i])), None)


@dataclass(frozen=True)
class Restored:
    """A restore: the entry put back, and the manifest line written (None: the file already held it)."""

    entry: ArchiveRecord
    record: ArchiveRecord | None


def restore(path: Path, archive_dir: Path | None, *, which: int | None = None) -> Restored:
    """Put back the archived original of history entry ``which`` (default: the latest original).

    The current file is archived first, as for any in-place command ("restore"); `--which` with that
    entry's index undoes the restore. A file that already holds the chosen original is left as it is,
    nothing archived. Takes the file's lock itself. A deleted transcript is recreated; its record then
    has an empty ``archive`` and size 0 before. Only archives inside the archive folder are read: a
    manifest line naming a file elsewhere is refused.
    """
    path = Path(path)
    folder_path = default_archive_dir(path, archive_dir)
    with file_lock(path):
        entries = history(path, archive_dir)
        if not entries:
            raise CompactError(f"{path}: no archived original of {path} in {folder_path}", CHECK_FAILED)
        chosen = latest_original(entries) if which is None else which
        if chosen is None:
            raise CompactError(f"{path}: no archived original in {folder_path} (only restores)", CHECK_FAILED)
        try:
            entry = entries[chosen]
        except IndexError:
            raise CompactError(
                f"{path}: no history entry {which} ({len(entries)} in {folder_path})", CHECK_FAILED
            ) from None
        if not entry.archive:
            raise CompactError(
                f"{path}: history entry {which} has no archive (the file did not exist then)",
                CHECK_FAILED,
            )
        if _holds(path, entry.sha256_before):
            return Restored(entry, None)
        archived = Path(entry.archive)
        options = {"which": which if which is not None else chosen, "from": entry.archive}
        with Replacement(path) as repl:
            with _io_errors(archived), _archive_folder(folder_path, create=False, for_file=path) as folder:
                if not folder.same_folder(archived.parent):
                    raise Untrusted(
                        f"{archived}: the manifest names a file outside the archive folder {folder_path}; "
                        "not restored"
                    )
                fd, _ = folder.open_member(archived.name)
                h = hashlib.sha256()
                with open(fd, "rb") as src:
                    while chunk := src.read(_CHUNK):
                        h.update(chunk)
                        repl.file.write(chunk)
                sha = h.hexdigest()
            if sha != entry.sha256_before:
                raise CompactError(
                    f"{archived}: archive does not match its manifest sha256 "
                    f"({sha[:12]} != {entry.sha256_before[:12]}); not restored",
                    IO_ERR,
                )
            try:
                expected = snapshot(path)
            except FileNotFoundError:
                return Restored(entry, _restore_missing(path, folder_path, repl, entry, options))
            record = repl.commit_in_place(
                expected=expected, archive_dir=folder_path, command=RESTORE, options=options
            )
            return Restored(entry, record)


def _holds(path: Path, sha256: str) -> bool:
    """Whether the file exists and its content has this sha256."""
    try:
        with open(path, "rb") as f:
            h = hashlib.sha256()
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    except FileNotFoundError:
        return False
    return h.hexdigest() == sha256


def _restore_missing(
    path: Path, folder: Path, repl: Replacement, entry: ArchiveRecord, options: dict
) -> ArchiveRecord:
    record = ArchiveRecord(
        source=str(path.resolve()),
        archive="",
        sha256_before="",
        size_before=0,
        sha256_after=entry.sha256_before,
        size_after=entry.size_before,
        command=RESTORE,
        options=options,
        version=__version__,
        time=_iso_utc(_utc_now()),
    )
    with _io_errors(folder / MANIFEST_NAME), _archive_folder(folder) as opened:
        manifest = _ManifestAppend(opened)
        try:
            manifest.append(record)
            try:
                repl.commit_new()
            except BaseException:
                manifest.take_back()
                raise
        finally:
            manifest.close()
    return record
