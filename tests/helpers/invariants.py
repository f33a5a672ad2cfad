"""What micro may change in a file: only the content of tool results, each into a placeholder (and, for
Claude Code, the toolUseResult copy beside it; for Codex, the UI's copy of a command's output). Tool results
are found by tests/helpers/reference.py, not by compactcli's dialect code, so a result that code cannot see
is not invisible here too."""

from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from helpers import reference
from helpers.cli import invoke


def parse(raw: bytes) -> dict | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def assert_only_results_cleared(
    dialect: str, before: bytes, after: bytes, is_placeholder: Callable[[object], bool]
) -> int:
    """Unchanged lines are byte-exact; a changed line differs only by cleared results and their UI copies.

    Returns how many results were cleared.
    """
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines), "micro must not add or remove lines"
    old_records = [parse(raw) or {} for raw in old_lines]  # a torn line reads as an empty record
    new_records = [parse(raw) or {} for raw in new_lines]
    old_results = reference.tool_results(old_records, dialect)
    new_results = reference.tool_results(new_records, dialect)
    assert [(r.line, r.slot, r.tool_use_id) for r in old_results] == [
        (r.line, r.slot, r.tool_use_id) for r in new_results
    ]
    rebuilt = copy.deepcopy(new_records)
    cleared = 0
    for old, new in zip(old_results, new_results, strict=True):
        if old.content != new.content:
            assert is_placeholder(new.content), f"line {new.line + 1}: {new.content!r}"
            reference.set_content(rebuilt[new.line], dialect, new, old.content)
            cleared += 1
    cleared_ids = {old.tool_use_id for old, new in zip(old_results, new_results, strict=True) if old != new}
    hook_copies = reference.copilot_hook_copies(old_records) if dialect == "copilot" else {}
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True)):
        if old == new:
            continue
        assert parse(old) is not None and parse(new) is not None, f"line {number + 1} changed but is not JSON"
        assert old.endswith(b"\n") == new.endswith(b"\n"), f"line {number + 1}: line ending changed"
        if number in hook_copies:
            # A Copilot hook's copy of a result: only the copy changes, with the result it copies.
            # (or its result was cleared before: docs/design.md, "A result cleared before")
            result = next((r for r in new_results if r.tool_use_id == hook_copies[number]), None)
            assert hook_copies[number] in cleared_ids or (result and is_placeholder(result.content)), (
                f"line {number + 1}: a hook's copy changed, its result is not cleared"
            )
            assert reference.without_hook_copy(new_records[number]) == reference.without_hook_copy(
                old_records[number]
            ), f"line {number + 1}: more than the hook's copy of a result changed"
            continue
        copy_of = reference.ui_copy_of(old_records[number], dialect)
        if copy_of is not None:
            # Codex's UI copy of a command's output: only its output fields change, with its result.
            assert copy_of in cleared_ids, (
                f"line {number + 1}: the copy of {copy_of} changed, its result did not"
            )
            assert reference.without_ui_output(new_records[number]) == reference.without_ui_output(
                old_records[number]
            ), f"line {number + 1}: more than the UI copy of a result changed"
            continue
        reference.restore_ui_copies(rebuilt[number], old_records[number], dialect)
        if "toolUseResult" in old_records[number]:
            rebuilt[number]["toolUseResult"] = old_records[number]["toolUseResult"]
        old_message = old_records[number].get("message")
        if dialect == "pi" and isinstance(old_message, dict) and "details" in old_message:
            rebuilt[number]["message"]["details"] = old_message["details"]  # pi's UI copy of the result
        assert rebuilt[number] == old_records[number], f"line {number + 1}: more than tool results changed"
    return cleared


_DEFAULT_PLACEHOLDER = re.compile(r"\[Previous: used [^\]]+\]")


def is_default_placeholder(content: object) -> bool:
    return isinstance(content, str) and _DEFAULT_PLACEHOLDER.fullmatch(content) is not None


def violations(dialect: str, data: bytes) -> list[tuple[int, str]]:
    """(line, rule) of what `compactcli validate` reports on the data, unreadable lines passed over."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        path.write_bytes(data)
        result = invoke("validate", "--dialect", dialect, "--on-invalid", "keep", "--json", path)
    assert result.exit_code in (0, 1), result.output
    return [(v["line"], v["rule"]) for v in json.loads(result.stdout)["stats"]["violations"]]
