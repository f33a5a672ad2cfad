"""Prices per million tokens, and what a replayed session costs at them (docs/design.md, "replay
--compare").

`PRICES` holds Anthropic's list prices (USD per million tokens: base input, cache hits, output) for
the models the anthropic SDK names, as published on the Claude pricing page (read 2026-12-01).
Left out: models with no published price (claude-mythos-5-2, claude-mythos-preview) and retired ones
the SDK no longer names (claude-sonnet-4-5, end of life 2026-11-30: pass --price). Cache writes
are billed as plain input here (the API charges 1.25x input for a 5-minute write). Haiku 5.5 is
priced at its band for prompts up to 100,000 tokens; longer prompts cost 5x. Prices change: check
them, and pass your own with --price.
"""

from __future__ import annotations

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


def price_of(model: str | None) -> Price | None:
    """The list price of `model`, None when this table does not know it (another vendor's model, a
    local one)."""
    return PRICES.get(model or "")


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
