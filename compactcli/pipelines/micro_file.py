"""micro on one file: a first pass indexes the tool results, a second writes the result.

Which results are old enough to clear is known only at the end of the first pass. So that the second pass
need not parse lines again, the first pass already serializes every line that has a clearable result as it
would be if cleared, into a small spool file (cleared lines are short); where the values cleared are spliced
into the line's bytes, only where they are and what replaces them is spooled (a long line written to the
spool would cost more than finding them). The second pass copies the original bytes and either the spooled
line or the spooled values. The rare line whose final plan differs (a result among the last --keep, a tool
name found only later in the file) is parsed again.
"""

from __future__ import annotations

import tempfile
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import orjson

from compactcli.core import jsonio
from compactcli.core.columns import narrow, widened
from compactcli.dialects import Dialect
from compactcli.dialects.base import NOTHING_SCANNED
from compactcli.layers.micro import (
    COPY_SLOT,
    DROP_SLOT,
    IMAGE_SLOT,
    PARENT_SLOT,
    THINKING_SLOT,
    MicroIndex,
    MicroOptions,
    Plan,
    Reclear,
    apply,
    plan,
    single_change,
)
from compactcli.pipelines.transcript import Line, copy_range, dialect_for, diff_line, dump_line, parse_line


class Spans:
    """(offset, length) in the source by line number, the lines added in increasing order: machine
    integers in arrays rather than a dict of tuples, as a long transcript has one per tool result and
    all are kept until the second pass."""

    __slots__ = ("lines", "offsets", "lengths")

    def __init__(self) -> None:
        self.lines = narrow()
        self.offsets = array("q")
        self.lengths = narrow()

    def add(self, line: int, offset: int, length: int) -> None:
        if self.lines and self.lines[-1] >= line:
            if self.lines[-1] == line:
                return  # named again (a strategy's record that has results too): the same span
            raise ValueError(f"line {line} added after line {self.lines[-1]}")
        try:
            self.lines.append(line)
        except OverflowError:
            self.lines = widened(self.lines, line)
        self.offsets.append(offset)
        try:
            self.lengths.append(length)
        except OverflowError:
            self.lengths = widened(self.lengths, length)

    def __getitem__(self, line: int) -> tuple[int, int]:
        at = bisect_left(self.lines, line)
        if at == len(self.lines) or self.lines[at] != line:
            raise KeyError(line)
        return self.offsets[at], self.lengths[at]

    def __len__(self) -> int:
        return len(self.lines)


class Spooled(Spans):
    """Where each spooled line is in the spool (offset, length) and the changes it was written with: one
    shared list per kind of change (layers/micro.single_change), not a tuple per line."""

    __slots__ = ("changes", "patches")

    def __init__(self) -> None:
        super().__init__()
        self.changes: list = []
        self.patches = bytearray()  # 1 where the spool holds the line's spans (_patch), not the line

    def put(self, line: int, offset: int, length: int, changes: list, patch: bool = False) -> None:
        self.add(line, offset, length)
        self.changes.append(changes)
        self.patches.append(patch)

    def get(self, line: int) -> tuple[int, int, list, bool] | None:
        at = bisect_left(self.lines, line)
        if at == len(self.lines) or self.lines[at] != line:
            return None
        return self.offsets[at], self.lengths[at], self.changes[at], bool(self.patches[at])


@dataclass
class MicroEdit:
    path: str
    dialect: Dialect
    clears: Plan
    on_invalid: str
    stats: dict
    spool: BinaryIO | None = None
    spooled: Spooled = field(default_factory=Spooled)
    spans: Spans = field(default_factory=Spans)  # line -> (offset, length) in source
    archive_first = False  # a placeholder does not name the archive
    sha256 = ""

    @property
    def changed(self) -> bool:
        return bool(self.clears)

    def prepare(self, source: BinaryIO) -> None:
        """Nothing: micro decides everything in its first read."""

    def use_archive(self, path: str) -> None:
        """Never called (archive_first is False)."""

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()

    def _replacements(self, source: BinaryIO, number: int) -> tuple[int, int, list[jsonio.Span]]:
        """(offset, length) of a changed line in `source`, and the bytes of the file that change: the
        whole line, or only the values spliced into it."""
        offset, length = self.spans[number]
        todo = self.clears[number]
        spooled = self.spooled.get(number)
        if spooled is not None and spooled[2] == todo and self.spool is not None:
            self.spool.seek(spooled[0])
            data = self.spool.read(spooled[1])
            if spooled[3]:
                return offset, length, _unpatch(data, offset)
            return offset, length, [(offset, offset + length, data)]
        source.seek(offset)
        line = parse_line(source.read(length), self.path, number, self.on_invalid)
        if line.record is None:
            return offset, length, []
        return offset, length, [(offset, offset + length, changed_line(self.dialect, line, todo))]

    def _new_line(self, source: BinaryIO, number: int) -> tuple[int, int, bytes]:
        """(offset, length) of a changed line in `source`, and what replaces it."""
        offset, length, spans = self._replacements(source, number)
        if len(spans) == 1 and spans[0][:2] == (offset, offset + length):  # the whole line: not read
            return offset, length, spans[0][2]
        source.seek(offset)
        raw = source.read(length)
        return offset, length, jsonio.apply_spans(raw, [(s - offset, e - offset, new) for s, e, new in spans])

    def write(self, source: BinaryIO, out: BinaryIO) -> None:
        # Unchanged stretches, the unchanged bytes of a spliced line among them, are copied in large
        # chunks rather than line by line.
        position = 0
        for number in sorted(self.clears):
            for start, end, new in self._replacements(source, number)[2]:
                copy_range(source, out, position, start)
                out.write(new)
                position = end
        copy_range(source, out, position, None)

    def describe(self, source: BinaryIO) -> Iterator[str]:
        for number, todo in sorted(self.clears.items()):
            for slot, placeholder in todo:
                if slot == THINKING_SLOT:
                    yield f"{self.path}:{number}: {self.dialect.drops_thinking_says}"
                    continue
                if slot in _STRATEGY_CHANGES:
                    yield f"{self.path}:{number}: {_STRATEGY_CHANGES[slot]}"
                    continue
                if slot == COPY_SLOT or isinstance(placeholder, Reclear):
                    text = placeholder.text if isinstance(placeholder, Reclear) else placeholder
                    yield f"{self.path}:{number}: clear the UI copy of a cleared tool result -> {text}"
                    continue
                where = f"block {slot}" if slot >= 0 else "message"
                yield f"{self.path}:{number}: clear tool result ({where}) -> {placeholder}"

    def diff(self, source: BinaryIO, name: str) -> Iterator[str]:
        yield f"--- {name}\n"
        yield f"+++ {name}\n"
        for number in sorted(self.clears):
            offset, length, new = self._new_line(source, number)
            source.seek(offset)
            yield f"@@ -{number},1 +{number},{1 if new else 0} @@\n"
            yield "-" + diff_line(source.read(length))
            if new:
                yield "+" + diff_line(new)


def line_spans(dialect: Dialect, line: Line, changes: list) -> list[jsonio.Span] | None:
    """The changes made as values replaced in the line's bytes (jsonio.splice_spans), where the dialect
    says which values the placeholders replace (Dialect.result_edits); None where the record must be
    changed and re-serialized instead. Only where the line is spaced: the stdlib writes those, slower
    than the values are found, where orjson writes a compact record anew in about the time it takes to
    find them."""
    if line.slow or not jsonio.is_spaced(line.raw):
        return None
    edits: list = []
    for slot, value in changes:
        found = dialect.result_edits(line.record, slot, value) if slot >= -1 and type(value) is str else None
        if found is None:
            return None
        edits += found
    return jsonio.splice_spans(line.raw, edits) if edits else None


def changed_line(dialect: Dialect, line: Line, changes: list) -> bytes:
    """The line with the changes made (b"" where it is dropped): the placeholders spliced into its bytes
    (line_spans), else its record changed and re-serialized like the line (docs/design.md, "Lossless")."""
    spans = line_spans(dialect, line, changes)
    return rewritten(dialect, line, changes) if spans is None else jsonio.apply_spans(line.raw, spans)


def rewritten(dialect: Dialect, line: Line, changes: list) -> bytes:
    """The line's record with the changes made, serialized like the line; b"" where it is dropped."""
    if not apply(dialect, line.record, changes):
        return b""
    return dump_line(line)


def _patch(spans: list[jsonio.Span]) -> bytes:
    """Spans as the spool keeps them: their count, (start, end, length) each, then the new bytes."""
    numbers = array("q", [len(spans)])
    for start, end, value in spans:
        numbers.extend((start, end, len(value)))
    return numbers.tobytes() + b"".join(value for _, _, value in spans)


def _unpatch(patch: bytes, offset: int) -> list[jsonio.Span]:
    """The spans of a spooled patch (_patch) of the line at `offset`, as spans of the file."""
    count = array("q", patch[:8])[0]
    position = 8 * (1 + 3 * count)
    numbers = array("q", patch[8:position])
    spans = []
    for index in range(0, len(numbers), 3):
        start, end, length = numbers[index : index + 3]
        spans.append((offset + start, offset + end, patch[position : position + length]))
        position += length
    return spans


_STRATEGY_CHANGES = {
    IMAGE_SLOT: "replace images with a placeholder (--keep-images)",
    DROP_SLOT: "drop the record",
    PARENT_SLOT: "point the record at the nearest ancestor kept (its parent is dropped)",
}


def _copy_candidates(dialect: Dialect, index: MicroIndex, options: MicroOptions, record: dict) -> list:
    """What a UI copy record becomes if the result it repeats is cleared (decided only at the end); a
    copy that names no result (matched to one by its text, later) by the tool it names."""
    found = []
    for use_id in dialect.result_copies(record):
        name = index.name_for_id(use_id)
        if name is not None and name not in options.preserve:
            found.append((COPY_SLOT, options.render(name)))
    unnamed = dialect.unnamed_result_copy(record)
    if unnamed is not None and unnamed[0] not in options.preserve:
        found.append((COPY_SLOT, options.render(unnamed[0])))
    return found


def analyze(
    source: BinaryIO,
    path: str,
    *,
    options: MicroOptions,
    fmt: str | None = None,
    on_invalid: str = "error",
    estimator=None,
) -> MicroEdit:
    """Read the file once and decide what micro clears. `estimator(dialect)` backs --trigger-tokens."""
    dialect = dialect_for(source, path, fmt)
    # Results are matched by id only for UI copies, repeated results and the strategies.
    keep_ids = bool(options.strategies) or dialect.results_repeat or dialect.has_result_copies
    begin = source.tell()
    edit, index, strategies, counter, order, lines = _read(
        source, path, dialect, options, on_invalid, estimator, keep_ids
    )
    if not index.settle():  # an id used twice with different names, the first moved: read again, ids kept
        edit.close()
        source.seek(begin)
        edit, index, strategies, counter, order, lines = _read(
            source, path, dialect, options, on_invalid, estimator, True
        )
    # The index holds each conversation's results in file order: it follows the chain only where the
    # chain leaves records out or moves them.
    if order is not None and (strategies is not None or not order.in_file_order()):
        lines_in_order = [line for line, _ in order.order()]
        index.follow(lines_in_order)
        if strategies is not None:
            strategies.follow(lines_in_order)
    order = lines_in_order = None  # not needed by the plan: their memory goes before the plan's comes
    edit.stats = {"dialect": dialect.name, "lines": lines, "tool_results": index.result_count}
    if counter is not None:
        edit.stats["tokens"] = counter.tokens
    if counter is None or counter.tokens > options.trigger_tokens:
        edit.clears = plan(index, options, strategies)
    index.results = {}  # the results' facts go before the write: the plan holds what it needs
    # Counted, not listed: a list of every change's slot would cost 8 bytes a cleared result.
    cleared = copies = 0
    for todo in edit.clears.values():
        for slot, value in todo:
            if slot == COPY_SLOT or type(value) is Reclear:
                copies += 1
            elif slot >= -1:
                cleared += 1
    edit.stats["cleared"] = cleared
    if index.copies or index.near_copies or copies:
        edit.stats["ui_copies_cleared"] = copies
    if strategies is not None:
        edit.stats["strategies"] = options.strategies
        edit.stats.update(strategy_figures(edit.clears))
    return edit


def _read(
    source: BinaryIO,
    path: str,
    dialect: Dialect,
    options: MicroOptions,
    on_invalid: str,
    estimator,
    keep_ids: bool,
) -> tuple:
    """The first pass: each line read once, into the index, the strategies' index and the spool."""
    index = MicroIndex(dialect, placeholder=options.placeholder, truncate=options.truncate, keep_ids=keep_ids)
    strategies = None
    if options.strategies:
        from compactcli.layers.micro_strategies import StrategyIndex

        strategies = StrategyIndex(dialect, options)
    counter = estimator(dialect) if (estimator and options.trigger_tokens) else None
    order = dialect.new_order()  # Claude Code: the parentUuid chain decides which results are the last
    no_copies = not dialect.has_result_copies
    edit = MicroEdit(path, dialect, {}, on_invalid, {}, spool=tempfile.TemporaryFile())
    spool = edit.spool
    lines = spooled = 0  # spooled: the spool's size
    offset = source.tell()
    try:
        for number, raw in enumerate(source, 1):
            lines, start, offset = number, offset, offset + len(raw)
            try:  # the common case inline: this loop is the hot path
                record, slow = orjson.loads(raw), False
                if type(record) is not dict:
                    raise ValueError
            except ValueError:
                line = parse_line(raw, path, number, on_invalid)
                record, slow = line.record, line.slow
            if record is None:
                continue
            if counter is not None:
                counter.add(record)
            if order is not None:
                conversation, scanned = order.add_scan(number, start, record)
            else:
                conversation = scanned = None
            if strategies is not None:  # before `apply` below changes the record
                strategies.add(number, record)
                edit.spans.add(number, start, len(raw))
            if scanned is NOTHING_SCANNED and no_copies:
                continue  # no tool use, no result, no copy of one: nothing for the index
            candidates = []
            copies = index.copy_count
            facts = index.add(number, record, conversation, scanned)
            if facts or index.copy_count != copies:  # a UI copy may be cleared too
                edit.spans.add(number, start, len(raw))
            if index.copy_count != copies:  # cleared as its result will be, if that one is cleared
                candidates = _copy_candidates(dialect, index, options, record)
            for fact in facts:
                name = index.known_name(fact)
                if name is not None:
                    placeholder = options.placeholder_for(fact, name)
                    if placeholder is None and fact.copy_left:
                        placeholder = options.reclear_for(fact, name)
                    if placeholder is not None:
                        candidates.append((fact.slot, placeholder))
            if candidates:  # the record is not needed any more: changed in place if need be
                line = Line(number, raw, record, slow)
                # A line changed only in values: its spans spooled, not the line, which the second
                # pass has in the source (a long line is written to the spool and read back otherwise).
                spans = line_spans(dialect, line, candidates)
                data = rewritten(dialect, line, candidates) if spans is None else _patch(spans)
                if len(candidates) == 1:  # the common case: one list for all alike
                    candidates = single_change(*candidates[0])
                edit.spooled.put(number, spooled, len(data), candidates, spans is not None)
                spool.write(data)
                spooled += len(data)
    except BaseException:
        edit.close()
        raise
    return edit, index, strategies, counter, order, lines


def strategy_figures(clears: Plan) -> dict[str, int]:
    """How many images, records, parents and thinking blocks the strategies changed."""
    changes = [change for todo in clears.values() for change in todo]
    images = sum(len(value) for slot, value in changes if slot == IMAGE_SLOT)  # type: ignore[arg-type]
    return {
        "images_removed": images,
        "records_dropped": sum(slot == DROP_SLOT for slot, _ in changes),
        "records_relinked": sum(slot == PARENT_SLOT for slot, _ in changes),
        "thinking_removed": sum(slot == THINKING_SLOT for slot, _ in changes),
    }
