"""Summarizer backends behind one small interface (compactcli.layers.summarize.Summarizer).

- `anthropic` (:class:`ModelSummarizer`): a model writes the summary, through the official SDK
  (:mod:`compactcli.backends.anthropic`). Long transcripts are summarized in parts, then combined.
- `digest` (:mod:`compactcli.backends.digest`): an offline, deterministic digest, no model involved.
- `auto`: `anthropic` when an API key or auth token is set, else `digest`.

Nothing here imports the SDK: that happens on the first API call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from compactcli.core import redact as redaction
from compactcli.core.constants import BACKENDS, DEFAULT_MAX_INPUT_TOKENS, DEFAULT_SUMMARY_TOKENS
from compactcli.layers.summarize import (
    PROMPT_OVERHEAD,
    SYSTEM_PROMPT,
    Rendered,
    combine_prompt,
    part_prompt,
    render,
    single_prompt,
    split_parts,
    text_tokens,
)


def resolve_backend(backend: str) -> str:
    """`anthropic` or `digest`; `auto` is `anthropic` when credentials are set."""
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
) -> ModelSummarizer | Any:
    """A summarizer for `backend` (`auto`, `anthropic` or `digest`).

    `auto` is resolved here: `anthropic` when an API key or auth token is set, else `digest`;
    `.name` says which. Nothing is sent before the first `summarize` call.
    """
    if resolve_backend(backend) == "digest":
        from compactcli.backends.digest import DigestSummarizer

        return DigestSummarizer(redact=redact)
    from compactcli.backends.anthropic import resolve_model

    return ModelSummarizer(
        model=resolve_model(model),
        summary_tokens=summary_tokens,
        timeout=timeout,
        max_input_tokens=max_input_tokens,
        max_retries=max_retries,
        redact=redact,
    )


@dataclass
class ModelSummarizer:
    """Summaries by a model through the Messages API.

    The transcript is rendered as text (secrets redacted unless `redact` is off), fenced in
    <transcript> tags in the user turn; the system prompt says that what is inside is data. When it
    is over `max_input_tokens`, it is summarized in parts that each carry the task (the first user
    message), and the part summaries are combined (in rounds, if they do not fit one request).

    Picklable (for --jobs): the SDK client is made on the first call in each process.
    """

    model: str
    summary_tokens: int = DEFAULT_SUMMARY_TOKENS
    timeout: float | None = None
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS
    max_retries: int = 2
    redact: bool = True
    name: str = "anthropic"
    redactions: Counter[str] = field(default_factory=Counter)
    calls: int = 0  # API calls made by the last summarize
    _client: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    # -- the interface ---------------------------------------------------------------------

    def summarize(self, messages: Iterable[dict], *, focus: str | None = None) -> str:
        rendered = render(messages, redact=self.redact)
        self.redactions = rendered.redactions
        self.calls = 0
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
        if sum(text_tokens(chunk) for chunk in rendered.chunks) > self.budget:
            return None
        return SYSTEM_PROMPT, single_prompt("".join(rendered.chunks), focus)

    def summarize_rendered(self, rendered: Rendered, *, focus: str | None = None) -> str:
        if sum(text_tokens(chunk) for chunk in rendered.chunks) <= self.budget:
            return self._call(single_prompt("".join(rendered.chunks), focus))
        task = rendered.task
        room = self.budget - (text_tokens(task) if task else 0)
        parts = split_parts(rendered.chunks, room)
        summaries = [
            self._call(part_prompt(task, part, number, len(parts), focus))
            for number, part in enumerate(parts, 1)
        ]
        return self._combine(task, summaries, focus)

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
        from compactcli.backends import anthropic as api

        if self._client is None:
            self._client = api.make_client(timeout=self.timeout, max_retries=self.max_retries)
        self.calls += 1
        reply = api.complete(
            self._client,
            model=self.model,
            system=SYSTEM_PROMPT,
            user=user,
            max_tokens=self.summary_tokens,
            redact=self.redact,
        )
        if not self.redact:
            return reply
        # A model may repeat a secret it was shown elsewhere, or make one up: the reply is written
        # into the transcript, so it is redacted like what was sent.
        reply, found = redaction.redact(reply)
        self.redactions.update(found)
        return reply
