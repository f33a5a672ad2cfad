"""Claude Code session logs: typed records; user/assistant records carry the API message in "message"."""

from __future__ import annotations

from collections.abc import Iterator

from compactcli.dialects.base import (
    MAIN,
    NO,
    PROVES,
    ConversationTracker,
    Dialect,
    ToolResult,
    ToolUse,
    blocks_tool_results,
    blocks_tool_uses,
    scan_blocks,
    set_block_content,
)

MESSAGE_TYPES = ("user", "assistant")
# Record types Claude Code writes; newer ones (which all carry sessionId) are recognised by that key.
RECORD_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "attachment",
    "permission-mode",
    "last-prompt",
    "custom-title",
}


def is_compact_boundary(record: dict) -> bool:
    return record.get("type") == "system" and record.get("subtype") == "compact_boundary"


def is_sidechain(record: dict) -> bool:
    return record.get("isSidechain") is True


class SidechainTracker(ConversationTracker):
    """Sub-agent conversations: one per agentId, else one per tree of sidechain records.

    A sidechain record whose parent is null or not a sidechain record starts a tree; its descendants (through
    parentUuid) belong to it. Only sidechain uuids are remembered, so memory follows the sub-agent records.
    """

    def __init__(self) -> None:
        self._root_of: dict[str, str] = {}

    def key(self, record: dict) -> str:
        if not is_sidechain(record):
            return MAIN
        uuid = record.get("uuid")
        parent = record.get("parentUuid")
        root = self._root_of.get(parent) if isinstance(parent, str) else None
        if root is None:
            root = uuid if isinstance(uuid, str) else f"line-without-uuid:{id(record)}"
        if isinstance(uuid, str):
            self._root_of[uuid] = root
        agent = record.get("agentId")
        return f"agent:{agent}" if isinstance(agent, str) and agent else f"sidechain:{root}"


class ClaudeCodeDialect(Dialect):
    name = "claude-code"

    def fit(self, record: dict) -> int:
        kind = record.get("type")
        if not isinstance(kind, str) or "role" in record or "payload" in record:
            return NO
        return PROVES if kind in RECORD_TYPES or "sessionId" in record else NO

    def message(self, record: dict) -> dict | None:
        message = record.get("message")
        if record.get("type") in MESSAGE_TYPES and isinstance(message, dict):
            return message
        return None

    def normalize(self, record: dict) -> dict | None:
        message = self.message(record)
        if message is None:
            return None
        return {"role": message.get("role", record["type"]), "content": message.get("content", "")}

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        message = self.message(record)
        return blocks_tool_uses(message.get("content")) if message else iter(())

    def tool_results(self, record: dict) -> list[ToolResult]:
        message = self.message(record)
        return blocks_tool_results(message.get("content")) if message else []

    def scan(self, record: dict) -> tuple[list[ToolUse], list[ToolResult]]:
        message = self.message(record)
        return scan_blocks(message.get("content")) if message else ([], [])

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        set_block_content(record["message"]["content"], slot, content)
        # The UI's copy of the output would keep what was cleared.
        record.pop("toolUseResult", None)

    def new_tracker(self) -> ConversationTracker:
        return SidechainTracker()


CLAUDE_CODE = ClaudeCodeDialect()
