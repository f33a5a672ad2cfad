"""The durability order of an in-place commit, pinned from the calls a real run makes (docs/design.md,
"Archive before replace"): the archive's data is synced, and its name in the archive folder, before the
manifest line that names it is synced; the new content is synced, and the manifest line is, before the
rename over the original; the transcript's folder is synced after the rename. Both ways an original is
archived are covered: a hard link to its inode and a copy. Each fsync is mapped to the inode it synced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.files import write_jsonl

RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 500}
CALL = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
RECORDS = [
    {"role": "user", "content": "List the files."},
    {"role": "assistant", "content": [CALL]},
    {"role": "user", "content": [RESULT]},
    {"role": "assistant", "content": "Done."},
]


class Calls:
    """fsync (by inode), link (by new name), replace (by target) and manifest writes, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, object]] = []
        real_fsync, real_link, real_replace, real_write = os.fsync, os.link, os.replace, os.write

        def fsync(fd: int) -> None:
            self.events.append(("fsync", os.fstat(fd).st_ino))
            real_fsync(fd)

        def link(src, dst, *args, **kwargs) -> None:
            real_link(src, dst, *args, **kwargs)
            self.events.append(("link", os.path.basename(os.fsdecode(dst))))

        def replace(src, dst, *args, **kwargs) -> None:
            real_replace(src, dst, *args, **kwargs)
            self.events.append(("replace", os.path.realpath(dst)))

        def write(fd: int, data) -> int:
            if bytes(data[:1]) in (b"{", b"\n") and b'"sha256_before"' in bytes(data):
                self.events.append(("manifest-write", os.fstat(fd).st_ino))
            return real_write(fd, data)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "link", link)
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(os, "write", write)

    def index(self, event: tuple[str, object], after: int = -1) -> int:
        """The first such event after position `after`; fails when there is none."""
        for position in range(after + 1, len(self.events)):
            if self.events[position] == event:
                return position
        raise AssertionError(f"{event} not made after position {after}: {self.events}")

    def last(self, event: tuple[str, object]) -> int:
        return max(i for i, e in enumerate(self.events) if e == event)


@pytest.mark.parametrize("archived_by", ["hard link", "copy"])
def test_an_in_place_commit_syncs_in_the_order_durability_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, archived_by: str
) -> None:
    path = tmp_path / "t.jsonl"
    write_jsonl(path, RECORDS)
    # A group-writable file is not taken into the archive folder as it is: it is copied.
    os.chmod(path, 0o600 if archived_by == "hard link" else 0o664)
    original_inode = path.stat().st_ino
    calls = Calls(monkeypatch)

    result = invoke("micro", "--keep", "0", path)

    assert result.exit_code == 0, result.output
    folder = tmp_path / ".transcripts"
    manifest = folder / "manifest.jsonl"
    entry = json.loads(manifest.read_text().splitlines()[-1])
    archive = Path(entry["archive"])
    assert (archive.stat().st_ino == original_inode) == (archived_by == "hard link")
    new_inode = path.stat().st_ino
    assert new_inode != original_inode

    archive_synced = calls.index(("fsync", archive.stat().st_ino))
    named = calls.index(("link", archive.name), archive_synced)
    name_synced = calls.index(("fsync", folder.stat().st_ino), named)
    written = calls.index(("manifest-write", manifest.stat().st_ino), name_synced)
    line_synced = calls.index(("fsync", manifest.stat().st_ino), written)
    content_synced = calls.index(("fsync", new_inode))
    renamed = calls.index(("replace", os.path.realpath(path)), line_synced)
    assert content_synced < renamed
    assert calls.index(("fsync", tmp_path.stat().st_ino), renamed) > renamed
    # Nothing but the rename moves the new content onto the original's name.
    assert calls.last(("replace", os.path.realpath(path))) == renamed
