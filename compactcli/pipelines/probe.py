"""Which facts of a replaced span survive its summary: a deterministic fidelity check.

docs/design.md, "probe". The facts are extracted from the part of ORIGINAL that SUMMARIZED replaced
(the records it no longer carries verbatim, when it holds a compaction; else the whole original) and
looked up anywhere in SUMMARIZED's text. Records are read only through the Dialect interface.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from compactcli.core.errors import BadInput
from compactcli.core.jsonio import json_strings
from compactcli.dialects import BOUNDARY, Dialect
from compactcli.layers.summarize import could_be_task, is_user_words, summarizer_view
from compactcli.pipelines.transcript import ConversationLines, dialect_for, read_lines

# The facts, each once: the overall retention (and --min-retention) is over these.
FACTS = ("paths", "commands", "errors", "urls", "identifiers", "numbers", "instructions")
# Views of a continuation's needs: files_changed are paths, unresolved_errors errors, last_state the
# assistant's last words; beside the overall figure, not in it (a fact is not counted twice).
CATEGORIES = (*FACTS, "files_changed", "unresolved_errors", "last_state")
# What an agent needs to carry on after the cut (docs/design.md, "probe: what a continuation needs"):
# the files it changed, the user's instructions, what still failed, where it stopped. The rest is the
# long tail of names and numbers, reported apart so that it does not drown these.
CONTINUATION = ("files_changed", "instructions", "unresolved_errors", "last_state")
LONG_TAIL = tuple(name for name in CATEGORIES if name not in CONTINUATION)
_WRITING_TOOL = re.compile(r"write|edit|patch|replace|create|notebook", re.I)
_PATH_KEYS = ("file_path", "path", "filename", "notebook_path")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)  # apply_patch's headers

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
_PATH = re.compile(
    r"(?<![\w:/.-])(?:~/|\.{1,2}/|/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b|(?<![\w/])/(?:[\w.-]+/)+[\w.-]+"
)
_IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\b"
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
# A line that says something failed, at its start: `ValueError: ...`, `error: ...`, `fatal: ...`, a
# test runner's FAILED line, a nonzero exit. Code that names an error (`class LedgerError(ValueError):`,
# `except OSError:`) is no failure; the traceback's header is the same in every traceback, so its last
# line (the exception) is the fact.
_FAILURE = re.compile(
    r"^(?:(?-i:[\w.]*(?:Error|Exception|Failure|Fault))(?:\[\w+\])?:\s"
    r"|(?:error|fatal|panic)(?:\[\w+\])?:\s(?![\w.|\[\] ]+(?:\s=\s|$))"  # not `error: str = ""`
    r"|(?-i:FAILED|FAIL|ERROR)\b|npm ERR!"
    r"|E\s{2,}\S)",
    re.I,
)
_CODE_LINE = re.compile(r"[,;{(\[]$")  # `error: data.error,` is a field in code, not a failure
# A command's nonzero exit as the agents word it: `Exit code 1` (Claude Code), `Process exited with code
# 1` (Codex), `<exited with exit code 1>` (Copilot CLI). The line itself says nothing of what failed.
_EXIT_LINE = re.compile(
    r"^<?(?:[\w :]*\b)?(?:exit code|exit status|exited with (?:exit )?code):? ?(-?\d+)>?$", re.I
)
_TAG = re.compile(r"</?[\w-]+>|\x1b\[[0-9;?]*[A-Za-z]")  # <tool_use_error>, terminal escapes
_FAILING_WORD = re.compile(
    r"error|fail|cannot|can't|not found|no such|denied|invalid|unable|refused|not permitted", re.I
)
_NUMBERED = re.compile(r"^\s*\d+(?:→|\t)")  # a line of a file as a read tool shows it (cat -n)
_SPACE = re.compile(r"\s+")
_MAX_FACT = 200  # an error line or instruction is compared on its first 200 characters
_COMMAND_KEYS = ("command", "cmd")


@dataclass
class Retention:
    """Facts of one category: how many, and which did not survive."""

    total: int = 0
    missing: list[str] = field(default_factory=list)

    @property
    def survived(self) -> int:
        return self.total - len(self.missing)

    @property
    def score(self) -> float:
        return self.survived / self.total if self.total else 1.0


@dataclass
class ProbeResult:
    dialect: str
    replaced_records: int
    categories: dict[str, Retention]

    @property
    def total(self) -> int:
        return sum(self.categories[name].total for name in FACTS)

    @property
    def survived(self) -> int:
        return sum(self.categories[name].survived for name in FACTS)

    @property
    def score(self) -> float:
        return self.survived / self.total if self.total else 1.0

    def group(self, names: tuple[str, ...]) -> dict:
        """survived, total and retention over the categories `names`."""
        total = sum(self.categories[n].total for n in names)
        survived = sum(self.categories[n].survived for n in names)
        return {
            "survived": survived,
            "total": total,
            "retention": round(survived / total if total else 1.0, 4),
        }

    def to_json(self) -> dict:
        return {
            "dialect": self.dialect,
            "replaced_records": self.replaced_records,
            "retention": round(self.score, 4),
            "survived": self.survived,
            "total": self.total,
            "continuation": self.group(CONTINUATION),
            "long_tail": self.group(LONG_TAIL),
            "categories": {
                name: {
                    "survived": r.survived,
                    "total": r.total,
                    "retention": round(r.score, 4),
                    "missing": r.missing,
                }
                for name, r in self.categories.items()
            },
        }


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@dataclass
class _Span:
    """Text of the replaced part, by what it is."""

    user_texts: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # everything said or returned
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # what failed, from the tool results
    changed_files: list[str] = field(default_factory=list)  # paths a writing tool was given
    last_state: str = ""  # the last thing the assistant said
    # what still failed at the end: by call (its command, or its tool and path), the failures of its
    # latest run; a later run of the same call that did not fail resolves them
    unresolved: dict[str, list[str]] = field(default_factory=dict)
    _calls: dict[str, str] = field(default_factory=dict)  # tool_use id -> its call

    def add(self, message: dict) -> None:
        content = message.get("content")
        # The user's instructions: what the user wrote (not an agent's note in their turn, a local
        # command's caveat or output), the same rule as the messages summarize keeps verbatim.
        users = is_user_words(message)
        if isinstance(content, str):
            self.texts.append(content)
            if users and could_be_task(content):
                self.user_texts.append(content)
            if message.get("role") == "assistant" and content.strip():
                self.last_state = content
            return
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                self.texts.append(block["text"])
                if users and could_be_task(block["text"]):
                    self.user_texts.append(block["text"])
                if message.get("role") == "assistant" and block["text"].strip():
                    self.last_state = block["text"]
            elif kind == "tool_use" and isinstance(block.get("input"), dict):
                self._note_call(block)
                for key in _COMMAND_KEYS:
                    command = block["input"].get(key)
                    if isinstance(command, list):
                        command = " ".join(map(str, command))
                    if isinstance(command, str) and command.strip():
                        self.commands.append(command)
                self.texts.extend(json_strings(block["input"]))
            elif kind == "tool_result":
                texts = list(json_strings(block.get("content")))
                self.texts.extend(texts)
                failed = failures(texts, block.get("is_error") is True)
                self.errors.extend(failed)
                call = self._calls.get(str(block.get("tool_use_id")))
                if call is not None:
                    if failed:
                        self.unresolved[call] = failed
                    else:
                        self.unresolved.pop(call, None)

    def _note_call(self, block: dict) -> None:
        name, given = str(block.get("name") or ""), block["input"]
        paths = [given[k] for k in _PATH_KEYS if isinstance(given.get(k), str) and given[k].strip()]
        if _WRITING_TOOL.search(name):
            self.changed_files.extend(paths)
            for text in json_strings(given):
                self.changed_files.extend(m.strip() for m in _PATCH_FILE.findall(text))
        command = next((given[k] for k in _COMMAND_KEYS if given.get(k)), None)
        call = _squash(" ".join(map(str, command)) if isinstance(command, list) else str(command or ""))
        self._calls[str(block.get("id"))] = call or f"{name} {' '.join(paths)}"


def failures(texts: list[str], is_error: bool) -> list[str]:
    """The lines of a tool result that say what failed. A failed result with no such line (marked
    is_error, or with a nonzero exit) gives one line instead: a command's last line of output, or the
    first line of a refused call (`File has not been read yet...`)."""
    lines = [_TAG.sub("", line).strip() for text in texts for line in text.splitlines()]
    found = [
        line
        for line in lines
        if _FAILURE.match(line) and not _NUMBERED.match(line) and not _CODE_LINE.search(line)
    ]
    exits = [m for line in lines if (m := _EXIT_LINE.match(line))]
    if found or not (is_error or any(m.group(1) != "0" for m in exits)):
        return found
    said = [line for line in lines if line and not _EXIT_LINE.match(line)]
    if not exits:
        return said[:1]
    telling = [line for line in said if _FAILING_WORD.search(line)]
    return (telling or said)[-1:]


def _ordered(found: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(f for f in found if f))


def extract(span: _Span) -> dict[str, list[str]]:
    """The facts of a span per category, each once, in order of appearance."""
    text = "\n".join(span.texts)
    return {
        "paths": _ordered(m.group(0) for m in _PATH.finditer(text)),
        "commands": _ordered(_squash(c.splitlines()[0])[:_MAX_FACT] for c in span.commands),
        "errors": _ordered(_squash(line)[:_MAX_FACT] for line in span.errors),
        "urls": _ordered(m.group(0).rstrip(".,;:") for m in _URL.finditer(text)),
        "identifiers": _ordered(m.group(0) for m in _IDENTIFIER.finditer(text)),
        "numbers": _ordered(m.group(0) for m in _NUMBER.finditer(text) if len(m.group(0)) >= 3),
        "instructions": _ordered(_squash(t)[:_MAX_FACT] for t in span.user_texts if t.strip()),
        "files_changed": _ordered(span.changed_files),
        "unresolved_errors": _ordered(
            _squash(line)[:_MAX_FACT] for failed in span.unresolved.values() for line in failed
        ),
        "last_state": _ordered([_squash(span.last_state)[:_MAX_FACT]]),
    }


def _survives(category: str, fact: str, haystack: str, folded: str) -> bool:
    if category in ("errors", "instructions", "commands", "unresolved_errors", "last_state"):
        return fact.casefold() in folded
    if category in ("identifiers", "numbers"):
        return re.search(rf"(?<![\w.]){re.escape(fact)}(?![\w])", haystack) is not None
    return fact in haystack


def _records(source: BinaryIO, path: str, on_invalid: str) -> Iterator[dict]:
    for line in read_lines(source, path, on_invalid):
        if line.record is not None:
            yield line.record


def _summarized_records(dialect: Dialect, source: BinaryIO, path: str, on_invalid: str) -> Iterator[dict]:
    """The summarized file's records: in file order, or, where the dialect appends its compactions (every
    earlier record kept), in the order its agent reads them (Dialect.new_order: pi's path, Qwen Code's
    chain), so that the last compaction is where the resumed context starts."""
    if not dialect.appends_compactions:
        yield from _records(source, path, on_invalid)
        return
    for line in ConversationLines(source, path, on_invalid, dialect):
        if line.record is not None:
            yield line.record


def _with_carried(dialect: Dialect, record: dict) -> list[dict]:
    """The record, and the records a compaction carries as the new context (Qwen Code's kept Contents)."""
    if dialect.compaction(record) == BOUNDARY:
        return [record, *dialect.restarted_with(record)]
    return [record]


def _key(message: dict) -> str:
    return json.dumps(message, sort_keys=True, default=str)


def probe(
    original: BinaryIO,
    original_path: str,
    summarized: BinaryIO,
    summarized_path: str,
    *,
    fmt: str | None = None,
    on_invalid: str = "error",
) -> ProbeResult:
    """Retention of ORIGINAL's replaced facts in SUMMARIZED (both open, seekable files)."""
    dialect: Dialect = dialect_for(original, original_path, fmt)
    summary_dialect: Dialect = dialect_for(summarized, summarized_path, fmt)

    kept: set[str] = set()
    pieces: list[str] = []
    compacted = False
    for record in _summarized_records(summary_dialect, summarized, summarized_path, on_invalid):
        if summary_dialect.appends_compactions and summary_dialect.compaction(record) is not None:
            # The records before an appended compaction stay in the file, but the agent no longer sends
            # them: what survives is what it resumes with, from the compaction on.
            kept.clear()
            pieces.clear()
        pieces.extend(json_strings(record))
        compacted = compacted or summary_dialect.compaction(record) is not None
        for carried in _with_carried(summary_dialect, record):
            message = summary_dialect.normalize(carried)
            if message is not None:
                kept.add(_key(message))

    span = _Span()
    replaced = messages = 0
    for record in _records(original, original_path, on_invalid):
        message = dialect.normalize(record)
        if message is None:
            continue
        messages += 1
        if compacted and _key(message) in kept:
            continue  # carried over verbatim: not part of what the summary replaced
        replaced += 1
        span.add(summarizer_view(dialect, record) or message)
    if messages == 0:
        raise BadInput(f"{original_path}: no conversation to probe (no message records)")

    haystack = _squash("\n".join(pieces))
    folded = haystack.casefold()
    categories = {}
    for category, facts in extract(span).items():
        missing = [f for f in facts if not _survives(category, f, haystack, folded)]
        categories[category] = Retention(total=len(facts), missing=missing)
    return ProbeResult(dialect.name, replaced, categories)
