"""summarize --verify: each summarized file is probed against its original (docs/design.md, "probe"), and
the retention joins its report; with --min-retention R a file below R exits 1."""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

from compactcli.core.errors import CHECK_FAILED, CompactError
from compactcli.pipelines.transcript import open_input
from compactcli.report import CHANGED, Outcome


def verifying(
    done: Callable[[Outcome], None],
    *,
    output: str | None,
    min_retention: float | None,
    fmt: str | None,
    on_invalid: str,
) -> Callable[[Outcome], None]:
    """`done` (the report's), called after a summarized file's retention is measured. `output` is -o's
    file, if any (stdout cannot be read back: the command refuses --verify with -o -)."""

    def verify(outcome: Outcome) -> None:
        if outcome.status == CHANGED and "retention" not in outcome.stats:  # not measured before the write
            try:
                _measure(outcome, output, min_retention, fmt, on_invalid)
            except CompactError as err:
                outcome.exit_code = err.exit_code
                outcome.message = f"--verify: {err}"
        done(outcome)

    return verify


def _measure(
    outcome: Outcome, output: str | None, min_retention: float | None, fmt: str | None, on_invalid: str
) -> None:
    from compactcli.pipelines.probe import probe

    stats = outcome.stats
    original = stats.get("archive") or outcome.path  # --output-dir leaves the original where it was
    summarized = stats.get("output") or output or outcome.path
    with open_input(original) as (before, before_name), open_input(summarized) as (after, after_name):
        result = probe(before, before_name, after, after_name, fmt=fmt, on_invalid=on_invalid)
    stats["retention"] = round(result.score, 4)
    stats["retention_by_category"] = {name: round(r.score, 4) for name, r in result.categories.items()}
    if min_retention is not None and result.score < min_retention:
        outcome.exit_code = CHECK_FAILED
        outcome.message = f"retention {result.score:.2f} is below --min-retention {min_retention}"


def measure_into(
    stats: dict, source: BinaryIO, name: str, written: str, min_retention: float, on_invalid: str
) -> str | None:
    """Probe the new content (`written`, not yet in place) against the original (`source`, read from its
    start); the retention joins `stats`. Below `min_retention`: why the original is kept."""
    from compactcli.pipelines.probe import probe

    source.seek(0)
    dialect = stats.get("dialect")
    with open(written, "rb") as after:
        result = probe(source, name, after, name, fmt=dialect, on_invalid=on_invalid)
    stats["retention"] = round(result.score, 4)
    stats["retention_by_category"] = {k: round(r.score, 4) for k, r in result.categories.items()}
    if result.score < min_retention:
        return (
            f"{name}: retention {result.score:.2f} is below --min-retention {min_retention}: "
            "the original is kept; nothing written or archived"
        )
    return None
