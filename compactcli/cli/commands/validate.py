"""`compactcli validate`: is each transcript still a conversation the Messages API accepts?"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from functools import partial
from typing import BinaryIO

import click

from compactcli.cli.options import cache_option, input_options
from compactcli.core.errors import CHECK_FAILED, EXIT_CODES_HELP
from compactcli.layers.validate import RULES, Validator
from compactcli.pipelines.transcript import ConversationLines, dialect_for, open_input
from compactcli.report import BUSY, COMMAND_FORMATS, FAILED, TEXT, Figures, Outcome, Report, annotation
from compactcli.run.settings import Inputs

VALID, INVALID = "valid", "invalid"


def check_stream(source: BinaryIO, path: str, fmt: str | None, on_invalid: str) -> Outcome:
    """Validate one open, seekable file, its records in the order of its conversations."""
    dialect = dialect_for(source, path, fmt)
    validator = Validator(dialect)
    unreadable = 0
    reader = ConversationLines(source, path, on_invalid, dialect)
    for line in reader:
        if line.record is not None:
            validator.add(line.number, line.record)
        elif line.raw.strip():
            unreadable += 1  # passed over with --on-invalid keep
    violations = validator.finish()
    stats: dict = {
        "dialect": dialect.name,
        "lines": reader.lines,
        "messages": validator.messages,
        "conversations": len(validator.conversations),
        "unreadable_lines": unreadable,
        "violations": [{"line": v.line, "rule": v.rule, "message": v.message} for v in violations],
    }
    if violations:
        return Outcome(path, INVALID, CHECK_FAILED, f"{len(violations)} violations", stats)
    return Outcome(path, VALID, stats=stats)


def check_file(item: str, *, fmt: str | None, on_invalid: str) -> Outcome:
    with open_input(item) as (source, name):
        return check_stream(source, name, fmt, on_invalid)


def violation_lines(outcome: Outcome) -> list[str]:
    """`path:line: rule: message`, as compilers and linters print them."""
    return [
        f"{outcome.path}:{v['line']}: {v['rule']}: {v['message']}"
        for v in outcome.stats.get("violations", ())
    ]


class ValidateFigures(Figures):
    verb = "valid"

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        """One line such as `2 files valid, 1 invalid, 1 failed`."""
        counts: dict[str, int] = {}
        for outcome in outcomes:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        valid = counts.get(VALID, 0)
        parts = [f"{valid} file{'s' if valid != 1 else ''} valid", f"{counts.get(INVALID, 0)} invalid"]
        for status in (BUSY, FAILED):
            if counts.get(status):
                parts.append(f"{counts[status]} {status}")
        return ", ".join(parts)

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        if output_format == TEXT:
            yield from violation_lines(outcome)
            return
        for v in outcome.stats.get("violations", ()):
            yield annotation("error", v["message"], file=outcome.path, line=v["line"], title=v["rule"])
        yield from super().lines(outcome, output_format)


# Help pages keep to 80 columns; \b blocks are not wrapped by click, so the rules are wrapped here.
_RULES_HELP = "\n".join(
    textwrap.fill(f"{name}: {meaning}", 76, initial_indent="  ", subsequent_indent="    ")
    for name, meaning in RULES.items()
)

HELP = f"""Check that transcripts are still valid Messages API conversations.

PATHS are files, folders (searched for --glob) or '-' for stdin; none: the session folders of
the agents found here (~/.claude/projects, $CODEX_HOME/sessions, ~/.pi/agent/sessions), named
on stderr. Nothing is changed.
Each violation
is printed on stdout as `path:line: rule: message` (--format github: as GitHub annotations; --json:
one object per file instead); the summary goes to stderr.

Consecutive messages of one role are one turn, as the API combines them. Each conversation is
checked on its own; for Claude Code logs that is the main one from its last compaction on, and each
sub-agent conversation. In a Codex rollout (from its last `compacted` record) every call is answered
once, after it, by an output with its call_id, before the next user message.

\b
Rules:
{_RULES_HELP}

\b
Accepted on purpose:
  a conversation that starts with an assistant message (the first-party
    API takes it; some platforms such as Amazon Bedrock do not);
  tool uses of the last assistant turn without results (the next call
    supplies them);
  Codex calls in flight when their turn was aborted (Codex answers them
    itself);
  OpenAI system and developer messages anywhere but inside a run of tool
    messages.

\b
Examples:
  compactcli validate ~/.claude/projects
  compactcli validate --json transcripts/ > violations.jsonl
  compactcli micro -o - session.jsonl | compactcli validate -
"""


@click.command(help=HELP, epilog=EXIT_CODES_HELP)
@input_options(formats=COMMAND_FORMATS["validate"], agents_folders=True)
@cache_option()
def validate(inputs: Inputs, no_cache: bool):
    from compactcli.run import runner  # runner and cache: not for --help
    from compactcli.run.cache import RunCache

    items = runner.find_inputs(inputs.paths, inputs.glob)
    report = Report(
        "validate",
        ValidateFigures(),
        output_format=inputs.output_format,
        verbose=inputs.verbose,
        quiet=inputs.quiet,
        stdout_has_data=False,
    )
    worker = partial(check_file, fmt=inputs.dialect, on_invalid=inputs.on_invalid)
    cache = RunCache.open("validate", dict(worker.keywords), {VALID, INVALID}, enabled=not no_cache)
    runner.run(
        items, worker, jobs=inputs.jobs, scheduler=inputs.scheduler, on_outcome=report.done, cache=cache
    )
    raise SystemExit(report.finish())
