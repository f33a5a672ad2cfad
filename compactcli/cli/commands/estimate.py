"""`compactcli estimate`: how many tokens each transcript's active context holds; a CI gate."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import click

from compactcli.cli.options import BriefHelpCommand, cache_option, input_options
from compactcli.core.constants import ESTIMATE_METHOD, METHODS, NO_USAGE, OVER, STDIN, UNDER
from compactcli.core.errors import EXIT_CODES_HELP, OK, CompactError
from compactcli.report import COMMAND_FORMATS, Outcome, Report
from compactcli.run.settings import Inputs

# The --top of --format html: every result micro would clear.
ALL_RESULTS = 10**9

# --- the command ---------------------------------------------------------------------------------

HELP = """Count the tokens of each transcript's active context; fail CI when one is over a limit.

PATHS are files, folders (searched for --glob) or '-' for stdin; none: the session folders of
the agents found here (~/.claude/projects, $CODEX_HOME/sessions, ~/.pi/agent/sessions), named
on stderr. Nothing is changed. --max-tokens N exits 1 when a file is over N.

\b
Methods (--method): auto (default: the context recorded at the last model
call plus the heuristic count of what came after, else heuristic +
--overhead), heuristic, seed, api (count_tokens), usage (recorded only).

\b
Examples:
  compactcli estimate ~/.claude/projects
  compactcli estimate --max-tokens 150000 --format github transcripts/
  compactcli estimate --top 5 session.jsonl
  compactcli estimate --method usage --format csv transcripts/ > usage.csv
"""

DETAILS = """
For Claude Code logs the active context is the main conversation from its last compaction on; a file of
sub-agent (sidechain) records only is counted as its own conversation. For Codex rollouts it is
what follows the last `compacted` record, its replacement_history first; heuristic and api also
count the base_instructions of session_meta, and count each tool output as Codex sent it: cut to
its turn's truncation_policy (turn_context) times 1.2, both ends kept.

\b
Methods (--method):
  auto       what the next model call would send (default): the context
             recorded at the last call (Claude Code usage, Codex
             token_count) plus the heuristic count of what came after;
             without a recorded call, heuristic + --overhead. Each file
             says which it took (usage+heuristic, heuristic+overhead)
  heuristic  calibrated estimate of the messages (+ --overhead, default 0)
  seed       len(str(messages)) // 4, the reference agent loop's trigger
  api        messages.count_tokens (exact; needs ANTHROPIC_API_KEY;
             --model); answers are cached by content hash under
             $XDG_CACHE_HOME/compactcli (--no-cache to skip)
  usage      the context recorded at the last model call (Claude Code
             usage fields; Codex: the last token_count's
             last_token_usage.total_tokens), which also holds the system
             prompt and tool definitions that transcripts do not; a file
             without any is reported as "no usage recorded" and fails
             --max-tokens (1)

\b
Output (--format, on stdout):
  table   tokens = recorded (the context the last recorded call was sent)
          + added (the heuristic count of what came after it; of all
          when none is recorded) + overhead; share of --max-tokens; the
          heuristic's split of the whole context (text, tool inputs, tool
          outputs, thinking, images); messages, tool results, bytes; then
          a total line. It fits the terminal ($COLUMNS, else its width):
          on a narrow one the split and counts go first
  json    one JSON object per file (JSON lines), as each file is counted
  json-document
          one JSON document at the end: the files' objects and the totals
  csv     a header, then one row per file
  github  ::error annotations for files over --max-tokens (or failing);
          nothing for the rest
  html    one self-contained page (no script, nothing fetched): sessions
          by size, where their tokens go, the heaviest tool results micro
          would clear by tool, what micro and summarize (offline digest)
          would save, and the archives' history. Slower: each file is
          also compacted in memory, twice

The category split is always the heuristic's; with another method it shows where the tokens
are. --top N lists the N heaviest tool results that micro would clear (line, tool, tokens), with
micro's settings from the configuration file, if any: what micro would save.

--overhead N: tokens every call sends that logs do not hold (system prompt, tool definitions).
auto's default is the dialect's, measured on recorded sessions (claude-code: 17,586; others 0).

--calibrate: PATHS are sessions with recorded usage (Claude Code usage, Codex token_count); print
each method's error against it instead, and how well auto and heuristic + overhead predict each
next call.
"""


@click.command(
    cls=BriefHelpCommand,
    help=HELP,
    details=DETAILS,
    epilog=EXIT_CODES_HELP + " Here 1: a file is over --max-tokens, or cannot be checked.",
    common=("method", "max_tokens", "overhead", "top", "output_format", "jobs", "quiet"),
)
@input_options(formats=COMMAND_FORMATS["estimate"], agents_folders=True)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default=ESTIMATE_METHOD,
    show_default=True,
    help="How tokens are counted (see above).",
)
@click.option(
    "--overhead",
    type=click.IntRange(0),
    default=None,
    help="Tokens every call sends that logs do not hold (default: the dialect's for auto, 0 else).",
)
@click.option("--max-tokens", type=click.IntRange(0), default=None, help="Exit 1 if a file is over N tokens.")
@click.option("--top", type=click.IntRange(0), default=0, help="List the N heaviest tool results per file.")
@click.option("--model", default=None, help="Model for --method api (default: $COMPACTCLI_MODEL, $MODEL_ID).")
@cache_option(" --method api: the count_tokens answers are neither read nor remembered either.")
@click.option("--calibrate", is_flag=True, help="Measure each method against recorded usage in PATHS.")
def estimate(
    inputs: Inputs,
    method,
    overhead,
    max_tokens,
    top,
    model,
    no_cache,
    calibrate,
):
    # Imported here, not above: --help needs none of them.
    from compactcli.report.estimate import EstimateFigures, print_calibration
    from compactcli.run import runner
    from compactcli.run.cache import RunCache

    output_format = inputs.output_format
    if calibrate:
        from compactcli.counting import calibrate as calibration

        if output_format in ("github", "html"):
            raise click.UsageError("--calibrate prints table, json or csv")
        if STDIN in inputs.paths:
            raise click.UsageError("--calibrate reads files and folders, not stdin")
        files = [Path(p) for p in runner.discover(inputs.paths, inputs.glob)]
        if inputs.verbose:
            click.echo(f"calibrating against {len(files)} files", err=True)
        print_calibration(calibration.calibrate(files), output_format, len(files))
        raise SystemExit(OK)
    items = runner.find_inputs(inputs.paths, inputs.glob)
    page = output_format == "html"
    if page:
        top = top or ALL_RESULTS  # the page adds up every result micro would clear, by tool
    report = Report(
        "estimate",
        EstimateFigures(method, max_tokens, history=_history if page else None),
        output_format=output_format,
        verbose=inputs.verbose,
        quiet=inputs.quiet,
    )
    worker: Callable[[str], Outcome] = partial(
        _estimate_file,
        method=method,
        overhead=overhead,
        fmt=inputs.dialect,
        on_invalid=inputs.on_invalid,
        max_tokens=max_tokens,
        top=top,
        micro=_micro_in_force() if top else None,
        model=model,
        use_cache=not no_cache,
        savings=page,
    )
    # An api count depends on the model and the service, not only on the file: it is not remembered.
    cache = RunCache.open(
        "estimate",
        {name: value for name, value in worker.keywords.items() if name != "use_cache"},  # type: ignore[attr-defined]
        {UNDER, OVER, NO_USAGE},
        enabled=not no_cache and method != "api",
    )
    runner.run(
        items, worker, jobs=inputs.jobs, scheduler=inputs.scheduler, on_outcome=report.done, cache=cache
    )
    raise SystemExit(report.finish())


def _history(path: str) -> list[dict]:
    """A transcript's archives, as `restore --list` shows them (the page's last section)."""
    from compactcli.storage.restore import listing

    if "://" in path or not Path(path).is_file():  # stdin, a URL: no archive folder beside them
        return []
    try:
        entries, skipped = listing(Path(path), None)
    except CompactError as err:  # an archive folder it cannot trust: said, and the page goes on
        click.echo(f"warning: {err}", err=True)
        return []
    for problem in skipped:
        click.echo(f"warning: {problem}", err=True)
    return entries


def _estimate_file(*args, **kwargs) -> Outcome:
    """estimate_file, imported when the first file is read: a run the cache answers reads none (and
    --help needs none of its token counting)."""
    from compactcli.pipelines.estimate_file import estimate_file

    return estimate_file(*args, **kwargs)


def _micro_in_force():
    """micro's options as a run of `compactcli micro` would have them (configuration included); read
    through micro's option group, not the micro command, which this module does not import."""
    from compactcli.cli import config
    from compactcli.cli.options import micro_options, micro_settings

    settings = click.get_current_context().find_root().obj
    if not isinstance(settings, config.Config):
        settings = config.Config()
    micro_only = click.Command("micro", params=micro_options()(lambda: None).__click_params__)
    return micro_settings(config.values_for(settings, "micro", micro_only))
