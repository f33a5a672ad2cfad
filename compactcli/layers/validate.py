"""Is a transcript still a conversation the Messages API accepts? (docs/design.md, "Layers")

Checked, per conversation (Claude Code: the main one from its last compaction on, and each sub-agent
conversation on its own; other records such as system, progress or summary lines are skipped):

- Consecutive messages of one role form one turn, as the API combines them (user, user is one turn;
  so is one Claude Code response split over several assistant records).
- Anthropic and Claude Code: roles are user and assistant. A tool_result answers a tool_use of the
  assistant turn right before it; every tool_use is answered in the next user turn, once, by id.
  Tool uses of the last assistant turn may stay unanswered: the next call supplies their results.
- Anthropic: inside one user message, tool_result blocks come before any other block (the API refuses
  text first). Claude Code is not held to this: it moves results to the front itself when it sends them.
- OpenAI: tool messages follow directly (several in a row for parallel calls) the assistant message
  whose tool_calls carry their tool_call_id; every call is answered before the next non-tool message.
  system and developer messages are allowed anywhere else, as chat completions accepts them; the
  legacy `function` role is accepted without pairing checks.

Not violations, on purpose:
- A conversation that starts with an assistant turn (a compaction summary often does). The Messages API
  reference puts no rule on the first message and the first-party API accepts an assistant first; only
  some platforms (Amazon Bedrock) still answer `first message must use the "user" role`.
- Claude Code API-error notices (`isApiErrorMessage`, model `<synthetic>`): they are assistant text with
  no tool use, so they merge into the turn around them without breaking any pairing.

Memory: per conversation, the tool ids of the open turn and the one before it (and the violations).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from compactcli.dialects import BOUNDARY, Dialect

USER, ASSISTANT = "user", "assistant"
OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})

# Rule names, as printed; each with what it means.
RULES = {
    "not-a-message": "a line of an anthropic or openai file that is not a message (no role)",
    "invalid-role": "a message role the dialect does not have",
    "orphan-tool-result": "a tool result that answers no tool use of the assistant turn right before it",
    "missing-tool-result": "a tool use that the next user turn does not answer",
    "duplicate-tool-result": "a tool use answered more than once",
    "duplicate-tool-use": "two tool uses with one id in one assistant turn",
    "tool-result-without-id": "a tool result that names no tool use",
    "tool-use-without-id": "a tool use without an id",
    "misplaced-tool-block": "a tool_use in a user message or a tool_result in an assistant message",
    "tool-result-not-first": "a user message with other content before its tool_result blocks",
}


@dataclass(frozen=True)
class Violation:
    line: int  # 1-based line of the offending record
    rule: str  # a key of RULES
    message: str


@dataclass
class _Turns:
    """Anthropic-shaped turns of one conversation: the open turn and the tool uses it must answer."""

    out: list[Violation]
    check_order: bool  # tool_result blocks first inside one user message
    role: str | None = None
    # Assistant turn open: its tool uses (id -> line). User turn open: those of the turn before it.
    uses: dict[str, int] = field(default_factory=dict)
    uses_line: int = 0  # first line of the assistant turn that made `uses`
    answered: set[str] = field(default_factory=set)
    interrupted: bool = False  # the agent answers the tool uses left open itself (Dialect.aborts_turn)

    def add(self, line: int, message: dict) -> None:
        """One Anthropic-shaped message {"role", "content"}."""
        role, content = message.get("role"), message.get("content")
        if role not in (USER, ASSISTANT):
            self.out.append(
                Violation(line, "invalid-role", f"role {role!r}: only user and assistant are allowed")
            )
            return
        if role != self.role:
            self._begin(line, role)
        blocks = content if isinstance(content, list) else []
        if role == ASSISTANT:
            self._assistant(line, blocks)
        else:
            self._user(line, blocks)

    def aborted(self) -> None:
        """The turn was interrupted: the tool uses still open are answered by the agent, not the file."""
        self.interrupted = True

    def _begin(self, line: int, role: str) -> None:
        if role == ASSISTANT:
            self._report_unanswered()
            self.uses = {}
            self.uses_line = line
            self.interrupted = False
        self.answered = set()
        self.role = role

    def _report_unanswered(self) -> None:
        """Called when the user turn after an assistant turn is over."""
        if self.role != USER or self.interrupted:
            return
        for use_id, use_line in self.uses.items():
            self.out.append(
                Violation(
                    use_line,
                    "missing-tool-result",
                    f"tool_use {use_id} is not answered in the next user turn",
                )
            )
        self.uses = {}

    def _assistant(self, line: int, blocks: list) -> None:
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use":
                use_id = block.get("id")
                if not isinstance(use_id, str) or not use_id:
                    self.out.append(Violation(line, "tool-use-without-id", "tool_use has no id"))
                elif use_id in self.uses:
                    self.out.append(
                        Violation(
                            line,
                            "duplicate-tool-use",
                            f"tool_use id {use_id} already used on line {self.uses[use_id]}",
                        )
                    )
                else:
                    self.uses[use_id] = line
            elif kind == "tool_result":
                self.out.append(
                    Violation(line, "misplaced-tool-block", "tool_result in an assistant message")
                )

    def _user(self, line: int, blocks: list) -> None:
        other_before = False
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_result":
                if other_before and self.check_order:
                    self.out.append(
                        Violation(
                            line,
                            "tool-result-not-first",
                            "tool_result after other content in the same user message",
                        )
                    )
                    other_before = False  # once per message
                self._result(line, block.get("tool_use_id"))
            else:
                other_before = True
                if kind == "tool_use":
                    self.out.append(Violation(line, "misplaced-tool-block", "tool_use in a user message"))

    def _result(self, line: int, use_id: object) -> None:
        if not isinstance(use_id, str) or not use_id:
            self.out.append(Violation(line, "tool-result-without-id", "tool_result has no tool_use_id"))
        elif use_id in self.answered:
            self.out.append(
                Violation(line, "duplicate-tool-result", f"tool_use {use_id} is already answered")
            )
        elif use_id in self.uses:
            del self.uses[use_id]
            self.answered.add(use_id)
        else:
            where = f"line {self.uses_line}" if self.uses_line else "none: no assistant turn yet"
            self.out.append(
                Violation(
                    line,
                    "orphan-tool-result",
                    f"tool_result for {use_id} answers no tool_use of the assistant turn before it ({where})",
                )
            )


@dataclass
class _ToolCalls:
    """OpenAI chat: tool messages right after the assistant message whose tool_calls they answer."""

    out: list[Violation]
    calls: dict[str, int] = field(default_factory=dict)  # open tool calls: id -> line
    calls_line: int = 0
    in_block: bool = False  # the last message was an assistant with tool_calls, or a tool message
    answered: set[str] = field(default_factory=set)

    def add(self, line: int, record: dict) -> None:
        """One chat-completions message as it is in the file."""
        role = record.get("role")
        if role not in OPENAI_ROLES:
            allowed = ", ".join(sorted(OPENAI_ROLES))
            self.out.append(Violation(line, "invalid-role", f"role {role!r}: allowed are {allowed}"))
            return
        if role == "tool":
            self._result(line, record.get("tool_call_id"))
            return
        self._close(line)
        if role == "assistant":
            self._assistant(line, record.get("tool_calls"))

    def _close(self, line: int) -> None:
        for call_id, call_line in self.calls.items():
            self.out.append(
                Violation(
                    call_line,
                    "missing-tool-result",
                    f"tool call {call_id} has no tool message before line {line}",
                )
            )
        self.calls = {}
        self.answered = set()
        self.in_block = False

    def _assistant(self, line: int, tool_calls: object) -> None:
        if not isinstance(tool_calls, list) or not tool_calls:
            return
        self.calls_line = line
        self.in_block = True
        for call in tool_calls:
            call_id = call.get("id") if isinstance(call, dict) else None
            if not isinstance(call_id, str) or not call_id:
                self.out.append(Violation(line, "tool-use-without-id", "tool call has no id"))
            elif call_id in self.calls:
                self.out.append(
                    Violation(line, "duplicate-tool-use", f"tool call id {call_id} appears twice")
                )
            else:
                self.calls[call_id] = line

    def _result(self, line: int, call_id: object) -> None:
        if not isinstance(call_id, str) or not call_id:
            self.out.append(Violation(line, "tool-result-without-id", "tool message has no tool_call_id"))
        elif not self.in_block:
            self.out.append(
                Violation(
                    line,
                    "orphan-tool-result",
                    f"tool message for {call_id} does not follow an assistant message with "
                    "tool_calls (or its other tool messages)",
                )
            )
        elif call_id in self.answered:
            self.out.append(
                Violation(line, "duplicate-tool-result", f"tool call {call_id} is already answered")
            )
        elif call_id in self.calls:
            del self.calls[call_id]
            self.answered.add(call_id)
        else:
            self.out.append(
                Violation(
                    line,
                    "orphan-tool-result",
                    f"tool message for {call_id} answers no tool call of the assistant message "
                    f"on line {self.calls_line}",
                )
            )


RESPONSES_ROLES = frozenset({USER, ASSISTANT, "system"})  # as normalized: developer is system


@dataclass
class _CallOutputs:
    """Responses API items (Codex): every call is answered, once, by an output with its call_id, after it.
    Fed normalized messages: a call is an assistant tool_use, an output a user tool_result.

    The calls still open when the next user message comes are missing their output, except the calls in
    flight when the turn was interrupted (`turn_aborted` right after the calls of the last response): Codex
    answers those itself ("aborted") before the next call. The last turn's calls may stay open, as elsewhere.
    """

    out: list[Violation]
    # Dialect.results_repeat: the agent sends a call's output again (Gemini CLI 0.61 resumes a call's
    # response twice, from the call's record and its own); the API pairs them by id.
    repeats: bool = False
    calls: dict[str, int] = field(default_factory=dict)  # open calls: call_id -> line
    answered: set[str] = field(default_factory=set)
    in_flight: set[str] = field(default_factory=set)  # the calls since the last other item

    def add(self, line: int, message: dict) -> None:
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if not uses:
            self.in_flight = set()
        role = message.get("role")
        if role not in RESPONSES_ROLES:
            allowed = ", ".join(sorted(RESPONSES_ROLES))
            self.out.append(Violation(line, "invalid-role", f"role {role!r}: allowed are {allowed}"))
        elif uses or results:
            # A record may hold the calls and their outputs at once (Gemini CLI): calls first.
            for use in uses:
                self._call(line, use.get("id"))
                if isinstance(use.get("id"), str):
                    self.in_flight.add(use["id"])
            for result in results:
                self._output(line, result.get("tool_use_id"))
        elif role == USER:
            self._close(line)

    def other(self) -> None:
        """An item that is no message, call or output: the calls before it are no longer in flight."""
        self.in_flight = set()

    def aborted(self, line: int) -> None:
        for call_id in self.in_flight & self.calls.keys():
            del self.calls[call_id]
            self.answered.add(call_id)
        self._close(line)

    def _close(self, line: int) -> None:
        for call_id, call_line in self.calls.items():
            self.out.append(
                Violation(
                    call_line, "missing-tool-result", f"call {call_id} has no output before line {line}"
                )
            )
        self.answered.update(self.calls)
        self.calls = {}

    def _call(self, line: int, call_id: object) -> None:
        if not isinstance(call_id, str) or not call_id:
            self.out.append(Violation(line, "tool-use-without-id", "call has no call_id"))
        elif call_id in self.calls or call_id in self.answered:
            self.out.append(Violation(line, "duplicate-tool-use", f"call_id {call_id} is used twice"))
        else:
            self.calls[call_id] = line

    def _output(self, line: int, call_id: object) -> None:
        if not isinstance(call_id, str) or not call_id:
            self.out.append(Violation(line, "tool-result-without-id", "output has no call_id"))
        elif call_id in self.calls:
            del self.calls[call_id]
            self.answered.add(call_id)
        elif call_id in self.answered:
            if not self.repeats:
                self.out.append(
                    Violation(line, "duplicate-tool-result", f"call {call_id} is already answered")
                )
        else:
            self.out.append(
                Violation(line, "orphan-tool-result", f"output for {call_id} answers no earlier call")
            )


class Validator:
    """Feed records in file order with `add`; `finish` returns the violations, sorted by line."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._api = dialect.api
        self._tracker = dialect.new_tracker()
        # Per conversation: its checker and what it found (dropped when a compaction starts it anew).
        self._checkers: dict[str, _Turns | _ToolCalls | _CallOutputs] = {}
        self._found: dict[str, list[Violation]] = {}
        self.messages = 0  # messages checked
        self.conversations: set[str] = set()

    def _checker(self, key: str) -> _Turns | _ToolCalls | _CallOutputs:
        checker = self._checkers.get(key)
        if checker is None:
            out = self._found.setdefault(key, [])
            if self._api == "responses":
                checker = _CallOutputs(out, repeats=self.dialect.results_repeat)
            elif self._api == "chat-completions":
                checker = _ToolCalls(out)
            else:
                checker = _Turns(out, check_order=self.dialect.results_first)
            self._checkers[key] = checker
        return checker

    def _restart(self, key: str) -> None:
        """The active context starts here: what came before is no longer sent."""
        self._checkers.pop(key, None)
        self._found.pop(key, None)

    def add(self, line: int, record: dict) -> None:
        key = self._tracker.key(record)
        dialect = self.dialect
        compaction = dialect.compaction(record)
        if compaction is not None:
            self._restart(key)  # a summary record without a boundary before it starts anew too
            if compaction == BOUNDARY:
                for entry in dialect.restarted_with(record):  # what the new context starts with
                    self._check(key, line, entry)
                return
        if dialect.aborts_turn(record):
            checker = self._checker(key)
            if isinstance(checker, _CallOutputs):
                checker.aborted(line)
            elif isinstance(checker, _Turns):
                checker.aborted()
            return
        if dialect.one_message_per_line and dialect.message(record) is None:
            # One message per line in these dialects: anything else would be sent as garbage.
            self._found.setdefault(key, []).append(Violation(line, "not-a-message", "record has no role"))
            return
        self._check(key, line, record)

    def _check(self, key: str, line: int, record: dict) -> None:
        if self._api == "chat-completions":  # checked on the records: tool messages keep their role
            self._count(key)
            self._checker(key).add(line, record)
            return
        message = self.dialect.normalize(record)
        if message is not None:
            self._count(key)
            self._checker(key).add(line, message)
        elif self._api == "responses" and self.dialect.message(record) is not None:
            checker = self._checker(key)
            if isinstance(checker, _CallOutputs):
                checker.other()

    def _count(self, key: str) -> None:
        self.messages += 1
        self.conversations.add(key)

    def finish(self) -> list[Violation]:
        # Tool uses of each conversation's last assistant turn may stay open: the next call answers them.
        found = [v for violations in self._found.values() for v in violations]
        return sorted(found, key=lambda v: v.line)


def validate_records(dialect: Dialect, records: Iterable[tuple[int, dict]]) -> list[Violation]:
    """Violations of the Messages API rules in (line number, record) pairs, sorted by line."""
    validator = Validator(dialect)
    for line, record in records:
        validator.add(line, record)
    return validator.finish()
