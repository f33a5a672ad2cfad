"""What a command gathered from its options about the files of a run: which to read, where results go,
and how each file is treated (cli/options.py builds these; the runner and rewrite read them)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Inputs:
    """What `input_options` gathered: which files, how to read them, how to report."""

    paths: tuple[str, ...]
    glob: str
    dialect: str | None
    on_invalid: str
    jobs: int
    scheduler: str | None
    verbose: bool
    quiet: bool
    output_format: str  # --format, or json with --json


@dataclass(frozen=True)
class FileSettings:
    """How rewrite.process treats each file: built from `Writes` here, so that a run which writes
    nothing (the cache answered every file) need not import rewrite and storage."""

    command: str
    options: dict = field(default_factory=dict)  # recorded in the manifest
    output: str | None = None  # None: in place (stdin goes to stdout); "-": stdout; else a path
    archive_dir: str | None = None
    check: bool = False
    diff: bool = False
    dry_run: bool = False
    min_age: float = 0.0


@dataclass(frozen=True)
class Writes:
    """What `write_options` gathered: where results go and whether to write at all."""

    output: str | None
    output_dir: str | None
    archive_dir: str | None
    check: bool
    diff: bool
    dry_run: bool
    min_age: float

    @property
    def preview(self) -> bool:
        return self.check or self.diff or self.dry_run

    def settings(self, command: str, options: dict) -> FileSettings:
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
