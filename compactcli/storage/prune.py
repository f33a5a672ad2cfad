"""`compactcli prune`: drop old archives, per transcript, by count (`--keep-last N`) or age
(`--older-than AGE`), or both (then an archive goes only when both rules let it go, as restic's
`forget` combines its keep rules). The manifest loses the dropped lines in one atomic replacement
under its lock; only then are the archive files removed, so a crash leaves at worst an archive that
no manifest line names, never a line naming a missing archive.

The archives of a transcript go only under its one-writer lock (locks.file_lock, as micro, summarize
and restore take it), held from the manifest's rewrite to the last removal: a run on that transcript
(a restore reading the archive it chose) never loses what it reads. A transcript another run holds is
busy (75) and keeps its archives; the others are pruned."""

from __future__ import annotations

import contextlib
import os
import resource
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from compactcli.core.errors import CompactError
from compactcli.storage.locks import file_lock
from compactcli.storage.manifest import ArchiveRecord, parse_record, rewriting_manifest
from compactcli.storage.restore import pristine_index

# Transcripts locked at once (an open descriptor each) for one rewrite of the manifest; more take
# another rewrite, so a folder of thousands of transcripts stays within the limit of open files.
LOCKS_AT_ONCE = 200


def _locks_at_once() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return LOCKS_AT_ONCE if soft == resource.RLIM_INFINITY else max(1, min(LOCKS_AT_ONCE, soft // 4))


AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> timedelta:
    """`90m`, `12h`, `30d`, `2w` (a bare number is days)."""
    number, unit = (text[:-1], text[-1]) if text and text[-1] in AGE_UNITS else (text, "d")
    seconds = float(number) * AGE_UNITS[unit]
    if not seconds >= 0:
        raise ValueError(text)
    return timedelta(seconds=seconds)


@dataclass(frozen=True)
class Rule:
    keep_last: int | None = None
    older_than: timedelta | None = None
    # The pristine original (the file before compactcli first changed it) is kept whatever the rules
    # say, unless asked: it is the one archive no later run can make again.
    drop_pristine: bool = False

    def dropped(self, records: list[ArchiveRecord], now: datetime) -> list[int]:
        """Positions in `records` (one transcript's, oldest first) of the entries to drop."""
        drop = []
        pristine = None if self.drop_pristine else pristine_index(records)
        for position, record in enumerate(records):
            if position == pristine:
                continue
            kept_by_count = self.keep_last is not None and position >= len(records) - self.keep_last
            kept_by_age = self.older_than is not None and now - _when(record) < self.older_than
            if not (kept_by_count or kept_by_age):
                drop.append(position)
        return drop


def _when(record: ArchiveRecord) -> datetime:
    try:
        return datetime.strptime(record.time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)  # no readable time: as old as can be


@dataclass
class Pruned:
    """What prune did (or would do) to one transcript's archives."""

    source: str
    folder: Path
    dropped: list[ArchiveRecord] = field(default_factory=list)
    kept: int = 0
    freed: int = 0  # bytes of archive files removed (or that would be)
    error: CompactError | None = None  # the transcript could not be locked (busy): nothing dropped


def prune_folder(
    folder: Path,
    rule: Rule,
    *,
    selected: Callable[[str], bool],
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[Pruned]:
    """Apply `rule` to the transcripts of one archive folder that `selected` picks (by source path)."""
    now = now or datetime.now(UTC)
    results: list[Pruned] = []
    done: set[str] = set()
    at_once = _locks_at_once()
    while True:
        with rewriting_manifest(folder) as manifest, contextlib.ExitStack() as locks:
            if manifest is None:
                return results
            lines = manifest.content.splitlines(keepends=True)
            by_source: dict[str, list[int]] = defaultdict(list)
            records = [parse_record(line) for line in lines]
            for index, record in enumerate(records):
                if record is not None and record.source not in done and selected(record.source):
                    by_source[record.source].append(index)
            if not by_source:
                return results
            drop: set[int] = set()
            pruned: list[Pruned] = []
            held: set[str] = set()
            for source in sorted(by_source):
                if len(held) >= at_once:
                    break  # the rest in the next rewrite
                done.add(source)
                indexes = by_source[source]
                gone = [indexes[p] for p in rule.dropped([records[i] for i in indexes], now)]
                result = Pruned(source, folder, [records[i] for i in gone], len(indexes) - len(gone))
                if gone and not dry_run:
                    try:
                        _lock(locks, source, held)
                    except CompactError as exc:  # busy: a run on it reads or writes its archives
                        result = Pruned(source, folder, kept=len(indexes), error=exc)
                        gone = []
                drop.update(gone)
                result.freed = sum(manifest.archive_size(record.archive) for record in result.dropped)
                pruned.append(result)
            results.extend(pruned)
            if drop and not dry_run:
                kept = [
                    line if line.endswith(b"\n") else line + b"\n"
                    for i, line in enumerate(lines)
                    if i not in drop
                ]
                manifest.replace(kept)
                # only now: a crash before this leaves archives no line names, never a line naming nothing
                for result in pruned:
                    for record in result.dropped:
                        manifest.remove_archive(record.archive)


def _lock(locks: contextlib.ExitStack, source: str, held: set[str]) -> None:
    """Hold the transcript's one-writer lock until `locks` closes. A transcript that is gone locks its
    folder instead (locks.file_lock, as a restore recreating it does): once for all such in it."""
    real = os.path.realpath(source)
    target = real if os.path.lexists(real) else os.path.dirname(real)
    if target not in held:
        locks.enter_context(file_lock(Path(source)))
        held.add(target)
