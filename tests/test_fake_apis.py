"""The fake APIs the agent tier talks to refuse what the real APIs refuse: unpaired tool calls (400,
in the API's own words), and they stream as the real ones do. Without this, the agent tier could not
fail on a broken history."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from helpers.fakeapi import FakeAnthropic
from helpers.fakeresponses import FakeResponses, function_call, message


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _sse(text: str) -> list[dict[str, Any]]:
    """The data of each server-sent event, in order."""
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def _messages(api: FakeAnthropic, messages: list[dict[str, Any]], **extra: Any) -> tuple[int, str]:
    body = {"model": "claude-test", "max_tokens": 100, "messages": messages, **extra}
    headers = {"x-api-key": api.api_key, "anthropic-version": "2023-06-01"}
    return _post(api.url + "/v1/messages", body, headers)


USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_A", "name": "Bash", "input": {}}]}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "ok"}]}
ASK = {"role": "user", "content": "go on"}


def test_messages_api_refuses_a_tool_use_without_its_result():
    with FakeAnthropic() as api:
        status, text = _messages(api, [ASK, USE, ASK])
    assert status == 400
    error = json.loads(text)["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"] == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_A. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def test_messages_api_refuses_a_result_without_its_tool_use():
    with FakeAnthropic() as api:
        status, text = _messages(api, [ASK, {"role": "assistant", "content": "hm"}, RESULT])
    assert status == 400
    assert json.loads(text)["error"]["message"].startswith(
        "messages.2.content: unexpected `tool_use_id` found in `tool_result` blocks: toolu_A."
    )


def test_messages_api_takes_paired_calls_and_system_messages_between_turns():
    system = {"role": "system", "content": [{"type": "text", "text": "environment"}]}
    with FakeAnthropic() as api:
        status, _ = _messages(api, [ASK, USE, RESULT, system])
    assert status == 200


def test_messages_api_streams_tool_use_as_events():
    with FakeAnthropic() as api:
        api.reply_blocks = lambda body: [USE["content"][0]]
        status, text = _messages(api, [ASK], stream=True)
    assert status == 200
    events = _sse(text)
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[1]["content_block"] == {"type": "tool_use", "id": "toolu_A", "name": "Bash", "input": {}}
    assert events[2]["delta"] == {"type": "input_json_delta", "partial_json": "{}"}
    assert events[4]["delta"]["stop_reason"] == "tool_use"


def _responses(api: FakeResponses, items: list[dict[str, Any]]) -> tuple[int, str]:
    body = {"model": "gpt-test", "stream": True, "input": items}
    return _post(api.url + "/responses", body, {"authorization": f"Bearer {api.api_key}"})


USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
CALL = function_call("call_A", "exec_command", {"cmd": "ls"})
OUTPUT = {"type": "function_call_output", "call_id": "call_A", "output": "a.txt"}


@pytest.mark.parametrize(
    ("items", "wording"),
    [
        ([USER, CALL], "No tool output found for function call call_A."),
        ([USER, OUTPUT], "No tool call found for function call output with call_id call_A."),
        ([USER, OUTPUT, CALL], "No tool call found for function call output with call_id call_A."),
    ],
)
def test_responses_api_refuses_unpaired_calls(items, wording):
    with FakeResponses() as api:
        status, text = _responses(api, items)
    assert status == 400
    assert json.loads(text)["error"] == {
        "message": wording,
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def test_responses_api_refuses_an_answered_item_without_the_reasoning_of_its_response():
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "ZW5j"}
    with FakeResponses() as api:
        api.reply_items = lambda body: [reasoning, CALL]
        status, text = _responses(api, [USER])
        assert status == 200
        rs, fc = (e["item"] for e in _sse(text) if e["type"] == "response.output_item.done")
        status, _ = _responses(api, [USER, rs, fc, OUTPUT])
        assert status == 200
        status, text = _responses(api, [USER, fc, OUTPUT])
        assert status == 400
        assert json.loads(text)["error"]["message"] == (
            f"Item '{fc['id']}' of type 'function_call' was provided without its required 'reasoning' item: "
            f"'{rs['id']}'."
        )
        without_id = {k: v for k, v in fc.items() if k != "id"}
        status, _ = _responses(api, [USER, without_id, OUTPUT])  # an item without an id is new
        assert status == 200


def test_responses_api_streams_the_scripted_items():
    with FakeResponses() as api:
        api.reply_items = lambda body: [message("hello")]
        status, text = _responses(api, [USER, CALL, OUTPUT])
    assert status == 200
    events = _sse(text)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[2]["item"]["content"][0]["text"] == "hello"
    assert events[3]["response"]["usage"]["total_tokens"] > 0


def test_messages_api_streams_thinking_with_its_signature():
    thinking = {"type": "thinking", "thinking": "Plan.", "signature": "c2ln"}
    with FakeAnthropic() as api:
        api.reply_blocks = lambda body: [thinking, {"type": "text", "text": "Done."}]
        status, text = _messages(api, [ASK], stream=True)
    assert status == 200
    events = _sse(text)
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta" and e["index"] == 0]
    assert deltas == [
        {"type": "thinking_delta", "thinking": "Plan."},
        {"type": "signature_delta", "signature": "c2ln"},
    ]
    assert events[1]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}
