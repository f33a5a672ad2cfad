"""`compactcli hook` (what an agent's hook runs) and `compactcli hooks install/uninstall/status`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

AGENT_NAMES = ("claude-code", "codex", "gemini-cli", "qwen-code", "copilot")
INSTALL_AGENTS = ("claude-code", "codex", "codex-hooks", "gemini-cli", "qwen-code", "copilot")


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("payload", nargs=-1)
@click.option(
    "--agent", type=click.Choice(AGENT_NAMES), default=None, help="Who sent the payload (default: guessed)."
)
@click.option(
    "--run",
    "command",
    default="micro",
    show_default=True,
    metavar="COMMAND",
    help="The compactcli command (with its options) run on the session, e.g. 'micro --keep 5'.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, min_open=True),
    default=5.0,
    show_default=True,
    help="Seconds after which the hook gives up, leaving the session as it was.",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Hand the work to a background process and return at once (for agents that allow a hook less "
    "time than a compaction may take).",
)
@click.option(
    "--wait",
    type=click.FloatRange(0),
    default=30.0,
    show_default=True,
    help="With --detach: how long the background process waits for the agent to close the file.",
)
@click.option("--background", is_flag=True, hidden=True)
@click.pass_context
def hook(ctx, payload, agent, command, timeout, detach, wait, background):
    """Compact the one session an agent's hook names (its JSON on stdin or as the last argument).

    Only that session's transcript and its sub-agents' files are touched, with the settings in force and
    archived as by every command; a file the agent still writes is left alone. Always exits 0: what went
    wrong goes to the hook log in the cache folder and, in one line, to stderr.

    \b
    Examples:
      compactcli hooks install claude-code
      echo '{"session_id": "s1", "transcript_path": "s1.jsonl", "hook_event_name": "Stop"}' | compactcli hook
    """
    from compactcli.hooks import session

    config = ctx.find_root().params.get("config_path")
    try:
        text = payload[-1] if payload else sys.stdin.read(1 << 21)
        if detach and not background:
            args = ["hook", "--background", "--run", command, "--timeout", f"{timeout:g}"]
            args += ["--wait", f"{wait:g}"] + (["--agent", agent] if agent else [])
            if config:
                args[:0] = ["--config", config]
            session.detach(args, text)
            return
        from compactcli.hooks.payload import parse

        call = parse(text, agent)
        run = session.HookRun(command, timeout, config, wait if background else 0.0)
        started = time.monotonic()
        code, said = session.compact(call, run)
        last = said.splitlines()[-1] if said else ""
        took = time.monotonic() - started
        session.log(f"{session.describe(call)}: exit {code} in {took:.2f}s: {said}")
        if code:
            click.echo(f"compactcli hook: {last or f'exit {code}'} (log: {session.log_path()})", err=True)
    except Exception as exc:  # the hook never fails its agent
        session.log(f"error: {exc}")
        click.echo(f"compactcli hook: {exc} (log: {session.log_path()})", err=True)


@click.group()
def hooks():
    """Install, remove or show compactcli's hook in the agents' settings.

    \b
    Examples:
      compactcli hooks install claude-code --dry-run
      compactcli hooks install codex
      compactcli hooks status
      compactcli hooks uninstall codex
    """


_project = click.option(
    "--project",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The project's settings (DIR/.claude/settings.json, DIR/.codex/hooks.json, "
    "DIR/.gemini/settings.json, DIR/.qwen/settings.json) instead of the user's.",
)


def _fail(exc) -> None:
    click.echo(f"error: {exc}", err=True)
    raise SystemExit(exc.exit_code)


@hooks.command()
@click.argument("agent", type=click.Choice(INSTALL_AGENTS))
@_project
@click.option("--dry-run", is_flag=True, help="Change nothing; show the diff.")
def install(agent, project, dry_run):
    """Add compactcli's hook to AGENT's settings (a backup first; a second install changes nothing).

    \b
    claude-code  a SessionEnd hook in ~/.claude/settings.json (--project: DIR/.claude/settings.json)
    codex        Codex's notify program in $CODEX_HOME/config.toml (default ~/.codex): after each turn;
                 the rollout is compacted once Codex has closed it
    codex-hooks  a SessionEnd hook in $CODEX_HOME/hooks.json; Codex runs it once trusted in /hooks
    gemini-cli   a SessionEnd hook in ~/.gemini/settings.json (--project: DIR/.gemini/settings.json)
    qwen-code    a SessionEnd hook in $QWEN_HOME/settings.json (default ~/.qwen; --project: DIR/.qwen/)
    copilot      a SessionEnd hook in $COPILOT_HOME/settings.json (default ~/.copilot; --project:
                 DIR/.github/copilot/settings.json)
    """
    from compactcli.core import errors
    from compactcli.hooks import install as hooks_install

    hook = hooks_install.AGENTS[agent]
    path = hook.settings_file(project)
    try:
        change = hooks_install.planned_install(hook, path, hooks_install.executable())
        _write(change, dry_run, f"installed in {path}", f"already installed in {path}")
    except errors.CompactError as exc:
        _fail(exc)
    if agent == "codex-hooks" and change.changed and not dry_run:
        click.echo("Codex runs a new hook once it is trusted: open /hooks in Codex and trust it.", err=True)


@hooks.command()
@click.argument("agent", type=click.Choice(INSTALL_AGENTS))
@_project
@click.option("--dry-run", is_flag=True, help="Change nothing; show the diff.")
def uninstall(agent, project, dry_run):
    """Remove compactcli's hook from AGENT's settings (a backup first), keeping every other setting."""
    from compactcli.core import errors
    from compactcli.hooks import install as hooks_install

    hook = hooks_install.AGENTS[agent]
    path = hook.settings_file(project)
    try:
        change = hooks_install.planned_uninstall(hook, path)
        _write(change, dry_run, f"removed from {path}", f"not installed in {path}")
    except errors.CompactError as exc:
        _fail(exc)


def _write(change, dry_run: bool, done: str, nothing: str) -> None:
    from compactcli.hooks import install as hooks_install

    if not change.changed:
        click.echo(nothing, err=True)
        return
    if dry_run:
        click.echo(change.diff(), nl=False)
        return
    backup = hooks_install.apply(change)
    click.echo(done + (f" (backup: {backup})" if backup else ""), err=True)


@hooks.command()
@_project
def status(project):
    """Say, for each agent, whether compactcli's hook is installed, where, and what it runs."""
    from compactcli.core import errors
    from compactcli.hooks import install as hooks_install

    worst = 0
    for name, hook in hooks_install.AGENTS.items():
        path = hook.settings_file(project)
        try:
            found = hooks_install.installed(hook, path)
        except errors.CompactError as exc:
            click.echo(f"{name}: not installed: {exc}")
            if exc.exit_code != errors.CHECK_FAILED:  # another notify program is no error of the file
                worst = max(worst, exc.exit_code)
            continue
        if found:
            for handler in found:
                click.echo(
                    f"{name}: installed in {path} ({hook.event}): {hooks_install.command_text(handler)}"
                )
        else:
            click.echo(f"{name}: not installed ({path}{'' if path.exists() else ': no such file'})")
    raise SystemExit(worst)
