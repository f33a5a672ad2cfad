"""Claude Code itself resumes the sessions compactcli compacted (the agent tier).

The session is written by the real Claude Code CLI: `claude -p` runs a scripted task against the fake
Messages API on 127.0.0.1 (tests/helpers/fakeapi.py), running real Bash and Read tools, and writes its own log
under $HOME/.claude/projects/<cwd with every non-alphanumeric character as "-">/<session id>.jsonl.
Each test compacts a copy of that log with the installed compactcli, resumes it with
`claude --resume ID -p ...`, and checks what Claude Code then sends the model. The fake API refuses
a request whose tool_use / tool_result blocks are not paired, with the real API's 400, so a history
Claude Code cannot send whole fails here as it would for a user.

Skips unless Claude Code is installed (tests/helpers/agents.py says where it is looked for).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import agent_env, copy_home, home_and_project, require_agent, run_agent
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic
from helpers.sessions import session_with_a_kept_tail

from compactcli.dialects.claude_code import CLAUDE_CODE

SESSION_ID = "5e55a0c1-2b7d-4c3e-9f10-a9b8c7d6e5f4"
TASK = "Check the build: count the inputs, read the build log and my notes, then the outputs."
SECOND_TASK = "Is the build green?"
FOLLOW_UP = "What should we look at next?"
RESUMED_REPLY = "Resumed and read the history."

# The task as the model plays it: (tool_use id, tool, input), one per turn, then a closing text.
# Outputs over 100 characters are what micro clears; the last one is short and stays anyway.
STEPS = [
    ("toolu_01Count", "Bash", {"command": "seq 1 120", "description": "Count the inputs"}),
    (
        "toolu_02Log",
        "Bash",
        {"command": "printf 'build step %s ok\\n' $(seq 1 40)", "description": "Show the log"},
    ),
    ("toolu_03Notes", "Read", {"file_path": "NOTES"}),
    ("toolu_04Outputs", "Bash", {"command": "seq 500 620", "description": "Count the outputs"}),
    ("toolu_05Status", "Bash", {"command": "echo build green", "description": "Status"}),
]
# What each tool really printed: text only the original results hold.
ORIGINAL = {
    "toolu_01Count": "\n117\n118\n119\n120",
    "toolu_02Log": "build step 37 ok",
    "toolu_03Notes": "note 29: the parser drops trailing commas",
    "toolu_04Outputs": "\n611\n612\n613",
    "toolu_05Status": "build green",
}
CLEARED_BY_MICRO = ["toolu_01Count", "toolu_02Log", "toolu_04Outputs"]  # --keep 1; Read is preserved


def _claude_env(home: Path, api: FakeAnthropic) -> dict[str, str]:
    return agent_env(
        home,
        ANTHROPIC_BASE_URL=api.url,
        ANTHROPIC_API_KEY=api.api_key,
        # Nothing but the model calls: no telemetry, update checks or error reports.
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )


def _thinking(call: int) -> dict[str, Any]:
    return {"type": "thinking", "thinking": f"Plan for call {call}.", "signature": f"c2lnLWNhbGw{call}"}


def _play_steps(notes: Path):
    """Every response thinks first; the first task runs STEPS, any later prompt gets a text answer."""

    def reply_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
        call = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if call >= len(STEPS):
            return [
                _thinking(call),
                {"type": "text", "text": "The build is green; the notes mention the parser."},
            ]
        tool_id, name, tool_input = STEPS[call]
        if name == "Read":
            tool_input = {"file_path": str(notes)}
        return [
            _thinking(call),
            {"type": "text", "text": f"Step {call + 1}: {name}."},
            {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input},
        ]

    return reply_blocks


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_agent("claude", "COMPACTCLI_CLAUDE", "@anthropic-ai/claude-code")


@pytest.fixture(scope="module")
def recorded(claude: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(home, project): Claude Code's own log of the scripted task and a second prompt, written once
    per module."""
    home, project = home_and_project(tmp_path_factory.mktemp("claude-code"))
    notes = project / "NOTES.md"
    notes.write_text("".join(f"note {i}: the parser drops trailing commas\n" for i in range(30)))
    with FakeAnthropic() as api:
        api.reply_blocks = _play_steps(notes)
        for prompt in (["-p", TASK, "--session-id", SESSION_ID], ["--resume", SESSION_ID, "-p", SECOND_TASK]):
            done = run_agent(
                [claude, *prompt, "--allowedTools", "Bash", "Read"], cwd=project, env=_claude_env(home, api)
            )
            assert done.returncode == 0, done.stderr + done.stdout
        assert [r.status for r in api.calls("messages")] == [200] * (len(STEPS) + 2)
    return home, project


def _session(home: Path) -> Path:
    (found,) = (home / ".claude" / "projects").glob(f"*/{SESSION_ID}.jsonl")
    return found


def _resume(claude: Path, home: Path, project: Path) -> tuple[Any, list[dict[str, Any]]]:
    """Resume the session in `home` with a new prompt: (the run, the messages of each request)."""
    with FakeAnthropic() as api:
        api.reply_blocks = lambda body: [{"type": "text", "text": RESUMED_REPLY}]
        run = run_agent(
            [claude, "--resume", SESSION_ID, "-p", FOLLOW_UP], cwd=project, env=_claude_env(home, api)
        )
        calls = api.calls("messages")
    assert calls, f"Claude Code sent nothing: {run.stderr}{run.stdout}"
    rejected = [c for c in calls if c.status != 200]
    assert not rejected, f"the API refused what Claude Code sent: {rejected[0].status} {run.stdout}"
    assert run.returncode == 0, run.stderr + run.stdout
    assert RESUMED_REPLY in run.stdout
    return run, [c.body for c in calls]


def _results(body: dict[str, Any]) -> dict[str, str]:
    """tool_use_id -> the result's text, over the messages of one request."""
    out = {}
    for message in body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                out[block["tool_use_id"]] = (
                    inner if isinstance(inner, str) else "".join(b.get("text", "") for b in inner or [])
                )
    return out


def _tool_uses(body: dict[str, Any]) -> list[str]:
    return [
        block["id"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    ]


def _thinking_sent(body: dict[str, Any]) -> list[str]:
    return [
        block["signature"]
        for message in body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "thinking"
    ]


def _last_user_text(body: dict[str, Any]) -> str:
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


@pytest.fixture
def session(recorded: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """(home, project, log): this test's own copy of the recorded home."""
    home = copy_home(recorded[0], tmp_path / "home")
    return home, recorded[1], _session(home)


def test_uncompacted_session_resumes_with_every_original_result(claude, session):
    home, project, _ = session
    _, (body, *_) = _resume(claude, home, project)
    results = _results(body)
    assert sorted(results) == sorted(ORIGINAL)
    for tool_id, text in ORIGINAL.items():
        assert text in results[tool_id], tool_id
    assert _tool_uses(body) == [step[0] for step in STEPS]
    assert FOLLOW_UP in _last_user_text(body)


def test_micro_compacted_session_resumes_with_placeholders(claude, session):
    home, project, log = session
    done = run_cli("micro", "--keep", "1", log, text=True)
    assert done.returncode == 0, done.stderr
    _, (body, *_) = _resume(claude, home, project)
    results = _results(body)
    assert _tool_uses(body) == [step[0] for step in STEPS]  # every call still there, each answered
    for tool_id in CLEARED_BY_MICRO:
        assert results[tool_id] == "[Previous: used Bash]"
    sent = json.dumps(body)
    for tool_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[tool_id])[1:-1] not in sent, f"{tool_id}'s output was still sent"
    assert ORIGINAL["toolu_03Notes"] in results["toolu_03Notes"]  # Read is preserved
    assert results["toolu_05Status"].strip() == "build green"  # the last result is kept
    assert FOLLOW_UP in _last_user_text(body)


def test_resumed_session_after_micro_keeps_growing(claude, session):
    """Claude Code appends the new turn to the compacted log, and compactcli reads the result."""
    home, project, log = session
    assert run_cli("micro", "--keep", "1", log).returncode == 0
    _resume(claude, home, project)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    prompts = [r for r in lines if r.get("type") == "user" and r["message"].get("content") == FOLLOW_UP]
    assert len(prompts) == 1
    checked = run_cli("validate", log, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_summarized_session_resumes_from_the_summary(claude, session):
    home, project, log = session
    done = run_cli("summarize", "--backend", "digest", log, text=True)
    assert done.returncode == 0, done.stderr
    _, (body, *_) = _resume(claude, home, project)
    first = body["messages"][0]
    assert first["role"] == "user"
    text = first["content"] if isinstance(first["content"], str) else first["content"][0]["text"]
    assert text.startswith("[Conversation compressed. Transcript: ")
    assert TASK in text  # the digest names the task
    assert _tool_uses(body) == []  # everything before the summary is gone
    assert _results(body) == {}
    sent = json.dumps(body)
    for tool_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[tool_id])[1:-1] not in sent
    assert FOLLOW_UP in _last_user_text(body)


def test_summary_that_keeps_the_last_messages_keeps_their_pairs(claude, session):
    """--keep-last 6 (records) would start at the last tool result and part it from its call; the cut
    moves so the pair stays."""
    home, project, log = session
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "6", log, text=True)
    assert done.returncode == 0, done.stderr
    _, (body, *_) = _resume(claude, home, project)
    assert _tool_uses(body) == ["toolu_05Status"]
    assert _results(body)["toolu_05Status"].strip() == "build green"
    first = body["messages"][0]["content"]
    assert (first if isinstance(first, str) else first[0]["text"]).startswith("[Conversation compressed.")


def test_uncompacted_session_resumes_with_every_thinking_block(claude, session):
    home, project, _ = session
    _, (body, *_) = _resume(claude, home, project)
    assert _thinking_sent(body) == [_thinking(call)["signature"] for call in range(len(STEPS) + 1)] + [
        _thinking(len(STEPS) + 1)["signature"]
    ]


def test_micro_drop_thinking_sends_only_the_last_turns_thinking(claude, session):
    """Thinking before the current turn (the second prompt) goes; that turn's stays, as the API needs."""
    home, project, log = session
    done = run_cli("micro", "--keep", "10", "--drop-thinking", log, text=True)
    assert done.returncode == 0, done.stderr
    _, (body, *_) = _resume(claude, home, project)
    assert _thinking_sent(body) == [_thinking(len(STEPS) + 1)["signature"]]
    assert _tool_uses(body) == [step[0] for step in STEPS]
    assert ORIGINAL["toolu_02Log"] in _results(body)["toolu_02Log"]  # results untouched
    assert FOLLOW_UP in _last_user_text(body)


def test_micro_truncate_sends_both_ends_of_a_cleared_result(claude, session):
    home, project, log = session
    done = run_cli("micro", "--keep", "1", "--truncate", "10:12", log, text=True)
    assert done.returncode == 0, done.stderr
    _, (body, *_) = _resume(claude, home, project)
    counted = _results(body)["toolu_01Count"]  # `seq 1 120`
    assert counted.startswith("1\n2\n3\n4\n5")
    assert counted.rstrip("\n").endswith("118\n119\n120")
    assert "characters truncated" in counted and "\n60\n" not in counted
    assert _tool_uses(body) == [step[0] for step in STEPS]


def test_a_compaction_that_keeps_the_end_of_the_history_resumes_as_compactcli_orders_it(claude, session):
    """Claude Code sends the summary, the records the compaction kept and what followed, in the order
    compactcli's chain order gives them (docs/design.md, "Claude Code records")."""
    home, project, log = session
    uuids: dict[str, str] = {}
    records = []
    for record in session_with_a_kept_tail("line of output\n" * 50):
        text = json.dumps(record | {"sessionId": SESSION_ID, "cwd": str(project), "version": "2.1.332"})
        for short in ("u1", "b1", "s1", *(f"u{n}" for n in range(2, 16))):  # Claude Code's own uuids
            text = text.replace(
                f'"{short}"', json.dumps(uuids.setdefault(short, f"00000000-0000-4000-8000-{short:0>12}"))
            )
        records.append(json.loads(text))
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    order = CLAUDE_CODE.new_order()
    for line, record in enumerate(records):
        order.add(line, 0, record)
    expected = [
        b["id"] for line, _ in order.order() for b in _blocks(records[line]) if b.get("type") == "tool_use"
    ]
    assert expected == ["a2", "a3", "b0"]
    _, (body, *_) = _resume(claude, home, project)
    assert _tool_uses(body) == expected
    first = body["messages"][0]["content"]
    assert "Summary: the inputs were counted." in (first if isinstance(first, str) else json.dumps(first))


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    content = record.get("message", {}).get("content")
    return content if isinstance(content, list) else []
