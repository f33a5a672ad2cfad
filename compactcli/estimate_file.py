"""estimate on one file: stream its records through a ContextCounter and judge them against a limit."""

from __future__ import annotations

from typing import BinaryIO

from compactcli.context import ContextCounter, Summary, TokenCache
from compactcli.dialects.base import RecordOrder
from compactcli.errors import CHECK_FAILED, OK
from compactcli.layers.estimate import is_over, share
from compactcli.layers.micro import MicroOptions
from compactcli.report import Outcome
from compactcli.transcript import ConversationLines, dialect_for, open_input, read_lines

OUTPUT_FORMATS = ("table", "json", "csv", "github")
UNDER, OVER, NO_USAGE = "ok", "over", "no-usage"
NO_USAGE_TEXT = "no usage recorded"


# --- one file ---------------------------------------------------------------------------------


def estimate_stream(
    source: BinaryIO,
    path: str,
    *,
    method: str,
    fmt: str | None,
    overhead: int | None = None,
    on_invalid: str,
    max_tokens: int | None,
    top: int = 0,
    micro: MicroOptions | None = None,
    model: str | None = None,
    use_cache: bool = True,
) -> Outcome:
    """Count one open, seekable file, its records in the order of its conversations."""
    dialect = dialect_for(source, path, fmt)
    cache = TokenCache.default() if use_cache else None
    counter = ContextCounter(
        dialect, method, detail=True, top=top, micro=micro, model=model, cache=cache, overhead=overhead
    )
    order = dialect.new_order()
    if order is None or counter.summarizes:
        lines, size, unreadable = _read_once(counter, order, source, path, on_invalid)
    else:  # --top on a log out of file order: micro's index takes the records themselves, in order
        unreadable = 0
        reader = ConversationLines(source, path, on_invalid, dialect)
        for line in reader:
            if line.record is not None:
                counter.add(line.record, line.number)
            elif line.raw.strip():
                unreadable += 1  # passed over with --on-invalid keep
        lines, size = reader.lines, reader.size
    tokens = counter.tokens
    stats: dict = {
        "dialect": dialect.name,
        "method": counter.method_used,
        "tokens": tokens,
        "by_category": counter.by_category,
        "messages": counter.messages,
        "tool_results": counter.tool_results,
        "bytes": size,
        "lines": lines,
        "conversation": counter.conversation,
        "active_from": counter.start_line or None,
        "unreadable_lines": unreadable,
    }
    usage = counter.usage
    if usage is not None:
        stats["usage"] = {"calls": usage.calls, "output_tokens": usage.output_tokens}
    if top:
        stats["top"] = [item.to_json() for item in counter.top]
    if max_tokens is not None:
        stats["max_tokens"] = max_tokens
        stats["share"] = share(tokens, max_tokens)
    if tokens is None:
        # A limit that cannot be checked fails the gate rather than passing it unseen.
        code = CHECK_FAILED if max_tokens is not None else OK
        where = " since the last compaction" if counter.start_line else ""
        return Outcome(path, NO_USAGE, code, f"{NO_USAGE_TEXT}{where}", stats)
    if is_over(tokens, max_tokens):
        return Outcome(path, OVER, CHECK_FAILED, f"{tokens:,} tokens > {max_tokens:,}", stats)
    return Outcome(path, UNDER, OK, "", stats)


def _read_once(
    counter: ContextCounter, order: RecordOrder | None, source: BinaryIO, path: str, on_invalid: str
) -> tuple[int, int, int]:
    """Count a file reading it once; returns its lines, bytes and unreadable lines.

    Records in file order are counted as they are read. When the conversations have an order of their
    own (`order`: ConversationLines' order), each record is summarized as it is read and the summaries are
    counted in the conversations' order, instead of parsing the records a second time. Memory: one small
    tuple per record that counts.
    """
    summaries: list[Summary] = []  # `order` carries a record's index here in place of its offset
    size = unreadable = number = 0
    for line in read_lines(source, path, on_invalid):
        number = line.number
        size += len(line.raw)
        record = line.record
        if record is None:
            unreadable += bool(line.raw.strip())  # passed over with --on-invalid keep
        elif order is None:
            counter.add(record, number)
        elif (summary := counter.summarize(record)) is not None:
            order.add(number, len(summaries), record)
            summaries.append(summary)
        else:
            order.add(number, -1, record)
    if order is not None:
        for line_number, index in order.order():
            if index >= 0:
                counter.add_summary(summaries[index], line_number)
    return number, size, unreadable


def estimate_file(item: str, **options) -> Outcome:
    with open_input(item) as (source, name):
        return estimate_stream(source, name, **options)
