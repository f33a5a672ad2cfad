"""What every dialect tells the layers about a record (one parsed JSONL line)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MAIN = "main"  # key of the main conversation; sub-agent conversations get their own keys


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool result inside a record; `slot` is its content block index, or -1 for the whole message."""

    tool_use_id: str | None
    slot: int
    content: object


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str


class Dialect:
    """Records <-> the Anthropic-shaped message views the layers work on."""

    name: str = ""

    def message(self, record: dict) -> dict | None:
        """The API message a record carries (the same, mutable object), or None for other records."""
        raise NotImplementedError

    def normalize(self, record: dict) -> dict | None:
        """An Anthropic-shaped copy {"role", "content"} of the record's message, or None."""
        raise NotImplementedError

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        raise NotImplementedError

    def tool_results(self, record: dict) -> list[ToolResult]:
        raise NotImplementedError

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        """Replace one tool result's content in place."""
        raise NotImplementedError

    def new_tracker(self) -> ConversationTracker:
        return ConversationTracker()


class ConversationTracker:
    """Assigns each record to a conversation. Most dialects have only the main one."""

    def key(self, record: dict) -> str:
        return MAIN


def blocks_tool_uses(content: object, parse_repr=None) -> Iterator[ToolUse]:
    """tool_use blocks (dicts, or stringified SDK blocks when parse_repr is given) in a content list."""
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, dict):
            if block.get("type") in ("tool_use", "server_tool_use") and isinstance(block.get("id"), str):
                yield ToolUse(block["id"], str(block.get("name", "unknown")))
        elif parse_repr is not None and isinstance(block, str):
            parsed = parse_repr(block)
            if parsed and parsed.get("type") in ("tool_use", "server_tool_use") and parsed.get("id"):
                yield ToolUse(str(parsed["id"]), str(parsed.get("name", "unknown")))


def blocks_tool_results(content: object) -> list[ToolResult]:
    if not isinstance(content, list):
        return []
    return [
        ToolResult(block.get("tool_use_id"), index, block.get("content"))
        for index, block in enumerate(content)
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def set_block_content(content: list, slot: int, value: object) -> None:
    content[slot]["content"] = value
