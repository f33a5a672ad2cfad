"""`compactcli restore`: put archived originals back, or list their history; files or folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict
from functools import partial
from pathlib import Path

import click

from compactcli.cli.options import format_options
from compactcli.core.errors import EXIT_CODES_HELP
from compactcli.report import COMMAND_FORMATS, TEXT, UNCHANGED, Figures, Outcome, Report
from compactcli.storage import archives

RESTORED, LISTED = "restored", "listed"


class RestoreFigures(Figures):
    verb = "restored"

    def __init__(self, listing: bool) -> None:
        self.listing = listing

    def describe(self, outcome: Outcome) -> str:
        if outcome.status == RESTORED:
            return f"restored {outcome.path} from {outcome.stats.get('from')}"
        if outcome.status == UNCHANGED:
            return f"unchanged {outcome.path} (it already holds {outcome.stats.get('from')})"
        if outcome.status == LISTED:
            return outcome.message  # a file without history says so; a history is on stdout
        return super().describe(outcome)

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        if self.listing:
            return ""  # the listing is the output
        # the generic summary counts `changed`: a restore's outcome is `restored`
        renamed = [Outcome(o.path, "changed") if o.status == RESTORED else o for o in outcomes]
        return super().summary(renamed, preview)

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        if output_format != TEXT:
            return
        for entry in outcome.stats.get("history", ()):
            mark = "  pristine original" if entry["pristine"] else ""
            yield (
                f"{entry['index']:>3}  {entry['time']}  {entry['command']:<9} "
                f"{entry['size_before']:>12,} -> {entry['size_after']:>12,} bytes  {entry['archive']}{mark}"
            )


def restore_one(name: str, *, folder: Path | None, which: int | None) -> Outcome:
    from compactcli.storage import restore as restoring  # not for --help

    done = restoring.restore(Path(name), folder, which=which)
    if done.record is None:  # the file already holds that original: restoring again changes nothing
        return Outcome(name, UNCHANGED, stats={"from": done.entry.archive})
    return Outcome(name, RESTORED, stats=asdict(done.record) | {"from": done.entry.archive})


def list_one(name: str, *, folder: Path | None) -> Outcome:
    from compactcli.storage import folders  # not for --help
    from compactcli.storage import restore as restoring

    path = Path(name)
    history, skipped = restoring.listing(path, folder)
    for problem in skipped:
        click.echo(f"warning: {problem}", err=True)
    message = "" if history else f"{path}: no history in {folders.default_archive_dir(path, folder)}"
    return Outcome(name, LISTED, message=message, stats={"history": history})


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
    default=None,
    help="History entry to restore (0 = oldest, -1 = latest; --list shows them). Default: the latest "
    "original, restores' own archives skipped, so restoring twice is restoring once.",
)
@click.option("-q", "--quiet", is_flag=True, help="No per-file lines and no summary line.")
@format_options(COMMAND_FORMATS["restore"], dialect=False)
def restore(paths, archive_dir, list_only, which, quiet, output_format):
    """Put back the archived original of each PATH: a transcript, or a folder
    whose transcripts with an archive each get their latest original back.

    The current file is archived first, so a restore can be undone with
    --which and the restore's own entry. Restoring again changes nothing: a
    file that already holds the original is left unchanged. --list shows the
    history and marks the pristine original (the file before compactcli first
    changed it); a file without history: a message, exit 0. A PATH that does
    not exist and has no archived original is a usage error (2).

    \b
    Examples:
      compactcli restore session.jsonl
      compactcli restore --list ~/.claude/projects
      compactcli restore --which 0 session.jsonl
      compactcli restore --archive-dir ~/backups/transcripts transcripts/
    """
    from compactcli.run.runner import run_one  # not for --help

    folder = Path(archive_dir) if archive_dir else None
    _require_paths(paths, folder)
    report = Report(
        "restore",
        RestoreFigures(listing=list_only),
        output_format=output_format,
        verbose=True,  # each restored file is named
        quiet=quiet,
    )
    for name in paths:
        for path, path_folder in _transcripts(Path(name), folder):
            if list_only:
                worker = partial(list_one, folder=path_folder)
            else:
                worker = partial(restore_one, folder=path_folder, which=which)
            report.done(run_one(worker, str(path)))
    raise SystemExit(report.finish())


def _transcripts(path: Path, archive_dir: Path | None) -> list[tuple[Path, Path | None]]:
    """(transcript, its --archive-dir) for PATH: the file itself, or each transcript under a folder
    that an archive folder of the tree holds originals of."""
    if not path.is_dir():
        return [(path, archive_dir)]
    found = []
    from compactcli.storage import manifest  # not for --help

    for folder, selected in archives.targets(path, archive_dir):
        for source in manifest.sources(folder, selected):
            beside = Path(source).parent / archives.ARCHIVE_DIR_NAME
            found.append((Path(source), None if folder == beside.resolve() else folder))
    if not found:
        click.echo(f"{path}: no archived originals under this folder", err=True)
    return found


def _require_paths(paths: tuple[str, ...], archive_dir: Path | None) -> None:
    """A PATH that does not exist is a usage error, as in every command, unless an archive folder holds
    an original of it (a deleted transcript is restored)."""
    from compactcli.storage import manifest  # not for --help

    for name in paths:
        path = Path(name)
        if not os.path.lexists(path) and not manifest.history(path, archive_dir):
            raise click.BadParameter(
                f"Path {name!r} does not exist and no archive folder holds an original of it.",
                param_hint="'PATHS...'",
            )
