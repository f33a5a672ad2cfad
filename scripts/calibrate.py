"""Measure the token estimators against the usage recorded in Claude Code sessions.

    .venv/bin/python scripts/calibrate.py FOLDER [--min-growth 200] [--json] [--speed]

For every *.jsonl under FOLDER: the relative error of each estimator's growth between
consecutive model calls against the recorded growth (see compactcli/calibrate.py for the
rules), per file and overall, and the error distribution. --speed also times the heuristic
over the messages of those files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import orjson

from compactcli.counting.calibrate import METHODS, MIN_GROWTH, calibrate, session_files
from compactcli.counting.tokens import heuristic_tokens, seed_tokens


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _row(name: str, report: dict) -> str:
    cells = [f"{name:<40.40}", f"{report['seed']['n']:>5}"]
    for method in METHODS:
        stats = report[method]
        cells += [f"{_pct(stats['median']):>8}", f"{_pct(stats['worst']):>9}"]
        cells.append(f"{_pct(stats.get('total')):>8}")
    return " ".join(cells)


def print_table(result: dict) -> None:
    head = [f"{'file':<40}", f"{'n':>5}"]
    for method in METHODS:
        head += [f"{method[:4] + ' med':>8}", f"{method[:4] + ' worst':>9}", f"{'total':>8}"]
    print(" ".join(head))
    for path, report in result["files"].items():
        print(_row(Path(path).name, report))
    print(_row("all", result))
    print()
    print(f"|relative error| distribution over {result['heuristic']['n']} intervals:")
    labels = list(result["heuristic"]["histogram"] or {})
    print(f"{'':<10}" + "".join(f"{label:>8}" for label in labels) + f"{'p90':>8}{'bias':>8}")
    for method in METHODS:
        stats = result[method]
        counts = "".join(f"{stats['histogram'][label]:>8}" for label in labels)
        print(f"{method:<10}{counts}{_pct(stats['p90']):>8}{_pct(stats['bias']):>8}")
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(result["skipped"].items()))
    print()
    print(
        f"Not counted: {skipped or 'none'} (torn: a line in the interval is not JSON; "
        f"shrank; small: growth < {result['min_growth']} tokens)."
    )
    print("total = error of the summed growth over the counted intervals.")


def measure_speed(paths: list[Path]) -> None:
    messages = []
    for path in paths:
        for line in path.read_bytes().splitlines():
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("message"), dict):
                messages.append(record["message"])
    size = sum(len(orjson.dumps(m)) for m in messages)
    for name, estimate in (("heuristic", heuristic_tokens), ("seed", seed_tokens)):
        best = float("inf")
        for _ in range(5):
            start = time.process_time()  # CPU time: other work on the machine does not count
            estimate(messages)
            best = min(best, time.process_time() - start)
        print(
            f"{name}: {len(messages)} messages, {size / 1e6:.1f} MB of message JSON "
            f"in {best * 1000:.0f} ms of CPU: {size / best / 1e6:.0f} MB/s"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--min-growth", type=int, default=MIN_GROWTH)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--speed", action="store_true", help="also time the estimators")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"not a folder: {args.folder}")
    paths = list(session_files(args.folder))
    result = calibrate(paths, min_growth=args.min_growth)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print_table(result)
    if args.speed:
        print()
        measure_speed(paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
