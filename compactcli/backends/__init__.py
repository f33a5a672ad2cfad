"""Summarizer backends behind one small interface (compactcli.layers.summarize.Summarizer).

- a model writes the summary (:class:`ModelSummarizer`), through one of the backends in
  MODEL_BACKENDS, each a :class:`compactcli.backends.base.Backend` that makes one request:
  `anthropic` (the Messages API, :mod:`compactcli.backends.anthropic`), `openai` (any OpenAI-compatible
  server, :mod:`compactcli.backends.openai`), `claude-code` and `codex` (the user's own agent CLI in
  print mode, :mod:`compactcli.backends.agent_cli`). Long transcripts are summarized in parts, then
  combined; that and redaction are ModelSummarizer's, the same for all (docs/design.md, "Backends").
- `digest` (:mod:`compactcli.backends.digest`): an offline, deterministic digest, no model involved.
- `auto`: `anthropic` when an API key or auth token is set, else `digest`.

Nothing here imports an SDK or runs a program: that happens on the first request.
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from compactcli.backends.base import Backend, Reply
from compactcli.core import redact as redaction
from compactcli.core.constants import BACKENDS, DEFAULT_MAX_INPUT_TOKENS, DEFAULT_SUMMARY_TOKENS
from compactcli.counting.pricing import Price, price_of
from compactcli.layers.summarize import (
    PROMPT_OVERHEAD,
    SYSTEM_PROMPT,
    Rendered,
    combine_prompt,
    incremental_prompt,
    part_prompt,
    render,
    single_prompt,
    split_parts,
    text_tokens,
)

# --backend NAME -> "module:function" that makes its Backend from the summarizer settings (a sixth
# backend adds itself here and to core.constants.BACKENDS).
MODEL_BACKENDS = {
    "anthropic": "compactcli.backends.anthropic:make_backend",
    "openai": "compactcli.backends.openai:make_backend",
    "claude-code": "compactcli.backends.agent_cli:claude_code",
    "codex": "compactcli.backends.agent_cli:codex",
}


def resolve_backend(backend: str) -> str:
    """A backend's name; `auto` is `anthropic` when credentials are set, else `digest`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
    from compactcli.backends.anthropic import have_credentials

    return "anthropic" if have_credentials() else "digest"


def make_summarizer(
    backend: str,
    *,
    model: str | None = None,
    summary_tokens: int = DEFAULT_SUMMARY_TOKENS,
    timeout: float | None = None,
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
    max_retries: int = 2,
    redact: bool = True,
    base_url: str | None = None,
    openai_api: str = "chat",
) -> ModelSummarizer | Any:
    """A summarizer for `backend` (one of core.constants.BACKENDS); `.name` says which (`auto`
    resolved). Nothing is sent before the first `summarize` call. A backend that needs a setting it
    was not given (openai's --model) raises ValueError saying which. `base_url` and `openai_api`
    (chat or responses) are the openai backend's; the others take no such choice."""
    name = resolve_backend(backend)
    if name == "digest":
        from compactcli.backends.digest import DigestSummarizer

        return DigestSummarizer(redact=redact)
    module, _, function = MODEL_BACKENDS[name].partition(":")
    make = getattr(importlib.import_module(module), function)
    made: Backend = make(
        model=model, timeout=timeout, max_retries=max_retries, base_url=base_url, api=openai_api
    )
    return ModelSummarizer(
        backend=made,
        summary_tokens=summary_tokens,
        max_input_tokens=max_input_tokens,
        redact=redact,
    )


@dataclass
class Usage:
    """Tokens of the requests of one `summarize`: as the server counted them, else estimated."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    estimated: int = 0  # requests whose server gave no usage: their tokens are the estimate
    model: str | None = None  # the model that answered, when a reply said

    def add(self, system: str, user: str, reply: Reply) -> None:
        self.requests += 1
        self.model = reply.model or self.model
        if reply.input_tokens is None or reply.output_tokens is None:
            self.estimated += 1
        sent = reply.input_tokens
        self.input_tokens += sent if sent is not None else text_tokens(system) + text_tokens(user)
        written = reply.output_tokens
        self.output_tokens += written if written is not None else text_tokens(reply.text)


@dataclass
class ModelSummarizer:
    """Summaries by a model, through `backend` (compactcli.backends.base.Backend).

    The transcript is rendered as text (secrets redacted unless `redact` is off), fenced in
    <transcript> tags in the user turn; the system prompt says that what is inside is data. When it
    is over `max_input_tokens`, it is summarized in parts that each carry the task (the first user
    message), and the part summaries are combined (in rounds, if they do not fit one request).
    The reply is redacted too. `usage` adds up the tokens of the last `summarize`'s requests.

    Picklable (for --jobs): a backend makes its client on its first request in each process.
    """

    backend: Backend
    summary_tokens: int = DEFAULT_SUMMARY_TOKENS
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS
    redact: bool = True
    price: Price | None = None  # --price: what the user pays, over any list price
    redactions: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model(self) -> str | None:
        return self.backend.model

    @property
    def calls(self) -> int:
        """Requests made by the last summarize."""
        return self.usage.requests

    @property
    def timeout(self) -> float | None:
        return getattr(self.backend, "timeout", None)

    @property
    def max_retries(self) -> int:
        return getattr(self.backend, "max_retries", 2)

    def ready(self) -> None:
        self.backend.ready()

    def price_for(self, model: str | None) -> tuple[Price | None, str]:
        """The price of `model`'s tokens and where it comes from: `settings` (--price), else `list`:
        the backend's list price (Backend.list_price, for requests of up to max_input_tokens), or
        for a backend without one the Anthropic list by the model's name. None: unknown (a local
        server, a gateway, a model no list names), never a guess."""
        if self.price is not None:
            return self.price, "settings"
        list_price = getattr(self.backend, "list_price", None)
        if list_price is not None:
            return list_price(model, self.max_input_tokens), "list"
        return price_of(model), "list"

    def describe(self) -> str:
        return self.backend.describe()

    # -- the interface ---------------------------------------------------------------------

    def summarize(self, messages: Iterable[dict], *, focus: str | None = None) -> str:
        rendered = render(messages, redact=self.redact)
        self.redactions = rendered.redactions
        self.usage = Usage()
        return self.summarize_rendered(rendered, focus=focus)

    # -- the rest --------------------------------------------------------------------------

    @property
    def budget(self) -> int:
        """Tokens of transcript one request may carry."""
        return max(self.max_input_tokens - PROMPT_OVERHEAD, 1_000)

    def single_request(self, messages: Iterable[dict], *, focus: str | None = None) -> tuple[str, str] | None:
        """(system, user) of the one request that summarizes `messages`, or None when they need parts.
        Sets `redactions` like `summarize`."""
        rendered = render(messages, redact=self.redact)
        self.redactions = rendered.redactions
        previous = rendered.previous
        size = sum(text_tokens(chunk) for chunk in rendered.chunks) + (
            text_tokens(previous) if previous else 0
        )
        if size > self.budget:
            return None
        if previous is not None:
            return SYSTEM_PROMPT, incremental_prompt(previous, "".join(rendered.chunks), focus)
        return SYSTEM_PROMPT, single_prompt("".join(rendered.chunks), focus)

    def summarize_rendered(self, rendered: Rendered, *, focus: str | None = None) -> str:
        previous = rendered.previous
        size = sum(text_tokens(chunk) for chunk in rendered.chunks)
        if previous is not None and size + text_tokens(previous) <= self.budget:
            # Compacted before: the last summary and what followed, merged (docs/design.md,
            # "Summaries that build on the last one").
            return self._call(incremental_prompt(previous, "".join(rendered.chunks), focus))
        if previous is None and size <= self.budget:
            return self._call(single_prompt("".join(rendered.chunks), focus))
        task = rendered.task
        room = self.budget - (text_tokens(task) if task else 0)
        parts = split_parts(rendered.chunks, room)
        summaries = [
            self._call(part_prompt(task, part, number, len(parts), focus))
            for number, part in enumerate(parts, 1)
        ]
        # The earlier summary is the summary of what came before the first part.
        return self._combine(task, ([previous] if previous is not None else []) + summaries, focus)

    def _combine(self, task: str | None, summaries: list[str], focus: str | None) -> str:
        room = self.budget - (text_tokens(task) if task else 0)
        while True:
            costs = [text_tokens(s) for s in summaries]
            if sum(costs) <= room or len(summaries) <= 2:
                return self._call(combine_prompt(task, summaries, focus))
            # Too many for one request: combine neighbours in groups of at least two, then again.
            groups: list[list[str]] = [[]]
            size = 0
            for text, cost in zip(summaries, costs, strict=True):
                if len(groups[-1]) >= 2 and size + cost > room:
                    groups.append([])
                    size = 0
                groups[-1].append(text)
                size += cost
            summaries = [
                self._call(combine_prompt(task, group, focus)) if len(group) > 1 else group[0]
                for group in groups
            ]
            if len(summaries) == 1:
                return summaries[0]

    def _call(self, user: str) -> str:
        # The one place every backend's request passes: what is sent is redacted (docs/design.md,
        # "Secrets"); the rendered transcript was redacted before, so this pass finds only the prompt's.
        request, _ = redaction.redact_request(
            {"system": SYSTEM_PROMPT, "messages": [{"role": "user", "content": user}]}, enabled=self.redact
        )
        user = request["messages"][0]["content"]
        reply = self.backend.complete(request["system"], user, self.summary_tokens)
        self.usage.add(SYSTEM_PROMPT, user, reply)
        if not self.redact:
            return reply.text
        # A model may repeat a secret it was shown elsewhere, or make one up: the reply is written
        # into the transcript, so it is redacted like what was sent.
        text, found = redaction.redact(reply.text)
        self.redactions.update(found)
        return text
