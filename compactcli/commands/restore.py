"""`compactcli restore`: put an archived original back, or list a file's history."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from compactcli import storage
from compactcli.errors import EXIT_CODES_HELP, OK, CompactError


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--archive-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the originals were archived (default: .transcripts/ beside each file).",
)
@click.option("--list", "list_only", is_flag=True, help="Show the file's history instead of restoring.")
@click.option(
    "--which",
    type=int,
    default=-1,
    show_default=True,
    help="History entry to restore (0 = oldest, -1 = latest).",
)
@click.option("--json", "as_json", is_flag=True, help="JSON lines instead of text.")
def restore(paths, archive_dir, list_only, which, as_json):
    """Put back the archived original of each PATH.

    The current file is archived first, so a restore can itself be undone by restoring again.
    """
    folder = Path(archive_dir) if archive_dir else None
    code = OK
    for name in paths:
        path = Path(name)
        try:
            if list_only:
                _show_history(path, folder, as_json)
                continue
            record = storage.restore(path, folder, which=which)
        except CompactError as exc:
            click.echo(f"error: {exc}", err=True)
            code = max(code, exc.exit_code)
            continue
        if as_json:
            click.echo(json.dumps(asdict(record)))
        else:
            click.echo(f"restored {name} from {record.options.get('from')}", err=True)
    raise SystemExit(code)


def _show_history(path: Path, folder: Path | None, as_json: bool) -> None:
    entries = storage.history(path, folder)
    if not entries:
        raise CompactError(f"{path}: no history in {storage.default_archive_dir(path, folder)}", 1)
    for number, entry in enumerate(entries):
        if as_json:
            click.echo(json.dumps(dict(asdict(entry), index=number)))
        else:
            click.echo(
                f"{number:>3}  {entry.time}  {entry.command:<9} "
                f"{entry.size_before:>12,} -> {entry.size_after:>12,} bytes  {entry.archive}"
            )
