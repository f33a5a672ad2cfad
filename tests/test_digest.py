"""The offline digest: what it keeps, that it is bounded, deterministic and redacted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactcli import dialects
from compactcli.backends.digest import MAX_CHARS, DigestSummarizer, digest
from compactcli.layers.summarize import summary_text

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def tool_use(use_id: str, name: str, **args: object) -> dict:
    return {"type": "tool_use", "id": use_id, "name": name, "input": args}


def tool_result(use_id: str, content: object, is_error: bool = False) -> dict:
    block = {"type": "tool_result", "tool_use_id": use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


CONVERSATION = [
    {"role": "user", "content": "Make `tally report` accept 1,234.50 amounts."},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking at the loader."},
            tool_use("t1", "read_file", path="tally/ledger.py"),
        ],
    },
    {"role": "user", "content": [tool_result("t1", "def load(): ...")]},
    {"role": "assistant", "content": [tool_use("t2", "Edit", file_path="tally/ledger.py", old_string="a")]},
    {"role": "user", "content": [tool_result("t2", "ok")]},
    {
        "role": "assistant",
        "content": [tool_use("t3", "Write", file_path="tests/test_amounts.py", content="x")],
    },
    {"role": "user", "content": [tool_result("t3", "written")]},
    {"role": "assistant", "content": [tool_use("t4", "Bash", command="python -m pytest -q")]},
    {
        "role": "user",
        "content": [
            tool_result(
                "t4",
                'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n'
                "    load()\nValueError: bad amount '1,234.50'\n",
                is_error=True,
            )
        ],
    },
    {"role": "user", "content": "No, keep the old parser for CSV files from 2019."},
    {"role": "assistant", "content": [tool_use("t5", "bash", command="git   status\n--short")]},
    {"role": "user", "content": [tool_result("t5", "Exit code 128\nfatal: not a git repository")]},
    {"role": "assistant", "content": [tool_use("t6", "grep", pattern="Decimal", path="tally")]},
    {"role": "user", "content": [tool_result("t6", "tally/ledger.py:3")]},
    {"role": "assistant", "content": "Done: amounts with thousands separators load now."},
]


def test_digest_keeps_task_instructions_files_commands_errors_and_last_text() -> None:
    text = digest(CONVERSATION)
    assert text.startswith("Offline digest of 15 messages")
    assert "## Task\n> Make `tally report` accept 1,234.50 amounts." in text
    assert "- [message 10] No, keep the old parser for CSV files from 2019." in text
    assert "- read: tally/ledger.py" in text
    assert "- written: tests/test_amounts.py" in text
    assert "- edited: tally/ledger.py" in text
    assert "- other: tally" in text
    assert "- `python -m pytest -q`\n- `git status --short`" in text
    assert "- Bash: ValueError: bad amount '1,234.50'" in text
    assert "- bash: Exit code 128 / fatal: not a git repository" in text
    assert "## Last assistant message\n> Done: amounts with thousands separators load now." in text


def test_digest_is_deterministic_and_has_no_focus_section_without_focus() -> None:
    assert digest(CONVERSATION) == digest(iter(CONVERSATION))
    assert "## About" not in digest(CONVERSATION)


def test_focus_collects_passages_that_mention_it() -> None:
    text = digest(CONVERSATION, focus="CSV")
    assert "## About CSV\n- [message 10] No, keep the old parser for CSV files from 2019." in text


def test_digest_is_bounded() -> None:
    huge = [{"role": "user", "content": "task " * 10_000}]
    for i in range(500):
        huge.append(
            {"role": "assistant", "content": [tool_use(f"t{i}", "Bash", command="echo " + "z" * 500)]}
        )
        huge.append(
            {"role": "user", "content": [tool_result(f"t{i}", "Traceback (most recent call last):\nE" * 50)]}
        )
        huge.append({"role": "user", "content": f"instruction {i} " + "w" * 1000})
    huge.append({"role": "assistant", "content": "last " * 5000})
    text = digest(huge, focus="instruction")
    assert len(text) <= MAX_CHARS + 100
    assert "## Task" in text and "## Last assistant message" in text


def test_an_earlier_digest_passes_its_task_on() -> None:
    first = digest(CONVERSATION)
    second = digest([{"role": "user", "content": summary_text("/a/t.jsonl", first)}, CONVERSATION[-1]])
    assert "## Task\n> Make `tally report` accept 1,234.50 amounts." in second


def test_a_claude_code_summary_is_labelled_as_such() -> None:
    earlier = "This session is being continued from a previous conversation that ran out of context. X"
    text = digest([{"role": "user", "content": earlier}])
    assert "## Earlier summary (the conversation starts with it)\n> This session" in text


def test_summarizer_redacts_its_output_and_counts() -> None:
    token = "ghp_" + "a1B2c3D4e5" * 4
    messages = [{"role": "user", "content": f"push with {token} please"}]
    summarizer = DigestSummarizer()
    text = summarizer.summarize(messages)
    assert token not in text and "[REDACTED:github_token]" in text
    assert summarizer.redactions == {"github_token": 1}
    plain = DigestSummarizer(redact=False)
    assert token in plain.summarize(messages) and not plain.redactions


def _sample(relative: str, dialect: str) -> list[dict]:
    path = SAMPLES / relative
    assert path.is_file(), f"committed sample {path} is missing"
    d = dialects.get(dialect)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [m for m in (d.normalize(r) for r in records) if m is not None]


@pytest.mark.parametrize(
    ("relative", "dialect"),
    [
        ("anthropic/session.jsonl", "anthropic"),
        ("anthropic/stringified.jsonl", "anthropic"),
        ("claude-code/session.jsonl", "claude-code"),
        ("openai/session.jsonl", "openai"),
        ("openai/flattened.jsonl", "openai"),
    ],
)
def test_digest_of_each_sample_dialect(relative: str, dialect: str) -> None:
    messages = _sample(relative, dialect)
    text = digest(messages)
    # The task is the first user text, read here without the digest's help.
    first = next(
        m["content"]
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], str) and m["content"]
    )
    assert "## Task\n> " + first.splitlines()[0][:80] in text
    # Every sample has tool calls with paths or commands, and a final assistant text.
    assert "## Files" in text or "## Last commands run" in text
    assert "## Last assistant message" in text
    assert len(text) <= MAX_CHARS + 100


def test_stringified_blocks_are_read_like_dicts() -> None:
    # The two anthropic samples tell one story, in dict blocks and in SDK reprs.
    a = digest(_sample("anthropic/stringified.jsonl", "anthropic"))
    assert "- `python -m pytest -q`" in a
    assert "tally/ledger.py" in a


def test_every_call_names_its_results_however_many_there_are() -> None:
    # Thousands of calls (the table of names grows many times); the error of an early call, of a
    # repeated id (named after its latest call) and of an id never called are named as they should be.
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for n in range(5000):
        messages.append({"role": "assistant", "content": [tool_use(f"id{n}", f"tool{n % 3}")]})
    messages.append({"role": "assistant", "content": [tool_use("id7", "Again")]})
    errors = [tool_result(f"id{n}", f"failed {n}", is_error=True) for n in (4, 7, 4998)]
    messages.append({"role": "user", "content": [*errors, tool_result("ghost", "x", is_error=True)]})
    text = digest(messages)
    for name in ("tool1: failed 4", "Again: failed 7", "tool0: failed 4998", "unknown: x"):
        assert f"- {name}" in text


def test_the_names_of_the_calls_take_a_few_bytes_each() -> None:
    # The digest keeps every call's id until the end; a dict of the id strings held about 160 bytes a
    # call (docs/design.md, "Memory per record"). Each message is read from its line and let go, as
    # summarize streams them.
    import tracemalloc

    from compactcli.backends.digest import Digest

    count = 30_000
    lines = [
        json.dumps({"role": "assistant", "content": [tool_use(f"toolu_01{n:022d}", "Bash")]})
        for n in range(count)
    ]
    builder = Digest()
    tracemalloc.start()
    try:
        for line in lines:
            builder.add(json.loads(line))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held / count < 50
