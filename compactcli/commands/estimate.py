"""`compactcli estimate`: how many tokens each transcript's active context holds; a CI gate."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import BinaryIO

import click

from compactcli import batch, dialects
from compactcli.batch import FAILED, STDIN, Outcome
from compactcli.commands.common import find_inputs
from compactcli.commands.options import input_options
from compactcli.context import DEFAULT_METHOD, METHODS, ContextCounter, TokenCache
from compactcli.errors import CHECK_FAILED, EXIT_CODES_HELP, OK
from compactcli.layers.estimate import annotation, is_over, share
from compactcli.tokens import CATEGORIES
from compactcli.transcript import detect_dialect, open_input, read_lines

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
    on_invalid: str,
    max_tokens: int | None,
    top: int = 0,
    model: str | None = None,
    use_cache: bool = True,
) -> Outcome:
    """Count one open, seekable file; its lines are read once, in order."""
    dialect = dialects.get(fmt or detect_dialect(source))
    cache = TokenCache.default() if use_cache else None
    counter = ContextCounter(dialect, method, detail=True, top=top, model=model, cache=cache)
    size = lines = unreadable = 0
    for line in read_lines(source, path, on_invalid):
        size += len(line.raw)
        lines = line.number
        if line.record is not None:
            counter.add(line.record, line.number)
        elif line.raw.strip():
            unreadable += 1  # passed over with --on-invalid keep
    tokens = counter.tokens
    stats: dict = {
        "dialect": dialect.name,
        "method": method,
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


def estimate_file(item: str, **options) -> Outcome:
    with open_input(item) as (source, name):
        return estimate_stream(source, name, **options)


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


class Printer:
    """Writes each file's result as it comes, then the totals."""

    def __init__(self, output_format: str, method: str, max_tokens: int | None) -> None:
        self.format = output_format
        self.method = method
        self.max_tokens = max_tokens
        self._header_done = False
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\n")
        self._write = {
            "table": self._table,
            "json": self._json,
            "csv": self._csv,
            "github": self._github,
        }[output_format]

    def outcome(self, outcome: Outcome) -> None:
        self._write(outcome)
        if outcome.status == FAILED or outcome.exit_code not in (OK, CHECK_FAILED):
            click.echo(f"error: {outcome.message}", err=True)

    # table
    def _table_header(self) -> None:
        cells = [title.rjust(width) for title, width in _COLUMNS]
        if self.max_tokens is not None:
            cells.insert(1, "%max".rjust(6))
        click.echo(" ".join([*cells, "dialect".ljust(11), "path"]))
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

    def _table(self, outcome: Outcome) -> None:
        if outcome.status == FAILED:
            return  # said on stderr
        if not self._header_done:
            self._table_header()
        stats = outcome.stats
        cells = self._table_cells(stats, stats.get("tokens"))
        if self.max_tokens is not None:
            cells.insert(1, _percent(stats.get("share")).rjust(6))
        note = f"  ({outcome.message})" if outcome.status in (OVER, NO_USAGE) else ""
        click.echo(" ".join([*cells, stats["dialect"].ljust(11), outcome.path]) + note)
        for item in stats.get("top", ()):
            where = f"{outcome.path}:{item['line']}"
            click.echo(f"    {where}: {item['tool']} result, {item['tokens']:,} tokens")

    def _table_total(self, outcomes: list[Outcome]) -> None:
        counted = [o for o in outcomes if o.status != FAILED]
        if not counted:
            return
        if not self._header_done:
            self._table_header()
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
        click.echo(" ".join([*cells, "".ljust(11), f"total ({files}, {self.method})"]))

    # json
    def _json(self, outcome: Outcome) -> None:
        record = {"path": outcome.path, "status": outcome.status, **outcome.stats}
        if outcome.status == FAILED:
            record.update(exit_code=outcome.exit_code, error=outcome.message)
        elif outcome.status != UNDER:
            record["over"] = outcome.status == OVER
            record["message"] = outcome.message
        elif self.max_tokens is not None:
            record["over"] = False
        click.echo(json.dumps(record, ensure_ascii=False))

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

    def _csv_line(self, row: list | tuple) -> None:
        self._writer.writerow(row)
        click.echo(self._buffer.getvalue(), nl=False)
        self._buffer.seek(0)
        self._buffer.truncate()

    def _csv(self, outcome: Outcome) -> None:
        if not self._header_done:
            self._csv_line(self.CSV_FIELDS)
            self._header_done = True
        stats = outcome.stats
        category = stats.get("by_category") or {}
        row = {**stats, "path": outcome.path, "status": outcome.status}
        row.update({f"tokens_{name}": category.get(name) for name in CATEGORIES})
        if outcome.status in (FAILED, NO_USAGE):
            row["error"] = outcome.message
        if row.get("share") is not None:
            row["share"] = round(row["share"], 4)
        self._csv_line(["" if row.get(name) is None else row[name] for name in self.CSV_FIELDS])

    # github
    def _github(self, outcome: Outcome) -> None:
        stats = outcome.stats
        if outcome.status == FAILED:
            line = _line_of(outcome.message, outcome.path)
            click.echo(annotation("error", outcome.message, file=outcome.path, line=line, title="compactcli"))
            return
        if outcome.status == NO_USAGE and outcome.exit_code == CHECK_FAILED:
            limit = f"--max-tokens {self.max_tokens:,}"
            text = f"{outcome.path}: {outcome.message}; {limit} cannot be checked"
            click.echo(annotation("error", text, file=outcome.path, title="Token count unavailable"))
            return
        if outcome.status != OVER:
            return
        tokens, limit = stats["tokens"], stats["max_tokens"]
        text = (
            f"{outcome.path} holds {tokens:,} tokens ({self.method}), over the limit of {limit:,} "
            f"({_percent(stats.get('share'))}). Compact it (compactcli micro, summarize)."
        )
        click.echo(annotation("error", text, file=outcome.path, title="Transcript over the token limit"))
        for item in stats.get("top", ()):
            click.echo(
                annotation(
                    "notice",
                    f"{item['tool']} result: {item['tokens']:,} tokens",
                    file=outcome.path,
                    line=item["line"],
                    title="Heavy tool result",
                )
            )

    def finish(self, outcomes: list[Outcome]) -> None:
        if self.format == "table":
            self._table_total(outcomes)
        elif self.format == "csv" and not self._header_done:
            self._csv_line(self.CSV_FIELDS)  # an empty result still has its header


def _line_of(message: str, path: str) -> int | None:
    """The line of a `path:line: message` error."""
    rest = message[len(path) + 1 :] if message.startswith(path + ":") else ""
    number = rest.partition(":")[0]
    return int(number) if number.isdigit() else None


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


def _calibration_files(paths: tuple[str, ...], glob: str) -> list[Path]:
    if STDIN in paths:
        raise click.UsageError("--calibrate reads files and folders, not stdin")
    return [Path(p) for p in batch.discover(paths, glob)]


def print_calibration(result: dict, output_format: str, files: int) -> None:
    from compactcli.calibrate import METHODS as CALIBRATED

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
    skipped = ", ".join(f"{reason} {count}" for reason, count in sorted(result["skipped"].items()))
    click.echo(
        f"{files} file{'s' if files != 1 else ''}; error = (estimated - recorded) / recorded "
        f"growth of the context between model calls; skipped intervals: {skipped or 'none'} "
        f"(small: under {result['min_growth']} tokens)"
    )


# --- the command ---------------------------------------------------------------------------------

HELP = """Count the tokens of each transcript's active context; fail CI when one is over a limit.

PATHS are files, folders (searched for --glob) or '-' for stdin. Nothing is changed. For Claude
Code logs the active context is the main conversation from its last compaction on; a file of
sub-agent (sidechain) records only is counted as its own conversation.

\b
Methods (--method):
  heuristic  calibrated estimate of what the model is billed for the messages (default;
             about 8% median error on recorded sessions, see --calibrate)
  seed       len(str(messages)) // 4, the reference agent loop's trigger
  api        messages.count_tokens (exact; needs ANTHROPIC_API_KEY; --model); answers are
             cached by content hash under $XDG_CACHE_HOME/compactcli (--no-cache to skip)
  usage      the context recorded at the last model call (Claude Code usage fields), which
             also holds the system prompt and tool definitions that transcripts do not; a
             file without any is reported as "no usage recorded" and fails --max-tokens (1)

\b
Output (--format, on stdout):
  table   tokens, share of --max-tokens, the heuristic's split (text, tool inputs, tool
          outputs, thinking, images), messages, tool results, bytes; then a total line
  json    one JSON object per file (JSON lines)
  csv     a header, then one row per file
  github  ::error annotations for files over --max-tokens (or failing); nothing for the rest

The category split is always the heuristic's; with another method it shows where the tokens
are. --top N lists the N heaviest tool results (line, tool, tokens): what micro could clear.

--calibrate: PATHS are Claude Code sessions; print each method's error against their recorded
usage instead.
"""


@click.command(
    help=HELP,
    epilog=EXIT_CODES_HELP + " Here 1: a file is over --max-tokens, or cannot be checked.",
)
@input_options(format_is_dialect=False)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default=DEFAULT_METHOD,
    show_default=True,
    help="How tokens are counted (see above).",
)
@click.option("--max-tokens", type=click.IntRange(0), default=None, help="Exit 1 if a file is over N tokens.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(OUTPUT_FORMATS),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option("--top", type=click.IntRange(0), default=0, help="List the N heaviest tool results per file.")
@click.option("--model", default=None, help="Model for --method api (default: $COMPACTCLI_MODEL, $MODEL_ID).")
@click.option("--no-cache", is_flag=True, help="--method api: neither read nor write the count cache.")
@click.option("--calibrate", is_flag=True, help="Measure each method against recorded usage in PATHS.")
def estimate(
    paths,
    glob,
    fmt,
    on_invalid,
    jobs,
    verbose,
    quiet,
    as_json,
    method,
    max_tokens,
    output_format,
    top,
    model,
    no_cache,
    calibrate,
):
    if as_json:
        output_format = "json"
    if calibrate:
        from compactcli import calibrate as calibration

        if output_format == "github":
            raise click.UsageError("--calibrate prints table, json or csv")
        files = _calibration_files(paths, glob)
        if verbose:
            click.echo(f"calibrating against {len(files)} files", err=True)
        print_calibration(calibration.calibrate(files), output_format, len(files))
        raise SystemExit(OK)
    items = find_inputs(paths, glob)
    printer = Printer(output_format, method, max_tokens)

    def report(outcome: Outcome) -> None:
        printer.outcome(outcome)
        if verbose and not quiet and outcome.status != FAILED:
            click.echo(_describe(outcome), err=True)

    worker: Callable[[str], Outcome] = partial(
        estimate_file,
        method=method,
        fmt=fmt,
        on_invalid=on_invalid,
        max_tokens=max_tokens,
        top=top,
        model=model,
        use_cache=not no_cache,
    )
    outcomes = batch.run(items, worker, jobs=jobs, on_outcome=report)
    printer.finish(outcomes)
    if not quiet:
        click.echo(summary(outcomes, method, max_tokens), err=True)
    raise SystemExit(batch.exit_code(outcomes))


def _describe(outcome: Outcome) -> str:
    stats = outcome.stats
    where = (
        f"from line {stats['active_from']} (after a compaction)" if stats.get("active_from") else "whole file"
    )
    return (
        f"{outcome.path}: {stats['dialect']}, {stats['conversation']} conversation, {where}: "
        f"{_num(stats.get('tokens'))} tokens ({stats['method']})"
    )
