"""Claude Code session logs: typed records; user/assistant records carry the API message in "message"."""

from __future__ import annotations

import heapq
import itertools
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import compress
from operator import ne

from compactcli.core.columns import HASHES, narrow, repeated, widened
from compactcli.core.jsonio import json_strings
from compactcli.dialects.base import (
    BOUNDARY,
    MAIN,
    NO,
    NOTHING_SCANNED,
    PROVES,
    SUMMARY,
    ConversationTracker,
    Dialect,
    FileAccess,
    Image,
    Scan,
    ToolResult,
    ToolUse,
    block_images,
    blocks_failed_calls,
    blocks_thinking,
    blocks_tool_results,
    blocks_tool_uses,
    input_part,
    input_path,
    replace_block_images,
    scan_blocks,
    set_block_content,
    without_thinking,
)
from compactcli.dialects.foreign import is_qwen_record

MESSAGE_TYPES = ("user", "assistant")
# Record types Claude Code writes. Most carry sessionId, by which a newer type is recognised too; these are
# the ones that need not (and any of them may come first in a file): the older types, and those of the
# session writer's table (2.1.332, `appendEntry`) written without it.
RECORD_TYPES = frozenset(
    {
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
        "file-history-delta",
        "attribution-snapshot",
        "memory-mode",
        "fork-context-ref",
        "observer-ref",
        "hybrid-organization",
    }
)

# Records of the session's state rather than of a point of its conversation (its title, tag, mode, PR
# link, agent name...): Claude Code keeps the newest of each when it prunes a session file (2.1.332, the
# types it marks "repeat", "fields" and "first"), and reads them from anywhere in the file.
SESSION_STATE = frozenset(
    {
        "summary",
        "custom-title",
        "ai-title",
        "tag",
        "relocated",
        "agent-name",
        "agent-color",
        "agent-setting",
        "mode",
        "permission-mode",
        "session-owner",
        "isolation-latch",
        "dev-mods",
        "atis-latch",
        "worktree-state",
        "bridge-session",
        "tools-used",
        "derived-from",
        "repl-mode",
        "hybrid-organization",
        "pr-link",
        "history-suppression",
        "ended-by-model",
    }
)

# Claude Code's file tools: the input key naming the file, and whether the tool writes it.
FILE_TOOLS = {
    "Read": ("file_path", False),
    "Write": ("file_path", True),
    "Edit": ("file_path", True),
    "MultiEdit": ("file_path", True),
    "NotebookEdit": ("notebook_path", True),
}
READ_PARTS = ("offset", "limit", "pages")  # a Read of part of a file
# Tools that start a sub-agent (its records are a sidechain whose first prompt is the call's prompt).
SUB_AGENT_TOOLS = ("Task", "Agent")

# Fields of a record that say which session (and sub-agent) it belongs to; copied onto the records
# a compaction writes so that the session still resumes. Order as Claude Code writes them.
IDENTITY = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "slug", "agentId")


# Attachment fields that describe it for the UI rather than carry what the model reads.
_NOT_SENT = {"type", "displayPath", "commandMode", "isInitial", "itemCount", "skillCount"}
# Attachment types no message is rendered from (2.1.332: the prompt snapshot each request writes, and
# the types its renderer skips).
_NEVER_RENDERED = frozenset({"prompt_snapshot", "poll_events", "project_doc_reads", "message_pdf_reads"})


def _rendered_texts(part: dict) -> list[str]:
    """The texts of one message an attachment's `rendered` holds: its content, a string or text blocks."""
    content = part.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return []


def parent_field(record: dict) -> str:
    """The field that links a record to the one before it in the chain: `parentUuid`, or, where that
    is null, `logicalParentUuid` (a compaction starts a new chain but continues the conversation: the
    history before it is the path a replay walks, and the one Claude Code shows)."""
    if not record.get("parentUuid") and record.get("logicalParentUuid"):
        return "logicalParentUuid"
    return "parentUuid"


def is_compact_boundary(record: dict) -> bool:
    return record.get("type") == "system" and record.get("subtype") == "compact_boundary"


def discovered_tools(record: dict) -> list[str]:
    """The deferred tools whose definitions a record makes Claude Code send (its tool search): the
    `tool_reference` blocks inside a user record's tool results, or the names a compaction boundary
    carried over from the history it replaced (`compactMetadata.preCompactDiscoveredTools`). Claude Code
    looks them up in the history it resumes (2.1.332, extractDiscoveredToolNames); a tool no longer
    named there is no longer offered to the model."""
    kind = record.get("type")
    if kind == "system":
        metadata = record.get("compactMetadata") if is_compact_boundary(record) else None
        names = metadata.get("preCompactDiscoveredTools") if isinstance(metadata, dict) else None
        return [name for name in names if isinstance(name, str)] if isinstance(names, list) else []
    message = record.get("message") if kind == "user" else None
    content = message.get("content") if type(message) is dict else None
    if type(content) is not list:
        return []
    names = []
    for block in content:
        if type(block) is dict and block.get("type") == "tool_result" and type(block.get("content")) is list:
            for part in block["content"]:
                if type(part) is dict and part.get("type") == "tool_reference":
                    name = part.get("tool_name")
                    if isinstance(name, str):
                        names.append(name)
    return names


def preserved_head(record: dict) -> tuple[str, str] | None:
    """(the first record it keeps, the record that one now follows) of a compaction boundary that keeps
    the end of the history it replaces (Claude Code 2.1: `compactMetadata.preservedMessages`, the uuids
    kept, or `preservedSegment`, head to tail; both name the anchor, the boundary or its summary). The
    kept records stay where they were written; Claude Code re-links the first to the anchor when it
    loads the session, and what came before it is no longer sent."""
    metadata = record.get("compactMetadata") if is_compact_boundary(record) else None
    if not isinstance(metadata, dict):
        return None
    listed, segment = metadata.get("preservedMessages"), metadata.get("preservedSegment")
    if isinstance(listed, dict) and isinstance(listed.get("uuids"), list) and listed["uuids"]:
        head, anchor = listed["uuids"][0], listed.get("anchorUuid")
    elif isinstance(segment, dict):
        head, anchor = segment.get("headUuid"), segment.get("anchorUuid")
    else:
        return None
    return (head, anchor) if isinstance(head, str) and isinstance(anchor, str) and head != anchor else None


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
    # Median of the first recorded call less the heuristic count before it, over the 10 real sessions
    # the estimate was tuned on: docs/design.md, "Estimate".
    default_overhead = 17_586

    def fit(self, record: dict) -> int:
        kind = record.get("type")
        if not isinstance(kind, str) or "role" in record or "payload" in record or is_qwen_record(record):
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
        message = record.get("message")  # self.message(record), inline: micro calls this for every record
        if message and isinstance(message, dict) and record.get("type") in MESSAGE_TYPES:
            return scan_blocks(message.get("content"))
        return [], []

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        set_block_content(record["message"]["content"], slot, content)
        # The UI's copy of the output would keep what was cleared.
        record.pop("toolUseResult", None)

    def new_tracker(self) -> ConversationTracker:
        return SidechainTracker()

    # -- micro's strategies (docs/design.md, "Micro strategies") --

    def file_accesses(self, record: dict) -> list[FileAccess]:
        found: list[FileAccess] = []
        for use in _tool_use_blocks(self.message(record)):
            rule = FILE_TOOLS.get(use.get("name"))
            path = input_path(use.get("input"), (rule[0],)) if rule else None
            if rule is None or path is None:
                continue
            part = "" if rule[1] else input_part(use["input"], READ_PARTS)
            found.append(FileAccess(use["id"], use["name"], path, rule[1], part))
        return found

    def failed_calls(self, record: dict) -> list[str]:
        message = self.message(record)
        return blocks_failed_calls(message.get("content")) if message else []

    def working_folder(self, record: dict) -> str | None:
        folder = record.get("cwd")
        return folder if isinstance(folder, str) and folder else None

    def images(self, record: dict) -> list[Image]:
        message = self.message(record)
        return block_images(message.get("content")) if message else []

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        replace_block_images(record["message"]["content"], which)
        record.pop("toolUseResult", None)  # the UI's copy of a tool's image (a Read of a picture)

    def is_progress(self, record: dict) -> bool:
        return record.get("type") == "progress"

    def sub_agent_calls(self, record: dict) -> list[tuple[str, str]]:
        return [
            (use["id"], use["input"]["prompt"])
            for use in _tool_use_blocks(self.message(record))
            if use.get("name") in SUB_AGENT_TOOLS
            and isinstance(use.get("input"), dict)
            and isinstance(use["input"].get("prompt"), str)
        ]

    def sub_agent_prompt(self, record: dict) -> str | None:
        """A sidechain's first record (parentUuid null) is the user message with the Task's prompt."""
        if not is_sidechain(record) or record.get("type") != "user" or record.get("parentUuid") is not None:
            return None
        content = record["message"].get("content") if isinstance(record.get("message"), dict) else None
        if isinstance(content, list):
            texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            content = "\n".join(t for t in texts if isinstance(t, str))
        return content if isinstance(content, str) else None

    def thinking(self, record: dict) -> str | None:
        """Claude Code writes each block of a response as a record of its own: a thinking record is
        dropped whole (its child re-linked to its parent)."""
        message = self.message(record)
        if message is None or record.get("type") != "assistant":
            return None
        return blocks_thinking(message.get("content"))

    def drop_thinking(self, record: dict) -> None:
        record["message"]["content"] = without_thinking(record["message"]["content"])

    def is_side(self, record: dict) -> bool:
        return is_sidechain(record)

    def seen_by_model(self, record: dict) -> dict | None:
        """Attachment records (2.1.9x and later): Claude Code sends their text with the next turn. Later
        versions write what is sent beside the attachment (`rendered`: its messages' contents); an
        attachment written without it is rendered when the session loads, from its fields, except a
        prompt snapshot (the system prompt and tools of a request: no message) and the types Claude Code
        never renders."""
        attachment = record.get("attachment")
        if record.get("type") != "attachment" or not isinstance(attachment, dict):
            return None
        rendered = record.get("rendered")
        if isinstance(rendered, list):
            texts = [text for part in rendered if isinstance(part, dict) for text in _rendered_texts(part)]
        elif attachment.get("type") in _NEVER_RENDERED:
            return None
        else:
            texts = list(json_strings({k: v for k, v in attachment.items() if k not in _NOT_SENT}))
        return {"role": "user", "content": [{"type": "text", "text": "\n".join(texts)}]} if texts else None

    def is_user_words(self, record: dict) -> bool:
        return record.get("isMeta") is not True

    def new_order(self) -> ChainOrder:
        return ChainOrder(self.new_tracker())

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
        """The session's state (its title in the resume list, its tag, mode, PR link): not summarized."""
        return record.get("type") in SESSION_STATE

    def link(self, record: dict) -> tuple[str | None, str | None]:
        uuid, parent = record.get("uuid"), record.get(parent_field(record))
        return (uuid if isinstance(uuid, str) else None, parent if isinstance(parent, str) else None)

    def set_parent(self, record: dict, parent: str | None) -> None:
        """A compaction keeps its null parentUuid (what makes it one): its logicalParentUuid moves, to
        a record that is there; with none left before it, it keeps naming the history it came from
        (a file of its own, as replay writes: the null parentUuid already starts the chain there)."""
        field = parent_field(record)
        if field == "parentUuid" or parent is not None:
            record[field] = parent

    def feeds_summary(self, record: dict) -> bool:
        return bool(discovered_tools(record))

    feeds_beside_edges = True

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
        manual, preTokens, and `preCompactDiscoveredTools`, sorted, where `context_records` name
        deferred tools: discovered_tools}) and a user record with `isCompactSummary` whose content is
        `text`, both with the identity fields of the last of `context_records` that has a sessionId,
        fresh uuids and timestamps."""
        when = now or datetime.now(UTC)
        import uuid  # only here: a compaction is written (start-up time of every other command)

        make_uuid = new_uuid or (lambda: str(uuid.uuid4()))
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
        tools = sorted({name for record in context_records for name in discovered_tools(record)})
        if tools:
            boundary["compactMetadata"]["preCompactDiscoveredTools"] = tools
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


# -- the conversation as Claude Code reads it: the parentUuid chain, not the file order ---------------


class ChainOrder:
    """The records of each conversation in the order the model saw them (docs/design.md, "Dialects").

    Fed every record once, in file order (`add`); `order()` gives (line, offset) of the records of the
    active branch:

    - The branch is the tree of records (parentUuid links) around the path from the conversation's last
      leaf (the last record in the file that is no record's parent) to its root. A sibling subtree of
      the path is part of it (parallel tool results, the other records of one split response, progress)
      unless it starts with a prompt the user typed or with an assistant record of another response:
      then it was abandoned (a rewind, a regenerated answer) and stays in the file, outside the
      conversation. A parent that is not in the file (a torn line) is taken to be the record before.
    - A compaction that keeps the end of the history (preserved_head) is read as Claude Code loads it:
      the boundary starts the tree and the first record kept follows the anchor (_relink_kept_ends).
    - Records come in file order wherever their parents allow (records written out of order wait for
      their parent); records sharing a message.id (a string; any other id groups nothing) are one
      assistant message: the records written between its first and last part (its tool results) come
      after the whole message.

    Memory: a few atoms per record with a uuid, in flat lists (no object per record: the garbage
    collector would walk them all, again and again, while a large file is read). Speed: `add` runs for
    every record of a file, so it only appends to lists (a dict of uuids, filled record by record, would
    miss the cache on each record of a large file); most records name the record before them as their
    parent, and only the others are remembered. The uuids are looked up once, at the end.
    """

    def __init__(self, tracker: ConversationTracker) -> None:
        self._tracker = tracker
        self._main = _Chain()
        self._chains: dict[str, _Chain] = {MAIN: self._main}

    def add(self, line: int, offset: int, record: dict) -> str:
        """Place the record in its conversation; returns the conversation's key (ConversationTracker)."""
        return self.add_scan(line, offset, record, False)[0]

    def add_scan(self, line: int, offset: int, record: dict, scan: bool = True) -> tuple[str, Scan]:
        """`add` and ClaudeCodeDialect.scan in one read of the record (micro's first pass needs both);
        with `scan` False, `add` alone (the scan is NOTHING_SCANNED)."""
        get = record.get
        if get("isSidechain") is True:
            key = self._tracker.key(record)
            chain = self._chains.get(key)
            if chain is None:
                chain = self._chains[key] = _Chain()
        else:
            key, chain = MAIN, self._main
        kind = get("type")
        message = get("message")
        if type(message) is dict and kind in MESSAGE_TYPES:
            content = message.get("content")
            scanned = scan_blocks(content) if scan else NOTHING_SCANNED
        else:
            content, scanned = None, NOTHING_SCANNED
        uuid = get("uuid")
        parent = get("parentUuid")
        if parent == chain.last and parent and type(uuid) is str:  # the child of the record before
            try:
                chain.lines.append(line)
            except OverflowError:
                chain.lines = widened(chain.lines, line)
            chain.offsets.append(offset)
            chain.uuids.append(hash(uuid))
            chain.last = uuid
        elif not chain.link(line, offset, record, uuid, parent):
            return key, scanned
        if kind == "assistant":  # an id that is no string groups nothing (and could not be hashed)
            response = message.get("id") if type(message) is dict else None
            if type(response) is str:
                code = hash(response)
                chain.parts.append(code if code > _NO_MESSAGE or code < 0 else _RESPONSE)
            else:
                chain.parts.append(_NONE)
        elif kind != "user":
            chain.parts.append(_NO_MESSAGE)
        elif get("isMeta"):
            chain.parts.append(_NONE)
        else:  # every block a tool result? (scan_blocks takes each dict block of type tool_result)
            if scan:
                results = scanned[1]
                only_results = bool(results) and len(results) == len(content)  # type: ignore[arg-type]
            else:
                only_results = _only_results(content)
            chain.parts.append(_NONE if only_results else _PROMPT)
        return key, scanned

    def order(self) -> Iterator[tuple[int, int]]:
        # Given as it is read, not as a list: a tuple and two ints a record would be held at once
        # (docs/design.md, "Memory per record").
        # Conversations in the order their first record comes (the first seen may have no place).
        for chain in sorted(self._chains.values(), key=_Chain.opened_at):
            ordered = chain.active()
            lines, offsets = chain.lines, chain.offsets
            yield from zip(map(lines.__getitem__, ordered), map(offsets.__getitem__, ordered), strict=True)

    def in_file_order(self) -> bool:
        """Every record of every conversation is in order(), each conversation's in file order: what
        follows the order per conversation need not move anything."""
        return all(chain.in_file_order() for chain in self._chains.values())


# What _Chain.parts holds for a record besides the hash of an assistant record's message.id.
_NONE = 0  # nothing to note
_PROMPT = 1  # a user record the user typed
_NO_MESSAGE = 2  # a record of another type than user or assistant
_RESPONSE = 3  # the message.id whose hash is one of the codes above
_NOT_RESPONSES = frozenset({_NONE, _PROMPT, _NO_MESSAGE})
_BEFORE = object()  # a parent named as "the record before": a compaction, or a record naming no parent


class _Chain:
    """One conversation's records in file order: per position, its line, offset, uuid (`line:N` for a
    message record without one) and part (`parts`); the parent of the records that do not name the
    record before as theirs (`named`: position -> uuid, None for a root, or _BEFORE).

    uuids, named parents and message ids are kept as their 64-bit `hash()`, not as strings: a string
    costs about 85 bytes a record for as long as the file is read (docs/design.md, "Memory per record").
    Only equality is asked of them, and two distinct ids share a hash with a chance of about n²/2⁶⁵ for
    n records (one in 10¹² for a file of ten thousand records, one in 10⁷ for two million)."""

    __slots__ = ("lines", "offsets", "uuids", "parts", "named", "last", "opened", "_active", "_kept_ends")

    def __init__(self) -> None:
        # Machine integers, not int objects: two per record of a long transcript, kept to the end.
        self.lines = narrow()
        self.offsets = array("q")
        self.uuids = array(HASHES)
        self.parts = array(HASHES)
        self.named: dict[int, object] = {}
        self.last: str | None = None
        self.opened: int | None = (
            None  # the line of the first record seen (each takes `link` until one is placed)
        )
        self._active: tuple[int, list[int] | range] = (-1, range(0))
        # Compactions that keep the end of the history (preserved_head): (boundary position, hash of
        # the first record kept, hash of the anchor it is re-linked to).
        self._kept_ends: list[tuple[int, int, int]] = []

    def opened_at(self) -> int:
        return self.opened if self.opened is not None else -1

    def link(self, line: int, offset: int, record: dict, uuid: object, parent: object) -> bool:
        """Place a record that is not simply the child of the record before; False: it has no place."""
        get = record.get
        if self.opened is None:
            self.opened = line
        if type(uuid) is not str:
            if get("type") not in MESSAGE_TYPES:
                return False  # titles, snapshots, queue operations: no message, no place in the chain
            uuid = f"line:{line}"
        parent = get(parent_field(record)) or None  # a compaction's: its logicalParentUuid
        if type(parent) is not str:
            # Only an explicit null starts a tree (the first prompt); a compaction continues the one
            # before it, and a record that names no parent at all follows the record before it.
            compaction = is_compact_boundary(record) or get("isCompactSummary") is True
            parent = _BEFORE if compaction or "parentUuid" not in record else None
        self.named[len(self.lines)] = hash(parent) if type(parent) is str else parent
        if get("type") == "system":
            kept = preserved_head(record)
            if kept is not None:
                self._kept_ends.append((len(self.lines), hash(kept[0]), hash(kept[1])))
        try:
            self.lines.append(line)
        except OverflowError:
            self.lines = widened(self.lines, line)
        self.offsets.append(offset)
        self.uuids.append(hash(uuid))
        self.last = uuid
        return True

    def active(self) -> list[int] | range:
        """Positions of the records of the active branch, in the order the model saw them."""
        count = len(self.lines)
        if self._active[0] != count:
            self._relink_kept_ends()
            if _has_repeats(self.uuids):
                ordered = self._repeats_resolved()
            else:  # only the parents named are looked up: no dict of every uuid
                wanted = {parent for parent in self.named.values() if type(parent) is int}
                found = compress(range(count), map(wanted.__contains__, self.uuids)) if wanted else ()
                ordered = self._order({self.uuids[at]: at for at in found})
            self._active = (count, ordered)
        return self._active[1]

    def _relink_kept_ends(self) -> None:
        """As Claude Code loads a compaction that keeps the end of the history: the boundary starts the
        tree (it no longer continues the history it replaced), and the first record kept follows the
        anchor. A compaction whose first record kept is not in the file stays as it was written."""
        for boundary, head, anchor in self._kept_ends:
            try:
                at = self.uuids.index(head)
            except ValueError:
                continue
            if at < boundary:
                self.named[boundary] = None
                self.named[at] = anchor

    def in_file_order(self) -> bool:
        """Every record is on the active branch, in file order."""
        ordered = self.active()
        everything = range(len(self.lines))
        return ordered == everything if type(ordered) is range else ordered == list(everything)

    def _repeats_resolved(self) -> list[int]:
        """The order where a uuid is written twice: the first record keeps it, a later message record
        goes by its line (`line:N`) and a later record of another kind has no place, as if `add` had
        known every uuid before."""
        clean = _Chain()
        kept: list[int] = []  # clean position -> position here
        position: dict[int, int] = {}
        last = None
        for at, uuid in enumerate(self.uuids):
            if uuid in position:
                if self.parts[at] == _NO_MESSAGE:
                    continue
                uuid = hash(f"line:{self.lines[at]}")
            named = self.named[at] if at in self.named else self.uuids[at - 1]
            parent = last if named is _BEFORE else named
            if parent != last:
                clean.named[len(kept)] = parent
            position[uuid] = len(kept)
            kept.append(at)
            clean.uuids.append(uuid)
            clean.parts.append(self.parts[at])
            last = uuid
        return [kept[at] for at in clean._order(position)]

    def _order(self, position: dict[int, int]) -> list[int] | range:
        """The order where each uuid is one record's (`position`: uuid -> position)."""
        count = len(self.uuids)
        split = self._split()
        named: list[tuple[int, int]] = []  # (position, parent position or -1), in file order
        forward = True  # every parent comes before its child
        for at, parent in self.named.items():
            if parent is _BEFORE or (parent == self.uuids[at - 1] if at else parent is None):
                continue  # the record before after all
            # A parent not in the file (a torn line): the record before.
            up = -1 if parent is None else position.get(parent, at - 1)  # type: ignore[arg-type]
            named.append((at, up))
            forward = forward and up < at
        if not named:  # one line of records, each the child of the one before
            return self._whole_responses(range(count)) if split else range(count)
        if not forward:
            parents = list(range(-1, count - 1))  # the record before, by default
            for at, up in named:
                parents[at] = up
            return self._whole_responses(self._general(parents))
        ordered = self._forward(named)
        return self._whole_responses(ordered) if split else ordered

    def _split(self) -> bool:
        """Whether some response has other records written between its parts."""
        parts = self.parts
        # Each part where it changes (-1, the first record's "before", is no hash).
        runs = compress(parts, map(ne, parts, itertools.chain((-1,), parts)))
        return _has_repeats(array(HASHES, itertools.filterfalse(_NOT_RESPONSES.__contains__, runs)))

    def _forward(self, named: list[tuple[int, int]]) -> list[int] | range:
        """The branch where every parent comes before its child, by stretches: a stretch starts where a
        record names another parent than the record before. The path holds a first part of a stretch,
        and the records kept are a first part of it too (a record is kept if its parent is)."""
        count = len(self.uuids)
        up_of = dict(named)
        starts = [at for at, _ in named]
        if starts[0] != 0:
            starts.insert(0, 0)
        ends = [*starts[1:], count]
        # The path from the last record (the last leaf) to its root: stretch -> its last position on it.
        path: dict[int, int] = {}
        at = count - 1
        while at >= 0:
            stretch = bisect_right(starts, at) - 1
            path[stretch] = at
            at = up_of.get(starts[stretch], -1)
        first = stretch  # the root's: no record before the root is kept
        kept = starts[:]  # stretch -> the end of its records kept (none yet)
        parts = self.parts
        on_path: set[object] | None = None  # the responses the path holds, once needed
        for stretch in range(first, len(starts)):
            if stretch in path:
                at = path[stretch] + 1
            else:
                at = starts[stretch]
                up = up_of[at]
                if up < 0 or up >= kept[bisect_right(starts, up) - 1]:
                    continue  # its parent is not kept, or it is a root of its own
            while at < ends[stretch]:  # records off the path, until one starts another branch
                part = parts[at]
                if part == _PROMPT:
                    break
                if part not in _NOT_RESPONSES:
                    if on_path is None:
                        on_path = {parts[at] for s, last in path.items() for at in range(starts[s], last + 1)}
                    if part not in on_path:
                        break
                at += 1
            kept[stretch] = at
        if kept == ends:  # from the first record to the last
            return range(count)
        ordered: list[int] = []
        for stretch in range(first, len(starts)):
            ordered.extend(range(starts[stretch], kept[stretch]))
        return ordered

    def _general(self, parents: list[int]) -> list[int]:
        """The branch and its order where some parent comes after its child (written out of order)."""
        children: dict[int, list[int]] = {}
        for at, up in enumerate(parents):
            children.setdefault(up, []).append(at)
        leaves = [at for at in range(len(parents)) if at not in children]
        if not leaves:
            return []
        at = leaves[-1]
        path: set[int] = set()
        while at >= 0 and at not in path:
            path.add(at)
            root, at = at, parents[at]
        # Grow the branch from the path: sibling subtrees that are no fork.
        parts = self.parts
        on_path = {parts[at] for at in path}
        keep: set[int] = set()
        todo = [root]
        while todo:
            at = todo.pop()
            keep.add(at)
            for child in children.get(at, ()):
                if child not in keep and (child in path or not _forks(parts[child], on_path)):
                    todo.append(child)
        # File order where the parents allow it (positions are in file order).
        keep.discard(root)  # each record is taken once, even where parents go round in a cycle
        ready = [root]
        ordered: list[int] = []
        while ready:
            at = heapq.heappop(ready)
            ordered.append(at)
            for child in children.get(at, ()):
                if child in keep:
                    keep.discard(child)
                    heapq.heappush(ready, child)
        return ordered

    def _whole_responses(self, ordered: list[int] | range) -> list[int]:
        """Each response's records together, the records written between its parts right after it."""
        own_of = [
            part if part not in _NOT_RESPONSES else None for part in map(self.parts.__getitem__, ordered)
        ]
        last: dict[object, int] = {}
        for index, own in enumerate(own_of):
            if own is not None:
                last[own] = index
        out: list[int] = []
        index = 0
        while index < len(ordered):
            own = own_of[index]
            end = last[own] if own is not None else index
            if end > index:
                span = range(index, end + 1)
                out.extend(ordered[i] for i in span if own_of[i] == own)
                out.extend(ordered[i] for i in span if own_of[i] != own)
                index = end + 1
            else:
                out.append(ordered[index])
                index += 1
        return out


def _has_repeats(hashes: array | list[int]) -> bool:
    """Whether a value comes twice (core/columns.repeated: no set of every value where there are many)."""
    return bool(repeated(lambda: hashes, len(hashes)))


def _forks(part: object, on_path: set[object]) -> bool:
    """A record off the path that starts another branch: a prompt typed again (a rewind), or a part
    of a response the path does not hold (an answer generated again)."""
    return part == _PROMPT or (part not in _NOT_RESPONSES and part not in on_path)


def _tool_use_blocks(message: dict | None) -> list[dict]:
    content = message.get("content") if message else None
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use" and "id" in b]


def _only_results(content: object) -> bool:
    if type(content) is not list or not content:
        return False
    for block in content:
        if type(block) is not dict or block.get("type") != "tool_result":
            return False
    return True


CLAUDE_CODE = ClaudeCodeDialect()
