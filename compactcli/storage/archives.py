"""Archive folders: how to recognise one, and which transcripts a tree's archive folders hold
originals of. storage/__init__.py reads and writes what is inside them (and lists the sources a
manifest holds)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

ARCHIVE_DIR_NAME = ".transcripts"
MANIFEST_NAME = "manifest.jsonl"
# keys every manifest line holds (storage.ArchiveRecord); storage is not imported here: discovery
# runs in every command and storage's imports are not free
_MANIFEST_KEYS = (b'"source"', b'"sha256_before"', b'"archive"')


def is_archive_dir(folder: Path, skip_exact: set[Path] = frozenset()) -> bool:
    """The default `.transcripts`, a folder in `skip_exact` (resolved; a configured --archive-dir), or
    any folder holding a compactcli manifest."""
    if folder.name == ARCHIVE_DIR_NAME or (skip_exact and folder.resolve() in skip_exact):
        return True
    return _holds_compactcli_manifest(folder / MANIFEST_NAME)


def _holds_compactcli_manifest(manifest: Path) -> bool:
    """A `manifest.jsonl` that compactcli wrote: its first line names the fields of an archive record.
    Only the first bytes are read; another tool's file of that name leaves its folder searched."""
    try:
        with open(manifest, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return all(key in head for key in _MANIFEST_KEYS)


def folders_in(root: Path, archive_dir: Path | None = None) -> list[Path]:
    """The archive folders of a tree (not entered: archives hold no archive folders), then
    `archive_dir` when given and it exists; each once, resolved."""
    found: list[Path] = []
    skip = {archive_dir.resolve()} if archive_dir else set()
    if is_archive_dir(root, skip):
        found.append(root.resolve())
    else:
        for dirpath, dirnames, _ in os.walk(root):
            archives = [d for d in dirnames if is_archive_dir(Path(dirpath) / d, skip)]
            found += [(Path(dirpath) / d).resolve() for d in sorted(archives)]
            dirnames[:] = sorted(d for d in dirnames if d not in archives)
    if archive_dir is not None and archive_dir.is_dir() and archive_dir.resolve() not in found:
        found.append(archive_dir.resolve())
    return found


def targets(path: Path, archive_dir: Path | None) -> list[tuple[Path, Callable[[str], bool]]]:
    """Where the originals of PATH's transcripts are: (archive folder, which sources in its manifest).

    A file: its own archive folder, its own entries. A folder: every archive folder in the tree (and
    `archive_dir`), the entries of transcripts inside the folder. An archive folder: all its entries.
    """
    if not path.is_dir():
        # the archive of a file named through a symlink is beside the file it points to
        real = Path(os.path.realpath(path))
        folder = archive_dir if archive_dir is not None else real.parent / ARCHIVE_DIR_NAME
        source = str(path.resolve())
        return [(folder, lambda name: name == source)]
    if is_archive_dir(path, {archive_dir.resolve()} if archive_dir else set()):
        return [(path.resolve(), lambda name: True)]
    root = path.resolve()
    return [
        (folder, lambda name: Path(name).is_relative_to(root)) for folder in folders_in(path, archive_dir)
    ]
