#!/usr/bin/env python3
"""Write the sample transcripts under samples/ (stdlib only, same bytes on every run).

    python scripts/make_samples.py [OUTDIR]      # default: samples/ at the repository root

The transcripts show a coding agent changing a small made-up project ("tally", an expense-ledger
CLI): it lists files, reads them, greps, edits, runs tests that fail with a traceback, fixes them
and reruns. Tool outputs are computed from the project's files as they change, so that reads,
edits, diffs and line numbers agree with each other. Every tool call is answered by id in the
next user turn.
"""

from __future__ import annotations

import base64
import difflib
import json
import random
import re
import struct
import sys
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

CWD = "/home/dev/tally"
ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# --------------------------------------------------------------------------------------------
# The made-up project the transcripts work on

INIT_PY = '''"""tally: totals for expense ledgers kept as CSV files."""

__version__ = "0.3.1"
'''

LEDGER_PY = '''"""Read expense ledgers (CSV: date, category, amount, note) and compute totals."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path

REQUIRED = ("date", "amount")


@dataclass(frozen=True)
class Expense:
    day: date
    category: str
    amount: Decimal
    note: str = ""


class LedgerError(ValueError):
    """A row in the ledger file could not be read."""


def parse_row(row: dict[str, str], line: int) -> Expense:
    """Turn one CSV row into an Expense; `line` is used in error messages."""
    missing = [name for name in REQUIRED if not (row.get(name) or "").strip()]
    if missing:
        raise LedgerError(f"line {line}: missing {', '.join(missing)}")
    try:
        day = date.fromisoformat(row["date"].strip())
        amount = Decimal(row["amount"].strip())
    except (ValueError, InvalidOperation) as exc:
        raise LedgerError(f"line {line}: {exc}") from exc
    category = (row.get("category") or "").strip() or "misc"
    return Expense(day, category, amount, (row.get("note") or "").strip())


def load(path: Path) -> Iterator[Expense]:
    """Yield the expenses in `path` in file order."""
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        for line, row in enumerate(reader, start=2):
            yield parse_row(row, line)


def total(expenses: Iterable[Expense]) -> Decimal:
    return sum((e.amount for e in expenses), Decimal("0"))


def by_category(expenses: Iterable[Expense]) -> dict[str, Decimal]:
    sums: dict[str, Decimal] = {}
    for e in expenses:
        sums[e.category] = sums.get(e.category, Decimal("0")) + e.amount
    return dict(sorted(sums.items()))
'''

CLI_PY = '''"""tally: totals for expense ledgers kept as CSV files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .ledger import LedgerError, by_category, load, total


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tally", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tally {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="print totals for a ledger file")
    report.add_argument("file", type=Path)
    report.add_argument("--by-category", action="store_true", help="one line per category")
    report.add_argument("--currency", default="EUR", help="label printed after amounts")
    return parser


def cmd_report(args: argparse.Namespace) -> int:
    try:
        rows = list(load(args.file))
    except (OSError, LedgerError) as exc:
        print(f"tally: {exc}", file=sys.stderr)
        return 1
    if args.by_category:
        for category, amount in by_category(rows).items():
            print(f"{category:<16} {amount:>10.2f} {args.currency}")
    print(f"{'total':<16} {total(rows):>10.2f} {args.currency}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "report":
        return cmd_report(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
'''

MAIN_PY = """from .cli import main

raise SystemExit(main())
"""

TEST_REPORT_PY = '''from decimal import Decimal
from pathlib import Path

import pytest

from tally.cli import main
from tally.ledger import LedgerError, by_category, load, total

ROWS = """date,category,amount,note
2024-02-27,food,12.40,lunch
2024-03-01,travel,48.00,train
2024-03-03,food,7.25,
2024-03-09,books,31.90,SICP
"""


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.csv"
    path.write_text(ROWS, encoding="utf-8")
    return path


def test_total(ledger: Path) -> None:
    assert total(load(ledger)) == Decimal("99.55")


def test_by_category(ledger: Path) -> None:
    assert by_category(load(ledger)) == {
        "books": Decimal("31.90"),
        "food": Decimal("19.65"),
        "travel": Decimal("48.00"),
    }


def test_bad_amount(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("date,category,amount\\n2024-01-01,food,twelve\\n", encoding="utf-8")
    with pytest.raises(LedgerError, match="line 2"):
        list(load(path))


def test_report_prints_total(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(ledger)]) == 0
    assert capsys.readouterr().out.split() == ["total", "99.55", "EUR"]
'''

README_MD = """# tally

Small command line tool that adds up expense ledgers kept as CSV files.

## Install

    pip install -e .

## Usage

    tally report ledger.csv
    tally report ledger.csv --by-category --currency USD

The ledger needs a header row with the columns `date`, `category`, `amount`
and `note`. Dates are ISO 8601 (`2024-03-01`), amounts use a dot as the
decimal separator. Rows with a missing date or amount are reported with
their line number.

## Development

    python -m pytest -q
"""

MARCH_CSV = """date,category,amount,note
2024-02-28,food,9.80,bakery
2024-03-01,travel,48.00,train ticket Paris-Lyon
2024-03-02,food,23.15,market
2024-03-05,books,31.90,SICP
2024-03-09,food,7.25,
"""


def year_csv() -> str:
    """A year of made-up expenses: the one large file in the project (several KB)."""
    rng = random.Random(2023)
    notes = {
        "food": ["market", "bakery", "lunch", ""],
        "travel": ["bus", "train", "taxi"],
        "books": ["used books", "SICP", ""],
        "home": ["lamp", "paint", "hardware store"],
    }
    rows, day = ["date,category,amount,note"], datetime(2023, 1, 2)
    while day.year == 2023:
        category = rng.choice(sorted(notes))
        amount = Decimal(rng.randint(150, 9000)) / 100
        rows.append(f"{day:%Y-%m-%d},{category},{amount:.2f},{rng.choice(notes[category])}")
        day += timedelta(days=rng.randint(1, 4))
    return "\n".join(rows) + "\n"


FILES = {
    "README.md": README_MD,
    "examples/2023.csv": year_csv(),
    "examples/march.csv": MARCH_CSV,
    "tally/__init__.py": INIT_PY,
    "tally/__main__.py": MAIN_PY,
    "tally/cli.py": CLI_PY,
    "tally/ledger.py": LEDGER_PY,
    "tests/test_report.py": TEST_REPORT_PY,
}

PYTEST_HEAD = """============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0
rootdir: /home/dev/tally
configfile: pyproject.toml
"""
SEP = "_ " * 40


def tiny_png() -> bytes:
    """An 8x8 RGB bar-chart icon, built by hand so the bytes never depend on the zlib build."""
    heights = (0, 3, 6, 0, 5, 2, 7, 0)  # bar height per column
    rows = []
    for y in range(8):
        row = bytearray([0])  # filter type: none
        for x in range(8):
            row += bytes((46, 125, 50) if 8 - y <= heights[x] else (250, 250, 250))
        rows.append(bytes(row))
    raw = b"".join(rows)
    stored = b"\x01" + struct.pack("<HH", len(raw), 0xFFFF ^ len(raw)) + raw
    idat = b"\x78\x01" + stored + struct.pack(">I", zlib.adler32(raw))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


PNG_B64 = base64.b64encode(tiny_png()).decode("ascii")


# --------------------------------------------------------------------------------------------
# Deterministic ids and clocks


class Ids:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _alnum(self, n: int) -> str:
        return "".join(self.rng.choice(ALNUM) for _ in range(n))

    def toolu(self) -> str:
        return "toolu_01" + self._alnum(22)

    def msg(self) -> str:
        return "msg_01" + self._alnum(22)

    def req(self) -> str:
        return "req_011C" + self._alnum(20)

    def call(self) -> str:
        return "call_" + self._alnum(24)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def signature(self) -> str:
        return base64.b64encode(b"\x12\x8a\x0c\x0a" + self.rng.randbytes(150)).decode("ascii")

    def between(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class Clock:
    def __init__(self, start: datetime, ids: Ids) -> None:
        self.now = start
        self.ids = ids

    def tick(self, lo_ms: int = 40, hi_ms: int = 2500) -> str:
        self.now += timedelta(milliseconds=self.ids.between(lo_ms, hi_ms))
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# --------------------------------------------------------------------------------------------
# Project state and generic tool calls


class Project:
    def __init__(self) -> None:
        self.files = dict(FILES)
        self.original = dict(FILES)

    def line_of(self, path: str, needle: str) -> int:
        for n, line in enumerate(self.files[path].splitlines(), start=1):
            if needle in line:
                return n
        raise KeyError(f"{needle!r} not in {path}")

    def grep(self, pattern: str, under: str) -> list[tuple[str, int, str]]:
        rx = re.compile(pattern)
        hits = []
        for path in sorted(self.files):
            if not (path == under or path.startswith(under.rstrip("/") + "/") or under == "."):
                continue
            for n, line in enumerate(self.files[path].splitlines(), start=1):
                if rx.search(line):
                    hits.append((path, n, line))
        return hits

    def diff(self) -> str:
        """`git diff` of the tracked files against the original tree."""
        parts = []
        for path in sorted(self.original):
            old, new = self.original[path], self.files[path]
            if old == new:
                continue
            body = difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
                n=3,
            )
            head = f"diff --git a/{path} b/{path}\nindex {_hash7(old)}..{_hash7(new)} 100644\n"
            parts.append(head + "".join(body))
        return "".join(parts)


def _hash7(text: str) -> str:
    return f"{zlib.crc32(text.encode()) & 0xFFFFFFF:07x}"


def numbered(text: str, start: int = 1) -> str:
    """Claude Code's Read format: right-aligned line numbers and an arrow."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(text.split("\n"), start))


def structured_patch(old: str, new: str) -> list[dict[str, Any]]:
    a, b = old.splitlines(), new.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3):
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[a1:a2]]
            else:
                lines += ["-" + line for line in a[a1:a2]]
                lines += ["+" + line for line in b[b1:b2]]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        hunks.append(
            {"oldStart": i1 + 1, "oldLines": i2 - i1, "newStart": j1 + 1, "newLines": j2 - j1, "lines": lines}
        )
    return hunks


@dataclass
class Call:
    kind: str  # bash | read | grep | edit | write | image | todo | task
    args: dict[str, Any]
    output: str | list[dict[str, Any]]  # what a tutorial-style tool returns
    error: bool = False
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Turn:
    kind: str  # user | assistant | compact | turn_end | queued
    text: str | None = None
    thinking: str | None = None
    calls: list[Call] = field(default_factory=list)


class Script:
    """A conversation written against the project; calls change the project as they happen."""

    def __init__(self, project: Project) -> None:
        self.p = project
        self.turns: list[Turn] = []

    def user(self, text: str) -> None:
        self.turns.append(Turn("user", text))

    def say(self, text: str | None = None, *calls: Call, thinking: str | None = None) -> None:
        self.turns.append(Turn("assistant", text, thinking, list(calls)))

    def mark(self, kind: str, text: str | None = None) -> None:
        self.turns.append(Turn(kind, text))

    # tool calls ------------------------------------------------------------------------------

    def bash(self, command: str, output: str, *, error: bool = False, desc: str = "") -> Call:
        return Call("bash", {"command": command}, output, error, {"description": desc})

    def read(self, path: str) -> Call:
        text = self.p.files[path]
        return Call("read", {"path": path}, text.rstrip("\n"), data={"content": text})

    def image(self, path: str) -> Call:
        out = [
            {"type": "text", "text": f"{path}: PNG image data, 8 x 8, 8-bit/color RGB"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        ]
        return Call("image", {"path": path}, out)

    def grep(self, pattern: str, under: str) -> Call:
        hits = self.p.grep(pattern, under)
        out = "\n".join(f"{p}:{n}:{line}" for p, n, line in hits) or "(no matches)"
        return Call("grep", {"pattern": pattern, "path": under}, out, data={"hits": hits})

    def edit(self, path: str, old: str, new: str) -> Call:
        before = self.p.files[path]
        assert before.count(old) == 1, (path, old)
        after = before.replace(old, new)
        self.p.files[path] = after
        first = before[: before.index(old)].count("\n") + 1
        data = {"before": before, "after": after, "first": first, "new_lines": new.count("\n")}
        return Call("edit", {"path": path, "old": old, "new": new}, f"Edited {path}", data=data)

    def write(self, path: str, content: str) -> Call:
        self.p.files[path] = content
        out = f"Wrote {len(content)} bytes to {path}"
        return Call("write", {"path": path, "content": content}, out)

    def todo(self, items: list[tuple[str, str, str]], output: str) -> Call:
        todos = [{"content": c, "status": s, "activeForm": a} for c, s, a in items]
        return Call("todo", {"todos": todos}, output)

    def task(self, description: str, prompt: str, sub: Script, agent_id: str, inline: bool) -> Call:
        report = next(t.text for t in reversed(sub.turns) if t.kind == "assistant" and t.text)
        args = {"description": description, "prompt": prompt, "subagent_type": "general-purpose"}
        data = {"turns": sub.turns, "agent_id": agent_id, "inline": inline}
        return Call("task", args, report, data=data)


# --------------------------------------------------------------------------------------------
# Tool outputs that are not computed from the files


def pytest_fail(p: Project, test_file: str, test: str, body: str, where: str, err: str) -> str:
    """A `pytest -q`-style failure report; `body` holds the traceback section."""
    n_tests = sum(f.count("\ndef test_") for k, f in p.files.items() if k.startswith("tests/"))
    title = f" {test} ".center(80, "_")
    return (
        PYTEST_HEAD
        + f"collected {n_tests} items\n\n"
        + "tests/test_report.py "
        + ("...." if test_file != "tests/test_report.py" else "....F").ljust(52)
        + (" [ 80%]\n" if test_file != "tests/test_report.py" else " [100%]\n")
        + (f"{test_file} F".ljust(74) + "[100%]\n" if test_file != "tests/test_report.py" else "")
        + "\n"
        + " FAILURES ".center(80, "=")
        + "\n"
        + title
        + "\n\n"
        + body
        + "\n"
        + where
        + "\n"
        + " short test summary info ".center(80, "=")
        + "\n"
        + f"FAILED {test_file}::{test} - {err}\n"
        + f" 1 failed, {n_tests - 1} passed in 0.11s ".center(80, "=")
    )


def pytest_pass(n: int, secs: str) -> str:
    return "." * n + " " * (74 - n) + "[100%]\n" + f"{n} passed in {secs}s"


def report_lines(rows: list[tuple[str, Decimal]], currency: str = "EUR") -> str:
    return "\n".join(f"{name:<16} {amount:>10.2f} {currency}" for name, amount in rows)


# --------------------------------------------------------------------------------------------
# Task A: add `tally report --since` (anthropic session and Claude Code session)


def task_since(s: Script, *, claude_code: bool = False) -> None:
    p = s.p
    s.user(
        "Add a `--since YYYY-MM-DD` option to `tally report` so that only expenses on or after "
        "that date are counted. Keep the output format as it is and add a test."
    )
    listing = (
        "examples:\n2023.csv\nmarch.csv\n\ntally:\n__init__.py\n__main__.py\ncli.py\nledger.py\n\n"
        "tests:\ntest_report.py"
    )
    log = "\n".join(
        [
            "9c41d07 Report totals per category",
            "5be2a10 Read ledger rows lazily",
            "1a6d4f8 Initial version of report",
        ]
    )
    head = "\n".join(MARCH_CSV.splitlines()[:3])
    # results of exactly 100 and 101 characters sit on both sides of micro's --min-chars default
    assert (len(log), len(head)) == (100, 101), (len(log), len(head))
    s.say(
        "I'll start by looking at the project layout, its recent history and the example data.",
        s.bash("ls examples tally tests", listing, desc="List project files"),
        *([] if claude_code else [s.bash("git log --oneline -3", log)]),
        *([] if claude_code else [s.bash("head -3 examples/march.csv", head)]),
        thinking=(
            "The user wants a date filter on the report command. I should look at how the CLI "
            "is built and how rows are loaded before changing anything."
        ),
    )
    s.say(
        "Let me read the CLI, the ledger module, the existing tests and the larger example.",
        s.read("tally/cli.py"),
        s.read("tally/ledger.py"),
        *([] if claude_code else [s.read("tests/test_report.py"), s.read("examples/2023.csv")]),
    )
    if claude_code:
        sub = Script(p)
        sub.say(
            "I'll search for the loader and the functions that add amounts up.",
            sub.grep(r"load\(|total\(|by_category\(", "tally"),
        )
        tests = "\n".join(
            f"{n}:{line}"
            for n, line in enumerate(p.files["tests/test_report.py"].splitlines(), 1)
            if line.startswith("def test_")
        )
        sub.say(None, sub.bash('grep -n "^def test_" tests/test_report.py', tests, desc="List tests"))
        sub.say(
            None,
            sub.bash("python -m pytest -q 2>&1 | tail -1", "4 passed in 0.07s", desc="Run tests"),
        )
        sub.say(
            "Places that read or add up ledger rows:\n\n"
            f"- `tally/ledger.py:{p.line_of('tally/ledger.py', 'def load(')}` `load()` yields "
            "rows lazily in file order.\n"
            f"- `tally/ledger.py:{p.line_of('tally/ledger.py', 'def total(')}` `total()` and "
            f"`tally/ledger.py:{p.line_of('tally/ledger.py', 'def by_category(')}` "
            "`by_category()` take any iterable of `Expense`.\n"
            f"- `tally/cli.py:{p.line_of('tally/cli.py', 'rows = list(load(')}` `cmd_report()` "
            "materialises the rows once and passes the list to both.\n\n"
            "Only `cmd_report()` needs the date filter: filtering the list right after it is "
            "loaded covers the total and the per-category lines. The tests build their ledger "
            "in a `tmp_path` fixture; all 4 pass today."
        )
        s.say(
            "I'll have the call sites of the loader mapped while I plan the change.",
            s.task(
                "Find ledger call sites",
                "Find every place in /home/dev/tally that reads rows from a ledger or adds up "
                "amounts, and say which of them would need a date filter for a new "
                "`report --since` option. Report file:line references; do not edit anything.",
                sub,
                "a3f9c21",
                inline=True,
            ),
        )
        s.say(
            None,
            s.todo(
                [
                    ("Add since() filter to ledger.py", "in_progress", "Adding since() filter"),
                    ("Add --since option to tally report", "pending", "Adding --since option"),
                    ("Add a test and run the suite", "pending", "Adding a test"),
                ],
                "Todos have been modified successfully. Ensure that you continue to use the todo "
                "list to track your progress. Please proceed with the current tasks if applicable",
            ),
        )
    else:
        s.say(None, s.grep(r"def (load|total)\(|list\(load", "tally"))
    s.say(
        "I'll add a `since()` filter next to `total()` and wire it into `cmd_report`.",
        s.edit(
            "tally/ledger.py",
            "def by_category(expenses",
            "def since(expenses: Iterable[Expense], start: date) -> Iterator[Expense]:\n"
            '    """Only the expenses on or after `start`."""\n'
            "    return (e for e in expenses if e.day >= start)\n\n\n"
            "def by_category(expenses",
        ),
        s.edit(
            "tally/cli.py",
            "from .ledger import LedgerError, by_category, load, total",
            "from .ledger import LedgerError, by_category, load, since, total",
        ),
        s.edit(
            "tally/cli.py",
            '    report.add_argument("--currency", default="EUR", help="label printed after '
            'amounts")\n    return parser\n',
            '    report.add_argument("--currency", default="EUR", help="label printed after '
            'amounts")\n'
            '    report.add_argument(\n        "--since", metavar="YYYY-MM-DD", '
            'help="only count expenses on or after this date"\n    )\n    return parser\n',
        ),
        s.edit(
            "tally/cli.py",
            "        return 1\n    if args.by_category:",
            "        return 1\n    if args.since:\n        rows = list(since(rows, args.since))\n"
            "    if args.by_category:",
        ),
    )
    test_since = (
        "from pathlib import Path\n\nimport pytest\n\nfrom tally.cli import main\n\n"
        'ROWS = """date,category,amount,note\n2024-02-27,food,12.40,lunch\n'
        '2024-03-01,travel,48.00,train\n2024-03-03,food,7.25,\n"""\n\n\n'
        "def test_report_since_skips_earlier_rows(\n"
        "    tmp_path: Path, capsys: pytest.CaptureFixture[str]\n) -> None:\n"
        '    ledger = tmp_path / "ledger.csv"\n'
        '    ledger.write_text(ROWS, encoding="utf-8")\n'
        '    assert main(["report", str(ledger), "--since", "2024-03-01"]) == 0\n'
        '    assert capsys.readouterr().out.split() == ["total", "55.25", "EUR"]\n'
    )
    s.say("Now a test for the new option.", s.write("tests/test_since.py", test_since))
    test = "test_report_since_skips_earlier_rows"
    body = (
        "tmp_path = PosixPath('/tmp/pytest-of-dev/pytest-17/test_report_since_skips_earlie0')\n"
        "capsys = <_pytest.capture.CaptureFixture object at 0x7f0c2d9b6e90>\n\n"
        f"    def {test}(\n"
        "        tmp_path: Path, capsys: pytest.CaptureFixture[str]\n    ) -> None:\n"
        '        ledger = tmp_path / "ledger.csv"\n'
        '        ledger.write_text(ROWS, encoding="utf-8")\n'
        '>       assert main(["report", str(ledger), "--since", "2024-03-01"]) == 0\n\n'
        f"tests/test_since.py:{p.line_of('tests/test_since.py', 'assert main(')}: \n"
        f"{SEP}\n"
        f"tally/cli.py:{p.line_of('tally/cli.py', 'return cmd_report(args)')}: in main\n"
        "    return cmd_report(args)\n"
        f"tally/cli.py:{p.line_of('tally/cli.py', 'rows = list(since(')}: in cmd_report\n"
        "    rows = list(since(rows, args.since))\n"
        f"{SEP}\n\n"
        ".0 = <list_iterator object at 0x7f0c2d9b7d30>\n\n"
        ">   return (e for e in expenses if e.day >= start)\n"
        "E   TypeError: '>=' not supported between instances of 'datetime.date' and 'str'\n"
    )
    where = f"tally/ledger.py:{p.line_of('tally/ledger.py', 'e.day >= start')}: TypeError"
    err = "TypeError: '>=' not supported between instances of 'datetime.date' and 'str'"
    fail = pytest_fail(p, "tests/test_since.py", test, body, where, err)
    s.say(None, s.bash("python -m pytest -q", fail, error=True, desc="Run the test suite"))
    if not claude_code:
        s.user("(CI runs on Python 3.11, so keep it compatible with that.)")
    s.say(
        "The option value reaches `since()` as a string. argparse should turn it into a `date`.",
        s.edit(
            "tally/cli.py",
            "import argparse\nimport sys\n",
            "import argparse\nimport sys\nfrom datetime import date\n",
        ),
        s.edit(
            "tally/cli.py",
            '        "--since", metavar="YYYY-MM-DD", help=',
            '        "--since",\n        type=date.fromisoformat,\n        metavar="YYYY-MM-DD",\n'
            "        help=",
        ),
        thinking=(
            "args.since is still the raw string from the command line, so the comparison "
            "e.day >= start compares a date with a str. `type=date.fromisoformat` fixes it and "
            "works on Python 3.11."
        ),
    )
    if claude_code:
        s.mark(
            "compact",
            "This session is being continued from a previous conversation that ran out of "
            "context. The conversation is summarized below:\n"
            "Analysis:\nThe user asked for a `--since YYYY-MM-DD` option on `tally report` that "
            "only counts expenses on or after the date, with unchanged output and a test.\n\n"
            "Summary:\n1. Primary Request and Intent:\n   Add `tally report FILE --since "
            "YYYY-MM-DD`; keep the output format; add a test.\n\n"
            "2. Key Technical Concepts:\n   - argparse sub-command `report` in tally/cli.py\n"
            "   - lazy CSV loading via `load()` in tally/ledger.py, amounts as Decimal\n\n"
            "3. Files and Code Sections:\n"
            "   - tally/ledger.py: added `since(expenses, start)` returning a generator of "
            "expenses with `e.day >= start`.\n"
            "   - tally/cli.py: imports `since` and `date`; new `--since` argument with "
            "`type=date.fromisoformat`; `cmd_report` filters rows when `args.since` is set.\n"
            "   - tests/test_since.py: new test, expects `total 55.25 EUR` for 2024-03-01.\n\n"
            "4. Errors and fixes:\n   - The first test run failed with `TypeError: '>=' not "
            "supported between instances of 'datetime.date' and 'str'` because the option was "
            "a string; fixed by `type=date.fromisoformat`.\n\n"
            "5. Pending Tasks:\n   - Re-run the test suite to confirm the fix.\n\n"
            "6. Current Work:\n   Just edited tally/cli.py to parse `--since` as a date.\n\n"
            "7. Optional Next Step:\n   Run `python -m pytest -q`.\n"
            "Please continue the conversation from where we left it off without asking the "
            "user any further questions. Continue with the last task that you were asked to "
            "work on.",
        )
        s.say(
            "Re-running the tests after the fix.",
            s.bash("python -m pytest -q", pytest_pass(5, "0.09"), desc="Run the test suite"),
        )
    else:
        s.say(None, s.bash("python -m pytest -q", pytest_pass(5, "0.09")))
    rows = [("books", Decimal("31.90")), ("food", Decimal("30.40")), ("travel", Decimal("48.00"))]
    out = report_lines(rows + [("total", Decimal("110.30"))])
    s.say(
        None,
        s.bash(
            "python -m tally report examples/march.csv --since 2024-03-01 --by-category",
            out,
            desc="Try the new option on the example ledger",
        ),
    )
    s.say(
        "Done. `tally report FILE --since YYYY-MM-DD` now skips expenses before the date:\n\n"
        "- `tally/ledger.py`: new `since(expenses, start)` filter.\n"
        "- `tally/cli.py`: `--since` is parsed with `date.fromisoformat` and applied before "
        "the totals, so `--by-category` is filtered too.\n"
        "- `tests/test_since.py`: checks that a row from February is not counted.\n\n"
        "All 5 tests pass; the output format is unchanged."
    )
    if claude_code:
        s.mark("turn_end")
        s.mark(
            "queued",
            "Also document --since in the README, and get a second pair of eyes on the diff before I commit.",
        )
        s.say(None, s.read("README.md"))
        s.say(
            None,
            s.edit(
                "README.md",
                "    tally report ledger.csv --by-category --currency USD\n",
                "    tally report ledger.csv --by-category --currency USD\n"
                "    tally report ledger.csv --since 2024-03-01   # only count from that date\n",
            ),
        )
        review = review_script(p)
        s.say(
            "README updated. I'll have the diff reviewed independently.",
            s.task(
                "Review the --since change",
                "Review the uncommitted change in /home/dev/tally that adds `tally report "
                "--since`. Check edge cases (a date after the last row, an empty ledger, a bad "
                "date), run the tests, and report problems. Do not edit files.",
                review,
                "b7e41f2",
                inline=False,
            ),
        )
        s.say(
            "The review found no bugs. It pointed out that a bad date prints argparse's "
            "generic `invalid fromisoformat value` message; I left that as it is since you did "
            "not ask for it. The README now documents `--since`. Ready to commit."
        )
        s.mark("turn_end")
        return
    s.user("Nice. Does the screenshot in docs/report.png still match the output?")
    s.say(None, s.image("docs/report.png"))
    s.say(
        "`docs/report.png` is an 8x8 bar-chart icon, not a screenshot of the report output, so "
        "there is nothing in it that the new option could make stale."
    )
    s.user("OK. One more thing: a bad date like 2024-13-01 should give a clear error.")
    usage = "usage: tally report [-h] [--by-category] [--currency CURRENCY] [--since YYYY-MM-DD] file\n"
    s.say(
        None,
        s.bash(
            "python -m tally report examples/march.csv --since 2024-13-01",
            usage + "tally report: error: argument --since: invalid fromisoformat value: '2024-13-01'",
            error=True,
        ),
    )
    s.say(
        "argparse names the converter function in its message. A small converter with its own "
        "message reads better.",
        s.edit(
            "tally/cli.py",
            "def build_parser()",
            "def iso_date(text: str) -> date:\n    try:\n        return date.fromisoformat(text)\n"
            '    except ValueError:\n        msg = f"expected a date as YYYY-MM-DD, got {text!r}"\n'
            "        raise argparse.ArgumentTypeError(msg) from None\n\n\ndef build_parser()",
        ),
        s.edit("tally/cli.py", "type=date.fromisoformat,", "type=iso_date,"),
    )
    bad = usage + "tally report: error: argument --since: expected a date as YYYY-MM-DD, got "
    s.say(
        None,
        s.bash(
            "python -m tally report examples/march.csv --since 2024-13-01; python -m pytest -q",
            bad + "'2024-13-01'\n" + pytest_pass(5, "0.08"),
        ),
    )
    s.say(
        "A bad date now fails with `argument --since: expected a date as YYYY-MM-DD, got "
        "'2024-13-01'` (exit status 2, from argparse), and all 5 tests still pass."
    )


def review_script(p: Project) -> Script:
    r = Script(p)
    status = "M README.md\n M tally/cli.py\n M tally/ledger.py\n?? tests/test_since.py\n"
    r.say(
        "I'll start with the diff.",
        r.bash("git status --short && git diff", " " + status + p.diff(), desc="Show changes"),
        thinking="Review only: look at the diff, then the edge cases the prompt lists.",
    )
    r.say(None, r.read("tests/test_since.py"))
    r.say("Which tests mention the option?", r.grep("since", "tests"))
    r.say("Now the suite.", r.bash("python -m pytest -q", pytest_pass(5, "0.10"), desc="Run tests"))
    after = report_lines([("total", Decimal("0"))])
    r.say(
        "A date after the last row should give a zero total.",
        r.bash(
            "python -m tally report examples/march.csv --since 2030-01-01",
            after,
            desc="Date after the last row",
        ),
    )
    r.say(
        "And an empty ledger (header only).",
        r.bash(
            "printf 'date,category,amount,note\\n' > /tmp/empty.csv && "
            "python -m tally report /tmp/empty.csv --since 2024-01-01",
            after,
            desc="Empty ledger",
        ),
    )
    r.say(
        "Review of the `--since` change: no bugs found.\n\n"
        "- `since()` keeps rows with `e.day >= start`, so the start date itself is included, "
        "as the help text says.\n"
        "- A date after the last row and a header-only ledger both print `total 0.00 EUR`.\n"
        "- A bad date is rejected by argparse with exit status 2, but the message names the "
        "converter (`invalid fromisoformat value`); a small converter could say "
        "`expected YYYY-MM-DD` instead.\n"
        "- The new test covers the filter; there is no test for `--since` together with "
        "`--by-category`.\n\n"
        "All 5 tests pass."
    )
    return r


# --------------------------------------------------------------------------------------------
# Task B: accept thousands separators (stringified anthropic and OpenAI standard)


def task_thousands(s: Script) -> None:
    p = s.p
    s.user(
        "`tally report ~/bank/2024.csv` fails with `tally: line 3: [<class "
        "'decimal.ConversionSyntax'>]`. My bank writes amounts like 1,234.50. Please make the "
        "loader accept them."
    )
    s.say(
        "Let me find where amounts are parsed.",
        s.grep(r"Decimal\(", "tally"),
        thinking="ConversionSyntax comes from Decimal() on a string it cannot parse.",
    )
    s.say(None, s.read("tally/ledger.py"), thinking="Read the parsing code around parse_row.")
    s.say(
        "I'll add a `parse_amount()` helper that drops the thousands separators.",
        s.edit(
            "tally/ledger.py",
            "def parse_row(",
            'def parse_amount(text: str) -> Decimal:\n    """Amounts may use commas as thousands '
            'separators: "1,234.50"."""\n    return Decimal(text.strip().replace(",", ""))\n\n\n'
            "def parse_row(",
        ),
        s.edit(
            "tally/ledger.py",
            'amount = Decimal(row["amount"].strip())',
            'amount = parse_amount(row["amount"])',
        ),
    )
    s.say(
        None,
        s.edit(
            "tests/test_report.py",
            '    assert capsys.readouterr().out.split() == ["total", "99.55", "EUR"]\n',
            '    assert capsys.readouterr().out.split() == ["total", "99.55", "EUR"]\n\n\n'
            "def test_thousands_separator(tmp_path: Path) -> None:\n"
            '    path = tmp_path / "bank.csv"\n'
            '    path.write_text("date,category,amount,note\\n2024-04-02,rent,1,234.50,April\\n")\n'
            '    assert total(load(path)) == Decimal("1234.50")\n',
        ),
    )
    line = p.line_of("tests/test_report.py", 'assert total(load(path)) == Decimal("1234.50")')
    body = (
        "tmp_path = PosixPath('/tmp/pytest-of-dev/pytest-18/test_thousands_separator0')\n\n"
        "    def test_thousands_separator(tmp_path: Path) -> None:\n"
        '        path = tmp_path / "bank.csv"\n'
        '        path.write_text("date,category,amount,note\\n2024-04-02,rent,1,234.50,April\\n")\n'
        '>       assert total(load(path)) == Decimal("1234.50")\n'
        "E       AssertionError: assert Decimal('1') == Decimal('1234.50')\n"
        "E        +  where Decimal('1') = total(<generator object load at 0x7f3ab1c2e740>)\n"
        "E        +    where <generator object load at 0x7f3ab1c2e740> = load(PosixPath("
        "'/tmp/pytest-of-dev/pytest-18/test_thousands_separator0/bank.csv'))\n"
        "E        +  and   Decimal('1234.50') = Decimal('1234.50')\n"
    )
    fail = pytest_fail(
        p,
        "tests/test_report.py",
        "test_thousands_separator",
        body,
        f"tests/test_report.py:{line}: AssertionError",
        "AssertionError: assert Decimal('1') == Decimal('1234.50')",
    )
    s.say(None, s.bash("python -m pytest -q", fail, error=True))
    s.user("Note: the export from my bank quotes those fields.")
    s.say(
        "Right: my test wrote the amount unquoted, so the csv module split it at the comma "
        "into `1` and `234.50`. Quoting it in the test, as your bank's export does.",
        s.edit(
            "tests/test_report.py",
            '"date,category,amount,note\\n2024-04-02,rent,1,234.50,April\\n"',
            "'date,category,amount,note\\n2024-04-02,rent,\"1,234.50\",April\\n'",
        ),
        thinking=(
            "Decimal('1') means the amount column only held '1': the unquoted comma split the "
            "field. The loader change is fine, the test data is wrong."
        ),
    )
    s.say(None, s.bash("python -m pytest -q", pytest_pass(5, "0.08")))
    rows = [
        ("food", Decimal("312.85")),
        ("rent", Decimal("1234.50")),
        ("travel", Decimal("86.40")),
        ("total", Decimal("1633.75")),
    ]
    s.say(
        None,
        s.bash("python -m tally report ~/bank/2024.csv --by-category", report_lines(rows)),
    )
    s.say(
        "Fixed. Amounts like `1,234.50` are now accepted: `parse_amount()` in `tally/ledger.py` "
        "removes the commas before `Decimal()` sees the text. Your bank file loads again "
        "(total 1633.75 EUR), and `test_thousands_separator` covers a quoted amount."
    )
    s.user("Thanks! Commit it.")
    s.say(
        None,
        s.bash(
            "git add tally/ledger.py tests/test_report.py && git commit -m 'Accept thousands "
            "separators in amounts'",
            "[main 4e1d2c7] Accept thousands separators in amounts\n 2 files changed, 13 "
            "insertions(+), 1 deletion(-)",
        ),
    )
    s.say("Committed as 4e1d2c7.")


# --------------------------------------------------------------------------------------------
# Task C (Chinese): percentages per category (OpenAI flattened)


def task_percent_zh(s: Script) -> None:
    s.user(
        "请在 `tally report --by-category` 的输出里给每个类别加上占总额的百分比，保留一位小数。"
        "改完跑一下测试。"
    )
    s.say(
        None,
        s.todo(
            [
                ("阅读 cli.py 和现有测试", "in_progress", ""),
                ("在按类别输出中加入百分比", "pending", ""),
                ("运行测试并验证示例输出", "pending", ""),
            ],
            "已更新 todo 列表：\n[>] 阅读 cli.py 和现有测试\n[ ] 在按类别输出中加入百分比\n"
            "[ ] 运行测试并验证示例输出",
        ),
    )
    s.say(None, s.read("tally/cli.py"), s.read("tests/test_report.py"))
    s.say(None, s.grep("by_category", "."))
    s.say(
        None,
        s.edit(
            "tally/cli.py",
            "        for category, amount in by_category(rows).items():\n"
            '            print(f"{category:<16} {amount:>10.2f} {args.currency}")\n',
            "        grand = total(rows)\n"
            "        for category, amount in by_category(rows).items():\n"
            "            share = amount / grand * 100 if grand else 0\n"
            '            print(f"{category:<16} {amount:>10.2f} {args.currency} {share:5.1f}%")\n',
        ),
    )
    s.say(None, s.bash("python -m pytest -q", pytest_pass(4, "0.07")))
    rows = {"books": Decimal("31.90"), "food": Decimal("40.20"), "travel": Decimal("48.00")}
    grand = sum(rows.values(), Decimal(0))
    lines = [f"{k:<16} {v:>10.2f} EUR {v / grand * 100:5.1f}%" for k, v in rows.items()]
    out = "\n".join(lines) + "\n" + report_lines([("total", grand)])
    s.say(None, s.bash("python -m tally report examples/march.csv --by-category", out))
    s.say(
        None,
        s.edit(
            "tests/test_report.py",
            '    assert capsys.readouterr().out.split() == ["total", "99.55", "EUR"]\n',
            '    assert capsys.readouterr().out.split() == ["total", "99.55", "EUR"]\n\n\n'
            "def test_report_shares(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:\n"
            '    assert main(["report", str(ledger), "--by-category"]) == 0\n'
            "    lines = capsys.readouterr().out.splitlines()\n"
            '    assert lines[0].split() == ["books", "31.90", "EUR", "32.0%"]\n',
        ),
    )
    s.say(None, s.bash("python -m pytest -q", pytest_pass(5, "0.08")))
    s.say(
        "已完成：`--by-category` 的每一行现在会在金额后面显示该类别占总额的百分比（保留一位小数），"
        "总额为 0 时显示 0.0%。新增测试 `test_report_shares`，5 个测试全部通过。\n\n"
        "示例（examples/march.csv）：food 40.20 EUR 占 33.5%，travel 48.00 EUR 占 40.0%。"
    )
    s.user("好的，顺便在 README 里说明一下百分比。")
    s.say(
        None,
        s.edit(
            "README.md",
            "their line number.\n",
            "their line number.\n\n`--by-category` also prints each category's share of the "
            "total (one decimal place).\n",
        ),
    )
    s.say("README 已更新，说明了 `--by-category` 会显示各类别占总额的百分比。")


# --------------------------------------------------------------------------------------------
# Renderers: tutorial-style tools (anthropic, stringified, openai)

TUTORIAL_NAMES = {
    "bash": "bash",
    "read": "read_file",
    "image": "read_file",
    "grep": "grep",
    "edit": "edit_file",
    "write": "write_file",
    "todo": "todo",
}


def tutorial_tool(c: Call) -> tuple[str, dict[str, Any]]:
    a = c.args
    if c.kind == "edit":
        return "edit_file", {"path": a["path"], "old_text": a["old"], "new_text": a["new"]}
    if c.kind == "todo":
        items = [{"content": t["content"], "status": t["status"]} for t in a["todos"]]
        return "todo", {"items": items}
    return TUTORIAL_NAMES[c.kind], dict(a)


def sdk_repr(block: dict[str, Any]) -> str:
    """How the anthropic SDK prints its content blocks (repr of each field value)."""
    kind = block["type"]
    if kind == "thinking":
        return (
            f"ThinkingBlock(signature={block['signature']!r}, thinking={block['thinking']!r}, "
            "type='thinking')"
        )
    if kind == "text":
        return f"TextBlock(citations=None, text={block['text']!r}, type='text')"
    return (
        f"ToolUseBlock(id={block['id']!r}, caller=None, input={block['input']!r}, "
        f"name={block['name']!r}, type='tool_use')"
    )


def render_anthropic(turns: list[Turn], ids: Ids, *, stringified: bool) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    for t in turns:
        if t.kind == "user":
            msgs.append({"role": "user", "content": t.text})
        if t.kind != "assistant":
            continue
        blocks: list[dict[str, Any]] = []
        if t.thinking:
            sig = ids.uuid() if stringified else ids.signature()
            blocks.append({"type": "thinking", "thinking": t.thinking, "signature": sig})
        if t.text:
            blocks.append({"type": "text", "text": t.text})
        results = []
        for c in t.calls:
            name, inp = tutorial_tool(c)
            use_id = ids.toolu()
            blocks.append({"type": "tool_use", "id": use_id, "name": name, "input": inp})
            result = {"type": "tool_result", "tool_use_id": use_id, "content": c.output}
            if c.error and not stringified:
                result["is_error"] = True
            results.append(result)
        if stringified:
            msgs.append({"role": "assistant", "content": [sdk_repr(b) for b in blocks]})
        else:
            msgs.append({"role": "assistant", "content": blocks})
        if results:
            msgs.append({"role": "user", "content": results})
    return msgs


def render_openai(turns: list[Turn], ids: Ids, *, flattened: bool) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []

    def line(role: str, content: Any, call_id: Any = None, name: Any = None, calls: Any = None):
        if flattened:
            return {
                "role": role,
                "content": content,
                "tool_call_id": call_id,
                "name": name,
                "tool_calls": calls if calls is not None else [],
            }
        msg = {"role": role, "content": content}
        if calls:
            msg["tool_calls"] = calls
        if call_id:
            msg["tool_call_id"] = call_id
        return msg

    for t in turns:
        if t.kind == "user":
            msgs.append(line("user", t.text))
        if t.kind != "assistant":
            continue
        calls, results = [], []
        for c in t.calls:
            assert isinstance(c.output, str), "OpenAI tool results here are strings"
            name, inp = tutorial_tool(c)
            call_id = ids.call()
            if flattened:
                calls.append({"id": call_id, "name": name, "arguments": inp})
            else:
                fn = {"name": name, "arguments": json.dumps(inp)}
                calls.append({"id": call_id, "type": "function", "function": fn})
            results.append(line("tool", c.output, call_id, name if flattened else None))
        content = t.text if t.text else ("" if flattened else None)
        msgs.append(line("assistant", content, calls=calls))
        msgs.extend(results)
    return msgs


# --------------------------------------------------------------------------------------------
# Renderer: Claude Code session logs

CC_NAMES = {
    "bash": "Bash",
    "read": "Read",
    "grep": "Grep",
    "edit": "Edit",
    "write": "Write",
    "todo": "TodoWrite",
    "task": "Task",
}
BASH_OK = {"stderr": "", "interrupted": False, "isImage": False}


def tokens(obj: Any) -> int:
    """Rough token count used only to make the recorded usage grow plausibly."""
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return len(text) * 10 // 36


@dataclass
class Conv:
    sidechain: bool
    agent_id: str | None
    base: int  # system prompt and tool definitions
    cached: int
    model: str = "claude-sonnet-4-5-20250929"
    context: int = 0
    last: str | None = None
    last_usage: dict[str, Any] = field(default_factory=dict)
    tool_calls: int = 0

    def usage(self, output: int, first: bool) -> dict[str, Any]:
        prompt = self.base + self.context
        inp = 3 if first else 1
        read = min(self.cached, prompt - inp)
        create = prompt - inp - read
        self.cached = prompt - inp
        self.last_usage = {
            "input_tokens": inp,
            "cache_creation_input_tokens": create,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": create, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output,
            "service_tier": "standard",
        }
        return self.last_usage


class ClaudeCodeLog:
    def __init__(self, ids: Ids, clock: Clock, session_id: str) -> None:
        self.ids, self.clock, self.session = ids, clock, session_id
        self.records: list[dict[str, Any]] = []
        self.agent_files: dict[str, list[dict[str, Any]]] = {}
        self.slug = "tidy-counting-heron"

    def head(self, conv: Conv, parent: str | None, *, slug: bool = True) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": conv.sidechain,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session,
            "version": "2.0.76",
            "gitBranch": "main",
        }
        if conv.agent_id:
            rec["agentId"] = conv.agent_id
        if slug:
            rec["slug"] = self.slug
        return rec

    def user_text(self, conv: Conv, out: list, text: str, **extra: Any) -> str:
        rec = self.head(conv, conv.last)
        rec["type"] = "user"
        rec["message"] = {"role": "user", "content": text}
        rec.update(extra)
        rec["uuid"] = self.ids.uuid()
        rec["timestamp"] = self.clock.tick()
        out.append(rec)
        conv.last = rec["uuid"]
        conv.context += tokens(text)
        return rec["uuid"]

    def snapshot(self, out: list, message_id: str, update: bool) -> None:
        out.append(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": message_id,
                    "trackedFileBackups": {},
                    "timestamp": self.clock.tick(1, 5),
                },
                "isSnapshotUpdate": update,
            }
        )

    def system(self, conv: Conv, out: list, subtype: str, **fields: Any) -> dict[str, Any]:
        rec = self.head(conv, conv.last)
        rec.update({"type": "system", "subtype": subtype})
        rec.update(fields)
        rec["timestamp"] = self.clock.tick(5, 30)
        rec["uuid"] = self.ids.uuid()
        rec["isMeta"] = False
        out.append(rec)
        conv.last = rec["uuid"]
        return rec

    def run(self, conv: Conv, turns: list[Turn], out: list) -> None:
        first = True  # the first call after a prompt
        turn_start = self.clock.now
        for t in turns:
            if t.kind == "user":
                first = True
                self.user_text(conv, out, t.text or "")
            elif t.kind == "assistant":
                self.assistant(conv, t, out, first)
                first = False
            elif t.kind == "compact":
                pre = conv.base + conv.context
                # the boundary starts a new chain; the old parent is kept as logicalParentUuid
                boundary = {"parentUuid": None, "logicalParentUuid": conv.last}
                head = self.head(conv, None)
                boundary.update((k, v) for k, v in head.items() if k != "parentUuid")
                boundary.update(
                    {
                        "type": "system",
                        "subtype": "compact_boundary",
                        "content": "Conversation compacted",
                        "isMeta": False,
                        "timestamp": self.clock.tick(20000, 40000),
                        "uuid": self.ids.uuid(),
                        "level": "info",
                        "compactMetadata": {"trigger": "auto", "preTokens": pre},
                    }
                )
                out.append(boundary)
                conv.last = boundary["uuid"]
                conv.context = 0
                conv.cached = conv.base
                self.user_text(conv, out, t.text or "", isVisibleInTranscriptOnly=True, isCompactSummary=True)
                first = False
            elif t.kind == "turn_end":
                ms = int((self.clock.now - turn_start).total_seconds() * 1000)
                self.system(conv, out, "turn_duration", durationMs=ms)
            elif t.kind == "queued":
                text = t.text or ""
                out.append(
                    {
                        "type": "queue-operation",
                        "operation": "enqueue",
                        "timestamp": self.clock.tick(),
                        "sessionId": self.session,
                        "content": text,
                    }
                )
                out.append(
                    {
                        "type": "queue-operation",
                        "operation": "dequeue",
                        "timestamp": self.clock.tick(5, 20),
                        "sessionId": self.session,
                    }
                )
                next_uuid = self.ids.uuid()
                self.snapshot(out, next_uuid, False)
                rec = self.head(conv, conv.last)
                rec.update(
                    {
                        "type": "user",
                        "message": {"role": "user", "content": text},
                        "uuid": next_uuid,
                        "timestamp": self.clock.tick(5, 20),
                    }
                )
                out.append(rec)
                conv.last = next_uuid
                conv.context += tokens(text)
                first = True
                turn_start = self.clock.now

    def assistant(self, conv: Conv, t: Turn, out: list, first: bool) -> None:
        blocks: list[dict[str, Any]] = []
        if t.thinking:
            blocks.append({"type": "thinking", "thinking": t.thinking, "signature": self.ids.signature()})
        if t.text:
            blocks.append({"type": "text", "text": t.text})
        uses = []
        for c in t.calls:
            use = {
                "type": "tool_use",
                "id": self.ids.toolu(),
                "name": CC_NAMES[c.kind],
                "input": self.cc_input(c),
            }
            blocks.append(use)
            uses.append((use, c))
        usage = conv.usage(max(1, tokens(blocks)), first)
        msg_id, req_id = self.ids.msg(), self.ids.req()
        use_records = []
        for block in blocks:
            rec = self.head(conv, conv.last)
            rec["message"] = {
                "model": conv.model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            rec.update(
                {
                    "requestId": req_id,
                    "type": "assistant",
                    "uuid": self.ids.uuid(),
                    "timestamp": self.clock.tick(200, 3000),
                }
            )
            out.append(rec)
            conv.last = rec["uuid"]
            if block["type"] == "tool_use":
                use_records.append(rec["uuid"])
        conv.context += tokens(blocks)
        results = []
        for (use, c), use_uuid in zip(uses, use_records, strict=True):
            conv.tool_calls += 1
            if c.kind == "task":
                sub = self.subagent(c)
                content, tur = self.task_result(c, sub)
            else:
                content, tur = self.cc_result(c)
            if c.error:
                block = {
                    "type": "tool_result",
                    "content": content,
                    "is_error": True,
                    "tool_use_id": use["id"],
                }
            else:
                block = {"tool_use_id": use["id"], "type": "tool_result", "content": content}
                if c.kind == "bash":
                    block["is_error"] = False
            rec = self.head(conv, use_uuid)
            rec.update(
                {
                    "type": "user",
                    "message": {"role": "user", "content": [block]},
                    "uuid": self.ids.uuid(),
                    "timestamp": self.clock.tick(30, 1500),
                    "toolUseResult": tur,
                    "sourceToolAssistantUUID": use_uuid,
                }
            )
            results.append(rec)
            conv.context += tokens(content)
        out.extend(results)
        if results:
            conv.last = results[-1]["uuid"]

    def subagent(self, c: Call) -> Conv:
        agent_id = c.data["agent_id"]
        sub = Conv(sidechain=True, agent_id=agent_id, base=9_870, cached=0)
        target = self.records if c.data["inline"] else self.agent_files.setdefault(agent_id, [])
        self.user_text(sub, target, c.args["prompt"])
        self.run(sub, c.data["turns"], target)
        return sub

    def task_result(self, c: Call, sub: Conv) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        report = [{"type": "text", "text": c.output}]
        note = f"agentId: {c.data['agent_id']} (for resuming to continue this agent's work if needed)"
        tur = {
            "status": "completed",
            "prompt": c.args["prompt"],
            "agentId": c.data["agent_id"],
            "content": report,
            "totalDurationMs": self.ids.between(18000, 60000),
            "totalTokens": sub.base + sub.context,
            "totalToolUseCount": sub.tool_calls,
            "usage": sub.last_usage,
        }
        return report + [{"type": "text", "text": note}], tur

    def cc_input(self, c: Call) -> dict[str, Any]:
        a = c.args
        if c.kind == "bash":
            return {"command": a["command"], "description": c.data["description"]}
        if c.kind == "read":
            return {"file_path": f"{CWD}/{a['path']}"}
        if c.kind == "grep":
            return {
                "pattern": a["pattern"],
                "path": f"{CWD}/{a['path']}",
                "output_mode": "content",
                "-n": True,
            }
        if c.kind == "edit":
            return {
                "replace_all": False,
                "file_path": f"{CWD}/{a['path']}",
                "old_string": a["old"],
                "new_string": a["new"],
            }
        if c.kind == "write":
            return {"file_path": f"{CWD}/{a['path']}", "content": a["content"]}
        return dict(a)

    def cc_result(self, c: Call) -> tuple[Any, Any]:
        a, d = c.args, c.data
        if c.kind == "bash":
            if c.error:
                return "Exit code 1\n" + str(c.output), "Error: Exit code 1\n" + str(c.output)
            return c.output, {"stdout": c.output, **BASH_OK}
        if c.kind == "read":
            text = d["content"]
            lines = text.rstrip("\n").split("\n")
            file = {
                "filePath": f"{CWD}/{a['path']}",
                "content": text,
                "numLines": len(lines),
                "startLine": 1,
                "totalLines": len(lines),
            }
            return numbered(text.rstrip("\n")), {"type": "text", "file": file}
        if c.kind == "grep":
            out = "\n".join(f"{CWD}/{p}:{n}:{line}" for p, n, line in d["hits"])
            return out or "No matches found", {
                "mode": "content",
                "numFiles": 0,
                "filenames": [],
                "content": out,
                "numLines": len(d["hits"]),
            }
        if c.kind == "edit":
            after = d["after"].split("\n")
            lo = max(1, d["first"] - 4)
            hi = min(len(after), d["first"] + d["new_lines"] + 4)
            path = f"{CWD}/{a['path']}"
            snippet = numbered("\n".join(after[lo - 1 : hi]), lo)
            content = (
                f"The file {path} has been updated. Here's the result of running `cat -n` on a "
                f"snippet of the edited file:\n{snippet}"
            )
            tur = {
                "filePath": path,
                "oldString": a["old"],
                "newString": a["new"],
                "originalFile": d["before"],
                "structuredPatch": structured_patch(d["before"], d["after"]),
                "userModified": False,
                "replaceAll": False,
            }
            return content, tur
        if c.kind == "write":
            path = f"{CWD}/{a['path']}"
            tur = {
                "type": "create",
                "filePath": path,
                "content": a["content"],
                "structuredPatch": [],
                "originalFile": None,
            }
            return f"File created successfully at: {path}", tur
        if c.kind == "todo":
            return c.output, {"oldTodos": [], "newTodos": a["todos"]}
        raise ValueError(c.kind)


def claude_code_session() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    ids = Ids(3)
    clock = Clock(datetime(2025, 11, 18, 9, 14, 3, 512000, tzinfo=UTC), ids)
    s = Script(Project())
    task_since(s, claude_code=True)
    log = ClaudeCodeLog(ids, clock, ids.uuid())
    main = Conv(sidechain=False, agent_id=None, base=15_289, cached=15_289)
    first_uuid = ids.uuid()
    log.snapshot(log.records, first_uuid, False)
    prompt = s.turns[0]
    rec = log.head(main, None, slug=False)
    rec.update(
        {
            "type": "user",
            "message": {"role": "user", "content": prompt.text},
            "uuid": first_uuid,
            "timestamp": clock.tick(),
        }
    )
    log.records.append(rec)
    main.last = first_uuid
    main.context += tokens(prompt.text)
    log.run(main, s.turns[1:], log.records)
    # the summary names the conversation's last message, as Claude Code's titles do
    leaf = next(r["uuid"] for r in reversed(log.records) if r["type"] == "assistant" and not r["isSidechain"])
    summary = {"type": "summary", "summary": "Add --since date filter to tally report", "leafUuid": leaf}
    return [summary] + log.records, log.agent_files["b7e41f2"]


# --------------------------------------------------------------------------------------------
# Files


def compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def spaced(obj: Any) -> str:
    return json.dumps(obj)


def spaced_unicode(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


OPENAI_SYSTEM = (
    "You are a coding agent working in /home/dev/tally, a small Python CLI. Use the tools to "
    "inspect and change files, keep changes minimal, and run the tests before you finish."
)


def build() -> dict[str, bytes]:
    def lines(records: list[dict[str, Any]], dump: Callable[[Any], str]) -> bytes:
        return "".join(dump(r) + "\n" for r in records).encode("utf-8")

    out: dict[str, bytes] = {}
    a = Script(Project())
    task_since(a)
    out["anthropic/session.jsonl"] = lines(render_anthropic(a.turns, Ids(1), stringified=False), spaced)
    b = Script(Project())
    task_thousands(b)
    out["anthropic/stringified.jsonl"] = lines(render_anthropic(b.turns, Ids(2), stringified=True), spaced)
    cc, agent = claude_code_session()
    out["claude-code/session.jsonl"] = lines(cc, compact)
    out["claude-code/agent-subagent.jsonl"] = lines(agent, compact)
    o = Script(Project())
    task_thousands(o)
    std = [{"role": "system", "content": OPENAI_SYSTEM}]
    std += render_openai(o.turns, Ids(4), flattened=False)
    out["openai/session.jsonl"] = lines(std, spaced)
    z = Script(Project())
    task_percent_zh(z)
    out["openai/flattened.jsonl"] = lines(render_openai(z.turns, Ids(5), flattened=True), spaced_unicode)
    out["README.md"] = SAMPLES_README.encode("utf-8")
    return out


SAMPLES_README = """# Sample transcripts

Written by `scripts/make_samples.py` (do not edit by hand: change the script and re-run it;
`tests/test_samples.py` checks that the files match its output byte for byte). Each shows a
coding agent changing a small made-up CLI ("tally"); every tool call is answered by id.

- `anthropic/session.jsonl` (33 lines): Messages API messages with dict blocks: thinking with signature,
  parallel tool_use/tool_result, an image result (list content), results of 19 to 4.6k chars, 100 and 101.
- `anthropic/stringified.jsonl` (23 lines): the tutorial agent's format, assistant blocks as SDK reprs
  (`ThinkingBlock(...)`, `TextBlock(...)`, `ToolUseBlock(...)`), results as dicts; two user lines in a row.
- `claude-code/session.jsonl` (68 lines): split assistant records sharing message.id and usage, toolUseResult
  copies, an inline sub-agent (agentId a3f9c21), an auto compaction mid-task, passthrough records.
- `claude-code/agent-subagent.jsonl` (20 lines): the sub-agent file of the second Task call (agentId b7e41f2);
  every record is isSidechain with agentId.
- `openai/session.jsonl` (25 lines): chat-completions messages with a system prompt, standard `tool_calls`
  (JSON-string arguments), parallel calls, role `tool` results, a failing test run, final assistant text.
- `openai/flattened.jsonl` (23 lines): the flattened variant; every line has role, content, tool_call_id,
  name, tool_calls (`{id, name, arguments: {...}}`); Chinese text written with ensure_ascii=False.

Recorded usage in the Claude Code files is derived from the transcript's own size, so it grows plausibly
but the auto compaction fires at about 20k tokens, not at the ~155k where Claude Code compacts.
"""


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "samples"
    for rel, data in build().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
