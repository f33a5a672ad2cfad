"""Pure pieces of `estimate`: recorded usage, the heaviest tool results, count_tokens requests,
the limit check and GitHub annotations.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from dataclasses import dataclass, field
from typing import Any

import orjson

USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def recorded_context(usage: object) -> int:
    """The context a model call saw, from its `usage`: input plus cache writes and reads."""
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in USAGE_KEYS:  # a loop, not sum() over a generator: it runs for every response
        value = usage.get(key)
        if isinstance(value, int):
            total += value
    return total


def recorded_output(usage: dict) -> int:
    """The output tokens a model call's `usage` records (0 when it records none)."""
    output = usage.get("output_tokens")
    return output if isinstance(output, int) else 0


@dataclass
class UsageTracker:
    """The usage recorded on assistant messages, fed in file order.

    One response split over several records (sharing `message.id`) repeats its usage on each;
    it is one call, and its output is counted once (from its last record, the final figure).
    """

    last: int | None = None  # context at the last model call
    calls: int = 0
    _output_done: int = 0  # output tokens of the finished calls
    _output_open: int = 0  # of the call being read
    _call_id: object = None

    def add(self, usage: dict, call_id: object) -> None:
        """The usage recorded on one record of the model call `call_id` (Dialect.usage, call_id)."""
        context = recorded_context(usage)
        if context:
            self.add_context(context, recorded_output(usage), call_id)

    def add_context(self, context: int, output: int, call_id: object) -> None:
        """`add` with the usage already read: its recorded_context (not 0) and recorded_output."""
        if call_id is None or call_id != self._call_id:
            self.calls += 1
            self._output_done += self._output_open
            self._call_id = call_id
        self._output_open = output
        self.last = context

    def add_call(self, context: int, output: int, key: object) -> None:
        """A call recorded on a record of its own (Codex `token_count`, Dialect.recorded_call): records
        with one key are one call, its figure written again; key None: a size, not a call."""
        if key is not None and key != self._call_id:
            self.calls += 1
            self._output_done += output
            self._call_id = key
        self.last = context

    @property
    def output_tokens(self) -> int:
        return self._output_done + self._output_open


@dataclass(order=True)
class HeavyResult:
    tokens: int
    line: int
    tool_use_id: str = field(default="", compare=False)
    tool: str = field(default="unknown", compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "tool": self.tool,
            "tokens": self.tokens,
            "tool_use_id": self.tool_use_id,
        }


class TopResults:
    """The `size` heaviest tool results seen that micro would clear.

    Which ones micro clears is known only at the end (the last `keep` are kept), so every result is
    remembered: a few numbers each, as micro's own index does.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._seen: list[HeavyResult] = []

    def add(self, tokens: int, line: int, tool_use_id: object) -> None:
        if self.size > 0:
            self._seen.append(
                HeavyResult(tokens, -line, str(tool_use_id or ""))
            )  # -line: ties go to the earlier

    def result(self, names: dict[str, str], clearable: set[tuple[int, str]]) -> list[HeavyResult]:
        """Heaviest first among the results in `clearable` ((line, tool_use_id) pairs), with tool
        names looked up by tool_use id."""
        mine = (item for item in self._seen if (-item.line, item.tool_use_id) in clearable)
        out = []
        for item in heapq.nlargest(self.size, mine):
            name = names.get(item.tool_use_id, "unknown")
            out.append(HeavyResult(item.tokens, -item.line, item.tool_use_id, name))
        return out


# --- count_tokens requests ---------------------------------------------------------------------


def _blocks(content: object) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return list(content)
    return [] if content is None else [{"type": "text", "text": str(content)}]


def _empty_text(block: object) -> bool:
    # The API refuses empty text blocks ("text content blocks must be non-empty").
    return isinstance(block, dict) and block.get("type") == "text" and not block.get("text")


def _system_text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return "" if content is None else str(content)


def count_request(messages: list[dict]) -> tuple[list[dict], str | None]:
    """The `messages` and `system` of a count_tokens request for normalized messages.

    count_tokens validates like messages.create, so: system messages move to `system`; runs of
    one role become one turn (as the API would combine them), with a user turn's tool_result
    blocks first, as Claude Code sends them; empty text blocks and empty turns are dropped.
    """
    system: list[str] = []
    turns: list[dict] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            text = _system_text(message.get("content"))
            if text:
                system.append(text)
            continue
        blocks = [b for b in _blocks(message.get("content")) if not _empty_text(b)]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            content = turn["content"]
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if results and len(results) != len(content):
                others = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
                turn["content"] = results + others
    return turns, ("\n\n".join(system) or None)


def request_key(model: str, turns: list[dict], system: str | None, redacted: bool = True) -> str:
    """A content hash of a count_tokens request, for the cache; a count of the text as it is
    (--no-redact) is another request than the redacted one."""
    body = {"v": 1, "model": model, "system": system, "messages": turns}
    if not redacted:
        body["raw"] = True
    try:
        data = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        data = json.dumps(body, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


# --- the limit -----------------------------------------------------------------------------------


def share(tokens: int | None, max_tokens: int | None) -> float | None:
    """tokens as a fraction of the limit."""
    if tokens is None or not max_tokens:
        return None
    return tokens / max_tokens


def is_over(tokens: int | None, max_tokens: int | None) -> bool:
    return tokens is not None and max_tokens is not None and tokens > max_tokens
