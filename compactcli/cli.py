"""The compactcli command group: one thin command per layer."""

from __future__ import annotations

import click

from compactcli import __version__
from compactcli.commands.estimate import estimate
from compactcli.commands.micro import micro
from compactcli.commands.replay import replay
from compactcli.commands.restore import restore
from compactcli.commands.summarize import summarize
from compactcli.commands.validate import validate
from compactcli.errors import EXIT_CODES_HELP


@click.group(epilog=EXIT_CODES_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="compactcli")
def cli() -> None:
    """Compact saved LLM-agent transcripts (JSONL): Anthropic Messages, Claude Code logs, OpenAI chat."""


cli.add_command(estimate)
cli.add_command(micro)
cli.add_command(replay)
cli.add_command(restore)
cli.add_command(summarize)
cli.add_command(validate)


def main() -> None:
    cli(prog_name="compactcli")
