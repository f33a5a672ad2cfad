"""The bench's verdicts on time (scripts/bench.py): a ratio goes by the median of the rounds' ratios, each
round timing both commands in the same moment, not by a ratio of two medians that a machine whose pace
wanders between rounds moves."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402


def row(command: str, cpu_runs: list[float], micro: bool) -> dict:
    return {
        "command": command,
        "runs": cpu_runs,
        "cpu_runs": cpu_runs,
        "seconds": sorted(cpu_runs)[len(cpu_runs) // 2],
        "cpu_seconds": sorted(cpu_runs)[len(cpu_runs) // 2],
        "micro": micro,
        "rss_mb": 30.0,
        "stdlib_speedup": 4.0,
        "vs_orjson": 0.0,
        "cpu_vs_orjson": 0.0,
    }


def test_micro_against_the_orjson_loop_is_judged_round_by_round() -> None:
    # Three rounds at three paces: micro is 1.25x the loop in each, while the ratio of the medians
    # (1.5 / 1.0) says 1.5x.
    rows = [
        row("micro -o FILE", [1.5, 1.25, 2.5], micro=True),
        row("orjson loop", [1.2, 1.0, 2.0], micro=False),
        row("parse-only loop", [1.0, 0.9, 1.8], micro=False),
        row("estimate (default method)", [1.9, 1.8, 7.2], micro=False),  # 1.9x, 2x, 4x: median 2x
    ]
    verdicts = {v["command"]: v for v in bench.targets(rows) if "loop" in v["target"]}
    assert verdicts["micro -o FILE"]["cpu"] == 1.25
    assert verdicts["micro -o FILE"]["pass"]  # goal 1.3x
    assert verdicts["estimate (default method)"]["cpu"] == 2.0
    assert verdicts["estimate (default method)"]["pass"]  # goal 2x; the medians' ratio reads 1.9 / 0.9


def test_a_command_over_its_goal_in_most_rounds_fails_and_spaced_lines_have_their_own_goal() -> None:
    rows = [
        row("micro -o FILE", [1.4, 1.4, 1.0], micro=True),
        row("orjson loop", [1.0, 1.0, 1.0], micro=False),
        row("parse-only loop", [1.0, 1.0, 1.0], micro=False),
    ]
    for style, passes in (("compact", False), ("spaced", True)):  # goals 1.3x and 1.5x
        verdicts = [v for v in bench.targets(rows, style) if v["target"].endswith("orjson loop")]
        assert [(v["cpu"], v["pass"]) for v in verdicts] == [(1.4, passes)]
