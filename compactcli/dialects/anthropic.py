"""Anthropic Messages: one {"role", "content"} message per line; blocks may be stringified SDK objects."""

from __future__ import annotations

from collections.abc import Iterator

from compactcli.dialects.base import (
    FITS,
    NO,
    PROVES,
    Dialect,
    ToolResult,
    ToolUse,
    blocks_tool_results,
    blocks_tool_uses,
    scan_blocks,
    set_block_content,
)
from compactcli.dialects.sdk_repr import looks_like_sdk_repr, parse_sdk_repr

ROLES = ("user", "assistant")
# Blocks only the Messages API has (OpenAI content parts are text and image_url).
_OWN_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}


def normalize_content(content: object) -> object:
    """Content with stringified SDK blocks turned into dicts (a copy only where something changes)."""
    if not isinstance(content, list):
        return content
    blocks = []
    for block in content:
        if isinstance(block, str):
            block = parse_sdk_repr(block) or {"type": "text", "text": block}
        blocks.append(block)
    return blocks


class AnthropicDialect(Dialect):
    name = "anthropic"

    def fit(self, record: dict) -> int:
        if record.get("role") not in ROLES or "content" not in record:
            return NO
        if "tool_calls" in record or "tool_call_id" in record:
            return NO
        content = record["content"]
        if isinstance(content, list):
            for block in content:
                if looks_like_sdk_repr(block) or (
                    isinstance(block, dict) and block.get("type") in _OWN_BLOCKS
                ):
                    return PROVES
        return FITS

    def message(self, record: dict) -> dict | None:
        return record if "role" in record else None

    def normalize(self, record: dict) -> dict | None:
        if "role" not in record:
            return None
        return {"role": record["role"], "content": normalize_content(record.get("content", ""))}

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        return blocks_tool_uses(record.get("content"), parse_sdk_repr)

    def tool_results(self, record: dict) -> list[ToolResult]:
        return blocks_tool_results(record.get("content"))

    def scan(self, record: dict) -> tuple[list[ToolUse], list[ToolResult]]:
        return scan_blocks(record.get("content"), parse_sdk_repr)

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        set_block_content(record["content"], slot, content)

    def summary_records(self, text: str, *, context_records: list[dict], **_: object) -> list[dict]:
        return [{"role": "user", "content": text}]


ANTHROPIC = AnthropicDialect()
