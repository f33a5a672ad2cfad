"""Running a command over many files: find the transcripts, then process each (in parallel with --jobs).

Each file ends as one `report.Outcome`; an error in one file never stops the others.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path

import click

from compactcli import errors
from compactcli.archives import is_archive_dir
from compactcli.report import BUSY, FAILED, Outcome
from compactcli.transcript import STDIN


def find_inputs(
    paths: tuple[str, ...], glob: str, archive_dir: str | None = None, output: str | None = None
) -> list[str]:
    """The files to process; usage errors (exit 2) for inputs and -o that do not go together."""
    items = discover(paths, glob, Path(archive_dir) if archive_dir else None)
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


def discover(paths: Iterable[str], glob: str, archive_dir: Path | None = None) -> list[str]:
    """Files to process, in a stable order. Folders are searched recursively; archive folders (the
    default `.transcripts`, the given `archive_dir`, any folder holding a compactcli manifest) are
    never entered: their archives and manifest are not transcripts to compact or count."""
    skip_exact = {archive_dir.resolve()} if archive_dir else set()
    found: list[str] = []
    seen: set[str] = set()
    for given in paths:
        if given == STDIN or not os.path.isdir(given):
            candidates: Iterable[str] = [given]
        elif is_archive_dir(Path(given), skip_exact):
            candidates = []
        else:
            candidates = _walk(Path(given), glob, skip_exact)
        for candidate in candidates:
            if candidate not in seen:
                seen.add(candidate)
                found.append(candidate)
    return found


def _walk(root: Path, glob: str, skip_exact: set[Path]) -> Iterator[str]:
    # A folder that cannot be searched is handed on as an item, so that it fails the run (see
    # run_one) instead of being skipped without a word.
    unlisted: list[str] = []
    for dirpath, dirnames, _ in os.walk(root, onerror=lambda exc: unlisted.append(str(exc.filename))):
        yield from unlisted
        unlisted.clear()
        dirnames[:] = sorted(d for d in dirnames if not is_archive_dir(Path(dirpath) / d, skip_exact))
        for match in sorted(Path(dirpath).glob(glob)):
            # Temp files of an interrupted replace start with a dot; they are not transcripts.
            if match.is_file() and not match.name.startswith("."):
                yield str(match)
    yield from unlisted


def run(
    items: list[str],
    worker: Callable[[str], Outcome],
    *,
    jobs: int = 1,
    progress: bool | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Process every item; a worker's unexpected exception fails that item only."""
    if progress is None:
        progress = sys.stderr.isatty() and len(items) > 1
    bar = None
    printing: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(items), file=sys.stderr, unit="file", leave=False)
        # What on_outcome prints (stdout or stderr: one terminal) goes on a line of its own: the bar
        # is cleared first and drawn again below it.
        printing = partial(tqdm.external_write_mode, file=sys.stderr)
    outcomes: list[Outcome] = []

    def record(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_outcome:
            with printing():
                on_outcome(outcome)
        if bar is not None:
            bar.update(1)

    try:
        if jobs > 1 and len(items) > 1:
            from concurrent.futures import ProcessPoolExecutor  # costs 20 ms of start-up; only here

            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for outcome in pool.map(run_one, [worker] * len(items), items):
                    record(outcome)
        else:
            for item in items:
                record(run_one(worker, item))
    finally:
        if bar is not None:
            bar.close()
    return outcomes


def run_one(worker: Callable[[str], Outcome], item: str) -> Outcome:
    """`worker(item)`, with a documented error turned into that item's failed (or busy) outcome."""
    if item != STDIN and os.path.isdir(item):
        return _unsearchable(item)
    try:
        return worker(item)
    except errors.CompactError as exc:
        status = BUSY if exc.exit_code == errors.BUSY else FAILED
        message = str(exc)
        if item != STDIN and not message.startswith(item):
            message = f"{item}: {message}"  # every error names its file
        return Outcome(item, status, exc.exit_code, message)
    except OSError as exc:
        return Outcome(item, FAILED, errors.IO_ERR, f"{item}: {exc.strerror or exc}")


def _unsearchable(folder: str) -> Outcome:
    """A folder that discovery could not search (the only way a folder becomes an item)."""
    reason = "cannot be listed"
    try:
        os.scandir(folder).close()
    except OSError as exc:
        reason = exc.strerror or str(exc)
    return Outcome(folder, FAILED, errors.IO_ERR, f"{folder}: cannot search folder: {reason}")
