"""`compactcli replay`: re-run a recorded transcript as the agent loop would, and show when each layer
fires. The logic is compactcli.layers.replay; this module reads, writes and reports."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compactcli.cli.options import (
    BriefHelpCommand,
    InputPath,
    PriceType,
    SummarizerSettings,
    dialect_option,
    format_options,
    keep_user_messages_option,
    micro_options,
    micro_settings,
    on_invalid_option,
    say_api_counting,
    summarizer_options,
)
from compactcli.core.constants import DEFAULT_THRESHOLD, DEFAULT_THRESHOLDS, STDIN
from compactcli.core.errors import EXIT_CODES_HELP, USAGE, CompactError, bad_shapes_are_bad_input
from compactcli.counting.pricing import DEFAULT_PRICE_MODEL, PRICES, Price
from compactcli.report import COMMAND_FORMATS, CSV, FAILED, TABLE, TEXT, Figures, Outcome, Report

if TYPE_CHECKING:  # the replay itself is imported when the command runs: --help needs none of it
    from compactcli import dialects
    from compactcli.layers.micro import MicroOptions
    from compactcli.layers.replay import Entry, Replay
    from compactcli.layers.summarize import Summarizer
    from compactcli.pipelines.context import ContextSize

ESTIMATORS = ("seed", "heuristic", "api")
WHAT_IF_ARCHIVE = "(not archived: what-if run)"
READ_ONLY_ARCHIVE = "(not archived: give -o, --timeline or --archive-dir to keep it)"
REPLAYED, WHAT_IF = "replayed", "what-if"

HELP = """Re-run a recorded transcript turn by turn as the agent loop would, and show when each layer
fires.

PATH is one transcript ('-' = stdin); it is read, never changed. Before each model call the replay
runs micro on its simulated context; when the estimate (--estimator) exceeds --threshold it compacts:
the context is summarized (--backend) and replaced by the summary, as `summarize` does. A `compact`
tool call in the transcript compacts too.

\b
What it prints (stdout; --json: the same figures as JSON):
  one value each     a report, and a chart of tokens per call
  N,N,... (what-if)  several --threshold or --keep values: a table of
                     every combination; nothing is written
  --compare          every strategy (none, micro, summarize, hybrid, ...)
                     in one table: tokens sent, cached, cost at --price
Files: -o F (the final context), --timeline F, --plot F.png; with them
each simulated compaction is archived in --archive-dir.

\b
Examples:
  compactcli replay session.jsonl --backend digest
  compactcli replay session.jsonl --timeline timeline.csv --threshold 20000
  compactcli replay session.jsonl --threshold 30000,50000,80000 --keep 3,10
  compactcli replay session.jsonl --compare --threshold 50000,100000
  compactcli replay session.jsonl --compare --price 3,0.3,15 --format csv
"""


DETAILS = """The replay in full. Before each model call (an assistant message) micro runs on the
context (the micro options); then, if the estimate (--estimator; seed is the reference agent's
len(str(messages)) // 4) exceeds --threshold, it compacts: the context is archived, summarized
(--backend) and replaced by the summary message, followed as in `summarize` by the user's own messages
(--keep-user-messages), and the call gets that. After the user message that answers a `compact` tool
call (and the rest of its batch of tool results, so that no result loses its call), it compacts with
that call's `focus` input.

\b
Model calls, per dialect:
  anthropic, openai: every assistant message. OpenAI tool and system
    messages are user-side; system messages stay above a summary.
  claude-code: one API response split over several assistant records
    (one message.id) is one call; API error notices are none. Only the
    main chain is replayed (a file of sub-agent records only: that
    conversation); other records are skipped. The whole history is
    replayed from the top: a compaction recorded in the file resets the
    context to its summary (a `recorded` event).
  codex: the first item of each response (reasoning, an assistant message
    or a call after an item the model did not write); event_msg and
    turn_context records are skipped; a `compacted` record resets the
    context to its replacement_history (a `recorded` event).

\b
Summaries (--backend, as in `summarize`):
  anthropic: a model through the Messages API (--model, else
    $COMPACTCLI_MODEL, else $MODEL_ID; ANTHROPIC_API_KEY or
    ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL).
  digest: offline and deterministic, no model.
  auto: anthropic when a key or token is set, else digest.

\b
Outputs:
  stdout: a report (model calls, compactions by kind, summarizer calls,
    peak and final tokens) and a chart of tokens per call against the
    threshold; on stderr with -o -. --json: the report as JSON instead.
  --timeline F (.jsonl or .csv): one row per model call: index (0-based
    line of the assistant message), turn (call number), tokens (after
    micro, before any compaction), event (auto or null); one per manual
    compaction (index: the user message that answered the compact call;
    tokens: the context before it); one per compaction recorded in the
    file (index: its summary record). Also tokens_after (what the call
    or the next one received) and cleared (results micro cleared).
  -o F: the final context in the input's dialect, micro applied as
    before the next call; unchanged records byte for byte. Claude Code
    records whose parentUuid was summarized away are linked to the
    record before them.
  --plot F.png: the chart as a PNG. Needs matplotlib (pip install
    'compactcli[plot]'); without it --plot is a usage error (exit 2)
    before anything runs.

With -o, --timeline or --archive-dir, each simulated compaction archives the context it replaces
(JSONL in the input's dialect) in --archive-dir (default .transcripts/ beside PATH; stdin:
./.transcripts/), named like any archive, and the summary message names that file; without them
replay only reads and writes nothing. No manifest line is written: the archive of a simulated
context is no earlier version of PATH, and `restore` must never put it back.

What-if: several comma-separated values of --threshold and/or --keep replay every combination and
print a table (compactions, summarizer calls, peak and final tokens); nothing is written (no
archives, timeline, -o or plot). Every combination runs the summarizer: with the anthropic backend
that means real API calls for each one (--backend digest costs nothing).

\b
Compare (--compare): the transcript replayed under each strategy,
{strategies}
in one table: model calls, compactions, the largest context sent, input
tokens sent over all calls and the part a prompt cache serves, output
tokens, summarizer calls and their tokens, and the cost at --price.
Thresholds: --threshold (default {thresholds}). Cached input: the
prefix of a call's context that the previous call was sent unchanged;
micro clearing a result or a compaction ends it there. Output tokens
are the recorded assistant messages (the same in every run). Summaries
are uncached input and output at the same prices. --format table, csv
or json; --plot F.png draws the contexts. Only --plot writes anything.
Prices (USD per million tokens: input, cached input, output): --price
IN,CACHED,OUT, or --price-model NAME (default {price_model}):
{prices}

"""


def _help() -> str:
    from compactcli.layers.compare import STRATEGIES  # their names and what each does

    strategies = "\n".join(f"  {s.name}: {s.what}" for s in STRATEGIES)
    names = sorted(PRICES)
    rows, row = [], "  "
    for name in names:
        item = f"{name} {PRICES[name]}; "
        if len(row) + len(item) > 78:
            rows.append(row.rstrip())
            row = "  "
        row += item
    rows.append(row.rstrip().removesuffix(";"))
    return DETAILS.format(
        strategies=strategies,
        thresholds=",".join(str(t) for t in DEFAULT_THRESHOLDS),
        price_model=DEFAULT_PRICE_MODEL,
        prices="\n".join(rows),
    )


class IntList(click.ParamType):
    """One integer or several, comma-separated."""

    name = "N[,N...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        if isinstance(value, list):
            return value
        if isinstance(value, int):
            return [value]
        numbers = []
        for part in str(value).split(","):
            try:
                number = int(part.strip())
            except ValueError:
                self.fail(f"{part.strip()!r} is not an integer (give N or N,N,...)", param, ctx)
            if number < 0:
                self.fail(f"{number} is negative", param, ctx)
            numbers.append(number)
        return list(dict.fromkeys(numbers))


INT_LIST = IntList()


# --- the command -------------------------------------------------------------------------------------


@click.command(
    cls=BriefHelpCommand,
    help=HELP,
    details=_help(),
    epilog=EXIT_CODES_HELP,
    common=(
        *("threshold", "keep", "backend", "output", "timeline", "plot", "compare", "price"),
        *("output_format", "quiet"),
    ),
)
@click.argument("path", type=InputPath(allow_dash=True, exists=True, dir_okay=False, readable=False))
@dialect_option("Transcript dialect (default: detected).")
@on_invalid_option("error: a bad line stops the replay (exit 65); keep: skip bad lines.")
@click.option(
    "--threshold",
    type=INT_LIST,
    default=str(DEFAULT_THRESHOLD),
    show_default=True,
    help="Auto-compact when the estimate exceeds N. Several, comma-separated: what-if.",
)
@click.option(
    "--estimator",
    type=click.Choice(ESTIMATORS),
    default="seed",
    show_default=True,
    help=(
        "How the context is counted (as `estimate --method`; seed reproduces the reference agent). "
        "No `usage`: recorded usage measures the recorded context, not the simulated one."
    ),
)
@micro_options(
    keep_type=INT_LIST,
    keep_help="Most recent tool results kept whole (micro). Several, comma-separated: what-if.",
    trigger_help="Run micro only when the context's estimate exceeds N (0: before every call).",
)
@summarizer_options()
@keep_user_messages_option()
@click.option(
    "--timeline", type=click.Path(dir_okay=False), default=None, help="Write the timeline (.jsonl or .csv)."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(allow_dash=True, dir_okay=False),
    default=None,
    help="Write the final context ('-' = stdout).",
)
@click.option(
    "--archive-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the simulated compactions are archived (default: .transcripts/ beside PATH).",
)
@click.option(
    "--plot", type=click.Path(dir_okay=False), default=None, help="Write the chart as a PNG (matplotlib)."
)
@click.option("--compare", is_flag=True, help="Replay every strategy and compare them (see above).")
@click.option(
    "--price",
    type=PriceType(),
    default=None,
    help="With --compare: USD per million input, cached input and output tokens.",
)
@click.option(
    "--price-model",
    type=click.Choice(sorted(PRICES)),
    default=None,
    metavar="NAME",
    help=f"With --compare: price as this model (default {DEFAULT_PRICE_MODEL}; see above).",
)
@format_options(COMMAND_FORMATS["replay"])
@click.option("-q", "--quiet", is_flag=True, help="No report and no chart (errors only).")
def replay(
    path: str,
    dialect: str | None,
    on_invalid: str,
    threshold: list[int],
    estimator: str,
    timeline: str | None,
    output: str | None,
    archive_dir: str | None,
    plot: str | None,
    compare: bool,
    price: Price | None,
    price_model: str | None,
    output_format: str,
    quiet: bool,
    summarizer_settings: SummarizerSettings,
    keep_user_messages: int,
    **layer: Any,
) -> None:
    from compactcli.pipelines.context import ContextSize
    from compactcli.pipelines.replay_file import Source, archiver, report_lines, write_output, write_timeline
    from compactcli.report import chart
    from compactcli.storage.folders import default_archive_dir

    keeps: list[int] = layer.pop("keep")
    if compare:
        _check_compare_usage(keeps, timeline, output, archive_dir, plot, price, price_model)
        given = click.get_current_context().get_parameter_source("threshold")
        thresholds = list(DEFAULT_THRESHOLDS) if given == click.core.ParameterSource.DEFAULT else threshold
        chosen_price = price or PRICES[price_model or DEFAULT_PRICE_MODEL]
        options = micro_settings({**layer, "keep": keeps[0]})
        settings = CompareSettings(
            path, dialect, on_invalid, estimator, thresholds, chosen_price, plot, keep_user_messages
        )
        raise SystemExit(_compare(settings, options, summarizer_settings, output_format, quiet))
    if price or price_model or output_format in (CSV, TABLE):
        raise click.UsageError("--price, --price-model and --format table/csv go with --compare")
    what_if = len(threshold) > 1 or len(keeps) > 1
    _check_usage(path, what_if, timeline, output, plot)
    figures = ReplayFigures()
    report = Report("replay", figures, output_format=output_format, quiet=True, stdout_has_data=output == "-")
    backend, model = summarizer_settings.backend, summarizer_settings.model
    summarizer = summarizer_settings.make()
    redact = not summarizer_settings.no_redact
    say_api_counting("replay", summarizer, estimator, redact, quiet)
    if backend == "auto" and not quiet:
        why = "an API key is set" if summarizer.name == "anthropic" else "no API key or auth token is set"
        click.echo(f"replay: summarizer {summarizer.name} (--backend auto: {why})", err=True)
    combos = list(itertools.product(threshold, keeps))
    if what_if and summarizer.name != "digest" and not quiet:
        click.echo(f"replay: {len(combos)} combinations; each makes its own summarizer API calls", err=True)
    try:
        with bad_shapes_are_bad_input(path), ExitStack() as stack:
            source = Source(path, stack)
            chosen = source.dialect(dialect)
            count = ContextSize(chosen, estimator, model=model, cache=_cache(estimator), redact=redact)
            if what_if:
                rows = []
                for limit, keep in combos:
                    options = micro_settings({**layer, "keep": keep})
                    run = _new_replay(
                        chosen,
                        count,
                        summarizer,
                        lambda entries: WHAT_IF_ARCHIVE,
                        limit,
                        options,
                        keep_user_messages,
                    )
                    result = source.run(run, on_invalid)
                    rows.append({"threshold": limit, "keep": keep, **result.summary()})
                if not quiet:
                    _report_what_if(report, source.name, chosen, estimator, summarizer, rows)
                raise SystemExit(report.finish())
            limit, keep = combos[0]
            options = micro_settings({**layer, "keep": keep})
            archive = lambda entries: READ_ONLY_ARCHIVE  # noqa: E731
            if output or timeline or archive_dir:  # docs/design.md, "What only reads"
                folder = default_archive_dir(source.place, Path(archive_dir) if archive_dir else None)
                archive = archiver(source, chosen, folder)
            run = _new_replay(chosen, count, summarizer, archive, limit, options, keep_user_messages)
            result = source.run(run, on_invalid)
            if timeline:
                write_timeline(Path(timeline), result)
            if output:
                write_output(output, chosen, result, source.template, source.unreadable_lines())
            title = f"{Path(source.name).name}: tokens per model call ({estimator})"
            if plot:
                chart.write_png(result.rows, limit, Path(plot), title=title)
    except CompactError as err:
        report.done(Outcome(path, FAILED, err.exit_code, str(err)))
        raise SystemExit(report.finish()) from None
    if quiet:
        raise SystemExit(report.finish())
    settings = {
        "dialect": chosen.name,
        "estimator": estimator,
        "threshold": limit,
        "keep": keep,
        "backend": summarizer.name,
        **source.accounting(result),
    }
    text = "\n".join(report_lines(source.name, settings, result)) + "\n\n"
    text += chart.text_chart(result.rows, limit, title=f"tokens per model call ({estimator} estimate)")
    figures.text = text
    stats = {**settings, **result.summary(), "archives": result.archives}
    report.done(Outcome(source.name, REPLAYED, stats=stats))
    raise SystemExit(report.finish())


class ReplayFigures(Figures):
    """replay's text is the report and chart the command renders (`text`); its JSON, the figures."""

    text = ""

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        if output_format == TEXT and self.text:
            yield self.text.removesuffix("\n")


def _check_usage(
    path: str, what_if: bool, timeline: str | None, output: str | None, plot: str | None
) -> None:
    from compactcli.pipelines.replay_file import TIMELINE_SUFFIXES
    from compactcli.report import chart

    if what_if and (timeline or output or plot):
        raise click.UsageError(
            "--timeline, -o and --plot take one --threshold and one --keep (what-if writes nothing)"
        )
    if timeline and Path(timeline).suffix.lower() not in TIMELINE_SUFFIXES:
        raise click.UsageError(f"--timeline: name a .jsonl or .csv file, not {timeline!r}")
    if output not in (None, "-") and path != STDIN and Path(output).resolve() == Path(path).resolve():
        raise click.UsageError("-o names the input itself; replay never changes its input")
    if plot and not chart.have_matplotlib():
        raise CompactError(chart.PLOT_HINT, USAGE)


def _check_compare_usage(
    keeps: list[int],
    timeline: str | None,
    output: str | None,
    archive_dir: str | None,
    plot: str | None,
    price: Price | None,
    price_model: str | None,
) -> None:
    from compactcli.report import chart

    if timeline or output or archive_dir:
        raise click.UsageError("--compare writes nothing: no --timeline, -o or --archive-dir (--plot draws)")
    if len(keeps) > 1:
        raise click.UsageError("--compare takes one --keep: it is the micro of the strategies that use micro")
    if price and price_model:
        raise click.UsageError("give --price or --price-model, not both")
    if plot and not chart.have_matplotlib():
        raise CompactError(chart.PLOT_HINT, USAGE)


@dataclass(frozen=True)
class CompareSettings:
    path: str
    dialect: str | None
    on_invalid: str
    estimator: str
    thresholds: list[int]
    price: Price
    plot: str | None
    keep_user_messages: int


def _compare(
    settings: CompareSettings,
    options: MicroOptions,
    summarizer_settings: SummarizerSettings,
    output_format: str,
    quiet: bool,
) -> int:
    """replay --compare: the logic is compactcli.layers.compare, the running and rendering
    compactcli.pipelines.compare_file."""
    from compactcli.layers.compare import runs
    from compactcli.pipelines import compare_file
    from compactcli.pipelines.context import ContextSize
    from compactcli.pipelines.replay_file import Source

    figures = compare_file.CompareFigures()
    report = Report("replay", figures, output_format=output_format, quiet=True)
    summarizer = summarizer_settings.make()
    redact = not summarizer_settings.no_redact
    say_api_counting("replay", summarizer, settings.estimator, redact, quiet)
    plan = runs(settings.thresholds)
    if summarizer.name != "digest" and not quiet:
        click.echo(f"replay: {len(plan)} runs; each makes its own summarizer API calls", err=True)
    try:
        with bad_shapes_are_bad_input(settings.path), ExitStack() as stack:
            source = Source(settings.path, stack)
            chosen = source.dialect(settings.dialect)
            count = ContextSize(
                chosen,
                settings.estimator,
                model=summarizer_settings.model,
                cache=_cache(settings.estimator),
                redact=redact,
            )
            rows = compare_file.compare(
                source,
                chosen,
                count=count,
                summarizer=summarizer,
                runs=plan,
                micro_options=options,
                price=settings.price,
                on_invalid=settings.on_invalid,
                keep_user_messages=settings.keep_user_messages,
                view=count.view,
            )
            name = Path(source.name).name
            if settings.plot:
                compare_file.write_png(rows, Path(settings.plot), title=f"{name}: tokens sent per model call")
    except CompactError as err:
        report.done(Outcome(settings.path, FAILED, err.exit_code, str(err)))
        return report.finish()
    if quiet:
        return report.finish()
    common = {
        "dialect": chosen.name,
        "estimator": settings.estimator,
        "backend": summarizer.name,
        "keep": options.keep,
        "price": {
            "input": settings.price.input,
            "cached": settings.price.cached,
            "output": settings.price.output,
        },
    }
    price = settings.price
    figures.head = (
        f"{source.name}: {chosen.name}; estimator {settings.estimator}; summarizer {summarizer.name}; "
        f"keep {options.keep}\nUSD per million tokens: input {price.input:g}, cached input {price.cached:g}, "
        f"output {price.output:g}"
    )
    figures.chart_title = f"tokens sent per model call ({settings.estimator} estimate)"
    for row in rows:
        report.done(Outcome(source.name, compare_file.COMPARED, stats={**common, **row}))
    return report.finish()


def _cache(estimator: str) -> Any:
    if estimator != "api":
        return None
    from compactcli.pipelines.context import TokenCache

    return TokenCache.default()


def _new_replay(
    dialect: dialects.Dialect,
    count: ContextSize,
    summarizer: Summarizer,
    archive: Callable[[list[Entry]], str],
    threshold: int,
    options: MicroOptions,
    keep_user_messages: int,
) -> Replay:
    from compactcli.layers.replay import Replay

    return Replay(
        dialect,
        count=count,
        summarizer=summarizer,
        archive=archive,
        threshold=threshold,
        micro_options=options,
        keep_user_messages=keep_user_messages,
        view=count.view,
    )


def _report_what_if(
    report: Report,
    name: str,
    dialect: dialects.Dialect,
    estimator: str,
    summarizer: Summarizer,
    rows: list[dict],
) -> None:
    """One outcome per combination; on the text stream, one table."""
    from compactcli.pipelines.replay_file import what_if_table

    head = f"{name}: {dialect.name}; estimator {estimator}; summarizer {summarizer.name}"
    head += "; what-if (nothing written)\n"
    report.figures.text = head + what_if_table(rows)
    for row in rows:
        stats = {"dialect": dialect.name, "estimator": estimator, "backend": summarizer.name, **row}
        report.done(Outcome(name, WHAT_IF, stats=stats))
        report.figures.text = ""  # the table is printed once
