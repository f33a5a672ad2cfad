"""replay on one transcript: the input, the archives of simulated compactions, the timeline, the final
context and the report. The logic is compactcli.layers.replay."""

from __future__ import annotations

import csv
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from compactcli import dialects
from compactcli.core.errors import BadInput
from compactcli.layers.replay import (
    TIMELINE_FIELDS,
    Entry,
    Replay,
    ReplayResult,
    entry_bytes,
    output_entries,
)
from compactcli.pipelines.transcript import STDIN, ConversationLines, dialect_for, open_input
from compactcli.storage import remote
from compactcli.storage.manifest import archive_copy
from compactcli.storage.replace import mode_to_copy, output_file

TIMELINE_SUFFIXES = (".jsonl", ".csv")


# --- one replay --------------------------------------------------------------------------------------


class Source:
    """The input, seekable (stdin is spooled), read once per replay."""

    def __init__(self, path: str, stack: ExitStack) -> None:
        self.file: BinaryIO
        self.file, self.name = stack.enter_context(open_input(path))
        if path == STDIN:
            self.stem = "stdin"
            self.place = Path.cwd() / "stdin.jsonl"  # where the default archive folder goes
        elif remote.is_url(path):  # archives, if any, go in this folder, as for stdin
            self.stem = PurePosixPath(path).stem
            self.place = Path.cwd() / f"{self.stem}.jsonl"
        else:
            self.stem = Path(path).stem
            self.place = Path(path)
        self.template = b""  # the first line: how new records are serialized
        # Every line is accounted for (docs/design.md, "summarize: the cut and every line"): the lines
        # of the last run, those kept unread by --on-invalid keep, and those a compaction archived.
        self.lines = 0
        self.unreadable: list[tuple[int, int, int]] = []  # (0-based line, offset, length)
        self.archived: set[int] = set()  # 0-based lines

    def dialect(self, fmt: str | None) -> dialects.Dialect:
        self.file.seek(0)
        dialect = dialect_for(self.file, self.name, fmt)
        if not dialect.writes_compactions:
            raise BadInput(f"{self.name}: replay cannot simulate {dialect.title or dialect.name} yet")
        return dialect

    def run(self, replay: Replay, on_invalid: str) -> ReplayResult:
        self.file.seek(0)
        self.unreadable, self.archived = [], set()
        archive = replay.archive

        def archive_counted(entries: list[Entry]) -> str:
            self.archived.update(entry.line for entry in entries if entry.line is not None)
            return archive(entries)

        replay.archive = archive_counted
        view = ConversationLines(self.file, self.name, on_invalid, replay.dialect)
        for line in view:
            if line.record is None:
                if line.raw.strip():
                    self.unreadable.append((line.number - 1, view.offset, len(line.raw)))
                continue
            if not self.template:
                self.template = line.raw
            replay.add(line.number - 1, line.record, line.raw, line.slow)
        self.lines = view.lines
        return replay.finish()

    def unreadable_lines(self) -> list[tuple[int, bytes]]:
        """(0-based line, bytes) of the lines --on-invalid keep passed through unread."""
        out = []
        for line, offset, length in self.unreadable:
            self.file.seek(offset)
            out.append((line, self.file.read(length)))
        return out

    def accounting(self, result: ReplayResult) -> dict[str, int]:
        """Where the input's lines went: the output (the final context, and lines kept unread), an
        archive of a simulated compaction, or left out (no part of the conversation replayed, blank, or
        before a compaction the file records)."""
        output = {entry.line for entry in result.context if entry.line is not None}
        output |= {line for line, _, _ in self.unreadable}
        archived = self.archived - output
        return {
            "lines": self.lines,
            "lines_in_output": len(output),
            "lines_archived": len(archived),
            "lines_left_out": self.lines - len(output) - len(archived),
        }


def write_entries(
    out: IO[bytes],
    dialect: dialects.Dialect,
    entries: list[Entry],
    template: bytes,
    unread: list[tuple[int, bytes]] = (),  # type: ignore[assignment]
) -> None:
    """The entries as JSONL; `unread` lines (0-based line, bytes) go in place, before the first entry
    read after them."""
    waiting = sorted(unread)
    for entry in output_entries(dialect, entries):
        while waiting and entry.line is not None and waiting[0][0] < entry.line:
            out.write(_ended(waiting.pop(0)[1]))
        out.write(entry_bytes(entry, template))
    for _, raw in waiting:
        out.write(_ended(raw))


def _ended(raw: bytes) -> bytes:
    return raw if raw.endswith(b"\n") else raw + b"\n"


def archiver(source: Source, dialect: dialects.Dialect, folder: Path) -> Callable[[list[Entry]], str]:
    """Writes a context as JSONL and archives it like an original (never overwritten, 0600)."""

    def archive(entries: list[Entry]) -> str:
        with tempfile.TemporaryDirectory() as scratch:
            temp = Path(scratch) / f"{source.stem}.jsonl"
            with open(temp, "wb") as out:
                write_entries(out, dialect, entries, source.template)
            path, _, _ = archive_copy(temp, folder, stem=source.stem)
        return str(path)

    return archive


def write_timeline(path: Path, result: ReplayResult) -> None:
    rows = [row.to_json() for row in result.rows]
    if path.suffix.lower() == ".csv":
        with open(path, "w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=TIMELINE_FIELDS)
            writer.writeheader()
            writer.writerows(rows)  # None (no event) is written as an empty field
        return
    import jsonlines

    with jsonlines.open(path, mode="w") as writer:
        writer.write_all(rows)


def write_output(
    output: str, dialect: dialects.Dialect, result: ReplayResult, source: Source, unread=()
) -> None:
    """The final context to `output`; a new file takes the source's permission bits, as micro's -o."""
    template = source.template
    if output == "-":
        write_entries(sys.stdout.buffer, dialect, result.context, template, unread)
        sys.stdout.buffer.flush()
        return
    with output_file(Path(output), mode_to_copy(source.file)) as out:
        write_entries(out, dialect, result.context, template, unread)


# --- reports -----------------------------------------------------------------------------------------


def report_lines(name: str, settings: dict, result: ReplayResult) -> list[str]:
    kinds = result.by_kind
    conversation = "main chain" if result.conversation == "main" else "sub-agent conversation"
    head = f"{name}: {settings['dialect']}"
    if dialects.get(settings["dialect"]).has_side_conversations:
        head += f", {conversation}"
    head += (
        f"; estimator {settings['estimator']}, threshold {settings['threshold']:,}, keep {settings['keep']}; "
        f"summarizer {settings['backend']}"
    )
    compactions = sum(kinds.values())
    summarizer = f"{result.summarizer_calls}"
    if result.api_requests:
        summarizer += f" ({result.api_requests} API requests)"
    lines = [
        head,
        f"  model calls           {result.calls:,}",
        f"  compactions           {compactions} (auto {kinds['auto']}, manual {kinds['manual']}, "
        f"recorded in the file {kinds['recorded']})",
        f"  summarizer calls      {summarizer}",
        f"  peak tokens           {result.peak:,} (largest sent to a model call: {result.peak_sent:,})",
        f"  final tokens          {result.final_tokens:,}",
        f"  tool results cleared  {result.cleared:,}",
    ]
    for archive in result.archives:
        lines.append(f"  archive               {archive}")
    if "lines" in settings:  # left out: no part of the conversation replayed, or before a recorded compaction
        lines.append(
            f"  input lines           {settings['lines']:,} ({settings['lines_in_output']:,} in the final "
            f"context, {settings['lines_archived']:,} archived, {settings['lines_left_out']:,} left out)"
        )
    return lines


WHAT_IF_COLUMNS = (  # (title, key, width)
    ("threshold", "threshold", 10),
    ("keep", "keep", 5),
    ("calls", "calls", 6),
    ("auto", "auto", 5),
    ("manual", "manual", 7),
    ("recorded", "recorded", 9),
    ("summarizer", "summarizer_calls", 11),
    ("peak", "peak_tokens", 9),
    ("peak sent", "peak_sent_tokens", 10),
    ("final", "final_tokens", 9),
)


def what_if_table(rows: list[dict]) -> str:
    lines = ["".join(f"{title:>{width}}" for title, _, width in WHAT_IF_COLUMNS)]
    for row in rows:
        flat = {**row, **row["compactions"]}
        lines.append("".join(f"{flat[key]:>{width},}" for _, key, width in WHAT_IF_COLUMNS))
    return "\n".join(lines) + "\n"
