"""Checks of what micro may change, shared by the property tests and the corpus tier."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable

from compactcli import dialects
from compactcli.layers.micro import COPY_SLOT
from compactcli.layers.validate import validate_records


def parse(raw: bytes) -> dict | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def assert_only_results_cleared(
    dialect_name: str, before: bytes, after: bytes, is_placeholder: Callable[[object], bool]
) -> int:
    """Unchanged lines are byte-exact; a changed line differs only by cleared results (and toolUseResult),
    or is the UI copy of a cleared result (Codex) that differs only in the copy.

    Returns how many results were cleared.
    """
    dialect = dialects.get(dialect_name)
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines), "micro must not add or remove lines"
    cleared = 0
    cleared_ids: set[object] = set()
    copied_ids: dict[str, int] = {}  # UI copies that changed (Codex exec_command_end): call id -> line
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True), 1):
        if old == new:
            continue
        old_record, new_record = parse(old), parse(new)
        assert old_record is not None and new_record is not None, f"line {number} changed but is not JSON"
        assert old.endswith(b"\n") == new.endswith(b"\n"), f"line {number}: line ending changed"
        copies = dialect.result_copies(old_record)
        if copies:
            # Only the copy of the output may change: with it blanked on both sides, the records are equal.
            old_blank, new_blank = copy.deepcopy(old_record), copy.deepcopy(new_record)
            dialect.set_result_content(old_blank, COPY_SLOT, "")
            dialect.set_result_content(new_blank, COPY_SLOT, "")
            assert old_blank == new_blank, f"line {number}: more than the UI copy of a result changed"
            copied_ids.update((use_id, number) for use_id in copies)
            continue
        rebuilt = copy.deepcopy(new_record)
        old_results = dialect.tool_results(old_record)
        new_results = dialect.tool_results(new_record)
        assert [r.tool_use_id for r in old_results] == [r.tool_use_id for r in new_results]
        for old_result, new_result in zip(old_results, new_results, strict=True):
            if old_result.content != new_result.content:
                assert is_placeholder(new_result.content), f"line {number}: {new_result.content!r}"
                dialect.set_result_content(rebuilt, old_result.slot, old_result.content)
                cleared += 1
                cleared_ids.add(old_result.tool_use_id)
        if "toolUseResult" in old_record:
            rebuilt["toolUseResult"] = old_record["toolUseResult"]
        assert rebuilt == old_record, f"line {number}: more than tool results changed"
    for use_id, number in copied_ids.items():
        assert use_id in cleared_ids, f"line {number}: the UI copy of {use_id} changed but its result did not"
    return cleared


_DEFAULT_PLACEHOLDER = re.compile(r"\[Previous: used [^\]]+\]")


def is_default_placeholder(content: object) -> bool:
    return isinstance(content, str) and _DEFAULT_PLACEHOLDER.fullmatch(content) is not None


def violations(dialect_name: str, data: bytes) -> list:
    records = [(n, r) for n, raw in enumerate(data.splitlines(), 1) if (r := parse(raw)) is not None]
    return validate_records(dialects.get(dialect_name), records)
