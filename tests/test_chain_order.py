"""ChainOrder against a plain model of the conversation order, on generated Claude Code logs.

The generator writes what real logs show: records that name the record before as their parent, progress
and parallel results hanging off an earlier record, responses split over records with results between the
parts, rewinds (a prompt typed again from an earlier record), regenerated answers, records written out of
order, torn parents, explicit null parents, compactions, repeated uuids and sub-agent records.
"""

from __future__ import annotations

import json
from array import array

import pytest
from helpers.chain_reference import chain_order
from hypothesis import given, settings
from hypothesis import strategies as st

from compactcli.dialects import get

CLAUDE_CODE = get("claude-code")
KINDS = ["prompt", "result", "mixed", "meta", "assistant", "split", "progress", "snapshot", "boundary"]
# What a damaged log may hold as a message.id besides a string: it groups nothing.
ODD_IDS = [None, 7, ["m"], {"id": "m"}]
PARENTS = ["before", "before", "before", "earlier", "null", "absent", "torn"]


@st.composite
def logs(draw: st.DrawFn) -> list[dict]:
    count = draw(st.integers(1, 40))
    linear = draw(st.integers(0, 3)) == 0  # each record the child of the one before, as most logs are
    records: list[dict] = []
    response = 0
    for rank in range(count):
        kind = draw(st.sampled_from(KINDS))
        how = ("before" if linear else draw(st.sampled_from(PARENTS))) if rank else "null"
        record: dict = {"type": "user", "uuid": f"u{rank}"}
        if kind == "snapshot":
            record = {"type": "file-history-snapshot", "messageId": f"m{rank}"}
        elif kind == "progress":
            record["type"] = "progress"
        elif kind == "boundary":
            record.update(type="system", subtype="compact_boundary", logicalParentUuid=f"u{rank - 1}")
        elif kind in ("assistant", "split"):
            response += kind == "assistant"
            message = {"id": f"msg{response}", "role": "assistant", "content": []}
            if draw(st.integers(0, 14)) == 0:
                message["id"] = draw(st.sampled_from(ODD_IDS))
            if draw(st.booleans()):
                message["content"] = [{"type": "tool_use", "id": f"t{rank}", "name": "Bash", "input": {}}]
            record.update(type="assistant", message=message)
        else:
            result = {"type": "tool_result", "tool_use_id": "t", "content": "x"}
            content = {"result": [result], "mixed": [result, {"type": "text", "text": "and"}]}.get(kind, "hi")
            record["message"] = {"role": "user", "content": content}
            if kind == "meta":
                record["isMeta"] = True
        if how == "before":
            record["parentUuid"] = f"u{rank - 1}"
        elif how == "earlier":
            record["parentUuid"] = f"u{draw(st.integers(0, rank - 1))}"
        elif how == "null" or kind == "boundary":
            record["parentUuid"] = None
        elif how == "torn":
            record["parentUuid"] = "not-in-the-file"
        if rank >= 3 and draw(st.integers(0, 19)) == 0:
            record["uuid"] = f"u{draw(st.integers(0, rank - 3))}"  # a uuid written twice
        if draw(st.integers(0, 9)) == 0:
            record["isSidechain"] = True
            if draw(st.booleans()):
                record["agentId"] = draw(st.sampled_from(["a1", "a2"]))
        records.append(record)
    # Records written out of order: a few neighbours swapped (not a repeated uuid: the first one owns it).
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, max(count - 2, 0)))
        pair = records[at : at + 2]
        if len(pair) == 2 and all(r.get("uuid") in (None, f"u{at + i}") for i, r in enumerate(pair)):
            records[at], records[at + 1] = records[at + 1], records[at]
    return records


def chain_lines(records: list[dict]) -> list[int]:
    order = CLAUDE_CODE.new_order()
    offset = 0
    for number, record in enumerate(records, 1):
        order.add(number, offset, record)
        offset += len(json.dumps(record)) + 1
    return [line for line, _ in order.order()]


@settings(max_examples=400, deadline=None)
@given(logs())
def test_the_chain_order_is_the_model_s(records: list[dict]) -> None:
    assert chain_lines(records) == chain_order(records)


@settings(max_examples=200, deadline=None)
@given(logs())
def test_add_scan_is_add_and_scan_in_one_read(records: list[dict]) -> None:
    # micro's first pass takes each record's conversation and tool blocks from add_scan.
    by_add, by_add_scan = CLAUDE_CODE.new_order(), CLAUDE_CODE.new_order()
    for number, record in enumerate(records, 1):
        key, (uses, results) = by_add_scan.add_scan(number, number * 10, record)
        assert key == by_add.add(number, number * 10, record)
        assert (list(uses), list(results)) == CLAUDE_CODE.scan(record)
    assert list(by_add_scan.order()) == list(by_add.order())


def test_a_split_response_is_whole_in_a_log_without_forks() -> None:
    # Every record names the one before: the result written between two parts of one response still
    # comes after the whole response.
    result = {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    records = [
        {"type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "b", "parentUuid": "a", "message": {"id": "m", "content": []}},
        {"type": "user", "uuid": "c", "parentUuid": "b", "message": {"role": "user", "content": [result]}},
        {"type": "assistant", "uuid": "d", "parentUuid": "c", "message": {"id": "m", "content": []}},
    ]
    assert chain_lines(records) == [1, 2, 4, 3]


def test_offsets_follow_their_lines() -> None:
    records = [
        {"type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "c", "parentUuid": "b", "message": {"id": "m", "content": []}},
        {"type": "user", "uuid": "b", "parentUuid": "a", "message": {"role": "user", "content": "again"}},
    ]
    order = CLAUDE_CODE.new_order()
    for number, record in enumerate(records, 1):
        order.add(number, number * 100, record)
    assert list(order.order()) == [(1, 100), (3, 300), (2, 200)]


def test_parents_that_go_round_in_a_cycle_end() -> None:
    # A damaged log: a record its own parent, two records each other's. Reading must end, and the
    # conversation is the records that lead to the last leaf.
    records = [
        {"type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "x"}},
        {"type": "assistant", "uuid": "b", "parentUuid": "a", "message": {"id": "m", "content": []}},
        {"type": "user", "uuid": "c", "parentUuid": "c", "message": {"role": "user", "content": "y"}},
        {"type": "user", "uuid": "d", "parentUuid": "e", "message": {"role": "user", "content": "z"}},
        {"type": "user", "uuid": "e", "parentUuid": "d", "message": {"role": "user", "content": "w"}},
    ]
    assert chain_lines(records) == [1, 2]


@pytest.mark.parametrize("count", [10, 70_000, 200_000])
def test_repeated_ids_are_found_exactly_at_every_size(count: int) -> None:
    from compactcli.dialects.claude_code import _has_repeats

    # Distinct values that all share their low bits (one slot of the bit table), and negative ones.
    distinct = array("q", [(i << 40) | 5 for i in range(count // 2)] + [-i - 2 for i in range(count // 2)])
    assert not _has_repeats(distinct)
    repeated = array("q", distinct)
    repeated.append(distinct[count // 3])
    assert _has_repeats(repeated)
