"""What `estimate` prints: a table, JSON lines, CSV or GitHub annotations, and calibration results."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import click

from compactcli.core.constants import NO_USAGE, NO_USAGE_TEXT, OVER
from compactcli.core.errors import CHECK_FAILED
from compactcli.counting.tokens import CATEGORIES
from compactcli.report import FAILED, Figures, Outcome, annotation, line_of

# --- output -------------------------------------------------------------------------------------

_COLUMNS = (  # (title, width); the path comes last, unpadded
    ("tokens", 12),
    ("text", 11),
    ("tool_in", 11),
    ("tool_out", 11),
    ("thinking", 11),
    ("images", 9),
    ("msgs", 8),
    ("results", 8),
    ("bytes", 14),
)


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


class EstimateFigures(Figures):
    """estimate's part of the report: a table, CSV rows or GitHub annotations per file, then totals."""

    def __init__(self, method: str, max_tokens: int | None) -> None:
        self.method = method
        self.max_tokens = max_tokens
        self._header_done = False
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\n")

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        write = {"table": self._table, "csv": self._csv, "github": self._github}[output_format]
        return write(outcome)

    def describe(self, outcome: Outcome) -> str:
        if outcome.status == FAILED:
            return super().describe(outcome)
        return describe(outcome)

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        return summary(outcomes, self.method, self.max_tokens)

    # table
    def _table_header(self) -> Iterator[str]:
        cells = [title.rjust(width) for title, width in _COLUMNS]
        if self.max_tokens is not None:
            cells.insert(1, "%max".rjust(6))
        yield (" ".join([*cells, "dialect".ljust(11), "path"]))
        self._header_done = True

    def _table_cells(self, stats: dict, tokens: int | None) -> list[str]:
        category = stats.get("by_category") or {}
        values = [
            tokens,
            *(category.get(name) for name in CATEGORIES),
            stats.get("messages"),
            stats.get("tool_results"),
            stats.get("bytes"),
        ]
        return [_num(v).rjust(width) for v, (_, width) in zip(values, _COLUMNS, strict=True)]

    def _table(self, outcome: Outcome) -> Iterator[str]:
        if outcome.status == FAILED:
            return  # said on stderr
        if not self._header_done:
            yield from self._table_header()
        stats = outcome.stats
        cells = self._table_cells(stats, stats.get("tokens"))
        if self.max_tokens is not None:
            cells.insert(1, _percent(stats.get("share")).rjust(6))
        note = f"  ({outcome.message})" if outcome.status in (OVER, NO_USAGE) else ""
        yield (" ".join([*cells, stats["dialect"].ljust(11), outcome.path]) + note)
        for item in stats.get("top", ()):
            where = f"{outcome.path}:{item['line']}"
            yield (f"    {where}: {item['tool']} result, {item['tokens']:,} tokens")

    def _table_total(self, outcomes: list[Outcome]) -> Iterator[str]:
        counted = [o for o in outcomes if o.status != FAILED]
        if not counted:
            return
        if not self._header_done:
            yield from self._table_header()
        stats: dict = {"by_category": {}}
        for o in counted:
            for name in ("messages", "tool_results", "bytes"):
                stats[name] = stats.get(name, 0) + (o.stats.get(name) or 0)
            for name, value in (o.stats.get("by_category") or {}).items():
                stats["by_category"][name] = stats["by_category"].get(name, 0) + value
        tokens = sum(o.stats["tokens"] for o in counted if o.stats.get("tokens") is not None)
        cells = self._table_cells(stats, tokens)
        if self.max_tokens is not None:
            cells.insert(1, "".rjust(6))
        files = f"{len(counted)} file{'s' if len(counted) != 1 else ''}"
        yield (" ".join([*cells, "".ljust(11), f"total ({files}, {self.method})"]))

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
        elif output_format == "csv" and not self._header_done:
            yield self._csv_line(self.CSV_FIELDS)  # an empty result still has its header


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

    if output_format == "json":
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
