"""The Dialect interface is the only seam: no module outside dialects/ and backends/ tests a dialect's
name, and a dialect added to the registry is read by every command without touching them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.files import write_jsonl

from compactcli import dialects
from compactcli.dialects.base import FITS, NO, PROVES, Dialect, ToolResult, ToolUse

PACKAGE = Path(__file__).resolve().parents[1] / "compactcli"
# A dialect constant, a dialect module, or a comparison with a dialect's name: every dialect of the
# registry, so a new one is covered without editing this test.
_NAMES = "|".join(re.escape(name) for name in dialects.MODULES)
_MODULES = "|".join(module for module, _ in dialects.MODULES.values())
_CONSTANTS = "|".join(constant for _, constant in dialects.MODULES.values())
DIALECT_BRANCH = re.compile(
    rf"dialects\.({_CONSTANTS})\b"
    rf"|from compactcli\.dialects\.({_MODULES}) import"
    rf"|from compactcli\.dialects import [^\n]*\b({_CONSTANTS}|{_MODULES})\b"
    rf"|(==|!=|in \(?)\s*[\"']({_NAMES})[\"']"
    r"|dialect\.name\s*(==|!=)"
)
# hooks/ branches on agents (whose hook systems differ), some of which share a dialect's name.
NOT_SCANNED = ("dialects", "backends", "hooks")


def outside_dialects() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in NOT_SCANNED
    ]


def test_no_module_outside_dialects_branches_on_a_dialect():
    found = [
        f"{path.relative_to(PACKAGE)}:{text[: match.start()].count(chr(10)) + 1}: {match.group(0)}"
        for path in outside_dialects()
        for text in [path.read_text()]
        for match in DIALECT_BRANCH.finditer(text)
        if "summarizer.name" not in text[max(0, match.start() - 20) : match.end()]
    ]
    assert found == []


def test_the_scan_sees_a_branch():
    # The pattern itself can fail: each form it must catch.
    for line in (
        'if dialect.name == "claude-code":',
        "from compactcli.dialects import CLAUDE_CODE, Dialect",
        "x = dialects.OPENAI",
        "from compactcli.dialects.claude_code import is_sidechain",
        "from compactcli.dialects import CODEX, Dialect, codex",
    ):
        assert DIALECT_BRANCH.search(line), line


class ToyDialect(Dialect):
    """A made-up transcript format: {"speaker": "me"|"bot", "says": str, "calls"?, "answers"?}."""

    name = "toy"

    def fit(self, record: dict) -> int:
        if record.get("speaker") not in ("me", "bot") or "says" not in record:
            return NO
        return PROVES if record.get("toy") == 1 else FITS

    def message(self, record: dict) -> dict | None:
        return record if "speaker" in record else None

    def normalize(self, record: dict) -> dict | None:
        if "speaker" not in record:
            return None
        role = "user" if record["speaker"] == "me" else "assistant"
        blocks: list[dict] = [{"type": "text", "text": record["says"]}]
        for call in record.get("calls", ()):
            blocks.append({"type": "tool_use", "id": call, "name": "run", "input": {}})
        if "answers" in record:
            blocks = [{"type": "tool_result", "tool_use_id": record["answers"], "content": record["says"]}]
        return {"role": role, "content": blocks}

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        return iter([ToolUse(call, "run") for call in record.get("calls", ())])

    def tool_results(self, record: dict) -> list[ToolResult]:
        return [ToolResult(record["answers"], -1, record["says"])] if "answers" in record else []

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        record["says"] = content

    def summary_records(self, text: str, *, context_records: list[dict], **_: object) -> list[dict]:
        return [{"speaker": "me", "says": text, "toy": 1}]


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(dialects.DIALECTS, "toy", ToyDialect())
    return dialects.DIALECTS["toy"]


def toy_file(tmp_path: Path) -> Path:
    records = [{"speaker": "me", "says": "fix it", "toy": 1}]
    for n in range(5):
        records.append({"speaker": "bot", "says": "running", "calls": [f"c{n}"], "toy": 1})
        records.append({"speaker": "me", "says": "x" * 300, "answers": f"c{n}", "toy": 1})
    records.append({"speaker": "bot", "says": "done", "toy": 1})
    path = tmp_path / "toy.jsonl"
    write_jsonl(path, records)
    return path


def test_a_registered_dialect_is_detected_and_read_by_every_command(toy, tmp_path):
    path = toy_file(tmp_path)
    run = invoke("validate", "--json", path)
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["stats"]["dialect"] == "toy"
    estimate = invoke("estimate", "--format", "json", path)
    assert estimate.exit_code == 0 and json.loads(estimate.stdout)["stats"]["messages"] == 12
    micro = invoke("micro", path)
    assert micro.exit_code == 0, micro.output
    cleared = [json.loads(line) for line in path.read_text().splitlines() if "answers" in line]
    assert [r["says"] for r in cleared] == ["[Previous: used run]"] * 2 + ["x" * 300] * 3
    summarize = invoke("summarize", "--backend", "digest", path)
    assert summarize.exit_code == 0, summarize.output
    [summary] = [json.loads(line) for line in path.read_text().splitlines()]
    assert summary["speaker"] == "me" and summary["says"].startswith("[Conversation compressed.")


SAMPLES = PACKAGE.parent / "samples"
SAMPLE_RECORDS = [
    json.loads(line)
    for path in sorted(SAMPLES.glob("*/*.jsonl"))
    for line in path.read_text(encoding="utf-8").splitlines()
    if line.strip()
]


@pytest.mark.parametrize("name", sorted(dialects.MODULES))
def test_scan_says_what_tool_uses_and_tool_results_say(name):
    # micro's first pass reads a record's calls and results from Dialect.scan, which a dialect may
    # write as one walk: it must agree with the two questions asked apart, on every dialect's samples.
    dialect = dialects.get(name)
    seen = 0
    for record in SAMPLE_RECORDS:
        uses, results = dialect.scan(record)
        assert (list(uses), list(results)) == (list(dialect.tool_uses(record)), dialect.tool_results(record))
        seen += bool(uses or results)
    assert seen


@pytest.mark.parametrize("name", sorted(dialects.MODULES))
def test_result_count_is_the_number_of_tool_results(name):
    # estimate counts a record's results with Dialect.result_count, which may skip reading their outputs.
    dialect = dialects.get(name)
    counted = [(dialect.result_count(record), len(dialect.tool_results(record))) for record in SAMPLE_RECORDS]
    assert [count for count, _ in counted] == [expected for _, expected in counted]
    assert any(expected for _, expected in counted)
