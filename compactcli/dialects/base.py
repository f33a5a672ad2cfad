"""What every dialect tells the layers about a record (one parsed JSONL line)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MAIN = "main"  # key of the main conversation; sub-agent conversations get their own keys

# How well one record matches a dialect (Dialect.fit), for detection (docs/design.md, "Detection").
NO, FITS, PROVES = 0, 1, 2


@dataclass(slots=True)  # not frozen: frozen dataclasses cost 6x more to create, on the hot path
class ToolResult:
    """One tool result inside a record; `slot` is its content block index, or -1 for the whole message."""

    tool_use_id: str | None
    slot: int
    content: object


@dataclass(slots=True)
class ToolUse:
    id: str
    name: str


class Dialect:
    """Records <-> the Anthropic-shaped message views the layers work on."""

    name: str = ""

    def fit(self, record: dict) -> int:
        """PROVES: only this dialect writes such a record; FITS: it could be one of ours; NO: it is not."""
        raise NotImplementedError

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

    def scan(self, record: dict) -> tuple[list[ToolUse], list[ToolResult]]:
        """Tool uses and results of a record at once (one walk over its blocks where the dialect can)."""
        return list(self.tool_uses(record)), self.tool_results(record)

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        """Replace one tool result's content in place (or, on a record of result_copies, the copy)."""
        raise NotImplementedError

    def result_copies(self, record: dict) -> list[str]:
        """Tool use ids whose result this record repeats elsewhere than in the conversation (a UI copy
        on a record of its own); micro clears such a copy with the result."""
        return []

    def new_tracker(self) -> ConversationTracker:
        return ConversationTracker()

    def compaction(self, record: dict) -> list[dict] | None:
        """For a record where a recorded compaction restarts the active context, the records the new
        context starts with (as this dialect's records); None for any other record."""
        return None

    def recorded_call(self, record: dict) -> tuple[int, int, bool] | None:
        """(context, output tokens, is a model call) recorded on a record of its own, or None."""
        return None

    def instructions(self, record: dict) -> str | None:
        """A system prompt the file records (sent with every call, kept across compactions), or None."""
        return None


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


def scan_blocks(content: object, parse_repr=None) -> tuple[list[ToolUse], list[ToolResult]]:
    """blocks_tool_uses and blocks_tool_results in one walk over a content list."""
    uses: list[ToolUse] = []
    results: list[ToolResult] = []
    if not isinstance(content, list):
        return uses, results
    for index, block in enumerate(content):
        if isinstance(block, dict):
            kind = block.get("type")
            if kind == "tool_result":
                results.append(ToolResult(block.get("tool_use_id"), index, block.get("content")))
            elif kind in ("tool_use", "server_tool_use") and isinstance(block.get("id"), str):
                uses.append(ToolUse(block["id"], str(block.get("name", "unknown"))))
        elif parse_repr is not None and isinstance(block, str):
            parsed = parse_repr(block)
            if parsed and parsed.get("type") in ("tool_use", "server_tool_use") and parsed.get("id"):
                uses.append(ToolUse(str(parsed["id"]), str(parsed.get("name", "unknown"))))
    return uses, results


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
