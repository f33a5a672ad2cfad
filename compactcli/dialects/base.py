"""The Dialect interface: what every dialect tells the layers about a record (one parsed JSONL line).

docs/design.md, "Dialects". The layers and per-file pipelines ask a dialect, never test its name:
every rule that belongs to one dialect (its sub-agents, its compactions, which records are model
calls, how a summary is written) is a method here, with the default most dialects need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

MAIN = "main"  # key of the main conversation; sub-agent conversations get their own keys
# What Dialect.compaction says of a record that starts the active context anew.
BOUNDARY = "boundary"  # a marker record; the summary follows it
SUMMARY = "summary"  # the record that carries the summary (older Claude Code: no boundary before it)

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
    """Records <-> the Anthropic-shaped message views the layers work on, and the dialect's rules."""

    name: str = ""
    title: str = ""  # what a message calls such a file ("a Codex CLI rollout")
    # Which API's rules validate applies: "messages" (Anthropic), "chat-completions" (OpenAI) or
    # "responses" (OpenAI Responses items: calls and outputs paired by call_id).
    api: str = "messages"
    # Every line is one message: a line that is none is reported by validate (not-a-message).
    one_message_per_line: bool = True
    # The API refuses a user message with text before its tool_result blocks; a dialect whose
    # agent reorders them itself before sending is not held to it.
    results_first: bool = True
    # Sub-agents keep conversations of their own inside the file (Dialect.is_side).
    has_side_conversations: bool = False
    # Tokens every model call sends that the file does not hold (system prompt, tool definitions), for
    # estimate's auto method where no call is recorded; measured where the files record usage.
    default_overhead: int = 0
    # summarize and replay can write a compaction the dialect's agent resumes from (summary_records).
    writes_compactions: bool = True
    # One response's records may have tool results written between them (Claude Code); otherwise a
    # record the model did not write ends the response being recorded (Dialect.call_id).
    results_inside_responses: bool = False

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

    # -- conversations of a file ---------------------------------------------------------------

    def new_tracker(self) -> ConversationTracker:
        """Assigns each record to its conversation (MAIN, or a sub-agent's key)."""
        return ConversationTracker()

    def new_order(self) -> RecordOrder | None:
        """The order the model saw the records in, when it is not the file's (see RecordOrder)."""
        return None

    def is_side(self, record: dict) -> bool:
        """A record of a sub-agent's conversation, not the main one. A file of such records only is
        a sub-agent's own log: it is then the conversation."""
        return False

    # -- the active context ----------------------------------------------------------------------

    def compaction(self, record: dict) -> str | None:
        """BOUNDARY or SUMMARY when the record starts the active context anew; None otherwise."""
        return None

    def restarted_with(self, record: dict) -> list[dict]:
        """For a BOUNDARY record, the records the new context starts with (as this dialect's records),
        when the boundary carries them itself."""
        return []

    def seen_by_model(self, record: dict) -> dict | None:
        """For a record that is no message but whose content the model is sent (Claude Code attachments:
        queued prompts, reminders, file contents), an Anthropic-shaped user message of that content."""
        return None

    def instructions(self, record: dict) -> str | None:
        """A system prompt the file records (sent with every call, kept across compactions), or None."""
        return None

    # -- model calls -------------------------------------------------------------------------------

    def is_synthetic(self, record: dict) -> bool:
        """An assistant record no model call produced (an error notice): never sent to a model."""
        return False

    def call_id(self, record: dict) -> object:
        """The model call an assistant record belongs to; consecutive records with one id (not None)
        are one call. None: every assistant message is a call of its own."""
        return None

    def recorded_call(self, record: dict) -> tuple[int, int, object] | None:
        """(context, output tokens, call key) recorded on a record of its own, or None. Records with
        one key are one model call (its figure written twice); key None: a size, not a call."""
        return None

    def aborts_turn(self, record: dict) -> bool:
        """The turn was interrupted here: the agent answers the calls still in flight itself."""
        return False

    def usage(self, record: dict) -> dict | None:
        """The usage recorded for the model call this record ends or belongs to (Anthropic-shaped:
        input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens), if any."""
        message = self.message(record)
        if message is None or message.get("role") != "assistant" or self.is_synthetic(record):
            return None
        usage = message.get("usage")
        return usage if isinstance(usage, dict) else None

    def stays_on_top(self, record: dict) -> bool:
        """A record kept above the summary when the part it is in is summarized (instructions that a
        summary should not paraphrase, a session's title)."""
        return False

    # -- links between records (the chain a resumed session follows) -----------------------------

    def link(self, record: dict) -> tuple[str | None, str | None]:
        """(own id, parent id) of a record in the dialect's chain; (None, None) without a chain."""
        return None, None

    def set_parent(self, record: dict, parent: str | None) -> None:
        """Point a record at a new parent (its old one was summarized away)."""

    # -- how a compaction is written -------------------------------------------------------------

    def feeds_summary(self, record: dict) -> bool:
        """A record of the summarized part that summary_records needs beyond the edges (Codex keeps
        the user's messages and the session's context in its compaction). When a dialect names such
        records, summary_records gets those, in file order, instead of the edges."""
        return False

    def summary_records(
        self,
        text: str,
        *,
        context_records: list[dict],
        pre_tokens: int | None = None,
        now: datetime | None = None,
        new_uuid: Callable[[], str] | None = None,
    ) -> list[dict]:
        """The record(s) that carry the summary `text`, as the dialect's own agent would write them.

        `context_records` are records of the summarized part in file order (the first user message
        and the last few records suffice); `now` and `new_uuid` make the result reproducible.
        """
        raise NotImplementedError


class RecordOrder(Protocol):
    """Fed every record of a file once, in file order; then the (line, offset) of each record of the
    conversations, in the order the model saw them. Records left out are no part of any conversation
    (an abandoned branch, a title): they stay in the file untouched."""

    def add(self, line: int, offset: int, record: dict) -> None: ...

    def order(self) -> list[tuple[int, int]]: ...


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
