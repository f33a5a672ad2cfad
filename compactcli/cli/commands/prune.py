"""`compactcli prune`: drop old archived originals, per transcript, by count or age."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from compactcli.cli.options import format_options
from compactcli.core.errors import EXIT_CODES_HELP, CompactError
from compactcli.report import (
    CHANGED,
    COMMAND_FORMATS,
    FAILED,
    UNCHANGED,
    WOULD_CHANGE,
    Figures,
    Outcome,
    Report,
)
from compactcli.storage import archives

if TYPE_CHECKING:
    from compactcli.storage import prune as pruning


class Age(click.ParamType):
    name = "AGE"

    def convert(self, value, param, ctx):
        from compactcli.storage import prune as pruning  # prune and storage: not for --help

        try:
            return pruning.parse_age(str(value))
        except (ValueError, KeyError):
            self.fail(f"{value!r} is not an age such as 90m, 12h, 30d or 2w", param, ctx)


class PruneFigures(Figures):
    summed = ("bytes_freed",)

    def __init__(self, dry_run: bool) -> None:
        self.dry_run = dry_run

    def describe(self, outcome: Outcome) -> str:
        if outcome.status == FAILED:
            return super().describe(outcome)
        verb = "would drop" if self.dry_run else "dropped"
        count = len(outcome.stats["dropped"])
        plural = "s" if count != 1 else ""
        return f"{verb} {count} archive{plural} of {outcome.path} ({outcome.stats['kept']} kept)"

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        done = [o.stats for o in outcomes if o.status != FAILED]
        dropped = sum(len(s["dropped"]) for s in done)
        files = sum(1 for s in done if s["dropped"])
        freed, kept = sum(s["bytes_freed"] for s in done), sum(s["kept"] for s in done)
        verb = "would be dropped" if self.dry_run else "dropped"
        line = (
            f"{dropped} archive{'s' if dropped != 1 else ''} {verb} ({freed:,} bytes) "
            f"from {files} file{'s' if files != 1 else ''}, {kept} kept"
        )
        failed = len(outcomes) - len(done)
        return line + (f", {failed} failed" if failed else "")


def outcome_of(result: pruning.Pruned, dry_run: bool) -> Outcome:
    if result.error is not None:  # busy: another run holds the transcript; its archives stay
        return Outcome(result.source, FAILED, result.error.exit_code, str(result.error))
    status = (WOULD_CHANGE if dry_run else CHANGED) if result.dropped else UNCHANGED
    stats = {
        "archive_dir": str(result.folder),
        "dropped": [record.archive for record in result.dropped],
        "kept": result.kept,
        "bytes_freed": result.freed,
    }
    return Outcome(result.source, status, stats=stats)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--keep-last",
    type=click.IntRange(0),
    default=None,
    metavar="N",
    help="Keep each file's N newest archives.",
)
@click.option(
    "--older-than", type=Age(), default=None, help="Drop archives older than AGE (90m, 12h, 30d, 2w)."
)
@click.option(
    "--archive-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the originals were archived (default: .transcripts/ beside each file).",
)
@click.option(
    "--prune-original",
    is_flag=True,
    help="Let the rules drop the pristine original too (the file before compactcli first changed it; "
    "kept otherwise, beside the N newest).",
)
@click.option("--dry-run", is_flag=True, help="Change nothing; say what would be dropped.")
@click.option("-v", "--verbose", is_flag=True, help="A line per file on stderr.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
@format_options(COMMAND_FORMATS["prune"], dialect=False)
def prune(paths, keep_last, older_than, archive_dir, prune_original, dry_run, verbose, quiet, output_format):
    """Drop old archived originals of each PATH (a transcript, or a folder of them).

    Per transcript, --keep-last N keeps its N newest archives and --older-than
    AGE drops those older than AGE; with both, an archive is dropped only when
    both rules let it go. The pristine original (restore --list marks it) is
    kept unless --prune-original. The manifest is rewritten at once (a temp file
    renamed over it), then the archive files are removed. A transcript
    another compactcli run holds keeps its archives and is reported busy
    (75).

    \b
    Examples:
      compactcli prune --keep-last 3 ~/.claude/projects
      compactcli prune --older-than 30d --dry-run -v ~/.claude/projects
      compactcli prune --keep-last 1 --older-than 1w session.jsonl
    """
    if keep_last is None and older_than is None:
        raise click.UsageError("say what to keep: --keep-last N, --older-than AGE, or both")
    from compactcli.storage import prune as pruning  # prune and storage: not for --help

    rule = pruning.Rule(keep_last, older_than, drop_pristine=prune_original)
    folder = Path(archive_dir) if archive_dir else None
    report = Report("prune", PruneFigures(dry_run), output_format=output_format, verbose=verbose, quiet=quiet)
    for name in paths:
        for archive_folder, selected in archives.targets(Path(name), folder):
            if not archive_folder.is_dir():
                continue  # nothing was ever archived there
            try:
                done = pruning.prune_folder(archive_folder, rule, selected=selected, dry_run=dry_run)
            except CompactError as exc:
                report.done(Outcome(str(archive_folder), FAILED, exc.exit_code, str(exc)))
                continue
            for result in done:
                report.done(outcome_of(result, dry_run))
    raise SystemExit(report.finish())
