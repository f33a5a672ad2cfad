"""The compactcli command group: one thin command per layer, each imported only when it runs."""

from __future__ import annotations

import importlib

import click

from compactcli import __version__
from compactcli.errors import EXIT_CODES_HELP

# name -> module in compactcli.commands defining a click command of that name
COMMANDS = {
    "micro": "micro",
    "summarize": "summarize",
    "estimate": "estimate",
    "replay": "replay",
    "validate": "validate",
    "restore": "restore",
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command is asked for: `compactcli micro` need not pay
    for summarize's or estimate's imports."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        return getattr(importlib.import_module(f"compactcli.commands.{module}"), name)


@click.group(
    cls=LazyGroup,
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="compactcli")
def cli() -> None:
    """Compact saved LLM-agent transcripts (JSONL): Anthropic Messages, Claude Code logs, OpenAI chat."""


def main() -> None:
    cli(prog_name="compactcli")
