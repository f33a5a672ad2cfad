"""The ways tests run compactcli: as the installed command in a real subprocess (what a user runs, with its
own interpreter, signals, umask and file descriptors), waited for (`run_cli`) or started in the background
(`start_cli`); and in process through click's CliRunner (`invoke`). `environ` and `home_env`
build their environments."""

from __future__ import annotations

import os
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


def environ(drop: str | Sequence[str] = (), **values: str) -> dict[str, str]:
    """This process's environment without the variables whose names start with `drop`, plus `values`.

    Tests that run against a fake server or an emulator drop the machine's own settings for the real ones.
    """
    prefixes = (drop,) if isinstance(drop, str) else tuple(drop)
    kept = {k: v for k, v in os.environ.items() if not (prefixes and k.startswith(prefixes))}
    return kept | values


def home_env(home: Path, **values: str) -> dict[str, str]:
    """A bare environment with a private HOME and cache folder: only PATH, LANG and TMPDIR are this
    process's, so no setting or session of the machine's own user is seen; plus `values`."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR")}
    return {**keep, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), **values}


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

    `prefix` goes before the command (e.g. `setpriv ...` to drop privileges); `kwargs` go to
    subprocess.run (e.g. `umask=0o077`).
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


def start_cli(*args: object, prefix: Sequence[str] = (), **kwargs) -> subprocess.Popen:
    """Start the installed command with `args` in the background; `kwargs` go to subprocess.Popen
    (nothing is captured unless asked, e.g. `stderr=subprocess.PIPE`)."""
    return subprocess.Popen([*prefix, *compactcli_command(), *map(str, args)], **kwargs)


def invoke(
    *args: object, input: str | bytes | None = None, env: dict[str, str] | None = None, **kwargs
) -> Result:
    """Run `compactcli *args` in this process; `result.stdout` and `result.stderr` are kept apart.

    `kwargs` go to CliRunner.invoke (e.g. `terminal_width=80`).
    """
    from compactcli.cli import cli

    return CliRunner().invoke(cli, [*map(str, args)], input=input, env=env, **kwargs)
