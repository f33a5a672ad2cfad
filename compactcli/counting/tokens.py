"""Token estimators over messages.

Two estimators:

* ``seed``: ``len(str(messages)) // 4`` over the message objects exactly as ``json.loads``
  returns them, the formula of the reference agent loop. :class:`SeedCounter` computes it one
  message at a time, without holding the list.
* ``heuristic``: an estimate of the input tokens the model is billed for the messages. Text is
  priced by character class (ASCII letters, dense characters such as digits and punctuation,
  whitespace, and non-ASCII by UTF-8 length), blocks carry a fixed framing cost, tool inputs are
  priced as their JSON, and images by their pixel size read from the image header. The
  constants below were fitted against the usage recorded in real Claude Code sessions
  (``scripts/calibrate.py``); their measured error is in the README.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from zlib import adler32

import orjson

CATEGORIES = ("text", "tool_inputs", "tool_results", "thinking", "images")
_TEXT, _TOOL_IN, _TOOL_OUT, _THINK, _IMAGE = range(5)

# --- heuristic constants (tokens) --------------------------------------------------------------
# Fitted (least relative error) to the context growth recorded in real Claude Code sessions;
# rounded. Per character, by class: English words run 4-7 letters a token; digits,
# punctuation and newlines mostly start a new token (JSON, code, numbered file listings are
# dense); runs of spaces (indentation) merge into few tokens.
LETTER = 0.145
DENSE = 1.2  # ASCII digits, punctuation, newline and control characters
SPACE = 0.11  # ASCII whitespace other than newline
DENSE_RUN = -2.0  # per run of four dense characters: "====", "----", "\n\n\n\n" are 1-2 tokens
# Non-ASCII, per character, by UTF-8 lead byte (too rare in the sessions to fit; set from the
# usual behaviour of byte-pair tokenizers).
TWO_BYTE = 0.5  # Latin accents, Greek, Cyrillic, Hebrew, Arabic: about 2 characters a token
SYMBOL = 0.52  # U+0800-U+2FFF: punctuation, arrows, box drawing (fitted: "→" in file listings)
CJK = 1.0  # U+3000-U+DFFF and fullwidth forms: Chinese, Japanese, Korean are ~1 token a char
FOUR_BYTE = 1.5  # emoji and other astral characters: 1-3 tokens each
# Framing, per item (fitted).
MESSAGE_OVERHEAD = 3  # role marker and turn separator
TOOL_USE_OVERHEAD = 28  # the function-call wrapper around a tool_use block
TOOL_PARAM_OVERHEAD = 15  # each top-level input field is wrapped as a named parameter
TOOL_RESULT_OVERHEAD = 28  # the result wrapper around a tool_result block
# Redacted thinking carries encrypted base64: about 3 bytes of text per 4 characters, and
# 4 bytes of text per token.
REDACTED_THINKING_PER_CHAR = 0.19
# Thinking logged without its text (Claude Code 2.1 with Opus 4.6 and later writes "thinking": ""
# and the signature) was still thought and is sent back: the signature carries it encrypted. Fitted
# on the thinking blocks that log both (tokens of the text against the signature's length): about
# 0.18 tokens per character past the ~280 characters of an almost empty thought's signature.
SIGNATURE_PER_CHAR = 0.18
SIGNATURE_BASE_CHARS = 280
# A tool_reference block (a tool_result of Claude Code's ToolSearch) loads a deferred tool's
# definition into the context: its name in the log, its whole schema in what the model is sent.
# Fitted on the first half of the one session that has them (5 references: 878-2,349 tokens each,
# pooled 1,300); docs/design.md, "Estimate".
TOOL_REFERENCE_TOKENS = 1300
# Opus 4.7's tokenizer makes more tokens of the same text than the earlier models' (Anthropic: 1.0
# to 1.35 times). Fitted on the intervals of the first half of an Opus 4.7 session that hold only
# tool calls and results (median 1.20), where nothing the log omits is sent. The heuristic's
# constants were fitted on the earlier tokenizer: its count is scaled for these models.
_TOKENIZER_SCALES = ((re.compile(r"claude-opus-4-7"), 1.2),)
# Images: Anthropic prices an image at width*height/750 tokens after scaling it down to fit a
# 1568 px long edge and about 1.15 megapixels (about 1600 tokens).
IMAGE_PIXELS_PER_TOKEN = 750
IMAGE_MAX_EDGE = 1568
IMAGE_MAX_TOKENS = 1600
IMAGE_FALLBACK_TOKENS = 1600  # size unknown (URL, file id, unreadable header): a full-size image
PDF_PAGE_TOKENS = 2000  # a PDF page is sent as its text and an image of the page


# --- seed ----------------------------------------------------------------------------------------


class SeedCounter:
    """``len(str(messages)) // 4``, fed one message at a time.

    ``str(list)`` is ``"[" + ", ".join(repr(m) for m in items) + "]"``, so the length is
    2 + the sum of ``len(repr(m))`` + 2 per separator.
    """

    __slots__ = ("_reprs", "_count")

    def __init__(self) -> None:
        self._reprs = 0
        self._count = 0

    def add(self, message: object) -> None:
        self.add_repr_length(len(repr(message)))

    def add_repr_length(self, length: int) -> None:
        """A message given by the length of its repr."""
        self._reprs += length
        self._count += 1

    def reset(self) -> None:
        self._reprs = 0
        self._count = 0

    @property
    def chars(self) -> int:
        separators = 2 * (self._count - 1) if self._count else 0
        return 2 + self._reprs + separators

    @property
    def tokens(self) -> int:
        return self.chars // 4


def seed_tokens(messages: Iterable[object]) -> int:
    """The reference formula ``len(str(messages)) // 4``."""
    counter = SeedCounter()
    for message in messages:
        counter.add(message)
    return counter.tokens


# --- character classes -----------------------------------------------------------------------------


# Each byte becomes a byte naming its class: the sum of the class bytes (zlib's adler32 sums bytes
# many times faster than anything else in the standard library) is letters + 2 x spaces + the non-ASCII
# bytes' codes, and a second translation to 1 for letters, 0 else, sums to the letters. Dense characters
# are zero bytes, so a run of four is four zero bytes.
_DENSE, _LETTER, _SPACE, _TWO, _SYMBOL, _CJK, _FOUR, _CONTINUATION = range(8)
_DENSE_RUN = bytes([_DENSE]) * 4
_ASCII_CLASSES = bytes([_LETTER, _SPACE, _DENSE])
# adler32's byte sum is modulo 65521: slices this long keep it exact.
_SUM_SLICE = 65520 // _CONTINUATION


def _class_table() -> bytes:
    table = bytearray(256)
    for byte in range(256):
        if byte < 128:
            char = chr(byte)
            if char.isalpha():
                code = _LETTER
            elif char.isspace() and char != "\n":
                code = _SPACE
            else:
                code = _DENSE
        elif byte < 0xC0:
            code = _CONTINUATION  # the character is counted at its lead byte
        elif byte < 0xE0:
            code = _TWO
        elif byte < 0xE3 or byte == 0xEE:
            code = _SYMBOL
        elif byte < 0xF0:
            code = _CJK
        else:
            code = _FOUR
        table[byte] = code
    return bytes(table)


_TABLE = _class_table()
_LETTERS = bytes(int(code == _LETTER) for code in _TABLE)


def _byte_sum(data: bytes) -> int:
    if len(data) <= _SUM_SLICE:
        return (adler32(data) & 0xFFFF) - 1
    view = memoryview(data)
    return sum(
        (adler32(view[start : start + _SUM_SLICE]) & 0xFFFF) - 1 for start in range(0, len(data), _SUM_SLICE)
    )


def _bytes_cost(raw: bytes) -> float:
    """Tokens for UTF-8 text, from counts of its character classes."""
    size = len(raw)
    if not size:
        return 0.0
    classes = raw.translate(_TABLE)
    weighted = _byte_sum(classes)
    letters = _byte_sum(raw.translate(_LETTERS))
    runs = classes.count(_DENSE_RUN)
    if raw.isascii():
        spaces = (weighted - letters) >> 1
        return LETTER * letters + SPACE * spaces + DENSE_RUN * runs + DENSE * (size - letters - spaces)
    # Non-ASCII is usually sparse: count its classes in what is left without the ASCII ones.
    rest = classes.translate(None, _ASCII_CLASSES)
    two = rest.count(_TWO)
    symbol = rest.count(_SYMBOL)
    cjk = rest.count(_CJK)
    four = rest.count(_FOUR)
    continuation = len(rest) - two - symbol - cjk - four
    non_ascii = _TWO * two + _SYMBOL * symbol + _CJK * cjk + _FOUR * four + _CONTINUATION * continuation
    spaces = (weighted - non_ascii - letters) >> 1
    dense = size - len(rest) - letters - spaces
    cost = LETTER * letters + SPACE * spaces + DENSE_RUN * runs
    return cost + DENSE * dense + TWO_BYTE * two + SYMBOL * symbol + CJK * cjk + FOUR_BYTE * four


def _text_cost(text: object) -> float:
    if isinstance(text, str):
        try:
            raw = text.encode()
        except UnicodeEncodeError:  # a lone surrogate, which json.loads lets through
            raw = text.encode("utf-8", "surrogatepass")
        return _bytes_cost(raw)
    if text is None:
        return 0.0
    return _json_cost(text)


def _json_bytes(value: object) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        # Integers beyond 64 bits, lone surrogates, non-string keys: the stdlib copes.
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        return text.encode("utf-8", "surrogatepass")


def _json_cost(value: object) -> float:
    return _bytes_cost(_json_bytes(value))


# --- images --------------------------------------------------------------------------------------

_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, JPEG, GIF or WebP header; None if unreadable."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
        if data[:2] == b"\xff\xd8":
            return _jpeg_size(data)
    except struct.error:
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":  # lossy: 14-bit sizes after the key frame start code
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14-bit width-1 and height-1, bit-packed
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit canvas width-1 and height-1
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    pos = 2
    end = len(data)
    while pos + 9 <= end:
        if data[pos] != 0xFF:
            pos += 1
            continue
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:  # markers without a length
            pos += 2
            continue
        if marker in _JPEG_SOF:
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            return width, height
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        pos += 2 + length
    return None


def _b64decode(text: str) -> bytes | None:
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return None


def _image_data(source: dict) -> str | None:
    """The base64 payload of an image source (base64 or a data: URL), else None."""
    kind = source.get("type")
    if kind == "base64":
        data = source.get("data")
        return data if isinstance(data, str) else None
    if kind == "url":
        url = source.get("url")
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url[:100]:
            return url.partition(",")[2]
    return None


def _decoded_size(data: str) -> tuple[int, int] | None:
    # Most headers sit in the first bytes; a JPEG's frame header can follow large EXIF or ICC
    # segments, so fall back to decoding everything.
    head = _b64decode(data[:1024])
    size = image_size(head) if head else None
    if size is None and len(data) > 1024:
        whole = _b64decode(data)
        size = image_size(whole) if whole else None
    return size


def pixel_tokens(width: int, height: int) -> int:
    """Tokens for an image of this size, after Anthropic's downscaling."""
    if width <= 0 or height <= 0:
        return IMAGE_FALLBACK_TOKENS
    scale = min(1.0, IMAGE_MAX_EDGE / max(width, height))
    tokens = (width * scale) * (height * scale) / IMAGE_PIXELS_PER_TOKEN
    return max(1, min(IMAGE_MAX_TOKENS, round(tokens)))


def image_tokens(block: dict) -> int:
    """Tokens for an image block, from the pixel size in its header (never the base64 length).

    Falls back to IMAGE_FALLBACK_TOKENS when the size is unknown (URL or file sources, an
    unreadable header).
    """
    source = block.get("source")
    data = _image_data(source) if isinstance(source, dict) else None
    size = _decoded_size(data) if data else None
    if size is None:
        return IMAGE_FALLBACK_TOKENS
    return pixel_tokens(*size)


_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def _document_cost(block: dict, acc: list[float]) -> None:
    source = block.get("source")
    if not isinstance(source, dict):
        acc[_TEXT] += _json_cost(block)
        return
    kind = source.get("type")
    if kind == "text":
        acc[_TEXT] += _text_cost(source.get("data"))
    elif kind == "content":
        _content_cost(source.get("content"), acc, _TEXT)
    elif kind == "base64" and isinstance(source.get("data"), str):
        raw = _b64decode(source["data"]) or b""
        acc[_IMAGE] += PDF_PAGE_TOKENS * max(1, len(_PDF_PAGE.findall(raw)))
    else:
        acc[_IMAGE] += PDF_PAGE_TOKENS


# --- heuristic -----------------------------------------------------------------------------------


# The cost of each tool name seen: a session calls a few tools thousands of times.
_NAME_COSTS: dict[str, float] = {}
_NAME_COSTS_MAX = 4096


def _name_cost(name: object) -> float:
    if name.__class__ is not str:
        return _text_cost(name)
    cost = _NAME_COSTS.get(name)  # type: ignore[call-overload]
    if cost is None:
        cost = _text_cost(name)
        if len(_NAME_COSTS) < _NAME_COSTS_MAX:
            _NAME_COSTS[name] = cost  # type: ignore[index]
    return cost


def _tool_use_cost(block: dict) -> float:
    tool_input = block.get("input")
    params = len(tool_input) if isinstance(tool_input, dict) else 1
    framing = TOOL_USE_OVERHEAD + TOOL_PARAM_OVERHEAD * params
    return framing + _name_cost(block.get("name")) + _json_cost(tool_input)


def _content_cost(content: Any, acc: list[float], category: int) -> None:
    """Add the cost of a message's (or a tool result's) content to acc, by category."""
    if isinstance(content, str):
        acc[category] += _text_cost(content)
        return
    if not isinstance(content, list):
        if content is not None:
            acc[category] += _json_cost(content)
        return
    for block in content:
        if not isinstance(block, dict):
            acc[category] += _text_cost(block)
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if text.__class__ is str and text.isascii():  # the common case, without a call
                acc[category] += _bytes_cost(text.encode())
            else:
                acc[category] += _text_cost(text)
        elif kind == "tool_result":
            acc[_TOOL_OUT] += TOOL_RESULT_OVERHEAD
            result = block.get("content")
            if result.__class__ is str:  # the common case, without the recursion
                acc[_TOOL_OUT] += _text_cost(result)
            else:
                _content_cost(result, acc, _TOOL_OUT)
        elif kind in ("tool_use", "server_tool_use"):
            acc[_TOOL_IN] += _tool_use_cost(block)
        elif kind == "thinking":
            thinking = block.get("thinking")
            if thinking or not isinstance(block.get("signature"), str):
                # The signature is opaque to the model and not billed as text.
                acc[_THINK] += _text_cost(thinking)
            else:  # the text was not logged: what the signature carries
                unlogged = len(block["signature"]) - SIGNATURE_BASE_CHARS
                acc[_THINK] += SIGNATURE_PER_CHAR * max(0, unlogged)
        elif kind == "redacted_thinking":
            data = block.get("data")
            acc[_THINK] += REDACTED_THINKING_PER_CHAR * len(data) if isinstance(data, str) else 0
        elif kind == "tool_reference":
            acc[_TOOL_OUT] += TOOL_REFERENCE_TOKENS
        elif kind == "image":
            acc[_IMAGE] += image_tokens(block)
        elif kind == "document":
            _document_cost(block, acc)
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            acc[_TOOL_OUT] += TOOL_RESULT_OVERHEAD + _json_cost(block.get("content"))
        else:
            acc[category] += _json_cost(block)


def message_costs(message: object) -> list[float]:
    """Unrounded tokens of one normalized message, by category (in the order of CATEGORIES)."""
    acc = [float(MESSAGE_OVERHEAD), 0.0, 0.0, 0.0, 0.0]
    content = message.get("content") if isinstance(message, dict) else message
    _content_cost(content, acc, _TEXT)
    return acc


def message_tokens(message: dict) -> dict[str, int]:
    """Estimated input tokens of one normalized message, by category (see CATEGORIES)."""
    costs = message_costs(message)
    return {name: max(0, round(value)) for name, value in zip(CATEGORIES, costs, strict=True)}


def starts_turn(message: dict) -> bool:
    """A user message that carries more than tool results: a new turn of the conversation."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return True
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            return True
    return False


_STRIPS_THINKING = re.compile(r"claude-(3-7-sonnet|(sonnet|opus)-4-\d{8}|sonnet-4-5|opus-4-1|haiku-4-5)")


def thinking_persists(model: str | None) -> bool:
    """Whether the model keeps thinking blocks of earlier turns in its context.

    Claude 3.7 and the Claude 4 models before Opus 4.5 drop them once a new user turn starts;
    Opus 4.5 and later keep them. Unknown models are assumed to keep them.
    """
    return not (isinstance(model, str) and _STRIPS_THINKING.search(model))


def tokenizer_scale(model: str | None) -> float:
    """How many tokens the model's tokenizer makes of what the heuristic's constants count as one
    (1.0 for the models they were fitted on, and for unknown ones)."""
    if isinstance(model, str):
        for pattern, scale in _TOKENIZER_SCALES:
            if pattern.search(model):
                return scale
    return 1.0


@lru_cache(maxsize=64)
def model_traits(model: str | None) -> tuple[bool, float]:
    """(thinking_persists, tokenizer_scale) of a model: what HeuristicCounter.use_model sets."""
    return thinking_persists(model), tokenizer_scale(model)


class HeuristicCounter:
    """The heuristic estimate, fed one normalized message at a time.

    With ``keep_thinking=False`` the thinking of earlier turns is dropped when a new user turn
    starts, as models that strip it do (see :func:`thinking_persists`). ``scale`` is the tokenizer's
    (:func:`tokenizer_scale`): the model that is called next reads the whole context with it.
    """

    __slots__ = ("keep_thinking", "scale", "_totals", "_turn_thinking")

    def __init__(self, keep_thinking: bool = True, scale: float = 1.0) -> None:
        self.keep_thinking = keep_thinking
        self.scale = scale
        self._totals = [0.0] * len(CATEGORIES)
        self._turn_thinking = 0.0

    def use_traits(self, traits: tuple[bool, float]) -> None:
        """A model's :func:`model_traits`: how it keeps thinking, how its tokenizer counts."""
        self.keep_thinking, self.scale = traits

    def add(self, message: dict) -> None:
        self.add_costs(message_costs(message), starts_turn(message))

    def add_costs(self, costs: list[float], new_turn: bool) -> None:
        """A message already priced: its :func:`message_costs`, and whether it starts a turn."""
        # Track the current turn's thinking either way, so keep_thinking may change mid-way
        # (a session whose model changes).
        if new_turn:
            if not self.keep_thinking:
                self._totals[_THINK] -= self._turn_thinking
            self._turn_thinking = 0.0
        self._turn_thinking += costs[_THINK]
        totals = self._totals
        totals[0] += costs[0]  # unrolled over CATEGORIES: a loop costs more than the additions
        totals[1] += costs[1]
        totals[2] += costs[2]
        totals[3] += costs[3]
        totals[4] += costs[4]

    def reset(self) -> None:
        self._totals = [0.0] * len(CATEGORIES)
        self._turn_thinking = 0.0

    @property
    def by_category(self) -> dict[str, int]:
        scale = self.scale
        totals = self._totals
        return {name: max(0, round(value * scale)) for name, value in zip(CATEGORIES, totals, strict=True)}

    @property
    def tokens(self) -> int:
        """The sum of :attr:`by_category`."""
        return sum(self.by_category.values())


def heuristic_tokens(messages: Iterable[dict], *, keep_thinking: bool = True) -> int:
    """Estimated input tokens of a list of normalized messages."""
    counter = HeuristicCounter(keep_thinking)
    for message in messages:
        counter.add(message)
    return counter.tokens
