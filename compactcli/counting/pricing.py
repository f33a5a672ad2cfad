"""Prices per million tokens, and what a replayed session costs at them (docs/design.md, "replay
--compare").

`PRICES` holds Anthropic's list prices (USD per million tokens: base input, cache hits, output) for
the models the anthropic SDK names, as published on the Claude pricing page (read 2026-12-01).
Left out: models with no published price (claude-mythos-5-2, claude-mythos-preview) and retired ones
the SDK no longer names (claude-sonnet-4-5, end of life 2026-11-30: pass --price). Cache writes
are billed as plain input here (the API charges 1.25x input for a 5-minute write). Haiku 5.5 is
priced at its band for prompts up to 100,000 tokens; longer prompts cost 5x. Prices change: check
them, and pass your own with --price.

`OPENAI_PRICES` holds OpenAI's list prices (standard processing, prompts up to 272,000 input tokens:
above that OpenAI bills the whole request at about twice the input and 1.5 times the output price,
so a summarizer whose requests may be longer gets no list price). Each row is dated by when its price
took effect, from OpenAI's pricing page (developers.openai.com/api/docs/pricing) and price notices as
reported up to 2026-12-01: GPT-5.4 (mini, nano, pro) and GPT-5.5 (pro) unchanged from 2026-06 to
2026-11; GPT-5.6 Terra and Luna from 2026-07-30; GPT-6 Astra from 2026-09-03; GPT-6 Sol and Luna
from 2026-09-22. Left out: models whose current price has no date to cite (GPT-5.6 Sol, whose price
changed after 2026-07-30; GPT-6.1) and the older ones OpenAI no longer lists (GPT-5, GPT-4.1,
GPT-4o): they are unpriced, never priced wrong. A "pro" model has no cache price: its cached input is billed
as input. Dated snapshots (`gpt-5.5-2026-04-23`) are priced as their model. Only OpenAI's own API
bills these: the same name on another server (a gateway, a local model) has no list price here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PER = 1_000_000  # prices are per million tokens

# The anthropic backend's default summarizer model (backends/anthropic.py DEFAULT_MODEL; a test keeps
# the two equal, so that this module does not load the backend).
DEFAULT_PRICE_MODEL = "claude-sonnet-5-5"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    cached: float  # input served from the prompt cache
    output: float

    def __str__(self) -> str:
        return f"{self.input:g},{self.cached:g},{self.output:g}"


PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(8, 0.20, 40),
    "claude-haiku-5-5": Price(0.10, 0.01, 0.50),
    "claude-sonnet-5-5": Price(2, 0.10, 10),
    "claude-fable-5-1": Price(10, 0.25, 50),
    "claude-opus-5-5": Price(4, 0.20, 20),
    "claude-mythos-5-1": Price(10, 0.25, 50),
    "claude-sonnet-5": Price(2, 0.20, 10),
    "claude-fable-5": Price(10, 1, 50),
    "claude-mythos-5": Price(10, 1, 50),
    "claude-opus-5": Price(5, 0.50, 25),
    "claude-opus-4-8": Price(5, 0.50, 25),
    "claude-opus-4-7": Price(5, 0.50, 25),
    "claude-opus-4-6": Price(5, 0.50, 25),
    "claude-sonnet-4-6": Price(3, 0.30, 15),
    "claude-haiku-4-5": Price(1, 0.10, 5),
    "claude-haiku-4-5-20251001": Price(1, 0.10, 5),
    "claude-opus-4-5": Price(5, 0.50, 25),
    "claude-opus-4-5-20251101": Price(5, 0.50, 25),
}


# USD per million tokens: input, cached input, output (see above for the dates).
OPENAI_PRICES: dict[str, Price] = {
    "gpt-6-sol": Price(2, 0.20, 10),  # from 2026-09-22
    "gpt-6-luna": Price(0.10, 0.01, 0.50),  # from 2026-09-22
    "gpt-6-astra": Price(10, 1, 50),  # from 2026-09-03
    "gpt-5.6-terra": Price(2, 0.20, 12),  # from 2026-07-30
    "gpt-5.6-luna": Price(0.20, 0.02, 1.20),  # from 2026-07-30
    "gpt-5.5": Price(5, 0.50, 30),
    "gpt-5.5-pro": Price(30, 30, 180),
    "gpt-5.4": Price(2.50, 0.25, 15),
    "gpt-5.4-mini": Price(0.75, 0.075, 4.50),
    "gpt-5.4-nano": Price(0.20, 0.02, 1.25),
    "gpt-5.4-pro": Price(30, 30, 180),
}
# Input tokens per request up to which OPENAI_PRICES hold (longer requests cost more).
OPENAI_LONG_CONTEXT = 272_000
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_of(model: str | None) -> Price | None:
    """The Anthropic list price of `model`, None when this table does not know it (another vendor's
    model, a local one)."""
    return PRICES.get(model or "")


def openai_price(model: str | None, request_tokens: int) -> Price | None:
    """OpenAI's list price of `model` (a dated snapshot as its model) for requests of at most
    `request_tokens` input tokens; None when the table does not know the model or a request may be
    long enough to be billed at the long-context rate."""
    if request_tokens > OPENAI_LONG_CONTEXT:
        return None
    name = model or ""
    return OPENAI_PRICES.get(name) or OPENAI_PRICES.get(_SNAPSHOT.sub("", name))


def cost_usd(price: Price, input_tokens: int, output_tokens: int) -> float:
    """USD of uncached input and output at `price` (a summary request caches nothing)."""
    return (input_tokens * price.input + output_tokens * price.output) / PER


def parse_price(text: str) -> Price:
    """`IN,CACHED,OUT` (USD per million tokens, each >= 0); ValueError says what is wrong."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 3:
        raise ValueError(f"{text!r}: give three prices, INPUT,CACHED_INPUT,OUTPUT per million tokens")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"{part!r} is not a number (give INPUT,CACHED_INPUT,OUTPUT)") from None
        if not value >= 0 or value == float("inf"):  # also refuses nan
            raise ValueError(f"{part!r}: a price is a finite number >= 0")
        values.append(value)
    return Price(*values)


@dataclass(frozen=True)
class Bill:
    """The tokens a session sends and receives, and what they cost at `price`."""

    input_tokens: int  # every model call's whole context, cached part included
    cached_tokens: int  # the part of input_tokens served from the cache
    output_tokens: int
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0

    def cost(self, price: Price) -> float:
        """USD: uncached input at the input price, cached input at the cache price, outputs at the
        output price; the summarizer's requests are uncached input and output at the same prices."""
        fresh = self.input_tokens - self.cached_tokens + self.summarizer_input_tokens
        outputs = self.output_tokens + self.summarizer_output_tokens
        return (fresh * price.input + self.cached_tokens * price.cached + outputs * price.output) / PER
