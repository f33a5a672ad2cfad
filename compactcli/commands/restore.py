"""`compactcli restore`: put archived originals back, or list their history; files or folders."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from compactcli import archives, storage
from compactcli.errors import EXIT_CODES_HELP, OK, CompactError


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--archive-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the originals were archived (default: .transcripts/ beside each file).",
)
@click.option("--list", "list_only", is_flag=True, help="Show the history instead of restoring.")
@click.option(
    "--which",
    type=int,
    default=-1,
    show_default=True,
    help="History entry to restore (0 = oldest, -1 = latest).",
)
@click.option("--json", "as_json", is_flag=True, help="JSON lines instead of text.")
def restore(paths, archive_dir, list_only, which, as_json):
    """Put back the archived original of each PATH: a transcript, or a folder
    whose transcripts with an archive each get their latest original back.

    The current file is archived first, so a restore can itself be undone by
    restoring again. --list shows the history (a file without one: a message,
    exit 0).

    \b
    Examples:
      compactcli restore session.jsonl
      compactcli restore --list ~/.claude/projects
      compactcli restore --which 0 session.jsonl
      compactcli restore --archive-dir ~/backups/transcripts transcripts/
    """
    folder = Path(archive_dir) if archive_dir else None
    code = OK
    for name in paths:
        for path, path_folder in _transcripts(Path(name), folder):
            try:
                if list_only:
                    _show_history(path, path_folder, as_json)
                    continue
                record = storage.restore(path, path_folder, which=which)
            except CompactError as exc:
                click.echo(f"error: {exc}", err=True)
                code = max(code, exc.exit_code)
                continue
            if as_json:
                click.echo(json.dumps(asdict(record)))
            else:
                click.echo(f"restored {path} from {record.options.get('from')}", err=True)
    raise SystemExit(code)


def _transcripts(path: Path, archive_dir: Path | None) -> list[tuple[Path, Path | None]]:
    """(transcript, its --archive-dir) for PATH: the file itself, or each transcript under a folder
    that an archive folder of the tree holds originals of."""
    if not path.is_dir():
        return [(path, archive_dir)]
    found = []
    for folder, selected in archives.targets(path, archive_dir):
        for source in archives.sources(folder, selected):
            beside = Path(source).parent / archives.ARCHIVE_DIR_NAME
            found.append((Path(source), None if folder == beside.resolve() else folder))
    if not found:
        click.echo(f"{path}: no archived originals under this folder", err=True)
    return found


def _show_history(path: Path, folder: Path | None, as_json: bool) -> None:
    found = storage.read_history(path, folder)
    for problem in found.skipped:
        click.echo(f"warning: {problem}", err=True)
    entries = found.records
    if not entries:
        click.echo(f"{path}: no history in {storage.default_archive_dir(path, folder)}", err=True)
        return
    for number, entry in enumerate(entries):
        if as_json:
            click.echo(json.dumps(dict(asdict(entry), index=number)))
        else:
            click.echo(
                f"{number:>3}  {entry.time}  {entry.command:<9} "
                f"{entry.size_before:>12,} -> {entry.size_after:>12,} bytes  {entry.archive}"
            )
