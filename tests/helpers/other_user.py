"""Run the CLI as another account (only possible when the tests run as root).

The child drops its uid with os.setuid after importing every compactcli module: the interpreter may
live where the other account cannot read (e.g. under /root).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: files of another uid, mknod, setuid")

_AS_USER = r"""
import os, pkgutil, sys, importlib
import compactcli
for module in pkgutil.walk_packages(compactcli.__path__, "compactcli."):
    if module.name not in ("compactcli.__main__", "compactcli.chart"):
        importlib.import_module(module.name)
uid = int(sys.argv[1])
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
sys.argv = ["compactcli", *sys.argv[2:]]
from compactcli.cli import main
main()
"""


def cli_as(uid: int, *args: object, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI with `args`, run as `uid` in `cwd` (text output)."""
    return subprocess.run(
        [sys.executable, "-c", _AS_USER, str(uid), *map(str, args)], capture_output=True, text=True, cwd=cwd
    )
