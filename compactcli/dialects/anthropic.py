"""Anthropic Messages: one {"role", "content"} message per line; blocks may be stringified SDK objects."""

from __future__ import annotations

from collections.abc import Iterator

from compactcli.dialects.base import (
    BLOCKS,
    FITS,
    NO,
    PROVES,
    THINKING_BLOCKS,
    Dialect,
    FileAccess,
    Image,
    ToolResult,
    ToolUse,
    block_images,
    blocks_failed_calls,
    blocks_tool_results,
    blocks_tool_uses,
    message_file_accesses,
    replace_block_images,
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

    def file_accesses(self, record: dict) -> list[FileAccess]:
        return message_file_accesses(self.normalize(record))

    def failed_calls(self, record: dict) -> list[str]:
        return blocks_failed_calls(record.get("content")) if record.get("role") == "user" else []

    def images(self, record: dict) -> list[Image]:
        return block_images(record.get("content"))

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        replace_block_images(record.get("content"), which)

    def thinking(self, record: dict) -> str | None:
        """BLOCKS only: a message of thinking alone stays (dropping it would join two user messages)."""
        if record.get("role") != "assistant":
            return None
        flags = _thinking_flags(record.get("content"))
        return BLOCKS if any(flags) and not all(flags) else None

    def drop_thinking(self, record: dict) -> None:
        content = record["content"]
        flags = _thinking_flags(content)
        record["content"] = [block for block, thinking in zip(content, flags, strict=True) if not thinking]


def _thinking_flags(content: object) -> list[bool]:
    """Which blocks are thinking, stringified SDK blocks included."""
    if not isinstance(content, list):
        return []
    blocks = normalize_content(content)
    assert isinstance(blocks, list)
    return [isinstance(block, dict) and block.get("type") in THINKING_BLOCKS for block in blocks]


ANTHROPIC = AnthropicDialect()
