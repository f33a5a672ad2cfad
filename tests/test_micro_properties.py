"""Properties of micro over generated conversations in each dialect (DESIGN.md 3, micro)."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactcli.layers.micro import DEFAULT_PRESERVE, MicroOptions
from compactcli.micro_file import analyze
from tests.invariants import assert_only_results_cleared, violations
from tests.strategies import DIALECTS, conversations, jsonl_bytes

STYLES = ("compact", "default", "unicode")
options_strategy = st.builds(
    MicroOptions,
    keep=st.integers(0, 4),
    min_chars=st.sampled_from([0, 50, 100, 101]),
    preserve=st.sampled_from([DEFAULT_PRESERVE, frozenset(), frozenset({"bash", "Bash"})]),
    placeholder=st.sampled_from(["[Previous: used {tool_name}]", "<{tool_name} output elided>"]),
    clear_multimodal=st.booleans(),
)


def micro_bytes(data: bytes, dialect: str, options: MicroOptions) -> tuple[bytes, int]:
    source = io.BytesIO(data)
    edit = analyze(source, "generated.jsonl", options=options, fmt=dialect)
    try:
        out = io.BytesIO()
        if edit.changed:
            edit.write(source, out)
            return out.getvalue(), edit.stats["cleared"]
        return data, 0
    finally:
        edit.close()


def is_placeholder_of(options: MicroOptions):
    head, _, tail = options.placeholder.partition("{tool_name}")

    def check(content: object) -> bool:
        return isinstance(content, str) and content.startswith(head) and content.endswith(tail)

    return check


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_micro_properties(dialect: str, data):
    records = data.draw(conversations(dialect), label="records")
    style = data.draw(st.sampled_from(STYLES), label="style")
    options = data.draw(options_strategy, label="options")
    before = jsonl_bytes(records, style=style)

    after, cleared = micro_bytes(before, dialect, options)

    # Only cleared contents (and Claude Code's toolUseResult copies) change; other lines stay byte-exact.
    assert assert_only_results_cleared(dialect, before, after, is_placeholder_of(options)) == cleared
    # Tool pairing is never broken: what validated before validates after.
    assert violations(dialect, before) == []
    assert violations(dialect, after) == []
    # Idempotent: a second run changes nothing.
    assert micro_bytes(after, dialect, options) == (after, 0)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_at_most_keep_results_means_no_change(dialect: str, data):
    records = data.draw(conversations(dialect), label="records")
    before = jsonl_bytes(records)
    total = before.count(b'"tool_result"') + before.count(b'"role":"tool"')
    options = MicroOptions(keep=max(total, 0) + 1)
    assert micro_bytes(before, dialect, options) == (before, 0)
