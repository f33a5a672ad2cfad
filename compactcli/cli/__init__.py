"""The compactcli command group: one thin command per layer, each imported only when it runs."""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys

import click

from compactcli import __version__
from compactcli.core.errors import EXIT_CODES_HELP, CompactError

# name -> module in compactcli.cli.commands defining a click command of that name
COMMANDS = {
    "micro": "micro",
    "summarize": "summarize",
    "estimate": "estimate",
    "replay": "replay",
    "validate": "validate",
    "restore": "restore",
    "probe": "probe",
    "prune": "prune",
    "config": "config",
    "hook": "hook",
    "hooks": "hook",
}

# The first paragraph of each command's help, so that the group's --help lists the commands without
# importing every one of them (a test keeps these equal to the commands' own).
SHORT_HELP = {
    "micro": "Replace the content of old tool results with a short placeholder (Layer 1).",
    "summarize": "Replace a conversation with one summary message (Layers 2 and 3).",
    "estimate": "Count the tokens of each transcript's active context; fail CI when one is over a limit.",
    "replay": (
        "Re-run a recorded transcript turn by turn as the agent loop would, and show when each layer fires."
    ),
    "validate": "Check that transcripts are still valid Messages API conversations.",
    "restore": (
        "Put back the archived original of each PATH: a transcript, or a folder whose transcripts with an "
        "archive each get their latest original back."
    ),
    "prune": "Drop old archived originals of each PATH (a transcript, or a folder of them).",
    "config": "Show the settings in force for each COMMAND (default: all) and their sources.",
    "probe": "Check how much of what a summary replaced survives in it.",
    "hook": "Compact the one session an agent's hook names (its JSON on stdin or as the last argument).",
    "hooks": "Install, remove or show compactcli's hook in the agents' settings.",
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command is asked for: `compactcli micro` need not pay
    for summarize's or estimate's imports. A mistyped command name gets a suggestion, as git does."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        return getattr(importlib.import_module(f"compactcli.cli.commands.{module}"), name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)  # as click.Group does
        rows = [
            (name, click.Command(name, help=SHORT_HELP[name]).get_short_help_str(limit)) for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        """The one end of a run: a command returns its exit code through SystemExit, or raises; a raised
        CompactError is printed here, in one style, and its code is the exit code (docs/design.md,
        "Exit codes"). Usage errors stay click's."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader went away (`| head`): it has what it wanted; end quietly, exit 0.
            closed_pipe()
        except CompactError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            import difflib

            close = difflib.get_close_matches(args[0], COMMANDS, n=1) if args else []
            if close:
                exc.message = f"{exc.message}\n\nDid you mean '{close[0]}'?"
            raise


EPILOG = f"""\b
Examples:
  compactcli estimate ~/.claude/projects
  compactcli micro --check transcripts/
  compactcli COMMAND --help

Settings: [tool.compactcli] in the nearest pyproject.toml, or compactcli.toml,
or --config FILE; `compactcli config` shows the values in force.

\b
Shell completion (bash; zsh_source or fish_source for zsh or fish):
  eval "$(_COMPACTCLI_COMPLETE=bash_source compactcli)"

{EXIT_CODES_HELP}"""


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    metavar="FILE",
    help="Settings file (default: the nearest compactcli.toml or pyproject.toml with [tool.compactcli]).",
)
@click.version_option(__version__, "-V", "--version", prog_name="compactcli")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """Compact saved LLM-agent transcripts (JSONL): Anthropic Messages, Claude Code logs, OpenAI chat."""
    if ctx.invoked_subcommand is None:
        # Bare `compactcli` asks what the tool does: help, exit 0 (as git, pip and sqlite-utils do).
        click.echo(ctx.get_help())
        ctx.exit(0)
    from compactcli.cli import config

    name = ctx.invoked_subcommand
    try:
        settings = _settings(ctx, config_path, name)
    except config.ConfigError as exc:
        if name != "hook":
            raise
        # An agent's hook never fails the agent (docs/design.md, "Hooks"): with no usable settings file
        # where it runs, the hook says so and runs with the defaults.
        click.echo(f"compactcli hook: {exc.format_message()}", err=True)
        settings = config.Config()
    ctx.obj = settings
    command = ctx.command.get_command(ctx, name)
    ctx.default_map = {name: config.defaults_for(settings, name, command)}
    _start_up_done()


def _settings(ctx: click.Context, config_path: str | None, name: str):
    """The settings file in force, refused (ConfigError) when it names a key no command takes."""
    from compactcli.cli import config

    settings = config.load(config_path)
    if settings.path is not None:
        # Only runs with a settings file pay for importing every command (their options are the keys).
        group = ctx.command
        others = [other for other in group.list_commands(ctx) if other != "config"]  # type: ignore[attr-defined]
        config.refuse_unknown(settings, {other: group.get_command(ctx, other) for other in others})  # type: ignore[attr-defined]
        # Found by search, the file in force is named (`config` names it on stdout itself).
        if not (config_path or os.environ.get(config.CONFIG_ENV)) and name != "config":
            click.echo(f"compactcli: settings from {settings.path}", err=True)
    return settings


# main() pauses the cycle collector while the command's modules are imported: imports make tens of
# thousands of long-lived objects and no garbage, and each full collection among them walks them all
# (~10 ms of a short run's CPU). Once they are in, they are frozen (never walked again) and collection
# resumes for what the command itself allocates.
_start_up_paused = False


def _start_up_done() -> None:
    global _start_up_paused
    if _start_up_paused:
        _start_up_paused = False
        gc.freeze()
        gc.enable()


def closed_pipe() -> None:
    """Exit 0 without a word, and without the interpreter complaining when it flushes at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(0)


def main() -> None:
    global _start_up_paused
    if gc.isenabled():
        gc.disable()
        _start_up_paused = True
    # SIGTERM unwinds like Ctrl-C: temp files, spools and archives of unfinished work are removed
    # by the code that made them, instead of being left behind by an abrupt exit.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        cli(prog_name="compactcli")
    except SystemExit as done:
        try:
            sys.stdout.flush()  # what is still buffered may meet a closed pipe too
        except BrokenPipeError:
            closed_pipe()
        raise done from None


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
