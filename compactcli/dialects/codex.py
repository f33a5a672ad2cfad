"""OpenAI Codex CLI rollouts: `{"timestamp", "type", "payload"}` records (docs/design.md, "Codex rollouts").

What the model sees are the `response_item` payloads (Responses API input items: messages, reasoning,
function and custom tool calls and their outputs, paired by `call_id`). A `compacted` record replaces
everything before it with its `replacement_history`. `event_msg` records are the UI's copies (user and
agent messages, command output, token counts); `session_meta` and `turn_context` describe the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from compactcli.dialects.base import BOUNDARY, NO, PROVES, Dialect, ToolResult, ToolUse

RECORD_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
MESSAGE_ROLES = frozenset({"user", "assistant", "developer", "system"})
# event_msg records that repeat a tool's output for the UI, and the fields that hold it. The diff in
# patch_apply_end `changes` is the patch the model wrote (the call's input), not output: it stays.
UI_COPIES = {
    "exec_command_end": ("aggregated_output", "formatted_output", "stdout", "stderr"),
    "patch_apply_end": ("stdout", "stderr"),
}
LOCAL_SHELL = "local_shell"


def is_record(record: dict) -> bool:
    """A rollout line: a known record type with a payload object."""
    return record.get("type") in RECORD_TYPES and isinstance(record.get("payload"), dict)


def item(record: dict) -> dict | None:
    """The Responses API item a `response_item` record carries, else None."""
    if record.get("type") != "response_item":
        return None
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else None


def event(record: dict) -> dict | None:
    """The payload of an `event_msg` record, else None."""
    if record.get("type") != "event_msg":
        return None
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else None


def event_type(record: dict) -> str | None:
    payload = event(record)
    return payload.get("type") if payload is not None else None


def replacement_history(record: dict) -> list[dict] | None:
    """The items a `compacted` record puts in place of everything before it, else None.

    An old-style record without `replacement_history` (only the summary `message`) still restarts the
    context: Codex rebuilt it from the user messages and the summary; here it starts with the summary.
    """
    if record.get("type") != "compacted":
        return None
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return None
    history = payload.get("replacement_history")
    if isinstance(history, list):
        return [entry for entry in history if isinstance(entry, dict)]
    message = payload.get("message")
    if isinstance(message, str) and message:
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": message}]}]
    return []


def as_record(entry: dict) -> dict:
    """An item of a replacement_history as the `response_item` record that would carry it."""
    return {"type": "response_item", "payload": entry}


def base_instructions(record: dict) -> str | None:
    """The system prompt a `session_meta` record keeps (sent as `instructions` with every call)."""
    if record.get("type") != "session_meta":
        return None
    payload = record.get("payload")
    value = payload.get("base_instructions") if isinstance(payload, dict) else None
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) and value else None


def last_call_usage(record: dict) -> tuple[int, int, bool] | None:
    """(context, output tokens, is a model call) of a `token_count` event, else None.

    `last_token_usage.total_tokens` is the context after the call: its input plus what it wrote, which the
    next call sends again. Right after a compaction Codex records the new history's size with
    `input_tokens` 0: a size, not a model call.
    """
    payload = event(record)
    if payload is None or payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    usage = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(usage, dict):
        return None
    total, given = usage.get("total_tokens"), usage.get("input_tokens")
    if not isinstance(total, int) or total <= 0:
        return None
    output = usage.get("output_tokens")
    is_call = isinstance(given, int) and given > 0
    return total, (output if isinstance(output, int) and is_call else 0), is_call


def call_name(entry: dict) -> str:
    if entry.get("type") == "local_shell_call":
        return LOCAL_SHELL
    return str(entry.get("name") or "unknown")


def _arguments(entry: dict) -> object:
    kind = entry.get("type")
    if kind == "custom_tool_call":
        return {"input": entry.get("input", "")}
    if kind == "local_shell_call":
        return entry.get("action") or {}
    arguments = entry.get("arguments")
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return {"arguments": arguments}
    return arguments if arguments is not None else {}


def _image_block(url: object) -> dict:
    url = url if isinstance(url, str) else ""
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(content: object) -> object:
    """Codex content items (input_text, output_text, input_image) as Anthropic blocks."""
    if isinstance(content, str) or content is None:
        return content or ""
    if not isinstance(content, list):
        return str(content)
    blocks: list = []
    for part in content:
        if not isinstance(part, dict):
            blocks.append({"type": "text", "text": str(part)})
        elif part.get("type") == "input_image":
            blocks.append(_image_block(part.get("image_url")))
        elif isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
        else:
            blocks.append(part)
    return blocks


def output_content(entry: dict) -> object:
    """A call output's content: its string, or its content items as Anthropic blocks."""
    output = entry.get("output")
    if isinstance(output, dict) and "content" in output:  # older rollouts: {"content", "success"}
        output = output["content"]
    if isinstance(output, list):
        return _blocks(output)
    return output if output is not None else ""


def normalize_item(entry: dict) -> dict | None:
    """A Responses API item as an Anthropic-shaped message, or None for items that carry nothing."""
    kind = entry.get("type")
    if kind == "message":
        role = entry.get("role")
        content = _blocks(entry.get("content"))
        if role in ("developer", "system"):
            return {"role": "system", "content": content}
        return {"role": role, "content": content}
    if kind in CALLS:
        use = {"type": "tool_use", "id": entry.get("call_id"), "name": call_name(entry)}
        use["input"] = _arguments(entry)
        return {"role": "assistant", "content": [use]}
    if kind in OUTPUTS:
        result = {"type": "tool_result", "tool_use_id": entry.get("call_id")}
        result["content"] = output_content(entry)
        return {"role": "user", "content": [result]}
    if kind == "reasoning":
        # The reasoning itself is encrypted; only its summary is readable.
        summary = entry.get("summary")
        texts = (
            [s.get("text", "") for s in summary if isinstance(s, dict)] if isinstance(summary, list) else []
        )
        return {"role": "assistant", "content": [{"type": "thinking", "thinking": "\n".join(texts)}]}
    if kind == "compaction":
        # A remote compaction's summary, encrypted: priced as opaque text of its length.
        return {
            "role": "user",
            "content": [{"type": "text", "text": str(entry.get("encrypted_content", ""))}],
        }
    return None


class CodexDialect(Dialect):
    name = "codex"
    title = "a Codex CLI rollout"
    api = "responses"
    one_message_per_line = False  # session_meta, turn_context and event_msg records pass through
    writes_compactions = False  # not yet: Codex's own `compacted` record is not written

    def fit(self, record: dict) -> int:
        return PROVES if is_record(record) else NO

    def message(self, record: dict) -> dict | None:
        return item(record)

    def normalize(self, record: dict) -> dict | None:
        entry = item(record)
        return normalize_item(entry) if entry is not None else None

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        entry = item(record)
        if entry is not None and entry.get("type") in CALLS and isinstance(entry.get("call_id"), str):
            yield ToolUse(entry["call_id"], call_name(entry))

    def tool_results(self, record: dict) -> list[ToolResult]:
        entry = item(record)
        if entry is None or entry.get("type") not in OUTPUTS:
            return []
        return [ToolResult(entry.get("call_id"), -1, entry.get("output"))]  # as in the file

    def result_copies(self, record: dict) -> list[str]:
        payload = event(record)
        if payload is None or payload.get("type") not in UI_COPIES:
            return []
        call_id = payload.get("call_id")
        return [call_id] if isinstance(call_id, str) else []

    def compaction(self, record: dict) -> str | None:
        return BOUNDARY if record.get("type") == "compacted" else None

    def restarted_with(self, record: dict) -> list[dict]:
        history = replacement_history(record)
        return [as_record(entry) for entry in history] if history is not None else []

    def aborts_turn(self, record: dict) -> bool:
        return event_type(record) == "turn_aborted"

    def recorded_call(self, record: dict) -> tuple[int, int, bool] | None:
        return last_call_usage(record)

    def instructions(self, record: dict) -> str | None:
        return base_instructions(record)

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        payload = record["payload"]
        fields = UI_COPIES.get(payload.get("type")) if record.get("type") == "event_msg" else None
        if fields is None:
            payload["output"] = content
            return
        # The UI's copy: the first output field holds the placeholder, the others are emptied.
        present = [name for name in fields if isinstance(payload.get(name), str)]
        for index, name in enumerate(present):
            payload[name] = content if index == 0 else ""


CODEX = CodexDialect()
