"""summarize on one file: decide the cut (cheap), have the summary written, then write the result.

1. `analyze` reads the file once and keeps per message only its line, offset, role and tool ids
   (no content), plus what --threshold and the Claude Code chain need. It decides the cut.
2. `prepare` (only for a real write, never for --check/--diff/--dry-run) reads the summarized
   messages again and streams them to the summarizer: the model is asked before anything is
   archived or written, so a failing API leaves nothing behind.
3. The caller archives the original and passes its path to `use_archive` (the summary names it).
4. `write` copies the lines kept at the top, writes the summary record(s), then copies the kept
   tail byte for byte (Claude Code records whose parent was summarized away are re-linked).

What is kept, per dialect (the records before the cut are all in the archive):
- anthropic: the summary message, then the kept messages.
- openai: the system/developer messages of the summarized part, in order, then the summary, then
  the kept messages (system messages carry instructions that a summary should not paraphrase).
- claude-code: the `summary` title records of the summarized part (the session's name in the
  resume list), then a compact_boundary record and the isCompactSummary user record, then every
  record from the cut on, untouched except that a main-chain record whose parentUuid pointed
  before the cut now points to the summary record. Before the cut everything else goes: earlier
  history and compactions, sub-agent (sidechain) records, file-history snapshots, progress, queue
  and system records; they belong to the summarized turns. The conversation summarized is the
  main chain from its last compaction on; a file of sidechain records only (a sub-agent's own log)
  is its own conversation, and the new records then carry its isSidechain and agentId.
- pi (Dialect.appends_compactions): every line as it is, then one compaction entry naming the first
  kept record (docs/design.md, "pi sessions").
- qwen-code (appends_compactions, carries_kept): every line as it is, then one chat_compression record
  that holds the summary and the kept Contents (docs/design.md, "Qwen Code: summarize").
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO, overload

import orjson

from compactcli.core import redact as redaction
from compactcli.core.columns import HASHES, narrow, widened
from compactcli.core.errors import BadInput, Unavailable
from compactcli.core.jsonio import dumps_like, plain
from compactcli.counting.pricing import Price, cost_usd
from compactcli.dialects import BOUNDARY, SUMMARY, Dialect
from compactcli.dialects.base import NO_HASH, USER_MESSAGES_TOKENS
from compactcli.layers.summarize import (
    EARLIER_SUMMARY,
    PROMPT_OVERHEAD,
    SUMMARY_PREFIX,
    Summarizer,
    UserMessages,
    after_summary,
    choose_cut,
    depth_note,
    depth_of,
    is_earlier_summary,
    is_summary_message,
    message_text,
    nothing_to_summarize,
    pin_closure,
    searchable_text,
    summarizer_view,
    summary_text,
    user_messages_follow,
)
from compactcli.pipelines.transcript import (
    ConversationLines,
    Line,
    copy_range,
    dialect_for,
    diff_line,
    parse_line,
)


@dataclass(frozen=True)
class SummarizeOptions:
    keep_last: int = 0  # messages kept after the summary (0: summarize everything)
    focus: str | None = None  # Layer 3's argument: keep details about this
    threshold: int | None = None  # summarize only files whose estimate exceeds this
    # Tokens of the user's own messages put verbatim after the summary (0: none); docs/design.md,
    # "summarize: the user's words".
    keep_user_messages: int = USER_MESSAGES_TOKENS
    # Messages of the summarized part matching one of these regular expressions are kept verbatim
    # after the summary, with the partners of their tool calls and results (docs/design.md, "summarize: the
    # user's words").
    pin: tuple[str, ...] = ()
    # --verify: probe each summarized file against its original; --min-retention R (implies it): a file
    # whose retention is below R exits 1 (compactcli/verify.py).
    verify: bool = False
    min_retention: float | None = None


@dataclass(frozen=True)
class _Style:
    """How the file writes its lines, so that new ones look the same."""

    spaced: bool = False  # json.dumps' default ", " and ": "
    ascii: bool = True  # non-ASCII escaped
    eol: bytes = b"\n"


def _style_of(raw: bytes) -> _Style:
    head = raw[:256].lstrip()
    spaced = False
    if head.startswith(b'{"'):
        end = head.find(b'"', 2)
        spaced = end > 0 and head[end + 1 : end + 3] == b": "
    eol = b"\r\n" if raw.endswith(b"\r\n") else b"\n"
    return _Style(spaced, raw.isascii(), eol)


def _dump(record: dict, style: _Style) -> bytes:
    if style.spaced:
        return json.dumps(record, ensure_ascii=style.ascii, separators=(", ", ": ")).encode()
    if style.ascii:
        return json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode()
    return orjson.dumps(record, default=plain)


class _Links:
    """The records of the dialect's chain (Dialect.link), in the conversation's order: offset, length,
    line and the hashes of uuid and parent (NO_HASH for none) in arrays of machine integers, not an
    object and two strings a record (docs/design.md, "Memory per record"). A message of the chain is
    read from here (`_Conversation.places`), not held twice."""

    __slots__ = ("offsets", "lengths", "lines", "uuids", "parents")

    def __init__(self) -> None:
        self.offsets = array("q")
        self.lengths = narrow()
        self.lines = narrow()
        self.uuids = array(HASHES)
        self.parents = array(HASHES)

    def add(self, offset: int, length: int, line: int, uuid: str | None, parent: str | None) -> None:
        self.offsets.append(offset)
        self.lengths = _appended(self.lengths, length)
        self.lines = _appended(self.lines, line)
        self.uuids.append(NO_HASH if uuid is None else hash(uuid))
        self.parents.append(NO_HASH if parent is None else hash(parent))

    def release(self) -> None:
        """Let the hashes go once the cut is placed: only the spans are read after it."""
        self.uuids = array(HASHES)
        self.parents = array(HASHES)

    def __len__(self) -> int:
        return len(self.offsets)


def _appended(column: array, value: int) -> array:
    """`column` with `value` appended: itself, or widened when it cannot hold the value (core/columns)."""
    try:
        column.append(value)
    except OverflowError:
        return widened(column, value)
    return column


_USE, _RESULT = 0, 1  # a block of a skeleton
_ODD_ROLE = 255  # a role that is no string, or one past the first 255: kept in `odd_roles`


class _Skeletons(Sequence[dict]):
    """The messages' skeletons in columns: per message its role and whether it is a summary, per block
    its kind and the hash of its tool id (ids are only compared; one that is no string is kept in
    `others`). Each is built as a dict when read, its ids as the hashes' digits, so that a long
    transcript keeps no dict, list, block dicts and id strings per message (docs/design.md, "Memory per
    record")."""

    __slots__ = (
        "roles",
        "role_names",
        "role_codes",
        "odd_roles",
        "summaries",
        "starts",
        "kinds",
        "ids",
        "others",
        "count",
    )

    def __init__(self) -> None:
        self.roles = bytearray()  # per message: its role's index in role_names, or _ODD_ROLE
        self.role_names: list[str] = []
        self.role_codes: dict[str, int] = {}
        self.odd_roles: dict[int, object] = {}  # message -> its role, where that has no code
        self.summaries = bytearray()
        self.starts = narrow()  # message i's blocks: kinds/ids[starts[i] : starts[i + 1]]
        self.starts.append(0)
        self.kinds = bytearray()
        self.ids = array(HASHES)
        self.others: dict[int, object] = {}  # block -> its id, where that is no string
        self.count = 0

    def add(self, dialect: Dialect, record: dict, normalized: dict, summary: bool) -> None:
        role = normalized.get("role")
        code = self.role_codes.get(role, _ODD_ROLE) if type(role) is str else _ODD_ROLE
        if code == _ODD_ROLE and type(role) is str and len(self.role_names) < _ODD_ROLE:
            code = self.role_codes[role] = len(self.role_names)
            self.role_names.append(sys.intern(role))
        if code == _ODD_ROLE:
            self.odd_roles[self.count] = role
        self.roles.append(code)
        self.summaries.append(summary)
        for use in dialect.tool_uses(record):
            self._block(_USE, use.id)
        for result in dialect.tool_results(record):
            self._block(_RESULT, result.tool_use_id)
        self.starts = _appended(self.starts, len(self.ids))
        self.count += 1

    def _block(self, kind: int, tool_id: object) -> None:
        self.kinds.append(kind)
        if type(tool_id) is not str:
            self.others[len(self.ids)] = tool_id
            tool_id = None
        self.ids.append(NO_HASH if tool_id is None else hash(tool_id))

    def clear(self) -> None:
        del self.roles[:], self.summaries[:], self.kinds[:], self.ids[:], self.starts[1:]
        self.others.clear()
        self.odd_roles.clear()
        self.count = 0

    def release(self) -> None:
        """Let the columns go once the cut is chosen; the count stays (nothing reads a message after)."""
        self.roles, self.summaries, self.kinds = bytearray(), bytearray(), bytearray()
        self.starts, self.ids = narrow(), array(HASHES)
        self.others, self.odd_roles = {}, {}

    def __len__(self) -> int:
        return self.count

    def _role(self, index: int) -> object:
        code = self.roles[index]
        return self.odd_roles[index] if code == _ODD_ROLE else self.role_names[code]

    def _built(self, index: int) -> dict:
        """Role and tool ids (all that choose_cut reads), and the start of an
        earlier summary's text (what nothing_to_summarize reads)."""
        blocks: list[dict] = [{"type": "text", "text": SUMMARY_PREFIX}] if self.summaries[index] else []
        ids, others = self.ids, self.others
        for at in range(self.starts[index], self.starts[index + 1]):
            tool_id = others[at] if at in others else str(ids[at])
            if self.kinds[at] == _USE:
                blocks.append({"type": "tool_use", "id": tool_id})
            else:
                blocks.append({"type": "tool_result", "tool_use_id": tool_id})
        return {"role": self._role(index), "content": blocks}

    @overload
    def __getitem__(self, index: int) -> dict: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict]: ...
    def __getitem__(self, index: int | slice) -> dict | list[dict]:
        if isinstance(index, slice):
            return [self._built(at) for at in range(len(self))[index]]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._built(index)

    def __iter__(self) -> Iterator[dict]:
        return map(self._built, range(len(self)))


@dataclass
class _Conversation:
    """One conversation's messages since its last compaction (skeletons: role and tool ids), in the
    order the model saw them (Dialect.new_order; file order without one).

    A message's line, offset and length are its record's in `chain` where it has a place there (every
    Claude Code message: held once, docs/design.md, "Memory per record"), else in the `loose` columns:
    `places` holds the chain's position, or -1 - the loose one."""

    messages: _Skeletons = field(default_factory=_Skeletons)
    places: array = field(default_factory=partial(narrow, True))
    loose_lines: array = field(default_factory=narrow)
    loose_offsets: array = field(default_factory=partial(array, "q"))
    loose_lengths: array = field(default_factory=narrow)
    loose_at_chain: array = field(default_factory=narrow)  # the chain's length when it was read
    synthetic: set[int] = field(default_factory=set)  # offsets of API error notices: never sent
    pinned: set[int] = field(default_factory=set)  # indexes of messages --pin matches
    # Every record of the dialect's chain, in the conversation's order.
    chain: _Links = field(default_factory=_Links)

    def add(self, line: int, offset: int, length: int, position: int, linked: bool) -> None:
        """A message, its record at `position` of the chain when `linked`."""
        if linked:
            self.places = _appended(self.places, position)
            return
        self.places = _appended(self.places, -1 - len(self.loose_offsets))
        self.loose_lines = _appended(self.loose_lines, line)
        self.loose_offsets.append(offset)
        self.loose_lengths = _appended(self.loose_lengths, length)
        self.loose_at_chain = _appended(self.loose_at_chain, position)

    def restart(self) -> None:
        self.messages.clear()
        del self.places[:], self.loose_lines[:], self.loose_offsets[:], self.loose_lengths[:]
        del self.loose_at_chain[:]
        self.pinned.clear()

    def release(self) -> None:
        """What only the cut needed (skeletons, the chain's hashes) goes before the summary is written."""
        self.messages.release()
        self.chain.release()

    def line(self, index: int) -> int:
        place = self.places[index]
        return self.chain.lines[place] if place >= 0 else self.loose_lines[-1 - place]

    def offset(self, index: int) -> int:
        place = self.places[index]
        return self.chain.offsets[place] if place >= 0 else self.loose_offsets[-1 - place]

    def length(self, index: int) -> int:
        place = self.places[index]
        return self.chain.lengths[place] if place >= 0 else self.loose_lengths[-1 - place]

    def at_chain(self, index: int) -> int:
        """The message's place in `chain`: its record's, or where the chain stood when it was read."""
        place = self.places[index]
        return place if place >= 0 else self.loose_at_chain[-1 - place]

    def spans(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        """(line, offset) of messages[start:stop], one at a time."""
        return ((self.line(index), self.offset(index)) for index in range(start, stop))


def carried_messages(dialect: Dialect, record: dict) -> list[dict]:
    """The summarizer's messages of one record: for a compaction that carries the new context itself,
    those of that context; when it ends with a user message, that is the summary (Codex writes it last
    in replacement_history, Copilot carries nothing else) and is marked EARLIER_SUMMARY. A context that
    ends otherwise (a rewritten history) marks nothing: a user's message is never taken for a summary."""
    messages = [
        m for m in map(partial(summarizer_view, dialect), _with_history(dialect, record)) if m is not None
    ]
    if dialect.compaction(record) == BOUNDARY and messages and messages[-1].get("role") == "user":
        messages[-1][EARLIER_SUMMARY] = True
    return messages


def _with_history(dialect: Dialect, record: dict) -> list[dict]:
    """A record, or for a compaction that carries the new context itself, the records of that context."""
    if dialect.compaction(record) == BOUNDARY:
        return dialect.restarted_with(record)
    return [record]


@dataclass
class SummaryEdit:
    path: str
    dialect: Dialect
    options: SummarizeOptions
    summarizer: Summarizer | None
    on_invalid: str
    stats: dict = field(default_factory=dict)
    archive_first: bool = True  # rewrite: archive before `write`, and pass its path to use_archive
    sha256: str = ""  # of the bytes analyze read
    size: int = 0
    style: _Style = field(default_factory=_Style)
    conversation: _Conversation = field(default_factory=_Conversation)
    cut: int = 0
    cut_offset: int = 0
    cut_line: int = 0  # first line kept after the summary; one past the last line when none is
    top: list[tuple[int, int]] = field(default_factory=list)  # spans kept above the summary
    dropped: int = 0  # lines the summary replaces (they are in the archive only)
    relink: list[tuple[int, int]] = field(default_factory=list)  # spans whose parentUuid changes
    # Summarized records after cut_offset (the conversation's order is not the file's): left out.
    removed: list[tuple[int, int]] = field(default_factory=list)
    pinned: list[tuple[int, int]] = field(default_factory=list)  # kept verbatim after the summary (--pin)
    # Records the summary records take their shape from (Dialect.summary_records' context_records):
    # the first user message, the last message and the last linked record before the cut.
    context_offsets: tuple[int, ...] = ()
    line_numbers: dict[int, int] = field(default_factory=dict)  # offset -> line of relinked records
    pre_tokens: int | None = None
    summary: str | None = None
    archive_path: str | None = None
    user_messages: UserMessages | None = None  # filled as summarized_messages is read
    previous_depth: int = 0  # of the earlier summary summarized_messages met (0: none)
    # The dialect appends its compaction to the file as its agent does (Dialect.appends_compactions,
    # pi): every line stays, the new record follows the last; `kept_index`: the first kept record's
    # place among the file's records (what a version 1 pi file names it by).
    append: bool = False
    kept_index: int | None = None
    side_files: dict[str, str] = field(default_factory=dict)  # Dialect.side_files, once written
    _will_change: bool = False

    @property
    def changed(self) -> bool:
        return self._will_change

    def close(self) -> None:
        pass

    @property
    def gate(self) -> Callable[[BinaryIO, str], str | None] | None:
        """--min-retention's check of the new content, None without it: rewrite then writes the output
        as it goes, with no staging copy to check first."""
        min_retention = self.options.min_retention
        return None if min_retention is None else partial(self._retention_gate, min_retention)

    def _retention_gate(self, min_retention: float, source: BinaryIO, written: str) -> str | None:
        """--min-retention: why the new content must not replace the original (its retention is below
        R), else None. Called by rewrite before anything is put in place or written to -o: below R the
        original stays and its archive goes (docs/design.md, "A summary below --min-retention is not
        applied")."""
        from compactcli.pipelines.verify import measure_into

        return measure_into(self.stats, source, self.path, written, min_retention, self.on_invalid)

    # -- 2. the summary --------------------------------------------------------------------------

    def summarized_messages(self, source: BinaryIO) -> Iterator[dict]:
        """The normalized messages before the cut, in the conversation's order, read again from `source`."""
        conversation = self.conversation
        user_messages = UserMessages(self.options.keep_user_messages)
        for number, offset in conversation.spans(0, self.cut):
            if offset in conversation.synthetic:
                continue
            source.seek(offset)
            record = parse_line(source.readline(), self.path, number, self.on_invalid).record
            for normalized in carried_messages(self.dialect, record) if record is not None else ():
                if is_earlier_summary(normalized):
                    self.previous_depth = depth_of(message_text(normalized))
                user_messages.add(normalized)
                yield normalized
        self.user_messages = user_messages

    def prepare(self, source: BinaryIO) -> None:
        """Have the summary written (the API call, if any). Raises Unavailable (exit 69)."""
        if self.summary is not None:
            return  # given already (a Message Batch result)
        if self.summarizer is None:
            raise ValueError("no summarizer")
        try:
            text = self.summarizer.summarize(self.summarized_messages(source), focus=self.options.focus)
        except Unavailable as err:
            raise Unavailable(f"{self.path}: {err}") from err
        self.set_model_summary(
            text, self.summarizer.name, dict(self.summarizer.redactions), self.previous_depth
        )
        calls = getattr(self.summarizer, "calls", None)
        if calls is not None:
            self.stats["api_calls"] = calls
        usage = getattr(self.summarizer, "usage", None)
        if usage is not None and usage.requests:
            self.stats["model"] = usage.model or self.summarizer.model
            self.stats["input_tokens"] = usage.input_tokens
            self.stats["output_tokens"] = usage.output_tokens
            # "server": every request's tokens as the server counted them; else some are estimated.
            self.stats["tokens_from"] = "estimate" if usage.estimated else "server"
            price, source = summary_price(self.summarizer, self.stats["model"])
            if price is not None:
                self.stats["cost_usd"] = round(cost_usd(price, usage.input_tokens, usage.output_tokens), 6)
                self.stats["price_from"] = source

    def set_model_summary(
        self, text: str, backend: str, redactions: dict[str, int], previous_depth: int
    ) -> None:
        """A model's summary of the messages before the cut, whose earlier summary (if any) was
        `previous_depth` deep: it says how deep it is, for the next compaction to read (docs/design.md,
        "Summaries that build on the last one"), whether it came now or from a Message Batch."""
        depth = previous_depth + 1 if previous_depth else 1
        self.stats["compaction_depth"] = depth
        self.set_summary(text + depth_note(depth), backend, redactions)

    def set_summary(self, text: str, backend: str, redactions: dict[str, int]) -> None:
        if getattr(self.summarizer, "redact", True):
            # Whatever wrote it (a model, a Message Batch result), a summary holds no secret that
            # redaction knows (docs/design.md, "Secrets"); redacting twice changes nothing more.
            text, found = redaction.redact(text)
            redactions = dict(Counter(redactions) + found)
        self.summary = text
        self.stats["backend"] = backend
        self.stats["redacted"] = sum(redactions.values())
        if redactions:
            self.stats["redactions"] = dict(sorted(redactions.items()))

    def use_archive(self, path: str) -> None:
        self.archive_path = path

    # -- 4. the result ---------------------------------------------------------------------------

    def new_records(self, source: BinaryIO, summary: str, archive: str) -> list[dict]:
        context = [self._read_at(source, offset) for offset in self.context_offsets]
        if self.append:
            extra = {"kept_records": self._kept_records(source)} if self.dialect.carries_kept else {}
            return self.dialect.summary_records(
                summary_text(archive, summary),
                context_records=context,
                pre_tokens=self.pre_tokens,
                kept_index=self.kept_index,
                **extra,
            )
        return self.dialect.summary_records(
            summary_text(archive, summary),
            context_records=context,
            pre_tokens=self.pre_tokens,
        )

    def _kept_records(self, source: BinaryIO) -> list[dict]:
        """The records kept after the summary, in the conversation's order (Dialect.carries_kept)."""
        conversation = self.conversation
        spans = conversation.spans(self.cut, len(conversation.messages))
        return [self._read_at(source, offset) for _, offset in spans]

    def _read_at(self, source: BinaryIO, offset: int) -> dict:
        source.seek(offset)
        record = parse_line(source.readline(), self.path, 0, "keep").record
        return record or {}

    def write(self, source: BinaryIO, out: BinaryIO) -> None:
        if self.summary is None or self.archive_path is None:
            raise ValueError("write needs the summary (prepare) and the archive path (use_archive)")
        summary = self.summary + self._user_messages(source)
        records = self.new_records(source, summary, self.archive_path)
        self.side_files = self.dialect.side_files(records)
        self._write(source, out, records)

    def _user_messages(self, source: BinaryIO) -> str:
        """The user's own messages, verbatim, to follow the summary (--keep-user-messages), redacted like
        it; "" when there are none or the dialect's compaction keeps them itself."""
        if not user_messages_follow(self.dialect, self.options.keep_user_messages):
            return ""
        if self.user_messages is None:  # the summary came from elsewhere (a Message Batch result)
            for _ in self.summarized_messages(source):
                pass
        assert self.user_messages is not None
        text, found = after_summary(self.user_messages, getattr(self.summarizer, "redact", True))
        if found:
            redactions = Counter(self.stats.get("redactions", {})) + found
            self.stats["redacted"] = sum(redactions.values())
            self.stats["redactions"] = dict(sorted(redactions.items()))
        return text

    def _write(self, source: BinaryIO, out: BinaryIO, records: list[dict]) -> None:
        if self.append:
            copy_range(source, out, 0, None)
            if self.size and self._last_byte(source) != b"\n":
                out.write(self.style.eol)
            for record in records:
                out.write(_dump(record, self.style) + self.style.eol)
            return
        for offset, length in self.top:
            source.seek(offset)
            data = source.read(length)
            out.write(data if data.endswith(b"\n") else data + self.style.eol)
        for record in records:
            out.write(_dump(record, self.style) + self.style.eol)
        lines, parent = self._pinned_lines(source, self.dialect.link(records[-1])[0])
        out.write(b"".join(lines))
        position = self.cut_offset
        for offset, length, relinked in self._tail_changes():
            copy_range(source, out, position, offset)
            if relinked:
                out.write(self._relinked(source, offset, length, parent))
            position = offset + length
        copy_range(source, out, position, None)

    def _last_byte(self, source: BinaryIO) -> bytes:
        source.seek(self.size - 1)
        return source.read(1)

    def _pinned_lines(self, source: BinaryIO, parent: str | None) -> tuple[list[bytes], str | None]:
        """The --pin lines as written after the summary, and the parent for the kept records: in a
        dialect with a chain each pinned record hangs from the one before (the first from the summary)."""
        lines = []
        for offset, length in self.pinned:
            source.seek(offset)
            raw = source.read(length)
            if parent is not None:
                raw = self._relinked(source, offset, length, parent)
                parent = self.dialect.link(orjson.loads(raw))[0] or parent
            lines.append(raw if raw.endswith(b"\n") else raw + self.style.eol)
        return lines, parent

    def _tail_changes(self) -> list[tuple[int, int, bool]]:
        """The spans after cut_offset that are not copied as they are: (offset, length, relinked);
        a span not relinked is left out (it was summarized)."""
        changes = [(o, n, True) for o, n in self.relink] + [(o, n, False) for o, n in self.removed]
        return sorted(changes)

    def _relinked(self, source: BinaryIO, offset: int, length: int, parent: str | None) -> bytes:
        source.seek(offset)
        raw = source.read(length)
        record = parse_line(raw, self.path, 0).record or {}
        self.dialect.set_parent(record, parent)
        eol = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else b""
        return dumps_like(record, raw) + eol

    # -- previews --------------------------------------------------------------------------------

    def describe(self, source: BinaryIO) -> Iterator[str]:
        kept = len(self.conversation.messages) - self.cut
        summarized = [line for line, _ in self.conversation.spans(0, self.cut)]
        if self.append:
            yield (
                f"{self.path}: summarize {self.cut} messages (lines {min(summarized)}-{max(summarized)}) "
                f"into a compaction record appended to the file; every line stays; keep {kept} messages "
                "after the summary" + (f" (from line {self.cut_line})" if kept else "")
            )
            return
        yield (
            f"{self.path}: summarize {self.cut} messages (lines {min(summarized)}-{max(summarized)}) "
            f"into one; keep {len(self.top)} lines above it, replace {self.dropped} lines (kept in the "
            f"archive), keep {kept} messages after it"
            + (f" (from line {self.cut_line})" if kept else "")
            + (f"; {planned_text(self.stats['planned'])}" if "planned" in self.stats else "")
        )

    def diff(self, source: BinaryIO, name: str) -> Iterator[str]:
        """The change with a stand-in summary: a preview never asks the model."""
        backend = getattr(self.summarizer, "name", "the backend")
        records = self.new_records(source, f"(summary written by {backend} when applied)", "<archive>")
        yield f"--- {name}\n"
        yield f"+++ {name}\n"
        if self.append:
            lines = self.stats.get("lines", 0)
            yield f"@@ -{lines},0 +{lines + 1},{len(records)} @@\n"
            for record in records:
                yield "+" + diff_line(_dump(record, self.style) + b"\n")
            return
        top = {offset for offset, _ in self.top}
        before = self.cut_line - 1
        yield f"@@ -1,{before} +1,{len(self.top) + len(records) + len(self.pinned)} @@\n"
        source.seek(0)
        offset = 0
        for _ in range(before):
            raw = source.readline()
            yield (" " if offset in top else "-") + diff_line(raw)
            offset += len(raw)
        for record in records:
            yield "+" + diff_line(_dump(record, self.style) + b"\n")
        pinned, parent = self._pinned_lines(source, self.dialect.link(records[-1])[0])
        for raw in pinned:
            yield "+" + diff_line(raw)
        shift = len(self.top) + len(records) + len(pinned) - before
        for offset, length, relinked in self._tail_changes():
            number = self._line_at(offset)
            source.seek(offset)
            new_start = number + shift if relinked else number + shift - 1  # a deletion names the line before
            yield f"@@ -{number},1 +{new_start},{int(relinked)} @@\n"
            yield "-" + diff_line(source.read(length))
            if relinked:
                yield "+" + diff_line(self._relinked(source, offset, length, parent))
            else:
                shift -= 1

    def _line_at(self, offset: int) -> int:
        return self.line_numbers.get(offset, 0)


# ------------------------------------------------------------------------------------- analyze


class _Reader:
    """The first pass: conversations (in the dialect's order), the lines that may be kept on top, the
    style, the hash."""

    def __init__(self, dialect: Dialect, counters: list[Any], pins: list[re.Pattern] | None = None) -> None:
        self.dialect = dialect
        self.pins = pins or []
        self.main = _Conversation()
        self.side = _Conversation()  # sub-agent records: the conversation of a sub-agent's own file
        self.counters = counters
        self.top_candidates: list[tuple[int, int]] = []  # (offset, length), in file order
        self.style: _Style | None = None
        self.first_user: int | None = None  # offset of the first user message
        self.sources: list[int] = []  # Dialect.feeds_summary records of the active context, by offset
        # Offset of every record, in file order: what an appended compaction names (pi) and hangs from.
        self.records = array("q")
        self.keep_records = dialect.appends_compactions
        self.hasher = hashlib.sha256()

    def each_line(self, line: Line, offset: int) -> None:
        """Every line, in file order: the hash, and what stays above the summary when it is before the
        cut (a title; a line kept unread by --on-invalid keep, in its place)."""
        self.hasher.update(line.raw)
        record = line.record
        if record is None:
            if line.raw.strip():
                self.top_candidates.append((offset, len(line.raw)))
            return
        if self.keep_records:
            self.records.append(offset)
        if self.dialect.stays_on_top(record):
            self.top_candidates.append((offset, len(line.raw)))

    def add(self, number: int, raw: bytes, offset: int, record: dict) -> None:
        for counter in self.counters:
            counter.add(record, number)
        dialect = self.dialect
        conversation = self.side if dialect.is_side(record) else self.main
        position = len(conversation.chain)
        uuid, parent = dialect.link(record)
        linked = uuid is not None or parent is not None
        if linked:
            conversation.chain.add(offset, len(raw), number, uuid, parent)
        compaction = dialect.compaction(record)
        if compaction == BOUNDARY:
            conversation.restart()
            self.sources = []
            if dialect.feeds_summary(record):
                self.sources.append(offset)
            if dialect.restarted_with(record):  # it carries the new context: one summary message
                self._message(
                    conversation, number, raw, offset, record, {"role": "user"}, position, linked, True
                )
            return
        if dialect.feeds_summary(record) and conversation is self.main:
            self.sources.append(offset)
        normalized = dialect.normalize(record)
        if normalized is None:
            return
        if compaction == SUMMARY:
            conversation.restart()  # the active context starts with it (older versions: no boundary)
        if dialect.is_synthetic(record):
            conversation.synthetic.add(offset)
        self._message(conversation, number, raw, offset, record, normalized, position, linked)

    def _message(
        self,
        conversation: _Conversation,
        number: int,
        raw: bytes,
        offset: int,
        record: dict,
        normalized: dict,
        position: int,
        linked: bool,
        summary: bool = False,
    ) -> None:
        if self.style is None:
            self.style = _style_of(raw)
        if self.first_user is None and normalized.get("role") == "user" and not summary:
            self.first_user = offset
        summary = summary or is_summary_message(normalized) or self.dialect.compaction(record) == SUMMARY
        if self.pins and not summary and not self.dialect.stays_on_top(record):
            text = searchable_text(normalized)
            if any(pin.search(text) for pin in self.pins):
                conversation.pinned.add(len(conversation.messages))
        conversation.messages.add(self.dialect, record, normalized, summary)
        conversation.add(number, offset, len(raw), position, linked)


def analyze(
    source: BinaryIO,
    path: str,
    *,
    options: SummarizeOptions,
    summarizer: Summarizer | None,
    fmt: str | None = None,
    on_invalid: str = "error",
    estimator: Any = None,
) -> SummaryEdit:
    """Read the file once and decide the cut. `estimator(dialect)` backs --threshold (a
    compactcli.pipelines.context counter factory); nothing is sent to a model here."""
    from compactcli.pipelines.context import ContextCounter

    dialect = dialect_for(source, path, fmt)
    if not dialect.writes_compactions:
        raise BadInput(
            f"{path}: summarize cannot write a compaction into {dialect.title or dialect.name} yet"
        )
    threshold_counter = estimator(dialect) if (estimator and options.threshold is not None) else None
    heuristic = ContextCounter(dialect, "heuristic", detail=False)
    counters = [heuristic] + ([threshold_counter] if threshold_counter is not None else [])
    reader = _Reader(dialect, counters, [re.compile(pattern) for pattern in options.pin])
    # In the order the model saw the records (docs/design.md, "Dialects"): a split response is one
    # message, an abandoned branch is no part of the conversation.
    view = ConversationLines(source, path, on_invalid, dialect, each_line=reader.each_line)
    for line in view:
        if line.record is not None:
            reader.add(line.number, line.raw, view.offset, line.record)
    offset, lines = view.size, view.lines
    edit = SummaryEdit(path, dialect, options, summarizer, on_invalid)
    edit.sha256, edit.size = reader.hasher.hexdigest(), offset
    edit.style = reader.style or _Style()
    edit.pre_tokens = heuristic.tokens
    conversation = reader.main
    if not reader.main.messages and reader.side.messages:
        conversation = reader.side
    edit.conversation = conversation
    messages = conversation.messages
    edit.cut = choose_cut(messages, options.keep_last)
    edit.stats = {
        "dialect": dialect.name,
        "lines": lines,
        "messages": len(messages),
        "tokens": heuristic.tokens,
    }
    if threshold_counter is not None:
        edit.stats["threshold_tokens"] = threshold_counter.tokens
    over = threshold_counter is None or (threshold_counter.tokens or 0) > (options.threshold or 0)
    empty = nothing_to_summarize(messages, edit.cut)
    if empty or not over:
        if over:
            edit.stats["reason"] = "nothing to summarize"
        elif threshold_counter is not None and threshold_counter.tokens is None:
            edit.stats["reason"] = "no token count (no usage recorded)"
        else:
            edit.stats["reason"] = "below threshold"
        return edit
    edit._will_change = True
    if dialect.appends_compactions:
        _append_after(edit, reader, conversation)
        if nothing_to_summarize(messages, edit.cut):  # the pinned messages start it
            edit._will_change = False
            edit.stats["reason"] = "nothing to summarize"
            return edit
    else:
        _place_cut(edit, reader, conversation, offset, lines)
    edit.stats.update(summarized=edit.cut, kept=len(messages) - edit.cut, replaced_lines=edit.dropped)
    conversation.release()
    planned = planned_usage(summarizer, heuristic.tokens or 0)
    if planned:
        edit.stats["planned"] = planned
    return edit


def _append_after(edit: SummaryEdit, reader: _Reader, conversation: _Conversation) -> None:
    """The compaction is appended (Dialect.appends_compactions): nothing is removed or relinked. It
    names the first kept record, and hangs from the file's last record. A pinned message keeps the
    conversation from it on: the agent keeps one stretch before its compaction, so the pinned messages
    stay in their place, in order, with what follows them."""
    edit.append = True
    pinned = [index for index in pin_closure(conversation.messages, conversation.pinned) if index < edit.cut]
    if pinned:
        edit.cut = min(pinned)
    messages = conversation.messages
    kept = edit.cut < len(messages)
    first = [conversation.offset(edit.cut)] if kept else []
    edit.cut_offset = conversation.offset(edit.cut) if kept else edit.size
    edit.cut_line = conversation.line(edit.cut) if kept else edit.stats["lines"] + 1
    edit.context_offsets = tuple(first + list(reader.records[-1:]))
    edit.kept_index = bisect_left(reader.records, first[0]) if kept else None


def planned_usage(summarizer: Summarizer | None, tokens: int) -> dict | None:
    """What a model summary of a context of `tokens` would send and cost, before any request (what
    --dry-run reports): the requests (one, or a part per budget and the combining), about `tokens` plus
    the prompt per request in (an upper bound: rendering clips long tool results), at most
    --summary-tokens out per request, and the price of that where pricing knows the model. None for a
    summarizer without a model (the digest)."""
    budget = getattr(summarizer, "budget", None)
    if not isinstance(budget, int) or summarizer is None:
        return None
    parts = max(1, -(-tokens // budget))
    requests = 1 if parts == 1 else parts + 1
    out_tokens = requests * int(getattr(summarizer, "summary_tokens", 0))
    in_tokens = tokens + requests * PROMPT_OVERHEAD + (0 if parts == 1 else out_tokens)
    model = getattr(summarizer, "model", None)
    planned = {
        "requests": requests,
        "input_tokens": in_tokens,
        "max_output_tokens": out_tokens,
        "model": model,
    }
    price, source = summary_price(summarizer, model)
    if price is not None:
        planned["max_cost_usd"] = round(cost_usd(price, in_tokens, out_tokens), 6)
        planned["price_from"] = source
    return planned


def summary_price(summarizer: Summarizer | None, model: str | None) -> tuple[Price | None, str | None]:
    """The price of the summarizer's tokens and its source (ModelSummarizer.price_for); (None, None)
    for one that has no price (the digest spends nothing)."""
    price_for = getattr(summarizer, "price_for", None)
    return price_for(model) if price_for is not None else (None, None)


def _place_cut(
    edit: SummaryEdit, reader: _Reader, conversation: _Conversation, size: int, lines: int
) -> None:
    """Where the kept part starts in the file, and what around it is kept, left out or relinked.

    The cut is an index in the conversation's order; in the file, the kept part starts at its first
    record there (cut_offset). Records of the conversation summarized but written after that are left
    out (`removed`); kept records whose parent was summarized are relinked. Records of no conversation
    after cut_offset (an abandoned branch, snapshots) stay as they are."""
    cut = edit.cut
    chain = conversation.chain
    start = conversation.at_chain(cut) if cut < len(conversation.messages) else len(chain)
    kept = range(start, len(chain))
    if cut < len(conversation.messages):
        first = min(
            [(conversation.offset(cut), conversation.line(cut))]
            + list(zip(chain.offsets[start:], chain.lines[start:], strict=True))
        )
        edit.cut_offset, edit.cut_line = first
    else:
        edit.cut_offset, edit.cut_line = size, lines + 1
    before = range(start)
    edit.top = [span for span in reader.top_candidates if span[0] < edit.cut_offset]
    removed = [at for at in before if chain.offsets[at] >= edit.cut_offset]
    edit.removed = [(chain.offsets[at], chain.lengths[at]) for at in removed]
    pinned = sorted(index for index in pin_closure(conversation.messages, conversation.pinned) if index < cut)
    top = {offset for offset, _ in edit.top}
    edit.pinned = [
        (conversation.offset(index), conversation.length(index))
        for index in pinned
        if conversation.offset(index) not in top
    ]
    edit.dropped = edit.cut_line - 1 - len(edit.top) + len(edit.removed) - len(edit.pinned)
    # The kept records' parents that were summarized (not a set of every summarized uuid: they are many).
    parents = {chain.parents[at] for at in kept}
    parents.discard(NO_HASH)
    gone = parents.intersection(itertools.islice(chain.uuids, start))
    relinked = [at for at in kept if chain.parents[at] in gone]
    edit.relink = [(chain.offsets[at], chain.lengths[at]) for at in relinked]
    # The lines of the records the diff shows changed (relinked or left out).
    edit.line_numbers = {chain.offsets[at]: chain.lines[at] for at in itertools.chain(relinked, removed)}
    last_message = [conversation.offset(cut - 1)] if cut else []
    last_linked = [chain.offsets[at] for at in reversed(before) if chain.uuids[at] != NO_HASH][:1]
    first_user = [reader.first_user] if reader.first_user is not None else []
    edit.context_offsets = tuple(dict.fromkeys(first_user + last_message + last_linked))
    sources = [offset for offset in reader.sources if offset < edit.cut_offset]
    if sources:  # the dialect names what its compaction is built from (Dialect.feeds_summary)
        if reader.dialect.feeds_beside_edges:
            sources = sorted(set(sources).union(edit.context_offsets))  # file order
        edit.context_offsets = tuple(sources)


def planned_text(planned: dict) -> str:
    """What a run would send: `1 request, ~2,345 tokens in, at most 8,192 out, at most $0.0870`."""
    requests = planned["requests"]
    text = (
        f"{requests} request{'s' if requests != 1 else ''}, ~{planned['input_tokens']:,} tokens in, "
        f"at most {planned['max_output_tokens']:,} out"
    )
    if "max_cost_usd" in planned:
        whose = "--price" if planned.get("price_from") == "settings" else f"{planned['model']}'s list price"
        text += f", at most ${planned['max_cost_usd']:.4f} at {whose}"
    elif planned.get("model"):
        text += f" ({planned['model']}: no price known, --price sets one)"
    return text
