"""Which files a folder gives (runner.discover): the glob, hidden files, archive folders and symlinks, in a
stable order (each folder's files by name, then its sub-folders by name, top down)."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.other_user import hand_to_nobody, needs_a_lockable_folder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactcli.run.runner import discover

IO_ERR = 74

MANIFEST = b'{"source": "/x/a.jsonl", "sha256_before": "00", "archive": "a.jsonl"}\n'


def make_tree(root: Path) -> None:
    (root / "sub" / ".transcripts").mkdir(parents=True)
    (root / "arch").mkdir()
    (root / "dir.jsonl").mkdir()
    for name in ("b.jsonl", "a.jsonl", "A.jsonl", ".hidden.jsonl", "notes.txt", "sub/c.jsonl"):
        (root / name).write_text("{}\n")
    (root / "sub/.transcripts/x.jsonl").write_text("{}\n")
    (root / "arch/manifest.jsonl").write_bytes(MANIFEST)
    (root / "arch/y.jsonl").write_text("{}\n")
    (root / "dir.jsonl/d.jsonl").write_text("{}\n")
    (root / "link.jsonl").symlink_to(root / "sub/c.jsonl")
    (root / "dirlink").symlink_to(root / "sub", target_is_directory=True)
    (root / "dangling.jsonl").symlink_to(root / "missing.jsonl")
    (root / "loop.jsonl").symlink_to(root / "loop.jsonl")


def test_files_by_name_then_sub_folders_skipping_hidden_archives_and_folder_links(tmp_path: Path) -> None:
    make_tree(tmp_path)
    root = str(tmp_path)
    assert discover([root], "*.jsonl") == [
        f"{root}/A.jsonl",
        f"{root}/a.jsonl",
        f"{root}/b.jsonl",
        f"{root}/link.jsonl",  # a symlink to a file is a file; a dangling or looping one is not
        f"{root}/dir.jsonl/d.jsonl",  # a folder named like a transcript is searched, not taken
        f"{root}/sub/c.jsonl",
    ]


def test_the_glob_picks_names_case_sensitively(tmp_path: Path) -> None:
    make_tree(tmp_path)
    root = str(tmp_path)
    assert discover([root], "[ab].jsonl") == [f"{root}/a.jsonl", f"{root}/b.jsonl"]
    assert discover([root], "A.jsonl") == [f"{root}/A.jsonl"]
    assert discover([root], "*.txt") == [f"{root}/notes.txt"]
    assert discover([root], "*") == [
        f"{root}/A.jsonl",
        f"{root}/a.jsonl",
        f"{root}/b.jsonl",
        f"{root}/link.jsonl",
        f"{root}/notes.txt",
        f"{root}/dir.jsonl/d.jsonl",
        f"{root}/sub/c.jsonl",
    ]


def test_a_given_archive_dir_is_not_entered(tmp_path: Path) -> None:
    make_tree(tmp_path)
    root = str(tmp_path)
    assert discover([root], "*.jsonl", tmp_path / "dir.jsonl") == [
        f"{root}/A.jsonl",
        f"{root}/a.jsonl",
        f"{root}/b.jsonl",
        f"{root}/link.jsonl",
        f"{root}/sub/c.jsonl",
    ]


@pytest.mark.parametrize("given", [".", "./", "./sub/..", "sub//"])
def test_items_are_named_as_pathlib_spells_the_folder(tmp_path: Path, monkeypatch, given: str) -> None:
    make_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    found = discover([given], "*.jsonl")
    expected = {
        ".": ["A.jsonl", "a.jsonl", "b.jsonl", "link.jsonl", "dir.jsonl/d.jsonl", "sub/c.jsonl"],
        "./": ["A.jsonl", "a.jsonl", "b.jsonl", "link.jsonl", "dir.jsonl/d.jsonl", "sub/c.jsonl"],
        "./sub/..": [
            "sub/../A.jsonl",
            "sub/../a.jsonl",
            "sub/../b.jsonl",
            "sub/../link.jsonl",
            "sub/../dir.jsonl/d.jsonl",
            "sub/../sub/c.jsonl",
        ],
        "sub//": ["sub/c.jsonl"],
    }
    assert found == expected[given]


def test_a_pattern_across_folders_still_goes_through_pathlib(tmp_path: Path) -> None:
    make_tree(tmp_path)
    root = str(tmp_path)
    assert discover([root], "sub/*.jsonl") == [f"{root}/sub/c.jsonl"]


@needs_a_lockable_folder
def test_a_symlink_whose_target_cannot_be_looked_at_fails_the_run_naming_it() -> None:
    top = Path(tempfile.mkdtemp(prefix="compactcli-locked-link-"))
    try:
        (top / "logs" / "locked").mkdir(parents=True)
        (top / "logs" / "a.jsonl").write_text('{"role": "user", "content": "hi"}\n')
        (top / "logs" / "locked" / "b.jsonl").write_text('{"role": "user", "content": "hi"}\n')
        (top / "logs" / "peek.jsonl").symlink_to("locked/b.jsonl")
        nobody = hand_to_nobody(top)
        os.chmod(top, 0o755)
        os.chmod(top / "logs" / "locked", 0o000)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        run: subprocess.CompletedProcess = run_cli("validate", "logs", cwd=top, env=env, prefix=nobody)
        assert run.returncode == IO_ERR, run.stderr
        assert b"logs/peek.jsonl: Permission denied" in run.stderr
        assert b"1 file valid" in run.stderr
    finally:
        os.chmod(top / "logs" / "locked", 0o755)
        shutil.rmtree(top)


# A plain model of the contract, to compare with on generated trees.
def reference(root: str, glob: str) -> list[str]:
    found = []
    for folder, subfolders, _ in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != ".transcripts")
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if fnmatch.fnmatchcase(name, glob) and not name.startswith(".") and os.path.isfile(path):
                found.append(str(Path(path)))
    return found


NAMES = st.sampled_from(
    ["a.jsonl", "b.jsonl", "B.jsonl", ".h.jsonl", "c.json", "d", ".transcripts", "e.jsonl"]
)
KINDS = st.sampled_from(["file", "folder", "file link", "folder link", "dangling link"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.lists(st.tuples(st.lists(NAMES, min_size=1, max_size=3), KINDS), max_size=14),
    glob=st.sampled_from(["*.jsonl", "*", "?.jsonl", "[ab]*", "b.jsonl", "*.json"]),
)
def test_generated_trees_give_what_the_model_gives(entries, glob: str) -> None:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        for parts, kind in entries:
            path = root.joinpath(*parts)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                if kind == "file":
                    path.write_text("{}\n")
                elif kind == "folder":
                    path.mkdir()
                elif kind == "file link":
                    (root / "target.jsonl").write_text("{}\n")
                    path.symlink_to(root / "target.jsonl")
                elif kind == "folder link":
                    path.symlink_to(root, target_is_directory=True)
                else:
                    path.symlink_to(root / "nowhere")
            except OSError:  # a name already taken by another kind (or under a file): leave it
                continue
        assert discover([temp], glob) == reference(temp, glob)
