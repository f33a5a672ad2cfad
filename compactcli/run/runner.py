"""Running a command over many files: find the transcripts, then process each (in parallel with --jobs).

Each file ends as one `report.Outcome`; an error in one file never stops the others.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from compactcli.core import errors
from compactcli.core.constants import STDIN
from compactcli.report import BUSY, FAILED, Outcome
from compactcli.storage.archives import is_archive_dir

if TYPE_CHECKING:
    from compactcli.run import executors
    from compactcli.run.cache import RunCache
    from compactcli.run.settings import Inputs, Writes


def find_inputs(
    paths: tuple[str, ...], glob: str, archive_dir: str | None = None, output: str | None = None
) -> list[str]:
    """The files to process; usage errors (exit 2) for inputs and -o that do not go together."""
    try:
        items = discover(paths, glob, Path(archive_dir) if archive_dir else None)
    except errors.CompactError as exc:  # a URL that cannot be listed
        if exc.exit_code == errors.USAGE:
            raise click.UsageError(str(exc)) from None
        raise
    if output is not None and len(items) != 1:
        raise click.UsageError(f"-o/--output takes exactly one input file, got {len(items)}")
    same_file = output not in (None, STDIN) and items[0] != STDIN
    if same_file and Path(output).resolve() == Path(items[0]).resolve():
        raise click.UsageError("-o names the input itself: leave -o out to rewrite in place (archived)")
    if STDIN in items and len(items) > 1:
        raise click.UsageError("'-' (stdin) cannot be combined with other inputs")
    return items


def file_worker(
    items: list[str], inputs: Inputs, writes: Writes, settings, analyze
) -> Callable[[str], Outcome]:
    """How each file is written: in place or to -o (local files), or under --output-dir (any URL)."""
    if writes.output_dir is None:
        urls = [item for item in items if _is_url(item)]
        if urls and writes.output is None and not writes.preview:
            raise click.UsageError(
                f"{urls[0]}: files named by URL are never rewritten in place (object stores have no "
                "atomic rename or locks): write the results elsewhere with --output-dir DIR|URL"
            )
        return partial(_rewrite, settings=settings, analyze=analyze)
    from compactcli.run import output_dir

    if writes.output is not None:
        raise click.UsageError("-o and --output-dir do not go together")
    problem = output_dir.check_layout(items, inputs.paths)
    if problem:
        raise click.UsageError(problem)
    return partial(
        output_dir.process,
        settings=settings,
        analyze=analyze,
        output_dir=writes.output_dir,
        roots=inputs.paths,
        twins=output_dir.folded_twins(items, inputs.paths),
    )


def _rewrite(item: str, **kwargs) -> Outcome:
    """rewrite.process, imported when the first file is read: a run the cache answers reads none."""
    from compactcli.run.rewrite import process

    return process(item, **kwargs)


def _is_url(item: str) -> bool:
    if "://" not in item:
        return False
    from compactcli.storage import remote

    return remote.is_url(item)


def write_manifest(outcomes: list[Outcome], writes: Writes, settings) -> None:
    """The --output-dir manifest, once every file is written (failing to write it is an I/O error)."""
    if writes.output_dir is None or writes.preview:
        return
    from compactcli.run import output_dir

    output_dir.write_manifest(writes.output_dir, outcomes, settings.command, settings.options)


def stdout_carries_data(items: list[str], output: str | None, diff: bool = False) -> bool:
    """Whether results or a --diff go to stdout (then --json reports go to stderr)."""
    return diff or output == STDIN or (STDIN in items and output is None)


def discover(paths: Iterable[str], glob: str, archive_dir: Path | None = None) -> list[str]:
    """Files to process, in a stable order. Folders are searched recursively; archive folders (the
    default `.transcripts`, the given `archive_dir`, any folder holding a compactcli manifest) are
    never entered: their archives and manifest are not transcripts to compact or count."""
    skip_exact = {archive_dir.resolve()} if archive_dir else set()
    found: list[str] = []
    seen: set[str] = set()
    for given in paths:
        if _is_url(given):
            from compactcli.storage import remote

            candidates: Iterable[str] = remote.discover(given, glob)
        elif given == STDIN or not os.path.isdir(given):
            candidates = [given]
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
    """The files under `root` that `glob` picks: each folder's own files in name order, then its
    sub-folders in name order (os.walk's order, top down); symlinks to folders are not entered."""
    if not _single_name_pattern(glob):
        yield from _glob_walk(root, glob, skip_exact)
        return
    picks = re.compile(fnmatch.translate(glob)).match
    top = os.fspath(root)
    found: list[str] = []
    _walk_folder(top, top, picks, skip_exact, found)
    yield from found


def _single_name_pattern(glob: str) -> bool:
    """A pattern for names within one folder (`*.jsonl`), which _walk_folder matches itself; others
    (`sub/*.jsonl`, `**`) go to pathlib's glob."""
    return bool(glob) and "/" not in glob and "**" not in glob and glob not in (".", "..")


def _walk_folder(folder: str, shown: str, picks: Callable, skip_exact: set[Path], found: list[str]) -> None:
    """One os.scandir per folder: which entries are files and folders comes with the listing (no stat
    per file, except through symlinks). `folder` is the path scandir is given (os.walk's spelling,
    named in errors), `shown` the one items are named by (pathlib's: no `./` in front). The files go
    to `found`: a list, not a generator, and no function call per entry (a cron run lists thousands)."""
    files: list[str] = []
    folders: list[tuple[str, bool]] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    folders.append((name, _is_symlink(entry)))
                # Temp files of an interrupted replace start with a dot; they are not transcripts.
                elif picks(name) and name[:1] != ".":
                    try:
                        is_file = entry.is_file()
                    except OSError as exc:
                        is_file = exc.errno not in _NOT_THERE
                    if is_file:
                        files.append(name)
    except OSError as exc:
        # A folder that cannot be searched is handed on as an item, so that it fails the run (see
        # run_one) instead of being skipped without a word.
        found.append(str(exc.filename))
        return
    prefix = "" if shown == "." else shown if shown.endswith("/") else shown + "/"
    files.sort()
    found += [prefix + name for name in files]
    for name, is_link in sorted(folders):
        if not is_link and not is_archive_dir(Path(shown, name), skip_exact):
            _walk_folder(os.path.join(folder, name), prefix + name, picks, skip_exact, found)


# What pathlib's is_file() takes for "not a file" rather than an error (a dangling or looping symlink).
# A symlink whose target cannot be looked at for another reason (permissions) is handed on as a file,
# so that reading it fails the run naming it.
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def _is_symlink(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _glob_walk(root: Path, glob: str, skip_exact: set[Path]) -> Iterator[str]:
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
    worker: Callable[[str], Outcome] | None,
    *,
    prepare: Callable[[], Callable[[str], Outcome]] | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: bool | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    cache: RunCache | None = None,
) -> list[Outcome]:
    """Process every item, here (--jobs) or on a Dask cluster (--scheduler): the same outcomes in the same
    order either way. A documented error fails its item only (run_one).

    With a `cache`, files it remembers unchanged are answered without being read (cache.py), and the
    outcomes of the others are remembered for the next run. Without a `worker`, `prepare()` makes it
    once some file has to be read, before any outcome is told: a run the cache answers then never
    loads what only reading needs."""
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

    def done(count: int) -> None:
        if bar is not None:
            bar.update(count)

    def record(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if cache is not None:
            cache.remember(outcome)
        if on_outcome is None:
            return
        if bar is None:
            on_outcome(outcome)
            return
        with printing():
            on_outcome(outcome)

    known: dict[int, Outcome] = {}
    if cache is not None and cache.enabled:
        known = cache.known(items)
    todo = [item for index, item in enumerate(items) if index not in known]
    try:
        if worker is None and prepare is not None and (todo or scheduler is not None):
            worker = prepare()
        if worker is not None and cache is not None and cache.enabled:
            from compactcli.run.cache import Observed

            worker = Observed(worker, cache.remembers)
        if known:
            done(len(known))
        if not todo and scheduler is None:  # the cache answered every file: no executor to start
            answered = [known[index] for index in range(len(items))]
            outcomes += answered  # nothing new to remember
            if on_outcome is not None and bar is None:
                for outcome in answered:
                    on_outcome(outcome)
            elif on_outcome is not None:
                for outcome in answered:
                    with printing():
                        on_outcome(outcome)
            return outcomes
        with _executor(jobs, scheduler) as executor:
            fresh = executor.map(partial(run_one, worker), todo, done)
            for index in range(len(items)):
                record(known[index] if index in known else next(fresh))
            next(fresh, None)  # let the executor finish (a pool shuts down there)
    finally:
        if bar is not None:
            bar.close()
        if cache is not None:
            cache.save()
    return outcomes


@contextlib.contextmanager
def _executor(jobs: int, scheduler: str | None) -> Iterator[executors.Executor]:
    from compactcli.run import executors

    if scheduler is None:
        yield executors.LocalExecutor(jobs)
        return
    cluster = executors.DaskExecutor(scheduler).__enter__()  # no cluster: raises, no file is touched
    try:
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


def run_one(worker: Callable[[str], Outcome], item: str) -> Outcome:
    """`worker(item)`, with a documented error turned into that item's failed (or busy) outcome."""
    if item != STDIN and os.path.isdir(item):
        return _unsearchable(item)
    try:
        with errors.bad_shapes_are_bad_input(item):
            return worker(item)
    except errors.CompactError as exc:
        status = BUSY if exc.exit_code == errors.BUSY else FAILED
        message = str(exc)
        if item != STDIN and not message.startswith(item):
            message = f"{item}: {message}"  # every error names its file
        return Outcome(item, status, exc.exit_code, message)
    except BrokenPipeError:
        raise  # stdout was closed (`| head`): the run ends there, quietly (see cli.closed_pipe)
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
