"""Run the CLI as another account (only possible when the tests run as root).

The child drops its uid with os.setuid after importing every compactcli module: the interpreter may
live where the other account cannot read (e.g. under /root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: files of another uid, mknod, setuid")
SETPRIV = shutil.which("setpriv")
# Folders a mode locks: root looks into every folder whatever its mode, so as root the command runs as
# nobody (through setpriv).
needs_a_lockable_folder = pytest.mark.skipif(
    os.geteuid() == 0 and not SETPRIV, reason="root reads every folder; no setpriv"
)


def hand_to_nobody(top: Path) -> tuple[str, ...]:
    """As root: give the tree at `top` to nobody and return the command prefix that runs as nobody.
    As anyone else: nothing to do, no prefix."""
    if os.geteuid() != 0:
        return ()
    for folder, dirs, files in os.walk(top):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.lchown(name, NOBODY, NOBODY)
    return (SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")


_AS_USER = r"""
import os, pkgutil, sys, importlib
import tomllib  # settings files are parsed after the uid is dropped; the stdlib may be unreadable then
import compactcli
for module in pkgutil.walk_packages(compactcli.__path__, "compactcli."):
    if module.name not in ("compactcli.__main__", "compactcli.report.chart"):
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
