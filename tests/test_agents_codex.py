"""The Codex CLI itself resumes the rollouts compactcli compacted (the agent tier).

The rollout is written by the real Codex CLI: `codex exec` runs a scripted task against the fake
Responses API on 127.0.0.1 (tests/helpers/fakeresponses.py), running real shell commands, and writes its own
rollout under $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl. Each test compacts a
copy with the installed compactcli, resumes it with `codex exec resume ID ...`, and checks what Codex
then sends the model. The fake refuses an input whose function calls and outputs are not paired,
with the real API's 400.

Skips unless Codex is installed (tests/helpers/agents.py says where it is looked for).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import agent_env, home_and_project, require_agent, run_agent
from helpers.cli import run_cli
from helpers.fakeresponses import FakeResponses, function_call, message

TASK = "Check the build: count the inputs, show the build log and my notes, then the outputs."
SECOND_TASK = "Is the build green?"
FOLLOW_UP = "What should we look at next?"
RESUMED_REPLY = "Resumed and read the history."
PLACEHOLDER = "[Previous: used exec_command]"

# The task as the model plays it: one exec_command call per turn, then a closing message.
STEPS = [
    ("call_01count", "seq 1 120"),
    ("call_02log", "printf 'build step %s ok\\n' $(seq 1 40)"),
    ("call_03notes", "cat NOTES.md"),
    ("call_04outputs", "seq 500 620"),
    ("call_05status", "echo build green"),
]
# What each command really printed: text only the original outputs hold.
ORIGINAL = {
    "call_01count": "\n117\n118\n119\n120",
    "call_02log": "build step 37 ok",
    "call_03notes": "note 29: the parser drops trailing commas",
    "call_04outputs": "\n611\n612\n613",
    "call_05status": "build green",
}
CLEARED_BY_MICRO = ["call_01count", "call_02log", "call_03notes", "call_04outputs"]  # --keep 1


def _codex_env(home: Path, api: FakeResponses) -> dict[str, str]:
    """A private CODEX_HOME whose config sends every model call to `api`."""
    codex_home = home / "codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        f"""model = "gpt-5.1-codex"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{api.url}"
wire_api = "responses"
env_key = "FAKE_OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""
    )
    return agent_env(home, CODEX_HOME=str(codex_home), FAKE_OPENAI_API_KEY=api.api_key)


def _reasoning(response: int) -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": f"Plan for response {response}."}]
    return {"type": "reasoning", "summary": summary, "encrypted_content": f"ZW5jcnlwdGVk{response}"}


def _play_steps(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every response reasons first; the first task runs STEPS, any later prompt gets a message."""
    response = sum(1 for item in body["input"] if item.get("type") == "reasoning")
    call = sum(1 for item in body["input"] if item.get("type") == "function_call")
    if call >= len(STEPS):
        return [_reasoning(response), message("The build is green; the notes mention the parser.")]
    call_id, command = STEPS[call]
    return [_reasoning(response), function_call(call_id, "exec_command", {"cmd": command})]


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_agent("codex", "COMPACTCLI_CODEX", "@openai/codex")


@pytest.fixture
def session(codex: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(home, project, rollout): Codex's own rollout of the scripted task and a second prompt, written
    for this test.

    Not copied from one run to the next: Codex finds a rollout through the path its state database
    (in CODEX_HOME) recorded, so a copied home would resume the original file."""
    home, project = home_and_project(tmp_path)
    (project / "NOTES.md").write_text(
        "".join(f"note {i}: the parser drops trailing commas\n" for i in range(30))
    )
    with FakeResponses() as api:
        api.reply_items = _play_steps
        done = run_agent(
            [codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", TASK],
            cwd=project,
            env=_codex_env(home, api),
        )
        assert done.returncode == 0, done.stderr + done.stdout
        resume = [codex, "exec", "--skip-git-repo-check", "resume", _session_id(_rollout(home)), SECOND_TASK]
        done = run_agent(resume, cwd=project, env=_codex_env(home, api))
        assert done.returncode == 0, done.stderr + done.stdout
        assert [r.status for r in api.calls()] == [200] * (len(STEPS) + 2)
    return home, project, _rollout(home)


def _rollout(home: Path) -> Path:
    (found,) = (home / "codex" / "sessions").glob("*/*/*/rollout-*.jsonl")
    return found


def _session_id(rollout: Path) -> str:
    with rollout.open() as lines:
        first = json.loads(lines.readline())
    assert first["type"] == "session_meta"
    return first["payload"]["id"]


def _resume(codex: Path, home: Path, project: Path, session_id: str) -> dict[str, Any]:
    """Resume the rollout with a new prompt; the body of the first request Codex sends."""
    with FakeResponses() as api:
        api.reply_items = lambda body: [message(RESUMED_REPLY)]
        env = _codex_env(home, api)
        run = run_agent(
            [codex, "exec", "--skip-git-repo-check", "resume", session_id, FOLLOW_UP], cwd=project, env=env
        )
        calls = api.calls()
    assert calls, f"Codex sent nothing: {run.stderr}{run.stdout}"
    rejected = [c for c in calls if c.status != 200]
    assert not rejected, f"the API refused what Codex sent: {rejected[0].status} {run.stderr}"
    assert run.returncode == 0, run.stderr + run.stdout
    assert RESUMED_REPLY in run.stdout
    return calls[0].body


def _outputs(body: dict[str, Any]) -> dict[str, str]:
    return {i["call_id"]: i["output"] for i in body["input"] if i.get("type") == "function_call_output"}


def _calls(body: dict[str, Any]) -> list[str]:
    return [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]


def _reasoning_sent(body: dict[str, Any]) -> list[str]:
    return [i["encrypted_content"] for i in body["input"] if i.get("type") == "reasoning"]


def _texts(body: dict[str, Any], role: str) -> list[str]:
    return [
        part["text"]
        for i in body["input"]
        if i.get("type") == "message" and i.get("role") == role
        for part in i["content"]
        if "text" in part
    ]


def test_uncompacted_rollout_resumes_with_every_original_output(codex, session):
    home, project, rollout = session
    body = _resume(codex, home, project, _session_id(rollout))
    outputs = _outputs(body)
    assert _calls(body) == [step[0] for step in STEPS]
    for call_id, text in ORIGINAL.items():
        assert text in outputs[call_id], call_id
    assert _texts(body, "user")[-1] == FOLLOW_UP


def test_micro_compacted_rollout_resumes_with_placeholders(codex, session):
    home, project, rollout = session
    done = run_cli("micro", "--keep", "1", rollout, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(codex, home, project, _session_id(rollout))
    outputs = _outputs(body)
    assert _calls(body) == [step[0] for step in STEPS]  # every call still there, each answered
    for call_id in CLEARED_BY_MICRO:
        assert outputs[call_id] == PLACEHOLDER
    assert ORIGINAL["call_05status"] in outputs["call_05status"]  # the last output is kept
    sent = json.dumps(body)
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in sent, f"{call_id}'s output was still sent"
    assert _texts(body, "user")[-1] == FOLLOW_UP


def test_micro_leaves_no_copy_of_a_cleared_output_in_the_rollout(session):
    """Codex 0.171 copies each command's output into an item_completed event; micro clears it too."""
    _, _, rollout = session
    assert ORIGINAL["call_02log"] in rollout.read_text()
    done = run_cli("micro", "--keep", "1", rollout, text=True)
    assert done.returncode == 0, done.stderr
    text = rollout.read_text()
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in text, call_id


def test_summarized_rollout_resumes_from_the_summary(codex, session):
    home, project, rollout = session
    done = run_cli("summarize", "--backend", "digest", rollout, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(codex, home, project, _session_id(rollout))
    summaries = [t for t in _texts(body, "user") if t.startswith("[Conversation compressed. Transcript: ")]
    assert len(summaries) == 1
    assert TASK in summaries[0]  # the digest names the task
    assert _calls(body) == [] and _outputs(body) == {}  # everything before the summary is gone
    sent = json.dumps(body)
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in sent
    assert _texts(body, "user")[-1] == FOLLOW_UP


def test_summary_that_keeps_the_last_messages_keeps_their_pairs(codex, session):
    """--keep-last 8 would start at the last output (the second prompt brought Codex's permissions and
    environment messages) and part it from its call; the cut moves so the pair stays."""
    home, project, rollout = session
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "8", rollout, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(codex, home, project, _session_id(rollout))
    assert _calls(body) == ["call_05status"]
    assert ORIGINAL["call_05status"] in _outputs(body)["call_05status"]
    assert any(t.startswith("[Conversation compressed. ") for t in _texts(body, "user"))


def test_uncompacted_rollout_resumes_with_every_reasoning_item(codex, session):
    home, project, rollout = session
    body = _resume(codex, home, project, _session_id(rollout))
    assert _reasoning_sent(body) == [_reasoning(n)["encrypted_content"] for n in range(len(STEPS) + 2)]


def test_micro_drop_thinking_sends_only_the_last_turns_reasoning(codex, session):
    home, project, rollout = session
    done = run_cli("micro", "--keep", "10", "--drop-thinking", rollout, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(codex, home, project, _session_id(rollout))
    assert _reasoning_sent(body) == [_reasoning(len(STEPS) + 1)["encrypted_content"]]
    assert _calls(body) == [step[0] for step in STEPS]
    assert ORIGINAL["call_02log"] in _outputs(body)["call_02log"]  # outputs untouched


def test_micro_truncate_sends_both_ends_of_a_cleared_output(codex, session):
    home, project, rollout = session
    done = run_cli("micro", "--keep", "1", "--truncate", "10:12", rollout, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(codex, home, project, _session_id(rollout))
    counted = _outputs(body)["call_01count"]  # `seq 1 120`, after Codex's own header
    assert counted.startswith("Chunk ID: ")
    assert counted.rstrip("\n").endswith("118\n119\n120")
    assert "characters truncated" in counted and "\n60\n" not in counted
    assert _calls(body) == [step[0] for step in STEPS]


def test_a_summary_that_keeps_the_last_messages_resumes_again_over_its_ordinal_gap(codex, session):
    """Codex 0.171 numbers every line (`ordinal`, session_meta 0). The summary's two records are 1 and 2
    and the kept lines keep their numbers, so the numbers jump; Codex goes on from the last line's number
    and resumes the rollout again and again."""
    home, project, rollout = session
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "8", rollout, text=True)
    assert done.returncode == 0, done.stderr
    ordinals = _ordinals(rollout)
    assert ordinals[:3] == [0, 1, 2] and ordinals[3] > 3  # the gap
    for _ in range(2):
        _resume(codex, home, project, _session_id(rollout))  # each refused resume fails here
    after = _ordinals(rollout)
    assert after[: len(ordinals)] == ordinals and len(after) > len(ordinals)
    assert after[len(ordinals) :] == list(
        range(ordinals[-1] + 1, ordinals[-1] + 1 + len(after) - len(ordinals))
    )


def _ordinals(rollout: Path) -> list[int]:
    return [json.loads(line)["ordinal"] for line in rollout.read_text().splitlines()]
