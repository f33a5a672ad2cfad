"""What every command tells, in one place: how each file ended (an Outcome), the exit code of the run,
the one-line summary, per-file `-v` lines, and the output formats (text, json, csv, github).

A command reports through one `Report`, with a small per-command `Figures` part that knows how its
numbers read. Where each piece goes (docs/json-output.md has the JSON field list):

- stdout: the command's data lines (tables, violations, annotations, the --dry-run list) or one JSON
  object per file (the --dry-run list is its `changes`); these go to stderr instead when stdout carries
  data: a transcript (-o -, stdin) or a --diff. One stream, one kind of content: under --format github
  stdout holds workflow commands only, so the --dry-run list (lines for a person) goes to stderr.
- stderr: `error: ...` for each file that failed, `-v` lines, `would compact PATH` under --check, and
  the summary line (not with -q).
- the exit code: the most serious of the files' codes, in the order of SEVERITY.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import IO

import click

from compactcli.core import errors

CHANGED, UNCHANGED, WOULD_CHANGE, FAILED, BUSY, SKIPPED = (
    "changed",
    "unchanged",
    "would-change",
    "failed",
    "busy",
    "skipped",
)

# When files end differently, the exit code is the most serious one: an I/O error (74) before bad data
# (65), an unavailable API (69), a busy file (75), then a failed check (1).
SEVERITY = (errors.IO_ERR, errors.DATA_ERR, errors.UNAVAILABLE, errors.BUSY, errors.CHECK_FAILED)

# Output formats (--format); --json is --format json. Each command accepts those that apply to it,
# listed here and nowhere else; the first is its default. json streams one object per file as each
# ends (JSON lines); json-document prints one document with them all and the totals, at the end.
TEXT, TABLE, JSON, CSV, GITHUB, HTML = "text", "table", "json", "csv", "github", "html"
JSON_DOCUMENT = "json-document"
JSON_FORMATS = (JSON, JSON_DOCUMENT)
COMMAND_FORMATS = {
    "micro": (TEXT, JSON, JSON_DOCUMENT, GITHUB),
    "summarize": (TEXT, JSON, JSON_DOCUMENT, GITHUB),
    "validate": (TEXT, JSON, JSON_DOCUMENT, GITHUB),
    "estimate": (TABLE, JSON, JSON_DOCUMENT, CSV, GITHUB, HTML),
    "replay": (TEXT, JSON, JSON_DOCUMENT, TABLE, CSV),
    "restore": (TEXT, JSON, JSON_DOCUMENT),
    "prune": (TEXT, JSON, JSON_DOCUMENT),
    "probe": (TABLE, JSON, JSON_DOCUMENT),
}

# The JSON object of one file, the same keys in every command (docs/json-output.md).
SCHEMA_VERSION = 1
JSON_FIELDS = ("schema_version", "command", "path", "status", "exit_code", "message", "stats")
# The json-document of a run: these keys, `files` holding each file's object (docs/json-output.md).
DOCUMENT_FIELDS = ("schema_version", "command", "exit_code", "files", "totals")


@dataclass
class Outcome:
    path: str
    status: str
    exit_code: int = errors.OK
    message: str = ""
    stats: dict = field(default_factory=dict)
    # What the file looked like when it was read, when the outcome may be remembered (see cache.py).
    stamp: tuple[int, ...] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in ("", {}) and k != "stamp"}


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


def json_object(command: str, outcome: Outcome) -> dict:
    """The --json object of one outcome: JSON_FIELDS, in that order, always all of them."""
    stats = {k: v for k, v in outcome.stats.items() if k != "preview"}
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "path": outcome.path,
        "status": outcome.status,
        "exit_code": outcome.exit_code,
        "message": outcome.message,
        "stats": stats,
    }


def json_text(obj: dict) -> str:
    """JSON text that any stream can take: a file name that is not UTF-8 is escaped, not fatal."""
    import json  # only --json needs it

    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj)
    return text


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str, message: str, *, file: str | None = None, line: int | None = None, title: str = ""
) -> str:
    """A GitHub Actions workflow command such as `::error file=a.jsonl,title=...::message`."""
    props = []
    if file is not None:
        props.append(f"file={_escape_property(file)}")
    if line is not None:
        props.append(f"line={line}")
    if title:
        props.append(f"title={_escape_property(title)}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{_escape_data(message)}"


def line_of(message: str, path: str) -> int | None:
    """The line of a `path:line: message` error."""
    rest = message[len(path) + 1 :] if message.startswith(path + ":") else ""
    number = rest.partition(":")[0]
    return int(number) if number.isdigit() else None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Figures:
    """A command's own part of the report: how its outcomes read. Commands subclass it and override
    what they say differently; the defaults speak of files that are `verb` (e.g. compacted)."""

    verb = "compacted"  # in the summary line: "3 files compacted"
    doing = "compact"  # in per-file lines: "would compact PATH"

    def describe(self, outcome: Outcome) -> str:
        """The `-v` line of one file (and, under --check, the line naming a file that would change)."""
        if outcome.status == WOULD_CHANGE:
            return f"would {self.doing} {outcome.path}"
        if outcome.status == SKIPPED:
            return f"skipped {outcome.message}"
        return f"{outcome.status} {outcome.path}"

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        return summary(outcomes, verb=self.verb, check=preview)

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        """The data lines of one file in `output_format` (not json): GitHub annotations by default."""
        if output_format != GITHUB:
            return
        if outcome.status in (FAILED, BUSY):
            line = line_of(outcome.message, outcome.path)
            yield annotation("error", outcome.message, file=outcome.path, line=line, title="compactcli")
        elif outcome.status == WOULD_CHANGE and outcome.exit_code == errors.CHECK_FAILED:
            text = self.describe(outcome)
            yield annotation("error", text, file=outcome.path, title=f"compactcli {self.doing}")

    def finish(self, outcomes: list[Outcome], output_format: str) -> Iterator[str]:
        """Data lines after the last file (a table's total)."""
        return iter(())

    def totals(self, outcomes: list[Outcome]) -> dict:
        """The json-document's `totals`: the files by status, and each of `summed` added up over them."""
        by_status: dict[str, int] = {}
        for outcome in outcomes:
            by_status[outcome.status] = by_status.get(outcome.status, 0) + 1
        totals: dict = {"files": len(outcomes), "by_status": by_status}
        for name in self.summed:
            values = [o.stats[name] for o in outcomes if _is_number(o.stats.get(name))]
            if values:
                totals[name] = round(sum(values), 6)
        return totals

    summed: tuple[str, ...] = ()  # stats added up in the json-document's totals


@dataclass
class Report:
    """Tells each outcome as it comes (`done`), then the summary; `finish` returns the exit code."""

    command: str
    figures: Figures = field(default_factory=Figures)
    output_format: str = TEXT
    verbose: bool = False
    quiet: bool = False
    check: bool = False  # --check: name each file that would change
    preview: bool = False  # --check/--diff/--dry-run: the summary counts what would change
    stdout_has_data: bool = False  # a transcript or a --diff: then data lines and JSON go to stderr
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def data(self) -> IO[str]:
        return sys.stderr if self.stdout_has_data else sys.stdout

    @property
    def listing(self) -> IO[str]:
        """Where the --dry-run list goes: stdout, unless stdout holds another kind (a transcript, a
        --diff, GitHub workflow commands)."""
        return sys.stderr if self.stdout_has_data or self.output_format == GITHUB else sys.stdout

    def done(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        preview = outcome.stats.pop("preview", None)
        if self.output_format not in JSON_FORMATS:  # in JSON, the --dry-run list is the object's `changes`
            for change in outcome.stats.pop("changes", ()):
                where = f"{outcome.path}:{change['line']}" if change["line"] is not None else outcome.path
                click.echo(f"{where}: {change['change']}", file=self.listing)
        if preview:
            click.echo(preview, nl=False)
        if self.output_format == JSON:
            print(json_text(json_object(self.command, outcome)), file=self.data, flush=True)
        elif self.output_format != JSON_DOCUMENT:
            for line in self.figures.lines(outcome, self.output_format):
                click.echo(line, file=self.data)
        if outcome.status in (FAILED, BUSY):
            click.echo(f"error: {outcome.message}", err=True)
        elif self.quiet:
            return
        elif self.verbose or (self.check and outcome.status == WOULD_CHANGE):
            line = self.figures.describe(outcome)
            if line:
                click.echo(line, err=True)

    def finish(self) -> int:
        code = exit_code(self.outcomes)
        if self.output_format == JSON_DOCUMENT:
            print(json_text(self.document(code)), file=self.data, flush=True)
        elif self.output_format != JSON:
            for line in self.figures.finish(self.outcomes, self.output_format):
                click.echo(line, file=self.data)
        line = self.figures.summary(self.outcomes, self.preview)
        if line and not self.quiet:
            click.echo(line, err=True)
        return code

    def document(self, code: int) -> dict:
        """The json-document: DOCUMENT_FIELDS, each file's --json object in `files`, in the order they end."""
        return {
            "schema_version": SCHEMA_VERSION,
            "command": self.command,
            "exit_code": code,
            "files": [json_object(self.command, outcome) for outcome in self.outcomes],
            "totals": self.figures.totals(self.outcomes),
        }
