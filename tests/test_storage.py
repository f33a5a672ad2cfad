"""Archive, manifest, atomic replacement, locks and restore, on real files and real processes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from compactcli import __version__
from compactcli.core.errors import BUSY, CHECK_FAILED, IO_ERR, Busy, CompactError
from compactcli.storage.fileio import FileState, current_umask, snapshot
from compactcli.storage.folders import default_archive_dir
from compactcli.storage.locks import file_lock
from compactcli.storage.manifest import ArchiveRecord, append_manifest, archive_copy, history
from compactcli.storage.replace import Replacement
from compactcli.storage.restore import restore

# Bytes a text-based copy would damage: CRLF, invalid UTF-8, NUL, no final newline.
ORIGINAL = (
    b'{"role":"user","content":"hi"}\r\n'
    b'{"role":"assistant","content":"caf\xc3\xa9 \xff\xfe"}\n'
    b"\x00 torn last line without newline"
)
COMPACTED = b'{"role":"user","content":"[summary]"}\n'

NAME_RE = re.compile(r"^(?P<stem>.+)\.(?P<ts>\d{8}T\d{6}\d{6}Z)\.(?P<sha>[0-9a-f]{12})\.jsonl$")
ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def make(path: Path, data: bytes = ORIGINAL, perm: int = 0o644) -> Path:
    path.write_bytes(data)
    os.chmod(path, perm)
    return path


def compact(path: Path, new: bytes = COMPACTED, archive_dir: Path | None = None) -> ArchiveRecord:
    """What a command does: snapshot, read, write the new content, commit in place."""
    state = snapshot(path)
    read = path.read_bytes()
    with Replacement(path) as repl:
        repl.file.write(new)
        return repl.commit_in_place(
            expected=state,
            archive_dir=archive_dir,
            command="micro",
            options={"keep": 3},
            expected_sha256=sha(read),
        )


def compact_record() -> ArchiveRecord:
    return ArchiveRecord("/s", "/a", "0" * 64, 1, "1" * 64, 2, "micro", {"k": "é"}, "x", "t")


@contextmanager
def umask(value: int) -> Iterator[None]:
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
"""


@contextmanager
def lock_held_elsewhere(lock_path: Path) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        if proc.poll() is None:
            proc.communicate("\n", timeout=10)


# ---------------------------------------------------------------- archive_copy


def test_default_archive_dir(tmp_path: Path) -> None:
    f = tmp_path / "a" / "t.jsonl"
    assert default_archive_dir(f, None) == tmp_path / "a" / ".transcripts"
    assert default_archive_dir(f, tmp_path / "x") == tmp_path / "x"


def test_archive_copy_name_and_bytes(tmp_path: Path) -> None:
    src = make(tmp_path / "session.v2.jsonl")
    before = datetime.now(UTC)
    archived, digest, size = archive_copy(src, None)
    after = datetime.now(UTC)

    assert archived.parent == (tmp_path / ".transcripts").resolve()
    m = NAME_RE.match(archived.name)
    assert m, archived.name
    assert m["stem"] == "session.v2"
    assert m["sha"] == sha(ORIGINAL)[:12]
    stamp = datetime.strptime(m["ts"], "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
    assert before <= stamp <= after
    assert archived.read_bytes() == ORIGINAL
    assert (digest, size) == (sha(ORIGINAL), len(ORIGINAL))
    assert src.read_bytes() == ORIGINAL


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o277])
def test_archive_modes_are_private_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    src = make(tmp_path / "t.jsonl")
    with umask(mask):
        archived, _, _ = archive_copy(src, None)
        append_manifest(tmp_path / ".transcripts", compact_record())
    assert mode(tmp_path / ".transcripts") == 0o700
    assert mode(archived) == 0o600
    assert mode(tmp_path / ".transcripts" / "manifest.jsonl") == 0o600


def test_archive_collision_never_overwrites(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    first = datetime(2026, 11, 30, 7, 15, 2, 123456, tzinfo=UTC)
    taken = tmp_path / ".transcripts" / f"t.20261130T071502123456Z.{sha(ORIGINAL)[:12]}.jsonl"
    taken.parent.mkdir(mode=0o700)
    taken.write_bytes(b"someone else's archive")
    times = iter([first, first, first + timedelta(microseconds=1)])

    archived, _, _ = archive_copy(src, None, clock=lambda: next(times))

    assert taken.read_bytes() == b"someone else's archive"
    assert archived.name == f"t.20261130T071502123457Z.{sha(ORIGINAL)[:12]}.jsonl"
    assert archived.read_bytes() == ORIGINAL


def test_two_archives_of_same_content_both_kept(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    a, _, _ = archive_copy(src, None)
    b, _, _ = archive_copy(src, None)
    assert a != b
    assert a.read_bytes() == b.read_bytes() == ORIGINAL


def test_unusable_archive_dir_is_io_error(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    blocker = make(tmp_path / "not-a-dir", b"")
    with pytest.raises(CompactError) as err:
        archive_copy(src, blocker / "arch")
    assert err.value.exit_code == IO_ERR
    assert str(src) in str(err.value)
    with pytest.raises(CompactError) as err:
        compact(src, archive_dir=blocker)
    assert err.value.exit_code == IO_ERR
    assert str(blocker) in str(err.value)
    assert src.read_bytes() == ORIGINAL


# ---------------------------------------------------------------- manifest and history


def test_commit_writes_manifest_fields(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    before = datetime.now(UTC)
    record = compact(src)
    after = datetime.now(UTC)

    manifest = tmp_path / ".transcripts" / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry == {
        "source": str(src.resolve()),
        "archive": entry["archive"],
        "sha256_before": sha(ORIGINAL),
        "size_before": len(ORIGINAL),
        "sha256_after": sha(COMPACTED),
        "size_after": len(COMPACTED),
        "command": "micro",
        "options": {"keep": 3},
        "version": __version__,
        "time": entry["time"],
    }
    assert Path(entry["archive"]).is_absolute()
    assert Path(entry["archive"]).read_bytes() == ORIGINAL
    assert ISO_RE.match(entry["time"])
    when = datetime.strptime(entry["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before <= when <= after
    assert ArchiveRecord(**entry) == record
    assert mode(manifest) == 0o600


def test_history_filters_by_source_oldest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "archives"
    a = make(tmp_path / "a.jsonl")
    b = make(tmp_path / "b.jsonl")
    compact(a, b"first\n", shared)
    compact(b, b"other file\n", shared)
    compact(a, b"second\n", shared)

    monkeypatch.chdir(tmp_path)
    got = history(Path("a.jsonl"), Path("archives"))
    assert [r.sha256_after for r in got] == [sha(b"first\n"), sha(b"second\n")]
    assert [r.sha256_before for r in got] == [sha(ORIGINAL), sha(b"first\n")]
    assert {r.source for r in got} == {str(a.resolve())}
    assert len(history(b, shared)) == 1
    assert history(tmp_path / "never.jsonl", shared) == []


def test_history_skips_a_torn_manifest_line(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    compact(src)
    manifest = tmp_path / ".transcripts" / "manifest.jsonl"
    with open(manifest, "ab") as f:
        f.write(b'{"source": "' + str(src.resolve()).encode() + b'", "archi')
    assert len(history(src, None)) == 1


def test_append_manifest_appends_one_line_each(tmp_path: Path) -> None:
    folder = tmp_path / "arch"
    rec = compact_record()
    append_manifest(folder, rec)
    append_manifest(folder, rec)
    lines = (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["options"] for x in lines] == [{"k": "é"}, {"k": "é"}]
    assert mode(folder) == 0o700


# ---------------------------------------------------------------- commit in place


def test_commit_replaces_keeps_mode_and_leaves_nothing_beside(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl", perm=0o640)
    inode = os.stat(src).st_ino
    with file_lock(src, None):
        compact(src)

    assert src.read_bytes() == COMPACTED
    assert mode(src) == 0o640
    assert os.stat(src).st_ino != inode  # a new file, renamed over the old one
    assert sorted(os.listdir(tmp_path)) == [".transcripts", "t.jsonl"]
    inside = set(os.listdir(tmp_path / ".transcripts"))
    archives = inside - {"manifest.jsonl"}
    assert len(inside) == 2 and len(archives) == 1
    assert NAME_RE.match(archives.pop())


def test_commit_busy_when_appended_between_snapshot_and_commit(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    state = snapshot(src)
    tail = b'{"role":"user","content":"still writing"}\n'
    with Replacement(src) as repl:
        repl.file.write(COMPACTED)
        # An agent still appending to its transcript, in another process.
        subprocess.run([sys.executable, "-c", f"open({str(src)!r}, 'ab').write({tail!r})"], check=True)
        with pytest.raises(Busy) as err:
            repl.commit_in_place(expected=state, archive_dir=None, command="micro", options={})
    assert err.value.exit_code == BUSY
    assert str(err.value) == f"{src}: busy: changed while it was processed"
    assert src.read_bytes() == ORIGINAL + tail
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl"]  # no temp, no archive folder


def test_commit_busy_on_same_size_rewrite_caught_by_sha(tmp_path: Path) -> None:
    # A rewrite that keeps size, inode and mtime fools the snapshot; the hash does not.
    src = make(tmp_path / "t.jsonl")
    state = snapshot(src)
    read_sha = sha(src.read_bytes())
    changed = ORIGINAL.replace(b"hi", b"ho")
    with open(src, "r+b") as f:
        f.write(changed)
    os.utime(src, ns=(state.mtime_ns, state.mtime_ns))
    assert snapshot(src) == state

    with Replacement(src) as repl:
        repl.file.write(COMPACTED)
        with pytest.raises(Busy):
            repl.commit_in_place(
                expected=state,
                archive_dir=None,
                command="micro",
                options={},
                expected_sha256=read_sha,
            )
    assert src.read_bytes() == changed
    assert sorted(os.listdir(tmp_path)) == [".transcripts", "t.jsonl"]
    assert os.listdir(tmp_path / ".transcripts") == []  # the archive copy was taken back


def test_commit_busy_when_file_was_deleted(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    state = snapshot(src)
    with Replacement(src) as repl:
        repl.file.write(COMPACTED)
        src.unlink()
        with pytest.raises(Busy):
            repl.commit_in_place(expected=state, archive_dir=None, command="micro", options={})
    assert os.listdir(tmp_path) == []


def test_snapshot_changes_on_append_and_replace(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    s0 = snapshot(src)
    assert s0 == FileState(len(ORIGINAL), os.stat(src).st_mtime_ns, os.stat(src).st_ino)
    with open(src, "ab") as f:
        f.write(b"x")
    s1 = snapshot(src)
    assert s1.size == s0.size + 1
    compact(src)
    assert snapshot(src).inode != s1.inode


def test_commit_through_symlink_keeps_the_link(tmp_path: Path) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = make(real_dir / "t.jsonl", perm=0o600)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    record = compact(link)
    assert link.is_symlink()
    assert real.read_bytes() == COMPACTED
    assert mode(real) == 0o600
    assert record.source == str(real)
    assert Path(record.archive).read_bytes() == ORIGINAL
    # The archive belongs to the file, not to the link (docs/design.md, "Output targets").
    assert Path(record.archive).parent == real_dir / ".transcripts"
    assert sorted(os.listdir(tmp_path)) == ["link.jsonl", "real"]
    assert history(link, None) == history(real, None) == [record]


# ---------------------------------------------------------------- Replacement lifecycle


def test_replacement_temp_name_and_discard_on_exception(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    with pytest.raises(RuntimeError):
        with Replacement(src) as repl:
            repl.file.write(COMPACTED)
            assert repl.temp_path.parent == tmp_path
            assert re.fullmatch(r"\.t\.jsonl\..+\.tmp", repl.temp_path.name)
            assert repl.temp_path.exists()
            raise RuntimeError("layer failed")
    assert os.listdir(tmp_path) == ["t.jsonl"]
    assert src.read_bytes() == ORIGINAL


def test_replacement_discarded_without_commit(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    with Replacement(src) as repl:
        repl.file.write(COMPACTED)
    assert os.listdir(tmp_path) == ["t.jsonl"]
    repl.discard()  # twice is harmless
    with pytest.raises(ValueError):
        repl.commit_new()


def test_commit_new_keeps_mode_of_existing_target(tmp_path: Path) -> None:
    out = make(tmp_path / "out.jsonl", b"old\n", perm=0o604)
    with Replacement(out) as repl:
        repl.file.write(COMPACTED)
        repl.commit_new()
    assert out.read_bytes() == COMPACTED
    assert mode(out) == 0o604
    assert os.listdir(tmp_path) == ["out.jsonl"]  # no archive for outputs


def test_commit_new_uses_umask_for_a_new_file(tmp_path: Path) -> None:
    out = tmp_path / "new.jsonl"
    with umask(0o027):
        assert current_umask() == 0o027
        with Replacement(out) as repl:
            repl.file.write(COMPACTED)
            repl.commit_new()
    assert out.read_bytes() == COMPACTED
    assert mode(out) == 0o640


# ---------------------------------------------------------------- locks


def test_lock_held_by_another_process_is_busy(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    with lock_held_elsewhere(src):
        with pytest.raises(Busy) as err:
            with file_lock(src, None):
                pytest.fail("lock should not have been granted")
        assert str(err.value) == f"{src}: busy: another compactcli process is rewriting it"
        assert err.value.exit_code == BUSY
        with pytest.raises(Busy):
            restore(src, None)
    with file_lock(src, None):  # free again once the holder let go
        pass


def test_lock_is_released_when_holder_dies(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    with lock_held_elsewhere(src) as proc:
        proc.kill()
        proc.wait(timeout=10)
        with file_lock(src, None):
            pass


def test_lock_excludes_a_second_holder_in_the_same_process(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    arch = tmp_path / "custom"
    with file_lock(src, arch):
        with pytest.raises(Busy):
            with file_lock(src, arch):
                pass
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl"]  # no lock file anywhere


def test_same_name_in_two_folders_with_one_archive_dir_do_not_lock_each_other(tmp_path: Path) -> None:
    shared = tmp_path / "archive"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = make(tmp_path / "a" / "session.jsonl")
    two = make(tmp_path / "b" / "session.jsonl")
    with file_lock(one, shared), file_lock(two, shared):
        pass
    with file_lock(one, shared), pytest.raises(Busy), file_lock(one, shared):
        pass


# ---------------------------------------------------------------- restore


def test_restore_round_trip_and_undo(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl", perm=0o640)
    compact(src)

    first = restore(src, None).record
    assert src.read_bytes() == ORIGINAL
    assert mode(src) == 0o640
    assert first.command == "restore"
    assert Path(first.archive).read_bytes() == COMPACTED  # the compacted state was kept
    assert (first.sha256_before, first.sha256_after) == (sha(COMPACTED), sha(ORIGINAL))

    again = restore(src, None)  # restoring twice is restoring once: nothing written
    assert again.record is None and src.read_bytes() == ORIGINAL

    restore(src, None, which=1)  # the restore's own entry undoes it
    assert src.read_bytes() == COMPACTED

    restore(src, None)  # the latest original, not the undo's archive
    assert src.read_bytes() == ORIGINAL
    assert [r.command for r in history(src, None)] == ["micro", "restore", "restore", "restore"]
    assert sorted(os.listdir(tmp_path)) == [".transcripts", "t.jsonl"]


def test_restore_nothing_archived(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    with pytest.raises(CompactError) as err:
        restore(src, None)
    assert err.value.exit_code == CHECK_FAILED
    assert "no archived original" in str(err.value)
    assert str(src) in str(err.value)
    assert src.read_bytes() == ORIGINAL


def test_restore_entry_out_of_range(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    compact(src)
    with pytest.raises(CompactError) as err:
        restore(src, None, which=5)
    assert err.value.exit_code == CHECK_FAILED
    assert src.read_bytes() == COMPACTED


def test_restore_refuses_a_damaged_archive(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    record = compact(src)
    Path(record.archive).write_bytes(ORIGINAL[:-1] + b"?")
    with pytest.raises(CompactError) as err:
        restore(src, None)
    assert err.value.exit_code == IO_ERR
    assert record.archive in str(err.value)
    assert src.read_bytes() == COMPACTED
    assert len(history(src, None)) == 1


def test_restore_missing_archive_is_io_error(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    record = compact(src)
    os.unlink(record.archive)
    with pytest.raises(CompactError) as err:
        restore(src, None)
    assert err.value.exit_code == IO_ERR
    assert record.archive in str(err.value)
    assert src.read_bytes() == COMPACTED


def test_restore_recreates_a_deleted_transcript(tmp_path: Path) -> None:
    src = make(tmp_path / "t.jsonl")
    compact(src)
    src.unlink()
    record = restore(src, None).record
    assert src.read_bytes() == ORIGINAL
    assert (record.archive, record.size_before, record.sha256_after) == ("", 0, sha(ORIGINAL))
    with pytest.raises(CompactError):  # that entry has nothing to go back to
        restore(src, None, which=-1)
    assert src.read_bytes() == ORIGINAL


def test_restore_with_custom_archive_dir_from_another_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "logs"
    work.mkdir()
    src = make(work / "t.jsonl")
    compact(src, archive_dir=tmp_path / "arch")
    monkeypatch.chdir(work)
    restore(Path("t.jsonl"), tmp_path / "arch")
    assert src.read_bytes() == ORIGINAL
    assert os.listdir(work) == ["t.jsonl"]
