"""Layer 1: replace the content of old tool results with a short placeholder (docs/design.md, "Layers").

Pure logic in steps, so a file can be streamed twice instead of held: `MicroIndex.add` sees every record
once and remembers only small facts per tool result; `plan` decides which results to clear; `apply` clears
them in one record. The opt-in strategies (docs/design.md, "Micro strategies") keep their own index
(layers/micro_strategies.py) and add their changes to the same plan.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
import sys
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from compactcli.core.columns import HASHES, narrow, repeated, widened
from compactcli.core.constants import DEFAULT_PLACEHOLDER, DEFAULT_PRESERVE

if TYPE_CHECKING:
    from compactcli.dialects import Dialect
    from compactcli.dialects.base import Scan

# A result that may be a placeholder already in place is remembered verbatim (idempotence).
_REMEMBER_TEXT_UP_TO = 4096


@dataclass(frozen=True)
class Cut:
    """--truncate: a cleared text result keeps its first `head` and last `tail` characters."""

    head: int
    tail: int


# What replaces the middle of a truncated result; `is_truncation` recognises it (idempotence).
_CUT_MARK = "\n[... {:,} characters truncated ...]\n"
_CUT_MARK_PATTERN = re.compile(r"\n\[\.\.\. [0-9,]+ characters truncated \.\.\.\]\n")


@dataclass(frozen=True)
class Reclear:
    """What a result an earlier run cleared is given again, its placeholder, so that the UI's copies an
    earlier version left beside it are cleared as with a fresh clear (docs/design.md, "A result cleared
    before"); counted as UI copies cleared, not as results."""

    text: str


def cut_text(text: str, cut: Cut) -> str:
    tail = text[len(text) - cut.tail :] if cut.tail else ""
    return text[: cut.head] + _CUT_MARK.format(len(text) - cut.head - cut.tail) + tail


def shortens(chars: int, cut: Cut) -> bool:
    """Whether truncating a text of `chars` characters makes it shorter (the mark has a length too)."""
    removed = chars - cut.head - cut.tail
    return removed > len(_CUT_MARK.format(removed))


def is_truncation(text: str, cut: Cut) -> bool:
    """A text `cut_text` wrote with these HEAD and TAIL: truncating it again would change it."""
    found = _CUT_MARK_PATTERN.match(text, cut.head)
    return found is not None and found.end() + cut.tail == len(text)


@functools.lru_cache(maxsize=4096)
def _render(placeholder: str, tool_name: str) -> str:
    # One string per tool name, not per result: every cleared result holds its placeholder until the
    # second pass, twice (the spooled line's changes and the plan).
    # str.replace, not format: a user's placeholder may contain other braces.
    return placeholder.replace("{tool_name}", tool_name)


@dataclass(frozen=True)
class MicroOptions:
    keep: int = 3
    min_chars: int = 100
    preserve: frozenset[str] = DEFAULT_PRESERVE
    placeholder: str = DEFAULT_PLACEHOLDER
    clear_multimodal: bool = False
    trigger_tokens: int = 0
    # Opt-in strategies (docs/design.md, "Micro strategies"); none of them is on by default.
    dedupe_reads: bool = False
    keep_images: int | None = None
    truncate: Cut | None = None
    drop_progress: bool = False
    drop_sidechains: bool = False
    drop_thinking: bool = False

    def render(self, tool_name: str) -> str:
        return _render(self.placeholder, tool_name)

    @property
    def strategies(self) -> list[str]:
        """The opt-in strategies in force, as the manifest and reports name them."""
        named = [
            "dedupe-reads" if self.dedupe_reads else "",
            f"keep-images={self.keep_images}" if self.keep_images is not None else "",
            f"truncate={self.truncate.head}:{self.truncate.tail}" if self.truncate else "",
            "drop-progress" if self.drop_progress else "",
            "drop-sidechains" if self.drop_sidechains else "",
            "drop-thinking" if self.drop_thinking else "",
        ]
        return [name for name in named if name]

    def manifest_record(self) -> dict:
        """The options as the archive manifest records them; the strategies only when one is on, so
        that the manifest of a default run stays as it was before there were strategies."""
        record = {
            "keep": self.keep,
            "min_chars": self.min_chars,
            "preserve": sorted(self.preserve),
            "placeholder": self.placeholder,
            "clear_multimodal": self.clear_multimodal,
            "trigger_tokens": self.trigger_tokens,
        }
        if self.strategies:
            record["strategies"] = self.strategies
        return record

    def placeholder_for(self, fact: ResultFact, tool_name: str, superseded: bool = False) -> str | Cut | None:
        """What the result becomes if it is old enough to clear (or `superseded`: a newer copy of the
        file is in the context, so even a preserved tool's result goes), or None when it is kept."""
        if not fact.is_text and not self.clear_multimodal:
            return None
        if fact.chars <= self.min_chars or (tool_name in self.preserve and not superseded):
            return None
        if self.truncate is not None and fact.is_text:
            return self.truncate if shortens(fact.chars, self.truncate) and not fact.truncated else None
        placeholder = self.render(tool_name)
        return None if fact.text == placeholder else placeholder  # None: cleared by an earlier run

    def reclear_for(self, fact: ResultFact, tool_name: str, superseded: bool = False) -> Reclear | None:
        """A result an earlier run cleared, which this run would clear too: its placeholder again, for
        the UI's copies left beside it, else None."""
        if tool_name in self.preserve and not superseded:
            return None
        placeholder = self.render(tool_name)
        return Reclear(placeholder) if fact.text == placeholder else None


@dataclass(slots=True)
class ResultFact:
    line: int
    slot: int
    tool_use_id: str | None
    is_text: bool
    chars: int
    text: str | None  # the content when it is a short string
    truncated: bool = False  # --truncate: the content is a truncation already (idempotence)
    # The tool's name where its use was read before the result and the id was let go (then
    # tool_use_id is None: MicroIndex.keep_ids).
    tool_name: str | None = None
    # The result may be a placeholder already and a UI copy beside it was left (Dialect.ui_copy_left).
    copy_left: bool = False


class Facts:
    """One conversation's tool results, in columns of machine integers rather than a ResultFact each
    (about 120 bytes a result less, for as long as the file is read: docs/design.md, "Memory per
    record"); a ResultFact is made again for each one read."""

    __slots__ = ("lines", "slots", "ids", "chars", "flags", "texts")

    def __init__(self, facts: Iterable[ResultFact] = ()) -> None:
        self.lines = narrow()
        self.slots = narrow(signed=True)
        # The tool use id, or (flag 4) the tool's name where the id was let go: one column for both.
        self.ids: list[str | None] = []
        self.chars = narrow()
        self.flags = bytearray()  # 1: is_text, 2: truncated, 4: ids holds the tool's name, 8: copy_left
        self.texts: dict[int, str] = {}  # position -> text, for the few results that keep theirs
        for fact in facts:
            self.append(fact)

    def append(self, fact: ResultFact) -> None:
        if fact.text is not None:
            self.texts[len(self.lines)] = fact.text
        try:
            self.lines.append(fact.line)
        except OverflowError:
            self.lines = widened(self.lines, fact.line)
        try:
            self.slots.append(fact.slot)
        except OverflowError:
            self.slots = widened(self.slots, fact.slot)
        named = fact.tool_name is not None
        self.ids.append(fact.tool_name if named else fact.tool_use_id)
        try:
            self.chars.append(fact.chars)
        except OverflowError:
            self.chars = widened(self.chars, fact.chars)
        self.flags.append(fact.is_text | fact.truncated << 1 | named << 2 | fact.copy_left << 3)

    def __len__(self) -> int:
        return len(self.lines)

    def reordered(self, position: dict[int, int]) -> Facts:
        """The results on the lines `position` gives a place, in the order of those places (a line's
        results as they were): column by column, no ResultFact made."""
        places = list(map(position.get, self.lines))
        kept = sorted((at for at, place in enumerate(places) if place is not None), key=places.__getitem__)
        moved = Facts()
        moved.lines = array(self.lines.typecode, map(self.lines.__getitem__, kept))
        moved.slots = array(self.slots.typecode, map(self.slots.__getitem__, kept))
        moved.ids = list(map(self.ids.__getitem__, kept))
        moved.chars = array(self.chars.typecode, map(self.chars.__getitem__, kept))
        moved.flags = bytearray(map(self.flags.__getitem__, kept))
        if self.texts:
            moved.texts = {new: self.texts[old] for new, old in enumerate(kept) if old in self.texts}
        return moved

    def __getitem__(self, at: int) -> ResultFact:
        flags = self.flags[at]
        text = self.texts.get(at) if self.texts else None
        line, slot, chars = self.lines[at], self.slots[at], self.chars[at]
        use_id, name = (None, self.ids[at]) if flags & 4 else (self.ids[at], None)
        return ResultFact(
            line, slot, use_id, bool(flags & 1), chars, text, bool(flags & 2), name, bool(flags & 8)
        )

    def __iter__(self) -> Iterator[ResultFact]:
        texts = self.texts
        columns = zip(self.lines, self.slots, self.ids, self.flags, self.chars, strict=True)
        if not texts:  # the common case, read for every result of a file: no lookup
            for line, slot, key, flags, chars in columns:
                named = flags & 4 != 0
                use_id, name = (None, key) if named else (key, None)
                yield ResultFact(
                    line, slot, use_id, flags & 1 != 0, chars, None, flags & 2 != 0, name, flags & 8 != 0
                )
            return
        for at, (line, slot, key, flags, chars) in enumerate(columns):
            use_id, name = (None, key) if flags & 4 else (key, None)
            text = texts.get(at)
            yield ResultFact(
                line, slot, use_id, flags & 1 != 0, chars, text, flags & 2 != 0, name, flags & 8 != 0
            )

    def __reversed__(self) -> Iterator[ResultFact]:
        return map(self.__getitem__, range(len(self.lines) - 1, -1, -1))


def content_chars(content: object) -> int:
    """Size of a result's content: string length, or the text and data lengths inside a list of blocks."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for block in content:
            if isinstance(block, dict):
                total += len(str(block.get("text", "")))
                source = block.get("source")
                if isinstance(source, dict):
                    total += len(str(source.get("data", "")))
                url = block.get("image_url")
                if isinstance(url, str):  # a Codex input_image: its data URL
                    total += len(url)
            else:
                total += len(str(block))
        return total
    return 0


# Copies of one tool that wait for their result at once, at most (the oldest goes first): Copilot writes
# a hook's copy right before the result's own event (docs/design.md, "micro and estimate").
_UNNAMED_WAITING = 16


# Characters of the waiting copies' texts kept as they are, at most: compared with a result's text as
# they are (hashing every copy and every result of their tool cost 12% of micro on a Copilot session);
# beyond, a copy waits as a digest, so memory stays flat whatever the session holds.
_WAITING_TEXT_CHARS = 1 << 22


def _output_text(content: object) -> str:
    """A tool output as the text a copy is compared with."""
    return content if isinstance(content, str) else json.dumps(content, sort_keys=True, ensure_ascii=False)


def _digest(text: str) -> bytes:
    """A short fingerprint of an output's text: a copy is matched to its result without keeping either."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_CLAUDE_ID_HEAD = "toolu_01"
_CLAUDE_ID_TAIL = 22  # characters after the head, in every Claude id


def _short_key(use_id: object) -> object:
    """tool_names' key of an id where results let their ids go: a Claude id's tail after the head all
    of them share, as bytes (about 24 bytes less than the string). No id read from JSON is bytes, so
    no key of this kind meets another id: matching stays exact."""
    if (
        type(use_id) is str
        and len(use_id) == len(_CLAUDE_ID_HEAD) + _CLAUDE_ID_TAIL
        and use_id.startswith(_CLAUDE_ID_HEAD)
        and use_id.isascii()
    ):
        return use_id[len(_CLAUDE_ID_HEAD) :].encode()
    return use_id


# Uses whose names tool_names holds as a dict entry each (about 100 bytes), where results let their ids
# go; past this, the older half of the Claude ids moves to _Settled's columns (31 bytes each).
_LIVE_NAMES = 4096


class _Settled:
    """Claude ids (their tails, as _short_key gives them) and their tools' names, moved out of
    tool_names: the tails end to end, their hashes and an index into a table of names, in columns.
    Only looked up at the end of the read (MicroIndex.settle), by exact comparison of the tails."""

    __slots__ = ("tails", "hashes", "names", "table", "numbers")

    def __init__(self) -> None:
        self.tails = bytearray()
        self.hashes = array(HASHES)
        self.names = array("B")  # index into table
        self.table: list[str] = []
        self.numbers: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.hashes)

    def extend(self, tails: list[bytes], names: list[str]) -> None:
        numbers = self.numbers
        for name in set(names).difference(numbers):
            numbers[name] = len(self.table)
            self.table.append(name)
        if len(self.table) > 256 and self.names.typecode == "B":
            self.names = array("I", self.names)
        if self.names.typecode == "B":
            self.names.frombytes(bytes(map(numbers.__getitem__, names)))
        else:
            self.names.extend(map(numbers.__getitem__, names))
        self.tails += b"".join(tails)
        self.hashes.extend(map(hash, tails))

    def positions(self, hashes: set[int]) -> Iterator[int]:
        """Where the tails whose hashes are among `hashes` are, in the order they were moved."""
        return itertools.compress(range(len(self.hashes)), map(hashes.__contains__, self.hashes))

    def tail(self, at: int) -> bytes:
        return bytes(self.tails[at * _CLAUDE_ID_TAIL : (at + 1) * _CLAUDE_ID_TAIL])

    def name(self, at: int) -> str:
        return self.table[self.names[at]]


def _same_key(use_id: object) -> object:
    return use_id


@dataclass
class MicroIndex:
    """What one pass over a transcript needs to remember to decide what micro clears."""

    dialect: Dialect
    tool_names: dict = field(default_factory=dict)  # key(tool use id) -> tool name
    results: dict[str, Facts] = field(default_factory=dict)
    # Lines of records that repeat a result for the UI (Codex exec_command_end), by tool use id.
    copies: dict[str, list[int]] = field(default_factory=dict)
    copy_count: int = 0
    # Copies that name no call (Dialect.unnamed_result_copy), until the result they repeat is seen:
    # tool name -> (the output's text, or its digest, line), oldest first; a few per tool, so memory
    # stays flat (_WAITING_TEXT_CHARS).
    _unnamed: dict[str, deque[tuple[str | bytes, int]]] = field(default_factory=dict, init=False, repr=False)
    _waiting_chars: int = field(default=0, init=False, repr=False)  # of the texts _unnamed holds
    # Such a copy that holds another text than the result right after it (no other result between), by
    # that result's tool use id: (line, characters of the copy's text). The rare copy an earlier version
    # left beside a result it cleared, or a copy of other text; cleared with its result where it holds
    # more than --min-chars characters.
    near_copies: dict[str, tuple[int, int]] = field(default_factory=dict)
    _last_copy: tuple[str, int, int] | None = field(default=None, init=False, repr=False)

    placeholder: str = DEFAULT_PLACEHOLDER
    truncate: Cut | None = None
    # Whether a result keeps its tool use id once its tool's name is known: only what matches results
    # by id needs it (UI copies, repeated results, the strategies, --top). Without, the ids are held
    # once, by tool_names (docs/design.md, "Memory per record").
    keep_ids: bool = True

    def __post_init__(self) -> None:
        self._tracker = self.dialect.new_tracker()
        self.key = _same_key if self.keep_ids else _short_key  # tool_names' key of an id
        # Where results let their ids go: the Claude ids moved out of tool_names (until `settle`), and
        # the keys of the results that found no name in tool_names when they were read.
        self._settled: _Settled | None = None if self.keep_ids else _Settled()
        self._unnamed_keys: set[object] = set()
        self._move_at = sys.maxsize if self.keep_ids else _LIVE_NAMES  # tool_names' size that moves ids
        # Head before the first {tool_name}, tail after the last: a placeholder may name the tool twice.
        self._head = self.placeholder.partition("{tool_name}")[0]
        self._tail = self.placeholder.rpartition("{tool_name}")[2]

    def _may_be_placeholder(self, text: str) -> bool:
        # Only texts that could be a placeholder are kept: memory must not follow the file's size.
        return len(text) <= _REMEMBER_TEXT_UP_TO and text.startswith(self._head) and text.endswith(self._tail)

    def add(
        self, line: int, record: dict, conversation: str | None = None, scanned: Scan | None = None
    ) -> list[ResultFact]:
        """Remember the record's tool uses and results; returns the results' facts. `conversation`: the
        record's conversation, and `scanned`: its Dialect.scan, where the caller knows them already
        (RecordOrder.add_scan)."""
        if conversation is None:
            conversation = self._tracker.key(record)
        uses, results = scanned if scanned is not None else self.dialect.scan(record)
        keep_ids, key = self.keep_ids, self.key
        for use in uses:
            # A handful of tool names, one string each: not one per tool use of a long transcript. The
            # id is interned so that its results hold the same string, not a second copy of it (not
            # needed where results let their ids go: the interpreter's table costs a slot an id).
            use_id = sys.intern(use.id) if type(use.id) is str and keep_ids else key(use.id)
            self.tool_names.setdefault(use_id, sys.intern(use.name) if type(use.name) is str else use.name)
        if uses and len(self.tool_names) > self._move_at:
            self._move_names()
        if self.dialect.has_result_copies:
            for use_id in self.dialect.result_copies(record):
                self.copies.setdefault(use_id, []).append(line)
                self.copy_count += 1
            unnamed = self.dialect.unnamed_result_copy(record)
            if unnamed is not None:
                waiting = self._unnamed.get(unnamed[0])
                if waiting is None:
                    waiting = self._unnamed[unnamed[0]] = deque(maxlen=_UNNAMED_WAITING)
                if len(waiting) == _UNNAMED_WAITING:  # the oldest is given up
                    self._forget(waiting.popleft()[0])
                waiting.append((self._waiting_form(_output_text(unnamed[1])), line))
                self.copy_count += 1  # its line is one micro may change
                text = unnamed[1]
                size = len(text) if isinstance(text, str) else content_chars(text)
                self._last_copy = (unnamed[0], line, size)
        if not results:
            return []
        if self._unnamed:
            for result in results:
                self._match_unnamed(result.tool_use_id, result.content)
            self._last_copy = None
        facts = self.results.get(conversation)
        if facts is None:
            facts = self.results[conversation] = Facts()
        added: list[ResultFact] = []
        names = self.tool_names
        head, tail = self._head, self._tail
        for result in results:
            content = result.content
            is_text = isinstance(content, str)
            if is_text:
                chars = len(content)
                # _may_be_placeholder, inline: it runs for every result
                short = (
                    content
                    if chars <= _REMEMBER_TEXT_UP_TO and content.startswith(head) and content.endswith(tail)
                    else None
                )
            else:
                chars, short = content_chars(content), None
            use_id = result.tool_use_id
            name = None
            if keep_ids:
                if type(use_id) is str:
                    use_id = sys.intern(use_id)
            elif type(use_id) is str and use_id:
                # The name tool_name() would find at the end: a use's name never changes once read.
                use_key = key(use_id)
                name = names.get(use_key)
                if name is not None:
                    use_id = None
                elif type(use_key) is bytes:
                    self._unnamed_keys.add(use_key)
            fact = ResultFact(line, result.slot, use_id, is_text, chars, short, False, name)
            if short is not None:
                fact.copy_left = self.dialect.ui_copy_left(record, result.slot)
            if self.truncate is not None and is_text:
                fact.truncated = is_truncation(content, self.truncate)
            facts.append(fact)
            added.append(fact)
        return added

    def _move_names(self) -> None:
        """Move the older half of tool_names' Claude ids (with names that are strings) to _Settled."""
        names = self.tool_names
        half = len(names) // 2
        keys = list(itertools.islice(names, half))
        values = list(itertools.islice(names.values(), half))
        # Made by C loops where every one moves (the common case: no per-id bytecode).
        if list(map(type, keys)).count(bytes) == half and list(map(type, values)).count(str) == half:
            kept: list = []
        else:
            kept = [
                (use_id, name)
                for use_id, name in zip(keys, values, strict=True)
                if type(use_id) is not bytes or type(name) is not str
            ]
            moving = [
                (use_id, name)
                for use_id, name in zip(keys, values, strict=True)
                if type(use_id) is bytes and type(name) is str
            ]
            keys, values = [use_id for use_id, _ in moving], [name for _, name in moving]
        self.tool_names = dict(kept)
        self.tool_names.update(itertools.islice(names.items(), half, None))
        if keys:
            self._settled.extend(keys, values)  # type: ignore[union-attr]
        # Twice what stays: ids that cannot move (other than Claude's) are not walked again and again.
        self._move_at = max(_LIVE_NAMES, 2 * len(self.tool_names))

    def settle(self) -> bool:
        """At the end of the read, where ids were moved out of tool_names: put back the names of the
        results that found none when they were read, and let the moved ids go. False when an id was
        used twice with different names and the first was moved: the names given as the file was read
        may then be the second, so the read must be made again with the ids kept (keep_ids)."""
        settled, self._settled = self._settled, None
        self._move_at = sys.maxsize
        unnamed, self._unnamed_keys = self._unnamed_keys, set()
        if settled is None or not len(settled):
            return True
        names = self.tool_names
        live = [use_id for use_id in names if type(use_id) is bytes]
        twice = repeated(lambda: itertools.chain(settled.hashes, map(hash, live)), len(settled) + len(live))
        wanted = {hash(use_id): use_id for use_id in unnamed if type(use_id) is bytes and use_id not in names}
        found: dict[bytes, str] = {}
        for at in settled.positions(twice | wanted.keys()):
            tail, name = settled.tail(at), settled.name(at)
            first = found.setdefault(tail, name)
            if first != name or names.get(tail, name) != name:
                return False
        for use_id in wanted.values():
            if use_id in found:
                names[use_id] = found[use_id]
        return True

    def _match_unnamed(self, tool_use_id: str | None, content: object) -> None:
        """A result takes the oldest waiting copy of the same tool with the same output, else the copy
        written right before it (no other result between) if that one is of the same tool."""
        name = self.tool_names.get(self.key(tool_use_id or ""), "")
        waiting = self._unnamed.get(name)
        if not waiting or tool_use_id is None:
            return
        text = _output_text(content)
        digest = None
        for position, (copied, line) in enumerate(waiting):
            if type(copied) is bytes and digest is None:
                digest = _digest(text)
            if copied == (text if type(copied) is str else digest):
                del waiting[position]
                self._forget(copied)
                self.copies.setdefault(tool_use_id, []).append(line)
                return
        near = self._last_copy
        if near is None or near[0] != name:
            return
        for position, (_, line) in enumerate(waiting):
            if line == near[1]:
                del waiting[position]
                self.near_copies[tool_use_id] = (line, near[2])
                self._last_copy = None
                return

    def _waiting_form(self, text: str) -> str | bytes:
        """How a copy waits: its text while the texts waiting are few, else its digest."""
        if self._waiting_chars + len(text) > _WAITING_TEXT_CHARS:
            return _digest(text)
        self._waiting_chars += len(text)
        return text

    def _forget(self, copied: str | bytes) -> None:
        if type(copied) is str:
            self._waiting_chars -= len(copied)

    def follow(self, lines: list[int]) -> None:
        """Put each conversation's results in the order of `lines` (the dialect's conversation order,
        Dialect.new_order): "the last --keep" are the last the model saw. Results on other lines (an
        abandoned branch) are no part of a conversation and are never cleared."""
        position = {line: index for index, line in enumerate(lines)}
        for key, facts in self.results.items():
            self.results[key] = facts.reordered(position)

    def tool_name(self, tool_use_id: str | None) -> str:
        return self.tool_names.get(self.key(tool_use_id or ""), "unknown")

    def name_of(self, fact: ResultFact) -> str:
        """The tool's name of a result, "unknown" where no use of its id was read."""
        return fact.tool_name if fact.tool_name is not None else self.tool_name(fact.tool_use_id)

    def known_name(self, fact: ResultFact) -> str | None:
        """The tool's name of a result if its use has been read so far, else None."""
        if fact.tool_name is not None:
            return fact.tool_name
        use_id = self.key(fact.tool_use_id)
        return self.tool_names.get(use_id) if use_id in self.tool_names else None

    def name_for_id(self, tool_use_id: str) -> str | None:
        """The tool's name of a use read so far, by its id."""
        return self.tool_names.get(self.key(tool_use_id))

    @property
    def result_count(self) -> int:
        return sum(len(facts) for facts in self.results.values())


Change = tuple[int, object]  # (slot, value): a tool result's slot and its new content, or one of below
Plan = dict[int, list[Change]]  # line -> changes


class Strategies(Protocol):
    """What `plan` needs of the opt-in strategies (layers/micro_strategies.py, StrategyIndex)."""

    def changes(self) -> Plan: ...


COPY_SLOT = -2  # marks the clearing of a UI copy (a record of its own that repeats one result)
# The strategies' changes (value in brackets): images replaced (frozenset of their numbers), the record
# dropped (None), its parent changed (the new parent), its thinking blocks removed (None).
IMAGE_SLOT, DROP_SLOT, PARENT_SLOT, THINKING_SLOT = -3, -4, -5, -6


def cleared(
    index: MicroIndex, options: MicroOptions, superseded: frozenset[tuple[int, int]] = frozenset()
) -> Iterable[tuple[ResultFact, str | Cut | Reclear]]:
    """Each result micro clears, with what it becomes: all but the last `keep` of each conversation,
    less the exceptions, and the `superseded` ones ((line, slot): --dedupe-reads). A result an earlier
    run cleared comes as a Reclear where a UI copy beside it was left."""
    repeat = index.dialect.results_repeat
    near = index.near_copies
    for facts in index.results.values():
        old = max(len(facts) - options.keep, 0)
        recent = _recent_calls(facts, options.keep) if repeat else None
        for position, fact in enumerate(facts):
            stale = bool(superseded) and (fact.line, fact.slot) in superseded
            if (position in recent if recent is not None else position >= old) and not stale:
                continue
            name = index.name_of(fact)
            placeholder: str | Cut | Reclear | None = options.placeholder_for(fact, name, stale)
            if placeholder is None and fact.text is not None and (fact.copy_left or fact.tool_use_id in near):
                placeholder = options.reclear_for(fact, name, stale)
            if placeholder is not None:
                yield fact, placeholder


def _recent_calls(facts: Facts, keep: int) -> set[int]:
    """Positions of the results of the last `keep` calls, every copy of one call's result counted once
    (Dialect.results_repeat)."""
    decided: dict[str, bool] = {}
    kept: set[int] = set()
    calls = 0
    for position in range(len(facts) - 1, -1, -1):
        key = facts.ids[position]
        if key is not None and key in decided:
            is_kept = decided[key]
        else:
            is_kept = calls < keep
            calls += 1
            if key is not None:
                decided[key] = is_kept
        if is_kept:
            kept.add(position)
    return kept


@functools.lru_cache(maxsize=4096)
def single_change(slot: int, value: object) -> list[Change]:
    """The changes of a line that has one: one shared list per (slot, placeholder), not one per cleared
    result, as every cleared result's changes are held until the second pass. Never changed in place."""
    return [(slot, value)]


def _add_change(clears: Plan, line: int, slot: int, value: object) -> None:
    todo = clears.get(line)
    clears[line] = single_change(slot, value) if todo is None else [*todo, (slot, value)]


def plan(index: MicroIndex, options: MicroOptions, strategies: Strategies | None = None) -> Plan:
    """Which results to clear, by line, and the strategies' changes. A line's list of changes may be
    shared with other lines (single_change): replace it, never change it in place."""
    clears: Plan = {}
    superseded = strategies.superseded(index) if strategies is not None else frozenset()
    near_copies = index.near_copies
    for fact, placeholder in cleared(index, options, superseded):
        if isinstance(placeholder, Reclear):
            # Cleared before: only what was left of it (its copies matched by text hold it already).
            if fact.copy_left:
                _add_change(clears, fact.line, fact.slot, placeholder)
            copy = placeholder.text
        else:
            _add_change(clears, fact.line, fact.slot, placeholder)
            # The UI's copy of a cleared result would keep what was cleared (a placeholder, even with
            # --truncate).
            copy = placeholder if isinstance(placeholder, str) else options.render(index.name_of(fact))
            for line in index.copies.get(fact.tool_use_id or "", ()):
                _add_change(clears, line, COPY_SLOT, copy)
        near = near_copies.get(fact.tool_use_id or "") if near_copies else None
        if near is not None and near[1] > options.min_chars:
            _add_change(clears, near[0], COPY_SLOT, copy)
    if strategies is not None:
        for line, changes in strategies.changes().items():
            if changes[0][0] == DROP_SLOT:
                clears[line] = changes  # nothing else matters in a record that goes
            else:
                clears[line] = [*clears.get(line, ()), *changes]
    return clears


def _apply_order(change: Change) -> int:
    # Images first (their numbers are those of the record as read), results, then the rest.
    slot = change[0]
    return 0 if slot == IMAGE_SLOT else 2 if slot in (THINKING_SLOT, PARENT_SLOT) else 1


def apply(dialect: Dialect, record: dict, clears: Iterable[Change]) -> bool:
    """Make the changes to one record; False when the record is to be dropped."""
    one = type(clears) is list and len(clears) == 1  # the common case: nothing to sort
    for slot, value in clears if one else sorted(clears, key=_apply_order):
        if slot == DROP_SLOT:
            return False
        if slot == IMAGE_SLOT:
            dialect.replace_images(record, value)  # type: ignore[arg-type]
        elif slot == THINKING_SLOT:
            dialect.drop_thinking(record)
        elif slot == PARENT_SLOT:
            dialect.set_parent(record, value)  # type: ignore[arg-type]
        elif isinstance(value, Reclear):
            dialect.set_result_content(record, slot, value.text)
        elif isinstance(value, Cut):
            content = next((r.content for r in dialect.tool_results(record) if r.slot == slot), None)
            if isinstance(content, str):
                dialect.set_result_content(record, slot, cut_text(content, value))
        else:
            dialect.set_result_content(record, slot, value)
    return True
