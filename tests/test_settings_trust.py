"""Settings files found by search are obeyed only when the user wrote them (docs/design.md, "Trust"):
another account's compactcli.toml in a shared folder such as /tmp is refused (exit 2, naming it), as git's
safe.directory refuses a stranger's repository, and stderr names the file in force. A key or table no
command takes is refused by every command, with the nearest valid name."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.other_user import NOBODY, SETPRIV, cli_as, needs_root

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
USAGE = 2
# What a stranger's file would do: send transcripts unredacted, output to their folder.
HOSTILE = "no-redact = true\nkeep = 100\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(SAMPLES / "openai" / "session.jsonl", tmp_path / "t.jsonl")
    return tmp_path


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder like /tmp (anyone may write, sticky bit), where another account can reach it."""
    folder = Path(tempfile.mkdtemp(prefix="compactcli-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    shutil.copy(SAMPLES / "openai" / "session.jsonl", folder / "t.jsonl")
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@needs_root
@pytest.mark.skipif(not SETPRIV, reason="no setpriv")
def test_a_strangers_settings_file_in_a_shared_folder_is_refused(shared_tmp: Path) -> None:
    # Another account writes the file, through a process of its own.
    subprocess.run(
        [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sh", "-c",
         f"printf '{HOSTILE}' > compactcli.toml"],
        cwd=shared_tmp, check=True,
    )  # fmt: skip
    settings = shared_tmp / "compactcli.toml"
    assert settings.stat().st_uid == NOBODY
    before = (shared_tmp / "t.jsonl").read_bytes()

    for command in (["micro"], ["summarize", "--backend", "digest"], ["estimate"], ["config"]):
        run = run_cli(*command, "t.jsonl", cwd=shared_tmp, text=True)
        assert run.returncode == USAGE, (command, run.stderr)
        assert f"{settings}: settings file owned by uid {NOBODY}, not by you or root: refused" in run.stderr
        assert "Traceback" not in run.stderr
    assert (shared_tmp / "t.jsonl").read_bytes() == before


@needs_root
def test_the_strangers_file_is_used_when_named_with_config(shared_tmp: Path) -> None:
    settings = shared_tmp / "compactcli.toml"
    settings.write_text("keep = 100\n")
    os.chown(settings, NOBODY, NOBODY)
    run = run_cli("--config", settings, "micro", "--check", "t.jsonl", cwd=shared_tmp, text=True)
    assert run.returncode == 0, run.stderr  # keep = 100: nothing to clear
    assert "settings from" not in run.stderr  # the user named it


def test_my_own_file_in_a_sticky_shared_folder_is_obeyed_and_named(shared_tmp: Path) -> None:
    (shared_tmp / "compactcli.toml").write_text("keep = 100\n")
    run = run_cli("micro", "--check", "t.jsonl", cwd=shared_tmp, text=True)
    assert run.returncode == 0, run.stderr
    assert f"compactcli: settings from {shared_tmp / 'compactcli.toml'}" in run.stderr
    assert run_cli("micro", "--check", "--keep", "3", "t.jsonl", cwd=shared_tmp, text=True).returncode == 1


@pytest.mark.parametrize("name", ["compactcli.toml", "pyproject.toml"])
def test_a_settings_file_in_a_folder_anyone_may_write_without_the_sticky_bit_is_refused(
    project: Path, name: str
) -> None:
    open_folder = project / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    (open_folder / name).write_text(
        ("[tool.compactcli]\n" if name == "pyproject.toml" else "") + "keep = 100\n"
    )
    shutil.move(project / "t.jsonl", open_folder / "t.jsonl")

    run = run_cli("micro", "--check", "t.jsonl", cwd=open_folder, text=True)

    assert run.returncode == USAGE, run.stderr
    assert (
        f"{open_folder / name}: settings file in {open_folder}, which anyone may write (no sticky bit)"
        in run.stderr
    )
    open_folder.chmod(0o755)
    assert run_cli("micro", "--check", "t.jsonl", cwd=open_folder, text=True).returncode == 0


@needs_root
def test_root_s_settings_file_is_obeyed_by_another_account(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="compactcli-root-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        shutil.copy(SAMPLES / "openai" / "session.jsonl", folder / "t.jsonl")
        (folder / "compactcli.toml").write_text("keep = 100\n")
        run = cli_as(NOBODY, "micro", "--check", "t.jsonl", cwd=folder)
        assert run.returncode == 0, run.stderr
        assert "compactcli: settings from" in run.stderr
        (folder / "compactcli.toml").write_text("keep = 3\n")
        assert cli_as(NOBODY, "micro", "--check", "t.jsonl", cwd=folder).returncode == 1
    finally:
        shutil.rmtree(folder)


def test_no_settings_file_no_word_on_stderr(project: Path) -> None:
    run = run_cli("micro", "--check", "-q", "t.jsonl", cwd=project, text=True)
    assert run.returncode == 1
    assert "settings" not in run.stderr


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("pyproject.toml", "[tool.compactcli]\nkep = 5\n", "unknown option 'kep' (did you mean 'keep'?)"),
        (
            "pyproject.toml",
            "[tool.compactcli.mirco]\nkeep = 5\n",
            "no command 'mirco' (did you mean 'micro'?)",
        ),
        ("compactcli.toml", "min-charz = 5\n", "unknown option 'min-charz' (did you mean 'min-chars'?)"),
        ("compactcli.toml", "[micro]\nkepp = 5\n", "'micro' has no option 'kepp' (did you mean 'keep'?)"),
        ("compactcli.toml", "[estimate]\nkeep = 5\n", "'estimate' has no option 'keep'"),
    ],
)
def test_every_command_refuses_an_unknown_key_naming_the_nearest(
    project: Path, name: str, text: str, expected: str
) -> None:
    (project / name).write_text(text)
    before = (project / "t.jsonl").read_bytes()
    for command in (["micro"], ["summarize", "--backend", "digest"], ["estimate"], ["validate"]):
        run = run_cli(*command, "t.jsonl", cwd=project, text=True)
        assert run.returncode == USAGE, (command, run.stderr)
        assert str(project / name) in run.stderr
        assert expected in run.stderr
    assert (project / "t.jsonl").read_bytes() == before
