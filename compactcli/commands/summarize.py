"""`compactcli summarize`: Layers 2 and 3, a conversation becomes one summary message."""

from __future__ import annotations

from functools import partial

import click

from compactcli import batch, context
from compactcli.backends import make_summarizer
from compactcli.backends.anthropic import DEFAULT_MODEL
from compactcli.batch import BUSY, CHANGED, FAILED, SKIPPED, UNCHANGED, WOULD_CHANGE, Outcome
from compactcli.commands.common import find_inputs, stdout_carries_data
from compactcli.commands.options import Inputs, Writes, input_options, write_options
from compactcli.errors import EXIT_CODES_HELP
from compactcli.layers.summarize import BACKENDS, DEFAULT_MAX_INPUT_TOKENS, DEFAULT_SUMMARY_TOKENS
from compactcli.report import Reporter
from compactcli.rewrite import process
from compactcli.summarize_file import SummarizeOptions, analyze

HELP = f"""Replace a conversation with one summary message (Layers 2 and 3).

The conversation (or all of it but the last --keep-last messages; a tool call is never parted from
its result) becomes one user message: "[Conversation compressed. Transcript: <archive>]", a blank
line, and the summary, which says what was accomplished, the current state, the key decisions and
the next steps. The original is archived first, byte for byte, under the path the message names
(also for -o and stdout, beside the input or in --archive-dir; stdin: ./.transcripts/).

\b
Backends (--backend):
  anthropic  a model, through the Messages API: --model, else
             $COMPACTCLI_MODEL, else $MODEL_ID, else {DEFAULT_MODEL};
             ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL.
             Transcripts over --max-input-tokens are summarized in parts,
             then combined; the task (the first user message) goes with
             every part.
  digest     offline and deterministic: the task, later user messages,
             files read / written / edited, the last commands, errors
             met, the last assistant message.
  auto       anthropic when a key or token is set, else digest (stderr
             says which).

Secrets (API keys, tokens, private keys, passwords in URLs, ...) become [REDACTED:<kind>] in what is
sent and in the summary, unless --no-redact; the archive keeps the original.

Claude Code sessions get what Claude Code writes at a compaction (a compact_boundary record, then
an isCompactSummary user record with the session's identity), so they still resume; the records
before the cut are dropped (they are in the archive), except `summary` title lines. OpenAI system
messages stay on top. --check, --diff and --dry-run never call a model.

An API failure (after the SDK's retries) leaves the file untouched, with no archive: exit 69.
"""


def summarize_options(func):
    for option in reversed(
        [
            click.option(
                "--keep-last",
                type=click.IntRange(0),
                default=0,
                show_default=True,
                help="Keep the last N messages after the summary (earlier if a tool call needs it).",
            ),
            click.option(
                "--backend",
                type=click.Choice(BACKENDS),
                default="auto",
                show_default=True,
                help="Who writes the summary (see above).",
            ),
            click.option("--model", default=None, help="Model for the anthropic backend (see above)."),
            click.option(
                "--focus", default=None, metavar="TEXT", help="Ask the summary to keep details about TEXT."
            ),
            click.option(
                "--summary-tokens",
                type=click.IntRange(64),
                default=DEFAULT_SUMMARY_TOKENS,
                show_default=True,
                help="Longest summary (max_tokens of each request).",
            ),
            click.option(
                "--max-input-tokens",
                type=click.IntRange(2_000),
                default=DEFAULT_MAX_INPUT_TOKENS,
                show_default=True,
                help="Transcript tokens per request; more are summarized in parts.",
            ),
            click.option(
                "--timeout",
                type=click.FloatRange(0, min_open=True),
                default=None,
                help="Seconds per API attempt (default: the SDK's).",
            ),
            click.option(
                "--max-retries",
                type=click.IntRange(0),
                default=2,
                show_default=True,
                help="Retries of a failed API call (the SDK's; it honours retry-after).",
            ),
            click.option("--no-redact", is_flag=True, help="Do not replace secrets before sending."),
            click.option(
                "--threshold",
                type=click.IntRange(0),
                default=None,
                help="Only summarize files whose token estimate exceeds N (default: every file).",
            ),
            click.option(
                "--method",
                type=click.Choice(context.METHODS),
                default=context.DEFAULT_METHOD,
                show_default=True,
                help="How --threshold counts tokens (as `estimate --method`).",
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
    ):
        func = option(func)
    return func


class SummarizeReporter(Reporter):
    """Per-file lines in summarize's words; --check lists the files that would be summarized."""

    check: bool = False

    def outcome(self, outcome: Outcome) -> None:
        verbose, self.verbose = self.verbose, False
        try:
            super().outcome(outcome)
        finally:
            self.verbose = verbose
        if self.quiet or outcome.status in (FAILED, BUSY):
            return
        if verbose or (self.check and outcome.status == WOULD_CHANGE):
            click.echo(describe(outcome), err=True)


def describe(outcome: Outcome) -> str:
    stats = outcome.stats
    if outcome.status == CHANGED:
        detail = [f"{stats.get('summarized', 0)} messages -> 1 by {stats.get('backend', '?')}"]
        if stats.get("kept"):
            detail.append(f"kept {stats['kept']}")
        if "bytes_before" in stats:
            detail.append(f"{stats['bytes_before']:,} -> {stats['bytes_after']:,} bytes")
        detail.append(f"{stats.get('redacted', 0)} secrets redacted")
        if stats.get("archive"):
            detail.append(f"archive {stats['archive']}")
        return f"summarized {outcome.path} ({'; '.join(detail)})"
    if outcome.status == WOULD_CHANGE:
        return (
            f"would summarize {outcome.path} ({stats.get('summarized', 0)} of {stats.get('messages', 0)} "
            f"messages, ~{stats.get('tokens') or 0:,} tokens)"
        )
    if outcome.status == SKIPPED:
        return f"skipped {outcome.message}"
    if outcome.status == UNCHANGED:
        reason = stats.get("reason")
        return f"unchanged {outcome.path}" + (f" ({reason})" if reason else "")
    return f"{outcome.status} {outcome.path}"


def summary_line(outcomes: list[Outcome], check: bool) -> str:
    line = batch.summary(outcomes, verb="summarized", check=check)
    redacted = sum(o.stats.get("redacted", 0) for o in outcomes)
    return line + (f", {redacted} secrets redacted" if redacted else "")


@click.command(help=HELP, epilog=EXIT_CODES_HELP)
@input_options
@write_options
@summarize_options
def summarize(
    inputs: Inputs,
    writes: Writes,
    keep_last,
    backend,
    model,
    focus,
    summary_tokens,
    max_input_tokens,
    timeout,
    max_retries,
    no_redact,
    threshold,
    method,
    use_batch,
    batch_id,
    poll_interval,
):
    items = find_inputs(inputs.paths, inputs.glob, writes.archive_dir, writes.output)
    preview = writes.preview
    summarizer = make_summarizer(
        backend,
        model=model,
        summary_tokens=summary_tokens,
        timeout=timeout,
        max_input_tokens=max_input_tokens,
        max_retries=max_retries,
        redact=not no_redact,
    )
    if (use_batch or batch_id) and summarizer.name != "anthropic":
        raise click.UsageError(
            "--batch needs the anthropic backend (set ANTHROPIC_API_KEY or pass --backend)"
        )
    if not inputs.quiet and not preview:
        click.echo(f"summarize: backend {_backend_line(backend, summarizer)}", err=True)
    options = SummarizeOptions(keep_last=keep_last, focus=focus, threshold=threshold)
    manifest_options = {
        "keep_last": keep_last,
        "backend": summarizer.name,
        "model": getattr(summarizer, "model", None),
        "focus": focus,
        "summary_tokens": summary_tokens,
        "max_input_tokens": max_input_tokens,
        "redact": not no_redact,
        "threshold": threshold,
        "method": method,
    }
    settings = writes.settings("summarize", manifest_options)
    file_analyze = partial(
        analyze,
        options=options,
        summarizer=summarizer,
        fmt=inputs.fmt,
        on_invalid=inputs.on_invalid,
        estimator=context.estimator(method) if threshold is not None else None,
    )
    stdout_has_data = stdout_carries_data(items, writes.output)
    reporter = SummarizeReporter(
        verbose=inputs.verbose, quiet=inputs.quiet, as_json=inputs.as_json, stdout_has_data=stdout_has_data
    )
    reporter.check = writes.check
    if (use_batch or batch_id) and not preview:
        from compactcli.summarize_file import run_batch

        outcomes = run_batch(
            items,
            settings=settings,
            analyze=file_analyze,
            summarizer=summarizer,
            batch_id=batch_id,
            poll_interval=poll_interval,
            on_outcome=reporter.outcome,
        )
    else:
        worker = partial(process, settings=settings, analyze=file_analyze)
        outcomes = batch.run(items, worker, jobs=inputs.jobs, on_outcome=reporter.outcome)
    reporter.summary(summary_line(outcomes, preview))
    raise SystemExit(batch.exit_code(outcomes))


def _backend_line(requested: str, summarizer) -> str:
    if summarizer.name == "anthropic":
        text = f"anthropic (model {summarizer.model})"
    else:
        text = "digest (offline, no model)"
    if requested == "auto":
        why = "an API key is set" if summarizer.name == "anthropic" else "no API key or auth token is set"
        text += f", chosen by --backend auto: {why}"
    return text
