"""estimate and validate with no PATHS read the session folders of the agents found on the machine and say
which; a command that writes still needs PATHS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import bigfile
from helpers.cli import home_env, run_cli
from helpers.codex_rollout import write as write_rollout


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".claude" / "projects" / "-app").mkdir(parents=True)
    bigfile.write(home / ".claude" / "projects" / "-app" / "s1.jsonl", "claude-code", turns=6)
    day = home / "codex-home" / "sessions" / "2026" / "12" / "02"
    day.mkdir(parents=True)
    write_rollout(day / "rollout-2026-12-02T10-00-00-0b5e7a40-1c2d-4e5f-8a9b-0c1d2e3f4a5b.jsonl")
    return home


@pytest.mark.parametrize("command", ["estimate", "validate"])
def test_no_paths_reads_every_agents_folder_and_names_them(home: Path, command: str) -> None:
    env = home_env(home, CODEX_HOME=str(home / "codex-home"))
    run = run_cli(command, "--json", env=env, text=True, cwd=home)
    assert run.returncode == 0, run.stderr
    claude, codex = home / ".claude" / "projects", home / "codex-home" / "sessions"
    assert run.stderr.splitlines()[0] == f"reading the sessions of Claude Code in {claude}, Codex in {codex}"
    files = sorted(Path(json.loads(line)["path"]).name for line in run.stdout.splitlines())
    assert files == ["rollout-2026-12-02T10-00-00-0b5e7a40-1c2d-4e5f-8a9b-0c1d2e3f4a5b.jsonl", "s1.jsonl"]


def test_only_the_folders_that_exist_are_read(home: Path) -> None:
    run = run_cli("estimate", env=home_env(home), text=True, cwd=home)  # ~/.codex does not exist
    assert run.returncode == 0, run.stderr
    assert (
        run.stderr.splitlines()[0]
        == f"reading the sessions of Claude Code in {home / '.claude' / 'projects'}"
    )


def test_no_paths_and_no_agent_folder_is_a_usage_error(tmp_path: Path) -> None:
    run = run_cli("validate", env=home_env(tmp_path), text=True, cwd=tmp_path)
    assert run.returncode == 2
    assert "no PATHS given, and no agent's session folder found" in run.stderr
    assert str(tmp_path / ".claude" / "projects") in run.stderr


def test_a_command_that_writes_still_needs_paths(home: Path) -> None:
    before = (home / ".claude" / "projects" / "-app" / "s1.jsonl").read_bytes()
    run = run_cli("micro", env=home_env(home), text=True, cwd=home)
    assert run.returncode == 2 and "PATHS" in run.stderr
    assert (home / ".claude" / "projects" / "-app" / "s1.jsonl").read_bytes() == before


def test_pi_sessions_are_read_too(home: Path) -> None:
    import shutil

    pi = home / ".pi" / "agent" / "sessions" / "--work-app--"
    pi.mkdir(parents=True)
    shutil.copy(Path(__file__).parent.parent / "samples" / "pi" / "session.jsonl", pi / "s.jsonl")
    run = run_cli("validate", "--json", env=home_env(home), text=True, cwd=home)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[0].endswith(f", pi in {home / '.pi' / 'agent' / 'sessions'}")
    assert str(pi / "s.jsonl") in run.stdout
