"""Putting an archived original back, and which history entry is the original."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

from compactcli import __version__
from compactcli.core.errors import CHECK_FAILED, IO_ERR, CompactError
from compactcli.storage.archives import MANIFEST_NAME
from compactcli.storage.fileio import _CHUNK, _io_errors, _iso_utc, _utc_now, snapshot
from compactcli.storage.folders import Untrusted, _archive_folder, default_archive_dir
from compactcli.storage.locks import file_lock
from compactcli.storage.manifest import (
    ArchiveRecord,
    _ManifestAppend,
    history,
    read_history,
    take_back_unfinished,
)
from compactcli.storage.replace import Replacement

RESTORE = "restore"  # the command name a restore records in the manifest


def is_original(entry: ArchiveRecord) -> bool:
    """Whether the entry's archive is an original a compacting command kept (micro, summarize...):
    a restore's own archive is the compacted file it replaced, never an original."""
    return bool(entry.archive) and entry.command != RESTORE


def pristine_index(entries: list[ArchiveRecord]) -> int | None:
    """The entry (oldest first) whose archive is the pristine original: the file as it was before
    compactcli first changed it, i.e. the oldest original kept (prune keeps it unless told)."""
    return next((i for i, entry in enumerate(entries) if is_original(entry)), None)


def listing(path: Path, archive_dir: Path | None) -> tuple[list[dict], list[str]]:
    """What `restore --list` shows of `path`: its manifest lines, oldest first, each with its `index` and
    `pristine`; and the manifest lines skipped (why, for the user to see)."""
    found = read_history(path, archive_dir)
    pristine = pristine_index(found.records)
    entries = [
        dict(dataclasses.asdict(entry), index=number, pristine=number == pristine)
        for number, entry in enumerate(found.records)
    ]
    return entries, found.skipped


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
        take_back_unfinished(path, archive_dir)  # a killed commit's record is no original
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
