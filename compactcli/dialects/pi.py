"""pi coding agent sessions (`@mariozechner/pi-coding-agent`): docs/design.md, "pi sessions".

A header `{"type": "session", "version": 3, "id", "cwd", ...}`, then entries in a tree (`id`/`parentId`):
`message` (roles user, assistant, toolResult, bashExecution, custom), `model_change`,
`thinking_level_change`, `compaction`, `branch_summary`, `custom_message`, `custom`, `label`,
`session_info`. Version 1 files have no ids: each entry follows the one before, and a compaction names
the first entry it keeps by its index in the file (`firstKeptEntryIndex`).

What pi sends (its session manager's `buildSessionContext`): the path from the last entry of the file
back to the root; after the path's last compaction, its summary, the path's entries from the compaction's
first kept entry up to it, then the entries after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from compactcli.dialects.base import (
    BLOCKS,
    FITS,
    MAIN,
    NO,
    NOTHING_SCANNED,
    PROVES,
    SUMMARY,
    WHOLE,
    Dialect,
    FileAccess,
    Image,
    Scan,
    ToolResult,
    ToolUse,
    base64_size,
    input_part,
    input_path,
)

# Entry types pi writes (session-manager.ts, SessionEntry).
ENTRY_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
# `hookMessage`: a `custom` message as version 2 files spell it (pi renames it when it opens the file).
CUSTOM_ROLES = ("custom", "hookMessage")
ROLES = frozenset(
    {"user", "assistant", "toolResult", "bashExecution", "branchSummary", "compactionSummary", *CUSTOM_ROLES}
)
# How pi puts a summary in front of the model (messages.ts, convertToLlm).
COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"
# An assistant message that ended so is never sent again (pi-ai transformMessages skips it).
NOT_SENT_STOPS = ("error", "aborted")

# pi's built-in file tools (core/tools): the input key naming the file, and whether the tool writes it.
FILE_TOOLS = {"read": False, "write": True, "edit": True}
READ_PARTS = ("offset", "limit")


def is_header(record: dict) -> bool:
    return record.get("type") == "session" and isinstance(record.get("id"), str)


def entry_message(record: dict) -> dict | None:
    """The AgentMessage a `message` entry holds."""
    if record.get("type") != "message":
        return None
    message = record.get("message")
    return message if isinstance(message, dict) else None


def _block(block: object) -> object:
    """One pi content block as an Anthropic block."""
    if not isinstance(block, dict):
        return {"type": "text", "text": str(block)}
    kind = block.get("type")
    if kind == "image":
        source = {
            "type": "base64",
            "media_type": block.get("mimeType") or "image",
            "data": block.get("data", ""),
        }
        return {"type": "image", "source": source}
    if kind == "toolCall":
        return {
            "type": "tool_use",
            "id": block.get("id"),
            "name": block.get("name"),
            "input": block.get("arguments"),
        }
    if kind == "thinking":
        if block.get("redacted"):  # the opaque payload is the signature; `thinking` only says so
            return {"type": "redacted_thinking", "data": block.get("thinkingSignature") or ""}
        return {
            "type": "thinking",
            "thinking": block.get("thinking", ""),
            "signature": block.get("thinkingSignature"),
        }
    return block


def _blocks(content: object) -> object:
    if isinstance(content, list):
        return [_block(block) for block in content]
    return content if content is not None else ""


def bash_text(message: dict) -> str:
    """A `!command` run by the user, as pi sends it (messages.ts, bashExecutionToText)."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code is not None and code != 0:
        text += f"\n\nCommand exited with code {code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _user_text(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def normalize_entry(record: dict) -> dict | None:
    """An entry as the Anthropic-shaped message pi sends for it, or None for entries it sends nothing of."""
    kind = record.get("type")
    if kind == "compaction":
        return _user_text(COMPACTION_PREFIX + str(record.get("summary", "")) + COMPACTION_SUFFIX)
    if kind == "branch_summary":
        summary = record.get("summary")
        return (
            _user_text(BRANCH_PREFIX + summary + BRANCH_SUFFIX)
            if isinstance(summary, str) and summary
            else None
        )
    if kind == "custom_message":
        content = record.get("content")
        return {
            "role": "user",
            "content": _blocks([{"type": "text", "text": content}] if isinstance(content, str) else content),
        }
    message = entry_message(record)
    if message is None:
        return None
    role = message.get("role")
    if role == "assistant" and message.get("stopReason") in NOT_SENT_STOPS:
        return None  # pi never sends it again, nor its calls
    if role in ("user", "assistant"):
        return {"role": role, "content": _blocks(message.get("content"))}
    if role == "toolResult":
        result = {
            "type": "tool_result",
            "tool_use_id": message.get("toolCallId"),
            "content": _blocks(message.get("content")),
        }
        if message.get("isError") is True:
            result["is_error"] = True
        return {"role": "user", "content": [result]}
    if role == "bashExecution":
        return None if message.get("excludeFromContext") else _user_text(bash_text(message))
    if role in CUSTOM_ROLES:
        content = message.get("content")
        return {
            "role": "user",
            "content": _blocks([{"type": "text", "text": content}] if isinstance(content, str) else content),
        }
    if role == "branchSummary":
        return _user_text(BRANCH_PREFIX + str(message.get("summary", "")) + BRANCH_SUFFIX)
    if role == "compactionSummary":
        return _user_text(COMPACTION_PREFIX + str(message.get("summary", "")) + COMPACTION_SUFFIX)
    return {"role": role, "content": _blocks(message.get("content"))}


def result_content(content: object) -> object:
    """A toolResult's content as micro reads it: the text of a content of one text block (what a
    placeholder is written as), else the content as it is."""
    if isinstance(content, list) and len(content) == 1:
        block = content[0]
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return block["text"]
    return content


def _tool_calls(message: dict | None) -> list[dict]:
    if message is None or message.get("role") != "assistant":
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        b
        for b in content
        if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    ]


def scan_entry(record: dict) -> Scan:
    """Dialect.scan of one entry, in one read of it (micro's first pass asks it of every record)."""
    if record.get("type") != "message":
        return NOTHING_SCANNED
    message = record.get("message")
    if type(message) is not dict:
        return NOTHING_SCANNED
    role = message.get("role")
    if role == "toolResult":
        return (), [ToolResult(message.get("toolCallId"), -1, result_content(message.get("content")))]
    content = message.get("content") if role == "assistant" else None
    if type(content) is not list:
        return NOTHING_SCANNED
    uses = [
        ToolUse(block["id"], str(block.get("name", "unknown")))
        for block in content
        if type(block) is dict and block.get("type") == "toolCall" and type(block.get("id")) is str
    ]
    return uses, ()


# The messages whose content may hold images (pi-ai's ImageContent): the user's, tool results, and the
# messages extensions inject (a `custom` message, a `custom_message` entry).
IMAGE_ROLES = ("user", "toolResult", *CUSTOM_ROLES)


def _images(record: dict) -> list[dict]:
    message = record if record.get("type") == "custom_message" else entry_message(record)
    content = (
        message.get("content")
        if message is not None and (message is record or message.get("role") in IMAGE_ROLES)
        else None
    )
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "image"]


def _image(block: dict) -> Image:
    return Image(str(block.get("mimeType") or "image"), base64_size(block.get("data")))


class PiDialect(Dialect):
    name = "pi"
    title = "a pi coding agent session"
    one_message_per_line = False  # the header, model and thinking level changes pass through
    # summarize appends a compaction entry as pi does (docs/design.md, "pi sessions"): the file stays
    # append-only, every line before it byte for byte.
    appends_compactions = True

    def fit(self, record: dict) -> int:
        if is_header(record):
            return PROVES
        kind = record.get("type")
        if kind not in ENTRY_TYPES or "role" in record or "sessionId" in record or "uuid" in record:
            return NO
        if kind == "message":
            message = record.get("message")
            return FITS if isinstance(message, dict) and message.get("role") in ROLES else NO
        return FITS

    def message(self, record: dict) -> dict | None:
        kind = record.get("type")
        if kind == "message":
            message = record.get("message")
            return message if type(message) is dict else None
        if kind in ("compaction", "branch_summary", "custom_message"):
            return record  # an entry pi turns into a user message of its own
        return None

    def normalize(self, record: dict) -> dict | None:
        return normalize_entry(record)

    def is_user_words(self, record: dict) -> bool:
        message = entry_message(record)
        return message is not None and message.get("role") == "user"

    def scan(self, record: dict) -> Scan:
        return scan_entry(record)

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        for call in _tool_calls(entry_message(record)):
            yield ToolUse(call["id"], str(call.get("name", "unknown")))

    def tool_results(self, record: dict) -> list[ToolResult]:
        return list(scan_entry(record)[1])

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        message = record["message"]
        # pi's providers read a result's content as a list of blocks, never a string.
        message["content"] = [{"type": "text", "text": content}] if isinstance(content, str) else content
        # The UI's copy (an edit's diff, a read's truncation notes) would keep what was cleared.
        message.pop("details", None)

    def is_synthetic(self, record: dict) -> bool:
        message = record.get("message") if record.get("type") == "message" else None
        return (
            type(message) is dict
            and message.get("role") == "assistant"
            and message.get("stopReason") in NOT_SENT_STOPS
        )

    def usage(self, record: dict) -> dict | None:
        """pi's usage ({input, output, cacheRead, cacheWrite, totalTokens}), Anthropic-shaped."""
        message = record.get("message") if record.get("type") == "message" else None
        if type(message) is not dict or message.get("role") != "assistant":
            return None
        usage = message.get("usage")
        if type(usage) is not dict or message.get("stopReason") in NOT_SENT_STOPS:
            return None
        given, written, read, output = (usage.get("input"), usage.get("cacheWrite"), usage.get("cacheRead"),
                                        usage.get("output"))  # fmt: skip
        if not (type(given) is int and type(written) is int and type(read) is int and type(output) is int):
            return None
        if not (given or written or read or output):
            return None
        return {
            "input_tokens": given,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": output,
        }

    def call_id(self, record: dict) -> object:
        """Each assistant message is one model call: its entry's id (version 1: its timestamp)."""
        message = entry_message(record)
        if message is None or message.get("role") != "assistant":
            return None
        own = record.get("id")
        return own if isinstance(own, str) else f"at:{message.get('timestamp')}"

    def compaction(self, record: dict) -> str | None:
        return SUMMARY if record.get("type") == "compaction" else None

    def stays_on_top(self, record: dict) -> bool:
        return is_header(record)  # pi reads a file only from its header, and resets one without it

    def heads_file(self, record: dict) -> bool:
        return is_header(record)  # replay -o writes a session pi resumes

    def new_order(self) -> PathOrder:
        return PathOrder()

    def link(self, record: dict) -> tuple[str | None, str | None]:
        own, parent = record.get("id"), record.get("parentId")
        if is_header(record):
            return None, None
        return (own if isinstance(own, str) else None, parent if isinstance(parent, str) else None)

    def set_parent(self, record: dict, parent: str | None) -> None:
        if "parentId" in record:
            record["parentId"] = parent

    def working_folder(self, record: dict) -> str | None:
        folder = record.get("cwd") if is_header(record) else None
        return folder if isinstance(folder, str) and folder else None

    def file_accesses(self, record: dict) -> list[FileAccess]:
        found: list[FileAccess] = []
        for call in _tool_calls(entry_message(record)):
            name = call.get("name")
            writes = FILE_TOOLS.get(name) if isinstance(name, str) else None
            path = input_path(call.get("arguments"), ("path", "file_path"))
            if writes is None or path is None:
                continue
            part = "" if writes else input_part(call["arguments"], READ_PARTS)
            found.append(FileAccess(call["id"], str(name), path, writes, part))
        return found

    def failed_calls(self, record: dict) -> list[str]:
        message = entry_message(record)
        if message is None or message.get("role") != "toolResult" or message.get("isError") is not True:
            return []
        call = message.get("toolCallId")
        return [call] if isinstance(call, str) else []

    def images(self, record: dict) -> list[Image]:
        return [_image(block) for block in _images(record)]

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        for number, block in enumerate(_images(record)):
            if number in which:
                text = _image(block).placeholder()
                block.clear()
                block.update({"type": "text", "text": text})
        message = entry_message(record)
        if message is not None and message.get("role") == "toolResult":
            message.pop("details", None)  # the UI's copy; an extension's `details` are its own data

    def thinking(self, record: dict) -> str | None:
        message = entry_message(record)
        if message is None or message.get("role") != "assistant":
            return None
        content = message.get("content")
        if not isinstance(content, list) or not content:
            return None
        marks = [isinstance(b, dict) and b.get("type") == "thinking" for b in content]
        if not any(marks):
            return None
        return WHOLE if all(marks) else BLOCKS

    def drop_thinking(self, record: dict) -> None:
        message = record["message"]
        message["content"] = [
            b for b in message["content"] if not (isinstance(b, dict) and b.get("type") == "thinking")
        ]

    def summary_records(
        self,
        text: str,
        *,
        context_records: list[dict],
        pre_tokens: int | None = None,
        now: datetime | None = None,
        new_uuid: Callable[[], str] | None = None,
        kept_index: int | None = None,
    ) -> list[dict]:
        """The `compaction` entry pi appends (session-manager.ts, appendCompaction): a child of the
        file's last entry, naming the first entry it keeps. `context_records`: the first kept record
        (none when nothing is kept) and the file's last entry, last. Version 1 files name the kept
        entry by its index in the file (`kept_index`) and have no ids."""
        when = (now or datetime.now(UTC)).astimezone(UTC)
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        leaf = context_records[-1] if context_records else {}
        # The header is never a kept entry (replay's context starts with it, and keeps nothing).
        first = context_records[0] if len(context_records) > 1 and not is_header(context_records[0]) else None
        if "id" not in leaf and "parentId" not in leaf:  # version 1: a list of entries, no tree
            record: dict = {"type": "compaction", "timestamp": stamp, "summary": text}
            record["firstKeptEntryIndex"] = kept_index if first is not None and kept_index is not None else -1
            record["tokensBefore"] = pre_tokens or 0
            return [record]
        import uuid  # only here: a compaction is written

        make = new_uuid or (lambda: str(uuid.uuid4()))
        own = make()[:8]  # pi's ids: the first 8 characters of a UUID
        parent = leaf.get("id") if isinstance(leaf.get("id"), str) else None
        kept = first.get("id") if first is not None and isinstance(first.get("id"), str) else own
        return [
            {
                "type": "compaction",
                "id": own,
                "parentId": parent,
                "timestamp": stamp,
                "summary": text,
                "firstKeptEntryId": kept,
                "tokensBefore": pre_tokens or 0,
            }
        ]


_NO_PARENT = object()  # an entry without parentId (version 1)


class PathOrder:
    """The entries pi sends, in the order it sends them (docs/design.md, "pi sessions").

    Fed every record in file order; `order()` is the header (pi reads it first), then the path from the
    file's last entry to the root, root first, with the path's last compaction moved to just before the
    first entry it keeps (pi sends the summary first) and earlier compactions left out (only the last one
    is sent). Entries off the path (abandoned branches) are no part of the conversation."""

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.offsets: list[int] = []
        self.keys: list[str] = []
        self.parents: list[str | None] = []
        self.kept: dict[int, str | None] = {}  # position of a compaction -> key of its first kept entry
        self.entries = 0  # entries read so far, the header included (a v1 compaction's index counts them)
        self.header: tuple[int, int] | None = None  # (line, offset): first in the order, as pi reads it first

    def add(self, line: int, offset: int, record: dict) -> str:
        index = self.entries
        self.entries += 1
        get = record.get
        kind = get("type")
        if kind == "session" and type(get("id")) is str:  # the header
            if self.header is None and index == 0:
                self.header = (line, offset)
            return MAIN
        own = get("id")
        key = own if type(own) is str else f"#{index}"
        parent = get("parentId", _NO_PARENT)
        if parent is _NO_PARENT:  # version 1: the entry before
            parent = self.keys[-1] if self.keys else None
        elif type(parent) is not str:
            parent = None
        if kind == "compaction":
            first = record.get("firstKeptEntryId")
            at = record.get("firstKeptEntryIndex")
            self.kept[len(self.keys)] = (
                first if isinstance(first, str) else f"#{at}" if isinstance(at, int) else None
            )
        self.lines.append(line)
        self.offsets.append(offset)
        self.keys.append(key)
        self.parents.append(parent)
        return MAIN

    def add_scan(self, line: int, offset: int, record: dict) -> tuple[str, Scan]:
        return self.add(line, offset, record), scan_entry(record)

    def path(self) -> list[int]:
        if not self.keys:
            return []
        position: dict[str, int] = {}
        for at, key in enumerate(self.keys):
            position[key] = at  # pi's index by id: an id written twice names its last entry
        out: list[int] = []
        seen: set[int] = set()
        at: int | None = len(self.keys) - 1
        while at is not None and at not in seen:
            seen.add(at)
            out.append(at)
            parent = self.parents[at]
            at = position.get(parent) if parent is not None else None
        out.reverse()
        compactions = [index for index, at in enumerate(out) if at in self.kept]
        if not compactions:
            return out
        last = compactions[-1]
        compaction = out[last]
        earlier = set(compactions[:-1])
        first = self.kept[compaction]
        start = next((i for i in range(last) if self.keys[out[i]] == first), None)
        rest = [at for i, at in enumerate(out) if i not in earlier and i != last]
        if start is None:
            return [at for i, at in enumerate(out) if i not in earlier]
        before = sum(1 for i in range(start) if i not in earlier)
        return rest[:before] + [compaction] + rest[before:]

    def order(self) -> list[tuple[int, int]]:
        entries = [(self.lines[at], self.offsets[at]) for at in self.path()]
        return ([self.header] if self.header is not None else []) + entries

    def in_file_order(self) -> bool:
        return self.path() == list(range(len(self.keys)))


PI = PiDialect()
