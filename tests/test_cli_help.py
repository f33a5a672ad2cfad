"""The command line as a new user meets it: bare `compactcli`, -V, a mistyped command, the help pages."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers.cli import run_cli

import compactcli

COMMANDS = ["micro", "summarize", "estimate", "replay", "validate", "restore", "prune", "config", "probe"]


def test_bare_command_prints_help_and_exits_0() -> None:
    run = run_cli(text=True)
    assert run.returncode == 0
    assert run.stdout.startswith("Usage: compactcli [OPTIONS]")
    for command in COMMANDS:
        assert f"\n  {command} " in run.stdout


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str) -> None:
    run = run_cli(flag, text=True)
    assert run.returncode == 0
    assert run.stdout == f"compactcli, version {compactcli.__version__}\n"


@pytest.mark.parametrize(
    ("typed", "meant"), [("mirco", "micro"), ("estimat", "estimate"), ("restor", "restore")]
)
def test_a_mistyped_command_suggests_the_nearest(typed: str, meant: str) -> None:
    run = run_cli(typed, "x.jsonl", text=True)
    assert run.returncode == 2
    assert f"No such command '{typed}'" in run.stderr
    assert f"Did you mean '{meant}'?" in run.stderr


def test_an_unrelated_word_gets_no_suggestion() -> None:
    run = run_cli("frobnicate", text=True)
    assert run.returncode == 2
    assert "Did you mean" not in run.stderr


def test_shell_completion_documented_in_help_works() -> None:
    assert "_COMPACTCLI_COMPLETE=bash_source" in run_cli("--help", text=True).stdout
    run = run_cli(env=dict(os.environ, _COMPACTCLI_COMPLETE="bash_source"), text=True)
    assert run.returncode == 0
    assert "complete -o nosort -F _compactcli_completion compactcli" in run.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_page_fits_80_columns_and_shows_pasteable_examples(command: str) -> None:
    run = run_cli(command, "--help", env=dict(os.environ, COLUMNS="80"), text=True)
    assert run.returncode == 0
    too_wide = [line for line in run.stdout.splitlines() if len(line) > 80]
    assert too_wide == []
    after = run.stdout.split("Examples:\n", 1)
    assert len(after) == 2, "an Examples: section"
    examples = []
    for line in after[1].splitlines():
        if not line.strip():
            break
        examples.append(line.strip())
    assert len(examples) >= 2
    assert all("compactcli " in line and f" {command}" in line for line in examples), examples


@pytest.mark.parametrize("command", ["micro", "summarize", "estimate", "validate"])
def test_jobs_is_described(command: str) -> None:
    page = run_cli(command, "--help", text=True).stdout
    [line] = [line for line in page.splitlines() if "-j, --jobs" in line]
    assert "parallel" in line


# command: (options its --help must show, a phrase only --help-all has, an option that would run).
BRIEF_HELP = {
    "summarize": ({"--format", "--backend", "--threshold"}, "replacement_history", "--no-redact"),
    "replay": ({"--format", "--backend", "--threshold"}, "Model calls, per dialect", "--no-redact"),
    "micro": ({"--format", "--keep", "--preserve", "--dry-run"}, "exec_command_end", "--no-cache"),
    "estimate": ({"--format", "--method", "--max-tokens"}, "truncation_policy", "--calibrate"),
}


@pytest.mark.parametrize("command", sorted(BRIEF_HELP))
def test_help_is_what_a_terminal_needs_and_help_all_has_the_rest(command: str) -> None:
    common, details, eager_over = BRIEF_HELP[command]
    env = dict(os.environ, COLUMNS="80")
    brief = run_cli(command, "--help", env=env, text=True)
    whole = run_cli(command, "--help-all", env=env, text=True)
    assert brief.returncode == whole.returncode == 0
    assert len(brief.stdout.splitlines()) < 60
    assert "--help-all" in brief.stdout and "docs/cli.md" in brief.stdout
    assert len(whole.stdout.splitlines()) > 2 * len(brief.stdout.splitlines())
    assert all(len(line) <= 80 for line in whole.stdout.splitlines())
    # Every option the command takes is on the --help-all page; --help names a few of them.
    from compactcli.cli import cli

    options = [opt for p in cli.get_command(None, command).params for opt in p.opts if opt.startswith("--")]
    named = set(re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", whole.stdout, flags=re.M))
    assert set(options) <= named, set(options) - named
    shown = set(re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", brief.stdout.split("Options:", 1)[1], flags=re.M))
    assert shown < named and {*common, "--help"} <= shown
    # What --help leaves out of the text is under --help-all, before the same examples.
    assert (
        whole.stdout.split("Examples:", 1)[1].split("\n\n")[0]
        == brief.stdout.split("Examples:", 1)[1].split("\n\n")[0]
    )
    assert details in whole.stdout and details not in brief.stdout
    # --help-all is eager, as --help is: the options beside it do not run.
    assert run_cli(command, "--help-all", eager_over, env=env, text=True).stdout == whole.stdout


def test_python_m_compactcli_is_the_same_command() -> None:
    # The package's __main__: every other test runs the installed script.
    run = subprocess.run([sys.executable, "-m", "compactcli", "--version"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"compactcli, version {compactcli.__version__}\n"
