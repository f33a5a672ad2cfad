"""The qwen-code dialect (Qwen Code sessions): detection, the chain Qwen Code resumes along, its compaction
record and its usage, on records written for these tests in the shape Qwen Code 0.15 writes them."""

from __future__ import annotations

import json

import pytest

from compactcli.dialects.base import BOUNDARY, NO, PROVES
from compactcli.dialects.qwen_code import QWEN_CODE, QwenChain

SESSION = "5b1f7c3e-0d2a-4c1e-9f7a-2b8e6d4c1a90"


def record(uuid: str, parent: str | None, kind: str, **fields: object) -> dict:
    return {
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "timestamp": "2026-11-30T09:00:00.000Z",
        "type": kind,
        "cwd": "/work/app",
        "version": "0.15.10",
        **fields,
    }


def user(uuid: str, parent: str | None, text: str) -> dict:
    return record(uuid, parent, "user", message={"role": "user", "parts": [{"text": text}]})


def model(uuid: str, parent: str | None, text: str, **fields: object) -> dict:
    return record(uuid, parent, "assistant", message={"role": "model", "parts": [{"text": text}]}, **fields)


def telemetry(uuid: str, parent: str | None) -> dict:
    event = {"event.name": "qwen-code.api_response", "input_token_count": 10}
    return record(uuid, parent, "system", subtype="ui_telemetry", systemPayload={"uiEvent": event})


def chain_of(records: list[dict]) -> list[str]:
    """The uuids of the records the chain orders, in its order."""
    order = QwenChain(QWEN_CODE)
    for line, each in enumerate(records, 1):
        order.add(line, line * 100, each)
    by_offset = {line * 100: each for line, each in enumerate(records, 1)}
    return [by_offset[offset]["uuid"] for _, offset in order.order()]


# --- detection --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        user("u1", None, "hi"),
        model("a1", "u1", "hello"),
        telemetry("s1", None),
        record("s2", None, "system", subtype="slash_command", systemPayload={"phase": "invocation"}),
    ],
)
def test_qwen_records_prove_the_dialect(first):
    assert QWEN_CODE.fit(first) == PROVES


@pytest.mark.parametrize(
    "other",
    [
        # Claude Code: the same identity fields, but Messages API content
        {
            "uuid": "u",
            "parentUuid": None,
            "sessionId": "s",
            "type": "user",
            "message": {"role": "user", "content": "x"},
        },
        {"role": "user", "content": "hi"},
        {"type": "response_item", "payload": {"type": "message"}},
        # a Qwen-like record of a type Qwen Code does not write
        {"uuid": "u", "sessionId": "s", "type": "summary", "message": {"role": "user", "parts": []}},
    ],
)
def test_other_records_do_not_fit(other):
    assert QWEN_CODE.fit(other) == NO


# --- the chain --------------------------------------------------------------------------------------------


def test_the_chain_is_the_path_from_the_last_record():
    records = [user("u1", None, "one"), telemetry("t1", "u1"), model("a1", "t1", "two")]
    assert chain_of(records) == ["u1", "t1", "a1"]


def test_a_rewound_branch_is_no_part_of_the_chain():
    """A rewind re-roots the chain at the record before the rewound prompt: what followed is off the path."""
    records = [
        user("u1", None, "first"),
        model("a1", "u1", "answer"),
        user("u2", "a1", "a prompt taken back"),
        model("a2", "u2", "an answer taken back"),
        record("r1", "a1", "system", subtype="rewind", systemPayload={}),
        user("u3", "r1", "instead"),
    ]
    assert chain_of(records) == ["u1", "a1", "r1", "u3"]


def test_records_sharing_a_uuid_stay_together_in_file_order():
    records = [
        user("u1", None, "q"),
        model("a1", "u1", "part one"),
        telemetry("t1", "u1"),
        model("a1", "u1", "two"),
    ]
    # the last record is a1's second part: the path is u1, a1, and t1 (a child of u1) is off it
    assert chain_of(records) == ["u1", "a1", "a1"]
    records.append(user("u2", "a1", "next"))
    assert chain_of(records) == ["u1", "a1", "a1", "u2"]


def test_a_cycle_in_the_links_ends_the_walk():
    records = [user("u1", "u2", "x"), user("u2", "u1", "y")]
    assert chain_of(records) == ["u1", "u2"]


def test_a_chain_in_file_order_is_said_to_be():
    order = QwenChain(QWEN_CODE)
    for line, each in enumerate([user("u1", None, "a"), model("a1", "u1", "b")], 1):
        order.add(line, line, each)
    assert order.in_file_order()
    order.add(3, 3, user("u9", "a1", "c"))
    order.add(4, 4, user("u8", "u1", "d"))  # a branch from the first record: a1 and u9 are off it
    assert not order.in_file_order()


# --- compaction and usage ---------------------------------------------------------------------------------


def compression(uuid: str, parent: str, history: list[dict]) -> dict:
    payload = {"info": {"originalTokenCount": 900, "newTokenCount": 300, "compressionStatus": 1}}
    return record(
        uuid,
        parent,
        "system",
        subtype="chat_compression",
        systemPayload={**payload, "compressedHistory": history},
    )


def test_a_chat_compression_restarts_the_context_with_its_history():
    history = [
        {"role": "user", "parts": [{"text": "<state_snapshot>done</state_snapshot>"}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "read_file", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "x"}}}],
        },
    ]
    found = compression("c", "u1", history)
    assert QWEN_CODE.compaction(found) == BOUNDARY
    assert [r["type"] for r in QWEN_CODE.restarted_with(found)] == [
        "user",
        "assistant",
        "assistant",
        "tool_result",
    ]
    assert [r["message"] for r in QWEN_CODE.restarted_with(found)] == history


def test_a_compression_without_history_is_none():
    """Qwen Code skips such a record when it rebuilds the history."""
    empty = record("c", "u1", "system", subtype="chat_compression", systemPayload={"info": {}})
    assert QWEN_CODE.compaction(empty) is None
    assert QWEN_CODE.compaction(telemetry("t", None)) is None


def test_usage_is_the_prompt_and_what_the_model_wrote():
    usage = {
        "promptTokenCount": 10662,
        "candidatesTokenCount": 20,
        "totalTokenCount": 10682,
        "cachedContentTokenCount": 600,
    }
    found = QWEN_CODE.usage(model("a1", "u1", "x", usageMetadata=usage))
    assert found == {
        "input_tokens": 10062,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 600,
        "output_tokens": 20,
    }
    assert QWEN_CODE.usage(model("a1", "u1", "x")) is None
    assert QWEN_CODE.usage(user("u1", None, "x")) is None


def test_records_of_one_uuid_are_one_call():
    first, second = model("a1", "u1", "one"), model("a1", "u1", "two")
    assert QWEN_CODE.call_id(first) == QWEN_CODE.call_id(second) == "a1"
    assert QWEN_CODE.call_id(user("u1", None, "x")) is None


def test_link_and_relink():
    each = model("a1", "u1", "x")
    assert QWEN_CODE.link(each) == ("a1", "u1")
    QWEN_CODE.set_parent(each, "c9")
    assert json.loads(json.dumps(each))["parentUuid"] == "c9"
