"""Running a command over many files: discovery, the batch, the report and the exit code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from compactcli import batch
from compactcli.batch import STDIN, Outcome
from compactcli.commands.options import Inputs, Writes
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


def stdout_carries_data(items: list[str], output: str | None) -> bool:
    """Whether results go to stdout (then --json reports go to stderr)."""
    return output == STDIN or (STDIN in items and output is None)


def run_files(
    items: list[str], worker: Callable[[str], Outcome], inputs: Inputs, writes: Writes, *, verb: str
) -> None:
    """Process the files, report each and the total, and exit with the documented code."""
    reporter = Reporter(
        verbose=inputs.verbose,
        quiet=inputs.quiet,
        as_json=inputs.as_json,
        stdout_has_data=stdout_carries_data(items, writes.output),
    )
    outcomes = batch.run(items, worker, jobs=inputs.jobs, on_outcome=reporter.outcome)
    # every preview (--check, --diff, --dry-run) counts what would change
    reporter.summary(batch.summary(outcomes, verb=verb, check=writes.preview))
    raise SystemExit(batch.exit_code(outcomes))
