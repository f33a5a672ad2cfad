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
     (and, for a linked archive, a second name of the live file, which the next in-place command on
     the file takes back with its record: ``manifest.take_back_unfinished``);
  5. a linked archive is made private (0600) through its descriptor once it is only the archive.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from compactcli import __version__
from compactcli.core.errors import IO_ERR, Busy, CompactError
from compactcli.storage.fileio import (
    WRITE_BUFFER,
    FileState,
    _fsync_dir,
    _io_errors,
    _iso_utc,
    _utc_now,
    current_umask,
)
from compactcli.storage.folders import _NOFOLLOW, _archive_folder, default_archive_dir
from compactcli.storage.manifest import (
    ArchiveRecord,
    _archive_copy,
    _link_original,
    _Linked,
    _ManifestAppend,
    _remove_archive,
)
from compactcli.storage.writers import _NoWriters


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


# A Replacement's temp file: "." + the target's name + "." + mkstemp's 8 random characters + ".tmp".
_TEMP_NAME = re.compile(r"\A\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp\Z")
# A temp file written to within this many seconds may be one whose writer has not taken its lock yet.
STALE_TEMP_SECONDS = 60
_swept: set[str] = set()


def sweep_stale_temps(folder: Path) -> list[str]:
    """Remove the temp files of killed runs in ``folder`` (docs/design.md, "Concurrency"), once per folder
    and process; returns the names removed. A temp file is taken for one of ours only when its name is a
    Replacement's for a file that is there, it is the user's regular file, untouched for
    STALE_TEMP_SECONDS, and no process holds its lock: a writer holds it from the temp's creation
    (the kernel drops it when the writer dies)."""
    key = os.path.abspath(folder)
    if key in _swept:
        return []
    _swept.add(key)
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    names = {entry.name for entry in entries}
    now = time.time()
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None or match["name"] not in names:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_uid != os.geteuid()
                or now - st.st_mtime < STALE_TEMP_SECONDS
            ):
                continue
            fd = os.open(entry.path, os.O_RDONLY | _NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # refused: its writer is alive
            if os.stat(entry.path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


class Replacement:
    """A temp file in the same folder as ``target`` that atomically becomes ``target`` on commit.

    Symlinks are followed: the file they point to is replaced and the link stays a link.
    Use as a context manager; leaving it without a commit (also by an exception) removes the temp.
    """

    def __init__(self, target: Path, *, hashed: bool = True) -> None:
        """``hashed=False``: the content is not hashed as it is written (a -o output needs no hash)."""
        self.target = Path(target)
        self._real = Path(os.path.realpath(self.target))
        sweep_stale_temps(self._real.parent)
        with _io_errors(self.target):
            fd, tmp = tempfile.mkstemp(prefix=f".{self._real.name}.", suffix=".tmp", dir=self._real.parent)
        # Held while it is written: a later run tells a temp file whose writer was killed by its lock.
        fcntl.flock(fd, fcntl.LOCK_EX)
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

    def commit_new(self, source_mode: int | None = None) -> None:
        """Write an output file (``-o PATH``): keep an existing file's mode, no archive. A new file takes
        the permission bits of ``source_mode`` (the transcript it was made from) less the umask, as
        ``cp`` does: a private transcript does not become a world-readable copy. Without one (stdin, a
        URL) it is 0666 less the umask, as the shell's ``>`` makes it."""
        if self._done:
            raise ValueError("replacement already committed or discarded")
        try:
            with _io_errors(self.target):
                self._flush()
                try:
                    st = os.stat(self._real)
                except FileNotFoundError:
                    bits = 0o666 if source_mode is None else stat.S_IMODE(source_mode) & 0o777
                    os.chmod(self.temp_path, bits & ~current_umask())
                else:
                    self._take_mode(st)
                self._replace()
        finally:
            if not self._done:
                self.discard()


def mode_to_copy(source: BinaryIO) -> int | None:
    """The permission bits an output made from `source` copies (``output_file``'s `source_mode`): the
    transcript's own; none where it is no file of the user's (stdin, a spooled URL: an unlinked temp file)."""
    try:
        st = os.fstat(source.fileno())
    except (OSError, AttributeError, ValueError):
        return None
    return st.st_mode if stat.S_ISREG(st.st_mode) and st.st_nlink > 0 else None


@contextlib.contextmanager
def output_file(target: Path, source_mode: int | None = None) -> Iterator[BinaryIO]:
    """Where ``-o PATH`` writes (docs/design.md, "Output targets"). A regular file (or a new one) is
    replaced atomically when the block ends without an error; a new one takes ``source_mode``'s
    permission bits (``Replacement.commit_new``). Anything else — a device such as /dev/null, a FIFO,
    a terminal — is written into, as the shell's ``>`` would, and never replaced by a regular file."""
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
        replacement.commit_new(source_mode)
