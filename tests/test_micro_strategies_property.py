"""micro's opt-in strategies over generated transcripts of every dialect (docs/design.md, "Micro
strategies"): the output validates as the input does, tool_use/tool_result pairs stay whole (a pair is
kept or dropped together), no parentUuid is left naming a dropped record, a second run changes nothing,
and strategies that drop nothing keep every line."""

from __future__ import annotations

import json

import pytest
from helpers import reference
from helpers.cli import written_by
from helpers.invariants import violations
from helpers.strategies import conversations, jsonl_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STRATEGIES = st.lists(
    st.sampled_from(
        [
            ("--dedupe-reads",),
            ("--keep-images", "0"),
            ("--keep-images", "1"),
            ("--truncate", "20:10"),
            ("--truncate", "0:0"),
            ("--drop-progress",),
            ("--drop-sidechains",),
            ("--drop-thinking",),
        ]
    ),
    min_size=1,
    max_size=4,
    unique=True,
)
DROPPING = {"--drop-progress", "--drop-sidechains", "--drop-thinking"}


def dangling(records: list[dict]) -> set[str]:
    """Records (by uuid) whose parentUuid, or a compaction's logicalParentUuid (the history before it),
    names no record of the file: a broken chain."""
    uuids = {record.get("uuid") for record in records}
    return {
        record["uuid"]
        for record in records
        for parent in [record.get("parentUuid") or record.get("logicalParentUuid")]
        if isinstance(parent, str) and parent not in uuids
    }


def pairs(records: list[dict], dialect: str) -> tuple[set[str], set[str]]:
    uses = {use_id for record in records for use_id, _ in reference.tool_uses(record, dialect)}
    results = {r.tool_use_id for r in reference.tool_results(records, dialect) if r.tool_use_id}
    return uses, results


@pytest.mark.parametrize("dialect", (*reference.DIALECTS, "codex"))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_strategies_keep_pairs_validate_and_are_idempotent(dialect: str, data) -> None:
    records = data.draw(conversations(dialect), label="records")
    chosen = data.draw(STRATEGIES, label="strategies")
    keep = data.draw(st.integers(0, 4), label="keep")
    options = [word for option in chosen for word in option] + ["--keep", str(keep)]
    before = jsonl_bytes(records)

    after = written_by(before, "micro", "--dialect", dialect, *options)

    out = [json.loads(line) for line in after.splitlines()]
    uses_in, results_in = pairs(records, dialect)
    uses_out, results_out = pairs(out, dialect)
    assert uses_out <= uses_in and results_out <= results_in
    for pair in uses_in & results_in:  # a pair is kept whole or dropped whole
        assert (pair in uses_out) == (pair in results_out), pair
    if not DROPPING & {option[0] for option in chosen}:
        assert len(out) == len(records)
        assert (uses_out, results_out) == (uses_in, results_in)
    assert dangling(out) <= dangling(records)  # a dropped record's children point at one kept
    assert violations(dialect, after) == violations(dialect, before) == []
    assert written_by(after, "micro", "--dialect", dialect, *options) == after


@pytest.mark.parametrize(
    ("strategy", "rule"),
    [
        (["--dedupe-reads"], ["--keep", "50", "--min-chars", "0"]),
        (["--keep-images", "0"], ["--keep", "0"]),
        (["--truncate", "20:10"], ["--keep", "0"]),
        (["--drop-thinking"], ["--keep", "0"]),
    ],
    ids=["dedupe-reads", "keep-images", "truncate", "drop-thinking"],
)
def test_codex_rollout_keeps_pairs_validates_and_is_idempotent(strategy: list[str], rule: list[str]) -> None:
    """Codex has no generator: the project's rollout (images, apply_patch, an aborted turn, a
    compaction) through each strategy, compared with the default rule alone at the same --keep."""
    from helpers import codex_rollout

    records = codex_rollout.records()
    # The README read once more at the end: the earlier read is superseded (--dedupe-reads).
    read = next(r for r in records if "README.md" in str(r["payload"].get("arguments")))
    answer = next(
        r
        for r in records
        if r["payload"].get("type") == "function_call_output"
        and r["payload"]["call_id"] == read["payload"]["call_id"]
    )
    again = {**read, "payload": {**read["payload"], "call_id": "call_again"}}
    records += [again, {**answer, "payload": {**answer["payload"], "call_id": "call_again"}}]
    before = codex_rollout.dumps(records)
    after = written_by(before, "micro", "--dialect", "codex", *strategy, *rule)
    out = [json.loads(line) for line in after.splitlines()]
    assert pairs(out, "codex") == pairs(records, "codex")
    # The strategy did something of its own.
    assert after != written_by(before, "micro", "--dialect", "codex", *rule)
    assert violations("codex", after) == violations("codex", before)
    assert written_by(after, "micro", "--dialect", "codex", *strategy, *rule) == after
