"""Measure the token estimators against the usage recorded in Claude Code sessions.

Each assistant record of a Claude Code session carries the ``usage`` of its model call; the
context the model saw is ``input_tokens + cache_creation_input_tokens +
cache_read_input_tokens``. Between two consecutive calls the context grows by what came in
between: the previous response and the user messages that followed. That growth, recorded,
is compared with the growth of each estimator over the same messages. (The system prompt and
tool definitions are in every call and cancel out.)

Rules:

* The main conversation (``isSidechain`` false) is walked in file order; a file with only
  sidechain records (a sub-agent's own file) is walked as its own conversation.
* One response split over several assistant records sharing ``message.id`` is one call.
  Assistant records of no call (``isApiErrorMessage``, model ``<synthetic>``) are not sent to
  the model and are left out.
* A compaction (a ``compact_boundary`` system record or an ``isCompactSummary`` user record)
  restarts the context: no interval spans it.
* An interval is not counted when a line inside it is not JSON (its content is unknown), or
  when the recorded growth is below MIN_GROWTH tokens: the context shrank, or the growth is so
  small that the fixed cost of a tool call's framing and the model's unlogged extras (system
  reminders, thinking that was not written down) swamp the relative error.

Error of an interval = (estimated growth - recorded growth) / recorded growth.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from compactcli import dialects
from compactcli.counting.tokens import (
    HeuristicCounter,
    SeedCounter,
    model_traits,
    starts_turn,
    thinking_persists,
)
from compactcli.dialects import BOUNDARY, SUMMARY, Dialect

MIN_GROWTH = 200
METHODS = ("seed", "heuristic")
# Upper edges of the error histogram (absolute relative error).
BUCKETS = (0.05, 0.10, 0.20, 0.30, 0.50, 1.00)


class Estimator(Protocol):
    def add(self, message: Any) -> None: ...
    def reset(self) -> None: ...
    @property
    def tokens(self) -> Any: ...


def _heuristic() -> Estimator:
    return HeuristicCounter()


ESTIMATORS: Mapping[str, Callable[[], Estimator]] = {"seed": SeedCounter, "heuristic": _heuristic}


@dataclass
class Interval:
    """The messages between two consecutive model calls."""

    line: int  # 1-based line of the record of the call that ends the interval
    recorded: int  # growth of the recorded context
    estimated: dict[str, Any] = field(default_factory=dict)  # growth per estimator
    skip: str | None = None  # why it is not counted: "torn", "shrank", "small"
    context: int = 0  # the context recorded at this call
    heuristic: int = 0  # the heuristic count of the messages before this call
    first_gap: int = 0  # at the first call since the context started: recorded - heuristic (the overhead)


def read_records(path: Path) -> list[dict | None]:
    """The records of a JSONL file; None for a line that is not a JSON object."""
    records: list[dict | None] = []
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):
                record = None
            records.append(record if isinstance(record, dict) else None)
    return records


def _context(usage: object) -> int:
    if not isinstance(usage, dict):
        return 0
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(v for k in keys if isinstance(v := usage.get(k), int))


def walk(
    records: Iterable[dict | None],
    estimators: Mapping[str, Callable[[], Estimator]] = ESTIMATORS,
    min_growth: int = MIN_GROWTH,
    dialect: Dialect | None = None,
) -> list[Interval]:
    """The intervals between consecutive model calls of one session, with estimated growth
    (`dialect`: the session's; by default detected from its records)."""
    records = list(records)
    if dialect is None:
        dialect = _dialect_of(records)
    sidechain = not any(r and dialect.message(r) is not None and not dialect.is_side(r) for r in records)
    counters = {name: make() for name, make in estimators.items()}
    intervals: list[Interval] = []
    last: tuple[int, dict[str, Any]] | None = None  # (recorded context, estimates) at last call
    first_gap = 0
    call_id: object = None
    keep_thinking = True
    torn = False  # a line since the last call is unreadable
    torn_turn = False  # a line since the turn started is unreadable

    def restart() -> None:
        nonlocal last, call_id, torn, torn_turn, first_gap
        for counter in counters.values():
            counter.reset()
        last, call_id, torn, torn_turn = None, None, False, False

    view = dialect.new_view()
    instructions: dict | None = None  # a system prompt the file records, sent with every call

    def add(message: dict, seen: dict | None, estimators: Iterable[str] = counters) -> None:
        # seed counts the message as in the file; the others what the model was sent of it
        for name in estimators:
            counters[name].add(message if name == "seed" or seen is None else seen)

    def call(line: int, context: int) -> None:
        nonlocal last, first_gap, torn
        now = {name: counter.tokens for name, counter in counters.items()}
        if last is None:
            first_gap = context - now.get("heuristic", 0)
        else:
            growth = context - last[0]
            estimated = {name: now[name] - last[1][name] for name in now}
            skip = _skip(growth, torn, min_growth)
            heuristic = now.get("heuristic", 0)
            intervals.append(Interval(line, growth, estimated, skip, context, heuristic, first_gap))
        last, torn = (context, now), False

    for line, record in enumerate(records, 1):
        if record is None:
            torn = torn_turn = True
            continue
        if view is not None:
            view.add(record)
        compaction = dialect.compaction(record)
        if compaction == BOUNDARY:
            restart()
            for entry in dialect.restarted_with(record):  # the new context, when the boundary holds it
                if (kept := dialect.message(entry)) is not None:
                    add(kept, dialect.normalize(entry))
            if instructions is not None:
                add(instructions, None, [name for name in counters if name != "seed"])
            continue
        message = dialect.message(record)
        if dialect.is_side(record) != sidechain:
            continue
        if message is None:
            seen = dialect.seen_by_model(record)
            if seen is not None and "heuristic" in counters:
                counters["heuristic"].add(seen)
            text = dialect.instructions(record)
            if text is not None:  # not a message (seed counts none), but sent with every call
                instructions = {"role": "system", "content": text}
                add(instructions, None, [name for name in counters if name != "seed"])
            recorded = dialect.recorded_call(record)  # a call recorded on a record of its own (Codex)
            if recorded is not None and recorded[2] is not None and recorded[2] != call_id:
                call(line, recorded[0])
                call_id = recorded[2]
            continue
        if compaction == SUMMARY:
            restart()
        seen = view.normalize(record) if view is not None else None  # roles as the API names them
        if starts_turn(seen or message):
            # A model that drops the thinking of earlier turns drops it now: unknown if a line
            # of the turn was unreadable.
            torn = torn or (torn_turn and not keep_thinking)
            torn_turn = False
        if (seen or message).get("role") == "assistant":
            if dialect.is_synthetic(record):
                continue
            model = message.get("model")
            keep_thinking = thinking_persists(model)
            _set_model(counters, model_traits(model if isinstance(model, str) else None))
            context = _context(dialect.usage(record))
            if context and dialect.call_id(record) != call_id:
                call(line, context)
                call_id = dialect.call_id(record)
        add(message, seen)
    return intervals


def _set_model(counters: Mapping[str, Estimator], traits: tuple[bool, float]) -> None:
    for counter in counters.values():
        if hasattr(counter, "use_traits"):
            counter.use_traits(traits)


def _skip(growth: int, torn: bool, min_growth: int) -> str | None:
    if torn:
        return "torn"
    if growth < 0:
        return "shrank"
    if growth < min_growth:
        return "small"
    return None


def errors(intervals: Iterable[Interval], method: str) -> list[float]:
    """Relative errors of one method over the counted intervals."""
    return [(iv.estimated[method] - iv.recorded) / iv.recorded for iv in intervals if iv.skip is None]


def summarize(errs: list[float], recorded: int = 0, estimated: float = 0) -> dict[str, Any]:
    """Median, worst and spread of relative errors; total = error of the summed growth."""
    if not errs:
        return {"n": 0, "median": None, "worst": None}
    absolute = sorted(abs(e) for e in errs)
    histogram: dict[str, int] = {}
    low = 0.0
    for edge in (*BUCKETS, float("inf")):
        label = f"<{edge:.0%}" if edge != float("inf") else f">={low:.0%}"
        histogram[label] = sum(1 for e in absolute if low <= e < edge)
        low = edge
    return {
        "n": len(errs),
        "median": statistics.median(absolute),
        "worst": absolute[-1],
        "p90": absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))],
        "bias": statistics.median(errs),  # signed: > 0 means the estimate runs high
        "total": (estimated - recorded) / recorded if recorded else None,
        "histogram": histogram,
    }


def _report(intervals: list[Interval]) -> dict[str, Any]:
    counted = [iv for iv in intervals if iv.skip is None]
    recorded = sum(iv.recorded for iv in counted)
    out: dict[str, Any] = {}
    for method in METHODS:
        estimated = sum(iv.estimated[method] for iv in counted)
        out[method] = summarize(errors(counted, method), recorded, estimated)
    out["skipped"] = dict(Counter(iv.skip for iv in intervals if iv.skip))
    return out


def calibrate(paths: list[Path], min_growth: int = MIN_GROWTH) -> dict[str, Any]:
    """Errors of each estimator against recorded usage, over all files and per file.

    Returns {"seed": stats, "heuristic": stats, "skipped": {reason: count},
    "files": {path: {"seed": stats, "heuristic": stats, "skipped": ...}}, "min_growth": N},
    where stats = {"n", "median", "worst", "p90", "bias", "total", "histogram"}
    (see :func:`summarize`; median and worst are None when n is 0).
    """
    every: list[Interval] = []
    files: dict[str, Any] = {}
    next_call: dict[str, list[float]] = {"auto": [], "heuristic": []}
    for path in paths:
        records = read_records(path)
        dialect = _dialect_of(records)
        intervals = walk(records, min_growth=min_growth, dialect=dialect)
        files[str(path)] = _report(intervals)
        every.extend(intervals)
        for method, errs in predictions(intervals, dialect.default_overhead).items():
            next_call[method].extend(errs)
    result = _report(every)
    result["files"] = files
    result["min_growth"] = min_growth
    # How well each method predicts the context of the next call (the dialect's default overhead).
    result["next_call"] = {method: summarize(errs) for method, errs in next_call.items()}
    return result


def _dialect_of(records: list[dict | None]) -> Dialect:
    lines = (json.dumps(r).encode() + b"\n" for r in records if r is not None)
    return dialects.detect(lines, "<records>") or dialects.DEFAULT


# -- predicting the next call ---------------------------------------------------------------------


def predictions(intervals: Iterable[Interval], overhead: int) -> dict[str, list[float]]:
    """Relative errors of predicting each call's recorded context from what came before it:

    - auto: the context recorded at the call before, plus the heuristic count of what followed;
    - heuristic: the heuristic count of the messages before it, plus `overhead`.

    Intervals with an unreadable line are left out (what was sent is unknown)."""
    auto: list[float] = []
    heuristic: list[float] = []
    for iv in intervals:
        if iv.skip == "torn" or iv.context <= 0:
            continue
        before = iv.context - iv.recorded
        auto.append((before + iv.estimated["heuristic"] - iv.context) / iv.context)
        heuristic.append((iv.heuristic + overhead - iv.context) / iv.context)
    return {"auto": auto, "heuristic": heuristic}


def measured_overhead(sessions: Iterable[list[Interval]]) -> int:
    """What the logs do not hold but every call sends (system prompt, tool definitions): the median of
    each context's first recorded call less the heuristic count of the messages before it."""
    gaps = [gap for intervals in sessions for gap in {iv.first_gap for iv in intervals}]
    return int(statistics.median(gaps)) if gaps else 0


def prediction_report(tuned: list[Path], held_out: list[Path]) -> dict[str, Any]:
    """Next-call prediction error of auto and heuristic + overhead, the overhead measured on the `tuned`
    sessions only; errors on both sets: {"overhead", "tuned": {...}, "held_out": {...}}."""
    walked = {path: walk(read_records(path)) for path in [*tuned, *held_out]}
    overhead = measured_overhead(walked[path] for path in tuned)
    out: dict[str, Any] = {"overhead": overhead}
    for name, paths in (("tuned", tuned), ("held_out", held_out)):
        errs = predictions((iv for path in paths for iv in walked[path]), overhead)
        out[name] = {method: summarize(values) for method, values in errs.items()}
        out[name]["files"] = [path.name for path in paths]
    return out


def session_files(folder: Path) -> Iterator[Path]:
    """The *.jsonl files under a folder, in a stable order."""
    yield from sorted(p for p in folder.rglob("*.jsonl") if p.is_file())
