"""Charts of a replay: tokens per model call against the threshold.

- :func:`text_chart`: plain ASCII that fits 80 columns, for the terminal. One column per model call
  (or per group of calls, the largest shown, when there are more calls than columns); the
  threshold is a line of dashes; a row under the axis marks compactions: A auto, M manual,
  R recorded in the file.
- :func:`write_png`: the same as a PNG through matplotlib, which is optional
  (``pip install 'compactcli[plot]'``) and imported only here.
- :func:`text_series` and :func:`write_series_png`: several runs of one transcript (replay --compare),
  the tokens each model call was sent, one line per run on a shared scale.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

PLOT_HINT = "--plot needs matplotlib: pip install 'compactcli[plot]'"
MARKS = {"auto": "A", "manual": "M", "recorded": "R"}
_PRIORITY = ("manual", "auto", "recorded")  # which mark a column shows when it has several
WIDTH = 80
LABEL = 8  # y-axis labels, right-aligned
HEIGHT = 12


class RowLike(Protocol):
    turn: int
    tokens: int
    event: str | None


def human(tokens: int) -> str:
    """1234 -> 1.2k, 150000 -> 150k, 2500000 -> 2.5M."""
    if tokens < 1000:
        return str(tokens)
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if tokens >= size:
            value = tokens / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(tokens)


def _columns(rows: Sequence[RowLike], width: int) -> tuple[list[int], list[str], int]:
    """Per column: the most tokens of its calls and its mark; and the calls per column."""
    calls = [row for row in rows if row.event in (None, "auto")]
    per = max(1, math.ceil(len(calls) / width))
    heights = [max(row.tokens for row in calls[i : i + per]) for i in range(0, len(calls), per)]
    events: list[set[str]] = [set() for _ in heights]
    for row in rows:
        if row.event in MARKS:
            # An auto row is its call's; manual and recorded rows follow the call numbered `turn`.
            call = max(row.turn - 1, 0)
            column = min(call // per, len(heights) - 1) if heights else 0
            if heights:
                events[column].add(row.event)
    marks = [next((MARKS[e] for e in _PRIORITY if e in found), " ") for found in events]
    return heights, marks, per


def text_chart(
    rows: Sequence[RowLike], threshold: int, *, width: int = WIDTH, height: int = HEIGHT, title: str = ""
) -> str:
    """The chart as text lines (no line longer than `width`)."""
    plot_width = width - LABEL - 2 - len(" threshold")
    heights, marks, per = _columns(rows, plot_width)
    lines = [title] if title else []
    if not heights:
        return "\n".join(lines + ["(no model calls)"]) + "\n"
    top = max(max(heights), threshold) * 1.15 or 1
    step = top / height
    threshold_row = min(height - 1, max(0, height - 1 - int(threshold / step)))
    for r in range(height):
        level = top - (r + 0.5) * step  # a cell is filled when the bar reaches the middle of it
        if r == threshold_row:
            # On the threshold's own row, exactly the calls over it (the trigger) are filled.
            cells = "".join("#" if value > threshold else "-" for value in heights)
            label, tail = human(threshold), " threshold"
        else:
            cells = "".join("#" if value >= level else " " for value in heights)
            label, tail = (human(round(top)) if r == 0 else ""), ""
        lines.append(f"{label:>{LABEL}} |{cells}{tail}".rstrip())
    lines.append(f"{'0':>{LABEL}} +{'-' * len(heights)}")
    if any(mark != " " for mark in marks):
        lines.append(f"{'':>{LABEL}}  {''.join(marks)}".rstrip())
    calls = sum(1 for row in rows if row.event in (None, "auto"))
    first, last = "1", str(calls)
    axis = first + last.rjust(max(len(heights) - len(first), len(last)))
    lines.append(f"{'call':>{LABEL}}  {axis}")
    legend = "A auto, M manual, R recorded compaction"
    if per > 1:
        legend = f"1 column = {per} calls (largest); " + legend
    lines.append(f"{'':>{LABEL}}  {legend}")
    return "\n".join(line[:width] for line in lines) + "\n"


LEVELS = " .:-=+*#%@"  # a column's height in ten steps, on the scale of the largest value


def text_series(series: dict[str, Sequence[int]], *, width: int = WIDTH, title: str = "") -> str:
    """One line per series: its name, a column per call (the largest of a group when there are more
    calls than columns) drawn with LEVELS, and its largest value. No line is longer than `width`."""
    lines = [title] if title else []
    name_width = min(max((len(name) for name in series), default=0), 20)
    peaks = {name: max(values, default=0) for name, values in series.items()}
    top = max(peaks.values(), default=0)
    calls = max((len(values) for values in series.values()), default=0)
    if not calls or not top:
        return "\n".join(lines + ["(no model calls)"]) + "\n"
    plot_width = width - name_width - 2 - 2 - len(human(top))
    per = max(1, math.ceil(calls / plot_width))
    for name, values in series.items():
        cells = []
        for start in range(0, len(values), per):
            value = max(values[start : start + per])
            level = 0 if value <= 0 else max(1, round(value / top * (len(LEVELS) - 1)))
            cells.append(LEVELS[level])
        lines.append(f"{name[:name_width]:<{name_width}} |{''.join(cells)}| {human(peaks[name])}")
    scale = f"{'':<{name_width}}  calls 1-{calls}"
    if per > 1:
        scale += f", {per} a column (largest)"
    scale += f"; '@' = {human(top)} tokens sent"
    lines.append(scale)
    return "\n".join(line[:width] for line in lines) + "\n"


# -- PNG ----------------------------------------------------------------------------------------------


def have_matplotlib() -> bool:
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except ValueError:  # a module set to None in sys.modules
        return False


@contextmanager
def _png(path: Path, *, ylabel: str, title: str, height: float) -> Iterator[Any]:
    """Axes to draw on; on leaving, labelled and saved to `path` as a PNG. Raises ImportError when
    matplotlib is missing."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(10, height), dpi=100)
    try:
        yield axes
        axes.set_xlabel("model call")
        axes.set_ylabel(ylabel)
        if title:
            axes.set_title(title)
        axes.legend(loc="upper left", fontsize="small")
        axes.margins(x=0.01)
        figure.tight_layout()
        figure.savefig(path, format="png")
    finally:
        plt.close(figure)


def write_png(rows: Sequence[RowLike], threshold: int, path: Path, *, title: str = "") -> None:
    """Tokens per call (before compaction) as bars, the threshold as a dashed line, compactions as
    vertical lines. Raises ImportError when matplotlib is missing."""
    calls = [row for row in rows if row.event in (None, "auto")]
    with _png(path, ylabel="tokens (estimate, before compaction)", title=title, height=4.5) as axes:
        numbers = [row.turn for row in calls]
        axes.bar(numbers, [row.tokens for row in calls], width=1.0, color="#4c72b0", label="tokens per call")
        axes.axhline(
            threshold, color="#c44e52", linestyle="--", linewidth=1.2, label=f"threshold {threshold:,}"
        )
        colours = {"auto": "#dd8452", "manual": "#55a868", "recorded": "#8172b3"}
        labelled: set[str] = set()
        for row in rows:
            if row.event in colours:
                x = row.turn if row.event == "auto" else row.turn + 0.5
                label = None if row.event in labelled else f"{row.event} compaction"
                labelled.add(row.event)
                axes.axvline(x, color=colours[row.event], linewidth=1, alpha=0.8, label=label)


def write_series_png(series: dict[str, Sequence[int]], path: Path, *, title: str = "") -> None:
    """The tokens each call was sent, one line per series. Raises ImportError without matplotlib."""
    with _png(path, ylabel="tokens sent (estimate)", title=title, height=5) as axes:
        for name, values in series.items():
            axes.step(range(1, len(values) + 1), values, where="mid", linewidth=1.2, label=name)
