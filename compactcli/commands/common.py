"""Running a command over many files: discovery, the batch, the report and the exit code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from compactcli import batch
from compactcli.batch import STDIN, Outcome
from compactcli.report import Reporter


def find_inputs(
    paths: tuple[str, ...], glob: str, archive_dir: str | None = None, output: str | None = None
) -> list[str]:
    """The files to process; usage errors (exit 2) for inputs and -o that do not go together."""
    items = batch.discover(paths, glob, Path(archive_dir) if archive_dir else None)
    if output is not None and len(items) != 1:
        raise click.UsageError(f"-o/--output takes exactly one input file, got {len(items)}")
    same_file = output not in (None, STDIN) and items[0] != STDIN
    if same_file and Path(output).resolve() == Path(items[0]).resolve():
        raise click.UsageError("-o names the input itself: leave -o out to rewrite in place (archived)")
    if STDIN in items and len(items) > 1:
        raise click.UsageError("'-' (stdin) cannot be combined with other inputs")
    return items


def run_files(
    items: list[str],
    worker: Callable[[str], Outcome],
    *,
    jobs: int,
    verbose: bool,
    quiet: bool,
    as_json: bool,
    output: str | None,
    check: bool = False,
    verb: str = "compacted",
) -> None:
    """Process the files, report each and the total, and exit with the documented code."""
    stdout_has_data = output == "-" or (STDIN in items and output is None)
    reporter = Reporter(verbose=verbose, quiet=quiet, as_json=as_json, stdout_has_data=stdout_has_data)
    outcomes = batch.run(items, worker, jobs=jobs, on_outcome=reporter.outcome)
    reporter.summary(batch.summary(outcomes, verb=verb, check=check))
    raise SystemExit(batch.exit_code(outcomes))
