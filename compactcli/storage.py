"""Archive, manifest, atomic replacement, per-file locks and restore (DESIGN.md section 4).

Order of an in-place commit, and why:
  1. the new content is fsynced in a temp file beside the target (same folder, so that
     ``os.replace`` is atomic);
  2. the target must still be what the caller read (``FileState`` and, if given, its sha256):
     a file still being appended to is left alone and reported busy;
  3. the original is copied byte-exact into the archive folder (``O_EXCL``: never overwritten);
  4. the target is checked once more, the manifest line is written, the target is replaced.
     The manifest goes before the replacement so that a crash can never leave a replaced file
     whose original is archived but not recorded (``restore`` would not find it). A crash between
     the two leaves the file unchanged and a record whose ``sha256_after`` does not match it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
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
from compactcli.archives import ARCHIVE_DIR_NAME, MANIFEST_NAME
from compactcli.errors import CHECK_FAILED, IO_ERR, Busy, CompactError

_CHUNK = 1 << 20
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
    return archive_dir if archive_dir is not None else path.parent / ARCHIVE_DIR_NAME


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


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as e:
        # Some filesystems cannot fsync a directory; the rename is still atomic there.
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _ensure_private_dir(folder: Path) -> Path:
    """Create ``folder`` (0700) if missing; an existing folder keeps the mode its owner gave it."""
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not folder.is_dir():
            raise
    else:
        os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask
        _fsync_dir(folder.parent)
    return folder


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


def _hash_file(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _iso_utc(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def archive_name(stem: str, when: datetime, sha256_hex: str) -> str:
    """``<stem>.<UTC %Y%m%dT%H%M%S%fZ>.<first 12 hex of sha256>.jsonl``."""
    return f"{stem}.{when.astimezone(UTC).strftime('%Y%m%dT%H%M%S%fZ')}.{sha256_hex[:12]}.jsonl"


# ---------------------------------------------------------------- locks


def lock_name(path: Path, archive_dir: Path | None) -> str:
    """``<file name>.lock``; in a shared --archive-dir also a hash of the file's folder, so that two
    files of the same name in different folders do not lock each other out."""
    if archive_dir is None:
        return f"{path.name}.lock"
    folder = str(Path(os.path.realpath(path)).parent).encode("utf-8", "surrogateescape")
    return f"{path.name}.{hashlib.sha256(folder).hexdigest()[:8]}.lock"


@contextlib.contextmanager
def file_lock(path: Path, archive_dir: Path | None) -> Iterator[None]:
    """Hold the one-writer lock of ``path`` (``<archive dir>/<file name>.lock``) or raise Busy.

    flock locks belong to an open file description, so two threads of one process exclude each
    other too. The lock file stays in the archive folder: deleting it would let a waiting process
    lock a file that a third one has already recreated.
    """
    folder = default_archive_dir(path, archive_dir)
    lock_path = folder / lock_name(path, archive_dir)
    with _io_errors(lock_path):
        _ensure_private_dir(folder)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with contextlib.suppress(PermissionError):  # a lock file another user created
            os.fchmod(fd, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"{path}: busy: another compactcli process holds the lock") from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- archive and manifest


def archive_copy(
    path: Path,
    archive_dir: Path | None,
    *,
    clock: Callable[[], datetime] = _utc_now,
    stem: str | None = None,
) -> tuple[Path, str, int]:
    """Copy ``path`` byte-exact into the archive folder under a name that is never reused.

    Returns (archive path, sha256 hex, size). The name needs the hash, so the file is read twice;
    if the two reads differ the file changed during the copy: the copy is removed and Busy raised.
    ``stem`` names the archive instead of the file's own stem (a spooled stdin).
    """
    with _io_errors(path):
        return _archive_copy(path, default_archive_dir(path, archive_dir), clock, stem or path.stem)


def _archive_copy(
    path: Path, archive_dir: Path, clock: Callable[[], datetime], stem: str
) -> tuple[Path, str, int]:
    folder = _ensure_private_dir(archive_dir).resolve()
    fd, partial = tempfile.mkstemp(prefix=f".{stem}.", suffix=".partial", dir=folder)
    os.fchmod(fd, 0o600)
    target = Path(partial)
    try:
        # The name comes from the hash of the bytes copied; a change during the copy is caught by the
        # caller's snapshot check that follows.
        h = hashlib.sha256()
        size = 0
        with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
            while chunk := src.read(_CHUNK):
                h.update(chunk)
                size += len(chunk)
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        sha = h.hexdigest()
        for _ in range(_NAME_ATTEMPTS):
            final = folder / archive_name(stem, clock(), sha)
            try:
                os.link(target, final)
            except FileExistsError:
                time.sleep(1e-6)
                continue
            break
        else:
            raise FileExistsError(errno.EEXIST, "no free archive name", str(final))
        os.unlink(target)
        _fsync_dir(folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise
    return final, sha, size


def append_manifest(archive_dir: Path, record: ArchiveRecord) -> None:
    """Append one JSON line to ``<archive_dir>/manifest.jsonl`` (0600) in a single write."""
    manifest = archive_dir / MANIFEST_NAME
    with _io_errors(manifest):
        _append_line(archive_dir, manifest, record)


def _json_line(obj: dict) -> bytes:
    """One JSON line in UTF-8; a file name that is not UTF-8 (lone surrogates) is written escaped."""
    try:
        return (json.dumps(obj, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(obj, default=str) + "\n").encode("ascii")


def _append_line(archive_dir: Path, manifest: Path, record: ArchiveRecord) -> None:
    _ensure_private_dir(archive_dir)
    data = _json_line(dataclasses.asdict(record))
    created = not manifest.exists()
    fd = _open_manifest_locked(manifest, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        if created:
            os.fchmod(fd, 0o600)  # the open mode is masked by the umask
        # One write(2) with O_APPEND: lines from concurrent processes do not interleave.
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        _fsync_dir(archive_dir)


def _open_manifest_locked(manifest: Path, flags: int) -> int:
    """Open the manifest and hold its flock: `compactcli prune` replaces the manifest under the same
    lock, so an append never lands in a manifest that has just been replaced (it opens the new one)."""
    while True:
        fd = os.open(manifest, flags | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_ino == os.stat(manifest).st_ino:
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


@contextlib.contextmanager
def locked_manifest(archive_dir: Path) -> Iterator[bytes]:
    """Hold the manifest's lock (no append meanwhile) and give its content; b"" when there is none."""
    manifest = archive_dir / MANIFEST_NAME
    with _io_errors(manifest):
        try:
            fd = _open_manifest_locked(manifest, os.O_RDONLY)
        except FileNotFoundError:
            yield b""
            return
        with os.fdopen(fd, "rb") as f:
            yield f.read()


def replace_manifest(archive_dir: Path, lines: list[bytes]) -> None:
    """Replace the manifest with `lines` (each ending in a newline) at once: temp file, fsync, rename.
    Call it while holding `locked_manifest`."""
    manifest = archive_dir / MANIFEST_NAME
    with _io_errors(manifest):
        fd, temp = tempfile.mkstemp(prefix=".manifest.", suffix=".partial", dir=archive_dir)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.writelines(lines)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, manifest)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _fsync_dir(archive_dir)


def require_private_dir(folder: Path) -> None:
    """An existing archive folder is used only if it is a real directory (not a symlink) owned by
    this user and not writable by group or others (docs/design.md 4, "Trust"); else exit 74."""
    with _io_errors(folder):
        st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise CompactError(f"{folder}: archive folder is not a directory (a symlink is not followed)", IO_ERR)
    if st.st_uid != os.getuid():
        raise CompactError(f"{folder}: archive folder belongs to another user", IO_ERR)
    if st.st_mode & 0o022:
        raise CompactError(f"{folder}: archive folder is writable by group or others", IO_ERR)


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


def history(path: Path, archive_dir: Path | None) -> list[ArchiveRecord]:
    """Manifest entries whose source is ``path`` (resolved), oldest first.

    Lines that cannot be read (a line torn by a crash) are skipped: they describe no usable archive.
    """
    manifest = default_archive_dir(path, archive_dir) / MANIFEST_NAME
    source = str(Path(path).resolve())
    try:
        raw = manifest.read_bytes()
    except FileNotFoundError:
        return []
    records = (parse_record(line) for line in raw.splitlines())
    return [record for record in records if record is not None and record.source == source]


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

    def __init__(self, target: Path) -> None:
        self.target = Path(target)
        self._real = Path(os.path.realpath(self.target))
        with _io_errors(self.target):
            fd, tmp = tempfile.mkstemp(prefix=f".{self._real.name}.", suffix=".tmp", dir=self._real.parent)
        self.temp_path = Path(tmp)
        self.file = _HashingWriter(os.fdopen(fd, "wb"))
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
        """fsync the new content and return its sha256 and size (hashed as it was written)."""
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
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
        """
        if self._done:
            raise ValueError("replacement already committed or discarded")
        try:
            with _io_errors(self.target):
                try:
                    sha_after, size_after = self._flush()
                    self._require_unchanged(expected)
                except BaseException:
                    if archived is not None:
                        with contextlib.suppress(OSError):
                            os.unlink(archived[0])
                    raise
                folder = default_archive_dir(self.target, archive_dir)
                archive, sha_before, size_before = archived or archive_copy(self._real, folder)
                try:
                    if expected_sha256 is not None and sha_before != expected_sha256:
                        raise Busy(f"{self.target}: busy: changed while it was processed")
                    st = self._require_unchanged(expected)
                    self._take_mode(st)
                    record = ArchiveRecord(
                        source=str(self.target.resolve()),
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
                    append_manifest(folder, record)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(archive)
                    raise
                # The manifest fsync takes time: an append during it must not be replaced away.
                # The archive stays: the manifest line names it.
                self._require_unchanged(expected)
                self._replace()
                return record
        finally:
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


# ---------------------------------------------------------------- restore


def restore(path: Path, archive_dir: Path | None, *, which: int = -1) -> ArchiveRecord:
    """Put back the archived original of history entry ``which`` (default: the latest).

    The current file is archived first, as for any in-place command ("restore"), so a restore
    can be undone by restoring again. Takes the file's lock itself. A deleted transcript is
    recreated; its record then has an empty ``archive`` and size 0 before.
    """
    path = Path(path)
    folder = default_archive_dir(path, archive_dir)
    with file_lock(path, archive_dir):
        entries = history(path, archive_dir)
        if not entries:
            raise CompactError(f"{path}: no archived original of {path} in {folder}", CHECK_FAILED)
        try:
            entry = entries[which]
        except IndexError:
            raise CompactError(
                f"{path}: no history entry {which} ({len(entries)} in {folder})", CHECK_FAILED
            ) from None
        if not entry.archive:
            raise CompactError(
                f"{path}: history entry {which} has no archive (the file did not exist then)",
                CHECK_FAILED,
            )
        archived = Path(entry.archive)
        with _io_errors(archived):
            sha, _ = _hash_file(archived)
        if sha != entry.sha256_before:
            raise CompactError(
                f"{archived}: archive does not match its manifest sha256 "
                f"({sha[:12]} != {entry.sha256_before[:12]}); not restored",
                IO_ERR,
            )
        options = {"which": which, "from": entry.archive}
        with Replacement(path) as repl:
            with _io_errors(archived), open(archived, "rb") as src:
                while chunk := src.read(_CHUNK):
                    repl.file.write(chunk)
            try:
                expected = snapshot(path)
            except FileNotFoundError:
                return _restore_missing(path, folder, repl, entry, options)
            return repl.commit_in_place(
                expected=expected, archive_dir=folder, command="restore", options=options
            )


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
        command="restore",
        options=options,
        version=__version__,
        time=_iso_utc(_utc_now()),
    )
    append_manifest(folder, record)
    repl.commit_new()
    return record
