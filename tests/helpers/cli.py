"""The two ways tests run compactcli: in process through click's CliRunner, and as the installed command
in a real subprocess (what a user runs, with its own interpreter, signals, umask and file descriptors)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner, Result


def compactcli_command() -> list[str]:
    """The installed `compactcli` script: the one beside this interpreter, else the one on PATH.

    There is no fallback to `python -m compactcli`: a missing entry point is a packaging bug to fail on.
    """
    beside = Path(sys.executable).with_name("compactcli")
    found = str(beside) if beside.exists() else shutil.which("compactcli")
    if not found:
        raise RuntimeError("the compactcli script is not installed: pip install -e '.[test]'")
    return [found]


def run_cli(
    *args: object,
    stdin: bytes | str | None = None,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    text: bool = False,
    timeout: float = 120,
    prefix: Sequence[str] = (),
    **kwargs,
) -> subprocess.CompletedProcess:
    """Run the installed command with `args` and capture its output (bytes unless `text`).

    `prefix` goes before the command (e.g. `setpriv ...` to drop privileges).
    """
    return subprocess.run(
        [*prefix, *compactcli_command(), *map(str, args)],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=env,
        text=text,
        timeout=timeout,
        **kwargs,
    )


def invoke(*args: object, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
    """Run `compactcli *args` in this process; `result.stdout` and `result.stderr` are kept apart."""
    from compactcli.cli import cli

    return CliRunner().invoke(cli, [*map(str, args)], input=input, env=env)
