"""Qwen Code sessions: `~/.qwen/projects/<cwd slug>/chats/<id>.jsonl` (docs/design.md, "Qwen Code sessions").

Every line is a record `{uuid, parentUuid, sessionId, timestamp, type, cwd, version, ...}`; `user`,
`assistant` and `tool_result` records carry the model's Content (`message: {role, parts}`, Gemini's shape),
`system` records a `subtype` and a `systemPayload` (slash commands, UI telemetry, titles, compressions).
Qwen Code resumes a session along the parentUuid chain from the file's last record (records sharing a uuid
are one record, their parts joined), and a `chat_compression` record on that chain replaces the history
before it with its `compressedHistory`.
"""

from __future__ import annotations

import copy
import json
from array import array
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from compactcli.core.columns import HASHES, narrow, widened
from compactcli.dialects import gemini_parts as parts_of
from compactcli.dialects.base import (
    BLOCKS,
    BOUNDARY,
    BYTES_PER_TOKEN,
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
from compactcli.dialects.foreign import is_qwen_record

RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
MESSAGE_TYPES = frozenset({"user", "assistant", "tool_result"})
COMPRESSION = "chat_compression"
# What Qwen Code's model answers to the summary in the history it compresses to (chatCompressionService).
ACKNOWLEDGEMENT = "Got it. Thanks for the additional context!"
# Its bridge when the kept part starts with the model's turn (a call whose answer is kept).
CONTINUATION = "Continue with the prior task using the context above."
# The renderings (resultDisplay `type`) Qwen Code reads state back from: a todo_write's, a sub-agent's.
TODO_LIST = "todo_list"
TASK_EXECUTION = "task_execution"
# Fields copied from the last record onto a compression record, in Qwen Code's order (createBaseRecord).
IDENTITY = ("sessionId", "timestamp", "type", "cwd", "version", "gitBranch")


def is_compression(record: dict) -> bool:
    return record.get("type") == "system" and record.get("subtype") == COMPRESSION


def compressed_history(record: dict) -> list[dict] | None:
    """The Contents a chat_compression record puts in place of the history before it, else None
    (Qwen Code skips a compression record without one; an empty list is one, JavaScript's `[]` being
    true: the history before it is then replaced by nothing)."""
    if not is_compression(record):
        return None
    payload = record.get("systemPayload")
    history = payload.get("compressedHistory") if isinstance(payload, dict) else None
    if not isinstance(history, list):
        return None
    return [content for content in history if isinstance(content, dict)]


def as_record(content: dict) -> dict:
    """A Content of a compressedHistory as the record that would carry it."""
    if content.get("role") == "model":
        kind = "assistant"
    else:
        parts = content.get("parts")
        answers = isinstance(parts, list) and any(
            isinstance(p, dict) and "functionResponse" in p for p in parts
        )
        kind = "tool_result" if answers else "user"
    return {"type": kind, "message": content}


def last_usage(record: dict) -> dict | None:
    """The usage of the model call an assistant record ends (usageMetadata), Anthropic-shaped: the prompt
    (its cached part apart) and what the model wrote (totalTokenCount less the prompt, as Qwen Code counts
    the context it resumes with)."""
    if record.get("type") != "assistant":
        return None
    usage = record.get("usageMetadata")
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("promptTokenCount")
    if not isinstance(prompt, int) or isinstance(prompt, bool) or prompt <= 0:
        return None
    cached = usage.get("cachedContentTokenCount")
    cached = cached if isinstance(cached, int) and 0 <= cached <= prompt else 0
    total = usage.get("totalTokenCount")
    if isinstance(total, int) and total >= prompt:
        output = total - prompt
    else:
        candidates = usage.get("candidatesTokenCount")
        output = candidates if isinstance(candidates, int) and candidates >= 0 else 0
    return {
        "input_tokens": prompt - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": output,
    }


class QwenChain:
    """The records Qwen Code resumes with, in its order (SessionService.reconstructHistory): from the
    file's last record with a uuid up the parentUuid links (the first record of a uuid names the parent),
    then every record of each uuid on that path, in file order. Records off the path (a rewound branch)
    and records without a uuid are no part of the conversation.

    `add` runs for every record of a file, so it only appends to arrays of machine integers: each
    record's line, offset and the `hash()` of its uuid (docs/design.md, "Memory per record"); a parent
    is remembered only where it is not the uuid of the record before. The uuids are looked up at the end.
    """

    __slots__ = ("_dialect", "_lines", "_offsets", "_uuids", "_named", "_last", "_ordered")

    def __init__(self, dialect: QwenCodeDialect) -> None:
        self._dialect = dialect
        self._lines = narrow()
        self._offsets = array("q")
        self._uuids = array(HASHES)
        # position -> hash of the parent its record names (None: none), where that is not the uuid of
        # the record before
        self._named: dict[int, int | None] = {}
        self._last: str | None = None
        self._ordered: tuple[int, list[int] | range] | None = None  # (records added, positions) once asked

    def add(self, line: int, offset: int, record: dict) -> str:
        uuid = record.get("uuid")
        if type(uuid) is str and uuid:
            parent = record.get("parentUuid")
            last = self._last
            if last is None or parent != last:
                self._named[len(self._uuids)] = hash(parent) if type(parent) is str and parent else None
            try:
                self._lines.append(line)
            except OverflowError:
                self._lines = widened(self._lines, line)
            self._offsets.append(offset)
            self._uuids.append(hash(uuid))
            self._last = uuid
        return MAIN

    def add_scan(self, line: int, offset: int, record: dict) -> tuple[str, Scan]:
        key = self.add(line, offset, record)
        kind = record.get("type")
        if kind in MESSAGE_TYPES or (kind == "system" and record.get("subtype") == COMPRESSION):
            return key, self._dialect.scan(record)
        return key, NOTHING_SCANNED  # telemetry, titles, snapshots: no part

    def _positions(self) -> list[int] | range:
        """Positions of the records on the path, in Qwen Code's order."""
        uuids, named = self._uuids, self._named
        if len(named) <= 1 and len(set(uuids)) == len(uuids):
            return range(len(uuids))  # each record the child of the one before: the path holds them all
        first: dict[int, int] = {}  # uuid -> position of its first record
        for at, uuid in enumerate(uuids):
            first.setdefault(uuid, at)
        rank: dict[int, int] = {}  # uuid on the path -> its place from the leaf
        uuid = uuids[-1] if uuids else None
        while uuid is not None and uuid not in rank and uuid in first:
            rank[uuid] = len(rank)
            at = first[uuid]
            uuid = named[at] if at in named else uuids[at - 1]
        on = [at for at, uuid in enumerate(uuids) if uuid in rank]
        on.sort(key=lambda at: -rank[uuids[at]])  # root first; a uuid's records stay in file order
        return on

    def _ordered_positions(self) -> list[int] | range:
        count = len(self._uuids)
        if self._ordered is None or self._ordered[0] != count:
            self._ordered = (count, self._positions())
        return self._ordered[1]

    def order(self) -> list[tuple[int, int]]:
        lines, offsets = self._lines, self._offsets
        return [(lines[at], offsets[at]) for at in self._ordered_positions()]

    def in_file_order(self) -> bool:
        ordered = self._ordered_positions()
        return type(ordered) is range or ordered == list(range(len(self._uuids)))


class ContentView:
    """What the model is sent of each message: its Content as an Anthropic-shaped message (normalize).
    Given as a view so that what counts the raw records (calibrate) reads roles and parts as sent."""

    def __init__(self, dialect: QwenCodeDialect) -> None:
        self._dialect = dialect

    def add(self, record: dict) -> None:
        pass

    def normalize(self, record: dict) -> dict | None:
        return self._dialect.normalize(record)


class QwenCodeDialect(Dialect):
    name = "qwen-code"
    title = "a Qwen Code session"
    one_message_per_line = False  # system records (telemetry, titles, snapshots) pass through
    results_first = False  # Qwen Code sends a turn's answers as tool messages before its other parts
    # summarize appends a chat_compression record as Qwen Code does (docs/design.md, "Qwen Code:
    # summarize"): every line stays, the record carries the Contents it keeps ...
    appends_compactions = True
    carries_kept = True
    # ... so a kept result is in the file twice (its record and the compression): micro's --keep counts
    # calls, and clears every copy.
    results_repeat = True
    # What every call sends that the file does not hold: Qwen Code 0.15.10's system prompt, its 15 tool
    # definitions and the environment context, as bytes / 4 of the request the agent tier saw.
    default_overhead = 19_400

    def fit(self, record: dict) -> int:
        kind = record.get("type")
        if kind not in RECORD_TYPES or not isinstance(record.get("uuid"), str) or "sessionId" not in record:
            return NO
        return PROVES if is_qwen_record(record) else NO

    def message(self, record: dict) -> dict | None:
        message = record.get("message")
        if record.get("type") in MESSAGE_TYPES and isinstance(message, dict):
            return message
        return None

    def new_view(self, *, remember: bool = False) -> ContentView:
        return ContentView(self)

    def new_order(self) -> QwenChain:
        return QwenChain(self)

    def compaction(self, record: dict) -> str | None:
        return BOUNDARY if compressed_history(record) is not None else None

    def restarted_with(self, record: dict) -> list[dict]:
        history = compressed_history(record)
        return [as_record(content) for content in history] if history is not None else []

    def usage(self, record: dict) -> dict | None:
        return last_usage(record)

    def call_id(self, record: dict) -> object:
        """Records sharing a uuid are one record to Qwen Code (their parts joined): one call."""
        return record.get("uuid") if record.get("type") == "assistant" else None

    def is_user_words(self, record: dict) -> bool:
        """Not the user's: a prompt a cron job or a background agent's notification put in the user's turn,
        and the bridge a compression puts after the summary (CONTINUATION)."""
        if record.get("subtype") in ("cron", "notification"):
            return False
        message = self.message(record)
        parts = message.get("parts") if message is not None else None
        return not (isinstance(parts, list) and parts_of.text_of(parts).strip() == CONTINUATION)

    def working_folder(self, record: dict) -> str | None:
        folder = record.get("cwd")
        return folder if isinstance(folder, str) and folder else None

    def link(self, record: dict) -> tuple[str | None, str | None]:
        uuid, parent = record.get("uuid"), record.get("parentUuid")
        return (uuid if isinstance(uuid, str) else None, parent if isinstance(parent, str) else None)

    def set_parent(self, record: dict, parent: str | None) -> None:
        record["parentUuid"] = parent

    def normalize(self, record: dict) -> dict | None:
        message = self.message(record)
        return parts_of.content_message(message) if message is not None else None

    def scan(self, record: dict) -> tuple[list[ToolUse], list[ToolResult]]:
        """One walk over the parts (micro asks it of every record); slots as `_part_places` numbers them.
        Ids and names as gemini_parts.given_id and name_of read them, and the common answer (`{"output":
        text}`, no parts of its own) as response_content reads it, inline: this runs for every record."""
        uses: list[ToolUse] = []
        results: list[ToolResult] = []
        slot = 0
        for content in _contents(record):
            parts = content.get("parts")
            if type(parts) is not list:
                continue
            for part in parts:
                if type(part) is not dict:
                    continue
                if "functionCall" in part:
                    call = part["functionCall"]
                    if type(call) is dict:
                        use_id = call.get("id")
                        if type(use_id) is str and use_id:
                            name = call.get("name")
                            uses.append(ToolUse(use_id, name if type(name) is str and name else "unknown"))
                elif "functionResponse" in part:
                    answer = part["functionResponse"]
                    if type(answer) is dict:
                        body = answer.get("response")
                        output = body.get("output") if type(body) is dict and len(body) == 1 else None
                        if type(output) is not str or "parts" in answer:
                            output = parts_of.response_content(answer)
                        answer_id = answer.get("id")
                        answer_id = answer_id if type(answer_id) is str and answer_id else None
                        results.append(ToolResult(answer_id, slot, output))
                slot += 1
        return uses, results

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        return iter(self.scan(record)[0])

    def tool_results(self, record: dict) -> list[ToolResult]:
        return self.scan(record)[1]

    def result_count(self, record: dict) -> int:
        # scan's results, counted without reading their outputs
        count = 0
        for content in _contents(record):
            parts = content.get("parts")
            if type(parts) is list:
                for part in parts:
                    if (
                        type(part) is dict
                        and "functionCall" not in part
                        and type(part.get("functionResponse")) is dict
                    ):
                        count += 1
        return count

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        """The functionResponse's output becomes `content` (`{"output": ...}`, as Qwen Code's tools answer),
        and the UI's copy of it on the same record (`toolCallResult`) is cleared with it (cleared_display)."""
        parts, index = _part_place(record, slot)
        response = parts[index]["functionResponse"]
        text = content if isinstance(content, str) else str(content)
        parts_of.clear_response(response, text)
        copy = record.get("toolCallResult")
        if isinstance(copy, dict) and copy.get("callId") == response.get("id"):
            if "resultDisplay" in copy:
                copy["resultDisplay"] = cleared_display(copy["resultDisplay"], text)
            if isinstance(copy.get("responseParts"), list):  # older versions keep the parts sent as well
                copy["responseParts"] = [{"functionResponse": dict(response)}]

    # -- micro's strategies (docs/design.md, "Micro strategies") --

    def file_accesses(self, record: dict) -> list[FileAccess]:
        found: list[FileAccess] = []
        for parts, index in _part_places(record):
            call = parts[index].get("functionCall")
            if isinstance(call, dict) and parts_of.given_id(call):
                access = named_file_access(call["id"], parts_of.name_of(call), call.get("args"))
                if access is not None:
                    found.append(access)
        return found

    def failed_calls(self, record: dict) -> list[str]:
        """Calls answered with `{"error": ...}` (Qwen Code's answer when a tool fails or refuses)."""
        failed: list[str] = []
        for parts, index in _part_places(record):
            response = parts[index].get("functionResponse")
            body = response.get("response") if isinstance(response, dict) else None
            if isinstance(body, dict) and "error" in body and parts_of.given_id(response):
                failed.append(response["id"])
        return failed

    def images(self, record: dict) -> list[Image]:
        """The images of a record's Contents: its message's, or those of a compression's history (sent when
        Qwen Code resumes, as the records before it are not)."""
        return parts_of.images_in(_part_lists(record))

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        parts_of.replace_images_in(_part_lists(record), which)

    def thinking(self, record: dict) -> str | None:
        """Thought parts of a model turn: removed from the record (never the record itself, whose
        uuid holds the chain together; a turn left without parts is one Qwen Code skips when it sends)."""
        message = self.message(record)
        if record.get("type") != "assistant" or message is None:
            return None
        parts = message.get("parts")
        if isinstance(parts, list) and any(isinstance(p, dict) and p.get("thought") is True for p in parts):
            return BLOCKS
        return None

    def drop_thinking(self, record: dict) -> None:
        message = record["message"]
        message["parts"] = [
            p for p in message["parts"] if not (isinstance(p, dict) and p.get("thought") is True)
        ]

    drops_thinking_says = "drop the thought parts of an earlier turn (--drop-thinking)"

    def stays_on_top(self, record: dict) -> bool:
        return (
            record.get("type") == "system" and record.get("subtype") == "custom_title"
        )  # the session's name

    def summary_records(
        self,
        text: str,
        *,
        context_records: list[dict],
        pre_tokens: int | None = None,
        now: datetime | None = None,
        new_uuid: Callable[[], str] | None = None,
        kept_records: list[dict] | None = None,
        kept_index: int | None = None,  # a pi file's; Qwen Code carries what it keeps instead
    ) -> list[dict]:
        """What Qwen Code appends when it compresses the chat (`GeminiChat.tryCompress`,
        `recordChatCompression`): a `system` record, subtype `chat_compression`, the child of the file's
        last record (the last of `context_records`), whose `compressedHistory` is the summary as the user's
        Content, the model's acknowledgement, a continuation prompt when the kept part starts with the
        model's turn, then the Contents of `kept_records` (records sharing a uuid joined, as Qwen Code
        joins them). Its identity is that of the last record that has one."""
        import uuid  # only here: a compaction is written

        make_uuid = new_uuid or (lambda: str(uuid.uuid4()))
        source = next((r for r in reversed(context_records) if "sessionId" in r), {})
        identity = {key: source[key] for key in IDENTITY if key in source}
        leaf = next((r["uuid"] for r in reversed(context_records) if isinstance(r.get("uuid"), str)), None)
        kept = kept_history(kept_records or [])
        history = [
            {"role": "user", "parts": [{"text": text}]},
            {"role": "model", "parts": [{"text": ACKNOWLEDGEMENT}]},
        ]
        if kept and kept[0].get("role") == "model":
            history.append({"role": "user", "parts": [{"text": CONTINUATION}]})
        history += kept
        # Qwen Code resumes with newTokenCount as the size of its context (getResumePromptTokenCount), the
        # prompt its next call sends: the history and what every call sends besides (default_overhead).
        info = {
            "originalTokenCount": (pre_tokens or 0) + self.default_overhead,
            "newTokenCount": len(json.dumps(history).encode()) // BYTES_PER_TOKEN + self.default_overhead,
            "compressionStatus": 1,  # COMPRESSED
        }
        record = {
            "uuid": make_uuid(),
            "parentUuid": leaf,
            **identity,
            "timestamp": _iso_millis(now or datetime.now(UTC)),
            "type": "system",
            "subtype": COMPRESSION,
            "systemPayload": {"info": info, "compressedHistory": history},
        }
        return [record]


def cleared_display(display: object, text: str) -> object:
    """The UI's copy of a cleared output (`toolCallResult.resultDisplay`) as micro leaves it: the placeholder,
    but for the renderings Qwen Code reads state back from when it replays a session (docs/design.md, "Qwen
    Code: micro"). A todo_write's list stays (`{"type": "todo_list", "todos": [...]}`, or that as JSON, which
    Qwen Code reads too): the resumed UI's todo panel and ACP's plan are rebuilt from it. A sub-agent's
    summary stays (`{"type": "task_execution", ...}`: its status, names and `executionSummary`, the token
    usage ACP's replay and /export count) but for its `result`, the sub-agent's final text, which is the
    output cleared and which nothing reads back. Gemini CLI's rule (gemini_cli.clear_display: every object
    stays) does not fit: Qwen Code's edit diff is an object too, and it reads none back to change a file."""
    if isinstance(display, dict):
        kind = display.get("type")
        if kind == TODO_LIST:
            return display
        if kind == TASK_EXECUTION:
            if isinstance(display.get("result"), str) and display["result"]:
                display["result"] = text
            return display
    elif isinstance(display, str) and TODO_LIST in display and _is_todo_json(display):
        return display
    return text


def _is_todo_json(display: str) -> bool:
    """Whether a string rendering is a todo list as JSON (what Qwen Code's extractTodosFromResultDisplay
    takes for one)."""
    try:
        parsed = json.loads(display)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(parsed, dict) and parsed.get("type") == TODO_LIST and isinstance(parsed.get("todos"), list)
    )


def kept_history(records: list[dict]) -> list[dict]:
    """The Contents Qwen Code would send of `records` (in the conversation's order): each record's
    message, or a compression's history; consecutive records sharing a uuid are one Content, their parts
    joined (SessionService.aggregateRecords). Copies: the records are left as they are."""
    history: list[dict] = []
    previous: object = None
    for record in records:
        uuid = record.get("uuid")
        for content in _contents(record):
            if not isinstance(content.get("parts"), list):
                continue
            if history and isinstance(uuid, str) and uuid == previous:
                history[-1]["parts"] = history[-1]["parts"] + copy.deepcopy(content["parts"])
            else:
                history.append(copy.deepcopy(content))
        previous = uuid
    return history


def _contents(record: dict) -> list[dict] | tuple[dict, ...]:
    """The Contents a record holds: its message, or a compression's history."""
    if record.get("type") in MESSAGE_TYPES:
        message = record.get("message")
        return (message,) if type(message) is dict else ()
    if record.get("type") == "system" and record.get("subtype") == COMPRESSION:
        return compressed_history(record) or ()
    return ()


def _part_lists(record: dict) -> list[list]:
    """The parts lists of the Contents a record holds (the record's own lists)."""
    return [content["parts"] for content in _contents(record) if isinstance(content.get("parts"), list)]


def _part_places(record: dict) -> list[tuple[list, int]]:
    """(parts, index) of each part a record holds, in order: its message's, or a compression's history's
    (the Contents one after another). A part's place in this list is its result slot."""
    contents = _contents(record)
    places: list[tuple[list, int]] = []
    for content in contents:
        parts = content.get("parts")
        if isinstance(parts, list):
            places.extend((parts, index) for index, part in enumerate(parts) if isinstance(part, dict))
    return places


def _part_place(record: dict, slot: int) -> tuple[list, int]:
    """`_part_places(record)[slot]`, the common case (a message's first part: most records answer one
    call) without listing every part."""
    if slot == 0 and record.get("type") in MESSAGE_TYPES:
        message = record.get("message")
        parts = message.get("parts") if type(message) is dict else None
        if type(parts) is list and parts and type(parts[0]) is dict:
            return parts, 0
    return _part_places(record)[slot]


QWEN_CODE = QwenCodeDialect()


def _iso_millis(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
