"""replay --compare: one transcript replayed under several strategies, and what each costs
(docs/design.md, "replay --compare").

A strategy is a row of `STRATEGIES`: which micro options it adds to the ones given (None: no micro at
all) and whether it auto-compacts (then it is replayed once per threshold). A new micro strategy is one
line here. What a replay sends and costs is read from its result by `figures`; the replay itself is
compactcli.layers.replay, run with `costs=True`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compactcli.counting.pricing import Bill, Price
from compactcli.layers.micro import Cut, MicroOptions

if TYPE_CHECKING:  # the replay is not loaded by `replay --help`, which lists STRATEGIES
    from compactcli.layers.replay import ReplayResult


@dataclass(frozen=True)
class Strategy:
    name: str
    micro: dict[str, Any] | None  # MicroOptions fields set over the given options; None: no micro
    summarize: bool  # auto-compacts (summary) when the context exceeds the threshold
    what: str  # one line for --help and the docs


# --drop-progress and --drop-sidechains are left out: replay never sends those records, so they would
# read like `micro`.
STRATEGIES: tuple[Strategy, ...] = (
    Strategy("none", None, False, "the transcript as recorded: no micro, no summary"),
    Strategy("micro", {}, False, "micro with the given options (default --keep 3)"),
    Strategy("dedupe-reads", {"dedupe_reads": True}, False, "micro and --dedupe-reads"),
    Strategy("keep-images", {"keep_images": 2}, False, "micro and --keep-images 2"),
    Strategy("truncate", {"truncate": Cut(200, 200)}, False, "micro and --truncate 200:200"),
    Strategy("drop-thinking", {"drop_thinking": True}, False, "micro and --drop-thinking"),
    Strategy("summarize", None, True, "auto-compaction with a summary at the threshold, no micro"),
    Strategy("hybrid", {}, True, "micro, then auto-compaction at the threshold"),
)


@dataclass(frozen=True)
class Run:
    """One replay of the comparison: a strategy, at a threshold when it compacts."""

    strategy: Strategy
    threshold: int | None  # None: never auto-compacts

    @property
    def replay_threshold(self) -> int:
        """The replay's threshold: one no context reaches when the strategy never auto-compacts."""
        return self.threshold if self.threshold is not None else sys.maxsize

    @property
    def run_micro(self) -> bool:
        return self.strategy.micro is not None

    def micro_options(self, given: MicroOptions) -> MicroOptions:
        return dataclasses.replace(given, **(self.strategy.micro or {}))


def runs(thresholds: Sequence[int], strategies: Iterable[Strategy] = STRATEGIES) -> list[Run]:
    """Every strategy once; those that compact once per threshold, in the order given."""
    out: list[Run] = []
    for strategy in strategies:
        if strategy.summarize:
            out.extend(Run(strategy, threshold) for threshold in thresholds)
        else:
            out.append(Run(strategy, None))
    return out


def bill(result: ReplayResult) -> Bill:
    """What the replayed model calls and summaries sent and received."""
    calls = [row for row in result.rows if row.is_call]
    from compactcli.layers.replay import RECORDED

    simulated = [c for c in result.compactions if c.kind != RECORDED]  # recorded: summarized earlier
    return Bill(
        input_tokens=sum(row.tokens_after for row in calls),
        cached_tokens=sum(row.cached for row in calls),
        output_tokens=result.output_tokens,
        summarizer_input_tokens=sum(c.summarized_tokens for c in simulated),
        summarizer_output_tokens=sum(c.summary_tokens for c in simulated),
    )


def figures(run: Run, result: ReplayResult, price: Price) -> dict[str, Any]:
    """One row of the comparison (the JSON stats and the table's columns)."""
    spent = bill(result)
    return {
        "strategy": run.strategy.name,
        "threshold": run.threshold,
        "calls": result.calls,
        "compactions": result.by_kind,
        "cleared": result.cleared,
        "peak_sent_tokens": result.peak_sent,
        "input_tokens": spent.input_tokens,
        "cached_input_tokens": spent.cached_tokens,
        "output_tokens": spent.output_tokens,
        "summarizer_calls": result.summarizer_calls,
        "summarizer_input_tokens": spent.summarizer_input_tokens,
        "summarizer_output_tokens": spent.summarizer_output_tokens,
        "cost": round(spent.cost(price), 6),
        "contexts": [row.tokens_after for row in result.rows if row.is_call],
    }
