"""`compactcli restore` through the installed command: the original comes back byte for byte, a restore
can be undone, --list shows the history, and a missing or damaged archive is refused without a write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli import run_cli

CHECK_FAILED, IO_ERR = 1, 74
LONG = "x" * 300


def transcript(results: int = 5) -> bytes:
    """A task, `results` bash calls each answered by 300 characters, a final answer."""
    records: list[dict] = [{"role": "user", "content": "Fix the build."}]
    for i in range(results):
        use = {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {"command": "ls"}}
        records.append({"role": "assistant", "content": [use]})
        answer = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": LONG}
        records.append({"role": "user", "content": [answer]})
    records.append({"role": "assistant", "content": "Done."})
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


ORIGINAL = transcript()


@pytest.fixture
def compacted(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(ORIGINAL)
    run = run_cli("micro", path, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert path.read_bytes() != ORIGINAL  # results 1 and 2 of 5 were cleared
    return path


def test_restore_puts_the_original_back_and_can_be_undone(compacted: Path) -> None:
    after_micro = compacted.read_bytes()
    run = run_cli("restore", compacted, cwd=compacted.parent, text=True)
    assert run.returncode == 0, run.stderr
    assert compacted.read_bytes() == ORIGINAL
    assert run.stderr.startswith(f"restored {compacted} from ")
    assert run.stderr.splitlines()[-1] == "1 file restored, 0 unchanged"

    undo = run_cli("restore", "--which", 1, compacted, cwd=compacted.parent)  # the restore's own entry
    assert undo.returncode == 0 and compacted.read_bytes() == after_micro


def test_restore_list_shows_each_entry(compacted: Path) -> None:
    assert run_cli("restore", compacted).returncode == 0
    listed = run_cli("restore", "--list", "--json", compacted, text=True)
    assert listed.returncode == 0, listed.stderr
    [listing] = [json.loads(line) for line in listed.stdout.splitlines()]  # one object per file
    commands = [entry["command"] for entry in listing["stats"]["history"]]
    assert commands == ["micro", "restore"]
    assert compacted.read_bytes() == ORIGINAL  # listing writes nothing


def test_restore_which_zero_is_the_first_original(compacted: Path) -> None:
    assert run_cli("restore", compacted).returncode == 0
    assert run_cli("restore", "--which", 1, compacted).returncode == 0  # back to the compacted file
    run = run_cli("restore", "--which", "0", compacted)
    assert run.returncode == 0 and compacted.read_bytes() == ORIGINAL


def test_restoring_twice_is_restoring_once(compacted: Path) -> None:
    once = run_cli("restore", compacted, text=True)
    assert once.returncode == 0, once.stderr
    [archives_after_once] = [sorted((compacted.parent / ".transcripts").iterdir())]
    twice = run_cli("restore", compacted, text=True)
    assert twice.returncode == 0, twice.stderr
    assert compacted.read_bytes() == ORIGINAL  # not the compacted file the first restore archived
    assert twice.stderr.splitlines()[-1] == "0 files restored, 1 unchanged"
    assert f"unchanged {compacted} (it already holds " in twice.stderr
    assert sorted((compacted.parent / ".transcripts").iterdir()) == archives_after_once  # nothing written
    # after a second micro and its restore, the latest original is still the one put back
    assert run_cli("micro", compacted).returncode == 0
    assert run_cli("restore", compacted).returncode == 0
    assert run_cli("restore", compacted).returncode == 0
    assert compacted.read_bytes() == ORIGINAL


def test_restore_list_marks_the_pristine_original(compacted: Path) -> None:
    assert run_cli("micro", "--keep", 1, compacted).returncode == 0  # a second compaction
    assert run_cli("restore", compacted).returncode == 0
    listed = run_cli("restore", "--list", "--json", compacted, text=True)
    [listing] = [json.loads(line) for line in listed.stdout.splitlines()]
    history = listing["stats"]["history"]
    assert [(e["command"], e["pristine"]) for e in history] == [
        ("micro", True),
        ("micro", False),
        ("restore", False),
    ]
    assert Path(history[0]["archive"]).read_bytes() == ORIGINAL
    text = run_cli("restore", "--list", compacted, text=True).stdout.splitlines()
    assert text[0].endswith("  pristine original") and not any("pristine" in line for line in text[1:])


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    for args in (
        [tmp_path / "nope.jsonl"],
        ["--list", tmp_path / "nope.jsonl"],
        [tmp_path / "no" / "x.jsonl"],
    ):
        run = run_cli("restore", *args, text=True)
        assert run.returncode == 2, run.stderr
        assert "nope.jsonl" in run.stderr or "x.jsonl" in run.stderr
        assert "does not exist" in run.stderr
    assert sorted(tmp_path.iterdir()) == []  # nothing written


def test_a_deleted_transcript_with_an_original_is_restored(compacted: Path) -> None:
    compacted.unlink()
    run = run_cli("restore", compacted, text=True)
    assert run.returncode == 0, run.stderr
    assert compacted.read_bytes() == ORIGINAL


def test_restore_without_an_archive_is_a_check_failure(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(ORIGINAL)
    run = run_cli("restore", path, text=True)
    assert run.returncode == CHECK_FAILED
    assert str(path) in run.stderr and "no archived original" in run.stderr
    assert path.read_bytes() == ORIGINAL


def test_restore_refuses_a_damaged_archive(compacted: Path) -> None:
    after_micro = compacted.read_bytes()
    [archive] = (compacted.parent / ".transcripts").glob("t.*.jsonl")
    archive.write_bytes(ORIGINAL[:-2] + b"?\n")  # same size, other bytes
    run = run_cli("restore", compacted, text=True)
    assert run.returncode == IO_ERR
    assert str(archive) in run.stderr
    assert compacted.read_bytes() == after_micro
