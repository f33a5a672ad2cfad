"""Replay: re-run a recorded transcript as the agent loop would, and see when each layer fires
(docs/design.md, "Layers").

A :class:`Replay` is fed the records of one file in order and keeps a simulated context: the records
the next model call would be sent, in the input's dialect. Before each model call (an assistant
message) it runs micro on the context; then, if the estimate exceeds the threshold, it compacts the
context (archive, summary, one summary message) before the call. After the user-side message that
answers a ``compact`` tool call, it compacts with that call's ``focus``.

What is a model call, per dialect:

- anthropic and openai: every assistant message. OpenAI system and tool messages are user-side.
- claude-code: the first assistant record of each API response; the records that follow with the
  same ``message.id`` (one response split over several records) are appended without a call. API
  error notices (``isApiErrorMessage``, model ``<synthetic>``) are appended without a call too.
  Only the main chain is replayed (a file of sub-agent records only, whose first message record is
  a sidechain record, replays that conversation instead); other records (progress, snapshots,
  summaries, system notices) are not sent to a model and are skipped. The whole history is replayed
  from the top: a compaction recorded in the file (``compact_boundary`` and the ``isCompactSummary``
  record) resets the simulated context to the recorded summary, and is reported as a ``recorded`` row.

Everything that is not pure (the token count, the summarizer, the archive) is passed in, so that the
same replay runs for real (command), as a what-if (nothing written) and in tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from compactcli.core import jsonio
from compactcli.core.constants import DEFAULT_THRESHOLD, USER_MESSAGES_TOKENS
from compactcli.dialects import BOUNDARY, SUMMARY, Dialect
from compactcli.layers import micro
from compactcli.layers.micro import MicroOptions
from compactcli.layers.micro_strategies import plan_records
from compactcli.layers.summarize import (
    EARLIER_SUMMARY,
    SUMMARY_PREFIX,
    Summarizer,
    UserMessages,
    after_summary,
    depth_note,
    depth_of,
    is_earlier_summary,
    message_text,
    nothing_to_summarize,
    summarizer_view,
    summary_text,
    user_messages_follow,
)

if TYPE_CHECKING:
    from compactcli.dialects.base import ModelView

COMPACT_TOOL = "compact"
FOCUS_FIELD = "focus"
AUTO, MANUAL, RECORDED = "auto", "manual", "recorded"
EVENTS = (AUTO, MANUAL, RECORDED)
TIMELINE_FIELDS = ("index", "turn", "tokens", "event", "tokens_after", "cleared")


@dataclass(slots=True)
class Entry:
    """One record of the simulated context."""

    record: dict
    raw: bytes | None = None  # the input line as read; None for records the replay made
    line: int | None = None  # 0-based line in the input; None for records the replay made
    slow: bool = False  # parsed by the stdlib (jsonio): written back with it if changed
    changed: bool = False  # micro cleared something in it, or it was relinked


@dataclass(frozen=True, slots=True)
class Row:
    """One timeline row: a model call (event None or auto), or a compaction between calls.

    `index`: 0-based input line of the assistant message (model call), of the user message that
    answered the compact call (manual), or of the recorded summary (recorded). `turn`: the model call
    number (1-based); for manual and recorded rows, the number of calls made so far. `tokens`: the
    estimate after micro and before any compaction; `tokens_after`: after the compaction (what the
    model call receives). `cleared`: tool results micro cleared before this call.
    """

    index: int
    turn: int
    tokens: int
    event: str | None = None
    tokens_after: int = 0
    cleared: int = 0
    cached: int = 0  # of tokens_after, the prefix sent unchanged at the previous call (see cached_prefix)

    @property
    def is_call(self) -> bool:
        return self.event in (None, AUTO)

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in TIMELINE_FIELDS}


@dataclass
class Compaction:
    kind: str  # auto, manual or recorded
    index: int
    tokens_before: int
    tokens_after: int
    archive: str | None = None
    focus: str | None = None
    summarized_tokens: int = 0  # the messages the summarizer was given (0: recorded in the file)
    summary_tokens: int = 0  # the summary records it wrote
    depth: int = 1  # compactions deep: 2 and more when built on an earlier summary


@dataclass
class ReplayResult:
    rows: list[Row]
    context: list[Entry]
    final_tokens: int
    compactions: list[Compaction]
    summarizer_calls: int = 0
    api_requests: int = 0  # requests the summarizer made (a long context takes several)
    cleared: int = 0
    conversation: str = "main"
    output_tokens: int = 0  # the recorded assistant messages: what the model calls wrote

    @property
    def calls(self) -> int:
        return sum(1 for row in self.rows if row.is_call)

    @property
    def by_kind(self) -> dict[str, int]:
        counts = Counter(c.kind for c in self.compactions)
        return {kind: counts.get(kind, 0) for kind in EVENTS}

    @property
    def peak(self) -> int:
        """The largest the context grew: the most tokens of any row (before compaction)."""
        return max([row.tokens for row in self.rows] + [self.final_tokens])

    @property
    def peak_sent(self) -> int:
        """The largest context a model call received (after micro and compaction)."""
        return max((row.tokens_after for row in self.rows if row.is_call), default=0)

    @property
    def archives(self) -> list[str]:
        return [c.archive for c in self.compactions if c.archive]

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "compactions": self.by_kind,
            "summarizer_calls": self.summarizer_calls,
            "api_requests": self.api_requests,
            "peak_tokens": self.peak,
            "peak_sent_tokens": self.peak_sent,
            "final_tokens": self.final_tokens,
            "cleared": self.cleared,
            "conversation": self.conversation,
            # How many compactions deep the last simulated summary is (0: none simulated).
            "compaction_depth": max((c.depth for c in self.compactions if c.kind != RECORDED), default=0),
        }


Count = Callable[[list[dict]], int]
Archive = Callable[[list[Entry]], str]


class Replay:
    """Feed every record of one file with :meth:`add` (in order), then call :meth:`finish`.

    `count(records)` is the token estimate of a list of records; `archive(entries)` stores a context
    that is about to be summarized and returns the path the summary message names. Records passed to
    `add` are taken over: micro clears tool results in them in place. `now` and `new_uuid` make the
    Claude Code summary records reproducible (summarize.summary_records). `view` is the model's view that
    `count` reads (pipelines/context.py, ContextSize.view): fed every record here, in file order, so that a
    record counted later is counted as the model was sent it then (Codex: the truncation policy of its turn).
    """

    def __init__(
        self,
        dialect: Dialect,
        *,
        count: Count,
        summarizer: Summarizer,
        archive: Archive,
        threshold: int = DEFAULT_THRESHOLD,
        micro_options: MicroOptions | None = None,
        run_micro: bool = True,
        costs: bool = False,
        now: Callable[[], datetime] | None = None,
        new_uuid: Callable[[], str] | None = None,
        keep_user_messages: int = USER_MESSAGES_TOKENS,
        view: ModelView | None = None,
    ) -> None:
        self.dialect = dialect
        self.keep_user_messages = keep_user_messages  # as summarize: they follow each summary
        self.view = view
        self.count = count
        self.summarizer = summarizer
        self.archive = archive
        self.threshold = threshold
        self.micro = micro_options or MicroOptions()
        self.run_micro = run_micro
        self.costs = costs  # also count what a bill needs: cached prefixes, outputs, summarizer tokens
        self.now = now
        self.new_uuid = new_uuid
        self.context: list[Entry] = []
        self.rows: list[Row] = []
        self.compactions: list[Compaction] = []
        self.turn = 0
        self.summarizer_calls = 0
        self.api_requests = 0
        self.cleared = 0
        self.output_tokens = 0
        self._sent: list[Entry] = []  # the context the previous model call was sent
        self._sent_tokens = 0  # and its size
        self._touched: set[int] = set()  # id() of entries micro changed since then
        self._one_message_per_line = dialect.one_message_per_line
        self._sidechain: bool | None = None  # which conversation, set by the first message
        self._response_id: object = None  # Dialect.call_id of the response being recorded
        self._compact_calls: dict[str, str | None] = {}  # open compact tool calls: id -> focus
        self._manual: tuple[int, str | None] | None = None  # (line, focus) of an answered compact call
        self._recorded: tuple[int, int] | None = None  # (line, tokens before) of a recorded boundary

    # -- feeding ---------------------------------------------------------------------------------

    def add(self, line: int, record: dict, raw: bytes | None = None, slow: bool = False) -> None:
        """One parsed record; `line` is its 0-based line in the input."""
        if self.view is not None:
            self.view.add(record)
        if not self._joins_context(line, record, raw, slow):
            return
        message = self.dialect.normalize(record)
        if message is None:
            # Sent with every call (Codex's prompt), or what the agent reads the file from (pi's header).
            if self.dialect.instructions(record) is not None or self.dialect.heads_file(record):
                self.context.append(Entry(record, raw, line, slow))
                return
            if not self._one_message_per_line or self._manual is None:
                return
            self._compact_manual()  # a line that is no message (anthropic, openai) ends the results
            return
        entry = Entry(record, raw, line, slow)
        if self._manual is not None and not self._continues_results(record, message):
            self._compact_manual()
        if message.get("role") == "assistant":
            if self._is_call(record):
                self._call(line)
            self._remember_compact_calls(message)
            if self.costs and not self.dialect.is_synthetic(record):
                self.output_tokens += self.count([record])
        self.context.append(entry)
        if message.get("role") != "assistant":
            self._answers_compact(line, record)
            if not self.dialect.results_inside_responses:
                self._response_id = None  # the response being recorded is over
        if self._recorded is not None:
            self._finish_recorded()

    def finish(self) -> ReplayResult:
        """The result; the final context gets micro as the next call would (no compaction: whether
        that fires depends on the message the next call is for)."""
        if self._manual is not None:
            self._compact_manual()
        if self._recorded is not None:
            self._finish_recorded()
        self._run_micro()
        return ReplayResult(
            rows=self.rows,
            context=self.context,
            final_tokens=self._tokens(),
            compactions=self.compactions,
            summarizer_calls=self.summarizer_calls,
            api_requests=self.api_requests,
            cleared=self.cleared,
            conversation="sidechain" if self._sidechain else "main",
            output_tokens=self.output_tokens,
        )

    # -- conversations and recorded compactions --------------------------------------------------

    def _joins_context(self, line: int, record: dict, raw: bytes | None, slow: bool) -> bool:
        """Whether the record joins the context as a message; handles recorded compactions. Records
        of other conversations are skipped; so are records that are no message, in dialects whose
        lines are not all messages."""
        dialect = self.dialect
        if self._one_message_per_line and not dialect.has_side_conversations:
            return True
        if self._sidechain is None and dialect.message(record) is not None:
            self._sidechain = dialect.is_side(record)
        if dialect.is_side(record) != bool(self._sidechain):
            return False
        compaction = dialect.compaction(record)
        if compaction == BOUNDARY:
            self._restart_recorded(line)
            kept = [entry for entry in self.context if self._kept_on_top(entry)]
            self.context = [*kept, Entry(record, raw, line, slow)]
            if dialect.restarted_with(record):  # the boundary carries the new context itself
                self._finish_recorded()
            return False
        if dialect.message(record) is None:
            return (
                self._one_message_per_line
                or dialect.instructions(record) is not None
                or dialect.heads_file(record)
            )
        if compaction == SUMMARY:
            after_boundary = len(self.context) == 1 and dialect.compaction(self.context[0].record) == BOUNDARY
            if not after_boundary:  # older Claude Code writes the summary without a boundary; pi's compaction
                self._restart_recorded(line)
                self.context = [entry for entry in self.context if self._kept_on_top(entry)]
            self._recorded = (line, self._recorded[1] if self._recorded else 0)
        return True

    def _restart_recorded(self, line: int) -> None:
        if self._manual is not None:
            self._compact_manual()
        self._recorded = (line, self._tokens() if self.context else 0)

    def _finish_recorded(self) -> None:
        assert self._recorded is not None
        line, before = self._recorded
        self._recorded = None
        after = self._tokens()
        self.rows.append(Row(line, self.turn, before, RECORDED, after))
        self.compactions.append(Compaction(RECORDED, line, before, after))

    def _is_call(self, record: dict) -> bool:
        if self.dialect.is_synthetic(record):
            return False  # an error notice: no response was received
        response_id = self.dialect.call_id(record)
        if response_id is not None and response_id == self._response_id:
            return False  # the rest of a response split over several records
        self._response_id = response_id
        return True

    # -- model calls -----------------------------------------------------------------------------

    def _call(self, line: int) -> None:
        self.turn += 1
        cleared = self._run_micro()
        tokens = self._tokens()
        event, after = None, tokens
        if tokens > self.threshold and self._has_history():
            self._compact(AUTO, line, tokens, focus=None)
            event, after = AUTO, self._tokens()
        cached = self._cached_prefix(after) if self.costs else 0
        self.rows.append(Row(line, self.turn, tokens, event, after, cleared, cached))
        self._sent, self._sent_tokens = list(self.context), after
        self._touched.clear()

    def _cached_prefix(self, sent: int) -> int:
        """Tokens of the longest prefix of the context this call is sent that the previous call was
        sent unchanged: what a prompt cache would serve (docs/design.md, "replay --compare"). Micro
        clearing a result ends the prefix there; a compaction ends it after what stays on top."""
        previous, context = self._sent, self.context
        same = 0
        for before, now in zip(previous, context, strict=False):
            if before is not now or id(now) in self._touched:
                break
            same += 1
        if same == 0:
            return 0
        if same == len(context):
            return sent
        if same == len(previous):  # nothing changed, records were added: the previous call's size
            return self._sent_tokens
        return self.count([entry.record for entry in context[:same]])

    def _run_micro(self) -> int:
        options = self.micro
        if not self.run_micro:
            return 0
        if options.trigger_tokens and self._tokens() <= options.trigger_tokens:
            return 0
        cleared = 0
        dropped: set[int] = set()
        for position, clears in plan_records(self.dialect, self.records(), options).items():
            entry = self.context[position]
            if not micro.apply(self.dialect, entry.record, clears):
                dropped.add(position)  # a strategy drops the record (micro --drop-thinking)
            entry.changed = True
            self._touched.add(id(entry))
            cleared += len(clears)
        if dropped:
            self.context = [entry for position, entry in enumerate(self.context) if position not in dropped]
        self.cleared += cleared
        return cleared

    def records(self) -> list[dict]:
        return [entry.record for entry in self.context]

    def _tokens(self) -> int:
        return self.count([entry.record for entry in self.context])

    # -- manual compaction -----------------------------------------------------------------------

    def _remember_compact_calls(self, message: dict) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") == COMPACT_TOOL
                and isinstance(block.get("id"), str)
            ):
                tool_input = block.get("input")
                focus = tool_input.get(FOCUS_FIELD) if isinstance(tool_input, dict) else None
                self._compact_calls[block["id"]] = focus if isinstance(focus, str) and focus.strip() else None

    def _answers_compact(self, line: int, record: dict) -> None:
        for result in self.dialect.tool_results(record):
            if result.tool_use_id in self._compact_calls and self._manual is None:
                self._manual = (line, self._compact_calls.pop(result.tool_use_id))

    def _continues_results(self, record: dict, message: dict) -> bool:
        """Whether the record is one more tool result of the same batch (a user message of tool results
        only, as an OpenAI tool message normalizes to): the compaction waits until the batch is
        complete, so that no result is left without its call."""
        content = message.get("content")
        return (
            message.get("role") == "user"
            and isinstance(content, list)
            and bool(content)
            and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )

    def _compact_manual(self) -> None:
        assert self._manual is not None
        line, focus = self._manual
        self._manual = None
        before = self._tokens()
        if not self._has_history():
            return
        self._compact(MANUAL, line, before, focus=focus)
        self.rows.append(Row(line, self.turn, before, MANUAL, self.compactions[-1].tokens_after))

    # -- compaction ------------------------------------------------------------------------------

    def _kept_on_top(self, entry: Entry) -> bool:
        """Records kept above the summary (OpenAI system messages: instructions are not paraphrased)."""
        return self.dialect.stays_on_top(entry.record)

    def _summarized(self, expand: bool = True) -> list[dict]:
        """The context's messages for the summarizer. A compaction that carries the new context itself
        gives that context; with `expand` False it stands for one summary message instead."""
        messages = []
        for entry in self.context:
            if self._kept_on_top(entry) or self.dialect.is_synthetic(entry.record):
                continue
            carried = self._carried(entry.record)
            if carried and not expand:
                messages.append({"role": "user", "content": SUMMARY_PREFIX})
                continue
            views = [summarizer_view(self.dialect, record) for record in carried or [entry.record]]
            views = [view for view in views if view is not None]
            if carried and views and views[-1].get("role") == "user":
                views[-1][EARLIER_SUMMARY] = True  # the summary it carries, last (as summarize_file marks it)
            messages.extend(views)
        return messages

    def _carried(self, record: dict) -> list[dict]:
        """For a compaction that carries the new context itself, the records of that context."""
        return self.dialect.restarted_with(record) if self.dialect.compaction(record) == BOUNDARY else []

    def _has_history(self) -> bool:
        """False when the context holds nothing but an earlier summary (compacting again would only
        rewrite it)."""
        messages = self._summarized(expand=False)
        return not nothing_to_summarize(messages, len(messages))

    def _compact(self, kind: str, line: int, tokens: int, *, focus: str | None) -> None:
        # The summary first: a summarizer that fails leaves no archive behind.
        messages = self._summarized()
        earlier = [depth_of(message_text(m)) for m in messages if is_earlier_summary(m)]
        depth = earlier[-1] + 1 if earlier else 1  # as summarize records it
        text = self.summarizer.summarize(messages, focus=focus) + depth_note(depth)
        if user_messages_follow(self.dialect, self.keep_user_messages):
            kept = UserMessages(self.keep_user_messages)
            for message in messages:
                kept.add(message)
            text += after_summary(kept, getattr(self.summarizer, "redact", True))[0]
        self.summarizer_calls += 1
        self.api_requests += int(getattr(self.summarizer, "calls", 0) or 0)
        archive = self.archive(output_entries(self.dialect, self.context))
        records = self.dialect.summary_records(
            summary_text(archive, text),
            context_records=[entry.record for entry in self.context],
            pre_tokens=tokens,
            now=self.now() if self.now else None,
            new_uuid=self.new_uuid,
        )
        for record in records:
            metadata = record.get("compactMetadata")
            if isinstance(metadata, dict):
                metadata["trigger"] = kind  # summary_records writes what a manual /compact writes
        kept = [entry for entry in self.context if self._kept_on_top(entry)]
        summarized = [entry.record for entry in self.context if not self._kept_on_top(entry)]
        self.context = kept + [Entry(record, changed=True) for record in records]
        self._compact_calls.clear()
        compaction = Compaction(kind, line, tokens, self._tokens(), archive, focus, depth=depth)
        if self.costs:
            compaction.summarized_tokens = self.count(summarized)
            compaction.summary_tokens = self.count(records)
        self.compactions.append(compaction)


def replay(
    dialect: Dialect,
    records: Iterable[tuple[int, dict]],
    **options: Any,
) -> ReplayResult:
    """Replay (0-based line, record) pairs; `options` are those of :class:`Replay`."""
    run = Replay(dialect, **options)
    for line, record in records:
        run.add(line, record)
    return run.finish()


# -- writing a context ------------------------------------------------------------------------------


def output_entries(dialect: Dialect, entries: Sequence[Entry]) -> list[Entry]:
    """The entries as a file of their own. In a dialect with a chain (Dialect.link), a record whose
    parent is not there (summarized away, or a skipped record) is linked to the record before it, on
    a copy, so that the chain from the summary to the last record is whole and the session resumes.

    A dialect whose agent appends its compaction after the entries it keeps (Dialect.appends_compactions:
    pi, whose order puts the compaction before them) gets its entries in the order they were written,
    so that the kept entries stay on the path to the compaction; a record the replay made stays after
    the entry before it."""
    if dialect.appends_compactions:
        entries = _as_written(entries)
    out: list[Entry] = []
    seen: set[str] = set()
    previous: str | None = None
    for entry in entries:
        record = entry.record
        uuid, parent = dialect.link(record)
        if parent is not None and parent not in seen:
            record = dict(record)
            dialect.set_parent(record, previous)
            entry = Entry(record, entry.raw, entry.line, entry.slow, changed=True)
        if uuid is not None:
            seen.add(uuid)
            previous = uuid
        out.append(entry)
    return out


def _as_written(entries: Sequence[Entry]) -> list[Entry]:
    """The entries in the order of their input lines; an entry the replay made takes the place of the
    entry before it (the order among them kept)."""
    keys: list[int] = []
    place = -1
    for entry in entries:
        if entry.line is not None:
            place = entry.line
        keys.append(place)
    order = sorted(range(len(entries)), key=lambda i: (keys[i], i))
    return [entries[i] for i in order]


def entry_bytes(entry: Entry, template: bytes = b"") -> bytes:
    """The line for an entry: byte for byte as read when unchanged, else serialized like its own
    line (or like `template`, a line of the input, for records the replay made)."""
    if entry.raw is not None and not entry.changed:
        return entry.raw if entry.raw.endswith(b"\n") else entry.raw + b"\n"
    return jsonio.dumps_like(entry.record, entry.raw or template, entry.slow) + b"\n"
