"""Transcript dialects and their detection (DESIGN.md 2)."""

from __future__ import annotations

from compactcli.dialects.anthropic import ANTHROPIC
from compactcli.dialects.base import MAIN, ConversationTracker, Dialect, ToolResult, ToolUse
from compactcli.dialects.claude_code import CLAUDE_CODE
from compactcli.dialects.openai import OPENAI
from compactcli.dialects.sdk_repr import looks_like_sdk_repr

DIALECTS: dict[str, Dialect] = {d.name: d for d in (ANTHROPIC, CLAUDE_CODE, OPENAI)}
NAMES = tuple(DIALECTS)

_CLAUDE_CODE_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "attachment",
}
_OPENAI_ROLES = {"system", "developer", "tool", "function"}
_ANTHROPIC_BLOCKS = {
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
}


def vote(record: dict) -> str | None:
    """Which dialect one record proves, or None when it fits several (a plain text message)."""
    if "role" not in record:
        if record.get("type") in _CLAUDE_CODE_TYPES or "sessionId" in record:
            return CLAUDE_CODE.name
        return None
    if record.get("role") in _OPENAI_ROLES or "tool_calls" in record or "tool_call_id" in record:
        return OPENAI.name
    content = record.get("content")
    if isinstance(content, list):
        for block in content:
            if looks_like_sdk_repr(block):
                return ANTHROPIC.name
            if isinstance(block, dict) and block.get("type") in _ANTHROPIC_BLOCKS:
                return ANTHROPIC.name
            if isinstance(block, dict) and block.get("type") == "image_url":
                return OPENAI.name
    return None


def get(name: str) -> Dialect:
    return DIALECTS[name]


__all__ = [
    "ANTHROPIC",
    "CLAUDE_CODE",
    "DIALECTS",
    "MAIN",
    "NAMES",
    "OPENAI",
    "ConversationTracker",
    "Dialect",
    "ToolResult",
    "ToolUse",
    "get",
    "vote",
]
