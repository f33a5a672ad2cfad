"""Gemini CLI sessions, `~/.gemini/tmp/<project>/chats/session-*.jsonl` (docs/design.md,
"Gemini CLI sessions").

The first line is the session's header `{sessionId, projectHash, startTime, lastUpdated, kind}`; then
message records `{id, timestamp, type, content, ...}` (type user, gemini, info, error, warning) and
`{"$set": {...}}` patches of the conversation, `{"$rewindTo": id}` records. A message record is upserted by
its `id`: a later line with the same id replaces it where it first stood (Gemini CLI's
`loadConversationRecord`). A `$set` with `messages` is a checkpoint: the history is those messages from
there on (Gemini CLI writes one after it compacts). A `gemini` record keeps the model's turn (`content`,
`thoughts`) and its tool calls with their results (`toolCalls[].result`: functionResponse parts), which
Gemini CLI sends as the model's turn and a user turn of the responses (`convertSessionToClientHistory`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from uuid import uuid4

from compactcli.dialects import gemini_parts as gp
from compactcli.dialects.base import (
    BOUNDARY,
    FITS,
    MAIN,
    NO,
    NOTHING_SCANNED,
    PROVES,
    Dialect,
    FileAccess,
    Image,
    Scan,
    ToolResult,
    ToolUse,
    named_file_access,
)

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
NOT_SENT = frozenset({"info", "error", "warning"})  # notices for the UI only
SET, REWIND = "$set", "$rewindTo"
# User turns Gemini CLI leaves out of the history it resumes (`isIgnoredUserContent`): commands and the
# context it writes itself, sent fresh with every session.
IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")
# Gemini CLI's file tools: read_file's output is what a later edit relies on (micro keeps it by default).
READ_TOOL = "read_file"
FILE_TOOLS = {"read_file": False, "write_file": True, "replace": True, "edit": True}
SLOT_BITS = 16  # a result's slot in a checkpoint: message index << SLOT_BITS | call index


def is_header(record: dict) -> bool:
    return isinstance(record.get("sessionId"), str) and "projectHash" in record and "id" not in record


def is_message(record: dict) -> bool:
    return isinstance(record.get("id"), str) and record.get("type") in MESSAGE_TYPES and "content" in record


def checkpoint(record: dict) -> list[dict] | None:
    """The messages a `$set` checkpoint restarts the history with, else None."""
    patch = record.get(SET)
    messages = patch.get("messages") if isinstance(patch, dict) else None
    if not isinstance(messages, list):
        return None
    return [entry for entry in messages if isinstance(entry, dict) and is_message(entry)]


# How Gemini CLI names a part that is no text when it reads a turn as a string (`partToString`, verbose).
_PART_TAGS = (
    ("videoMetadata", "[Video Metadata]"),
    ("thought", "[Thought: true]"),
    ("codeExecutionResult", "[Code Execution Result]"),
    ("executableCode", "[Executable Code]"),
    ("fileData", "[File Data]"),
    ("functionCall", "[Function Call]"),
    ("functionResponse", "[Function Response]"),
    ("inlineData", "[Media]"),
)


def _as_string(parts: list) -> str:
    out = []
    for part in parts:
        tag = next((tag for key, tag in _PART_TAGS if isinstance(part, dict) and key in part), None)
        out.append(tag if tag is not None else str(part.get("text") or "") if isinstance(part, dict) else "")
    return "".join(out)


def is_ignored_user(record: dict) -> bool:
    """A user turn Gemini CLI leaves out when it resumes: empty, a command, or its own context."""
    text = _as_string(gp.part_list(record.get("content"))).strip()
    return not text or text.startswith(IGNORED_PREFIXES)


def tool_calls(record: dict) -> list[dict]:
    calls = record.get("toolCalls") if record.get("type") == "gemini" else None
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def model_parts(record: dict, calls: list[dict] | None = None) -> list:
    """The model's turn of a gemini record, as Gemini CLI rebuilds it: the content alone when it holds
    calls or thoughts (newer sessions), else thoughts, content and the recorded calls (`calls`: its
    tool_calls, where the caller has them)."""
    content = gp.part_list(record.get("content"))
    if any(isinstance(p, dict) and ("functionCall" in p or p.get("thought")) for p in content):
        return content
    parts: list = []
    thoughts = record.get("thoughts")
    for thought in thoughts if isinstance(thoughts, list) else []:
        if isinstance(thought, dict):
            subject, text = thought.get("subject"), str(thought.get("description") or "")
            parts.append({"text": f"**{subject}** {text}" if subject else text, "thought": True})
    parts.extend(content)
    for call in tool_calls(record) if calls is None else calls:
        parts.append(
            {"functionCall": {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}}
        )
    return parts


def result_parts(call: dict) -> list:
    """The parts a tool call's result gives the model (a string result is `{"output": ...}`)."""
    result = call.get("result")
    if not result:
        return []
    if isinstance(result, str):
        return [
            {
                "functionResponse": {
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "response": {"output": result},
                }
            }
        ]
    return gp.part_list(result)


def normalize_message(record: dict) -> dict | None:
    """A message record as the Anthropic-shaped message of what Gemini CLI sends of it, or None. A gemini
    record with tool calls is the model's turn followed by the responses: one message, calls first."""
    kind = record.get("type")
    if kind == "user":
        if is_ignored_user(record):
            return None
        return {"role": "user", "content": gp.blocks(gp.part_list(record.get("content")))}
    if kind != "gemini":
        return None
    calls = tool_calls(record)
    blocks = gp.blocks(model_parts(record, calls))
    for call in calls:
        blocks.extend(gp.blocks(result_parts(call)))
    return {"role": "assistant", "content": blocks} if blocks else None


def answers(parts: list) -> list[tuple[dict, list[int]]]:
    """Each functionResponse among the parts, with the indices of the media parts after it (before the next
    response): the images and files a tool returned, which Gemini CLI puts beside its response when the
    model takes none inside one (`convertToFunctionResponse`). They are the tool's output too."""
    found: list[tuple[dict, list[int]]] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        response = part.get("functionResponse")
        if isinstance(response, dict):
            found.append((response, []))
        elif found and ("inlineData" in part or "fileData" in part):
            found[-1][1].append(index)
    return found


def answer_content(response: dict, parts: list, media: list[int]) -> object:
    """What a response gives the model, the media beside it included."""
    content = gp.response_content(response)
    if not media:
        return content
    head = content if isinstance(content, list) else [{"type": "text", "text": content}]
    return [*head, *gp.blocks([parts[index] for index in media])]


def _call_answers(record: dict) -> list[tuple[dict, list, dict, list[int]]]:
    """(call, its result's parts, response, media) of each response a gemini record's calls hold, in order.
    Each call's own; and, in the checkpoint Gemini CLI writes when it resumes a session, those of the calls
    beside it: `updateMessagesFromHistory` gives each call of a turn every part of the turn's answer, and
    Gemini CLI sends every one (`convertSessionToClientHistory`)."""
    found = []
    for call in tool_calls(record):
        parts = result_parts(call)
        for response, media in answers(parts):
            found.append((call, parts, response, media))
    return found


def _call_answer(record: dict, number: int) -> tuple[dict, list, dict, list[int]]:
    """_call_answers(record)[number], read directly for the most of the records: one call whose result is
    one part, its response."""
    calls = tool_calls(record)
    if number == 0 and len(calls) == 1:
        result = calls[0].get("result")
        if type(result) is list and len(result) == 1 and type(result[0]) is dict:
            response = result[0].get("functionResponse")
            if isinstance(response, dict):
                return calls[0], result, response, []
    return _call_answers(record)[number]


def _results(record: dict, base: int = 0, calls: list[dict] | None = None) -> list[ToolResult]:
    """The calls' outputs a message record holds: in a gemini record's toolCalls (`calls`: its
    tool_calls, where the caller has them), in a user record's functionResponse parts (Gemini CLI 0.61
    records the responses it sends as a user record of their own too). A result's slot is the response's
    number in the record."""
    if record.get("type") == "user":
        parts = gp.part_list(record.get("content"))
        return [
            ToolResult(gp.given_id(response), base | number, answer_content(response, parts, media))
            for number, (response, media) in enumerate(answers(parts))
        ]
    if calls is None:
        calls = tool_calls(record)
    if len(calls) == 1:
        # The most of the records: one call whose result is one part, so no media beside its response.
        call = calls[0]
        result = call.get("result")
        if type(result) is list and len(result) == 1 and type(result[0]) is dict:
            response = result[0].get("functionResponse")
            if not isinstance(response, dict):
                return []
            return [ToolResult(gp.given_id(response) or call.get("id"), base, gp.response_content(response))]
    return [
        ToolResult(
            gp.given_id(response) or call.get("id"), base | number, answer_content(response, parts, media)
        )
        for number, (call, parts, response, media) in enumerate(_call_answers(record))
    ]


def _result_count(record: dict) -> int:
    """len(_results(record)), without reading the outputs (a response that is no `{"output"}` string
    would be serialized for it)."""
    if record.get("type") == "user":
        return len(gp.responses(gp.part_list(record.get("content"))))
    return sum(len(gp.responses(result_parts(call))) for call in tool_calls(record))


def _drop_parts(parts: object, drop: list[int]) -> object:
    """A part list without the parts at `drop` (a new list; anything else as it is)."""
    if not drop or not isinstance(parts, list):
        return parts
    gone = set(drop)
    return [part for index, part in enumerate(parts) if index not in gone]


def _clears_display(display: object) -> bool:
    return (isinstance(display, str) and display != "") or isinstance(display, list)


def clear_display(call: dict, content: object) -> None:
    """The UI's rendering of a cleared output (`resultDisplay`: the text, or a shell's lines of styled
    tokens) would keep it: it shows what the model is now sent. An object stays: Gemini CLI reads state
    from it (an edit's file diff, which /rewind reverts the file with; the todo list; a sub-agent's
    progress), docs/design.md, "Gemini CLI sessions"."""
    if _clears_display(call.get("resultDisplay")):
        call["resultDisplay"] = content


def _response_edits(response: dict, text: str) -> list[tuple[str, object, object]] | None:
    """gp.clear_response's change as a value replaced, where it is one (the response has no parts)."""
    if "response" not in response or "parts" in response:
        return None
    return [("response", response["response"], {"output": text})]


def display_left(call: dict) -> bool:
    """Whether a call's rendering still differs from its output where clear_display would make them
    one (an earlier version cleared `result` alone)."""
    display = call.get("resultDisplay")
    if not _clears_display(display):
        return False
    result = call.get("result")
    if isinstance(result, str):
        return display != result
    for _, response in gp.responses(gp.part_list(result)):
        return display != gp.response_content(response)
    return False


def _image_part_lists(record: dict) -> list[list]:
    """The part lists of a record that may hold images, in order: a user turn's content; a gemini record's
    calls' results (an image read_file or an MCP tool returned: inside the response or beside it); those
    of the messages of a checkpoint. Their parts are the record's own objects."""
    found: list[list] = []
    for source in checkpoint(record) or [record]:
        kind = source.get("type")
        if kind == "user":
            found.append(gp.part_list(source.get("content")))
        elif kind == "gemini":
            found.extend(gp.part_list(call.get("result")) for call in tool_calls(source))
    return found


class UpsertOrder:
    """The records of the history Gemini CLI loads, in its order: each message id where it first stood
    (since the last checkpoint or rewind), read at its last version. Fed to micro (`add_scan`), every
    version of a message that is still in the history is kept in the order, beside its last one: each
    holds the tool outputs micro clears. The session's header comes first: no message, but what Gemini
    CLI finds the session by (replay -o writes it on top)."""

    def __init__(self) -> None:
        self._header: list[tuple[int, int]] = []  # (line, offset) of the first header
        self._slots: dict[str, list[tuple[int, int]]] = {}  # id -> versions (line, offset), in order
        self._all_versions = False
        self._lines: list[int] = []

    def add(self, line: int, offset: int, record: dict) -> str:
        self._lines.append(line)
        # A message first, the most of the records (a header has no id: never both).
        if is_message(record):
            self._slots.setdefault(record["id"], []).append((line, offset))
        elif is_header(record):
            self._header = self._header or [(line, offset)]
        elif checkpoint(record) is not None:
            self._slots = {f"{SET}:{line}": [(line, offset)]}
        elif isinstance(record.get(REWIND), str):
            ids = list(self._slots)
            if record[REWIND] in self._slots:
                for key in ids[ids.index(record[REWIND]) :]:
                    del self._slots[key]
            else:
                self._slots = {}
        return MAIN

    def add_scan(self, line: int, offset: int, record: dict) -> tuple[str, Scan]:
        self._all_versions = True
        if len(record) == 1:  # as often as the messages: a patch of the session's fields alone
            patch = record.get(SET)
            if type(patch) is dict and "messages" not in patch:  # no message, no checkpoint: as add, scan
                self._lines.append(line)
                return MAIN, NOTHING_SCANNED
        return self.add(line, offset, record), GEMINI_CLI.scan(record)

    def order(self) -> list[tuple[int, int]]:
        if self._all_versions:
            return self._header + [version for versions in self._slots.values() for version in versions]
        return self._header + [versions[-1] for versions in self._slots.values()]

    def in_file_order(self) -> bool:
        # Every line in order() and in file order: one per line, each after the one before. Counted
        # first: a session's patches (lines of no message) already say no.
        versions = sum(map(len, self._slots.values())) if self._all_versions else len(self._slots)
        if len(self._header) + versions != len(self._lines):
            return False
        lines = [line for line, _ in self.order()]
        return all(map(int.__lt__, lines, lines[1:]))


class GeminiCliDialect(Dialect):
    name = "gemini-cli"
    title = "a Gemini CLI session"
    api = "responses"  # functionCall and functionResponse are paired by id
    one_message_per_line = False  # the header, patches and notices pass through
    results_repeat = True  # each version of a record holds its calls' results
    # Gemini CLI's system prompt and tool declarations, which the file does not hold: the median gap
    # between the recorded input and the heuristic count of one real session's calls (measured on the
    # other session of the corpus, with more tools: still half under; recorded usage is used instead
    # wherever the file has it).
    default_overhead = 10_956

    def fit(self, record: dict) -> int:
        if is_header(record) and "messages" not in record:
            return PROVES
        if isinstance(record.get(SET), dict) or isinstance(record.get(REWIND), str):
            return PROVES
        if is_message(record):
            return PROVES if record["type"] == "gemini" else FITS
        return NO

    def message(self, record: dict) -> dict | None:
        return record if is_message(record) and record.get("type") not in NOT_SENT else None

    def normalize(self, record: dict) -> dict | None:
        return normalize_message(record) if is_message(record) else None

    def new_order(self) -> UpsertOrder:
        return UpsertOrder()

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        for source in checkpoint(record) or [record]:
            for call in tool_calls(source):
                if isinstance(call.get("id"), str):
                    yield ToolUse(call["id"], str(call.get("name") or "unknown"))
            for _, call in gp.calls(gp.part_list(source.get("content"))):
                if gp.given_id(call):
                    yield ToolUse(call["id"], gp.name_of(call))

    def scan(self, record: dict) -> Scan:
        # micro's first pass asks this of every record: one read of the record, not tool_uses' and
        # tool_results' each (a checkpoint, rare, is left to them).
        patch = record.get(SET)
        if patch is not None and checkpoint(record) is not None:
            return list(self.tool_uses(record)), self.tool_results(record)
        kind = record.get("type")
        content = record.get("content")
        if content is None and kind != "gemini":  # a patch, a header: no call, no result
            return NOTHING_SCANNED
        parts = gp.part_list(content) if content is not None else []
        uses = [ToolUse(call["id"], gp.name_of(call)) for _, call in gp.calls(parts) if gp.given_id(call)]
        if kind == "user":
            results = _results(record)
            return (uses, results) if uses or results else NOTHING_SCANNED
        calls = tool_calls(record)
        if not calls:  # the most of the messages: a turn of text
            return (uses, []) if uses else NOTHING_SCANNED
        own = [
            ToolUse(call["id"], str(call.get("name") or "unknown"))
            for call in calls
            if isinstance(call.get("id"), str)
        ]
        return own + uses, _results(record, calls=calls)

    def result_count(self, record: dict) -> int:
        messages = checkpoint(record)
        if messages is None:
            return _result_count(record)
        return sum(_result_count(entry) for entry in messages)

    def tool_results(self, record: dict) -> list[ToolResult]:
        messages = checkpoint(record)
        if messages is None:
            return _results(record)
        return [result for n, entry in enumerate(messages) for result in _results(entry, n << SLOT_BITS)]

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        messages = checkpoint(record)
        holder = messages[slot >> SLOT_BITS] if messages is not None else record
        number = slot & ((1 << SLOT_BITS) - 1)
        if holder.get("type") == "user":
            response, media = answers(gp.part_list(holder.get("content")))[number]
            gp.clear_response(response, str(content))
            holder["content"] = _drop_parts(holder.get("content"), media)
            return
        call, _, response, media = _call_answer(holder, number)
        if gp.given_id(response) in (None, call.get("id")):  # the call's own output, not a neighbour's
            clear_display(call, content)
        if isinstance(call.get("result"), str):
            call["result"] = content
            return
        gp.clear_response(response, str(content))
        call["result"] = _drop_parts(call.get("result"), media)

    def ui_copy_left(self, record: dict, slot: int) -> bool:
        messages = checkpoint(record)
        holder = messages[slot >> SLOT_BITS] if messages is not None else record
        if holder.get("type") == "user":
            return False  # a response recorded on its own: no rendering beside it
        calls = tool_calls(holder)
        index = slot & ((1 << SLOT_BITS) - 1)
        return index < len(calls) and display_left(calls[index])

    def result_edits(self, record: dict, slot: int, content: str) -> list[tuple[str, object, object]] | None:
        # set_result_content's changes, where it only replaces values: not in a checkpoint (rare), not
        # where media beside the response go too.
        if slot >> SLOT_BITS or checkpoint(record) is not None:
            return None
        if record.get("type") == "user":
            response, media = answers(gp.part_list(record.get("content")))[slot]
            return None if media else _response_edits(response, content)
        call, _, response, media = _call_answer(record, slot)
        if media:
            return None
        edits: list[tuple[str, object, object]] = []
        display = call.get("resultDisplay")
        if gp.given_id(response) in (None, call.get("id")) and _clears_display(display):
            edits.append(("resultDisplay", display, content))
        result = call.get("result")
        if isinstance(result, str):
            return [*edits, ("result", result, content)]
        found = _response_edits(response, content)
        return None if found is None else edits + found

    def compaction(self, record: dict) -> str | None:
        return BOUNDARY if checkpoint(record) is not None else None

    def restarted_with(self, record: dict) -> list[dict]:
        return checkpoint(record) or []

    def call_id(self, record: dict) -> object:
        return None  # every gemini record is one model call

    def usage(self, record: dict) -> dict | None:
        tokens = record.get("tokens") if record.get("type") == "gemini" else None
        if not isinstance(tokens, dict) or not isinstance(tokens.get("input"), int):
            return None
        cached = tokens.get("cached") if isinstance(tokens.get("cached"), int) else 0
        output = sum(
            tokens.get(key) or 0 for key in ("output", "thoughts") if isinstance(tokens.get(key), int)
        )
        return {
            "input_tokens": tokens["input"] - cached,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached,
            "output_tokens": output,
        }

    def stays_on_top(self, record: dict) -> bool:
        return is_header(record)

    def heads_file(self, record: dict) -> bool:
        return is_header(record)  # Gemini CLI finds a session to resume by its header's sessionId

    def is_user_words(self, record: dict) -> bool:
        return record.get("type") == "user"

    def file_accesses(self, record: dict) -> list[FileAccess]:
        found = []
        for call in tool_calls(record):
            if isinstance(call.get("id"), str):
                access = named_file_access(call["id"], str(call.get("name") or ""), call.get("args"))
                if access is not None:
                    found.append(access)
        return found

    def failed_calls(self, record: dict) -> list[str]:
        return [
            call["id"]
            for call in tool_calls(record)
            if isinstance(call.get("id"), str) and call.get("status") in ("error", "cancelled")
        ]

    def images(self, record: dict) -> list[Image]:
        return gp.images_in(_image_part_lists(record))

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        gp.replace_images_in(_image_part_lists(record), which)

    def summary_records(
        self,
        text: str,
        *,
        context_records: list[dict],
        pre_tokens: int | None = None,
        now: datetime | None = None,
        new_uuid: Callable[[], str] | None = None,
    ) -> list[dict]:
        return compression_records(text, now or datetime.now(UTC), new_uuid or (lambda: str(uuid4())))


# What Gemini CLI writes after it compresses the history (chatCompressionService, `extraHistory`, saved by
# ChatRecordingService.updateMessagesFromHistory): a checkpoint whose messages are the summary as a user
# turn, the model's acknowledgement, then the history it keeps (here: the records that follow it).
SNAPSHOT_OPEN, SNAPSHOT_CLOSE = "<state_snapshot>", "</state_snapshot>"
ACKNOWLEDGEMENT = "Got it. Thanks for the additional context!"


def snapshot_text(text: str) -> str:
    """The summary as Gemini CLI's compression writes it: inside a <state_snapshot> element (a summary
    that quotes an earlier one holds the tag too, not around it)."""
    return (
        text
        if text.lstrip().startswith(SNAPSHOT_OPEN)
        else f"{SNAPSHOT_OPEN}\n{text.strip()}\n{SNAPSHOT_CLOSE}"
    )


def compression_records(text: str, now: datetime, new_uuid: Callable[[], str]) -> list[dict]:
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    summary = {
        "id": new_uuid(),
        "timestamp": stamp,
        "type": "user",
        "content": [{"text": snapshot_text(text)}],
    }
    reply = {"id": new_uuid(), "timestamp": stamp, "type": "gemini", "content": [{"text": ACKNOWLEDGEMENT}]}
    return [{SET: {"messages": [summary, reply], "lastUpdated": stamp}}]


GEMINI_CLI = GeminiCliDialect()
