"""Checks of what micro may change, shared by the property tests and the corpus tier."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable

from compactcli import dialects
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
    """Unchanged lines are byte-exact; a changed line differs only by cleared results (and toolUseResult).

    Returns how many results were cleared.
    """
    dialect = dialects.get(dialect_name)
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines), "micro must not add or remove lines"
    cleared = 0
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True), 1):
        if old == new:
            continue
        old_record, new_record = parse(old), parse(new)
        assert old_record is not None and new_record is not None, f"line {number} changed but is not JSON"
        assert old.endswith(b"\n") == new.endswith(b"\n"), f"line {number}: line ending changed"
        rebuilt = copy.deepcopy(new_record)
        old_results = dialect.tool_results(old_record)
        new_results = dialect.tool_results(new_record)
        assert [r.tool_use_id for r in old_results] == [r.tool_use_id for r in new_results]
        for old_result, new_result in zip(old_results, new_results, strict=True):
            if old_result.content != new_result.content:
                assert is_placeholder(new_result.content), f"line {number}: {new_result.content!r}"
                dialect.set_result_content(rebuilt, old_result.slot, old_result.content)
                cleared += 1
        if "toolUseResult" in old_record:
            rebuilt["toolUseResult"] = old_record["toolUseResult"]
        assert rebuilt == old_record, f"line {number}: more than tool results changed"
    return cleared


_DEFAULT_PLACEHOLDER = re.compile(r"\[Previous: used [^\]]+\]")


def is_default_placeholder(content: object) -> bool:
    return isinstance(content, str) and _DEFAULT_PLACEHOLDER.fullmatch(content) is not None


def violations(dialect_name: str, data: bytes) -> list:
    records = [(n, r) for n, raw in enumerate(data.splitlines(), 1) if (r := parse(raw)) is not None]
    return validate_records(dialects.get(dialect_name), records)
