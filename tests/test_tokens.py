"""Token estimators (compactcli.counting.tokens) and their calibration (compactcli.counting.calibrate)."""

from __future__ import annotations

import base64
import json
import os
import struct
import time
import zlib
from pathlib import Path

import pytest
from helpers import corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from compactcli import dialects
from compactcli.counting import calibrate as cal
from compactcli.counting import tokens
from compactcli.counting.tokens import (
    CATEGORIES,
    HeuristicCounter,
    SeedCounter,
    heuristic_tokens,
    image_size,
    image_tokens,
    message_tokens,
    seed_tokens,
    thinking_persists,
)

CORPUS = corpus.CORPUS / "claude-code"

# --- seed: exactly len(str(messages)) // 4 ------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: big ints too
    | st.floats()  # json.loads gives nan/inf for NaN/Infinity
    | st.text(st.characters(blacklist_categories=())),  # lone surrogates included
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(json_values, max_size=8))
def test_seed_counter_equals_literal_formula(messages: list) -> None:
    counter = SeedCounter()
    for message in messages:
        counter.add(message)
    assert counter.chars == len(str(messages))
    assert counter.tokens == len(str(messages)) // 4
    assert seed_tokens(messages) == len(str(messages)) // 4


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6))
def test_seed_on_values_as_json_loads_returns_them(values: list) -> None:
    messages = [json.loads(json.dumps(v)) for v in values]
    assert seed_tokens(messages) == len(str(messages)) // 4


def test_seed_examples_by_hand() -> None:
    # str([]) == "[]": 2 chars; str([{'a': 1}]) == "[{'a': 1}]": 10 chars.
    assert SeedCounter().chars == 2
    assert seed_tokens([{"a": 1}]) == 10 // 4
    # "[{'a': 1}, '日本']" is 16 characters.
    counter = SeedCounter()
    counter.add({"a": 1})
    counter.add("日本")
    assert counter.chars == 16 == len(str([{"a": 1}, "日本"]))


def test_seed_reset_starts_over() -> None:
    counter = SeedCounter()
    counter.add({"role": "user", "content": "x" * 100})
    counter.reset()
    counter.add({"b": 2})
    assert counter.chars == len(str([{"b": 2}]))


# --- images: priced by pixels from the header -------------------------------------------------


def png(width: int, height: int, noise: bool = False) -> bytes:
    """A valid 8-bit greyscale PNG."""
    row_bytes = os.urandom(width) if noise else bytes(width)
    raw = b"".join(b"\x00" + (os.urandom(width) if noise else row_bytes) for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(tag + data))
        return struct.pack(">I", len(data)) + tag + data + crc

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int, exif_bytes: int = 0, sof: int = 0xC0) -> bytes:
    """SOI, JFIF APP0, an optional large APP1, a fill byte, SOFn, EOI."""
    out = b"\xff\xd8"
    out += b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    if exif_bytes:
        out += b"\xff\xe1" + struct.pack(">H", exif_bytes + 2) + b"\xff" * exif_bytes
    out += b"\xff"  # a fill byte before the next marker is allowed
    out += bytes([0xFF, sof]) + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)
    return out + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp_vp8x(width: int, height: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + bytes(4)
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    body = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + bits.to_bytes(4, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def webp_vp8(width: int, height: int) -> bytes:
    frame = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    body = b"VP8 " + struct.pack("<I", len(frame)) + frame
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def image_block(data: bytes, media_type: str = "image/png") -> dict:
    source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


@pytest.mark.parametrize(
    "data",
    [
        png(321, 123),
        jpeg(321, 123),
        jpeg(321, 123, sof=0xC2),  # progressive
        jpeg(321, 123, exif_bytes=5000),  # frame header beyond the first decoded bytes
        gif(321, 123),
        webp_vp8x(321, 123),
        webp_vp8l(321, 123),
        webp_vp8(321, 123),
    ],
)
def test_image_size_from_headers(data: bytes) -> None:
    assert image_size(data) == (321, 123)
    # 321 * 123 / 750 = 52.6
    assert image_tokens(image_block(data)) == 53


def test_image_priced_by_pixels_not_base64_length() -> None:
    block = image_block(png(1000, 1000, noise=True))  # about 1 MB of incompressible pixels
    assert len(block["source"]["data"]) // 4 > 300_000
    assert image_tokens(block) == 1333  # 1000 * 1000 / 750
    assert message_tokens({"role": "user", "content": [block]})["images"] == 1333


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (200, 100, 27),  # 20000 / 750 = 26.7
        (1092, 1092, 1590),  # Anthropic's own example: about 1590 tokens
        (1568, 600, 1254),  # long edge at the limit: not scaled
        (3000, 2000, 1600),  # scaled to 1568 x 1045 = 2185, capped near 1.15 MP
        (4000, 200, 164),  # scaled to 1568 x 78.4 = 122,931 px = 163.9
    ],
)
def test_image_downscaling(width: int, height: int, expected: int) -> None:
    assert image_tokens(image_block(png(width, height))) == expected


def test_image_size_unknown_falls_back() -> None:
    url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    garbage = {"type": "image", "source": {"type": "base64", "data": "bm90IGFuIGltYWdl"}}
    broken = {"type": "image", "source": {"type": "base64", "data": "!!!"}}
    for block in (url, garbage, broken, {"type": "image"}):
        assert image_tokens(block) == tokens.IMAGE_FALLBACK_TOKENS


def test_image_in_data_url() -> None:
    data = base64.b64encode(gif(750, 10)).decode()
    block = {"type": "image", "source": {"type": "url", "url": f"data:image/gif;base64,{data}"}}
    assert image_tokens(block) == 10  # 7500 / 750


def test_image_inside_tool_result_counts_as_image() -> None:
    result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "screenshot"}, image_block(png(750, 100))],
    }
    counts = message_tokens({"role": "user", "content": [result]})
    assert counts["images"] == 100
    assert counts["tool_results"] > 0


def test_pdf_priced_per_page() -> None:
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 3 >> endobj\n"
    pdf += b"".join(b"%d 0 obj << /Type /Page >> endobj\n" % i for i in range(2, 5))
    block = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": b64(pdf)},
    }
    assert message_tokens({"role": "user", "content": [block]})["images"] == 3 * 2000


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- heuristic ----------------------------------------------------------------------------------


def full_message() -> list[dict]:
    return [
        {"role": "user", "content": "Please list the files."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "The user wants ls.", "signature": "x" * 500},
                {"type": "text", "text": "Listing them now."},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls -la"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "a.txt\nb.txt\n"},
                        image_block(png(750, 20)),
                    ],
                }
            ],
        },
    ]


def rule_cost(text: str) -> float:
    """The character-class rule of tokens.py read literally, one character at a time: the reference
    the byte-level counting (translate, popcounts, bytes.count) must equal exactly."""
    letters = spaces = dense = runs = two = symbol = cjk = four = 0
    run = 0  # dense characters since the last run of four was counted
    for char in text:
        code = ord(char)
        if code < 128 and not char.isalpha() and not (char.isspace() and char != "\n"):
            dense += 1
            run += 1
            if run == 4:
                runs += 1
                run = 0
            continue
        run = 0
        if code < 128:
            letters += char.isalpha()
            spaces += not char.isalpha()
        elif code < 0x800:
            two += 1
        elif code < 0x3000 or 0xE000 <= code < 0xF000:
            symbol += 1
        elif code < 0x10000:
            cjk += 1  # the surrogates (U+D800-U+DFFF) too, as surrogatepass writes them
        else:
            four += 1
    return (
        tokens.LETTER * letters
        + tokens.SPACE * spaces
        + tokens.DENSE_RUN * runs
        + tokens.DENSE * dense
        + tokens.TWO_BYTE * two
        + tokens.SYMBOL * symbol
        + tokens.CJK * cjk
        + tokens.FOUR_BYTE * four
    )


# Characters of every class, with dense runs and class changes common.
class_text = st.text(
    st.sampled_from('ab Z\t\n\r\x0b\x1f.:=-{}0"\\\x00\x7f') | st.characters(blacklist_categories=()),
    max_size=200,
)


@settings(max_examples=500, deadline=None)
@given(class_text)
def test_text_cost_equals_the_rule(text: str) -> None:
    assert tokens._text_cost(text) == rule_cost(text)


@settings(max_examples=30, deadline=None)
@given(class_text.filter(bool))
def test_text_cost_of_long_text_equals_the_rule(piece: str) -> None:
    text = piece * (70_000 // len(piece) + 1)  # past the 64 KiB slices the popcounts go by
    assert tokens._text_cost(text) == rule_cost(text)


def test_categories_add_up() -> None:
    messages = full_message()
    counter = HeuristicCounter()
    per_message = [message_tokens(m) for m in messages]
    for message in messages:
        counter.add(message)
    assert set(counter.by_category) == set(CATEGORIES)
    assert counter.tokens == sum(counter.by_category.values()) == heuristic_tokens(messages)
    for name in CATEGORIES:
        # Per-message values are rounded; totals are rounded once.
        assert abs(sum(m[name] for m in per_message) - counter.by_category[name]) <= len(messages)
    assert all(counter.by_category[name] > 0 for name in CATEGORIES)
    assert counter.by_category["images"] == 20  # 750 x 20 / 750


def test_each_block_lands_in_its_category() -> None:
    only_tool = {"role": "assistant", "content": [full_message()[1]["content"][2]]}
    counts = message_tokens(only_tool)
    assert counts["tool_inputs"] > 0
    assert counts["thinking"] == counts["tool_results"] == counts["images"] == 0
    assert counts["text"] == tokens.MESSAGE_OVERHEAD


def test_signature_is_not_billed() -> None:
    block = {"type": "thinking", "thinking": "Short thought."}
    short = message_tokens({"role": "assistant", "content": [{**block, "signature": "s"}]})
    long = message_tokens({"role": "assistant", "content": [{**block, "signature": "s" * 9000}]})
    assert short == long


def test_thinking_logged_without_its_text_is_priced_by_its_signature() -> None:
    # Claude Code 2.1 with Opus 4.6 and later logs "thinking": "" and the signature, which carries the
    # thought: 0.18 tokens a character past the 280 of an almost empty thought's signature.
    def thinking(signature: object) -> int:
        block = {"type": "thinking", "thinking": "", "signature": signature}
        return message_tokens({"role": "assistant", "content": [block]})["thinking"]

    assert thinking("E" * 1280) == 180
    assert thinking("E" * 280) == thinking("E" * 20) == 0
    assert thinking(None) == 0  # no signature: nothing to go by


def test_a_tool_reference_loads_a_tool_definition() -> None:
    # Claude Code's ToolSearch answers with tool_reference blocks: each puts a deferred tool's whole
    # definition in the context (1,300 tokens, fitted), though the log holds only its name.
    refs = [
        {"type": "tool_reference", "tool_name": "TaskCreate"},
        {"type": "tool_reference", "tool_name": "Monitor"},
    ]
    loaded = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": refs}]}
    assert message_tokens(loaded)["tool_results"] == 28 + 2 * 1300  # the result's framing, two definitions


@pytest.mark.parametrize(
    ("model", "scale"), [("claude-opus-4-7", 1.2), ("claude-opus-4-6", 1.0), (None, 1.0)]
)
def test_the_tokenizer_of_the_model_called_scales_the_whole_context(model: str | None, scale: float) -> None:
    messages = [{"role": "user", "content": "Explain the failing test in detail, please. " * 200}]
    counter = HeuristicCounter()
    for message in messages:
        counter.add(message)
    before = counter.by_category["text"]
    counter.use_traits(tokens.model_traits(model))
    assert counter.by_category["text"] == round(before * scale)
    assert tokens.tokenizer_scale(model) == scale


def test_cjk_costs_more_per_character_than_ascii_prose() -> None:
    prose = "The quick brown fox jumps over the lazy dog while the cat sleeps. " * 20
    cjk = "这是一个用来测试分词器的中文句子，我们看看每个字需要多少个标记。" * 20
    prose_rate = heuristic_tokens([{"role": "user", "content": prose}]) / len(prose)
    cjk_rate = heuristic_tokens([{"role": "user", "content": cjk}]) / len(cjk)
    assert cjk_rate > 2 * prose_rate
    assert 0.8 <= cjk_rate <= 1.2  # about one token per character
    assert 0.15 <= prose_rate <= 0.3  # about 4-6 characters per token


def test_json_tool_output_denser_than_prose() -> None:
    rows = [{"id": i, "name": f"item-{i}", "tags": ["a", "b"], "ok": True} for i in range(200)]
    dense = json.dumps(rows)
    prose = "Everything went fine and the build finished without any warnings at all. " * 100
    rate = {}
    for name, text in (("json", dense), ("prose", prose)):
        result = {"type": "tool_result", "tool_use_id": "t", "content": text}
        rate[name] = message_tokens({"role": "user", "content": [result]})["tool_results"] / len(text)
    assert rate["json"] > 1.5 * rate["prose"]


def test_tool_input_priced_as_json_with_framing() -> None:
    def cost(tool_input: object) -> int:
        block = {"type": "tool_use", "id": "t", "name": "edit", "input": tool_input}
        return message_tokens({"role": "assistant", "content": [block]})["tool_inputs"]

    one = cost({"path": "a.py"})
    two = cost({"path": "a.py", "old": "x"})
    # A second field costs at least its framing; nested structure is counted too.
    assert two - one >= tokens.TOOL_PARAM_OVERHEAD
    assert cost({"path": "a.py", "items": [{"k": i} for i in range(50)]}) > one + 100


def test_odd_shapes_do_not_crash() -> None:
    odd = [
        {"role": "user", "content": None},
        {"role": "user"},
        {"role": "assistant", "content": ["ToolUseBlock(id='t', input={}, name='x')", 5]},
        {"role": "assistant", "content": [{"type": "server_tool_use", "name": "web", "input": {}}]},
        {"role": "user", "content": [{"type": "web_search_tool_result", "content": [{"a": 1}]}]},
        {"role": "user", "content": [{"type": "mystery", "payload": {"n": 2**80}}]},
        {"role": "user", "content": [{"type": "redacted_thinking", "data": "QUJD" * 100}]},
        {"role": "user", "content": "lone surrogate \ud800 here"},
        {
            "role": "user",
            "content": [{"type": "document", "source": {"type": "text", "data": "d"}}],
        },
    ]
    for message in odd:
        counts = message_tokens(message)
        assert all(isinstance(v, int) and v >= 0 for v in counts.values())
    assert message_tokens(odd[6])["thinking"] == round(400 * tokens.REDACTED_THINKING_PER_CHAR)


def test_thinking_of_earlier_turns_dropped_when_model_does() -> None:
    thought = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm " * 50}]}
    per_thought = message_tokens(thought)["thinking"]
    tool_loop = [
        {"role": "user", "content": "start"},
        thought,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
        thought,
    ]
    new_turn = [*tool_loop, {"role": "user", "content": [{"type": "text", "text": "next"}]}]
    for keep in (True, False):
        counter = HeuristicCounter(keep_thinking=keep)
        for message in tool_loop:
            counter.add(message)
        # Inside one turn (a tool loop) the thinking stays in either case.
        assert counter.by_category["thinking"] == 2 * per_thought
        counter.add(new_turn[-1])
        assert counter.by_category["thinking"] == (2 * per_thought if keep else 0)
    assert heuristic_tokens(new_turn, keep_thinking=False) < heuristic_tokens(new_turn)


@pytest.mark.parametrize(
    ("model", "persists"),
    [
        ("claude-opus-4-5-20251101", True),
        ("claude-opus-4-6", True),
        ("claude-sonnet-4-5-20250929", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-opus-4-20250514", False),
        ("claude-opus-4-1-20250805", False),
        ("claude-3-7-sonnet-20250219", False),
        ("claude-haiku-4-5-20251001", False),
        (None, True),
    ],
)
def test_thinking_persists(model: str | None, persists: bool) -> None:
    assert thinking_persists(model) is persists


def test_heuristic_is_fast() -> None:
    # Loose bound (the measured rate is well above 100 MB/s) so a busy machine does not fail it.
    messages = []
    for i in range(2000):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {i}: reading the configuration file now."},
                    {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"path": "a.py"}},
                ],
            }
        )
        listing = "".join(f"{n:6}\u2192    value = compute(x, y)  # note\n" for n in range(100))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": listing}
        messages.append({"role": "user", "content": [result]})
    size = sum(len(json.dumps(m)) for m in messages)
    start = time.perf_counter()
    heuristic_tokens(messages)
    rate = size / (time.perf_counter() - start) / 1e6
    assert rate > 25, f"{rate:.0f} MB/s"


# --- calibration over a synthetic session whose usage is known by construction ------------------

BASE = 3000  # system prompt and tools: in every call, cancels out of the growth


class Session:
    """A Claude Code-shaped session whose recorded context at each call is BASE + the seed
    formula over the main-conversation messages before it, so seed's error must be exactly 0."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.context: list[dict] = []

    def record(self, record: dict, in_context: bool = True) -> None:
        self.lines.append(json.dumps(record))
        if in_context:
            self.context.append(record["message"])

    def user(self, content: object, **extra: object) -> None:
        message = {"role": "user", "content": content}
        self.record({"type": "user", "isSidechain": False, "message": message, **extra})

    def call(self, msg_id: str, *blocks: dict) -> None:
        """One model call whose response is split over one record per block."""
        recorded = BASE + len(str(self.context)) // 4
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": recorded - 103,
            "output_tokens": 7,
        }
        for block in blocks:
            message = {
                "id": msg_id,
                "model": "claude-opus-4-5-20251101",
                "role": "assistant",
                "content": [block],
                "usage": usage,
            }
            self.record({"type": "assistant", "isSidechain": False, "message": message})

    def raw(self, line: str) -> None:
        self.lines.append(line)

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


def tool_use(tool_id: str) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "make"}}


def tool_result(tool_id: str, text: str) -> dict:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": text}


def build_session(path: Path, boundary: bool = True, summary_flag: bool = True) -> Path:
    s = Session()
    s.user("Build the project and fix what fails.")
    s.call("msg_A", {"type": "text", "text": "Building."}, tool_use("t1"))
    s.user([tool_result("t1", "error: x\n" * 200)])
    # A sub-agent's records: not part of the main conversation, with usage of their own.
    side = {"role": "assistant", "id": "msg_S", "content": "side", "usage": {"input_tokens": 9}}
    s.record({"type": "assistant", "isSidechain": True, "message": side}, in_context=False)
    s.call("msg_B", tool_use("t2"))  # A -> B counted
    s.user([tool_result("t2", "ok")])
    s.call("msg_C", tool_use("t3"))  # B -> C: growth < 200, not counted
    s.raw('{"type": "user", "message": {"role": "user", "content": "cut off')  # torn line
    s.user([tool_result("t3", "warning: y\n" * 200)])
    s.call("msg_D", tool_use("t4"))  # C -> D: spans the torn line, not counted
    s.user([tool_result("t4", "fixed\n" * 300)])
    error = {"role": "assistant", "model": "<synthetic>", "content": "API Error", "usage": {}}
    s.record({"type": "assistant", "isApiErrorMessage": True, "message": error}, in_context=False)
    s.raw(json.dumps({"type": "progress", "data": {"type": "bash_progress"}}))
    s.call("msg_E", {"type": "text", "text": "Done."})  # D -> E counted
    # Compaction: the context restarts from the summary.
    # Claude Code 2 writes both markers; 1.0 only the flagged summary.
    if boundary:
        s.raw(json.dumps({"type": "system", "subtype": "compact_boundary"}))
    s.context = []
    flag = {"isCompactSummary": True} if summary_flag else {}
    s.user("Summary of the conversation so far: " + "built, fixed. " * 50, **flag)
    s.call("msg_F", {"type": "text", "text": "Continuing."})
    s.user("Now write the docs. " * 100)
    s.call("msg_G", {"type": "text", "text": "Writing."})  # F -> G counted
    return s.write(path)


@pytest.mark.parametrize(("boundary", "summary_flag"), [(True, True), (True, False), (False, True)])
def test_walk_finds_the_intervals(tmp_path: Path, boundary: bool, summary_flag: bool) -> None:
    path = build_session(tmp_path / "s.jsonl", boundary, summary_flag)
    intervals = cal.walk(cal.read_records(path))
    # Calls A..G; none spans the compaction between E and F.
    assert [iv.skip for iv in intervals] == [None, "small", "torn", None, None]
    for iv in intervals:
        assert iv.estimated["seed"] == iv.recorded  # by construction


def test_calibrate_reports_per_method_and_file(tmp_path: Path) -> None:
    path = build_session(tmp_path / "s.jsonl")
    result = cal.calibrate([path])
    assert result["seed"]["n"] == 3
    assert result["seed"]["median"] == 0 and result["seed"]["worst"] == 0
    assert result["heuristic"]["n"] == 3
    # The heuristic's figures are those of its three counted intervals (walk is checked above).
    counted = [iv for iv in cal.walk(cal.read_records(path)) if iv.skip is None]
    errors = sorted(abs(iv.estimated["heuristic"] - iv.recorded) / iv.recorded for iv in counted)
    assert len(errors) == 3
    assert result["heuristic"]["median"] == pytest.approx(errors[1])
    assert result["heuristic"]["worst"] == pytest.approx(errors[2])
    assert errors[2] > 0  # the heuristic is not the seed formula: its figures are not trivially 0
    assert result["skipped"] == {"small": 1, "torn": 1}
    assert result["files"][str(path)]["seed"]["n"] == 3


def test_calibrate_sidechain_only_file(tmp_path: Path) -> None:
    s = Session()
    s.user("Search the code.")
    s.call("msg_1", tool_use("t1"))
    s.user([tool_result("t1", "match\n" * 400)])
    s.call("msg_2", {"type": "text", "text": "Found it."})
    lines = []
    for line in s.lines:
        record = json.loads(line)
        record["isSidechain"] = True
        record["agentId"] = "a1"
        lines.append(json.dumps(record))
    path = tmp_path / "agent-a1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = cal.calibrate([path])
    assert result["seed"]["n"] == 1 and result["seed"]["worst"] == 0


def test_summarize_by_hand() -> None:
    stats = cal.summarize([0.1, -0.2, 0.05], recorded=1000, estimated=1100)
    assert stats["n"] == 3
    assert stats["median"] == pytest.approx(0.1)
    assert stats["worst"] == pytest.approx(0.2)
    assert stats["bias"] == pytest.approx(0.05)
    assert stats["total"] == pytest.approx(0.1)
    assert sum(stats["histogram"].values()) == 3
    assert stats["histogram"]["<10%"] == 1 and stats["histogram"]["<5%"] == 0
    assert cal.summarize([])["median"] is None


# --- the real sessions ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_result() -> dict:
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    return cal.calibrate(list(cal.session_files(CORPUS)))


@pytest.mark.corpus
def test_corpus_heuristic_median(corpus_result: dict) -> None:
    # Measured over all 18 Claude Code files of the corpus: median 8.4 %, p90 34 %, summed growth -4.5 %
    # (before thinking logged without its text, tool references and Opus 4.7's tokenizer were counted:
    # 9.3 %, 52 %, -10.3 %); the bound is what the estimator meets, not a hope.
    heuristic = corpus_result["heuristic"]
    assert heuristic["n"] >= 500
    assert heuristic["median"] <= 0.09
    assert heuristic["p90"] <= 0.36
    assert abs(heuristic["total"]) <= 0.06


@pytest.mark.corpus
def test_an_opus_4_7_session_with_tool_references_on_the_half_it_was_not_tuned_on() -> None:
    # The one Opus 4.7 session of the corpus, the only one with tool_reference blocks: the tokenizer's
    # scale and the tokens of a reference were fitted on its first half and are measured on the second.
    # Measured: median 19.9 %, summed growth -12.6 % (before: 41 %, -53 %); Claude Code's reminders around
    # the user's turns and attachments, which no log holds, are most of what is left.
    path = CORPUS / "posthog-claude-session.jsonl"
    if not path.is_file():
        pytest.skip(f"no {path}")
    counted = [iv for iv in cal.walk(cal.read_records(path)) if iv.skip is None]
    rest = counted[len(counted) // 2 :]
    assert len(rest) >= 50
    stats = cal.summarize(
        cal.errors(rest, "heuristic"),
        sum(iv.recorded for iv in rest),
        sum(iv.estimated["heuristic"] for iv in rest),
    )
    assert stats["median"] <= 0.22
    assert abs(stats["total"]) <= 0.15


@pytest.mark.corpus
def test_corpus_seed_is_as_bad_as_reported(corpus_result: dict) -> None:
    # Base64 images counted as text put the seed formula off by more than 1,500 %.
    seed = corpus_result["seed"]
    assert seed["median"] >= 0.15
    assert seed["worst"] >= 15
    assert corpus_result["heuristic"]["median"] < seed["median"] / 2


@pytest.mark.corpus
def test_corpus_heuristic_worst(corpus_result: dict) -> None:
    # Context the logs never show (hook output missing from one session, Claude Code's own reminders,
    # text cut by the owner's redactor) puts single intervals off by up to 79 % (measured on the corpus
    # of 2026-12-02); the heuristic cannot see it. A bound just above keeps it from growing.
    assert corpus_result["heuristic"]["worst"] <= 0.85


# --- predicting the next call: tuned on some sessions, measured on the others ----------------------

TUNED = ("vsla-", "mclaude-")  # Claude Code 1.0.53 to 2.1.9: the overhead is measured on these only


@pytest.fixture(scope="module")
def prediction() -> dict:
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    files = list(cal.session_files(CORPUS))
    tuned = [path for path in files if path.name.startswith(TUNED)]
    return cal.prediction_report(tuned, [path for path in files if path not in tuned])


@pytest.mark.corpus
def test_the_overhead_is_the_dialects_default(prediction: dict) -> None:
    assert prediction["overhead"] == dialects.get("claude-code").default_overhead


@pytest.mark.corpus
def test_auto_predicts_the_next_call_on_sessions_it_was_not_tuned_on(prediction: dict) -> None:
    # Measured: median 0.06 %, p90 0.54 %, worst 4.4 % over 446 calls of 8 held-out files.
    held_out = prediction["held_out"]
    assert held_out["auto"]["n"] >= 400
    assert held_out["auto"]["median"] <= 0.005
    assert held_out["auto"]["p90"] <= 0.01
    assert held_out["auto"]["worst"] <= 0.06
    # The heuristic with the overhead: median 9.4 %, p90 14 %: far worse, which is why auto is the default.
    assert 0.05 <= held_out["heuristic"]["median"] <= 0.11
    assert held_out["heuristic"]["median"] > 10 * held_out["auto"]["median"]
