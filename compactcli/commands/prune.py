"""`compactcli prune`: drop old archived originals, per transcript, by count or age."""

from __future__ import annotations

import json
from pathlib import Path

import click

from compactcli import archives
from compactcli import prune as pruning
from compactcli.errors import EXIT_CODES_HELP, OK, CompactError


class Age(click.ParamType):
    name = "AGE"

    def convert(self, value, param, ctx):
        try:
            return pruning.parse_age(str(value))
        except (ValueError, KeyError):
            self.fail(f"{value!r} is not an age such as 90m, 12h, 30d or 2w", param, ctx)


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
@click.option("--dry-run", is_flag=True, help="Change nothing; say what would be dropped.")
@click.option("-v", "--verbose", is_flag=True, help="A line per file on stderr.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file (stdout).")
def prune(paths, keep_last, older_than, archive_dir, dry_run, verbose, quiet, as_json):
    """Drop old archived originals of each PATH (a transcript, or a folder of them).

    Per transcript, --keep-last N keeps its N newest archives and --older-than
    AGE drops those older than AGE; with both, an archive is dropped only when
    both rules let it go. The manifest is rewritten at once (a temp file
    renamed over it), then the archive files are removed.

    \b
    Examples:
      compactcli prune --keep-last 3 ~/.claude/projects
      compactcli prune --older-than 30d --dry-run -v ~/.claude/projects
      compactcli prune --keep-last 1 --older-than 1w session.jsonl
    """
    if keep_last is None and older_than is None:
        raise click.UsageError("say what to keep: --keep-last N, --older-than AGE, or both")
    rule = pruning.Rule(keep_last, older_than)
    folder = Path(archive_dir) if archive_dir else None
    code, results = OK, []
    for name in paths:
        for archive_folder, selected in archives.targets(Path(name), folder):
            if not archive_folder.is_dir():
                continue  # nothing was ever archived there
            try:
                done = pruning.prune_folder(archive_folder, rule, selected=selected, dry_run=dry_run)
            except CompactError as exc:
                click.echo(f"error: {exc}", err=True)
                code = max(code, exc.exit_code)
                continue
            for result in done:
                _report(result, dry_run, verbose and not quiet, as_json)
            results += done
    if not quiet:
        dropped = sum(len(r.dropped) for r in results)
        files = sum(1 for r in results if r.dropped)
        verb = "would be dropped" if dry_run else "dropped"
        freed, kept = sum(r.freed for r in results), sum(r.kept for r in results)
        click.echo(
            f"{dropped} archive{'s' if dropped != 1 else ''} {verb} ({freed:,} bytes) "
            f"from {files} file{'s' if files != 1 else ''}, {kept} kept",
            err=True,
        )
    raise SystemExit(code)


def _report(result: pruning.Pruned, dry_run: bool, verbose: bool, as_json: bool) -> None:
    if as_json:
        click.echo(
            json.dumps(
                {
                    "path": result.source,
                    "status": "would-change"
                    if dry_run and result.dropped
                    else "changed"
                    if result.dropped
                    else "unchanged",
                    "exit_code": OK,
                    "archive_dir": str(result.folder),
                    "dropped": [record.archive for record in result.dropped],
                    "kept": result.kept,
                    "bytes_freed": result.freed,
                }
            )
        )
    if verbose:
        verb = "would drop" if dry_run else "dropped"
        count = len(result.dropped)
        plural = "s" if count != 1 else ""
        click.echo(f"{verb} {count} archive{plural} of {result.source} ({result.kept} kept)", err=True)
