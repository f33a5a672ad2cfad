"""`compactcli summarize`: Layers 2 and 3, a conversation becomes one summary message."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, BinaryIO

import click

from compactcli.cli.options import (
    BriefHelpCommand,
    PriceType,
    SummarizerSettings,
    gather_options,
    input_options,
    keep_user_messages_option,
    say_api_counting,
    summarizer_options,
    write_options,
)
from compactcli.core.constants import DEFAULT_METHOD, DEFAULT_MODEL, METHODS, STDIN, USER_MESSAGES_TOKENS
from compactcli.core.errors import CHECK_FAILED, EXIT_CODES_HELP, Unavailable
from compactcli.report import CHANGED, COMMAND_FORMATS, UNCHANGED, WOULD_CHANGE, Figures, Outcome, Report
from compactcli.run.settings import Inputs, Writes

if TYPE_CHECKING:  # the rest is imported when the command runs: --help needs none of it
    from compactcli.pipelines.summarize_file import SummarizeOptions, SummaryEdit

HELP = """Replace a conversation with one summary message (Layers 2 and 3).

The conversation (or all but its last --keep-last messages) becomes one user message naming the
archive of the original, then the summary: what was done, the current state, the key decisions, the
next steps; the user's own messages follow it word for word (--keep-user-messages). In place, the
original is archived first, byte for byte; with -o it stays as it was. Secrets are redacted in what
is sent. Claude Code and Codex sessions get what the agent writes at its own compaction, so they
still resume. --check, --diff and --dry-run never call a model; an API failure leaves the file as it
was (exit 69).

\b
Backends (--backend): anthropic (the Messages API), openai (any
compatible server: --base-url, --model), claude-code and codex (your
own agent CLI and its login), digest (offline, deterministic), auto
(anthropic when a key is set, else digest).

\b
Examples:
  compactcli summarize --backend digest session.jsonl
  compactcli summarize --focus "the database migration" session.jsonl
  compactcli summarize --threshold 100000 --jobs 4 ~/.claude/projects
  compactcli summarize --keep-last 6 -o - session.jsonl > short.jsonl
"""


def _check_patterns(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as err:
            raise click.BadParameter(f"{pattern!r} is not a regular expression: {err}", ctx, param) from None
    return value


def summarize_options() -> Callable:
    """summarize's own options (the summarizer's are `summarizer_options`)."""
    options = [
        click.option(
            "--keep-last",
            type=click.IntRange(0),
            default=0,
            show_default=True,
            help="Keep the last N messages after the summary (earlier if a tool call needs it).",
        ),
        click.option(
            "--focus", default=None, metavar="TEXT", help="Ask the summary to keep details about TEXT."
        ),
        keep_user_messages_option(),
        click.option(
            "--pin",
            multiple=True,
            metavar="REGEX",
            callback=_check_patterns,
            help="Keep the summarized messages REGEX matches (text, tool inputs and results) verbatim "
            "after the summary, with their tool calls or results. Repeatable.",
        ),
        click.option(
            "--verify",
            is_flag=True,
            help="Probe each summarized file against its original (as `compactcli probe`) and report "
            "the retention.",
        ),
        click.option(
            "--min-retention",
            type=click.FloatRange(0, 1),
            default=None,
            metavar="R",
            help="--verify, and exit 1 for a file whose retention is below R (0 to 1).",
        ),
        click.option(
            "--threshold",
            type=click.IntRange(0),
            default=None,
            help="Only summarize files whose token estimate exceeds N (default: every file).",
        ),
        click.option(
            "--method",
            type=click.Choice(METHODS),
            default=DEFAULT_METHOD,
            show_default=True,
            help="How --threshold counts tokens (as `estimate --method`).",
        ),
        click.option(
            "--price",
            type=PriceType(),
            default=None,
            help="USD per million input, cached input and output tokens of the summarizer's model "
            "(default: its list price where known; a local or custom model has none).",
        ),
        click.option(
            "--batch",
            "use_batch",
            is_flag=True,
            help="Send all files as one Message Batch (half the price), wait, then apply.",
        ),
        click.option(
            "--batch-id",
            default=None,
            metavar="ID",
            help="Apply the results of an earlier --batch (same PATHS and options).",
        ),
        click.option(
            "--poll-interval",
            type=click.FloatRange(0),
            default=30.0,
            show_default=True,
            help="Seconds between polls of a --batch.",
        ),
    ]

    def apply(func: Callable) -> Callable:
        func = gather_options("options", "compactcli.pipelines.summarize_file:SummarizeOptions")(func)
        for option in reversed(options):
            func = option(func)
        return func

    return apply


class SummarizeFigures(Figures):
    summed = (  # json-document totals
        *("summarized", "api_calls", "input_tokens", "output_tokens", "cost_usd"),
        *("bytes_before", "bytes_after"),
    )
    verb, doing = "summarized", "summarize"

    def describe(self, outcome: Outcome) -> str:
        stats = outcome.stats
        if outcome.status == CHANGED:
            detail = [f"{stats.get('summarized', 0)} messages -> 1 by {stats.get('backend', '?')}"]
            if stats.get("kept"):
                detail.append(f"kept {stats['kept']}")
            if "replaced_lines" in stats:
                detail.append(f"{stats['replaced_lines']} lines replaced (in the archive)")
            if "retention" in stats:
                detail.append(f"retention {stats['retention']:.2f}")
            if "bytes_before" in stats:
                detail.append(f"{stats['bytes_before']:,} -> {stats['bytes_after']:,} bytes")
            detail.append(f"{stats.get('redacted', 0)} secrets redacted")
            if "input_tokens" in stats:
                detail.append(_spent(stats))
            if stats.get("archive"):
                detail.append(f"archive {stats['archive']}")
            return f"summarized {outcome.path} ({'; '.join(detail)})"
        if outcome.status == WOULD_CHANGE:
            planned = stats.get("planned")
            return (
                f"would summarize {outcome.path} ({stats.get('summarized', 0)} of {stats.get('messages', 0)} "
                f"messages, ~{stats.get('tokens') or 0:,} tokens"
                + (f"; {_planned(planned)}" if planned else "")
                + ")"
            )
        if outcome.status == UNCHANGED:
            reason = stats.get("reason")
            return f"unchanged {outcome.path}" + (f" ({reason})" if reason else "")
        return super().describe(outcome)

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        line = super().summary(outcomes, preview)
        redacted = sum(o.stats.get("redacted", 0) for o in outcomes)
        line += f", {redacted} secrets redacted" if redacted else ""
        line += _totals(outcomes, preview)
        retention = [o.stats["retention"] for o in outcomes if "retention" in o.stats]
        if retention:  # --verify
            below = sum(1 for o in outcomes if "retention" in o.stats and o.exit_code == CHECK_FAILED)
            line += f", lowest retention {min(retention):.2f}" + (
                f" ({below} below --min-retention)" if below else ""
            )
        return line


def _planned(planned: dict) -> str:
    from compactcli.pipelines.summarize_file import planned_text

    return planned_text(planned)


def _spent(stats: dict) -> str:
    """`1,234 in + 56 out tokens (server), claude-sonnet-5-5, $0.0031`: a file's summary requests."""
    text = (
        f"{stats['input_tokens']:,} in + {stats['output_tokens']:,} out tokens ({stats.get('tokens_from')})"
    )
    if stats.get("model"):
        text += f", {stats['model']}"
    if "cost_usd" in stats:
        text += f", ${stats['cost_usd']:.4f}" + (
            " at --price" if stats.get("price_from") == "settings" else ""
        )
    else:  # a local server, a gateway, a model no list names: unknown, not zero
        text += ", cost unknown (no price known; --price sets one)"
    return text


def _totals(outcomes: list[Outcome], preview: bool) -> str:
    """The run's tokens and cost after the counts: what was spent, or under a preview what would be."""
    if preview:
        plans = [o.stats["planned"] for o in outcomes if o.status == WOULD_CHANGE and "planned" in o.stats]
        if not plans:
            return ""
        text = f"; would send ~{sum(p['input_tokens'] for p in plans):,} tokens"
        priced = [p["max_cost_usd"] for p in plans if "max_cost_usd" in p]
        if priced:
            text += f", at most ${sum(priced):.4f}"
            if len(priced) < len(plans):
                text += f" ({len(plans) - len(priced)} unpriced)"
        return text
    spent = [o.stats for o in outcomes if "input_tokens" in o.stats]
    if not spent:
        return ""
    estimated = sum(1 for s in spent if s.get("tokens_from") != "server")
    sent, written = sum(s["input_tokens"] for s in spent), sum(s["output_tokens"] for s in spent)
    text = f"; {sent:,} in + {written:,} out tokens" + (f" ({estimated} estimated)" if estimated else "")
    priced = [s["cost_usd"] for s in spent if "cost_usd" in s]
    if priced:
        text += f", ${sum(priced):.4f}"
        if len(priced) < len(spent):
            text += f" ({len(spent) - len(priced)} unpriced)"
    else:
        text += ", cost unknown"
    return text


DETAILS = f"""
The conversation (or all of it but the last --keep-last messages; a tool call is never parted from
its result) becomes one user message: "[Conversation compressed. Transcript: <archive>]", a blank
line, and the summary, which says what was accomplished, the current state, the key decisions and
the next steps. In place, the original is archived first, byte for byte, under the path the message
names. With -o (a file or -), FILE is left as it was and the message names FILE itself: nothing is
written beside it, unless --archive-dir asks for a copy there. Stdin is archived in ./.transcripts/
(or --archive-dir), since nothing else would hold the original.

\b
Backends (--backend):
  anthropic    the Messages API: --model, else $COMPACTCLI_MODEL, else
               $MODEL_ID, else {DEFAULT_MODEL}; ANTHROPIC_API_KEY or
               ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL.
  openai       any OpenAI-compatible server (Ollama, vLLM, llama.cpp,
               LM Studio, LiteLLM, OpenRouter, OpenAI): --base-url or
               $OPENAI_BASE_URL, --model (required), OPENAI_API_KEY if the
               server wants one; Chat Completions, or --openai-api
               responses for the Responses API. Needs compactcli[openai].
  claude-code  your own `claude` (Claude Code) in print mode, with its
               login: no tools, no session saved, in an empty folder.
  codex        your own `codex exec`, with its login, read-only sandbox.
  digest       offline and deterministic: the task, later user messages,
               files read / written / edited, the last commands, errors
               met, the last assistant message.
  auto         anthropic when a key or token is set, else digest (stderr
               says which).
With a model, transcripts over --max-input-tokens are summarized in parts,
then combined; the task (the first user message) goes with every part.
A transcript compacted before (by compactcli, Claude Code or Codex) is
summarized from its last summary plus what followed; the new summary says
how many compactions deep it is. Each file reports its requests' tokens
(the server's usage, else the estimate) and their list price where known;
--dry-run says what a run would send and cost.

Secrets (API keys, tokens, private keys, passwords in URLs, ...) become [REDACTED:<kind>] in what is
sent and in the summary, unless --no-redact; the archive keeps the original.

Claude Code sessions get what Claude Code writes at a compaction (a compact_boundary record, then
an isCompactSummary user record with the session's identity), so they still resume; the records
before the cut are dropped (they are in the archive), except `summary` title lines. Codex rollouts
get what Codex writes at /compact, so `codex resume` carries on: session_meta stays first, then a
`compacted` record whose replacement_history holds the developer and environment context, the
user's most recent messages and the summary, then an event_msg `context_compacted`. OpenAI system
messages stay on top. --check, --diff and --dry-run never call a model.

The user's own messages in the summarized part (not tool results, not what the agent put in their turn)
follow the summary word for word, redacted, the newest within --keep-user-messages tokens (default
{USER_MESSAGES_TOKENS:,}, what Codex keeps): instructions are not paraphrased away. --pin REGEX keeps
the summarized messages it matches as they are, after the summary; a pinned tool call keeps its
results, and a pinned result its call, so no pair is broken. --verify probes each summarized file
against its original (as `compactcli probe`) and reports the retention; --min-retention R exits 1
for a file below R.

An API failure (after the SDK's retries) leaves the file untouched, with no archive: exit 69.
"""


@click.command(
    cls=BriefHelpCommand,
    help=HELP,
    details=DETAILS,
    epilog=EXIT_CODES_HELP,
    common=(
        *("output", "check", "diff", "dry_run", "backend", "model", "keep_last", "focus", "threshold"),
        *("output_format", "jobs", "quiet"),
    ),
)
@input_options(formats=COMMAND_FORMATS["summarize"])
@write_options()
@summarizer_options()
@summarize_options()
def summarize(
    inputs: Inputs,
    writes: Writes,
    summarizer_settings: SummarizerSettings,
    options: SummarizeOptions,
    method,
    price,
    use_batch,
    batch_id,
    poll_interval,
):
    from compactcli.pipelines.summarize_file import analyze
    from compactcli.run import runner

    items = runner.find_inputs(inputs.paths, inputs.glob, writes.archive_dir, writes.output)
    preview = writes.preview
    summarizer = summarizer_settings.make()
    if price is not None and hasattr(summarizer, "price_for"):
        summarizer.price = price
    _check_backend(summarizer, summarizer_settings.backend, use_batch or batch_id, preview, inputs.quiet)
    redact = not summarizer_settings.no_redact
    if options.threshold is not None:
        say_api_counting("summarize", summarizer, method, redact, inputs.quiet)
    manifest_options = _manifest_options(options, summarizer, summarizer_settings, method)
    settings = writes.settings("summarize", manifest_options)
    file_analyze = partial(
        analyze,
        options=options,
        summarizer=summarizer,
        fmt=inputs.dialect,
        on_invalid=inputs.on_invalid,
        estimator=_estimator(method, redact) if options.threshold is not None else None,
    )
    if writes.output is not None and writes.archive_dir is None:
        file_analyze = _naming_the_input(file_analyze)
    report = Report(
        "summarize",
        SummarizeFigures(),
        output_format=inputs.output_format,
        verbose=inputs.verbose,
        quiet=inputs.quiet,
        check=writes.check,
        preview=preview,
        stdout_has_data=runner.stdout_carries_data(items, writes.output, writes.diff),
    )
    on_outcome = _reporting(report, options, inputs, writes, items)
    if (use_batch or batch_id) and not preview:
        from compactcli.run.message_batch import run_batch

        if writes.output_dir or inputs.scheduler:
            raise click.UsageError("--batch writes in place or to -o: not with --output-dir or --scheduler")

        run_batch(
            items,
            settings=settings,
            analyze=file_analyze,
            summarizer=summarizer,
            batch_id=batch_id,
            poll_interval=poll_interval,
            on_outcome=on_outcome,
        )
    else:
        worker = runner.file_worker(items, inputs, writes, settings, file_analyze)
        runner.run(items, worker, jobs=inputs.jobs, scheduler=inputs.scheduler, on_outcome=on_outcome)
        runner.write_manifest(report.outcomes, writes, settings)
    raise SystemExit(report.finish())


def _estimator(method: str, redact: bool):
    from compactcli.pipelines import context

    return context.estimator(method, redact=redact)


def _naming_the_input(analyze: Callable[..., SummaryEdit]) -> Callable[..., SummaryEdit]:
    """-o leaves the input as it was, so the summary names the input itself and no archive copy is
    written beside it (micro -o and --output-dir write nothing there either). Stdin is still
    archived: once read, nothing else holds the original."""

    def analyze_naming_the_input(source: BinaryIO, name: str) -> SummaryEdit:
        from compactcli.pipelines.transcript import STDIN_NAME
        from compactcli.storage import remote

        edit = analyze(source, name)
        if name != STDIN_NAME:
            edit.archive_first = False
            edit.use_archive(name if remote.is_url(name) else os.path.abspath(name))
        return edit

    return analyze_naming_the_input


def _check_backend(summarizer, requested: str, batch: object, preview: bool, quiet: bool) -> None:
    """Usage and credential errors before any file is touched; the backend line on stderr."""
    if batch and summarizer.name != "anthropic":
        raise click.UsageError(
            "--batch needs the anthropic backend (set ANTHROPIC_API_KEY or pass --backend)"
        )

    ready = getattr(summarizer, "ready", None)
    if ready is not None and not preview:
        try:
            ready()
        except Unavailable as err:
            # One error before any file is touched, not the same one for every file.
            raise Unavailable(f"{err}; no file was changed") from None
    if not quiet and not preview:
        click.echo(f"summarize: backend {_backend_line(requested, summarizer)}", err=True)


def _manifest_options(
    options: SummarizeOptions, summarizer, settings: SummarizerSettings, method: str
) -> dict:
    return {
        "keep_last": options.keep_last,
        "backend": summarizer.name,
        "model": getattr(summarizer, "model", None),
        "base_url": getattr(getattr(summarizer, "backend", None), "base_url", None),
        "focus": options.focus,
        "summary_tokens": settings.summary_tokens,
        "max_input_tokens": settings.max_input_tokens,
        "redact": not settings.no_redact,
        "threshold": options.threshold,
        "keep_user_messages": options.keep_user_messages,
        "pin": list(options.pin),
        "method": method,
    }


def _reporting(
    report: Report, options: SummarizeOptions, inputs: Inputs, writes: Writes, items: list[str]
) -> Callable[[Outcome], None]:
    """What each file's outcome goes through: the report, after --verify's probe when asked."""
    if not options.verify and options.min_retention is None:
        return report.done
    # --min-retention checks the new content before it is written anywhere; --verify alone reads it back.
    to_stdout = writes.output == "-" or (writes.output is None and STDIN in items)
    if to_stdout and options.min_retention is None:
        raise click.UsageError("--verify reads the summarized file back: not with a transcript on stdout")
    from compactcli.pipelines.verify import verifying

    return verifying(
        partial(_telling_refusals, report.done),
        output=writes.output,
        min_retention=options.min_retention,
        fmt=inputs.dialect,
        on_invalid=inputs.on_invalid,
    )


def _telling_refusals(done: Callable[[Outcome], None], outcome: Outcome) -> None:
    """`done`, and on stderr why a file below --min-retention was left as it was (told as an error is,
    -q or not: it fails the run)."""
    done(outcome)
    if outcome.status == UNCHANGED and outcome.exit_code == CHECK_FAILED and outcome.message:
        click.echo(outcome.message, err=True)


def _backend_line(requested: str, summarizer) -> str:
    describe = getattr(summarizer, "describe", None)
    text = describe() if describe is not None else "digest (offline, no model)"
    if requested == "auto":
        why = "an API key is set" if summarizer.name == "anthropic" else "no API key or auth token is set"
        text += f", chosen by --backend auto: {why}"
    return text
