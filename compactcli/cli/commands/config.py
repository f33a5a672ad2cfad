"""`compactcli config`: the settings in force for each command, and where each comes from."""

from __future__ import annotations

import json

import click

from compactcli.cli import config as settings_file


@click.command(name="config")
@click.argument("commands", nargs=-1, metavar="[COMMAND]...")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per option (JSON lines).")
@click.pass_context
def config(ctx: click.Context, commands: tuple[str, ...], as_json: bool) -> None:
    """Show the settings in force for each COMMAND (default: all) and their sources.

    Sources, weakest first: default; the configuration file ([tool.compactcli]
    in the nearest pyproject.toml, or compactcli.toml, or compactcli --config
    FILE; a [tool.compactcli.COMMAND] table wins over the shared keys); the
    environment ($COMPACTCLI_MODEL, $MODEL_ID for --model); the command line.
    A key that no command takes is an error (exit 2).

    \b
    Examples:
      compactcli config
      compactcli config micro
      compactcli --config team.toml config micro --json
    """
    group = ctx.parent.command if ctx.parent else None
    loaded = ctx.obj if isinstance(ctx.obj, settings_file.Config) else settings_file.load()
    names = [name for name in group.list_commands(ctx) if name != "config"] if group else []
    for name in commands:
        if name not in names:
            raise click.BadParameter(f"no command '{name}'", param_hint="COMMAND")
    everything = {name: group.get_command(ctx, name) for name in names}
    problems = settings_file.unknown_keys(loaded, everything)
    if problems:
        raise settings_file.ConfigError("\n".join(problems))
    if not as_json:
        click.echo(f"# configuration file: {loaded.path or 'none'}")
    for name in commands or names:
        for row in settings_file.values_in_force(loaded, name, everything[name]):
            if as_json:
                click.echo(json.dumps(row.__dict__))
            else:
                click.echo(f"{row.command:<9} {row.option:<18} {json.dumps(row.value):<24} {row.source}")
