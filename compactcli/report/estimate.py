"""What `estimate` prints: a table, JSON lines, CSV or GitHub annotations, and calibration results."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator

import click

from compactcli.core.constants import NO_USAGE, NO_USAGE_TEXT, OVER
from compactcli.core.errors import CHECK_FAILED
from compactcli.counting.tokens import CATEGORIES
from compactcli.report import FAILED, HTML, Figures, Outcome, annotation, line_of

# --- output -------------------------------------------------------------------------------------

# The table's columns: (key, title), in the order shown; the path comes last. `tokens` is `recorded` +
# `added` + `overhead` (ContextCounter.parts); text..images split the heuristic count of the whole context.
_COLUMNS = (
    ("tokens", "tokens"),
    ("share", "%max"),
    ("recorded", "recorded"),
    ("added", "added"),
    ("overhead", "overhead"),
    ("text", "text"),
    ("tool_inputs", "tool_in"),
    ("tool_results", "tool_out"),
    ("thinking", "thinking"),
    ("images", "images"),
    ("messages", "msgs"),
    ("results", "results"),
    ("bytes", "bytes"),
    ("dialect", "dialect"),
)
# On a narrow terminal columns go in this order until the table fits; tokens, %max and the path stay.
_DROP_ORDER = (
    "bytes",
    "results",
    "thinking",
    "images",
    "tool_inputs",
    "text",
    "tool_results",
    "messages",
    "overhead",
    "dialect",
    "added",
    "recorded",
)
_LEFT = {"dialect"}  # text columns, left-aligned; the rest are numbers


def terminal_width() -> int | None:
    """The width the table must fit: $COLUMNS, else the terminal's; None when stdout is no terminal
    (a file or a pipe gets every column)."""
    import os
    import shutil
    import sys

    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def fit_columns(widths: dict[str, int], path_width: int, width: int | None) -> list[str]:
    """The columns shown: all of them, less those of _DROP_ORDER that a `width` terminal has no room for."""
    shown = list(widths)
    if width is None:
        return shown
    for key in _DROP_ORDER:
        if sum(widths[k] + 2 for k in shown) + path_width <= width:
            break
        if key in shown:
            shown.remove(key)
    return shown


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


class EstimateFigures(Figures):
    """estimate's part of the report: a table, CSV rows or GitHub annotations per file, then totals."""

    def __init__(
        self, method: str, max_tokens: int | None, history: Callable[[str], list[dict]] | None = None
    ) -> None:
        self.method = method
        self.max_tokens = max_tokens
        self.history = history or (lambda path: [])  # --format html: a file's archives (restore --list's)
        self._header_done = False
        self._rows: list[tuple[dict[str, str], str, str, list[str]]] = []  # cells, path, note, --top lines
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\n")

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        if output_format == HTML:
            return iter(())  # one page, at the end
        write = {"table": self._table, "csv": self._csv, "github": self._github}[output_format]
        return write(outcome)

    def describe(self, outcome: Outcome) -> str:
        if outcome.status == FAILED:
            return super().describe(outcome)
        return describe(outcome)

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        return summary(outcomes, self.method, self.max_tokens)

    # table: rows are kept until the last file, so each column is as wide as its widest cell and the
    # table fits the terminal.
    def _cells(self, stats: dict, tokens: int | None) -> dict[str, str]:
        category = stats.get("by_category") or {}
        parts = stats.get("parts") or {}
        values = {
            "tokens": tokens,
            "recorded": parts.get("recorded"),
            "added": parts.get("added"),
            "overhead": parts.get("overhead"),
            **{name: category.get(name) for name in CATEGORIES},
            "messages": stats.get("messages"),
            "results": stats.get("tool_results"),
            "bytes": stats.get("bytes"),
        }
        cells = {key: _num(value) for key, value in values.items()}
        cells["dialect"] = stats.get("dialect", "")
        cells["share"] = _percent(stats.get("share")) if "share" in stats else ""
        return cells

    def _table(self, outcome: Outcome) -> Iterator[str]:
        if outcome.status == FAILED:
            return iter(())  # said on stderr
        stats = outcome.stats
        note = f"  ({outcome.message})" if outcome.status in (OVER, NO_USAGE) else ""
        under = [
            f"    {outcome.path}:{item['line']}: {item['tool']} result, {item['tokens']:,} tokens"
            for item in stats.get("top", ())
        ]
        self._rows.append((self._cells(stats, stats.get("tokens")), outcome.path, note, under))
        return iter(())

    def _table_total(self, outcomes: list[Outcome]) -> Iterator[str]:
        counted = [o for o in outcomes if o.status != FAILED]
        if not counted:
            return
        stats = added_up(counted)
        files = f"{len(counted)} file{'s' if len(counted) != 1 else ''}"
        total = self._cells(stats, stats["tokens"])
        total["dialect"] = ""
        rows = [*self._rows, (total, f"total ({files}, {self.method})", "", [])]
        keys = [key for key, _ in _COLUMNS if key != "share" or self.max_tokens is not None]
        titles = dict(_COLUMNS)
        widths = {key: max(len(titles[key]), *(len(row[0][key]) for row in rows)) for key in keys}
        path_width = max(len(row[1]) for row in rows)  # a note may run past the terminal's edge
        shown = fit_columns(widths, path_width, terminal_width())

        def line(cells: dict[str, str], path: str) -> str:
            out = [
                cells[key].ljust(widths[key]) if key in _LEFT else cells[key].rjust(widths[key])
                for key in shown
            ]
            return "  ".join([*out, path]).rstrip()

        yield line(titles, "path")
        for cells, path, note, under in rows:
            yield line(cells, path + note)
            yield from under

    def totals(self, outcomes: list[Outcome]) -> dict:
        totals = super().totals(outcomes)
        totals.update(added_up([o for o in outcomes if o.status != FAILED]))
        totals["method"] = self.method
        if self.max_tokens is not None:
            totals["max_tokens"] = self.max_tokens
            totals["over"] = sum(1 for o in outcomes if o.status == OVER)
        return totals

    # csv
    CSV_FIELDS = (
        "path",
        "status",
        "dialect",
        "method",
        "tokens",
        "max_tokens",
        "share",
        *(f"tokens_{name}" for name in CATEGORIES),
        "messages",
        "tool_results",
        "bytes",
        "lines",
        "conversation",
        "active_from",
        "error",
    )

    def _csv_line(self, row: list | tuple) -> str:
        self._writer.writerow(row)
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.removesuffix("\n")

    def _csv(self, outcome: Outcome) -> Iterator[str]:
        if not self._header_done:
            yield self._csv_line(self.CSV_FIELDS)
            self._header_done = True
        stats = outcome.stats
        category = stats.get("by_category") or {}
        row = {**stats, "path": outcome.path, "status": outcome.status}
        row.update({f"tokens_{name}": category.get(name) for name in CATEGORIES})
        if outcome.status in (FAILED, NO_USAGE):
            row["error"] = outcome.message
        if row.get("share") is not None:
            row["share"] = round(row["share"], 4)
        yield self._csv_line(["" if row.get(name) is None else row[name] for name in self.CSV_FIELDS])

    # github
    def _github(self, outcome: Outcome) -> Iterator[str]:
        stats = outcome.stats
        if outcome.status == FAILED:
            line = line_of(outcome.message, outcome.path)
            yield (annotation("error", outcome.message, file=outcome.path, line=line, title="compactcli"))
            return
        if outcome.status == NO_USAGE and outcome.exit_code == CHECK_FAILED:
            limit = f"--max-tokens {self.max_tokens:,}"
            text = f"{outcome.path}: {outcome.message}; {limit} cannot be checked"
            yield (annotation("error", text, file=outcome.path, title="Token count unavailable"))
            return
        if outcome.status != OVER:
            return
        tokens, limit = stats["tokens"], stats["max_tokens"]
        text = (
            f"{outcome.path} holds {tokens:,} tokens ({self.method}), over the limit of {limit:,} "
            f"({_percent(stats.get('share'))}). Compact it (compactcli micro, summarize)."
        )
        yield (annotation("error", text, file=outcome.path, title="Transcript over the token limit"))
        for item in stats.get("top", ()):
            yield (
                annotation(
                    "notice",
                    f"{item['tool']} result: {item['tokens']:,} tokens",
                    file=outcome.path,
                    line=item["line"],
                    title="Heavy tool result",
                )
            )

    def finish(self, outcomes: list[Outcome], output_format: str) -> Iterator[str]:
        if output_format == "table":
            yield from self._table_total(outcomes)
        elif output_format == HTML:
            from compactcli.report.html import page

            totals = added_up([o for o in outcomes if o.status != FAILED])
            yield page(
                outcomes, method=self.method, max_tokens=self.max_tokens, totals=totals, history=self.history
            )
        elif output_format == "csv" and not self._header_done:
            yield self._csv_line(self.CSV_FIELDS)  # an empty result still has its header


def added_up(counted: list[Outcome]) -> dict:
    """The figures of the total line (and the json-document's totals): tokens of the files that have a
    count, and their parts, split, messages, tool results and bytes, each added up."""
    stats: dict = {"tokens": 0, "parts": {}, "by_category": {}, "messages": 0, "tool_results": 0, "bytes": 0}
    for o in counted:
        for name in ("tokens", "messages", "tool_results", "bytes"):
            stats[name] += o.stats.get(name) or 0
        for group in ("by_category", "parts"):
            for name, value in (o.stats.get(group) or {}).items():
                stats[group][name] = stats[group].get(name, 0) + value
    return stats


def summary(outcomes: list[Outcome], method: str, max_tokens: int | None) -> str:
    """One line such as `3 files, 412,000 tokens (heuristic), 1 over 150,000`."""
    counted = [o for o in outcomes if o.status != FAILED]
    tokens = sum(o.stats["tokens"] for o in counted if o.stats.get("tokens") is not None)
    files = len(counted)
    parts = [f"{files} file{'s' if files != 1 else ''}, {tokens:,} tokens ({method})"]
    over = sum(1 for o in outcomes if o.status == OVER)
    if max_tokens is not None:
        parts.append(f"{over} over {max_tokens:,}")
    no_usage = sum(1 for o in outcomes if o.status == NO_USAGE)
    if no_usage:
        parts.append(f"{no_usage} with {NO_USAGE_TEXT}")
    failed = sum(1 for o in outcomes if o.status == FAILED)
    if failed:
        parts.append(f"{failed} failed")
    return ", ".join(parts)


# --- calibration ------------------------------------------------------------------------------


def print_calibration(result: dict, output_format: str, files: int) -> None:
    from compactcli.counting.calibrate import METHODS as CALIBRATED

    if output_format in ("json", "json-document"):  # one object either way
        click.echo(json.dumps(result, ensure_ascii=False))
        return
    fields = ("n", "median", "p90", "worst", "bias", "total")
    if output_format == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(("method", *fields))
        for method in CALIBRATED:
            stats = result[method]
            writer.writerow((method, *("" if stats.get(f) is None else stats.get(f) for f in fields)))
        for method, stats in result["next_call"].items():
            row = ("" if stats.get(f) is None else stats.get(f) for f in fields)
            writer.writerow((f"next-call:{method}", *row))
        click.echo(out.getvalue(), nl=False)
        return
    titles = ("intervals", *fields[1:])
    click.echo(f"{'method':<10} " + " ".join(f"{t:>9}" for t in titles))
    for method in CALIBRATED:
        stats = result[method]
        cells = [f"{stats['n']:>9}"]
        for name in fields[1:]:
            value = stats.get(name)
            spec = "+.1%" if name in ("bias", "total") else ".1%"
            cells.append(f"{'-' if value is None else format(value, spec):>9}")
        click.echo(f"{method:<10} " + " ".join(cells))
    for method, stats in result["next_call"].items():
        label = "auto" if method == "auto" else "heuristic + overhead"
        figures = ", ".join(
            f"{name} {'-' if stats.get(name) is None else format(stats[name], '.1%')}"
            for name in ("median", "p90", "worst")
        )
        click.echo(f"next call, {label}: {stats['n']} calls, {figures}")
    skipped = ", ".join(f"{reason} {count}" for reason, count in sorted(result["skipped"].items()))
    click.echo(
        f"{files} file{'s' if files != 1 else ''}; error = (estimated - recorded) / recorded "
        f"growth of the context between model calls; skipped intervals: {skipped or 'none'} "
        f"(small: under {result['min_growth']} tokens)"
    )


def describe(outcome: Outcome) -> str:
    stats = outcome.stats
    where = (
        f"from line {stats['active_from']} (after a compaction)" if stats.get("active_from") else "whole file"
    )
    return (
        f"{outcome.path}: {stats['dialect']}, {stats['conversation']} conversation, {where}: "
        f"{_num(stats.get('tokens'))} tokens ({stats['method']})"
    )
