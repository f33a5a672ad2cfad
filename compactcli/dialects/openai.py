"""OpenAI chat completions: system/user/assistant/tool messages; assistant tool_calls in two shapes."""

from __future__ import annotations

import json
from collections.abc import Iterator

from compactcli.dialects.base import (
    FITS,
    NO,
    PROVES,
    Dialect,
    FileAccess,
    Image,
    ToolResult,
    ToolUse,
    data_url_image,
    id_of,
    message_file_accesses,
)

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_OWN_ROLES = ("system", "developer", "tool", "function")
_SYSTEM_ROLES = ("system", "developer")


def call_name(call: dict) -> str:
    function = call.get("function")
    if isinstance(function, dict) and function.get("name"):
        return str(function["name"])
    return str(call.get("name") or "unknown")


def _calls(record: dict) -> list:
    """An assistant message's tool calls; a `tool_calls` that is not a list (a number, true) holds none."""
    calls = record.get("tool_calls")
    return calls if isinstance(calls, list) else []


def call_arguments(call: dict) -> object:
    """Arguments as an object: a JSON string (standard shape) or already an object (flattened shape)."""
    function = call.get("function")
    arguments = function.get("arguments") if isinstance(function, dict) else call.get("arguments")
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):  # not JSON, or an integer too long for Python to read
            return {"arguments": arguments}
    return arguments if arguments is not None else {}


def _parts_to_blocks(content: object) -> object:
    if not isinstance(content, list):
        return content if content is not None else ""
    blocks = []
    for part in content:
        if not isinstance(part, dict):
            blocks.append({"type": "text", "text": str(part)})
        elif part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                source = {"type": "base64", "media_type": media, "data": data}
            else:
                source = {"type": "url", "url": url}
            blocks.append({"type": "image", "source": source})
        else:
            blocks.append(part)
    return blocks


class OpenAIDialect(Dialect):
    name = "openai"
    api = "chat-completions"

    def fit(self, record: dict) -> int:
        role = record.get("role")
        if role not in ROLES:
            return NO
        if "content" not in record and not (
            role == "assistant" and ("tool_calls" in record or "function_call" in record)
        ):
            # Every chat message has its content (an assistant's calls may stand in for it): a record with
            # a role and keys of its own but none is another format's, not a message read as empty.
            return NO
        if role in _OWN_ROLES or "tool_calls" in record or "tool_call_id" in record:
            return PROVES
        content = record.get("content")
        if isinstance(content, list) and any(
            isinstance(part, dict) and part.get("type") == "image_url" for part in content
        ):
            return PROVES
        return FITS

    def message(self, record: dict) -> dict | None:
        return record if "role" in record else None

    def normalize(self, record: dict) -> dict | None:
        role = record.get("role")
        if role is None:
            return None
        content = _parts_to_blocks(record.get("content"))
        if role in ("system", "developer"):
            return {"role": "system", "content": content}
        if role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": record.get("tool_call_id"),
                "content": content,
            }
            return {"role": "user", "content": [result]}
        calls = _calls(record)
        if role != "assistant" or not calls:
            return {"role": role, "content": content}
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) and content else []
        if isinstance(content, list):
            blocks.extend(content)
        for call in calls:
            if isinstance(call, dict):
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id"),
                        "name": call_name(call),
                        "input": call_arguments(call),
                    }
                )
        return {"role": "assistant", "content": blocks}

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        for call in _calls(record):
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                yield ToolUse(call["id"], call_name(call))

    def tool_results(self, record: dict) -> list[ToolResult]:
        if record.get("role") != "tool":
            return []
        return [ToolResult(id_of(record.get("tool_call_id")), -1, record.get("content"))]

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        record["content"] = content

    def stays_on_top(self, record: dict) -> bool:
        return record.get("role") in _SYSTEM_ROLES  # instructions: a summary must not paraphrase them

    def summary_records(self, text: str, *, context_records: list[dict], **_: object) -> list[dict]:
        """One user message (the caller puts it after the system messages); when the file's user lines
        carry the flattened variant's extra keys, so does this one (null / empty list)."""
        template = next((r for r in context_records if r.get("role") == "user"), None) or {}
        message: dict = {"role": "user", "content": text}
        for key, value in template.items():
            if key not in message:
                message[key] = [] if isinstance(value, list) else None
        return [message]

    def file_accesses(self, record: dict) -> list[FileAccess]:
        if not _calls(record):
            return []
        return message_file_accesses(self.normalize(record))

    def images(self, record: dict) -> list[Image]:
        return [data_url_image(_part_url(part)) for part in _image_parts(record)]

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        content = record["content"]
        for number, index in enumerate(_image_indexes(record)):
            if number in which:
                image = data_url_image(_part_url(content[index]))
                content[index] = {"type": "text", "text": image.placeholder()}


def _image_indexes(record: dict) -> list[int]:
    content = record.get("content")
    if not isinstance(content, list):
        return []
    return [i for i, part in enumerate(content) if isinstance(part, dict) and part.get("type") == "image_url"]


def _image_parts(record: dict) -> list[dict]:
    return [record["content"][index] for index in _image_indexes(record)]


def _part_url(part: dict) -> object:
    url = part.get("image_url")
    return url.get("url") if isinstance(url, dict) else url


OPENAI = OpenAIDialect()
