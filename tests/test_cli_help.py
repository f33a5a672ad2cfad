"""The command line as a new user meets it: bare `compactcli`, -V, a mistyped command, the help pages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import compactcli

COMMANDS = ["micro", "summarize", "estimate", "replay", "validate", "restore", "config"]


def compactcli_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("compactcli")
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=env, timeout=60)


def test_bare_command_prints_help_and_exits_0() -> None:
    run = compactcli_run()
    assert run.returncode == 0
    assert run.stdout.startswith("Usage: compactcli [OPTIONS]")
    for command in COMMANDS:
        assert f"\n  {command} " in run.stdout


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str) -> None:
    run = compactcli_run(flag)
    assert run.returncode == 0
    assert run.stdout == f"compactcli, version {compactcli.__version__}\n"


@pytest.mark.parametrize(
    ("typed", "meant"), [("mirco", "micro"), ("estimat", "estimate"), ("restor", "restore")]
)
def test_a_mistyped_command_suggests_the_nearest(typed: str, meant: str) -> None:
    run = compactcli_run(typed, "x.jsonl")
    assert run.returncode == 2
    assert f"No such command '{typed}'" in run.stderr
    assert f"Did you mean '{meant}'?" in run.stderr


def test_an_unrelated_word_gets_no_suggestion() -> None:
    run = compactcli_run("frobnicate")
    assert run.returncode == 2
    assert "Did you mean" not in run.stderr


def test_shell_completion_documented_in_help_works() -> None:
    assert "_COMPACTCLI_COMPLETE=bash_source" in compactcli_run("--help").stdout
    run = compactcli_run(env=dict(os.environ, _COMPACTCLI_COMPLETE="bash_source"))
    assert run.returncode == 0
    assert "complete -o nosort -F _compactcli_completion compactcli" in run.stdout
