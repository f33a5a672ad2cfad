"""`compactcli prune`: drop old archives, per transcript, by count (`--keep-last N`) or age
(`--older-than AGE`), or both (then an archive goes only when both rules let it go, as restic's
`forget` combines its keep rules). The manifest loses the dropped lines in one atomic replacement
under its lock; only then are the archive files removed, so a crash leaves at worst an archive that
no manifest line names, never a line naming a missing archive."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from compactcli import storage
from compactcli.storage import ArchiveRecord

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

    def dropped(self, records: list[ArchiveRecord], now: datetime) -> list[int]:
        """Positions in `records` (one transcript's, oldest first) of the entries to drop."""
        drop = []
        for position, record in enumerate(records):
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
    with storage.rewriting_manifest(folder) as manifest:
        if manifest is None:
            return []
        lines = manifest.content.splitlines(keepends=True)
        by_source: dict[str, list[int]] = defaultdict(list)
        records = [storage.parse_record(line) for line in lines]
        for index, record in enumerate(records):
            if record is not None and selected(record.source):
                by_source[record.source].append(index)
        results, drop = [], set()
        for source in sorted(by_source):
            indexes = by_source[source]
            gone = [indexes[p] for p in rule.dropped([records[i] for i in indexes], now)]
            drop.update(gone)
            result = Pruned(source, folder, [records[i] for i in gone], len(indexes) - len(gone))
            result.freed = sum(manifest.archive_size(record.archive) for record in result.dropped)
            results.append(result)
        if drop and not dry_run:
            kept = [
                line if line.endswith(b"\n") else line + b"\n"
                for i, line in enumerate(lines)
                if i not in drop
            ]
            manifest.replace(kept)
            # only now: a crash before this leaves archives no line names, never a line naming nothing
            for result in results:
                for record in result.dropped:
                    manifest.remove_archive(record.archive)
    return results
