"""The active context of a transcript and its size in tokens, counted while the records stream by.

What is counted (docs/design.md, "Layers"):

* Claude Code: the main conversation from its last compaction on (a `compact_boundary` system
  record, or an `isCompactSummary` user record, which older versions write without a boundary).
  Sidechain records are a sub-agent's own conversation and are not counted, unless the file has
  nothing but sidechain records (a sub-agent's own log): then they are the conversation.
* Other dialects: every message.

Methods:

* `seed`: `len(str(messages)) // 4` over the message objects as they are in the file.
* `heuristic`: the calibrated estimate of :mod:`compactcli.counting.tokens` over normalized messages.
* `api`: `messages.count_tokens`, cached by content hash (see :class:`TokenCache`).
* `usage`: the context recorded at the last model call (Claude Code `usage` fields), or None.

Memory stays constant whatever the file size, except for `api`, which holds the messages it sends.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compactcli.core.constants import DEFAULT_METHOD, METHODS
from compactcli.core.places import cache_dir
from compactcli.counting import tokens as tok
from compactcli.dialects import BOUNDARY, SUMMARY, Dialect
from compactcli.layers.estimate import (
    HeavyResult,
    TopResults,
    UsageTracker,
    recorded_context,
    recorded_output,
)
from compactcli.layers.micro import MicroIndex, MicroOptions, Reclear, cleared

if TYPE_CHECKING:
    from compactcli.dialects.base import ModelView

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


def _traits(model: object) -> tuple[bool, float]:
    return tok.model_traits(model if isinstance(model, str) else None)


class _Conversation:
    """One conversation's active context and what is counted over it."""

    def __init__(self, method: str, heuristic: bool, top: int, start: int) -> None:
        self.start = start  # line where the active context starts (0: the top of the file)
        self.messages = 0
        self.tool_results = 0
        self.seed = tok.SeedCounter() if method == "seed" else None
        self.heuristic = tok.HeuristicCounter() if heuristic else None
        self.sent: list[dict] | None = [] if method == "api" else None
        self.usage = UsageTracker() if method in ("usage", "auto") else None
        self.at_call: int | None = None  # auto: the heuristic count when the last recorded call was sent
        self.top = TopResults(top) if top else None
        self.tool_names: dict[str, str] = {}


# What counting needs of one record, read from it once (ContextCounter.summarize), so that a file whose
# conversation is not in file order (Claude Code's parentUuid chain) is parsed once and its summaries
# counted in the conversation's order. Plain tuples: one per record, a named tuple would cost more than
# the counting it saves.
#   Sent:    (costs, starts_turn, message) of what the model is sent: costs by category (tokens.
#            message_costs; None without the heuristic), the message itself for api only (else None)
#   Top:     ((tool_use_id, name) of its tool uses, (tokens, tool_use_id) of its tool results), --top only
#   Message: (synthetic, tool_results, traits, seed_length, sent, top): traits, the tokens.model_traits
#            of the model it names (None when it names none); sent None when nothing is counted of it
#   Summary: (side, compaction, restarted, usage, call, message, seen, instructions): restarted, the
#            Messages a BOUNDARY starts the context with; usage (context, output, call_id) recorded on the
#            record; call, Dialect.recorded_call; seen and instructions, Sents
Sent = tuple[list[float] | None, bool, dict | None]
Top = tuple[tuple[tuple[str, str], ...], tuple[tuple[int, object], ...]]
Message = tuple[bool, int, tuple[bool, float] | None, int, Sent | None, Top | None]
Summary = tuple[
    bool,
    str | None,
    tuple[Message, ...],
    tuple[int, int, object] | None,
    tuple[int, int, object] | None,
    Message | None,
    Sent | None,
    Sent | None,
]


def is_main_message(summary: Summary) -> bool:
    """Whether the summarized record is a message of the main conversation (not a sub-agent's)."""
    return not summary[0] and summary[5] is not None


class ContextCounter:
    """Feed every record of one file in order with :meth:`add`; read the counts at any time.

    `detail` also keeps the heuristic's split by category when another method gives the total;
    `top` keeps the N heaviest tool results (heuristic tokens). `model` and `cache` are for
    `api`; the client is made on the first count that is not in the cache.

    :meth:`add` is :meth:`summarize` then :meth:`add_summary`; a file read out of order may summarize
    its records in file order and add the summaries in the conversation's (not with `top`, whose micro
    index takes the records themselves in order).
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
        view: ModelView | None = None,
        redact: bool = True,
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
        # `api` sends the transcript to the model's endpoint: redacted unless --no-redact
        self.redact = redact
        # What the log does not hold but every call sends (system prompt, tool definitions): added to
        # heuristic counts; auto's default is the dialect's measured one.
        default = dialect.default_overhead if method == "auto" else 0
        self.overhead = overhead if overhead is not None else default
        self._heuristic = method in ("heuristic", "auto") or detail
        self._usage = method in ("usage", "auto")
        self._seed, self._api = method == "seed", method == "api"
        self._main = self._new(0)
        # Sub-agent records count only while no main-conversation message has been seen.
        sides = self._sides = dialect.has_side_conversations
        self._side: _Conversation | None = self._new(0) if sides else None
        self._has_main = not sides
        self._api_tokens: int | None = None
        self._instructions: Sent | None = None
        # --top lists only what micro would clear (with its default options): micro's own index decides
        self._micro = MicroIndex(dialect) if top else None
        self._micro_options = micro or MicroOptions()
        # What the model was sent of each message, where the dialect says it is not the record's own
        # (Codex's truncated tool outputs); given: shared with a caller that fed it the file already.
        self._view = view if view is not None else dialect.new_view()
        self._feeds_view = view is None

    def _new(self, start: int) -> _Conversation:
        return _Conversation(self.method, self._heuristic, self.top_size, start)

    # -- feeding ----------------------------------------------------------------------------

    @property
    def summarizes(self) -> bool:
        """Whether summaries may be added out of file order (see the class)."""
        return self._micro is None

    def add(self, record: dict, line: int = 0) -> None:
        """One parsed record; `line` (1-based) names tool results in :attr:`top`."""
        if self._micro is not None:
            self._micro.add(line, record)
        if self._has_main and self._sides and self.dialect.is_side(record):
            return  # a sub-agent's record once the main conversation is known: never counted
        summary = self.summarize(record)
        if summary is not None:
            self.add_summary(summary, line)

    def summarize(self, record: dict) -> Summary | None:
        """What counting needs of `record` (see Summary); None for a record that changes no count."""
        dialect = self.dialect
        if self._feeds_view and self._view is not None:
            self._view.add(record)
        side = self._sides and dialect.is_side(record)
        compaction = dialect.compaction(record)
        if compaction == BOUNDARY:
            restarted = tuple(
                self._message(entry, message, seen=False)
                for entry in dialect.restarted_with(record)  # what the new context starts with
                if (message := dialect.message(entry)) is not None
            )
            return side, compaction, restarted, None, None, None, None, None
        usage = call = None
        if self._usage:
            recorded = dialect.usage(record)
            context = recorded_context(recorded) if recorded is not None else 0
            if context:
                assert recorded is not None
                usage = context, recorded_output(recorded), dialect.call_id(record)
            call = dialect.recorded_call(record)
        message = dialect.message(record)
        if message is not None:
            return side, compaction, (), usage, call, self._message(record, message), None, None
        seen = dialect.seen_by_model(record)
        instructions = dialect.instructions(record)
        if usage is None and call is None and seen is None and instructions is None:
            return None
        return (
            side,
            compaction,
            (),
            usage,
            call,
            None,
            None if seen is None else self._sent(seen),
            None if instructions is None else self._sent({"role": "system", "content": instructions}),
        )

    def _sent(self, message: dict) -> Sent:
        if not self._heuristic:
            return None, False, message if self._api else None
        costs = tok.message_costs(message)
        return costs, tok.starts_turn(message), message if self._api else None

    def _message(self, record: dict, message: dict, seen: bool = True) -> Message:
        """`seen`: the record is one the view was fed (a compaction's history is sent as it is)."""
        dialect = self.dialect
        seed_length = len(repr(message)) if self._seed else 0  # the message exactly as in the file
        traits = None
        tool_results = 0
        if message.get("role") != "assistant":  # results are in user (or OpenAI tool) messages
            tool_results = dialect.result_count(record)
        elif dialect.is_synthetic(record):  # an error notice: never sent to the model
            return True, 0, None, seed_length, None, None
        elif "model" in message:
            traits = _traits(message.get("model"))
        if not (self._heuristic or self._api or self.top_size):
            return False, tool_results, traits, seed_length, None, None
        view = self._view if seen else None
        normalized = view.normalize(record) if view is not None else dialect.normalize(record)
        if normalized is None:
            return False, tool_results, traits, seed_length, None, None
        top = self._top(record, normalized) if self.top_size else None
        kept = normalized if self._api else None
        if not self._heuristic:
            return False, tool_results, traits, seed_length, (None, False, kept), top
        sent = tok.message_costs(normalized), tok.starts_turn(normalized), kept
        return False, tool_results, traits, seed_length, sent, top

    def _top(self, record: dict, normalized: dict) -> Top:
        names = tuple((use.id, use.name) for use in self.dialect.tool_uses(record))
        content = normalized.get("content")
        results = []
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    cost = tok.message_tokens({"role": "user", "content": [block]})
                    results.append((cost["tool_results"] + cost["images"], block.get("tool_use_id")))
        return names, tuple(results)

    def add_summary(self, summary: Summary, line: int = 0) -> None:
        """A record's :meth:`summarize` (not None), at its place in the conversation."""
        side, compaction, restarted, usage, call, message, seen, instructions = summary
        if side:
            if self._has_main:
                return
            conversation = self._side
        else:
            conversation = self._main
        assert conversation is not None
        if compaction == BOUNDARY:
            conversation = self._restart(conversation, line)
            if restarted and conversation is self._main:
                # The new context it carries is the main conversation's (a Copilot session summarized
                # down to its compaction events holds no other message).
                self._has_main = True
                self._side = None
            for entry in restarted:
                self._add(conversation, entry, line)
            return
        tracker = conversation.usage
        if usage is not None and line and line < conversation.start:
            usage = None  # recorded before the compaction that started this context (pi keeps such records)
        if tracker is not None:
            calls = tracker.calls
            if usage is not None:
                tracker.add_context(*usage)
            if call is not None:
                tracker.add_call(*call)
            if conversation.heuristic is not None and (call is not None or tracker.calls != calls):
                conversation.at_call = conversation.heuristic.tokens  # what the recorded call was sent
        if message is None:
            if seen is not None:
                # Not a message of the conversation (seed counts message objects only), but sent to the model.
                self._add_sent(conversation, seen)
            if instructions is not None:
                self._instructions = instructions
                self._add_sent(conversation, instructions)
            return
        # Right after a boundary the context has already started anew, at the boundary.
        fresh = conversation.start and not conversation.messages
        if compaction == SUMMARY and not fresh:
            conversation = self._restart(conversation, line)
        if conversation is self._main and not self._has_main:
            self._has_main = True
            self._side = None
        self._add(conversation, message, line)

    def _add_sent(self, conversation: _Conversation, sent: Sent) -> None:
        costs, new_turn, message = sent
        if costs is not None and conversation.heuristic is not None:
            conversation.heuristic.add_costs(costs, new_turn)
        if message is not None and conversation.sent is not None:
            conversation.sent.append(message)

    def _restart(self, conversation: _Conversation, line: int) -> _Conversation:
        fresh = self._new(line)
        if self._instructions is not None:
            # Sent with every call, not a message: counted by the heuristic and api, not by seed.
            self._add_sent(fresh, self._instructions)
        if conversation is self._main:
            self._main = fresh
        else:
            self._side = fresh
        self._api_tokens = None
        return fresh

    def _add(self, conv: _Conversation, message: Message, line: int) -> None:
        synthetic, tool_results, traits, seed_length, sent, top = message
        conv.messages += 1
        self._api_tokens = None
        if conv.seed is not None:
            conv.seed.add_repr_length(seed_length)  # every message record, exactly as in the file
        conv.tool_results += tool_results
        if synthetic:
            return
        if traits is not None and conv.heuristic is not None:
            conv.heuristic.use_traits(traits)
        if sent is None:
            return
        costs, new_turn, normalized = sent
        if costs is not None and conv.heuristic is not None:
            conv.heuristic.add_costs(costs, new_turn)
        if normalized is not None and conv.sent is not None:
            conv.sent.append(normalized)
        if top is not None and conv.top is not None:
            names, results = top
            conv.tool_names.update(names)
            for tokens, tool_use_id in results:
                conv.top.add(tokens, line, tool_use_id)

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
            (fact.line, fact.tool_use_id or "")
            for fact, placeholder in cleared(self._micro, self._micro_options)
            if not isinstance(placeholder, Reclear)
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
    def parts(self) -> dict[str, int]:
        """What `tokens` adds up (auto and heuristic): `recorded`, the context the last recorded call was
        sent; `added`, the heuristic count of what came after it (of everything when none is recorded);
        `overhead`. Empty for methods whose figure is one count (seed, api, usage)."""
        conv = self.active
        if conv.seed is not None or conv.sent is not None or conv.heuristic is None:
            return {}
        if self.method == "auto" and conv.usage is not None:
            if conv.usage.last is not None and conv.at_call is not None:
                return {"recorded": conv.usage.last, "added": conv.heuristic.tokens - conv.at_call}
        elif self.method != "heuristic":
            return {}
        return {"added": conv.heuristic.tokens, "overhead": self.overhead}

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
        key = request_key(model, turns, system, self.redact)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        if self.client is None:
            self.client = backend.make_client()
        count = backend.count_tokens(
            self.client, model=model, messages=turns, system=system, redact=self.redact
        )
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


@dataclass
class ContextSize:
    """`count` for a Replay (layers/replay.py): this module's estimate of a list of records.

    One ContextCounter per count (a context changes in the middle, not only at its end); the API
    client and the token cache of method `api` are kept between counts.
    """

    dialect: Dialect
    method: str = "seed"
    model: str | None = None
    cache: Any = None
    redact: bool = True
    counts: int = field(default=0, init=False)
    _client: Any = field(default=None, init=False, repr=False)
    # What the model was sent of each record (Dialect.new_view), fed by the Replay (its `view`)
    view: ModelView | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.view = self.dialect.new_view(remember=True)

    def __call__(self, records: list[dict]) -> int:
        counter = ContextCounter(
            self.dialect,
            self.method,
            detail=False,
            model=self.model,
            cache=self.cache,
            client=self._client,
            view=self.view,
            redact=self.redact,
        )
        for record in records:
            counter.add(record)
        self.counts += 1
        tokens = counter.tokens
        self._client = counter.client
        return tokens or 0
