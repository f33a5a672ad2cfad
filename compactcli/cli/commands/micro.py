"""`compactcli micro`: Layer 1, old tool results become short placeholders."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import click

from compactcli.cli.options import (
    BriefHelpCommand,
    cache_option,
    input_options,
    micro_options,
    micro_settings,
    write_options,
)
from compactcli.core.errors import EXIT_CODES_HELP
from compactcli.report import CHANGED, COMMAND_FORMATS, UNCHANGED, WOULD_CHANGE, Figures, Outcome, Report
from compactcli.run.settings import FileSettings, Inputs, Writes

# What the opt-in strategies did, as the per-file line says it.
_STRATEGY_FIGURES = (
    ("images_removed", "images removed"),
    ("records_dropped", "records dropped"),
    ("records_relinked", "re-linked"),
    ("thinking_removed", "with earlier thinking removed"),
)


class MicroFigures(Figures):
    summed = ("cleared", "bytes_before", "bytes_after")
    verb, doing = "compacted", "compact"

    def describe(self, outcome: Outcome) -> str:
        stats = outcome.stats
        if outcome.status == CHANGED:
            detail = f"cleared {stats.get('cleared', 0)} tool results"
            for key, what in _STRATEGY_FIGURES:
                if stats.get(key):
                    detail += f", {stats[key]:,} {what}"
            if "bytes_before" in stats:
                detail += f", {stats['bytes_before']:,} -> {stats['bytes_after']:,} bytes"
            return f"compacted {outcome.path} ({detail})"
        if outcome.status == WOULD_CHANGE:
            return f"would compact {outcome.path} (would clear {stats.get('cleared', 0)} tool results)"
        return super().describe(outcome)


HELP = """Replace the content of old tool results with a short placeholder (Layer 1).

PATHS are files, folders (searched for --glob) or '-' for stdin. Every tool result but the last
--keep of each conversation is cleared, unless it is short (--min-chars) or its tool is preserved
(--preserve; by default each agent's file-read tool). Files are rewritten in place, the original
archived first; stdin goes to stdout.

\b
Opt-in strategies: --dedupe-reads, --keep-images N, --truncate HEAD:TAIL,
--drop-progress, --drop-sidechains, --drop-thinking (see --help-all).

\b
Examples:
  compactcli micro ~/.claude/projects --min-age 600
  compactcli micro --check transcripts/
  compactcli micro --diff session.jsonl | less
  compactcli micro --keep 10 --preserve Read --preserve Grep session.jsonl
  compactcli micro --dedupe-reads --keep-images 2 -o small.jsonl session.jsonl
  cat session.jsonl | compactcli micro - > compacted.jsonl
"""

DETAILS = """
A Claude Code record's toolUseResult copy of a cleared result is dropped; in a Codex rollout the
UI's copy (exec_command_end output, patch_apply_end stdout/stderr, matched by call_id) is cleared
too, as are Gemini CLI's resultDisplay and, in Copilot CLI, detailedContent and a postToolUse
hook's copy. A result whose content is a list of blocks is kept unless --clear-multimodal.

Opt-in strategies (each idempotent, none breaks a tool_use/tool_result pair; the manifest names
those that ran): --dedupe-reads clears a file's read result that a later read or write of that
file supersedes; --keep-images N keeps the last N images; --truncate HEAD:TAIL keeps both ends of
a cleared result; Claude Code: --drop-progress, --drop-sidechains (finished sub-agents);
--drop-thinking drops thinking before the current turn (a tool-use loop is one turn and keeps its
thinking unchanged, as the Messages API requires).
"""


@click.command(
    cls=BriefHelpCommand,
    help=HELP,
    details=DETAILS,
    epilog=EXIT_CODES_HELP,
    common=(
        *("output", "check", "diff", "dry_run", "keep", "min_chars", "preserve", "dedupe_reads"),
        *("output_format", "jobs", "quiet"),
    ),
)
@input_options(formats=COMMAND_FORMATS["micro"])
@write_options()
@micro_options()
@cache_option(" Applies in place and to --check/--diff/--dry-run, not to -o.")
def micro(inputs: Inputs, writes: Writes, no_cache: bool, **layer):
    # Imported here, not above: --help needs none of them.
    from compactcli.run import runner

    items = runner.find_inputs(inputs.paths, inputs.glob, writes.archive_dir, writes.output)
    made: list[FileSettings] = []

    def prepare() -> Callable[[str], Outcome]:
        """The worker, made once a file has to be read: Layer 1's module is not loaded by a run the
        cache answers."""
        options = micro_settings(layer)
        estimator = None
        if options.trigger_tokens:
            from compactcli.pipelines import context  # 25 ms of imports that a plain micro run does not need

            estimator = context.estimator()
        analyze = partial(
            _analyze,
            options=options,
            fmt=inputs.dialect,
            on_invalid=inputs.on_invalid,
            estimator=estimator,
        )
        made.append(writes.settings("micro", options.manifest_record()))
        return runner.file_worker(items, inputs, writes, made[0], analyze)

    report = Report(
        "micro",
        MicroFigures(),
        output_format=inputs.output_format,
        verbose=inputs.verbose,
        quiet=inputs.quiet,
        check=writes.check,
        preview=writes.preview,
        stdout_has_data=runner.stdout_carries_data(items, writes.output, writes.diff),
    )
    # Only "unchanged" is remembered: a file micro changes is read once more, and remembered then.
    # Results that go elsewhere (-o, --output-dir) must be written: no cache there. The options are
    # remembered as given (each set of them makes one MicroOptions). A run without it does not import it.
    cache = None
    if not no_cache and writes.output is None and writes.output_dir is None:
        from compactcli.run.cache import RunCache

        cache = RunCache.open(
            "micro",
            {**layer, "dialect": inputs.dialect, "on_invalid": inputs.on_invalid},
            {UNCHANGED},
            min_age=writes.min_age,
        )
    # Without the cache every file is read: the worker is made first, as its usage errors come first.
    worker = None if cache is not None else prepare()
    runner.run(
        items,
        worker,
        prepare=prepare,
        jobs=inputs.jobs,
        scheduler=inputs.scheduler,
        on_outcome=report.done,
        cache=cache,
    )
    if made:
        runner.write_manifest(report.outcomes, writes, made[0])
    raise SystemExit(report.finish())


def _analyze(*args, **kwargs):
    """micro_file.analyze, imported when the first file is read: a run the cache answers reads none."""
    from compactcli.pipelines import micro_file

    return micro_file.analyze(*args, **kwargs)
