"""micro on one file: a first pass indexes the tool results, a second rewrites only the lines that change."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from compactcli import dialects
from compactcli.dialects import Dialect
from compactcli.layers.micro import MicroIndex, MicroOptions, Plan, apply, plan
from compactcli.transcript import detect_dialect, dump_line, parse_line, read_lines


@dataclass
class MicroEdit:
    path: str
    dialect: Dialect
    index: MicroIndex
    clears: Plan
    on_invalid: str
    stats: dict

    @property
    def changed(self) -> bool:
        return bool(self.clears)

    def _changed_lines(self, source: BinaryIO) -> Iterator[tuple[int, bytes, bytes | None]]:
        """Every line as (number, original, replacement or None)."""
        for number, raw in enumerate(source, 1):
            todo = self.clears.get(number)
            if todo is None:
                yield number, raw, None
                continue
            line = parse_line(raw, self.path, number, self.on_invalid)
            apply(self.dialect, line.record, todo)
            yield number, raw, dump_line(line)

    def write(self, source: BinaryIO, out: BinaryIO) -> None:
        for _, raw, new in self._changed_lines(source):
            out.write(raw if new is None else new)

    def describe(self, source: BinaryIO) -> Iterator[str]:
        for number, todo in sorted(self.clears.items()):
            for slot, placeholder in todo:
                where = f"block {slot}" if slot >= 0 else "message"
                yield f"{self.path}:{number}: clear tool result ({where}) -> {placeholder}"

    def diff(self, source: BinaryIO, name: str) -> Iterator[str]:
        yield f"--- {name}\n"
        yield f"+++ {name}\n"
        for number, raw, new in self._changed_lines(source):
            if new is not None:
                yield f"@@ -{number},1 +{number},1 @@\n"
                yield "-" + _text_line(raw)
                yield "+" + _text_line(new)


def _text_line(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return text if text.endswith("\n") else text + "\n\\ No newline at end of file\n"


def analyze(
    source: BinaryIO,
    path: str,
    *,
    options: MicroOptions,
    fmt: str | None = None,
    on_invalid: str = "error",
    estimate=None,
) -> MicroEdit:
    """Read the file once and decide what micro clears. `estimate(dialect, lines)` backs --trigger-tokens."""
    dialect = dialects.get(fmt or detect_dialect(source))
    index = MicroIndex(dialect)
    counter = estimate(dialect) if (estimate and options.trigger_tokens) else None
    lines = 0
    for line in read_lines(source, path, on_invalid):
        lines = line.number
        if line.record is None:
            continue
        index.add(line.number, line.record)
        if counter is not None:
            counter.add(line.record)
    stats: dict = {"dialect": dialect.name, "lines": lines, "tool_results": index.result_count}
    clears: Plan = {}
    if counter is not None:
        stats["tokens"] = counter.tokens
    if counter is None or counter.tokens > options.trigger_tokens:
        clears = plan(index, options)
    stats["cleared"] = sum(len(todo) for todo in clears.values())
    return MicroEdit(path, dialect, index, clears, on_invalid, stats)
