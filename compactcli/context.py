"""The active context of a transcript and its size in tokens, counted while the records stream by.

What is counted (docs/design.md, "Layers"):

* Claude Code: the main conversation from its last compaction on (a `compact_boundary` system
  record, or an `isCompactSummary` user record, which older versions write without a boundary).
  Sidechain records are a sub-agent's own conversation and are not counted, unless the file has
  nothing but sidechain records (a sub-agent's own log): then they are the conversation.
* Other dialects: every message.

Methods:

* `seed`: `len(str(messages)) // 4` over the message objects as they are in the file.
* `heuristic`: the calibrated estimate of :mod:`compactcli.tokens` over normalized messages.
* `api`: `messages.count_tokens`, cached by content hash (see :class:`TokenCache`).
* `usage`: the context recorded at the last model call (Claude Code `usage` fields), or None.

Memory stays constant whatever the file size, except for `api`, which holds the messages it sends.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from compactcli import tokens as tok
from compactcli.cache import cache_dir
from compactcli.dialects import BOUNDARY, SUMMARY, Dialect
from compactcli.layers.estimate import HeavyResult, TopResults, UsageTracker
from compactcli.layers.micro import MicroIndex, MicroOptions, cleared

METHODS = ("auto", "seed", "heuristic", "api", "usage")
DEFAULT_METHOD = "heuristic"  # for the thresholds of micro, summarize and replay
ESTIMATE_METHOD = "auto"  # estimate's: what the next call would send (docs/design.md, "Estimate")
CACHE_FILE = "count_tokens.json"
CACHE_MAX_ENTRIES = 20_000


class TokenCache:
    """count_tokens answers by request hash, in one small JSON file (None: no cache).

    Every new entry is written through (read, merge, atomic replace), so parallel runs lose at
    most each other's newest entries, never the file.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, int] | None = None

    @classmethod
    def default(cls) -> TokenCache:
        return cls(cache_dir() / CACHE_FILE)

    def _load(self) -> dict[str, int]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(v, int)}

    def get(self, key: str) -> int | None:
        if self.path is None:
            return None
        if self._entries is None:
            self._entries = self._load()
        return self._entries.get(key)

    def put(self, key: str, value: int) -> None:
        if self.path is None:
            return
        entries = self._load()
        entries.pop(key, None)
        entries[key] = value  # newest last: the oldest are dropped first
        while len(entries) > CACHE_MAX_ENTRIES:
            del entries[next(iter(entries))]
        self._entries = entries
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".count_tokens.", dir=self.path.parent)
            with os.fdopen(fd, "w") as out:
                json.dump(entries, out, separators=(",", ":"))
            os.replace(temp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs a request next time


@lru_cache(maxsize=64)
def _persists(model: str | None) -> bool:
    return tok.thinking_persists(model)


def _thinking_persists(model: object) -> bool:
    return _persists(model if isinstance(model, str) else None)


class _Conversation:
    """One conversation's active context and what is counted over it."""

    def __init__(self, method: str, detail: bool, top: int, start: int) -> None:
        self.start = start  # line where the active context starts (0: the top of the file)
        self.messages = 0
        self.tool_results = 0
        self.seed = tok.SeedCounter() if method == "seed" else None
        heuristic = method in ("heuristic", "auto") or detail
        self.heuristic = tok.HeuristicCounter() if heuristic else None
        self.sent: list[dict] | None = [] if method == "api" else None
        self.usage = UsageTracker() if method in ("usage", "auto") else None
        self.at_call: int | None = None  # auto: the heuristic count when the last recorded call was sent
        self.top = TopResults(top) if top else None
        self.tool_names: dict[str, str] = {}


class ContextCounter:
    """Feed every record of one file in order with :meth:`add`; read the counts at any time.

    `detail` also keeps the heuristic's split by category when another method gives the total;
    `top` keeps the N heaviest tool results (heuristic tokens). `model` and `cache` are for
    `api`; the client is made on the first count that is not in the cache.
    """

    def __init__(
        self,
        dialect: Dialect,
        method: str = DEFAULT_METHOD,
        *,
        detail: bool = True,
        top: int = 0,
        micro: MicroOptions | None = None,
        model: str | None = None,
        cache: TokenCache | None = None,
        client: Any = None,
        overhead: int | None = None,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; one of {', '.join(METHODS)}")
        self.dialect = dialect
        self.method = method
        self.detail = detail
        self.top_size = top
        self.model = model
        self.cache = cache if cache is not None else TokenCache(None)
        self.client = client
        # What the log does not hold but every call sends (system prompt, tool definitions): added to
        # heuristic counts; auto's default is the dialect's measured one.
        default = dialect.default_overhead if method == "auto" else 0
        self.overhead = overhead if overhead is not None else default
        self._main = self._new(0)
        # Sub-agent records count only while no main-conversation message has been seen.
        sides = dialect.has_side_conversations
        self._side: _Conversation | None = self._new(0) if sides else None
        self._has_main = not sides
        self._api_tokens: int | None = None
        self._instructions: dict | None = None
        # --top lists only what micro would clear (with its default options): micro's own index decides
        self._micro = MicroIndex(dialect) if top else None
        self._micro_options = micro or MicroOptions()

    def _new(self, start: int) -> _Conversation:
        return _Conversation(self.method, self.detail, self.top_size, start)

    # -- feeding ----------------------------------------------------------------------------

    def add(self, record: dict, line: int = 0) -> None:
        """One parsed record; `line` (1-based) names tool results in :attr:`top`."""
        if self._micro is not None:
            self._micro.add(line, record)
        dialect = self.dialect
        if dialect.is_side(record):
            if self._has_main:
                return
            conversation = self._side
        else:
            conversation = self._main
        assert conversation is not None
        compaction = dialect.compaction(record)
        if compaction == BOUNDARY:
            conversation = self._restart(conversation, line)
            for entry in dialect.restarted_with(record):  # what the new context starts with
                if (message := dialect.message(entry)) is not None:
                    self._add(conversation, entry, message, line)
            return
        if conversation.usage is not None:
            calls = conversation.usage.calls
            usage = dialect.usage(record)
            if usage is not None:
                conversation.usage.add(usage, dialect.call_id(record))
            call = dialect.recorded_call(record)
            if call is not None:
                conversation.usage.add_call(*call)
            if conversation.heuristic is not None and (call is not None or conversation.usage.calls != calls):
                conversation.at_call = conversation.heuristic.tokens  # what the recorded call was sent
        message = dialect.message(record)
        if message is None:
            seen = dialect.seen_by_model(record)
            if seen is not None:
                self._add_seen(conversation, seen)
            instructions = dialect.instructions(record)
            if instructions is not None:
                self._instructions = {"role": "system", "content": instructions}
                self._add_instructions(conversation)
            return
        # Right after a boundary the context has already started anew, at the boundary.
        fresh = conversation.start and not conversation.messages
        if compaction == SUMMARY and not fresh:
            conversation = self._restart(conversation, line)
        if conversation is self._main and not self._has_main:
            self._has_main = True
            self._side = None
        self._add(conversation, record, message, line)

    def _add_seen(self, conversation: _Conversation, message: dict) -> None:
        # Not a message of the conversation (seed counts message objects only), but sent to the model.
        if conversation.heuristic is not None:
            conversation.heuristic.add(message)
        if conversation.sent is not None:
            conversation.sent.append(message)

    def _add_instructions(self, conversation: _Conversation) -> None:
        # Sent with every call, not a message: counted by the heuristic and api, not by seed.
        if self._instructions is None:
            return
        if conversation.heuristic is not None:
            conversation.heuristic.add(self._instructions)
        if conversation.sent is not None:
            conversation.sent.append(self._instructions)

    def _restart(self, conversation: _Conversation, line: int) -> _Conversation:
        fresh = self._new(line)
        self._add_instructions(fresh)
        if conversation is self._main:
            self._main = fresh
        else:
            self._side = fresh
        self._api_tokens = None
        return fresh

    def _add(self, conv: _Conversation, record: dict, message: dict, line: int) -> None:
        conv.messages += 1
        self._api_tokens = None
        if conv.seed is not None:
            conv.seed.add(message)  # every message record, exactly as in the file
        if message.get("role") != "assistant":  # results are in user (or OpenAI tool) messages
            conv.tool_results += len(self.dialect.tool_results(record))
        elif self.dialect.is_synthetic(record):
            return  # an error notice: never sent to the model
        elif conv.heuristic is not None and "model" in message:
            conv.heuristic.keep_thinking = _thinking_persists(message.get("model"))
        if conv.heuristic is None and conv.sent is None and conv.top is None:
            return
        normalized = self.dialect.normalize(record)
        if normalized is None:
            return
        if conv.heuristic is not None:
            conv.heuristic.add(normalized)
        if conv.sent is not None:
            conv.sent.append(normalized)
        if conv.top is not None:
            self._track_top(conv, record, normalized, line)

    def _track_top(self, conv: _Conversation, record: dict, normalized: dict, line: int) -> None:
        for use in self.dialect.tool_uses(record):
            conv.tool_names[use.id] = use.name
        content = normalized.get("content")
        if not isinstance(content, list):
            return
        assert conv.top is not None
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                cost = tok.message_tokens({"role": "user", "content": [block]})
                conv.top.add(cost["tool_results"] + cost["images"], line, block.get("tool_use_id"))

    # -- results ----------------------------------------------------------------------------

    @property
    def active(self) -> _Conversation:
        """The conversation that is counted."""
        if self._has_main or self._side is None:
            return self._main
        return self._side

    @property
    def conversation(self) -> str:
        """`main`, or `sidechain` for a file of sidechain records only."""
        return "main" if self.active is self._main else "sidechain"

    @property
    def start_line(self) -> int:
        """Line of the compaction the active context starts at; 0 when there is none."""
        return self.active.start

    @property
    def messages(self) -> int:
        """Message records in the active context."""
        return self.active.messages

    @property
    def tool_results(self) -> int:
        return self.active.tool_results

    @property
    def by_category(self) -> dict[str, int]:
        """Heuristic tokens per category (tokens.CATEGORIES); empty without `detail`,
        unless the method is heuristic."""
        counter = self.active.heuristic
        return counter.by_category if counter is not None else {}

    @property
    def usage(self) -> UsageTracker | None:
        return self.active.usage

    @property
    def top(self) -> list[HeavyResult]:
        conv = self.active
        if conv.top is None or self._micro is None:
            return []
        clearable = {
            (fact.line, fact.tool_use_id or "") for fact, _ in cleared(self._micro, self._micro_options)
        }
        return conv.top.result(conv.tool_names, clearable)

    @property
    def tokens(self) -> int | None:
        """The size of the active context by the method; None only for `usage` when no usage
        is recorded in it. For `api` this makes the request (or reads the cache)."""
        conv = self.active
        if conv.seed is not None:
            return conv.seed.tokens
        if self.method == "auto":
            assert conv.heuristic is not None and conv.usage is not None
            if conv.usage.last is not None and conv.at_call is not None:
                return conv.usage.last + conv.heuristic.tokens - conv.at_call
            return conv.heuristic.tokens + self.overhead
        if conv.usage is not None:
            return conv.usage.last
        if conv.sent is not None:
            if self._api_tokens is None:
                self._api_tokens = self._count(conv.sent)
            return self._api_tokens
        assert conv.heuristic is not None
        return conv.heuristic.tokens + self.overhead

    @property
    def method_used(self) -> str:
        """How the figure was made: auto says which of its two ways it took."""
        if self.method != "auto":
            return self.method
        conv = self.active
        recorded = conv.usage is not None and conv.usage.last is not None and conv.at_call is not None
        return "usage+heuristic" if recorded else "heuristic+overhead"

    def _count(self, messages: list[dict]) -> int:
        from compactcli.backends import anthropic as backend
        from compactcli.layers.estimate import count_request, request_key

        turns, system = count_request(messages)
        if not turns:
            return 0
        model = backend.resolve_model(self.model)
        key = request_key(model, turns, system)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        if self.client is None:
            self.client = backend.make_client()
        count = backend.count_tokens(self.client, model=model, messages=turns, system=system)
        self.cache.put(key, count)
        return count


def estimator(method: str = DEFAULT_METHOD, **options: Any) -> Callable[[Dialect], ContextCounter]:
    """A factory of counters for one method, as micro_file.analyze(estimator=) takes it.

    Picklable, so it crosses to --jobs worker processes. Without `detail` the counter keeps
    only the method's total.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {', '.join(METHODS)}")
    options.setdefault("detail", False)
    return partial(ContextCounter, method=method, **options)
