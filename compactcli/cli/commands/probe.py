"""`compactcli probe`: which facts of the replaced span survive a summary; a CI gate for summarizers."""

from __future__ import annotations

from collections.abc import Iterator

import click

from compactcli.cli.options import InputPath, dialect_option, format_options, on_invalid_option
from compactcli.core.errors import CHECK_FAILED, EXIT_CODES_HELP, CompactError, bad_shapes_are_bad_input
from compactcli.report import COMMAND_FORMATS, FAILED, Figures, Outcome, Report

PROBED = "probed"

HELP = """Check how much of what a summary replaced survives in it.

From the part of ORIGINAL that SUMMARIZED replaced (the records SUMMARIZED does not carry verbatim,
when it holds a compaction; else the whole original conversation) probe extracts file paths,
commands, error lines, URLs, identifiers, numbers and the user's instructions, and looks each up
anywhere in SUMMARIZED (in a pi or Qwen Code session, whose compaction is appended: from the last one
on, what the agent resumes with). It reports, per category and overall, the retention (survived / total) and
what is missing. Deterministic and offline: it works for digest and model summaries alike.
Either file may be '-' (stdin). --min-retention R makes it a CI gate for summarizer prompts and
models: exit 1 when the overall retention is below R.

\b
Examples:
  compactcli probe session.jsonl <(compactcli summarize -o - session.jsonl)
  compactcli summarize -o - session.jsonl | compactcli probe session.jsonl -
"""


def table(result) -> str:
    rows = [f"{'category':<18}{'survived':>9}{'total':>7}{'retention':>11}"]
    for name, retention in result.categories.items():
        rows.append(f"{name:<18}{retention.survived:>9}{retention.total:>7}{retention.score:>11.2f}")
    rows.append(f"{'overall':<18}{result.survived:>9}{result.total:>7}{result.score:>11.2f}")
    from compactcli.pipelines.probe import CONTINUATION, LONG_TAIL

    # what a continuation needs, apart from the long tail of names and numbers
    for label, names in (("continuation", CONTINUATION), ("long tail", LONG_TAIL)):
        part = result.group(names)
        rows.append(f"{label:<18}{part['survived']:>9}{part['total']:>7}{part['retention']:>11.2f}")
    for name, retention in result.categories.items():
        for fact in retention.missing:
            rows.append(f"missing {name}: {fact}")
    return "\n".join(rows)


@click.command(help=HELP, epilog=EXIT_CODES_HELP + " Here 1: retention below --min-retention.")
@click.argument("original", type=InputPath(allow_dash=True, exists=True, dir_okay=False))
@click.argument("summarized", type=InputPath(allow_dash=True, exists=True, dir_okay=False))
@dialect_option()
@on_invalid_option("error: a bad line fails (exit 65); keep: pass over bad lines.")
@format_options(COMMAND_FORMATS["probe"])
@click.option(
    "--min-retention",
    type=click.FloatRange(0, 1),
    default=None,
    metavar="R",
    help="Exit 1 when the overall retention is below R (0 to 1).",
)
def probe(original: str, summarized: str, dialect, on_invalid: str, output_format: str, min_retention):
    from compactcli.pipelines.probe import probe as measure
    from compactcli.pipelines.transcript import STDIN, STDIN_NAME, open_input  # not for --help

    if original == summarized == "-":
        raise click.UsageError("only one of ORIGINAL and SUMMARIZED can be stdin")
    figures = ProbeFigures()
    report = Report("probe", figures, output_format=output_format)
    name = STDIN_NAME if original == STDIN else original
    try:
        with (
            bad_shapes_are_bad_input(name),
            open_input(original) as (source, name),
            open_input(summarized) as (result, summarized_name),
        ):
            outcome = measure(source, name, result, summarized_name, fmt=dialect, on_invalid=on_invalid)
    except CompactError as exc:
        report.done(Outcome(name, FAILED, exc.exit_code, str(exc)))
        raise SystemExit(report.finish()) from None
    probed = Outcome(name, PROBED, stats={"summarized": summarized_name, **outcome.to_json()})
    if min_retention is not None and outcome.score < min_retention:
        probed.exit_code = CHECK_FAILED
        probed.message = f"retention {outcome.score:.2f} is below --min-retention {min_retention}"
    figures.tables[name] = table(outcome)
    report.done(probed)
    raise SystemExit(report.finish())


class ProbeFigures(Figures):
    """probe's report: the retention table on stdout (or the JSON object), and no summary line but the
    reason a --min-retention gate failed."""

    def __init__(self) -> None:
        self.tables: dict[str, str] = {}

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        if outcome.path in self.tables:
            yield self.tables[outcome.path]

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        return "\n".join(o.message for o in outcomes if o.status == PROBED and o.message)
