"""Archiving an original (a copy or a hard link) and the manifest that records it (docs/design.md,
"Files and archives")."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from compactcli.storage.archives import MANIFEST_NAME
from compactcli.storage.fileio import (
    _CHUNK,
    _NAME_ATTEMPTS,
    FileState,
    _copy_fd,
    _io_errors,
    _utc_now,
    archive_name,
)
from compactcli.storage.folders import _NOFOLLOW, ArchiveFolder, _archive_folder, default_archive_dir


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
            unfinished = _links_to_live(folder, Path(source))
            here = Path(os.path.realpath(folder.path))
    records, skipped = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = parse_record(line)
        if record is None:
            skipped.append(f"{manifest}:{number}: skipped: not a manifest record (a line torn by a crash?)")
        elif record.source == source and _names_one_of(record, here, unfinished):
            skipped.append(
                f"{manifest}:{number}: skipped: a replacement killed before its rename (its archive is "
                "still the file itself); the next command on the file takes it back"
            )
        elif record.source == source:
            records.append(record)
    return History(records, skipped)


# An archive's name (``archive_name``) after the file's stem.
_ARCHIVE_SUFFIX = r"\.\d{8}T\d{12}Z\.[0-9a-f]{12}\.jsonl\Z"


def _links_to_live(folder: ArchiveFolder, real: Path) -> set[str]:
    """Archive names in ``folder`` that are still a link to the live file ``real``.

    A finished replacement leaves the archived inode only in the archive folder, so such a name is
    what an in-place commit killed after linking the original (and perhaps after its manifest line)
    but before its rename left behind: a record of a change that never happened, and a second link
    that restore refuses. Costs one stat when the file has a single link, as it has but then.
    """
    try:
        st = os.stat(real)
    except OSError:
        return set()
    if st.st_nlink < 2 or not stat.S_ISREG(st.st_mode) or st.st_dev != os.fstat(folder.fd).st_dev:
        return set()
    pattern = re.compile(re.escape(real.stem) + _ARCHIVE_SUFFIX)
    with os.scandir(folder.fd) as entries:
        return {
            entry.name
            for entry in entries
            if entry.inode() == st.st_ino
            and pattern.match(entry.name)
            and entry.is_file(follow_symlinks=False)
        }


def _names_one_of(record: ArchiveRecord, folder: Path, names: set[str]) -> bool:
    return bool(names) and Path(record.archive).parent == folder and Path(record.archive).name in names


def take_back_unfinished(path: Path, archive_dir: Path | None) -> list[str]:
    """Heal what an in-place commit of ``path`` killed before its rename left (``_links_to_live``):
    its manifest line is removed, then its archive name, so the file is again its only name and its
    history holds only what happened. The caller holds the file's lock (``locks.file_lock``). Returns
    the archive paths taken back; nothing is read beyond one stat when there is nothing to heal."""
    real = Path(os.path.realpath(path))
    try:
        if os.stat(real).st_nlink < 2:
            return []
    except OSError:
        return []
    folder_path = default_archive_dir(path, archive_dir)
    with _io_errors(folder_path / MANIFEST_NAME), rewriting_manifest(folder_path) as manifest:
        if manifest is None:
            return []
        names = _links_to_live(manifest.folder, real)
        if not names:
            return []
        here = Path(os.path.realpath(manifest.folder.path))
        lines = manifest.content.splitlines(keepends=True)
        kept = [
            line
            for line in lines
            if (record := parse_record(line)) is None
            or record.source != str(real)
            or not _names_one_of(record, here, names)
        ]
        # The line goes first: a kill between the two leaves an unrecorded link, which the next
        # command finds and removes, never a record naming a missing archive.
        if len(kept) != len(lines):
            manifest.replace(kept)
        for name in sorted(names):
            with contextlib.suppress(FileNotFoundError):
                manifest.folder.unlink(name)
        manifest.folder.fsync()
    return [str(here / name) for name in sorted(names)]


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
