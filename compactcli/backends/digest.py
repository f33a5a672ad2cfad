"""An offline, deterministic digest of a conversation: no model, no network.

What it keeps (each section bounded, the whole a few KB):
  the original task (the first user text; carried over from an earlier digest when the conversation
  starts with one), later user instructions and corrections, the files read / written / edited
  (from tool inputs), the last commands run, errors met (error results, tracebacks, non-zero exit
  codes, failed tests), the last assistant text, and with a focus, passages that mention it.
The messages are read once, in order, with bounded memory. The output is redacted (it ends up in a
file that may be shared) unless redaction is off.
"""

from __future__ import annotations

import json
import re
import sys
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from compactcli.core import redact as redaction
from compactcli.layers.summarize import (
    CLAUDE_CODE_SUMMARY_PREFIX,
    NOT_USER_WORDS,
    SNAPSHOT_SUMMARY_PREFIX,
    SUMMARY_PREFIX,
    clip,
    could_be_task,
    is_user_words,
    message_text,
)

# Characters per section; lists keep their most recent items.
TASK_CHARS = 1_500
INSTRUCTIONS_CHARS = 1_500
FILES_CHARS = 400  # per kind: read, written, edited, other
COMMANDS_CHARS = 1_000
ERRORS_CHARS = 1_000
LAST_TEXT_CHARS = 1_200
FOCUS_CHARS = 800
MAX_CHARS = 10_000  # a guard: the sections above stay under it
INSTRUCTION_CHARS = 300
KEEP_INSTRUCTIONS = 8
KEEP_COMMANDS = 10
KEEP_ERRORS = 8
KEEP_FOCUS = 6

PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "filepath", "file", "target_file")
COMMAND_KEYS = ("command", "cmd")
READ_TOOLS = {"read", "read_file", "readfile", "view", "view_file", "open_file", "cat", "notebookread"}
WRITE_TOOLS = {"write", "write_file", "writefile", "create", "create_file"}
EDIT_TOOLS = {"edit", "multiedit", "edit_file", "str_replace", "notebookedit", "apply_patch", "patch"}
EDITOR_TOOLS = {"str_replace_based_edit_tool", "str_replace_editor"}  # `command` says what it did
EDITOR_KINDS = {"view": "read", "create": "written", "str_replace": "edited", "insert": "edited"}
FILE_KINDS = ("read", "written", "edited", "other")

_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_TRACEBACK = "Traceback (most recent call last):"
# "Exit code 1" / "exit status 2" on a line of their own (shells, Claude Code's Bash tool, Go), or
# within the sentences that tools print; not "exits with status 2" in prose.
_EXIT = re.compile(
    r"(?im)^\s*(?:exit code|exit status)[:= ]*[1-9][0-9]*\s*$"
    r"|(?:exited with (?:code|status)|returned non-zero exit status)[:= ]+[1-9][0-9]*"
)
_FAILED_LINE = re.compile(r"^(?:FAILED|ERROR)[: ].+$|^error(?:\[\w+\])?: .+$", re.MULTILINE)


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(text: str, limit: int, counts: Counter[str] | None = None) -> str:
    """`text` clipped and quoted. With `counts`, redacted first: a secret cut in two by the clip (a
    private key without its END line) no longer looks like one."""
    if counts is not None:
        text, found = redaction.redact(text)
        counts.update(found)
    return "\n".join("> " + line for line in clip(text.strip(), limit).splitlines())


def _earlier_task(text: str) -> str | None:
    """The task section of an earlier digest that this conversation starts with."""
    match = re.search(r"^## Task\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if not match:
        return None
    return "\n".join(
        line.removeprefix("> ").removeprefix(">") for line in match.group(1).strip().splitlines()
    )


_EMPTY = -1  # a free slot of _ToolNames: no str hashes to -1 (CPython keeps it for errors)


class _ToolNames:
    """Tool use id -> the tool's name, for the results that come later: the ids' 64-bit `hash()` in an
    open-addressed table of machine integers, the names as indexes into the few distinct ones. A dict of
    id strings held about 160 bytes per call (an id, a name and an entry), this about 30, for every call
    of the conversation (docs/design.md, "Memory per record"). Two ids share a hash with a chance of about
    n²/2⁶⁵ for n calls; the result of one is then named after the other's tool."""

    __slots__ = ("_keys", "_names", "_values", "_index", "_count")

    def __init__(self) -> None:
        self._keys = array("q", [_EMPTY]) * 64
        self._values = array("I", bytes(4 * 64))
        self._names: list[str] = []  # distinct names, by index
        self._index: dict[str, int] = {}
        self._count = 0

    def _slot(self, code: int) -> int:
        keys, mask = self._keys, len(self._keys) - 1
        slot = code & mask
        while keys[slot] != code and keys[slot] != _EMPTY:
            slot = (slot + 1) & mask
        return slot

    def __setitem__(self, tool_id: str, name: str) -> None:
        value = self._index.get(name)
        if value is None:
            value = self._index[name] = len(self._names)
            self._names.append(sys.intern(name))
        code = hash(tool_id)
        slot = self._slot(code)
        if self._keys[slot] == _EMPTY:
            if 3 * (self._count + 1) > 2 * len(self._keys):  # at most two thirds full
                self._grow()
                slot = self._slot(code)
            self._count += 1
            self._keys[slot] = code
        self._values[slot] = value

    def get(self, tool_id: str, default: str) -> str:
        slot = self._slot(hash(tool_id))
        return default if self._keys[slot] == _EMPTY else self._names[self._values[slot]]

    def _grow(self) -> None:
        keys, values = self._keys, self._values
        self._keys = array("q", [_EMPTY]) * (2 * len(keys))
        self._values = array("I", bytes(8 * len(keys)))
        for code, value in zip(keys, values, strict=True):
            if code != _EMPTY:
                slot = self._slot(code)
                self._keys[slot] = code
                self._values[slot] = value


@dataclass
class _Facts:
    messages: int = 0
    task: str | None = None
    task_label: str = "Task"
    instructions: deque = field(default_factory=lambda: deque(maxlen=KEEP_INSTRUCTIONS))
    files: dict[str, dict[str, None]] = field(default_factory=lambda: {k: {} for k in FILE_KINDS})
    commands: deque = field(default_factory=lambda: deque(maxlen=KEEP_COMMANDS))
    errors: deque = field(default_factory=lambda: deque(maxlen=KEEP_ERRORS))
    last_text: str | None = None
    focus: deque = field(default_factory=lambda: deque(maxlen=KEEP_FOCUS))
    tool_names: _ToolNames = field(default_factory=_ToolNames)


class Digest:
    """Feed normalized messages with `add`; `text()` is the digest."""

    def __init__(self, focus: str | None = None, *, redact: bool = False) -> None:
        self.facts = _Facts()
        self.redact = redact
        self.found: Counter[str] = Counter()  # what the one-line facts had redacted
        self.focus = focus.strip() if focus and focus.strip() else None
        self._focus_re = re.compile(re.escape(self.focus), re.IGNORECASE) if self.focus else None

    def add(self, message: dict) -> None:
        facts = self.facts
        facts.messages += 1
        role = message.get("role")
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        text = _SYSTEM_REMINDER.sub("", message_text(message)).strip()
        if is_user_words(message) and text:
            self._user_text(text)
        elif role == "assistant" and text:
            facts.last_text = text
        if text:
            self._look_for_focus(text, facts.messages)
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                self._tool_use(block)
            elif block.get("type") == "tool_result":
                self._tool_result(block)

    def _user_text(self, text: str) -> None:
        facts = self.facts
        if facts.task is None:
            if not could_be_task(text):
                return  # a note Claude Code adds, or `/clear`: the task comes after it
            earlier = _earlier_task(text) if text.startswith(SUMMARY_PREFIX) else None
            facts.task = earlier or text
            if earlier is None and text.startswith(
                (SUMMARY_PREFIX, CLAUDE_CODE_SUMMARY_PREFIX, SNAPSHOT_SUMMARY_PREFIX)
            ):
                facts.task_label = "Earlier summary (the conversation starts with it)"
            return
        if not text.startswith(NOT_USER_WORDS):
            facts.instructions.append((facts.messages, self._line(text, INSTRUCTION_CHARS)))

    def _tool_use(self, block: dict) -> None:
        facts = self.facts
        name = str(block.get("name") or "unknown")
        if isinstance(block.get("id"), str):
            facts.tool_names[block["id"]] = name
        args = block.get("input")
        if not isinstance(args, dict):
            return
        lowered = name.lower()
        kind = _file_kind(lowered, args)
        for path in _paths(args):
            bucket = facts.files[kind]
            bucket.pop(path, None)
            bucket[path] = None  # most recent last
        if lowered not in EDITOR_TOOLS:
            for key in COMMAND_KEYS:
                command = args.get(key)
                if isinstance(command, list):
                    command = " ".join(str(part) for part in command)
                if isinstance(command, str) and command.strip():
                    facts.commands.append(self._line(command, 200))
                    break

    def _tool_result(self, block: dict) -> None:
        facts = self.facts
        text = _result_text(block.get("content"))
        use_id = block.get("tool_use_id")
        name = facts.tool_names.get(use_id, "unknown") if isinstance(use_id, str) else "unknown"
        error = _error_in(text, bool(block.get("is_error")), self._line)
        if error and all(error != seen for _, seen in facts.errors):
            facts.errors.append((name, error))
        if text:
            self._look_for_focus(text, facts.messages)

    def _look_for_focus(self, text: str, number: int) -> None:
        if self._focus_re is None:
            return
        match = self._focus_re.search(text)
        if match:
            start, end = max(0, match.start() - 150), match.end() + 150
            self.facts.focus.append((number, self._line(text[start:end], 320)))

    def _line(self, text: str, limit: int) -> str:
        """`text` on one line, redacted first when the digest is: a rule that reads where a line ends
        (`password: word`) no longer sees it once the lines are joined."""
        if self.redact:
            text, found = redaction.redact(text)
            self.found.update(found)
        return _one_line(text, limit)

    def text(self, counts: Counter[str] | None = None) -> str:
        """The digest. With `counts`, the quoted texts are redacted before they are clipped, and
        what was replaced is counted there (the caller redacts the rest)."""
        facts = self.facts
        if counts is not None:
            counts.update(self.found)
        out = [f"Offline digest of {facts.messages} messages (written without a model)."]
        if facts.task:
            out.append(f"## {facts.task_label}\n" + _quote(facts.task, TASK_CHARS, counts))
        if facts.instructions:
            lines = [f"- [message {n}] {text}" for n, text in facts.instructions]
            out.append("## Later user messages\n" + _latest(lines, INSTRUCTIONS_CHARS))
        files = [
            f"- {kind}: " + _file_list(list(facts.files[kind])) for kind in FILE_KINDS if facts.files[kind]
        ]
        if files:
            out.append("## Files\n" + "\n".join(files))
        if facts.commands:
            lines = [f"- `{c}`" for c in facts.commands]
            out.append("## Last commands run\n" + _latest(lines, COMMANDS_CHARS))
        if facts.errors:
            lines = [f"- {name}: {error}" for name, error in facts.errors]
            out.append("## Errors met\n" + _latest(lines, ERRORS_CHARS))
        if facts.last_text:
            out.append("## Last assistant message\n" + _quote(facts.last_text, LAST_TEXT_CHARS, counts))
        if self.focus and facts.focus:
            lines = [f"- [message {n}] {text}" for n, text in facts.focus]
            out.append(f"## About {_one_line(self.focus, 80)}\n" + _latest(lines, FOCUS_CHARS))
        return clip("\n\n".join(out), MAX_CHARS)


def _file_kind(tool: str, args: dict) -> str:
    if tool in EDITOR_TOOLS:
        return EDITOR_KINDS.get(str(args.get("command")), "other")
    if tool in READ_TOOLS:
        return "read"
    if tool in WRITE_TOOLS:
        return "written"
    if tool in EDIT_TOOLS:
        return "edited"
    return "other"


def _paths(args: dict) -> list[str]:
    found = []
    for key in (*PATH_KEYS, "paths"):
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and item.strip() and "\n" not in item and len(item) < 500:
                found.append(item.strip())
    return found


def _latest(lines: list[str], budget: int) -> str:
    """The most recent lines that fit in `budget` characters, saying how many earlier ones do not."""
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if kept and size + len(line) + 1 > budget:
            break
        kept.append(line[:budget])
        size += len(line) + 1
    more = len(lines) - len(kept)
    return "\n".join(([f"- ({more} earlier not shown)"] if more else []) + kept[::-1])


def _file_list(paths: list[str]) -> str:
    """The most recently touched paths that fit in FILES_CHARS."""
    shown: list[str] = []
    size = 0
    for path in reversed(paths):
        if shown and size + len(path) + 2 > FILES_CHARS:
            break
        shown.append(path)
        size += len(path) + 2
    more = len(paths) - len(shown)
    return (f"{more} more, then " if more else "") + ", ".join(shown[::-1])


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _error_in(text: str, is_error: bool, one_line: Callable[[str, int], str] = _one_line) -> str | None:
    """One line that says what went wrong in a tool result, or None (`one_line` makes each line one)."""
    if _TRACEBACK in text:
        tail = text[text.rindex(_TRACEBACK) :].strip().splitlines()
        # The exception line: the last one that does not start with whitespace.
        for line in reversed(tail[1:]):
            if line.strip() and not line.startswith((" ", "\t")):
                return one_line(line, 240)
    failed = _FAILED_LINE.search(text)
    if failed:
        return one_line(failed.group(0), 240)
    exit_code = _EXIT.search(text)
    if exit_code or is_error:
        # The first two lines: "Exit code 1" alone says little, the line after it says what failed.
        head = " / ".join([one_line(line, 240) for line in text.splitlines() if line.strip()][:2])
        if exit_code and exit_code.group(0).strip() not in head:
            head = f"{exit_code.group(0).strip()}: {head}"
        return _one_line(head, 240) or "(error, no output)"
    return None


def digest(messages: Iterable[dict], *, focus: str | None = None) -> str:
    """The digest of normalized messages (not redacted)."""
    builder = Digest(focus)
    for message in messages:
        builder.add(message)
    return builder.text()


@dataclass
class DigestSummarizer:
    """The `digest` backend: `summarize` is :func:`digest`, redacted unless `redact` is off."""

    redact: bool = True
    name: str = "digest"
    redactions: Counter[str] = field(default_factory=Counter)

    def summarize(self, messages: Iterable[dict], *, focus: str | None = None) -> str:
        builder = Digest(focus, redact=self.redact)
        for message in messages:
            builder.add(message)
        if not self.redact:
            self.redactions = Counter()
            return builder.text()
        counts: Counter[str] = Counter()
        text, rest = redaction.redact(builder.text(counts))
        counts.update(rest)
        self.redactions = counts
        return text
