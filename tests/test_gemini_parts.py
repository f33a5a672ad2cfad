"""Gemini API Content parts read into the interface's blocks (docs/design.md, "Gemini Content parts")."""

from __future__ import annotations

import base64
import copy
import json

from compactcli.dialects import gemini_parts as gp
from compactcli.dialects.base import Image

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode()


def test_a_part_list_union_is_a_list_of_parts():
    assert gp.part_list("hi") == [{"text": "hi"}]
    assert gp.part_list("") == []
    assert gp.part_list({"text": "a"}) == [{"text": "a"}]
    assert gp.part_list(["a", {"text": "b"}]) == [{"text": "a"}, {"text": "b"}]
    assert gp.part_list(None) == []
    part = {"text": "same"}
    assert gp.part_list([part])[0] is part


def test_every_kind_of_part_becomes_its_block():
    parts = [
        {"text": "plan", "thought": True, "thoughtSignature": "sig"},
        {"text": "answer"},
        {"functionCall": {"id": "c1", "name": "read_file", "args": {"file_path": "a.py"}}},
        {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "print(1)"}}},
        {"functionResponse": {"id": "c2", "name": "grep", "response": {"error": "no match"}}},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
        {"fileData": {"mimeType": "text/plain", "fileUri": "gs://b/f.txt"}},
        {"executableCode": {"language": "PYTHON", "code": "1+1"}},
    ]
    before = copy.deepcopy(parts)
    out = gp.blocks(parts)
    assert parts == before  # read, not changed
    assert out[0] == {"type": "thinking", "thinking": "plan"}
    assert out[1] == {"type": "text", "text": "answer"}
    assert out[2] == {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"file_path": "a.py"}}
    assert out[3] == {"type": "tool_result", "tool_use_id": "c1", "content": "print(1)"}
    assert out[4] == {"type": "tool_result", "tool_use_id": "c2", "content": '{"error":"no match"}'}
    assert out[5]["type"] == "image" and out[5]["source"]["media_type"] == "image/png"
    assert out[6]["type"] == "document"
    assert out[7] == {"type": "text", "text": "[file: gs://b/f.txt]"}
    assert json.loads(out[8]["text"]) == {"executableCode": {"language": "PYTHON", "code": "1+1"}}


def test_a_response_with_parts_of_its_own_carries_them_as_blocks():
    response = {"id": "c", "name": "read_file", "response": {"output": "see image"}}
    response["parts"] = [{"inlineData": {"mimeType": "image/png", "data": PNG}}]
    content = gp.response_content(response)
    assert content[0] == {"type": "text", "text": "see image"}
    assert content[1]["type"] == "image"


def test_a_content_is_a_message_and_model_is_the_assistant():
    message = gp.content_message({"role": "model", "parts": [{"text": "x"}]})
    assert message == {"role": "assistant", "content": [{"type": "text", "text": "x"}]}
    assert gp.content_message({"role": "user", "parts": "y"})["role"] == "user"


def test_pairing_by_id_else_by_name_and_order():
    pairing = gp.Pairing()
    first = pairing.call({"name": "ls", "args": {}})
    other = pairing.call({"name": "grep", "args": {}})
    second = pairing.call({"name": "ls", "args": {}})
    given = pairing.call({"id": "own", "name": "ls"})
    assert len({first, other, second, given}) == 4
    assert all(key.startswith("#") for key in (first, other, second))
    assert pairing.response({"name": "ls"}) == first
    assert pairing.response({"name": "ls"}) == second
    assert pairing.response({"name": "grep"}) == other
    assert pairing.response({"id": "own", "name": "ls"}) == "own"
    orphan = pairing.response({"name": "ls"})
    assert orphan.startswith("#") and orphan not in (first, second)


def test_blocks_use_the_pairing_for_parts_without_ids():
    pairing = gp.Pairing()
    uses = gp.blocks([{"functionCall": {"name": "ls", "args": {}}}], pairing)
    results = gp.blocks([{"functionResponse": {"name": "ls", "response": {"output": "a"}}}], pairing)
    assert uses[0]["id"] == results[0]["tool_use_id"] is not None
    assert gp.blocks([{"functionCall": {"name": "ls"}}])[0]["id"] is None


def test_calls_and_responses_are_found_by_index():
    parts = [{"text": "a"}, {"functionCall": {"name": "x"}}, {"functionResponse": {"name": "x"}}]
    assert gp.calls(parts) == [(1, {"name": "x"})]
    assert gp.responses(parts) == [(2, {"name": "x"})]


def test_clearing_a_response_keeps_the_pair_and_drops_its_parts():
    response = {"id": "c", "name": "read_file", "response": {"output": "long"}, "parts": [{"text": "p"}]}
    gp.clear_response(response, "[Previous: used read_file]")
    assert response == {"id": "c", "name": "read_file", "response": {"output": "[Previous: used read_file]"}}
    assert gp.response_content(response) == "[Previous: used read_file]"


def test_text_leaves_thoughts_out():
    assert gp.text_of([{"text": "a"}, {"text": "t", "thought": True}, "b", {"text": "c"}]) == "ac"


def test_images_and_their_replacement_reach_inside_responses():
    inner = {"inlineData": {"mimeType": "image/png", "data": PNG}}
    parts = [
        {"inlineData": {"mimeType": "image/jpeg", "data": PNG}},
        {"functionResponse": {"name": "r", "response": {}, "parts": [inner]}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
    ]
    found = gp.images(parts)
    assert [image.media_type for image in found] == ["image/jpeg", "image/png"]
    gp.replace_images(parts, frozenset({1}))
    assert inner == {"text": Image("image/png", found[1].size).placeholder()}
    assert "inlineData" in parts[0]
