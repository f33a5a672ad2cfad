"""micro's opt-in strategies (docs/design.md, "Micro strategies"): what one pass must remember to decide
them, and the changes they add to micro's plan.

- --dedupe-reads: a result of reading a file is superseded by a later read of the same part of it with the
  same tool (or of the whole file), or by a later write of it; micro clears it (preserved tools too).
  A call whose result is an error (Dialect.failed_calls) neither read nor changed the file: it supersedes
  nothing, so the copy the model holds stays.
- --keep-images N: only the last N images of each conversation stay; the others become a text placeholder.
- --drop-progress: records only the UI reads (Dialect.is_progress) are dropped.
- --drop-sidechains: the records of a sub-agent whose call has returned its result are dropped.
- --drop-thinking: thinking before the current turn is dropped (a record of thinking alone, or the blocks).
- A record whose parent is dropped points at the nearest ancestor kept (Dialect.link / set_parent).

Which records and tool results are changed is a pure function of the file, so a second run changes
nothing (idempotence): placeholders are no images, dropped records are gone, and the parents kept.
Memory: a few atoms per record the strategy concerns (per record with a uuid only when one drops records).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace

from compactcli.dialects import Dialect
from compactcli.dialects.base import WHOLE, FileAccess
from compactcli.layers.micro import (
    DROP_SLOT,
    IMAGE_SLOT,
    PARENT_SLOT,
    THINKING_SLOT,
    Change,
    MicroIndex,
    MicroOptions,
    Plan,
    plan,
)

_USER, _ASSISTANT = 1, 2


@dataclass(slots=True)
class _Turn:
    """A message record, for --drop-thinking: where the current turn starts."""

    line: int
    role: int
    uses_tools: bool
    call: object  # Dialect.call_id
    thinking: str | None


@dataclass
class StrategyIndex:
    dialect: Dialect
    options: MicroOptions
    accesses: dict[str, list[FileAccess]] = field(default_factory=dict)  # by tool use id
    failed: set[str] = field(default_factory=set)  # tool use ids whose result is an error
    images: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # conversation -> (line, count)
    dropped: set[int] = field(default_factory=set)  # lines dropped whatever follows (progress)
    turns: dict[str, list[_Turn]] = field(default_factory=dict)
    # Sub-agents: each side conversation's lines and first prompt; the prompts of calls that returned.
    side_lines: dict[str, list[int]] = field(default_factory=dict)
    side_prompt: dict[str, str] = field(default_factory=dict)
    calls: dict[str, str] = field(default_factory=dict)  # open sub-agent calls: tool use id -> prompt
    returned: set[str] = field(default_factory=set)  # prompts of sub-agent calls that returned
    # The chain, when records are dropped: uuid -> line and uuid -> parent.
    line_of: dict[str, int] = field(default_factory=dict)
    parent: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        options = self.options
        self._drops = options.drop_progress or options.drop_sidechains or options.drop_thinking
        self._tracker = self.dialect.new_tracker()
        self._folder = ""  # Dialect.working_folder, for relative paths

    def add(self, line: int, record: dict) -> None:
        dialect, options = self.dialect, self.options
        conversation = self._tracker.key(record)
        if options.dedupe_reads:
            self._folder = dialect.working_folder(record) or self._folder
            for access in dialect.file_accesses(record):
                if self._folder and not posixpath.isabs(access.path):
                    access = replace(
                        access, path=posixpath.normpath(posixpath.join(self._folder, access.path))
                    )
                self.accesses.setdefault(access.tool_use_id, []).append(access)
            self.failed.update(dialect.failed_calls(record))
        if options.keep_images is not None:
            count = len(dialect.images(record))
            if count:
                self.images.setdefault(conversation, []).append((line, count))
        if options.drop_progress and dialect.is_progress(record):
            self.dropped.add(line)
        if options.drop_sidechains:
            self._add_sub_agent(line, record, conversation)
        if options.drop_thinking:
            self._add_turn(line, record, conversation)
        if self._drops:
            uuid, parent = dialect.link(record)
            if uuid is not None:
                self.line_of.setdefault(uuid, line)
                self.parent.setdefault(uuid, parent)

    def _add_sub_agent(self, line: int, record: dict, conversation: str) -> None:
        dialect = self.dialect
        if dialect.is_side(record):
            self.side_lines.setdefault(conversation, []).append(line)
            prompt = dialect.sub_agent_prompt(record)
            if prompt is not None:
                self.side_prompt.setdefault(conversation, prompt)
            return
        for use_id, prompt in dialect.sub_agent_calls(record):
            self.calls[use_id] = prompt
        if self.calls:
            for result in dialect.tool_results(record):
                prompt = self.calls.pop(result.tool_use_id or "", None)
                if prompt is not None:
                    self.returned.add(prompt)

    def _add_turn(self, line: int, record: dict, conversation: str) -> None:
        dialect = self.dialect
        message = dialect.normalize(record)
        role = message.get("role") if message else None
        if role not in ("user", "assistant") or dialect.is_synthetic(record):
            return
        uses = bool(next(iter(dialect.tool_uses(record)), None)) if role == "assistant" else False
        thinking = dialect.thinking(record) if role == "assistant" else None
        turn = _Turn(line, _USER if role == "user" else _ASSISTANT, uses, dialect.call_id(record), thinking)
        self.turns.setdefault(conversation, []).append(turn)

    def follow(self, lines: list[int]) -> None:
        """Conversations in the order the model saw them (MicroIndex.follow); other lines are left alone."""
        position = {line: index for index, line in enumerate(lines)}
        for key, found in self.images.items():
            self.images[key] = sorted((e for e in found if e[0] in position), key=lambda e: position[e[0]])
        for key, turns in self.turns.items():
            kept = [turn for turn in turns if turn.line in position]
            self.turns[key] = sorted(kept, key=lambda turn: position[turn.line])

    # -- deciding ---------------------------------------------------------------------------------

    def superseded(self, index: MicroIndex) -> frozenset[tuple[int, int]]:
        """(line, slot) of each read result a later read or write of the same file makes stale."""
        if not self.options.dedupe_reads:
            return frozenset()
        stale: set[tuple[int, int]] = set()
        for facts in index.results.values():
            reads_after: set[tuple[str, str, str]] = set()  # (tool, path, part)
            writes_after: set[str] = set()
            for fact in reversed(facts):
                accesses = self.accesses.get(fact.tool_use_id or "", ())
                for access in accesses:
                    if access.writes:
                        continue
                    newer = (access.tool, access.path, access.part) in reads_after
                    newer = newer or (access.tool, access.path, "") in reads_after
                    if newer or access.path in writes_after:
                        stale.add((fact.line, fact.slot))
                if (fact.tool_use_id or "") in self.failed:
                    continue  # a failed edit changed nothing and a failed read copied nothing
                for access in accesses:
                    if access.writes:
                        writes_after.add(access.path)
                    else:
                        reads_after.add((access.tool, access.path, access.part))
        return frozenset(stale)

    def changes(self) -> dict[int, list[Change]]:
        out: dict[int, list[Change]] = {}
        for line, which in self._image_changes():
            out.setdefault(line, []).append((IMAGE_SLOT, which))
        dropped = set(self.dropped)
        if self.options.drop_sidechains:
            for key, prompt in self.side_prompt.items():
                if prompt in self.returned:
                    dropped.update(self.side_lines[key])
        for line, whole in self._thinking_changes():
            if whole:
                dropped.add(line)
            else:
                out.setdefault(line, []).append((THINKING_SLOT, None))
        for line in dropped:
            out[line] = [(DROP_SLOT, None)]
        for line, parent in self._relinks(dropped):
            out.setdefault(line, []).append((PARENT_SLOT, parent))
        return out

    def _image_changes(self) -> list[tuple[int, frozenset[int]]]:
        """Per conversation, all but the last --keep-images images (the last ones of a record stay)."""
        found = []
        for entries in self.images.values():
            room = self.options.keep_images or 0
            for line, count in reversed(entries):
                kept = min(room, count)
                room -= kept
                if kept < count:
                    found.append((line, frozenset(range(count - kept))))
        return found

    def _thinking_changes(self) -> list[tuple[int, bool]]:
        """Thinking before the current turn: (line, whole record). The Messages API needs the thinking
        of the current turn unchanged (a tool-use loop is one turn); a turn ends with a response that
        calls no tool, and the next starts with the user message after it."""
        found = []
        for turns in self.turns.values():
            start = 0
            call: object = None
            calls_tools = True  # the response being read called a tool
            after_response = False  # the turn before is the model's
            for position, turn in enumerate(turns):
                if turn.role == _USER:
                    if after_response and not calls_tools:
                        start = position
                    after_response = False
                    if not self.dialect.results_inside_responses:
                        call = None  # the next record the model writes starts another response
                    continue
                if turn.call is None or turn.call != call:
                    call, calls_tools = turn.call, turn.uses_tools
                else:
                    calls_tools = calls_tools or turn.uses_tools
                after_response = True
            found.extend((turn.line, turn.thinking == WHOLE) for turn in turns[:start] if turn.thinking)
        return found

    def _relinks(self, dropped: set[int]) -> list[tuple[int, str | None]]:
        """Records whose parent is dropped, with the nearest ancestor that is kept."""
        if not dropped:
            return []
        gone = {uuid for uuid, line in self.line_of.items() if line in dropped}
        found = []
        for uuid, parent in self.parent.items():
            if parent not in gone or uuid in gone:
                continue
            seen: set[str] = set()
            while parent in gone and parent not in seen:
                seen.add(parent)
                parent = self.parent.get(parent)
            found.append((self.line_of[uuid], parent if parent not in gone else None))
        return found


def plan_records(dialect: Dialect, records: list[dict], options: MicroOptions) -> Plan:
    """`plan` over records held in memory (replay's context), by position."""
    index = MicroIndex(dialect, placeholder=options.placeholder, truncate=options.truncate)
    strategies = StrategyIndex(dialect, options) if options.strategies else None
    for position, record in enumerate(records):
        if strategies is not None:
            strategies.add(position, record)
        index.add(position, record)
    return plan(index, options, strategies)
