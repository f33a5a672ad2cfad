"""One transcript through one command: read, decide, then write in place (archived), to -o, or to stdout.

A command supplies `analyze(file, display_path) -> Edit`; everything about destinations, locks, archives,
--check/--diff/--dry-run and --min-age lives here, once.

An Edit's `prepare(source)` is work that only a real write needs (a model call: never run for a
preview). With `archive_first`, the new content names the archive of the original: the archive is
made after `prepare` and before `write`, checked against the edit's `sha256`, handed to
`use_archive(path)`, and removed if the write fails. For -o and stdout (no replacement, no manifest
line) such an archive is made too, beside the input (stdin: in the current folder) or in --archive-dir.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from compactcli.core import errors
from compactcli.pipelines.transcript import READ_BUFFER, STDIN, copy_to_spool, open_input
from compactcli.report import BUSY, CHANGED, SKIPPED, UNCHANGED, WOULD_CHANGE, Outcome
from compactcli.run.settings import FileSettings
from compactcli.storage.archives import ARCHIVE_DIR_NAME
from compactcli.storage.fileio import WRITE_BUFFER, snapshot
from compactcli.storage.locks import file_lock
from compactcli.storage.manifest import archive_copy, take_back_unfinished
from compactcli.storage.replace import Replacement, mode_to_copy, output_file

STDOUT = "-"


class Edit(Protocol):
    """What a command decided for one file after its first read: everything `process` calls."""

    stats: dict
    archive_first: bool  # the new content names the original's archive (see use_archive)
    sha256: str  # of the bytes the first read saw ("" when not hashed): the archive must match it

    @property
    def changed(self) -> bool: ...

    def prepare(self, source: BinaryIO) -> None:
        """Work only a real write needs (never run for a preview), reading `source` from its start."""

    def use_archive(self, path: str) -> None:
        """With archive_first: where the original was archived, before `write` is called."""

    def write(self, source: BinaryIO, out: BinaryIO) -> None:
        """Write the new content, reading the original again from the start of `source`."""

    def describe(self, source: BinaryIO) -> Iterator[str]:
        """Human lines for --dry-run."""

    def diff(self, source: BinaryIO, name: str) -> Iterator[str]:
        """A unified diff for --diff."""

    def close(self) -> None:
        """Release what the first read kept (temp files)."""


Analyze = Callable[[BinaryIO, str], Edit]


class _CountingWriter:
    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.written = 0

    def write(self, data: bytes) -> int:
        self.written += len(data)
        return self.raw.write(data)


def process(item: str, settings: FileSettings, analyze: Analyze) -> Outcome:
    return _closing_edits(analyze, lambda closing: _process(item, settings, closing))


def process_open(item: str, source: BinaryIO, settings: FileSettings, analyze: Analyze) -> Outcome:
    """An input already open (a spooled URL, --output-dir) to `settings.output`, or a preview of it."""
    return _closing_edits(analyze, lambda closing: _to_output(item, source, settings, closing))


def _closing_edits(analyze: Analyze, run: Callable[[Analyze], Outcome]) -> Outcome:
    def analyze_and_close(source: BinaryIO, name: str) -> Edit:
        edit = analyze(source, name)
        opened.append(edit)
        return edit

    opened: list[Edit] = []
    try:
        return run(analyze_and_close)
    finally:
        for edit in opened:
            edit.close()


def _is_url(item: str) -> bool:
    # Imported only for an item that may be a URL: a local run does not load the object-store module.
    from compactcli.storage import remote

    return remote.is_url(item)


def _process(item: str, settings: FileSettings, analyze: Analyze) -> Outcome:
    if item == STDIN:
        return _process_stdin(settings, analyze)
    # Read-only here (-o and previews): an object store is not rewritten in place.
    if "://" in item and _is_url(item):
        with open_input(item) as (source, name):
            return _to_output(name, source, settings, analyze)
    path = Path(item)
    st = path.stat()
    skipped = too_recent(item, st, settings)
    if skipped is not None:
        return skipped
    to_output = settings.output is not None or settings.check or settings.diff or settings.dry_run
    if not stat.S_ISREG(st.st_mode):
        # A named pipe (`<(command)`, a FIFO): read once, like stdin; it has no place to write back to.
        if not to_output:
            raise errors.CompactError(f"{item}: not a regular file: cannot rewrite it in place (use -o)")
        with open(path, "rb") as pipe:
            return _process_spooled(item, pipe, settings, analyze)
    if to_output:
        with open(path, "rb", buffering=READ_BUFFER) as source:
            return _to_output(item, source, settings, analyze)
    return _in_place(item, path, settings, analyze)


TORN_SETTLE = 0.5  # seconds a torn last line is given to be completed by a writer caught mid-line


def _still_written(exc: errors.BadInput, path: Path, state: object) -> bool:
    """Whether a file read with a torn last line grows within TORN_SETTLE (a writer was mid-line: busy)."""
    if not isinstance(exc, errors.TornLastLine):
        return False
    time.sleep(TORN_SETTLE)
    return snapshot(path) != state


def too_recent(item: str, st: os.stat_result, settings: FileSettings) -> Outcome | None:
    """The skipped outcome of a file modified less than --min-age ago (an agent may still write it)."""
    if settings.min_age and time.time() - st.st_mtime < settings.min_age:
        return Outcome(item, SKIPPED, message=f"{item}: modified less than {settings.min_age:g}s ago")
    return None


def _preview(item: str, source: BinaryIO, edit: Edit, settings: FileSettings) -> Outcome | None:
    """The outcome of --check/--diff/--dry-run, or None when the file is to be written."""
    if not (settings.check or settings.diff or settings.dry_run):
        return None
    status, code = (WOULD_CHANGE, errors.CHECK_FAILED if settings.check else errors.OK)
    if not edit.changed:
        status, code = UNCHANGED, errors.OK
    stats = dict(edit.stats)
    # The two previews are kept apart: the --dry-run list is a report (text lines, or `changes` in the
    # JSON object), the --diff is data for stdout; the report tells each where it goes.
    if edit.changed and settings.dry_run:
        source.seek(0)
        stats["changes"] = [_change(line, item) for line in edit.describe(source)]
    if edit.changed and settings.diff:
        source.seek(0)
        stats["preview"] = "".join(
            line if line.endswith("\n") else line + "\n" for line in edit.diff(source, item)
        )
    return Outcome(item, status, code, stats=stats)


def _change(line: str, item: str) -> dict:
    """One --dry-run line (`path:line: what`, or `path: what`) as the JSON object's `line` and `change`."""
    rest = line[len(item) + 1 :] if line.startswith(item + ":") else line
    number, sep, what = rest.partition(":")
    if sep and number.isdigit():
        return {"line": int(number), "change": what.strip()}
    return {"line": None, "change": rest.strip()}


def _in_place(item: str, path: Path, settings: FileSettings, analyze: Analyze) -> Outcome:
    archive_dir = Path(settings.archive_dir) if settings.archive_dir else None
    with file_lock(path, archive_dir):
        # What a run killed between its manifest line and its rename left is taken back first.
        healed = take_back_unfinished(path, archive_dir)
        state = snapshot(path)
        with open(path, "rb", buffering=READ_BUFFER) as source:
            try:
                edit = analyze(source, item)
            except errors.BadInput as exc:
                if snapshot(path) != state or _still_written(exc, path, state):
                    raise errors.Busy(f"{item}: busy: changed while it was processed") from None
                raise
            if healed:  # said in the file's report: its history lost a change that never happened
                edit.stats["taken_back"] = healed
            if not edit.changed:
                return Outcome(item, UNCHANGED, stats=edit.stats)
            archived = _prepare(edit, source, path, archive_dir)
            handed_over = False
            try:
                source.seek(0)
                with Replacement(path) as replacement:
                    edit.write(source, replacement.file)
                    refused = _gate(edit, source, replacement.file, replacement.temp_path)
                    if refused is not None:  # the temp file goes with the block, the archive below
                        raise _Refused(refused)
                    handed_over = True  # commit_in_place removes the archive if it fails early
                    record = replacement.commit_in_place(
                        expected=state,
                        archive_dir=archive_dir,
                        command=settings.command,
                        options=settings.options,
                        archived=archived,
                    )
            except _Refused as refusal:
                return _refused(item, edit, archived, refusal)
            except BaseException:
                if archived is not None and not handed_over:
                    _discard(archived[0])
                raise
    stats = dict(edit.stats, bytes_before=record.size_before, bytes_after=record.size_after)
    stats["archive"] = record.archive
    _write_side_files(path, getattr(edit, "side_files", None) or {})
    return Outcome(item, CHANGED, stats=stats)


class _Refused(Exception):
    """The edit's gate refused its new content: the original stays (the message says why)."""


def _refused(item: str, edit: Edit, archived: tuple[Path, str, int] | None, refusal: _Refused) -> Outcome:
    """The outcome of a refused edit, its archive removed: nothing it made is left."""
    if archived is not None:
        _discard(archived[0])
        with contextlib.suppress(OSError):  # an archive folder made for it alone goes too
            os.rmdir(archived[0].parent)
    stats = dict(edit.stats, reason="below --min-retention")
    return Outcome(item, UNCHANGED, errors.CHECK_FAILED, str(refusal), stats=stats)


def _gate(edit: Edit, source: BinaryIO, out: BinaryIO, written: Path) -> str | None:
    """An edit's optional check of its new content before it replaces anything (summarize
    --min-retention): why not, or None."""
    gate = getattr(edit, "gate", None)
    if gate is None:
        return None
    out.flush()
    return gate(source, str(written))


def _write_side_files(path: Path, files: dict[str, str]) -> None:
    """What the dialect's agent writes beside the transcript with the new records (Dialect.side_files),
    each replaced atomically: a checkpoint the compaction names is there once the transcript is."""
    for relative, text in files.items():
        target = path.parent / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".compactcli-partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)


def _prepare(
    edit: Edit, source: BinaryIO, original: Path, archive_dir: Path | None, stem: str | None = None
) -> tuple[Path, str, int] | None:
    """Run the edit's `prepare`, then archive the original if the edit's content names the archive."""
    source.seek(0)
    edit.prepare(source)
    if not edit.archive_first:
        return None
    archived = archive_copy(original, archive_dir, stem=stem)
    if edit.sha256 and archived[1] != edit.sha256:
        _discard(archived[0])
        raise errors.Busy(f"{original}: busy: changed while it was processed")
    edit.use_archive(str(archived[0]))
    return archived


def _discard(archive: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(archive)


def _to_output(
    item: str, source: BinaryIO, settings: FileSettings, analyze: Analyze, spool: Path | None = None
) -> Outcome:
    edit = analyze(source, item)
    preview = _preview(item, source, edit, settings)
    if preview is not None:
        return preview
    archived = None
    if edit.changed:
        original = spool or Path(item)
        folder = Path(settings.archive_dir) if settings.archive_dir else None
        if spool is not None and folder is None:
            folder = Path(ARCHIVE_DIR_NAME)
        archived = _prepare(edit, source, original, folder, "stdin" if spool is not None else None)
    try:
        with contextlib.ExitStack() as stack:
            source.seek(0)
            content = _gated(edit, source, stack)
            if settings.output in (None, STDOUT):
                with _stdout() as stdout:
                    out = _CountingWriter(stdout)
                    _write(edit, source, out, content)
                written = out.written
            else:
                with output_file(Path(settings.output), _mode_of(source, spool)) as target:
                    out = _CountingWriter(target)
                    _write(edit, source, out, content)
                    written = out.written
    except _Refused as refusal:
        return _refused(item, edit, archived, refusal)
    except BaseException:
        if archived is not None:
            _discard(archived[0])
        raise
    status = CHANGED if edit.changed else UNCHANGED
    stats = dict(edit.stats, bytes_after=written)
    if archived is not None:
        stats["archive"] = str(archived[0])
    return Outcome(item, status, stats=stats)


def _mode_of(source: BinaryIO, spool: object) -> int | None:
    """The permission bits a new output copies: the transcript's own; none for stdin or a URL (a spool)."""
    return None if spool is not None else mode_to_copy(source)


@contextlib.contextmanager
def _stdout() -> Iterator[BinaryIO]:
    """Standard output with a large buffer (few write calls), flushed at the end of the block; the
    interpreter's own stdout where it is no file descriptor (a test runner's capture)."""
    sys.stdout.flush()
    try:
        fd = sys.stdout.buffer.fileno()
    except (AttributeError, OSError, ValueError):
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    sys.stdout.buffer.flush()
    with io.BufferedWriter(io.FileIO(fd, "wb", closefd=False), WRITE_BUFFER) as stdout:
        yield stdout


def _gated(edit: Edit, source: BinaryIO, stack: contextlib.ExitStack) -> BinaryIO | None:
    """The new content in a temp file, checked by the edit's gate before -o or stdout gets a byte of
    it (docs/design.md, "A summary below --min-retention is not applied"); None for an edit without a
    gate, which is written as it is made. Raises _Refused."""
    if not edit.changed or getattr(edit, "gate", None) is None:
        return None
    staged = stack.enter_context(tempfile.NamedTemporaryFile(prefix="compactcli-gate-"))
    edit.write(source, staged)
    refused = _gate(edit, source, staged, Path(staged.name))
    if refused is not None:
        raise _Refused(refused)
    staged.seek(0)
    return staged  # type: ignore[return-value]


def _write(edit: Edit, source: BinaryIO, out: _CountingWriter, content: BinaryIO | None = None) -> None:
    if content is not None:  # made and checked already (_gated)
        shutil.copyfileobj(content, out)  # type: ignore[arg-type]
    elif edit.changed:
        edit.write(source, out)  # type: ignore[arg-type]
    else:
        shutil.copyfileobj(source, out)  # type: ignore[arg-type]


def _process_stdin(settings: FileSettings, analyze: Analyze) -> Outcome:
    return _process_spooled("<stdin>", sys.stdin.buffer, settings, analyze)


def _process_spooled(name: str, stream: BinaryIO, settings: FileSettings, analyze: Analyze) -> Outcome:
    # Spooled to a temp file: the commands read their input twice and must not hold it in memory.
    with tempfile.NamedTemporaryFile(prefix="compactcli-stdin-") as spool:
        copy_to_spool(stream, spool, name)
        return _to_output(name, spool, settings, analyze, Path(spool.name))


__all__ = ["BUSY", "Edit", "FileSettings", "process", "too_recent"]
