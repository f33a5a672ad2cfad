"""Hostile archive folders, odd output targets, torn manifests, failing replacements (docs/design.md,
"Trust").

Everything runs through the installed CLI on real files, real symlinks, a real device node and a real
FIFO. Where a case needs another account, the CLI runs in a child that drops to `nobody` with os.setuid
(only possible when the tests run as root; skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import run_cli, start_cli
from helpers.other_user import NOBODY, cli_as, needs_root

OK, CHECK_FAILED, IO_ERR, BUSY = 0, 1, 74, 75
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "anthropic" / "session.jsonl"


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    shutil.copyfile(SAMPLE, path)
    return path


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder every account can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="compactcli-shared-"))
    os.chmod(folder, 0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def manifest_records(folder: Path) -> list[dict]:
    manifest = folder / "manifest.jsonl"
    if not manifest.exists():
        return []
    return [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------- trust of archive folders


@needs_root
def test_another_users_world_writable_archive_folder_is_refused(tmp_path: Path, transcript: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("export PS1='$ '\n")
    os.chmod(victim, 0o644)
    folder = tmp_path / ".transcripts"
    folder.mkdir()
    (folder / "manifest.jsonl").symlink_to(victim)
    (folder / "t.jsonl.lock").symlink_to(victim)
    os.chown(folder, NOBODY, NOBODY)
    os.chmod(folder, 0o777)
    before = transcript.read_bytes()

    run = run_cli("micro", transcript, text=True)

    assert run.returncode == IO_ERR, run.stderr
    assert f"{transcript}: {folder}: archive folder owned by uid {NOBODY}" in run.stderr
    assert victim.read_text() == "export PS1='$ '\n"
    assert mode(victim) == 0o644
    assert transcript.read_bytes() == before
    assert sorted(os.listdir(folder)) == ["manifest.jsonl", "t.jsonl.lock"]


def test_own_archive_folder_writable_by_others_is_refused(transcript: Path) -> None:
    folder = transcript.parent / ".transcripts"
    folder.mkdir()
    os.chmod(folder, 0o777)
    before = transcript.read_bytes()
    run = run_cli("micro", transcript, text=True)
    assert run.returncode == IO_ERR, run.stderr
    assert "writable by group or others (mode 0777)" in run.stderr
    assert transcript.read_bytes() == before
    assert os.listdir(folder) == []


def test_symlinked_archive_folder_is_refused(tmp_path: Path, transcript: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (transcript.parent / ".transcripts").symlink_to(elsewhere)
    before = transcript.read_bytes()
    run = run_cli("micro", transcript, text=True)
    assert run.returncode == IO_ERR, run.stderr
    assert "archive folder is a symbolic link" in run.stderr
    assert transcript.read_bytes() == before
    assert os.listdir(elsewhere) == []


def test_symlinked_manifest_in_own_folder_is_never_written_through(tmp_path: Path, transcript: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.chmod(victim, 0o644)
    folder = transcript.parent / ".transcripts"
    folder.mkdir(mode=0o700)
    (folder / "manifest.jsonl").symlink_to(victim)
    before = transcript.read_bytes()
    run = run_cli("micro", transcript, text=True)
    assert run.returncode == IO_ERR, run.stderr
    assert "manifest.jsonl: a symbolic link in the archive folder" in run.stderr
    assert victim.read_text() == "keep me\n" and mode(victim) == 0o644
    assert transcript.read_bytes() == before
    assert sorted(os.listdir(folder)) == ["manifest.jsonl"]  # the archive made for it was removed


def test_a_planted_lock_link_is_neither_followed_nor_chmodded(tmp_path: Path, transcript: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.chmod(victim, 0o644)
    folder = transcript.parent / ".transcripts"
    folder.mkdir(mode=0o700)
    (folder / "t.jsonl.lock").symlink_to(victim)
    run = run_cli("micro", transcript, text=True)
    assert run.returncode == OK, run.stderr
    assert victim.read_text() == "keep me\n" and mode(victim) == 0o644
    assert len(manifest_records(folder)) == 1


def test_missing_archive_parents_are_private_even_with_umask_000(tmp_path: Path, transcript: Path) -> None:
    target = tmp_path / "a" / "b" / "archive"
    run = run_cli("micro", "--archive-dir", target, transcript, umask=0, text=True)
    assert run.returncode == OK, run.stderr
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", target)] == [0o700] * 3
    archive = Path(manifest_records(target)[0]["archive"])
    assert mode(archive) == 0o600 and mode(target / "manifest.jsonl") == 0o600


# ---------------------------------------------------------------- symlinks in place


def test_in_place_on_a_symlink_rewrites_the_target_and_keeps_history_with_it(
    tmp_path: Path, transcript: Path
) -> None:
    links = tmp_path / "links"
    links.mkdir()
    link = links / "t.jsonl"
    link.symlink_to(transcript)
    before = transcript.read_bytes()

    run = run_cli("micro", link, text=True)

    assert run.returncode == OK, run.stderr
    assert link.is_symlink() and transcript.read_bytes() != before
    assert os.listdir(links) == ["t.jsonl"]  # no archive or lock beside the link
    (record,) = manifest_records(transcript.parent / ".transcripts")
    assert record["source"] == str(transcript)
    listed = run_cli("restore", "--list", link, text=True)
    assert listed.returncode == OK and record["archive"] in listed.stdout
    assert run_cli("restore", link, text=True).returncode == OK
    assert transcript.read_bytes() == before and link.is_symlink()


# ---------------------------------------------------------------- -o onto things that are not files


@needs_root
def test_output_onto_a_device_writes_into_it(tmp_path: Path, transcript: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    run = run_cli("micro", transcript, "-o", null, text=True)
    assert run.returncode == OK, run.stderr
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert sorted(os.listdir(tmp_path)) == ["null", "t.jsonl"]


def test_output_onto_a_fifo_writes_into_it(tmp_path: Path, transcript: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    run = run_cli("micro", transcript, "-o", fifo, timeout=60, text=True)
    reader.join(timeout=60)
    assert run.returncode == OK, run.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    expected = run_cli("micro", transcript, "-o", "-", text=True).stdout
    assert received == [expected.encode()] and expected


# ---------------------------------------------------------------- the manifest


def test_a_torn_manifest_line_hides_no_record(transcript: Path) -> None:
    folder = transcript.parent / ".transcripts"
    folder.mkdir(mode=0o700)
    torn = b'{"source": "/x", "archive": "/y", "sha256_bef'  # what a kill -9 mid-write leaves
    (folder / "manifest.jsonl").write_bytes(torn)

    run = run_cli("micro", transcript, text=True)

    assert run.returncode == OK, run.stderr
    lines = (folder / "manifest.jsonl").read_bytes().split(b"\n")
    assert lines[0] == torn and json.loads(lines[1])["source"] == str(transcript)
    listed = run_cli("restore", "--list", transcript, text=True)
    assert listed.returncode == OK, listed.stderr
    assert "micro" in listed.stdout
    assert f"{folder / 'manifest.jsonl'}:1: skipped" in listed.stderr


def test_a_full_disk_during_the_manifest_append_leaves_no_torn_line(transcript: Path) -> None:
    folder = transcript.parent / ".transcripts"
    folder.mkdir(mode=0o700)
    filler = (json.dumps({"note": "x" * 200}) + "\n").encode() * 300
    (folder / "manifest.jsonl").write_bytes(filler)
    before = transcript.read_bytes()
    limit = len(filler) + 100  # the transcript's archive fits, the manifest record does not

    def full_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = run_cli("micro", transcript, text=True, preexec_fn=full_disk)

    assert run.returncode == IO_ERR, run.stderr
    assert "File too large" in run.stderr
    assert transcript.read_bytes() == before
    assert (folder / "manifest.jsonl").read_bytes() == filler  # the partial line was cut off
    assert sorted(os.listdir(folder)) == ["manifest.jsonl"]  # and its archive removed
    again = run_cli("micro", transcript, text=True)
    assert again.returncode == OK, again.stderr
    assert run_cli("restore", "--list", transcript, text=True).returncode == OK


@needs_root
def test_a_failed_replacement_leaves_no_archive_and_no_record(open_dir: Path) -> None:
    # A sticky folder: another account may write the file but not rename over it (EPERM).
    transcript = open_dir / "t.jsonl"
    shutil.copyfile(SAMPLE, transcript)
    os.chmod(transcript, 0o666)
    before = transcript.read_bytes()

    run = cli_as(NOBODY, "micro", transcript, cwd=open_dir)

    assert run.returncode == IO_ERR, run.stderr
    assert "Operation not permitted" in run.stderr and str(transcript) in run.stderr
    assert transcript.read_bytes() == before
    folder = open_dir / ".transcripts"
    assert manifest_records(folder) == []
    assert [p for p in os.listdir(folder) if p != "manifest.jsonl"] == []
    assert [p for p in os.listdir(open_dir) if p.endswith(".tmp")] == []


# ---------------------------------------------------------------- restore


def test_restore_reads_no_file_outside_the_archive_folder(tmp_path: Path, transcript: Path) -> None:
    assert run_cli("micro", transcript, text=True).returncode == OK
    folder = transcript.parent / ".transcripts"
    (record,) = manifest_records(folder)
    secret = tmp_path / "private" / "copy.jsonl"
    secret.parent.mkdir()
    shutil.copyfile(record["archive"], secret)  # same bytes, so the sha256 would match
    os.chmod(secret, 0o600)
    forged = dict(record, archive=str(secret))
    with open(folder / "manifest.jsonl", "a") as f:
        f.write(json.dumps(forged) + "\n")
    compacted = transcript.read_bytes()

    run = run_cli("restore", transcript, text=True)

    assert run.returncode == IO_ERR, run.stderr
    assert f"{secret}: the manifest names a file outside the archive folder" in run.stderr
    assert transcript.read_bytes() == compacted


def test_restore_refuses_an_archive_replaced_by_a_symlink(tmp_path: Path, transcript: Path) -> None:
    assert run_cli("micro", transcript, text=True).returncode == OK
    (record,) = manifest_records(transcript.parent / ".transcripts")
    archive = Path(record["archive"])
    keep = tmp_path / "kept.jsonl"
    archive.rename(keep)
    archive.symlink_to(keep)
    compacted = transcript.read_bytes()
    run = run_cli("restore", transcript, text=True)
    assert run.returncode == IO_ERR, run.stderr
    assert "a symbolic link in the archive folder" in run.stderr
    assert transcript.read_bytes() == compacted


# ---------------------------------------------------------------- read-only work writes nothing


def test_micro_on_a_file_that_does_not_change_creates_nothing(tmp_path: Path, transcript: Path) -> None:
    assert run_cli("micro", transcript, text=True).returncode == OK
    shutil.rmtree(transcript.parent / ".transcripts")
    run = run_cli("micro", transcript, text=True)  # already compacted: nothing to do
    assert run.returncode == OK, run.stderr
    assert "0 compacted, 1 unchanged" in run.stderr or "1 unchanged" in run.stderr
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl"]


def test_previews_and_restore_of_stdin_create_nothing(tmp_path: Path, transcript: Path) -> None:
    for args in (["--check"], ["--diff"], ["--dry-run"]):
        run_cli("micro", *args, transcript, cwd=tmp_path, text=True)
    with open(transcript, "rb") as stdin:
        start_cli("restore", "-", stdin=stdin, cwd=tmp_path).wait(timeout=120)
    run_cli("restore", "--list", transcript, cwd=tmp_path, text=True)
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl"]


def test_a_successful_run_leaves_only_the_result_beside_the_transcript(
    tmp_path: Path, transcript: Path
) -> None:
    assert run_cli("micro", transcript, text=True).returncode == OK
    assert sorted(os.listdir(tmp_path)) == [".transcripts", "t.jsonl"]
    inside = sorted(os.listdir(tmp_path / ".transcripts"))
    assert len(inside) == 2 and "manifest.jsonl" in inside
    assert not [name for name in inside if name.endswith((".lock", ".partial", ".tmp"))]


# ---------------------------------------------------------------- a writer holding the file open

HOLDER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("open", flush=True)
sys.stdin.readline()
os.write(fd, b'{"role":"user","content":"written after the run"}\n')
os.close(fd)
"""


def test_a_writer_holding_the_file_open_makes_it_busy(transcript: Path) -> None:
    before = transcript.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(transcript)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        run = run_cli("micro", transcript, text=True)
    finally:
        holder.communicate("go\n", timeout=30)
    assert run.returncode == BUSY, run.stderr
    assert f"process {holder.pid} holds it open for writing" in run.stderr
    assert transcript.read_bytes() == before + b'{"role":"user","content":"written after the run"}\n'
    assert manifest_records(transcript.parent / ".transcripts") == []


def test_replay_without_outputs_writes_nothing(tmp_path: Path, transcript: Path) -> None:
    run = run_cli(
        "replay", transcript, "--backend", "digest", "--threshold", 200, "--keep", 0, "--json", text=True
    )
    assert run.returncode == OK, run.stderr
    report = json.loads(run.stdout)["stats"]
    assert report["compactions"]["auto"] >= 1  # it did compact, in memory
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl"]
    kept = run_cli(
        "replay",
        transcript,
        "--backend",
        "digest",
        "--threshold",
        200,
        "--keep",
        0,
        "-o",
        tmp_path / "o",
        text=True,
    )
    assert kept.returncode == OK, kept.stderr
    assert len(list((tmp_path / ".transcripts").glob("t.*.jsonl"))) >= 1
