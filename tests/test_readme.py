"""README.md is tested: every shell example in it runs, and every documented output matches.

- ```sh blocks: each line is one command, run by bash in a sandbox holding a copy of samples/, a
  `session.jsonl`, a `transcripts/` folder, a `~/.claude/projects` and a `~/.pi/agent/sessions` tree and a
  Copilot CLI session under `~/.copilot/session-state` (HOME is the sandbox). A command must exit 0, or the
  code its comment names (`# ... exit 1 ...`).
- ```console blocks: `$ command` lines followed by the output they print (stdout, then stderr), compared
  line by line; `...` in an expected line stands for any text (a time stamp in an archive name).
- The install prefix of the first-screen commands (`python3 -m venv .venv && .venv/bin/pip install ...`)
  needs the network, so the sandbox's `.venv/bin` holds the installed command instead; CI runs that
  install itself (.ci/run). The test-suite block and the Development block run the suite and long
  tools (benchmarks, calibration over a corpus): they are checked to name scripts that exist.
- The pre-commit snippet's hook runs as written on the samples.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
INSTALL = re.compile(r"^python3 -m venv \.venv && \.venv/bin/pip install -e (\.|'\.\[test\]') && ")
EXPECTED_EXIT = re.compile(r"#.*\bexit (\d+)")
NOT_RUN = ("pytest", ".venv/bin/ruff", " scripts/")


def blocks(kind: str) -> list[tuple[int, str]]:
    """(line number, body) of each fenced block of `kind` in README.md."""
    found = []
    for match in re.finditer(rf"^```{kind}\n(.*?)^```$", README.read_text(), re.M | re.S):
        found.append((README.read_text()[: match.start()].count("\n") + 1, match.group(1)))
    return found


def commands(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def sh_commands() -> list[tuple[str, str]]:
    """(test id, command) for every command of every ```sh block that the sandbox runs."""
    found = []
    for line_no, body in blocks("sh"):
        for command in commands(body):
            if INSTALL.match(command) and "pytest" not in command:
                command = INSTALL.sub("", command)
            if any(word in command for word in NOT_RUN):
                continue
            found.append((f"README.md:{line_no}: {command[:60]}", command))
    return found


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, str]:
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    shutil.copy(ROOT / "samples" / "claude-code" / "session.jsonl", tmp_path / "session.jsonl")
    shutil.copytree(ROOT / "samples", tmp_path / "transcripts")
    shutil.copytree(ROOT / "samples", tmp_path / ".claude" / "projects")
    shutil.copytree(ROOT / "samples" / "pi", tmp_path / ".pi" / "agent" / "sessions" / "--home-dev-tally--")
    session = tmp_path / ".copilot" / "session-state" / "7f3c2a10-0b1d-4e5f-8a9b-0c1d2e3f4a5b"
    session.mkdir(parents=True)
    shutil.copy(ROOT / "samples" / "copilot" / "events.jsonl", session / "events.jsonl")
    # the other agents' session folders, as the cron recipe names them
    rollouts = tmp_path / ".codex" / "sessions" / "2026" / "01" / "21"
    shutil.copytree(ROOT / "samples" / "codex", rollouts)
    gemini = tmp_path / ".gemini" / "tmp" / "tally" / "chats"
    gemini.mkdir(parents=True)
    shutil.copy(
        ROOT / "samples" / "gemini-cli" / "session.jsonl", gemini / "session-2026-11-30T10-00-7c2d4f10.jsonl"
    )
    qwen = tmp_path / ".qwen" / "projects" / "-home-dev-tally" / "chats"
    qwen.mkdir(parents=True)
    shutil.copy(
        ROOT / "samples" / "qwen-code" / "session.jsonl", qwen / "3c9e41d7-52b8-4f0a-a1e6-7d2f90b4c815.jsonl"
    )
    (tmp_path / "team.toml").write_text("[micro]\nkeep = 5\n")  # named by `compactcli config --help`
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "compactcli").symlink_to(Path(sys.executable).with_name("compactcli"))
    # the sessions of ~/.claude/projects are older than any --min-age of the examples
    copies = [
        *(tmp_path / ".claude" / "projects").rglob("*.jsonl"),
        *(tmp_path / ".pi").rglob("*.jsonl"),
        *(tmp_path / ".codex").rglob("*.jsonl"),
        *(tmp_path / ".gemini").rglob("*.jsonl"),
        *(tmp_path / ".qwen").rglob("*.jsonl"),
    ]
    for path in [*copies, session / "events.jsonl"]:
        os.utime(path, (1e9, 1e9))
    return dict(
        os.environ,
        HOME=str(tmp_path),
        PATH=f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        COLUMNS="80",
        CWD=str(tmp_path),
    )


def bash(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        cwd=env["CWD"],
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(("where", "command"), sh_commands(), ids=[w for w, _ in sh_commands()])
def test_sh_example_runs(where: str, command: str, sandbox: dict[str, str]) -> None:
    expected = EXPECTED_EXIT.search(command)
    done = bash(command, sandbox)
    assert done.returncode == (int(expected.group(1)) if expected else 0), (where, done.stdout, done.stderr)


def test_examples_exist_and_skipped_ones_name_real_scripts() -> None:
    every = [command for _, body in blocks("sh") for command in commands(body)]
    assert len(sh_commands()) >= 10
    for command in every:
        for script in re.findall(r"scripts/\S+\.py", command):
            assert (ROOT / script).is_file(), script


def console_examples() -> list[tuple[str, str, list[str]]]:
    found = []
    for line_no, body in blocks("console"):
        command, expected = None, []
        for line in body.splitlines():
            if line.startswith("$ "):
                if command:
                    found.append((f"README.md:{line_no}", command, expected))
                command, expected = line[2:], []
            else:
                expected.append(line)
        if command:
            found.append((f"README.md:{line_no}", command, expected))
    return found


def test_there_are_console_examples() -> None:
    assert len(console_examples()) >= 2


@pytest.mark.parametrize(
    ("where", "command", "expected"), console_examples(), ids=[c for _, c, _ in console_examples()]
)
def test_console_example_prints_what_is_documented(
    where: str, command: str, expected: list[str], sandbox: dict[str, str]
) -> None:
    done = bash(command, sandbox)
    printed = (done.stdout + done.stderr).rstrip("\n").splitlines()
    assert len(printed) == len(expected), (where, printed)
    for want, got in zip(expected, printed, strict=True):
        pattern = ".*".join(re.escape(part) for part in want.split("..."))
        assert re.fullmatch(pattern, got), (where, want, got)


def test_pre_commit_snippet_runs_as_written(sandbox: dict[str, str]) -> None:
    [(_, snippet)] = blocks("yaml")
    assert "rev: <" not in snippet  # no placeholder a user must invent
    entry = re.search(r"^\s*entry: (.+)$", snippet, re.M).group(1)
    args = json.loads(re.search(r"^\s*args: (\[.*\])$", snippet, re.M).group(1))
    files = re.search(r"^\s*files: (.+)$", snippet, re.M).group(1)
    staged = [str(p) for p in Path(sandbox["CWD"], "samples").rglob("*") if re.search(files, str(p))]
    done = bash(" ".join([entry, *map(repr, args), *staged]), sandbox)
    # the hook's file pattern picks every transcript of the samples and nothing else
    assert sorted(Path(name).name for name in staged) == sorted(
        p.name for p in ROOT.glob("samples/*/*.jsonl")
    )
    assert done.returncode == 0, done.stderr
    assert f"{len(staged)} files" in done.stderr


@functools.cache
def help_examples() -> list[tuple[str, str]]:
    """(command, example line) from the Examples: section of every command's --help.

    The pages are rendered in this process (click's own help), once: collection starts no subprocess
    and does not depend on the console script being installed; the examples themselves run in tests."""
    from compactcli.cli import COMMANDS

    found = []
    for command in COMMANDS:
        page = invoke(command, "--help", terminal_width=80).stdout
        for line in page.split("Examples:\n", 1)[1].splitlines():
            if not line.strip():
                break
            found.append((command, line.strip()))
    return found


@pytest.mark.parametrize(("command", "example"), help_examples(), ids=[e for _, e in help_examples()])
def test_help_examples_paste_and_run(command: str, example: str, sandbox: dict[str, str]) -> None:
    """Every example on a help page runs as printed in the sandbox (exit 1 is a check's answer)."""
    done = bash(example, sandbox)
    assert done.returncode in (0, 1), (example, done.stderr)
    assert "Usage:" not in done.stderr
