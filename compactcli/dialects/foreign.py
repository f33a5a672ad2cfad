"""Formats compactcli does not read, recognised so that a refusal can say what the file is.

docs/design.md, "Detection": a file none of the dialects claims is refused (exit 65) with the file,
its first record's keys and, where one of these recognisers knows it, the format's name.
"""

from __future__ import annotations

import re

_GEMINI_TYPES = {"init", "message", "tool_use", "tool_result", "error", "result"}
# Claude Managed Agents name persisted events `{domain}.{action}`: user.message, agent.tool_use, ...
_MANAGED_AGENTS_TYPE = re.compile(r"^(user|agent|session|span)\.[a-z_]+$")


def record_format(record: dict) -> str | None:
    """The name of the foreign format one record belongs to, or None when it is not recognised."""
    if {"sessionId", "projectHash"} <= record.keys() and isinstance(record.get("messages"), list):
        return "an older Gemini CLI session (one session-*.json document; Gemini CLI rewrites it on resume)"
    kind = record.get("type")
    if not isinstance(kind, str):
        return None
    if "uuid" in record and "sessionId" in record and is_qwen_record(record):
        return "a Qwen Code session"
    if _MANAGED_AGENTS_TYPE.match(kind):
        return "a Claude Managed Agents event log"
    if kind in _GEMINI_TYPES and _is_gemini_event(kind, record):
        return "a Gemini CLI stream-json log"
    return None


def is_qwen_record(record: dict) -> bool:
    """Qwen Code's records look like Claude Code's but keep the model's Content (`message.parts`, Gemini's
    shape) and their own `systemPayload`."""
    message = record.get("message")
    return "systemPayload" in record or (isinstance(message, dict) and "parts" in message)


def _is_gemini_event(kind: str, record: dict) -> bool:
    if kind == "init":
        return "model" in record and ("session_id" in record or "sessionId" in record)
    if kind == "tool_use":
        return "tool_id" in record or "tool_name" in record
    if kind == "tool_result":
        return "tool_id" in record
    if kind == "result":
        return "stats" in record or "status" in record
    # message events: {"type": "message", "timestamp", "role", "content": str, "delta"?}
    return kind == "message" and "timestamp" in record and isinstance(record.get("content"), str)


def text_format(first_line: bytes) -> str | None:
    """The name of a whole-file JSON format that is not JSONL, judged by its first non-blank line."""
    head = first_line.strip().lstrip(b"\xef\xbb\xbf")
    if head.startswith(b"["):
        return "a JSON array, not JSONL"
    # Called only for a line that does not parse: `{` alone, or a first member ending in a comma.
    if head == b"{" or (head.startswith(b"{") and len(head) < 500 and head.endswith((b",", b"{", b"["))):
        return "a pretty-printed JSON document, not JSONL"
    return None
