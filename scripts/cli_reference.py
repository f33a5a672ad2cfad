"""Write docs/cli.md, the command reference, from the commands' own --help (the one source of it).

python scripts/cli_reference.py          # rewrite docs/cli.md
python scripts/cli_reference.py --check  # exit 1 when docs/cli.md differs (tests/test_docs.py runs it)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from compactcli.cli import COMMANDS, cli
from compactcli.cli.options import BriefHelpCommand

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
WIDTH = 100  # the help's wrapping width: fixed, so the page does not depend on the terminal


def help_page(*args: str, flag: str = "--help") -> str:
    with tempfile.TemporaryDirectory() as empty, contextlib.chdir(empty):
        # an empty folder: no settings file of the caller's changes the defaults shown
        done = CliRunner().invoke(cli, [*args, flag], terminal_width=WIDTH, prog_name="compactcli")
    if done.exit_code != 0:
        raise SystemExit(f"compactcli {' '.join(args)} --help failed: {done.output}")
    return done.stdout.rstrip() + "\n"


def reference() -> str:
    parts = [
        "# Command reference\n",
        "Generated from each command's `--help` (`--help-all` where there is one) by "
        "`scripts/cli_reference.py`; do not edit by hand.\n",
        "## compactcli\n",
        "```text\n" + help_page() + "```\n",
    ]
    for name in COMMANDS:
        # a command whose --help is brief has it all under --help-all: the page is that
        flag = "--help-all" if isinstance(cli.get_command(None, name), BriefHelpCommand) else "--help"
        parts += [f"## compactcli {name}\n", "```text\n" + help_page(name, flag=flag) + "```\n"]
    return "\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    text = reference()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE} is out of date: run python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
