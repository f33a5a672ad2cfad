"""`compactcli prune` and `compactcli restore` on folders, through the installed command.

Archives are made by real micro runs (each with a smaller --keep, so each run changes the file and
archives it again); the manifest is then read as JSON lines to know which archive is which. The rules'
own tests pass --prune-original, so that the oldest entry is one like any other; the pristine
original's protection is tested on its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.cli import run_cli, start_cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
OK, USAGE, IO_ERR = 0, 2, 74


def manifest_lines(folder: Path) -> list[bytes]:
    return (folder / ".transcripts" / "manifest.jsonl").read_bytes().splitlines(keepends=True)


def records(folder: Path, name: str) -> list[dict]:
    found = [json.loads(line) for line in manifest_lines(folder)]
    return [r for r in found if Path(r["source"]).name == name]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """a.jsonl archived three times, b.jsonl once, all in tmp/.transcripts."""
    shutil.copy(SAMPLES / "openai" / "session.jsonl", tmp_path / "a.jsonl")
    shutil.copy(SAMPLES / "anthropic" / "session.jsonl", tmp_path / "b.jsonl")
    for keep in (6, 5, 4):
        run = run_cli("micro", "--keep", keep, "--min-chars", 0, tmp_path / "a.jsonl", text=True)
        assert run.returncode == OK, run.stderr
    assert run_cli("micro", tmp_path / "b.jsonl", text=True).returncode == OK
    assert len(records(tmp_path, "a.jsonl")) == 3
    assert len(records(tmp_path, "b.jsonl")) == 1
    return tmp_path


def archives(folder: Path) -> set[str]:
    return {p.name for p in (folder / ".transcripts").glob("*.*.*.jsonl")}


def age(folder: Path, name: str, position: int, when: str) -> None:
    """Rewrite the manifest so that entry `position` of `name` was made at `when` (an old run)."""
    lines = manifest_lines(folder)
    mine = [i for i, line in enumerate(lines) if Path(json.loads(line)["source"]).name == name]
    record = json.loads(lines[mine[position]])
    record["time"] = when
    lines[mine[position]] = (json.dumps(record) + "\n").encode()
    (folder / ".transcripts" / "manifest.jsonl").write_bytes(b"".join(lines))


def test_keep_last_keeps_the_newest_per_file_and_nothing_else_changes(folder: Path) -> None:
    a = records(folder, "a.jsonl")
    b_lines = [line for line in manifest_lines(folder) if b"b.jsonl" in line]
    run = run_cli("prune", "--prune-original", "--keep-last", 1, folder, text=True)
    assert run.returncode == OK, run.stderr
    assert "2 archives dropped" in run.stderr
    assert records(folder, "a.jsonl") == [a[-1]]
    assert [line for line in manifest_lines(folder) if b"b.jsonl" in line] == b_lines
    assert archives(folder) == {
        Path(a[-1]["archive"]).name,
        Path(records(folder, "b.jsonl")[0]["archive"]).name,
    }
    # restore still finds the latest original
    assert run_cli("restore", folder / "a.jsonl", text=True).returncode == OK
    assert (folder / "a.jsonl").read_bytes() == Path(a[-1]["archive"]).read_bytes()


def test_a_file_path_prunes_only_that_file(folder: Path) -> None:
    run = run_cli("prune", "--prune-original", "--keep-last", 0, folder / "b.jsonl", text=True)
    assert run.returncode == OK, run.stderr
    assert records(folder, "b.jsonl") == []
    assert len(records(folder, "a.jsonl")) == 3


def test_older_than_drops_only_old_entries(folder: Path) -> None:
    age(folder, "a.jsonl", 0, "2020-01-01T00:00:00.000000Z")
    newer = records(folder, "a.jsonl")[1:]
    run = run_cli("prune", "--prune-original", "--older-than", "30d", folder, text=True)
    assert run.returncode == OK, run.stderr
    assert records(folder, "a.jsonl") == newer
    assert len(records(folder, "b.jsonl")) == 1


def test_both_rules_drop_what_neither_keeps(folder: Path) -> None:
    age(folder, "a.jsonl", 0, "2020-01-01T00:00:00.000000Z")
    age(folder, "a.jsonl", 2, "2020-01-02T00:00:00.000000Z")
    everything = records(folder, "a.jsonl")
    run = run_cli("prune", "--prune-original", "--keep-last", 1, "--older-than", "2w", folder, text=True)
    assert run.returncode == OK, run.stderr
    # entry 0: old and not the last: dropped; entry 1: recent: kept; entry 2: old but the last: kept
    assert records(folder, "a.jsonl") == everything[1:]


def test_dry_run_changes_nothing(folder: Path) -> None:
    before = (manifest_lines(folder), archives(folder))
    run = run_cli("prune", "--prune-original", "--keep-last", 0, "--dry-run", "-v", folder, text=True)
    assert run.returncode == OK, run.stderr
    assert "4 archives would be dropped" in run.stderr
    assert f"would drop 3 archives of {folder / 'a.jsonl'} (0 kept)" in run.stderr
    assert (manifest_lines(folder), archives(folder)) == before


def test_a_rule_is_required_and_ages_are_checked(folder: Path) -> None:
    assert run_cli("prune", folder, text=True).returncode == USAGE
    bad = run_cli("prune", "--prune-original", "--older-than", "soon", folder, text=True)
    assert bad.returncode == USAGE
    assert "'soon' is not an age" in bad.stderr


def test_a_folder_others_can_write_is_not_pruned(folder: Path) -> None:
    before = (manifest_lines(folder), archives(folder))
    os.chmod(folder / ".transcripts", 0o777)
    run = run_cli("prune", "--prune-original", "--keep-last", 0, folder, text=True)
    assert run.returncode == IO_ERR
    assert "writable by group or others" in run.stderr
    assert (manifest_lines(folder), archives(folder)) == before


def test_an_archive_named_outside_the_folder_is_never_removed(folder: Path) -> None:
    outside = folder / "precious.jsonl"
    outside.write_text("{}\n")
    lines = manifest_lines(folder)
    forged = json.loads(lines[0])
    forged["archive"] = str(outside)
    (folder / ".transcripts" / "manifest.jsonl").write_bytes(
        b"".join([(json.dumps(forged) + "\n").encode(), *lines[1:]])
    )
    run = run_cli("prune", "--prune-original", "--keep-last", 0, folder, text=True)
    assert run.returncode == OK, run.stderr
    assert outside.read_text() == "{}\n"


def test_restore_a_folder_puts_every_original_back(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(SAMPLES, tree, ignore=shutil.ignore_patterns("*.md"))
    assert run_cli("micro", tree, text=True).returncode == OK
    changed = [
        p
        for p in sorted(tree.rglob("*.jsonl"))
        if ".transcripts" not in p.parts and p.read_bytes() != (SAMPLES / p.relative_to(tree)).read_bytes()
    ]
    assert len(changed) >= 3
    listing = run_cli("restore", "--list", tree, text=True)
    assert listing.returncode == OK, listing.stderr
    assert len(listing.stdout.splitlines()) == len(changed)
    run = run_cli("restore", tree, text=True)
    assert run.returncode == OK, run.stderr
    for path in tree.rglob("*.jsonl"):
        if ".transcripts" not in path.parts:
            assert path.read_bytes() == (SAMPLES / path.relative_to(tree)).read_bytes(), path


def test_restore_a_folder_with_a_shared_archive_dir(tmp_path: Path) -> None:
    tree, store = tmp_path / "tree", tmp_path / "store"
    shutil.copytree(SAMPLES / "openai", tree)
    assert run_cli("micro", "--archive-dir", store, tree, text=True).returncode == OK
    run = run_cli("restore", "--archive-dir", store, tree, text=True)
    assert run.returncode == OK, run.stderr
    for path in tree.glob("*.jsonl"):
        assert path.read_bytes() == (SAMPLES / "openai" / path.name).read_bytes()


def test_list_of_a_file_without_history_says_so_and_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    shutil.copy(SAMPLES / "openai" / "session.jsonl", path)
    run = run_cli("restore", "--list", path, text=True)
    assert run.returncode == OK
    assert run.stdout == ""
    assert f"{path}: no history" in run.stderr


def test_a_record_appended_while_prune_rewrites_the_manifest_is_kept(folder: Path) -> None:
    """prune replaces the manifest under its lock; a micro that appends meanwhile waits, then writes
    into the new manifest (not the replaced one, where its line would be lost)."""
    from compactcli.storage.manifest import rewriting_manifest

    other = folder / "c.jsonl"
    shutil.copy(SAMPLES / "openai" / "flattened.jsonl", other)
    with rewriting_manifest(folder / ".transcripts") as manifest:
        assert manifest is not None
        micro = start_cli("micro", other, stderr=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            micro.wait(timeout=2)  # waiting for the manifest's lock
        lines = manifest.content.splitlines(keepends=True)
        manifest.replace([line for line in lines if Path(json.loads(line)["source"]).name != "b.jsonl"])
    assert micro.wait(timeout=60) == OK, micro.stderr.read()
    assert records(folder, "b.jsonl") == []
    assert len(records(folder, "a.jsonl")) == 3
    [added] = records(folder, "c.jsonl")
    assert Path(added["archive"]).is_file()


BUSY = 75


def test_prune_leaves_the_archives_of_a_transcript_another_run_holds(folder: Path) -> None:
    """A summarize of a.jsonl holds its lock while the model writes; a prune beside it leaves a.jsonl's
    archives and manifest lines alone and says it is busy (75), and prunes the other files."""
    import threading

    from helpers.fakeapi import FakeAnthropic

    asked, answer = threading.Event(), threading.Event()

    def slow_summary(body: dict) -> str:
        asked.set()
        answer.wait(60)
        return "The parser was fixed."

    a_before = records(folder, "a.jsonl")
    with FakeAnthropic() as api:
        api.reply_text = slow_summary
        summarize = start_cli(
            "summarize",
            "--backend",
            "anthropic",
            folder / "a.jsonl",
            env=api.env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert asked.wait(60), "summarize never asked the model"
            pruned = run_cli("prune", "--prune-original", "--keep-last", 0, "-v", folder, text=True)
        finally:
            answer.set()
            done = summarize.wait(timeout=60)
    assert pruned.returncode == BUSY, pruned.stderr
    assert f"{(folder / 'a.jsonl').resolve()}: busy" in pruned.stderr
    assert records(folder, "a.jsonl")[:3] == a_before  # nothing of a.jsonl went
    assert all(Path(record["archive"]).is_file() for record in a_before)
    assert records(folder, "b.jsonl") == []  # the other file was pruned
    assert done == OK, summarize.stderr.read()
    assert len(records(folder, "a.jsonl")) == 4
    # Once the run is over, its archives can go.
    again = run_cli("prune", "--prune-original", "--keep-last", 0, folder, text=True)
    assert again.returncode == OK, again.stderr
    assert records(folder, "a.jsonl") == [] and archives(folder) == set()


def test_transcripts_that_are_gone_are_pruned_together(folder: Path) -> None:
    # Each locks the folder it was in (as a restore recreating it would): once for both.
    (folder / "a.jsonl").unlink()
    (folder / "b.jsonl").unlink()
    run = run_cli("prune", "--prune-original", "--keep-last", 0, folder, text=True)
    assert run.returncode == OK, run.stderr
    assert manifest_lines(folder) == [] and archives(folder) == set()


def test_many_transcripts_are_pruned_within_a_low_limit_of_open_files(tmp_path: Path) -> None:
    # One lock (an open descriptor) per transcript: 120 of them under a limit of 64 open files.
    sample = (SAMPLES / "openai" / "session.jsonl").read_bytes()
    for number in range(120):
        (tmp_path / f"s{number:03}.jsonl").write_bytes(sample)
    assert run_cli("micro", "--keep", 1, "--min-chars", 0, tmp_path, text=True).returncode == OK
    assert len(archives(tmp_path)) == 120
    run = run_cli(
        "prune", "--prune-original", "--keep-last", 0, tmp_path, prefix=("prlimit", "--nofile=64"), text=True
    )
    assert run.returncode == OK, run.stderr
    assert "120 archives dropped" in run.stderr
    assert archives(tmp_path) == set() and manifest_lines(tmp_path) == []


def test_keep_last_keeps_the_pristine_original_unless_told(folder: Path) -> None:
    a = records(folder, "a.jsonl")
    pristine = Path(a[0]["archive"])
    original = (SAMPLES / "openai" / "session.jsonl").read_bytes()
    assert pristine.read_bytes() == original
    run = run_cli("prune", "--keep-last", 1, folder, text=True)
    assert run.returncode == OK, run.stderr
    assert records(folder, "a.jsonl") == [a[0], a[-1]]  # the pristine original and the newest
    assert "1 archive dropped" in run.stderr
    assert pristine.read_bytes() == original
    assert run_cli("restore", "--which", 0, folder / "a.jsonl", text=True).returncode == OK
    assert (folder / "a.jsonl").read_bytes() == original
    # --keep-last 0 keeps it too; --prune-original lets it go
    assert run_cli("prune", "--keep-last", 0, folder / "b.jsonl", text=True).returncode == OK
    assert len(records(folder, "b.jsonl")) == 1
    assert (
        run_cli("prune", "--prune-original", "--keep-last", 0, folder / "b.jsonl", text=True).returncode == OK
    )
    assert records(folder, "b.jsonl") == []
