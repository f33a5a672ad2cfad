"""Options shared by the commands that read transcripts, so every command spells them the same way."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from compactcli import dialects
from compactcli.transcript import ON_INVALID

if TYPE_CHECKING:
    from compactcli.rewrite import FileSettings


@dataclass(frozen=True)
class Inputs:
    """What `input_options` gathered: which files, how to read them, how to report."""

    paths: tuple[str, ...]
    glob: str
    fmt: str | None
    on_invalid: str
    jobs: int
    verbose: bool
    quiet: bool
    as_json: bool


@dataclass(frozen=True)
class Writes:
    """What `write_options` gathered: where results go and whether to write at all."""

    output: str | None
    archive_dir: str | None
    check: bool
    diff: bool
    dry_run: bool
    min_age: float

    @property
    def preview(self) -> bool:
        return self.check or self.diff or self.dry_run

    def settings(self, command: str, options: dict) -> FileSettings:
        from compactcli.rewrite import FileSettings  # only commands that write load rewrite and storage

        return FileSettings(
            command=command,
            options=options,
            output=self.output,
            archive_dir=self.archive_dir,
            check=self.check,
            diff=self.diff,
            dry_run=self.dry_run,
            min_age=self.min_age,
        )


def _decorated(func, decorators: list):
    """`func` under `decorators`, listed top to bottom as they would be written above a def."""
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def _gathered(func, name: str, cls):
    """Call `func` with the options of `cls` passed as one `name=cls(...)` argument."""
    fields = tuple(cls.__dataclass_fields__)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        kwargs[name] = cls(**{field: kwargs.pop(field) for field in fields})
        return func(*args, **kwargs)

    return wrapper


def input_options(func=None, *, format_is_dialect: bool = True):
    """Paths, discovery, dialect and bad-input handling.

    The dialect is `--dialect`; `--format` names it too (as DESIGN.md spells it), except in commands
    whose `--format` is their output format (estimate).
    """
    if func is None:
        return functools.partial(input_options, format_is_dialect=format_is_dialect)
    dialect_flags = ("--dialect", "--format") if format_is_dialect else ("--dialect",)

    options = [
        click.argument("paths", nargs=-1, required=True, type=click.Path(allow_dash=True, exists=True)),
        click.option(
            "--glob", "glob", default="*.jsonl", show_default=True, help="Files to pick in folders."
        ),
        click.option(
            *dialect_flags,
            "fmt",
            type=click.Choice(dialects.NAMES),
            default=None,
            help="Transcript dialect (default: detected per file).",
        ),
        click.option(
            "--on-invalid",
            type=click.Choice(ON_INVALID),
            default="error",
            show_default=True,
            help="error: a bad line fails its file (exit 65); keep: pass bad lines through unchanged.",
        ),
        click.option("-j", "--jobs", type=click.IntRange(1), default=1, show_default=True),
        click.option("-v", "--verbose", is_flag=True, help="A line per file on stderr."),
        click.option("-q", "--quiet", is_flag=True, help="No summary line."),
        click.option("--json", "as_json", is_flag=True, help="One JSON object per file (stdout)."),
    ]
    return _decorated(_gathered(func, "inputs", Inputs), options)


def write_options(func):
    """Where results go and how carefully."""

    options = [
        click.option(
            "-o",
            "--output",
            type=click.Path(allow_dash=True, dir_okay=False),
            default=None,
            help="Write to this file ('-' = stdout) instead of in place; one input only.",
        ),
        click.option(
            "--archive-dir",
            type=click.Path(file_okay=False),
            default=None,
            help="Where originals are archived (default: .transcripts/ beside each file).",
        ),
        click.option("--check", is_flag=True, help="Change nothing; exit 1 if something would change."),
        click.option("--diff", is_flag=True, help="Change nothing; print a unified diff."),
        click.option("--dry-run", is_flag=True, help="Change nothing; list what would change."),
        click.option(
            "--min-age",
            type=click.FloatRange(0),
            default=0,
            help="Skip files modified less than SECONDS ago (an agent may still be writing).",
        ),
    ]
    return _decorated(_gathered(func, "writes", Writes), options)
