"""Claude Code session logs: typed records; user/assistant records carry the API message in "message"."""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from compactcli.dialects.base import (
    BOUNDARY,
    MAIN,
    NO,
    PROVES,
    SUMMARY,
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


# Fields of a record that say which session (and sub-agent) it belongs to; copied onto the records
# a compaction writes so that the session still resumes. Order as Claude Code writes them.
IDENTITY = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "slug", "agentId")


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
    one_message_per_line = False  # progress, snapshots, summaries... pass through untouched
    results_first = False  # Claude Code moves tool results to the front itself when it sends them
    results_inside_responses = True  # one response split over records, its tool results between them
    has_side_conversations = True

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

    def is_side(self, record: dict) -> bool:
        return is_sidechain(record)

    def compaction(self, record: dict) -> str | None:
        if is_compact_boundary(record):
            return BOUNDARY
        if record.get("type") == "user" and record.get("isCompactSummary") is True:
            return SUMMARY
        return None

    def is_synthetic(self, record: dict) -> bool:
        """An API error notice: shown to the user, never sent to the model."""
        if record.get("type") != "assistant":
            return False
        message = record.get("message")
        model = message.get("model") if isinstance(message, dict) else None
        return record.get("isApiErrorMessage") is True or model == "<synthetic>"

    def call_id(self, record: dict) -> object:
        """One API response is split over several assistant records sharing message.id."""
        message = self.message(record)
        return message.get("id") if message is not None and record.get("type") == "assistant" else None

    def stays_on_top(self, record: dict) -> bool:
        return record.get("type") == "summary"  # the session's title in the resume list

    def link(self, record: dict) -> tuple[str | None, str | None]:
        uuid, parent = record.get("uuid"), record.get("parentUuid")
        return (uuid if isinstance(uuid, str) else None, parent if isinstance(parent, str) else None)

    def set_parent(self, record: dict, parent: str | None) -> None:
        record["parentUuid"] = parent

    def summary_records(
        self,
        text: str,
        *,
        context_records: list[dict],
        pre_tokens: int | None = None,
        now: datetime | None = None,
        new_uuid: Callable[[], str] | None = None,
    ) -> list[dict]:
        """What Claude Code writes at a compaction: a `system` `compact_boundary` record (`parentUuid`
        null, `logicalParentUuid` the last uuid of `context_records`, `compactMetadata` {trigger:
        manual, preTokens}) and a user record with `isCompactSummary` whose content is `text`, both
        with the identity fields of the last of `context_records` that has a sessionId, fresh uuids
        and timestamps."""
        when = now or datetime.now(UTC)
        make_uuid = new_uuid or (lambda: str(uuid_module.uuid4()))
        identity_source = next((r for r in reversed(context_records) if "sessionId" in r), {})
        identity = {k: identity_source[k] for k in IDENTITY if k in identity_source}
        identity.setdefault("isSidechain", False)
        last_uuid = next(
            (r["uuid"] for r in reversed(context_records) if isinstance(r.get("uuid"), str)), None
        )
        boundary_uuid, summary_uuid = make_uuid(), make_uuid()
        boundary = {
            "parentUuid": None,
            "logicalParentUuid": last_uuid,
            **identity,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "timestamp": _iso_millis(when),
            "uuid": boundary_uuid,
            "level": "info",
            "compactMetadata": {"trigger": "manual", "preTokens": pre_tokens or 0},
        }
        summary = {
            "parentUuid": boundary_uuid,
            **identity,
            "type": "user",
            "message": {"role": "user", "content": text},
            "isVisibleInTranscriptOnly": True,
            "isCompactSummary": True,
            "uuid": summary_uuid,
            "timestamp": _iso_millis(when + timedelta(milliseconds=1)),
        }
        return [boundary, summary]


def _iso_millis(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


CLAUDE_CODE = ClaudeCodeDialect()
