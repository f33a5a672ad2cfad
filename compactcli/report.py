"""What a run over many files tells: how each file ended (an Outcome), the exit code of the run, previews
and --json on stdout, per-file lines and the summary on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import click

from compactcli import errors

CHANGED, UNCHANGED, WOULD_CHANGE, FAILED, BUSY, SKIPPED = (
    "changed",
    "unchanged",
    "would-change",
    "failed",
    "busy",
    "skipped",
)

# When files end differently, the exit code is the most serious one.
SEVERITY = (errors.IO_ERR, errors.DATA_ERR, errors.UNAVAILABLE, errors.BUSY, errors.CHECK_FAILED)


@dataclass
class Outcome:
    path: str
    status: str
    exit_code: int = errors.OK
    message: str = ""
    stats: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in ("", {})}


def exit_code(outcomes: Iterable[Outcome]) -> int:
    """The most serious exit code of the files, in the order of SEVERITY; 0 when all went well."""
    codes = {o.exit_code for o in outcomes}
    for code in SEVERITY:
        if code in codes:
            return code
    return errors.OK


def summary(outcomes: list[Outcome], *, verb: str = "compacted", check: bool = False) -> str:
    """One line such as `3 files compacted, 5 unchanged, 1 failed`."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    changed = counts.get(WOULD_CHANGE if check else CHANGED, 0)
    head = f"{changed} file{'s' if changed != 1 else ''} {'would be ' if check else ''}{verb}"
    parts = [head, f"{counts.get(UNCHANGED, 0)} unchanged"]
    for status, label in ((SKIPPED, "skipped"), (BUSY, "busy"), (FAILED, "failed")):
        if counts.get(status):
            parts.append(f"{counts[status]} {label}")
    return ", ".join(parts)


@dataclass
class Reporter:
    verbose: bool = False
    quiet: bool = False
    as_json: bool = False
    stdout_has_data: bool = False  # then --json goes to stderr

    def outcome(self, outcome: Outcome) -> None:
        preview = outcome.stats.pop("preview", None)
        if preview:
            click.echo(preview, nl=False)
        if self.as_json:
            stream = sys.stderr if self.stdout_has_data else sys.stdout
            print(_json_text(outcome.to_json()), file=stream, flush=True)
        if outcome.status in (FAILED, BUSY):
            click.echo(f"error: {outcome.message}", err=True)
        elif self.verbose and not self.quiet:
            click.echo(_describe(outcome), err=True)

    def summary(self, line: str) -> None:
        if not self.quiet:
            click.echo(line, err=True)


def _json_text(obj: dict) -> str:
    """JSON text that any stream can take: a file name that is not UTF-8 is escaped, not fatal."""
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj)
    return text


def _describe(outcome: Outcome) -> str:
    stats = outcome.stats
    if outcome.status == CHANGED:
        detail = f"cleared {stats.get('cleared', 0)} tool results"
        if "bytes_before" in stats:
            detail += f", {stats['bytes_before']:,} -> {stats['bytes_after']:,} bytes"
        return f"compacted {outcome.path} ({detail})"
    if outcome.status == WOULD_CHANGE:
        return f"would compact {outcome.path} (would clear {stats.get('cleared', 0)} tool results)"
    if outcome.status == SKIPPED:
        return f"skipped {outcome.message}"
    if outcome.status == UNCHANGED:
        return f"unchanged {outcome.path}"
    return f"{outcome.status} {outcome.path}"
