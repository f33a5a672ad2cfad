"""Layer 1: replace the content of old tool results with a short placeholder (docs/design.md, "Layers").

Pure logic in steps, so a file can be streamed twice instead of held: `MicroIndex.add` sees every record
once and remembers only small facts per tool result; `plan` decides which results to clear; `apply` clears
them in one record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from compactcli.dialects import Dialect

DEFAULT_PLACEHOLDER = "[Previous: used {tool_name}]"
DEFAULT_PRESERVE = frozenset({"read_file", "Read"})
# A result that may be a placeholder already in place is remembered verbatim (idempotence).
_REMEMBER_TEXT_UP_TO = 4096


@dataclass(frozen=True)
class MicroOptions:
    keep: int = 3
    min_chars: int = 100
    preserve: frozenset[str] = DEFAULT_PRESERVE
    placeholder: str = DEFAULT_PLACEHOLDER
    clear_multimodal: bool = False
    trigger_tokens: int = 0

    def render(self, tool_name: str) -> str:
        # str.replace, not format: a user's placeholder may contain other braces.
        return self.placeholder.replace("{tool_name}", tool_name)

    def placeholder_for(self, fact: ResultFact, tool_name: str) -> str | None:
        """What the result becomes if it is old enough to clear, or None when it is kept anyway."""
        if not fact.is_text and not self.clear_multimodal:
            return None
        if fact.chars <= self.min_chars or tool_name in self.preserve:
            return None
        placeholder = self.render(tool_name)
        return None if fact.text == placeholder else placeholder  # None: cleared by an earlier run


@dataclass(slots=True)
class ResultFact:
    line: int
    slot: int
    tool_use_id: str | None
    is_text: bool
    chars: int
    text: str | None  # the content when it is a short string


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


@dataclass
class MicroIndex:
    """What one pass over a transcript needs to remember to decide what micro clears."""

    dialect: Dialect
    tool_names: dict[str, str] = field(default_factory=dict)
    results: dict[str, list[ResultFact]] = field(default_factory=dict)
    # Lines of records that repeat a result for the UI (Codex exec_command_end), by tool use id.
    copies: dict[str, list[int]] = field(default_factory=dict)
    copy_count: int = 0

    placeholder: str = DEFAULT_PLACEHOLDER

    def __post_init__(self) -> None:
        self._tracker = self.dialect.new_tracker()
        # Head before the first {tool_name}, tail after the last: a placeholder may name the tool twice.
        self._head = self.placeholder.partition("{tool_name}")[0]
        self._tail = self.placeholder.rpartition("{tool_name}")[2]

    def _may_be_placeholder(self, text: str) -> bool:
        # Only texts that could be a placeholder are kept: memory must not follow the file's size.
        return len(text) <= _REMEMBER_TEXT_UP_TO and text.startswith(self._head) and text.endswith(self._tail)

    def add(self, line: int, record: dict) -> list[ResultFact]:
        """Remember the record's tool uses and results; returns the results' facts."""
        conversation = self._tracker.key(record)
        added: list[ResultFact] = []
        uses, results = self.dialect.scan(record)
        for use in uses:
            self.tool_names.setdefault(use.id, use.name)
        for use_id in self.dialect.result_copies(record):
            self.copies.setdefault(use_id, []).append(line)
            self.copy_count += 1
        for result in results:
            content = result.content
            is_text = isinstance(content, str)
            short = content if is_text and self._may_be_placeholder(content) else None
            fact = ResultFact(line, result.slot, result.tool_use_id, is_text, content_chars(content), short)
            self.results.setdefault(conversation, []).append(fact)
            added.append(fact)
        return added

    def follow(self, lines: list[int]) -> None:
        """Put each conversation's results in the order of `lines` (the dialect's conversation order,
        Dialect.new_order): "the last --keep" are the last the model saw. Results on other lines (an
        abandoned branch) are no part of a conversation and are never cleared."""
        position = {line: index for index, line in enumerate(lines)}
        for key, facts in self.results.items():
            kept = [fact for fact in facts if fact.line in position]
            self.results[key] = sorted(kept, key=lambda fact: position[fact.line])

    def tool_name(self, tool_use_id: str | None) -> str:
        return self.tool_names.get(tool_use_id or "", "unknown")

    @property
    def result_count(self) -> int:
        return sum(len(facts) for facts in self.results.values())


Plan = dict[int, list[tuple[int, str]]]  # line -> [(slot, new content)]
COPY_SLOT = -2  # marks the clearing of a UI copy (a record of its own that repeats one result)


def cleared(index: MicroIndex, options: MicroOptions) -> Iterable[tuple[ResultFact, str]]:
    """Each result micro clears, with its placeholder: all but the last `keep` of each conversation,
    less the exceptions."""
    for facts in index.results.values():
        if len(facts) <= options.keep:
            continue
        old = facts[: len(facts) - options.keep] if options.keep > 0 else facts
        for fact in old:
            placeholder = options.placeholder_for(fact, index.tool_name(fact.tool_use_id))
            if placeholder is not None:
                yield fact, placeholder


def plan(index: MicroIndex, options: MicroOptions) -> Plan:
    """Which results to clear, by line."""
    clears: Plan = {}
    for fact, placeholder in cleared(index, options):
        clears.setdefault(fact.line, []).append((fact.slot, placeholder))
        # The UI's copy of a cleared result would keep what was cleared.
        for line in index.copies.get(fact.tool_use_id or "", ()):
            clears.setdefault(line, []).append((COPY_SLOT, placeholder))
    return clears


def apply(dialect: Dialect, record: dict, clears: Iterable[tuple[int, str]]) -> None:
    for slot, placeholder in clears:
        dialect.set_result_content(record, slot, placeholder)
