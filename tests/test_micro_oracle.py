"""micro through the CLI against the reference model in tests/helpers/reference.py, on generated
transcripts of every dialect: which results are cleared (keep, min-chars, preserve, multimodal), what they
become (the tool's name or `unknown`), and that nothing else changes, byte for byte."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from helpers import reference
from helpers.cli import invoke, written_by
from helpers.strategies import conversations, jsonl_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RULES = st.builds(
    reference.MicroRules,
    keep=st.integers(0, 5),
    min_chars=st.sampled_from([0, 1, 99, 100, 101, 4096]),
    preserve=st.sampled_from(
        [
            frozenset({"read_file", "Read"}),
            frozenset(),
            frozenset({"bash", "Bash"}),
            frozenset({"grep", "Grep"}),
        ]
    ),
    placeholder=st.sampled_from(["[Previous: used {tool_name}]", "<{tool_name} output elided>", "[cleared]"]),
    clear_multimodal=st.booleans(),
)


@pytest.mark.parametrize("dialect", (*reference.DIALECTS, "qwen-code", "copilot"))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_micro_clears_what_the_reference_model_clears(dialect: str, data) -> None:
    records = data.draw(conversations(dialect), label="records")
    rules = data.draw(RULES, label="rules")
    style = data.draw(st.sampled_from(["compact", "default", "unicode"]), label="style")
    before = jsonl_bytes(records, style=style)

    after = written_by(before, "micro", "--dialect", dialect, *rules.args())

    expected, changed = reference.micro(records, dialect, rules)
    old_lines, new_lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(new_lines) == len(old_lines)
    assert [json.loads(line) for line in new_lines] == expected
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True)):
        if number not in changed:
            assert new == old, f"line {number + 1} changed though nothing in it is cleared"
    # Idempotent: the output is what the reference model leaves alone.
    assert reference.micro(expected, dialect, rules)[1] == set()
    assert written_by(after, "micro", "--dialect", dialect, *rules.args()) == after
    # Pairing is never broken: the output validates, as the generated input does.
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "out.jsonl").write_bytes(after)
        check = invoke("validate", "--dialect", dialect, Path(tmp) / "out.jsonl")
        assert check.exit_code == 0, check.output


@pytest.mark.parametrize("dialect", (*reference.DIALECTS, "qwen-code", "copilot"))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_at_most_keep_results_means_no_change(dialect: str, data) -> None:
    records = data.draw(conversations(dialect), label="records")
    before = jsonl_bytes(records)
    per_conversation: dict[str, int] = {}
    for result in reference.tool_results(records, dialect):
        per_conversation[result.conversation] = per_conversation.get(result.conversation, 0) + 1
    keep = max(per_conversation.values(), default=0)
    rules = reference.MicroRules(keep=keep, min_chars=0, preserve=frozenset(), clear_multimodal=True)
    assert written_by(before, "micro", "--dialect", dialect, *rules.args()) == before
    if keep:  # one fewer kept: the oldest result of the largest conversation goes, unless it is empty
        fewer = reference.MicroRules(keep=keep - 1, min_chars=0, preserve=frozenset(), clear_multimodal=True)
        assert (written_by(before, "micro", "--dialect", dialect, *fewer.args()) != before) == bool(
            reference.micro(records, dialect, fewer)[1]
        )


def test_the_reference_model_clears_by_hand_counted_results() -> None:
    # Five bash results of 101, 100, 300, 300, 300 characters and one read_file result: with keep 3
    # only the first two bash results and the read_file result are old; 100 characters is kept, and
    # read_file is preserved, so exactly the first is cleared.
    records = [{"role": "user", "content": "go"}]
    for n, (name, size) in enumerate([("bash", 101), ("bash", 100), ("read_file", 300), ("bash", 300)] * 1):
        use = {"type": "tool_use", "id": f"t{n}", "name": name, "input": {}}
        records.append({"role": "assistant", "content": [use]})
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "x" * size}],
            }
        )
    for n in (4, 5):
        use = {"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {}}
        records.append({"role": "assistant", "content": [use]})
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "y" * 300}],
            }
        )
    out, changed = reference.micro(records, "anthropic", reference.MicroRules())
    assert changed == {2}
    assert out[2]["content"][0]["content"] == "[Previous: used bash]"
    assert reference.micro(records, "anthropic", reference.MicroRules(min_chars=99))[1] == {2, 4}
