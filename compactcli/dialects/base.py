"""The Dialect interface: what every dialect tells the layers about a record (one parsed JSONL line).

docs/design.md, "Dialects". The layers and per-file pipelines ask a dialect, never test its name:
every rule that belongs to one dialect (its sub-agents, its compactions, which records are model
calls, how a summary is written) is a method here, with the default most dialects need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

# The user's own messages a compaction keeps: Codex keeps the most recent up to USER_MESSAGES_TOKENS
# tokens (counted as bytes / 4) after the initial context, then the summary; summarize
# --keep-user-messages defaults to the same.
from compactcli.core.constants import USER_MESSAGES_TOKENS

# Ids kept as their `hash()` go in arrays of core/columns.HASHES (docs/design.md, "Memory per record"). No
# hash is -1 (CPython keeps it for errors), so -1 can stand for "no id".
NO_HASH = -1

MAIN = "main"  # key of the main conversation; sub-agent conversations get their own keys
# What Dialect.compaction says of a record that starts the active context anew.
BOUNDARY = "boundary"  # a marker record; the summary follows it
SUMMARY = "summary"  # the record that carries the summary (older Claude Code: no boundary before it)

# What Dialect.thinking says of a record.
WHOLE = "whole"
BLOCKS = "blocks"

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


# A record's tool uses and results (Dialect.scan), read only; a record with no message has none.
Scan = tuple[Sequence[ToolUse], Sequence[ToolResult]]
NOTHING_SCANNED: Scan = ((), ())


@dataclass(slots=True, frozen=True)
class FileAccess:
    """A tool call that reads or writes one file (micro --dedupe-reads). `part` tells reads of parts of
    a file apart (an offset and limit, a line range): "" is the whole file."""

    tool_use_id: str
    tool: str
    path: str
    writes: bool
    part: str = ""


@dataclass(slots=True, frozen=True)
class Image:
    """An image a record carries (micro --keep-images): its media type and size in bytes (decoded), or
    the address of an image given by URL."""

    media_type: str
    size: int
    url: str = ""

    def placeholder(self) -> str:
        if self.url:
            return f"[image removed: {self.url[:200]}]"
        return f"[image removed: {self.media_type}, {self.size:,} bytes]"


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
    # summarize appends the compaction to the file, as the agent does (pi, Qwen Code), instead of
    # rewriting it: summary_records then gets the first kept record and the file's last, and `kept_index`.
    appends_compactions: bool = False
    # The appended compaction carries the history it keeps (Qwen Code's compressedHistory) instead of
    # naming its first kept record: summary_records also gets `kept_records`, in the conversation's order.
    carries_kept: bool = False
    # summary_records keeps the user's recent messages itself (Codex): summarize adds no section of them.
    keeps_user_messages: bool = False
    # One response's records may have tool results written between them (Claude Code); otherwise a
    # record the model did not write ends the response being recorded (Dialect.call_id).
    results_inside_responses: bool = False
    # A tool's result is written again in later versions of its record (Gemini CLI upserts records by
    # id): micro's --keep counts calls, and every version of a cleared result is cleared.
    results_repeat: bool = False

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

    def result_count(self, record: dict) -> int:
        """How many tool results the record holds: len(tool_results), without their contents where the
        dialect can (estimate only counts them)."""
        return len(self.tool_results(record))

    def scan(self, record: dict) -> tuple[list[ToolUse], list[ToolResult]]:
        """Tool uses and results of a record at once (one walk over its blocks where the dialect can)."""
        return list(self.tool_uses(record)), self.tool_results(record)

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        """Replace one tool result's content in place (or, on a record of result_copies, the copy)."""
        raise NotImplementedError

    def result_edits(self, record: dict, slot: int, content: str) -> list[tuple[str, object, object]] | None:
        """What set_result_content(record, slot, content) changes, as (key, old value, new value) of
        the objects it replaces values in, for jsonio.splice to make the change in the line's bytes;
        None where it does more (adds or removes keys) or the dialect does not say."""
        return None

    has_result_copies = False  # whether result_copies can find any (micro asks only then)

    def result_copies(self, record: dict) -> list[str]:
        """Tool use ids whose result this record repeats elsewhere than in the conversation (a UI copy
        on a record of its own); micro clears such a copy with the result."""
        return []

    def unnamed_result_copy(self, record: dict) -> tuple[str, object] | None:
        """(tool name, output) of a record that repeats a result without naming its call; micro takes
        it for a copy of the next result of that tool with that very output, or else of the result
        right after it (no other result between), and clears it with that result (asked only where
        has_result_copies)."""
        return None

    def ui_copy_left(self, record: dict, slot: int) -> bool:
        """Whether the UI's copy of the result at `slot`, on the same record, still holds something
        micro would clear with it (an earlier version cleared the result and left the copy): asked only
        of a result that may be micro's placeholder already (docs/design.md, "A result cleared before")."""
        return False

    # -- what micro's opt-in strategies ask (docs/design.md, "Micro strategies") ---------------------

    def file_accesses(self, record: dict) -> list[FileAccess]:
        """The record's tool calls that read or write a file."""
        return []

    def failed_calls(self, record: dict) -> list[str]:
        """Tool use ids whose result in this record says the call failed: such a call read or changed
        no file (file_accesses of it do not count)."""
        return []

    def working_folder(self, record: dict) -> str | None:
        """The folder the session works in from this record on, when the record says (relative paths
        of file_accesses are resolved against it)."""
        return None

    def images(self, record: dict) -> list[Image]:
        """The images the record carries, in a fixed walk order (user blocks and tool results)."""
        return []

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        """Replace the images numbered `which` (in the order of `images`) with a text placeholder."""

    def is_progress(self, record: dict) -> bool:
        """A record only the UI reads (a tool's or hook's progress): never sent to the model."""
        return False

    def sub_agent_calls(self, record: dict) -> list[tuple[str, str]]:
        """(tool use id, prompt) of each call in the record that starts a sub-agent."""
        return []

    def sub_agent_prompt(self, record: dict) -> str | None:
        """For the first record of a sub-agent's conversation, the prompt it was started with."""
        return None

    def thinking(self, record: dict) -> str | None:
        """WHOLE when the record is only the model's thinking (dropping the record drops it), BLOCKS
        when some of its blocks are (drop_thinking removes them), None otherwise."""
        return None

    def drop_thinking(self, record: dict) -> None:
        """Remove the thinking blocks of a record `thinking` says BLOCKS of."""

    # What drop_thinking does to a record, as micro --dry-run and --diff describe it.
    drops_thinking_says: str = "drop thinking blocks of an earlier turn (--drop-thinking)"

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

    def new_view(self, *, remember: bool = False) -> ModelView | None:
        """What the model is sent of a message, where that depends on records before it (Codex truncates
        a tool output by the policy of its turn); None: `normalize` is what it is sent. `remember`: the
        view may be asked of a record long after the records that came later (replay counts its context
        at each call), so it keeps what it needs per record."""
        return None

    def is_user_words(self, record: dict) -> bool:
        """For a user message: whether the user wrote it. False for text the agent put in the user's
        turn (Claude Code's isMeta records: skill bodies, image notes, caveats): the model is sent it and
        estimate counts it, but a digest never lists it as the user's words."""
        return True

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

    def heads_file(self, record: dict) -> bool:
        """A record the agent reads a file from, and without which it does not resume it (pi's session
        header): replay keeps it in the context it writes, on top."""
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
        records, summary_records gets those, in file order, instead of the edges (beside them, in
        file order, where `feeds_beside_edges`)."""
        return False

    # summary_records needs the edges as well as the records feeds_summary names (Claude Code: the
    # compaction takes its parent and identity from the edges, the tools it carries from those records).
    feeds_beside_edges: bool = False

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

    def side_files(self, records: list[dict]) -> dict[str, str]:
        """Files the agent writes beside the transcript with a compaction (summary_records' records):
        path relative to the transcript's folder -> text. Copilot CLI keeps a checkpoint per compaction."""
        return {}


BYTES_PER_TOKEN = 4
TRUNCATED = "[... the start of this message is left out]"


def recent_within(texts: list[str], tokens: int = USER_MESSAGES_TOKENS) -> list[str]:
    """The most recent texts that fit in `tokens`; the oldest of them is cut (its end kept) to fit."""
    room = tokens * BYTES_PER_TOKEN
    kept: list[str] = []
    for text in reversed(texts):
        size = len(text.encode("utf-8", "surrogatepass"))  # a lone surrogate is valid in a JSON string
        if room <= 0:
            break
        if size <= room:
            kept.append(text)
            room -= size
            continue
        tail = text.encode("utf-8", "surrogatepass")[size - room :].decode(errors="ignore")
        kept.append(TRUNCATED + "\n" + tail)
        break
    return kept[::-1]


class RecordOrder(Protocol):
    """Fed every record of a file once, in file order; then the (line, offset) of each record of the
    conversations, in the order the model saw them. Records left out are no part of any conversation
    (an abandoned branch, a title): they stay in the file untouched."""

    def add(self, line: int, offset: int, record: dict) -> str:
        """Take the record in; returns its conversation's key (as the dialect's ConversationTracker)."""
        ...

    def add_scan(self, line: int, offset: int, record: dict) -> tuple[str, Scan]:
        """`add`, and the record's Dialect.scan, in one read of the record."""
        ...

    def order(self) -> Iterable[tuple[int, int]]:
        """(line, offset) of the records of the conversations, in their order; read once."""
        ...

    def in_file_order(self) -> bool:
        """order() holds every record of every conversation, each conversation's in file order."""
        ...


class ModelView(Protocol):
    """Fed every record of a file in file order (`add`) before `normalize` is asked of it; `normalize`
    is the record's message as the model was sent it (Dialect.normalize's shape)."""

    def add(self, record: dict) -> None: ...

    def normalize(self, record: dict) -> dict | None: ...


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
                results.append(ToolResult(id_of(block.get("tool_use_id")), index, block.get("content")))
            elif kind in ("tool_use", "server_tool_use") and isinstance(block.get("id"), str):
                uses.append(ToolUse(block["id"], str(block.get("name", "unknown"))))
        elif parse_repr is not None and isinstance(block, str):
            parsed = parse_repr(block)
            if parsed and parsed.get("type") in ("tool_use", "server_tool_use") and parsed.get("id"):
                uses.append(ToolUse(str(parsed["id"]), str(parsed.get("name", "unknown"))))
    return uses, results


def id_of(value: object) -> str | None:
    """A tool call's id as the pairing reads it: a string, else none (an object or a number pairs with
    nothing, so that the record is reported unpaired or passed through, never crashes a lookup)."""
    return value if isinstance(value, str) else None


def blocks_tool_results(content: object) -> list[ToolResult]:
    if not isinstance(content, list):
        return []
    return [
        ToolResult(id_of(block.get("tool_use_id")), index, block.get("content"))
        for index, block in enumerate(content)
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def blocks_failed_calls(content: object) -> list[str]:
    """Tool use ids of the tool_result blocks marked `is_error` (the Messages API's failed call)."""
    if not isinstance(content, list):
        return []
    return [
        block["tool_use_id"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "tool_result"
        and block.get("is_error") is True
        and isinstance(block.get("tool_use_id"), str)
    ]


def set_block_content(content: list, slot: int, value: object) -> None:
    content[slot]["content"] = value


# -- content-block rules micro's strategies share (Anthropic-shaped blocks) ---------------------------

THINKING_BLOCKS = ("thinking", "redacted_thinking")
# Tools that read or write a file, by name (lower case), for dialects without fixed tool names; the path
# is the first of PATH_KEYS in the call's input, the part read the values of PART_KEYS.
READ_TOOLS = frozenset({"read", "read_file", "readfile", "view", "view_file", "open_file", "cat"})
WRITE_TOOLS = frozenset(
    {"write", "write_file", "edit", "edit_file", "multiedit", "create_file", "str_replace", "replace_in_file"}
)
PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path")
PART_KEYS = ("offset", "limit", "start_line", "end_line", "line_start", "line_end", "view_range", "lines")


def input_path(arguments: object, keys: tuple[str, ...] = PATH_KEYS) -> str | None:
    if not isinstance(arguments, dict):
        return None
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def input_part(arguments: dict, keys: tuple[str, ...] = PART_KEYS) -> str:
    """Which part of a file a read covers, as a stable string ("" when the whole file)."""
    return repr(tuple(arguments.get(key) for key in keys)) if any(key in arguments for key in keys) else ""


def named_file_access(tool_use_id: str, name: str, arguments: object) -> FileAccess | None:
    """A read or write recognised by the tool's name and a path-like input key."""
    lowered = name.lower()
    if lowered not in READ_TOOLS and lowered not in WRITE_TOOLS:
        return None
    path = input_path(arguments)
    if path is None or not isinstance(arguments, dict):
        return None
    writes = lowered in WRITE_TOOLS
    return FileAccess(tool_use_id, name, path, writes, "" if writes else input_part(arguments))


def message_file_accesses(message: dict | None) -> list[FileAccess]:
    """named_file_access over the tool_use blocks of an Anthropic-shaped message."""
    content = message.get("content") if message else None
    found: list[FileAccess] = []
    if not isinstance(content, list):
        return found
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
            access = named_file_access(block["id"], str(block.get("name", "")), block.get("input"))
            if access is not None:
                found.append(access)
    return found


def base64_size(data: object) -> int:
    if not isinstance(data, str):
        return 0
    return len(data) * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0)


def data_url_image(url: object) -> Image:
    """An image given as a URL: a data URL's media type and decoded size, or the address itself."""
    url = url if isinstance(url, str) else ""
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return Image(media or "image", base64_size(data))
    return Image("image", 0, url or "(no address)")


def block_image(block: dict) -> Image:
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    if source.get("type") == "url":
        return Image("image", 0, str(source.get("url") or "(no address)"))
    return Image(str(source.get("media_type") or "image"), base64_size(source.get("data")))


def image_places(content: object) -> list[tuple[list, int]]:
    """Where the image blocks of an Anthropic content list are, tool results' content included."""
    found: list[tuple[list, int]] = []
    if not isinstance(content, list):
        return found
    for index, block in enumerate(content):
        if isinstance(block, dict):
            kind = block.get("type")
            if kind == "image":
                found.append((content, index))
            elif kind == "tool_result":
                found.extend(image_places(block.get("content")))
    return found


def block_images(content: object) -> list[Image]:
    return [block_image(blocks[index]) for blocks, index in image_places(content)]


def replace_block_images(content: object, which: frozenset[int]) -> None:
    for number, (blocks, index) in enumerate(image_places(content)):
        if number in which:
            blocks[index] = {"type": "text", "text": block_image(blocks[index]).placeholder()}


def blocks_thinking(content: object) -> str | None:
    if not isinstance(content, list) or not content:
        return None
    thinking = [isinstance(b, dict) and b.get("type") in THINKING_BLOCKS for b in content]
    if not any(thinking):
        return None
    return WHOLE if all(thinking) else BLOCKS


def without_thinking(content: list) -> list:
    return [b for b in content if not (isinstance(b, dict) and b.get("type") in THINKING_BLOCKS)]
