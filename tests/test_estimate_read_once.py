"""estimate reads a Claude Code log once: records are summarized as they are read, and the summaries are
counted in the parentUuid chain's order (docs/design.md, "Estimate").

The reference is the plain way: the chain's records read again in their order (ConversationLines) and fed
one by one to a ContextCounter. Logs come from the ChainOrder generator (forks, rewinds, split responses,
out-of-order records, compactions, sub-agent records), given text, thinking and recorded usage.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.files import write_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactcli.dialects import get
from compactcli.pipelines import transcript
from compactcli.pipelines.context import ContextCounter
from compactcli.pipelines.estimate_file import estimate_file
from compactcli.pipelines.transcript import ConversationLines
from tests.test_chain_order import logs

CLAUDE_CODE = get("claude-code")
FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"
METHODS = ("auto", "heuristic", "seed", "usage")


@st.composite
def sessions(draw: st.DrawFn) -> list[dict]:
    """ChainOrder's logs with something to count in every message, and usage on some responses."""
    records = draw(logs())
    words = st.text("ab1 .\n", max_size=30)
    for number, record in enumerate(records):
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if record["type"] == "assistant":
            kind = draw(st.sampled_from(["text", "thinking", "tool_use"]))
            if kind == "tool_use":
                block = {"type": "tool_use", "id": f"t{number}", "name": "Bash", "input": {"c": draw(words)}}
            else:
                block = {"type": kind, kind: draw(words)}
            message["content"] = [block]
            message["model"] = draw(st.sampled_from(["claude-opus-4-5", "claude-sonnet-4-20250514"]))
            if draw(st.booleans()):
                read = draw(st.integers(0, 9))
                message["usage"] = {"input_tokens": number + 1, "cache_read_input_tokens": read}
        elif isinstance(message.get("content"), str):
            message["content"] = draw(words) or "hi"
    return records


def read_twice(path: Path, method: str) -> ContextCounter:
    counter = ContextCounter(CLAUDE_CODE, method, detail=True)
    with open(path, "rb") as f:
        for line in ConversationLines(f, str(path), "error", CLAUDE_CODE):
            if line.record is not None:
                counter.add(line.record, line.number)
    return counter


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=sessions(), method=st.sampled_from(METHODS))
def test_counted_once_as_read_twice(tmp_path: Path, records: list[dict], method: str) -> None:
    path = write_jsonl(tmp_path / "session.jsonl", records)
    stats = estimate_file(str(path), method=method, fmt="claude-code", on_invalid="error", max_tokens=None,
                          use_cache=False).stats  # fmt: skip
    reference = read_twice(path, method)
    assert stats["tokens"] == reference.tokens
    assert stats["by_category"] == reference.by_category
    assert stats["messages"] == reference.messages
    assert stats["tool_results"] == reference.tool_results
    assert stats["conversation"] == reference.conversation
    assert (stats["active_from"] or 0) == reference.start_line
    assert stats["method"] == reference.method_used
    usage = reference.usage
    if usage is not None:
        assert stats["usage"] == {"calls": usage.calls, "output_tokens": usage.output_tokens}
    assert stats["lines"] == len(records)
    assert stats["bytes"] == path.stat().st_size


@pytest.mark.parametrize("fixture", ["split-message.jsonl", "out-of-order.jsonl", "rewind.jsonl"])
def test_each_line_is_parsed_once(monkeypatch: pytest.MonkeyPatch, fixture: str) -> None:
    parsed: list[int] = []
    parse_line = transcript.parse_line

    def counting(raw: bytes, path: str, number: int, on_invalid: str = "error") -> transcript.Line:
        parsed.append(number)
        return parse_line(raw, path, number, on_invalid)

    monkeypatch.setattr(transcript, "parse_line", counting)
    path = FIXTURES / fixture
    lines = len(path.read_bytes().splitlines())
    stats = estimate_file(str(path), method="auto", fmt=None, on_invalid="error", max_tokens=None,
                          use_cache=False).stats  # fmt: skip
    assert sorted(parsed) == list(range(1, lines + 1))
    assert stats["lines"] == lines
    assert stats["messages"] == read_twice(path, "auto").messages


def test_sub_agent_records_count_when_the_main_messages_are_all_abandoned(tmp_path: Path) -> None:
    # The main conversation's only message is on a branch the chain leaves out (its last leaf is a system
    # record of a tree of its own): the sub-agent records read after it are the conversation after all.
    records = [
        {"type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "hi there"}},
        {"type": "user", "uuid": "s1", "parentUuid": None, "isSidechain": True,
         "message": {"role": "user", "content": "side words"}},
        {"type": "assistant", "uuid": "s2", "parentUuid": "s1", "isSidechain": True,
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "an answer"}]}},
        {"type": "system", "uuid": "b", "parentUuid": None, "content": "a note"},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "session.jsonl", records)
    stats = estimate_file(str(path), method="heuristic", fmt=None, on_invalid="error", max_tokens=None,
                          use_cache=False).stats  # fmt: skip
    reference = read_twice(path, "heuristic")
    assert (stats["conversation"], stats["messages"]) == ("sidechain", 2) == (reference.conversation, 2)
    assert stats["tokens"] == reference.tokens
    assert stats["lines"] == 4
