"""What a batch run tells: previews and --json on stdout, per-file lines and the summary on stderr."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import click

from compactcli.batch import BUSY, CHANGED, FAILED, SKIPPED, UNCHANGED, WOULD_CHANGE, Outcome


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
