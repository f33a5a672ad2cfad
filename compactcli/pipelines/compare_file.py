"""replay --compare on one transcript: a replay per strategy and threshold, then one table (text or
CSV), JSON objects through the shared Report, and a chart of the contexts. The logic is
compactcli.layers.compare; nothing is written but the optional PNG."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compactcli.counting.pricing import Price
from compactcli.dialects import Dialect
from compactcli.layers.compare import Run, figures
from compactcli.layers.micro import MicroOptions
from compactcli.layers.replay import Replay
from compactcli.layers.summarize import Summarizer
from compactcli.pipelines.replay_file import Source
from compactcli.report import CSV, TABLE, TEXT, Figures, Outcome, chart

if TYPE_CHECKING:
    from compactcli.dialects.base import ModelView

COMPARED = "compared"
NOT_ARCHIVED = "(not archived: comparison)"


def compare(
    source: Source,
    dialect: Dialect,
    *,
    count: Callable[[list[dict]], int],
    summarizer: Summarizer,
    runs: Sequence[Run],
    micro_options: MicroOptions,
    price: Price,
    on_invalid: str,
    keep_user_messages: int,
    view: ModelView | None = None,
) -> list[dict[str, Any]]:
    """The figures of each run, in order (the input is read once per run); `view`: the one `count`
    reads (Replay's `view`)."""
    rows = []
    for run in runs:
        replay = Replay(
            dialect,
            count=count,
            summarizer=summarizer,
            archive=lambda entries: NOT_ARCHIVED,
            threshold=run.replay_threshold,
            micro_options=run.micro_options(micro_options),
            run_micro=run.run_micro,
            costs=True,
            keep_user_messages=keep_user_messages,
            view=view,
        )
        rows.append(figures(run, source.run(replay, on_invalid), price))
    return rows


# --- rendering ----------------------------------------------------------------------------------------

COLUMNS = (  # (title, key, width): the text table; csv has every key of CSV_FIELDS
    ("strategy", "strategy", -14),
    ("threshold", "threshold", 10),
    ("calls", "calls", 6),
    ("compact", "compacted", 8),
    ("peak", "peak_sent_tokens", 9),
    ("input", "input_tokens", 12),
    ("cached", "cached_input_tokens", 12),
    ("output", "output_tokens", 9),
    ("summ", "summarizer_calls", 5),
    ("summ in", "summarizer_input_tokens", 10),
    ("summ out", "summarizer_output_tokens", 9),
    ("cost $", "cost", 10),
)
CSV_FIELDS = (
    "strategy",
    "threshold",
    "calls",
    "auto",
    "manual",
    "recorded",
    "cleared",
    "peak_sent_tokens",
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "summarizer_calls",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
    "cost",
)


def _cell(value: Any, width: int) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, float):
        text = f"{value:,.4f}"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = str(value)
    return f"{text:<{-width}}" if width < 0 else f"{text:>{width}}"


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The text table; `compact` counts every compaction (auto, manual, recorded)."""
    lines = ["".join(_cell(title, width) for title, _, width in COLUMNS).rstrip()]
    for row in rows:
        flat = {**row, "compacted": sum(row["compactions"].values())}
        lines.append("".join(_cell(flat[key], width) for _, key, width in COLUMNS).rstrip())
    return "\n".join(lines) + "\n"


def csv_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row in rows:
        flat = {**row, **row["compactions"]}
        writer.writerow(["" if flat[name] is None else flat[name] for name in CSV_FIELDS])
    return buffer.getvalue().splitlines()


def label(row: dict[str, Any]) -> str:
    """How a run is named in the charts."""
    return (
        row["strategy"] if row["threshold"] is None else f"{row['strategy']} {chart.human(row['threshold'])}"
    )


def write_png(rows: Sequence[dict[str, Any]], path: Path, *, title: str = "") -> None:
    chart.write_series_png({label(row): row["contexts"] for row in rows}, path, title=title)


class CompareFigures(Figures):
    """The comparison's report: one outcome per run; the table (or CSV) and chart after the last."""

    verb = "compared"
    head = ""
    chart_title = ""

    def lines(self, outcome: Outcome, output_format: str) -> Iterator[str]:
        return iter(())

    def finish(self, outcomes: list[Outcome], output_format: str) -> Iterator[str]:
        rows = [outcome.stats for outcome in outcomes if outcome.status == COMPARED]
        if not rows:
            return
        if output_format == CSV:
            yield from csv_lines(rows)
            return
        if output_format in (TEXT, TABLE):
            yield self.head
            yield table(rows).removesuffix("\n")
            yield ""
            series = {label(row): row["contexts"] for row in rows}
            yield chart.text_series(series, title=self.chart_title).removesuffix("\n")

    def summary(self, outcomes: list[Outcome], preview: bool) -> str:
        return ""
