"""pi itself resumes the sessions compactcli compacted (the agent tier).

The session is written by the real pi coding agent (`@mariozechner/pi-coding-agent`): `pi -p` runs a
scripted task against the fake Messages API on 127.0.0.1 (tests/helpers/fakeapi.py, a provider of `api`
"anthropic-messages" in $HOME/.pi/agent/models.json), running its real bash and read tools, and writes
its own session under $HOME/.pi/agent/sessions/<cwd slug>/. Each test compacts a copy of that session
with the installed compactcli, resumes it with `pi --session FILE -p ...`, and checks what pi then sends
the model. The fake API refuses a request whose tool_use / tool_result blocks are not paired, with the
real API's 400.

pi's own auto-compaction is switched off in its settings, so what it sends is what the file holds. Skips
unless pi is installed (`$COMPACTCLI_PI`, else the npm prefix .ci/run installs into; tests/helpers/agents.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import agent_env, copy_home, home_and_project, require_agent, run_agent
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic

TASK = "Check the build: count the inputs, read my notes, then count the outputs."
SECOND_TASK = "Is the build green?"
FOLLOW_UP = "What should we look at next?"
MODEL = "fake-model"

# (tool call id, pi tool, input), one per model call, then a closing text.
STEPS = [
    ("toolu_01Count", "bash", {"command": "seq 1 120"}),
    ("toolu_02Notes", "read", {"path": "NOTES.md"}),
    ("toolu_03Outputs", "bash", {"command": "seq 500 620"}),
    ("toolu_04Status", "bash", {"command": "echo build green"}),
]
# Text only the original results hold.
ORIGINAL = {
    "toolu_01Count": "\n117\n118\n119\n120",
    "toolu_02Notes": "note 29: the parser drops trailing commas",
    "toolu_03Outputs": "\n611\n612\n613",
    "toolu_04Status": "build green",
}
CLEARED_BY_MICRO = ["toolu_01Count", "toolu_03Outputs"]  # --keep 1; pi's read is preserved, the last is short


def _play_steps(body: dict[str, Any]) -> list[dict[str, Any]]:
    call = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if call >= len(STEPS):
        return [{"type": "text", "text": "The build is green; the notes mention the parser."}]
    tool_id, name, tool_input = STEPS[call]
    return [
        {"type": "text", "text": f"Step {call + 1}: {name}."},
        {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input},
    ]


def _configure(home: Path, api: FakeAnthropic) -> None:
    """pi's provider is the fake API; its own compaction is off."""
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    provider = {
        "baseUrl": api.url,
        "api": "anthropic-messages",
        "apiKey": api.api_key,
        "models": [{"id": MODEL, "contextWindow": 200_000}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    (agent / "settings.json").write_text(json.dumps({"compaction": {"enabled": False}}))


def _pi(pi: Path, home: Path, project: Path, api: FakeAnthropic, *argv: str | Path) -> None:
    _configure(home, api)
    done = run_agent(
        [pi, "--provider", "fake", "--model", MODEL, *argv], cwd=project, env=agent_env(home, PI_OFFLINE="1")
    )
    assert done.returncode == 0, done.stderr + done.stdout


@pytest.fixture(scope="module")
def pi() -> Path:
    return require_agent("pi", "COMPACTCLI_PI", "@mariozechner/pi-coding-agent")


@pytest.fixture(scope="module")
def recorded(pi: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(home, project): pi's own session of the scripted task and a second prompt, written once."""
    home, project = home_and_project(tmp_path_factory.mktemp("pi"))
    (project / "NOTES.md").write_text(
        "".join(f"note {i}: the parser drops trailing commas\n" for i in range(30))
    )
    with FakeAnthropic() as api:
        api.reply_blocks = _play_steps
        _pi(pi, home, project, api, "-p", TASK)
        _pi(pi, home, project, api, "--session", _session(home), "-p", SECOND_TASK)
        assert [r.status for r in api.calls("messages")] == [200] * (len(STEPS) + 2)
    return home, project


def _session(home: Path) -> Path:
    (found,) = (home / ".pi" / "agent" / "sessions").glob("*/*.jsonl")  # not the archives below it
    return found


def _resume(pi: Path, home: Path, project: Path, session: Path | None = None) -> dict[str, Any]:
    """Resume the session (the one in `home`, or `session`) with one more prompt; the request pi sent."""
    with FakeAnthropic() as api:
        api.reply_text = lambda body: "Resumed and read the history."
        _pi(pi, home, project, api, "--session", session or _session(home), "-p", FOLLOW_UP)
        calls = api.calls("messages")
    assert [r.status for r in calls] == [200], [r.status for r in calls]
    return calls[0].body


def _results(body: dict[str, Any]) -> dict[str, str]:
    found = {}
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_result":
                content = block["content"]
                if isinstance(content, list):
                    content = "".join(b.get("text", "") for b in content)
                found[block["tool_use_id"]] = content
    return found


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def test_the_recorded_session_is_read_as_pi(recorded: tuple[Path, Path]) -> None:
    session = _session(recorded[0])
    done = run_cli("validate", "--json", session, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["dialect"] == "pi"
    estimate = json.loads(run_cli("estimate", "--json", session, text=True).stdout)
    assert estimate["stats"]["tokens"] > 0


def test_pi_resumes_after_micro_and_sends_the_placeholders(
    pi: Path, recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    home = copy_home(recorded[0], tmp_path / "home")
    session = _session(home)
    before = session.read_bytes()
    done = run_cli("micro", "--keep", "1", session, text=True)
    assert done.returncode == 0, done.stderr
    assert run_cli("micro", "--keep", "1", "--check", session).returncode == 0  # idempotent
    body = _resume(pi, home, recorded[1])
    sent = _results(body)
    assert set(sent) == set(ORIGINAL)
    for tool_id in CLEARED_BY_MICRO:
        assert sent[tool_id] == "[Previous: used bash]"
    for tool_id in set(ORIGINAL) - set(CLEARED_BY_MICRO):
        assert ORIGINAL[tool_id] in sent[tool_id]
    # pi appended the new turn to the rewritten file; the lines micro did not change are the original's
    after = session.read_bytes().splitlines()
    assert len(after) > len(before.splitlines())
    assert sum(old != new for old, new in zip(before.splitlines(), after, strict=False)) == len(
        CLEARED_BY_MICRO
    )


def test_pi_resumes_after_summarize_from_the_summary(
    pi: Path, recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    home = copy_home(recorded[0], tmp_path / "home")
    session = _session(home)
    before = session.read_bytes()
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "2", session, text=True)
    assert done.returncode == 0, done.stderr
    written = session.read_bytes()
    assert written.startswith(before) and written.count(b"\n") == before.count(b"\n") + 1  # appended
    compaction = json.loads(written.splitlines()[-1])
    assert compaction["type"] == "compaction" and compaction["firstKeptEntryId"]
    again = run_cli("summarize", "--backend", "digest", "--keep-last", "2", session, text=True)
    assert again.returncode == 0 and session.read_bytes() == written  # nothing left to summarize
    body = _resume(pi, home, recorded[1])
    first = _text(body["messages"][0])
    assert first.startswith("The conversation history before this point was compacted")
    assert "[Conversation compressed. Transcript: " in first
    assert TASK in first  # the user's own words follow the summary
    # The first task's calls are summarized away; what was kept and the new prompt follow the summary.
    assert not set(_results(body)) & {"toolu_01Count", "toolu_02Notes"}
    assert _text(body["messages"][-1]) == FOLLOW_UP
    assert SECOND_TASK in "".join(_text(m) for m in body["messages"][1:])
    archive = Path(first.split("Transcript: ", 1)[1].split("]", 1)[0])
    assert archive.read_bytes() == before
    shutil.rmtree(home)


def test_pi_resumes_what_replay_writes(pi: Path, recorded: tuple[Path, Path], tmp_path: Path) -> None:
    """replay -o writes a session pi reads: the header first (pi resets a file without one), then the
    simulated context, the compaction replay made hanging from nothing and the later entries from it."""
    home = copy_home(recorded[0], tmp_path / "home")
    session = _session(home)
    out = tmp_path / "replayed.jsonl"
    args = ("replay", "--backend", "digest", "--threshold", "600", "--json", "-o", out, session)
    done = run_cli(*args, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["compactions"]["auto"] >= 1
    assert out.read_bytes().splitlines()[0] == session.read_bytes().splitlines()[0]  # the header
    written = out.read_bytes()
    body = _resume(pi, home, recorded[1], out)
    first = _text(body["messages"][0])
    assert first.startswith("The conversation history before this point was compacted")
    assert "[Conversation compressed. Transcript: " in first
    assert not set(_results(body)) & {"toolu_01Count", "toolu_02Notes"}  # summarized
    assert _text(body["messages"][-1]) == FOLLOW_UP
    assert out.read_bytes().startswith(written)  # pi went on with the file, it did not start it anew
