"""Streaming read of a JSONL transcript, line by line, with byte-exact passthrough of what does not change."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from compactcli import dialects
from compactcli.core import jsonio
from compactcli.core.constants import STDIN
from compactcli.core.errors import BadInput, TornLastLine, reading

STDIN_NAME = "<stdin>"
# Transcript lines are long (KBs); the default 8 KiB buffer makes line iteration several times slower.
READ_BUFFER = 1 << 20
COPY_CHUNK = 1 << 20


@dataclass(slots=True)
class Line:
    number: int  # 1-based, as editors count
    raw: bytes  # exactly as in the file, line ending included
    record: dict | None  # None for blank lines and for bad lines passed through with --on-invalid keep
    slow: bool = False  # parsed by the stdlib (orjson refused it)


def line_ending(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return b"\r\n"
    return b"\n" if raw.endswith(b"\n") else b""


def parse_line(raw: bytes, path: str, number: int, on_invalid: str = "error") -> Line:
    reading.set((path, number))  # names the line if a record of a shape nothing expected fails later
    if not raw.strip():
        return Line(number, raw, None)
    try:
        record, slow = jsonio.loads_object(raw)
    except jsonio.LineError as exc:
        if on_invalid == "keep":
            return Line(number, raw, None)
        reason = str(exc)
        if not raw.endswith(b"\n"):
            reason = f"torn last line (no newline at the end; still being written?): {reason}"
            raise TornLastLine(f"{path}:{number}: {reason}") from None
        raise BadInput(f"{path}:{number}: {reason}") from None
    return Line(number, raw, record, slow)


def read_lines(f: BinaryIO, path: str, on_invalid: str = "error") -> Iterator[Line]:
    """Parsed lines of a file from its current position; memory is bounded by the longest line."""
    for number, raw in enumerate(f, 1):
        yield parse_line(raw, path, number, on_invalid)


class ConversationLines:
    """The lines of a file in the order its conversations hold them (docs/design.md, "Dialects").

    In file order, unless the dialect has its own order (Dialect.new_order: Claude Code's parentUuid
    chain). Then the file is read twice: first to index it (blank and unreadable lines are yielded then,
    with record None), then the records of the conversations are read again in their order; records no
    conversation holds (an abandoned branch, a title) are not yielded. Every line is checked either way.
    After the iteration, `lines` and `size` count the whole file.
    """

    def __init__(
        self,
        f: BinaryIO,
        path: str,
        on_invalid: str,
        dialect: dialects.Dialect,
        each_line: Callable[[Line, int], None] | None = None,
    ) -> None:
        self.f, self.path, self.on_invalid, self.dialect = f, path, on_invalid, dialect
        self.each_line = each_line  # called with (line, offset) for every line, in file order
        self.lines = 0
        self.size = 0
        self.offset = 0  # of the line yielded last

    def __iter__(self) -> Iterator[Line]:
        order = self.dialect.new_order()
        base = self.f.tell()
        each_line = self.each_line
        for line in read_lines(self.f, self.path, self.on_invalid):
            self.lines = line.number
            offset = base + self.size
            self.size += len(line.raw)
            if each_line is not None:
                each_line(line, offset)
            if order is None or line.record is None:
                self.offset = offset
                yield line
            else:
                order.add(line.number, offset, line.record)
        if order is None:
            return
        for number, start in order.order():
            self.f.seek(start)
            self.offset = start
            yield parse_line(self.f.readline(), self.path, number, self.on_invalid)


def dump_line(line: Line) -> bytes:
    """A changed record serialized the way its line was, with the same line ending."""
    return jsonio.dumps_like(line.record, line.raw, line.slow) + line_ending(line.raw)


def detect_dialect(f: BinaryIO, path: str = "<input>") -> str:
    """The name of the dialect the first lines prove (docs/design.md, "Dialects").

    Raises BadInput (65) for a file in no dialect compactcli reads. An empty file is read in the
    default dialect: there is nothing in it to misread.
    """
    start = f.tell()
    try:
        found = dialects.detect(f, path)
    finally:
        f.seek(start)
    return (found or dialects.DEFAULT).name


def dialect_for(f: BinaryIO, path: str, name: str | None) -> dialects.Dialect:
    """The dialect `--dialect` names, else the one detected."""
    return dialects.get(name or detect_dialect(f, path))


def copy_range(source: BinaryIO, out: BinaryIO, start: int, end: int | None) -> None:
    """Copy bytes [start, end) of `source` (to its end when `end` is None) in large chunks."""
    source.seek(start)
    remaining = None if end is None else end - start
    while remaining is None or remaining > 0:
        chunk = source.read(COPY_CHUNK if remaining is None else min(COPY_CHUNK, remaining))
        if not chunk:
            break
        out.write(chunk)
        if remaining is not None:
            remaining -= len(chunk)


def diff_line(raw: bytes) -> str:
    """A line as a unified diff shows it (with the marker for a missing final newline)."""
    text = raw.decode("utf-8", errors="replace")
    return text if text.endswith("\n") else text + "\n\\ No newline at end of file\n"


# No transcript line is this long; a stream without line breaks (/dev/zero) is refused at this size
# instead of filling the disk.
MAX_LINE_BYTES = 256 << 20


def copy_to_spool(stream: BinaryIO, spool: BinaryIO, name: str) -> None:
    """Copy a stream that cannot seek (stdin, a FIFO, a device) to ``spool`` and rewind it.

    Raises BadInput (exit 65) once a line passes MAX_LINE_BYTES: the spool stays bounded.
    """
    line, since_newline = 1, 0
    while chunk := stream.read(READ_BUFFER):
        breaks = chunk.count(b"\n")
        since_newline = len(chunk) - chunk.rfind(b"\n") - 1 if breaks else since_newline + len(chunk)
        line += breaks
        if since_newline > MAX_LINE_BYTES:
            raise BadInput(
                f"{name}:{line}: a line longer than {MAX_LINE_BYTES >> 20} MiB without a line break; "
                "not a transcript"
            )
        spool.write(chunk)
    spool.flush()
    spool.seek(0)


@contextmanager
def open_input(item: str) -> Iterator[tuple[BinaryIO, str]]:
    """A transcript opened for reading, with the name messages use for it.

    stdin ('-') and URLs (s3://...) are spooled to a temp file: dialect detection reads ahead and seeks
    back, and some commands read their input twice, which a pipe cannot do.
    """
    import tempfile  # only for what must be spooled; not imported by a run that reads no file

    if item == STDIN:
        with tempfile.TemporaryFile() as spool:
            copy_to_spool(sys.stdin.buffer, spool, STDIN_NAME)
            yield spool, STDIN_NAME
        return
    if "://" in item:
        from compactcli.storage import remote

        if remote.is_url(item):
            with remote.open_spooled(item) as spool:
                yield spool, item
            return
    with open(item, "rb", buffering=READ_BUFFER) as source:
        if stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            yield source, item
            return
        # A named pipe (`<(command)`, a FIFO) cannot seek either, and a device (/dev/zero) may
        # never end a line: spooled like stdin, with the same bound.
        with tempfile.TemporaryFile() as spool:
            copy_to_spool(source, spool, item)
            yield spool, item
