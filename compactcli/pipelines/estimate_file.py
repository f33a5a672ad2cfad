"""estimate on one file: stream its records through a ContextCounter and judge them against a limit."""

from __future__ import annotations

import os
import tempfile
from typing import BinaryIO

from compactcli.core.constants import NO_USAGE, NO_USAGE_TEXT, OVER, UNDER
from compactcli.core.errors import CHECK_FAILED, OK
from compactcli.dialects import Dialect
from compactcli.dialects.base import RecordOrder
from compactcli.layers.estimate import is_over, share
from compactcli.layers.micro import MicroOptions
from compactcli.pipelines.context import ContextCounter, Summary, TokenCache, is_main_message
from compactcli.pipelines.transcript import ConversationLines, dialect_for, open_input, read_lines
from compactcli.report import Outcome

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
    savings: bool = False,
) -> Outcome:
    """Count one open, seekable file, its records in the order of its conversations; with `savings`, also
    what micro (`micro`'s options) and summarize would leave of it (`after_micro`, `after_summarize`)."""
    dialect = dialect_for(source, path, fmt)
    cache = TokenCache.default() if use_cache else None

    def new_counter() -> ContextCounter:
        return ContextCounter(
            dialect, method, detail=True, top=top, micro=micro, model=model, cache=cache, overhead=overhead
        )

    counter = new_counter()
    start = source.tell()
    order = dialect.new_order()
    counted = None
    if order is None or counter.summarizes:
        counted = _read_once(counter, order, source, path, on_invalid)
    if counted is None:
        # --top on a log out of file order (micro's index takes the records themselves, in order), or the
        # sub-agent records passed over are the conversation after all: the records again, in order.
        source.seek(start)
        counter = new_counter()
        counted = _read_in_order(counter, source, path, on_invalid)
    lines, size, unreadable = counted
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
    if tokens is not None and (parts := counter.parts):
        stats["parts"] = parts
    usage = counter.usage
    if usage is not None:
        stats["usage"] = {"calls": usage.calls, "output_tokens": usage.output_tokens}
    if top:
        stats["top"] = [item.to_json() for item in counter.top]
    if savings:
        stats["savings"] = {
            "micro": after_micro(source, path, dialect, micro or MicroOptions(), on_invalid),
            "summarize": after_summarize(source, path, dialect, on_invalid),
        }
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
) -> tuple[int, int, int] | None:
    """Count a file reading it once; returns its lines, bytes and unreadable lines.

    Records in file order are counted as they are read. When the conversations have an order of their
    own (`order`: ConversationLines' order), each record is summarized as it is read and the summaries are
    counted in the conversations' order, instead of parsing the records a second time. Memory: one small
    tuple per record that counts. Sub-agent records read after a main-conversation message are passed
    over (they count only in a file without one); None if that message is left out of the conversation
    (an abandoned branch) and they would have counted.
    """
    summaries: list[Summary] = []  # `order` carries a record's index here in place of its offset
    size = unreadable = number = passed_over = 0
    main_read = False
    is_side = counter.dialect.is_side
    for line in read_lines(source, path, on_invalid):
        number = line.number
        size += len(line.raw)
        record = line.record
        if record is None:
            unreadable += bool(line.raw.strip())  # passed over with --on-invalid keep
        elif order is None:
            counter.add(record, number)
        elif main_read and is_side(record):
            order.add(number, -1, record)
            passed_over += 1
        elif (summary := counter.summarize(record)) is not None:
            order.add(number, len(summaries), record)
            summaries.append(summary)
            main_read = main_read or is_main_message(summary)
        else:
            order.add(number, -1, record)
    if order is not None:
        for line_number, index in order.order():
            if index >= 0:
                counter.add_summary(summaries[index], line_number)
        if passed_over and counter.conversation != "main":
            return None
    return number, size, unreadable


def _read_in_order(
    counter: ContextCounter, source: BinaryIO, path: str, on_invalid: str
) -> tuple[int, int, int]:
    """Count the records as ConversationLines gives them (read twice when their order is not the file's)."""
    unreadable = 0
    reader = ConversationLines(source, path, on_invalid, counter.dialect)
    for line in reader:
        if line.record is not None:
            counter.add(line.record, line.number)
        elif line.raw.strip():
            unreadable += 1  # passed over with --on-invalid keep
    return reader.lines, reader.size, unreadable


# --- what micro and summarize would leave ------------------------------------------------------
#
# Each command's own edit, written to a temp file instead of the transcript, counted here
# (docs/design.md, "estimate --format html"). Both figures are the heuristic count of the active context
# after the edit, to set against the heuristic split before it (`by_category`): the same counter on both
# sides, without overhead or recorded usage, which an edit does not change. Nothing is archived or
# written beside the transcript; summarize uses the offline digest, so no model is asked.


def _left_after(edit, source: BinaryIO, path: str, dialect: str) -> int | None:
    """The heuristic tokens of what `edit` would write (prepare, write), counted as estimate counts."""
    try:
        edit.prepare(source)
        edit.use_archive(os.path.abspath(path))
        with tempfile.TemporaryFile() as out:
            edit.write(source, out)
            out.seek(0)
            counted = estimate_stream(
                out,
                path,
                method="heuristic",
                fmt=dialect,
                on_invalid="keep",
                max_tokens=None,
                use_cache=False,
            )
    finally:
        edit.close()
    return counted.stats.get("tokens")


def after_micro(
    source: BinaryIO, path: str, dialect: Dialect, options: MicroOptions, on_invalid: str
) -> dict:
    """`tokens` after micro with `options` (None: it would change nothing) and the results it `cleared`."""
    from compactcli.pipelines import micro_file

    source.seek(0)
    edit = micro_file.analyze(source, path, options=options, fmt=dialect.name, on_invalid=on_invalid)
    figures = {"cleared": edit.stats.get("cleared", 0)}
    if not edit.changed:
        edit.close()
        return figures | {"tokens": None}
    return figures | {"tokens": _left_after(edit, source, path, dialect.name)}


def after_summarize(source: BinaryIO, path: str, dialect: Dialect, on_invalid: str) -> dict:
    """`tokens` after `summarize --backend digest` with its default options, `summarized` (messages
    replaced) and `kept`; `reason` instead when summarize would leave the file as it is."""
    from compactcli.backends.digest import DigestSummarizer
    from compactcli.pipelines import summarize_file

    if not dialect.writes_compactions:
        return {"reason": f"summarize cannot write a compaction into {dialect.title or dialect.name} yet"}
    source.seek(0)
    edit = summarize_file.analyze(
        source,
        path,
        options=summarize_file.SummarizeOptions(),
        summarizer=DigestSummarizer(),
        fmt=dialect.name,
        on_invalid=on_invalid,
    )
    if not edit.changed:
        return {"reason": edit.stats.get("reason", "nothing to summarize")}
    figures = {"summarized": edit.stats["summarized"], "kept": edit.stats["kept"]}
    return figures | {"tokens": _left_after(edit, source, path, dialect.name)}


def estimate_file(item: str, **options) -> Outcome:
    with open_input(item) as (source, name):
        return estimate_stream(source, name, **options)
