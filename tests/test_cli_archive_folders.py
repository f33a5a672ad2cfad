"""Archive folders are never read as transcripts (docs/design.md, "Files and archives"): not the default
`.transcripts`, not an `--archive-dir` inside the searched tree, not any folder holding a compactcli
manifest, in any command.

The transcripts are the bundled samples, copied; which files micro changes is not asked of compactcli: the
test only needs that the archive folder's files are never named in any command's output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The samples compacted once with `--archive-dir TREE/backup`: the archive sits inside the tree."""
    root = tmp_path / "c2"
    shutil.copytree(SAMPLES, root, ignore=shutil.ignore_patterns("*.md"))
    first = run_cli("micro", "--archive-dir", root / "backup", root, text=True)
    assert first.returncode == 0, first.stderr
    assert (root / "backup" / "manifest.jsonl").exists()
    assert len(list((root / "backup").glob("*.jsonl"))) > 1  # the manifest and at least one archive
    return root


def mentions_backup(text: str) -> bool:
    return "backup" in text or "manifest" in text


def test_a_second_micro_without_archive_dir_leaves_the_archives_alone(tree: Path) -> None:
    archived = {p: p.read_bytes() for p in (tree / "backup").iterdir()}
    second = run_cli("micro", "-v", "--json", tree, text=True)
    assert second.returncode == 0, second.stderr
    assert not mentions_backup(second.stdout + second.stderr)
    paths = [json.loads(line)["path"] for line in second.stdout.splitlines()]
    assert len(paths) == len(list(SAMPLES.glob("*/*.jsonl")))  # every transcript, none of the archive
    assert {p: p.read_bytes() for p in (tree / "backup").iterdir()} == archived
    assert not (tree / "backup" / ".transcripts").exists()


def test_restore_still_works_after_the_second_run(tree: Path) -> None:
    run_cli("micro", tree, text=True)
    session = tree / "anthropic" / "session.jsonl"
    back = run_cli("restore", "--archive-dir", tree / "backup", session, text=True)
    assert back.returncode == 0, back.stderr
    assert session.read_bytes() == (SAMPLES / "anthropic" / "session.jsonl").read_bytes()


@pytest.mark.parametrize("command", ["validate", "estimate"])
def test_read_only_commands_skip_the_archive_folder(tree: Path, command: str) -> None:
    run = run_cli(command, "-v", tree, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not mentions_backup(run.stdout + run.stderr)
    assert f"{len(list(SAMPLES.glob('*/*.jsonl')))} files" in run.stderr


def test_an_archive_folder_given_as_the_path_is_not_searched(tree: Path) -> None:
    run = run_cli("estimate", "--format", "csv", tree / "backup", text=True)
    assert not mentions_backup(run.stdout)
    assert "0 files" in run.stderr


def test_another_tools_manifest_does_not_hide_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(SAMPLES / "openai", folder)
    (folder / "manifest.jsonl").write_text('{"name": "not compactcli"}\n')
    run = run_cli("validate", "-v", "--glob", "session.jsonl", folder, text=True)
    assert run.returncode == 0, run.stderr
    assert "1 file valid" in run.stderr
