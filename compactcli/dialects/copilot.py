"""GitHub Copilot CLI sessions: `events.jsonl` under ~/.copilot/session-state/<id>/ (docs/design.md,
"Copilot CLI sessions").

Every line is an event `{"type": "<area>.<action>", "data": {...}, "id", "timestamp", "parentId"}`. The
model is sent the `user.message` (its `transformedContent`, the text as Copilot first sent it, else
`content`), the `assistant.message` (`content` and its `toolRequests`) and the `tool.execution_complete`
(`result.content`) events; `system.message` holds the system prompt. A successful
`session.compaction_complete` replaces everything before it with its `summaryContent`. Events of a
sub-agent carry `parentToolCallId` (the call that started it) or `agentId`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from compactcli.dialects.base import (
    BOUNDARY,
    MAIN,
    NO,
    PROVES,
    ConversationTracker,
    Dialect,
    FileAccess,
    Scan,
    ToolResult,
    ToolUse,
    named_file_access,
)

EVENT_TYPE = re.compile(r"^[a-z_]+(\.[a-z_]+)+$")
USER = "user.message"
ASSISTANT = "assistant.message"
RESULT = "tool.execution_complete"
SYSTEM = "system.message"
ABORT = "abort"  # the user interrupted the turn; Copilot answers its calls still open when it resumes
COMPACTION_START = "session.compaction_start"
COMPACTION_DONE = "session.compaction_complete"
MESSAGE_EVENTS = frozenset({USER, ASSISTANT, RESULT})
# The fields of a tool's result besides `content` that repeat its output: for the UI `detailedContent`
# (the whole output, or a diff of the file viewed) and `contents` (rich blocks); `structuredContent` (an
# MCP tool's JSON, verbatim); and `binaryResultsForLlm`, the images the model is sent with `content`.
UI_FIELDS = ("detailedContent", "contents", "structuredContent", "binaryResultsForLlm")
# How Copilot frames a compaction's summary when it resumes (seen in what 1.0.102 sends): the user's
# messages before it, then the summary. estimate counts the frame and the summary.
SUMMARY_FRAME = (
    "Some of the conversation history has been summarized to free up context.\n\n"
    "You were originally given instructions from a user over one or more turns. "
    "Here were the user messages:\n\n"
    "Here is a summary of the prior context:\n<summary>\n{summary}\n</summary>"
)
CHECKPOINTS = "checkpoints"
# Copilot runs the postToolUse hooks between a tool's end and its tool.execution_complete, and records
# each run as a hook.start whose input holds a copy of the result (`toolResult`: `textResultForLlm` as the
# model is sent it, `sessionLog` and `contents` for the UI); no call id. Copilot 1.0.10x itself elides
# the long ones as "duplicated pre-hook tool-result field" (docs/design.md, "micro and estimate").
HOOK_START = "hook.start"
HOOK_COPY_TEXT = "textResultForLlm"
HOOK_UI_FIELDS = ("sessionLog", "contents", "binaryResultsForLlm")
# How Copilot 1.0.102 writes a long copy itself: no copy of the output, so never one micro clears.
HOOK_ELIDED = "[copilot:elided "


def is_event(record: dict) -> bool:
    """An events.jsonl line: a dotted event type, a data object, an id and a parentId key."""
    kind = record.get("type")
    return (
        isinstance(kind, str)
        and EVENT_TYPE.match(kind) is not None
        and isinstance(record.get("data"), dict)
        and "parentId" in record
        and "id" in record
    )


def data(record: dict) -> dict:
    value = record.get("data")
    return value if isinstance(value, dict) else {}


def user_text(fields: dict) -> str:
    """What the model is sent of a user message: the text Copilot stored as it sent it (with its own
    context: date, reminders), else the user's words."""
    text = fields.get("transformedContent")
    if not isinstance(text, str):
        text = fields.get("content")
    return text if isinstance(text, str) else ""


def result_content(fields: dict) -> object:
    """What the model is sent of a tool's result: `result.content`, or the error's message."""
    result = fields.get("result")
    if isinstance(result, dict) and "content" in result:
        return result.get("content")
    error = fields.get("error")
    if isinstance(error, dict):
        return error.get("message", "")
    return error if isinstance(error, str) else ""


def hook_copy(record: dict) -> dict | None:
    """The copy of a tool's result a postToolUse hook.start holds (its `toolResult`), else None."""
    fields = data(record) if record.get("type") == HOOK_START else {}
    hook_input = fields.get("input") if fields.get("hookType") == "postToolUse" else None
    copy = hook_input.get("toolResult") if isinstance(hook_input, dict) else None
    return copy if isinstance(copy, dict) and isinstance(copy.get(HOOK_COPY_TEXT), str) else None


def empty_ui_fields(holder: dict, names: tuple[str, ...]) -> None:
    """Empty the UI's copies of an output in place, each as a field of its own type ("", [] or {})."""
    for name in names:
        value = holder.get(name)
        if isinstance(value, str | list | dict):
            holder[name] = type(value)()


def tool_requests(fields: dict) -> list[dict]:
    requests = fields.get("toolRequests")
    if not isinstance(requests, list):
        return []
    return [r for r in requests if isinstance(r, dict) and isinstance(r.get("toolCallId"), str)]


def normalize_event(record: dict) -> dict | None:
    kind = record.get("type")
    if kind not in MESSAGE_EVENTS:
        return None
    fields = data(record)
    if kind == USER:
        return {"role": "user", "content": [{"type": "text", "text": user_text(fields)}]}
    if kind == ASSISTANT:
        blocks: list[dict] = []
        reasoning = fields.get("reasoningText")
        if isinstance(reasoning, str) and reasoning:
            blocks.append({"type": "thinking", "thinking": reasoning})
        text = fields.get("content")
        if isinstance(text, str) and text.strip():
            blocks.append({"type": "text", "text": text})
        for request in tool_requests(fields):
            arguments = request.get("arguments")
            blocks.append(
                {
                    "type": "tool_use",
                    "id": request["toolCallId"],
                    "name": str(request.get("name") or "unknown"),
                    "input": arguments if isinstance(arguments, dict) else {"arguments": arguments},
                }
            )
        return {"role": "assistant", "content": blocks}
    block = {
        "type": "tool_result",
        "tool_use_id": fields.get("toolCallId"),
        "content": result_content(fields),
    }
    if fields.get("success") is False:
        block["is_error"] = True
    return {"role": "user", "content": [block]}


def side_key(record: dict) -> str | None:
    """The sub-agent an event belongs to, or None for the main conversation."""
    agent = record.get("agentId")
    if isinstance(agent, str) and agent:
        return agent
    fields = record.get("data")
    parent = fields.get("parentToolCallId") if isinstance(fields, dict) else None
    return parent if isinstance(parent, str) and parent else None


class SubAgentTracker(ConversationTracker):
    def key(self, record: dict) -> str:
        return side_key(record) or MAIN


def summary_message(summary: str) -> dict:
    """A compaction's summary as the user message Copilot sends in place of the history before it."""
    return {"type": USER, "data": {"content": SUMMARY_FRAME.format(summary=summary)}}


def checkpoint_name(number: int) -> str:
    return f"{number:03d}-compacted-by-compactcli.md"


def checkpoint_number(record: dict) -> int:
    number = data(record).get("checkpointNumber") if record.get("type") == COMPACTION_DONE else None
    return number if isinstance(number, int) and not isinstance(number, bool) else 0


class BackgroundCompactions:
    """The order the model saw a session's events in (Dialect.new_order): Copilot compacts in the
    background, and a compaction's summary replaces only what came before its `compaction_start`; the
    events written meanwhile follow the summary. So a successful `compaction_complete` moves to right
    after the last `compaction_start` before it (docs/design.md, "Copilot's compaction")."""

    __slots__ = ("_tracker", "_places", "_start", "_moved")

    def __init__(self) -> None:
        self._tracker = SubAgentTracker()
        self._places: list[tuple[int, int]] = []
        self._start: int | None = None  # where the pending compaction started, in _places
        self._moved = False

    def add(self, line: int, offset: int, record: dict) -> str:
        kind = record.get("type")
        if kind == COMPACTION_START:
            self._start = len(self._places) + 1  # right after it: what it recorded is before the restart
        elif kind == COMPACTION_DONE and self._start is not None:
            start, self._start = self._start, None
            if data(record).get("success") is True and start < len(self._places):
                self._places.insert(start, (line, offset))
                self._moved = True
                return MAIN
        self._places.append((line, offset))
        return self._tracker.key(record)

    def add_scan(self, line: int, offset: int, record: dict) -> tuple[str, Scan]:
        return self.add(line, offset, record), COPILOT.scan(record)

    def order(self) -> list[tuple[int, int]]:
        return self._places

    def in_file_order(self) -> bool:
        return not self._moved


class CopilotDialect(Dialect):
    name = "copilot"
    title = "a GitHub Copilot CLI session"
    one_message_per_line = False  # turn, hook, usage and session events pass through
    has_side_conversations = True
    # What every call sends that a file without recorded calls does not hold (1.0.10 records neither the
    # system prompt nor usage per call): the system prompt and tool definitions, tuned on the corpus
    # session's first shutdown (docs/design.md, "micro and estimate").
    default_overhead = 52_952
    # The UI's copies are fields of the same event (set_result_content), but for a postToolUse hook's.
    has_result_copies = True

    def fit(self, record: dict) -> int:
        return PROVES if is_event(record) else NO

    def message(self, record: dict) -> dict | None:
        return normalize_event(record) if record.get("type") in MESSAGE_EVENTS else None

    def normalize(self, record: dict) -> dict | None:
        return normalize_event(record)

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        if record.get("type") != ASSISTANT:
            return
        for request in tool_requests(data(record)):
            yield ToolUse(request["toolCallId"], str(request.get("name") or "unknown"))

    def scan(self, record: dict) -> Scan:
        # Asked of every event by micro's first pass: an event holds calls or a result, never both.
        kind = record.get("type")
        if kind == ASSISTANT:
            return list(self.tool_uses(record)), []
        return [], self.tool_results(record) if kind == RESULT else []

    def tool_results(self, record: dict) -> list[ToolResult]:
        if record.get("type") != RESULT:
            return []
        fields = data(record)
        call = fields.get("toolCallId")
        return [ToolResult(call if isinstance(call, str) else None, -1, result_content(fields))]

    def unnamed_result_copy(self, record: dict) -> tuple[str, object] | None:
        """A postToolUse hook.start: the copy of the result Copilot completes next (HOOK_START); not one
        that Copilot elided itself."""
        copy = hook_copy(record)
        if copy is None or copy[HOOK_COPY_TEXT].startswith(HOOK_ELIDED):
            return None
        name = data(record)["input"].get("toolName")
        return (name, copy[HOOK_COPY_TEXT]) if isinstance(name, str) else None

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        """The model's copy gets the placeholder; the UI's copies in the same event are emptied (a
        field of its own type: "" or []), so the event still has the shape Copilot wrote. A hook's
        copy is cleared the same way."""
        copy = hook_copy(record)
        if copy is not None:
            copy[HOOK_COPY_TEXT] = content
            empty_ui_fields(copy, HOOK_UI_FIELDS)
            return
        fields = record["data"]
        result = fields.get("result")
        if isinstance(result, dict):
            result["content"] = content
            empty_ui_fields(result, UI_FIELDS)
        elif isinstance(fields.get("error"), dict):
            fields["error"]["message"] = content
        else:
            fields["error"] = content

    def failed_calls(self, record: dict) -> list[str]:
        if record.get("type") != RESULT:
            return []
        fields = data(record)
        call = fields.get("toolCallId")
        return [call] if isinstance(call, str) and fields.get("success") is False else []

    def file_accesses(self, record: dict) -> list[FileAccess]:
        found = []
        if record.get("type") == ASSISTANT:
            for request in tool_requests(data(record)):
                name = str(request.get("name") or "")
                access = named_file_access(request["toolCallId"], name, request.get("arguments"))
                if access is not None:
                    found.append(access)
        return found

    def working_folder(self, record: dict) -> str | None:
        if record.get("type") not in ("session.start", "session.resume"):
            return None
        context = data(record).get("context")
        folder = context.get("cwd") if isinstance(context, dict) else None
        return folder if isinstance(folder, str) and folder else None

    # -- conversations --

    def new_tracker(self) -> ConversationTracker:
        return SubAgentTracker()

    def is_side(self, record: dict) -> bool:
        return side_key(record) is not None

    def new_order(self) -> BackgroundCompactions:
        return BackgroundCompactions()

    # -- the active context --

    def compaction(self, record: dict) -> str | None:
        if record.get("type") == COMPACTION_DONE and data(record).get("success") is True:
            return BOUNDARY
        return None

    def restarted_with(self, record: dict) -> list[dict]:
        if self.compaction(record) is None:
            return []
        summary = data(record).get("summaryContent")
        return [summary_message(summary if isinstance(summary, str) else "")]

    def is_user_words(self, record: dict) -> bool:
        """The nudges Copilot sends as a user turn with no words of the user's (`content` empty, the
        nudge in `transformedContent`) are not the user's, nor a message with a `source` other than
        "user" (a hidden skill injection `skill-<name>`, a prompt from another agent `agent-<id>`) or
        autopilot's continuation prompt (`isAutopilotContinuation`): Copilot's own test for the user's
        prompts. A compaction's summary counts as theirs, as the other dialects' summaries do: a digest
        of a later part carries it on as the earlier task."""
        fields = data(record)
        content = fields.get("content")
        if fields.get("source") not in (None, "user") or fields.get("isAutopilotContinuation") is True:
            return False
        return not isinstance(content, str) or bool(content.strip())

    def instructions(self, record: dict) -> str | None:
        if record.get("type") != SYSTEM:
            return None
        text = data(record).get("content")
        return text if isinstance(text, str) and text else None

    def aborts_turn(self, record: dict) -> bool:
        """An `abort`: Copilot sends the calls it left open as interrupted ("The execution of this
        tool, or a previous tool was interrupted.")."""
        return record.get("type") == ABORT

    def usage(self, record: dict) -> dict | None:
        return None  # usage lives on records of its own (recorded_call)

    def recorded_call(self, record: dict) -> tuple[int, int, object] | None:
        """docs/design.md, "micro and estimate". A `session.usage_record` (Copilot 1.0.10x): the call's
        input (cache reads included) plus what it wrote, which the next call sends again; keyed by its
        API call id."""
        if record.get("type") == "session.shutdown":  # the context's size when the session ended
            size = data(record).get("currentTokens")
            return (size, 0, None) if isinstance(size, int) and size > 0 else None
        if record.get("type") == COMPACTION_START:  # its size when a compaction started
            parts = [
                data(record).get(name)
                for name in ("systemTokens", "conversationTokens", "toolDefinitionsTokens")
            ]
            size = sum(part for part in parts if isinstance(part, int))
            return (size, 0, None) if size > 0 else None
        if record.get("type") != "session.usage_record" or side_key(record) is not None:
            return None
        usage = data(record).get("usage")
        if not isinstance(usage, dict) or usage.get("interactionType", "conversation-agent") != (
            "conversation-agent"
        ):
            return None
        given, output = usage.get("inputTokens"), usage.get("outputTokens")
        if not isinstance(given, int) or given <= 0:
            return None
        output = output if isinstance(output, int) else 0
        return given + output, output, usage.get("apiCallId") or record.get("id")

    def call_id(self, record: dict) -> object:
        """Copilot 1.0.10x splits one model response into an assistant.message per reasoning boundary
        (`chunkIndex` of `chunkCount`), all with the call's `apiCallId`; without one (1.0.10), each
        assistant.message is a response of its own."""
        if record.get("type") != ASSISTANT:
            return None
        call = data(record).get("apiCallId")
        return call if isinstance(call, str) and call else None

    def stays_on_top(self, record: dict) -> bool:
        return record.get("type") == "session.start"  # Copilot reads the session from its first event

    def heads_file(self, record: dict) -> bool:
        return record.get("type") == "session.start"  # replay -o writes a session Copilot resumes

    # -- a compaction, as Copilot writes one --

    def feeds_summary(self, record: dict) -> bool:
        return record.get("type") == COMPACTION_DONE  # the checkpoints before: the next number

    def summary_records(
        self,
        text: str,
        *,
        context_records: list[dict],
        pre_tokens: int | None = None,
        now: datetime | None = None,
        new_uuid: Callable[[], str] | None = None,
    ) -> list[dict]:
        make_id = new_uuid or (lambda: str(uuid.uuid4()))
        stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        number = max((checkpoint_number(r) for r in context_records), default=0) + 1
        start_id, done_id = make_id(), make_id()
        parents = [r.get("id") for r in context_records if isinstance(r.get("id"), str)]
        start_data: dict = {}
        done_data: dict = {"success": True}
        if pre_tokens is not None:
            start_data["conversationTokens"] = pre_tokens
            done_data["preCompactionTokens"] = pre_tokens
        done_data.update(
            summaryContent=text,
            checkpointNumber=number,
            checkpointPath=f"{CHECKPOINTS}/{checkpoint_name(number)}",
        )
        return [
            {
                "type": COMPACTION_START,
                "data": start_data,
                "id": start_id,
                "timestamp": stamp,
                "parentId": parents[-1] if parents else None,
            },
            {
                "type": COMPACTION_DONE,
                "data": done_data,
                "id": done_id,
                "timestamp": stamp,
                "parentId": start_id,
            },
        ]

    def side_files(self, records: list[dict]) -> dict[str, str]:
        """The checkpoint Copilot writes beside events.jsonl at a compaction: the summary, in markdown
        (docs/design.md, "Copilot's compaction")."""
        return {
            str(record["data"]["checkpointPath"]): str(record["data"]["summaryContent"]) + "\n"
            for record in records
            if record.get("type") == COMPACTION_DONE
        }


COPILOT = CopilotDialect()
