"""Qwen Code itself resumes the sessions compactcli compacted (the agent tier).

The session is written by the real Qwen Code (`@qwen-code/qwen-code`, pinned in .ci/run): `qwen --auth-type
openai --yolo TASK` runs a scripted task against the fake OpenAI Chat Completions API on 127.0.0.1
(tests/helpers/fakeopenai.py), running real shell commands and reading a real file, and writes its own
session under $HOME/.qwen/projects/<cwd slug>/chats/<session id>.jsonl. Each test compacts a copy of that
home with the installed compactcli, resumes it with `qwen --resume ID PROMPT`, and checks what Qwen Code
then sends the model.
The fake refuses a request a real server would (a role it does not know, a message without content), with
the API's 400.

Skips unless Qwen Code is installed (tests/helpers/agents.py says where it is looked for).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import agent_env, copy_home, home_and_project, require_agent, run_agent
from helpers.cli import run_cli
from helpers.fakeapi import Reply
from helpers.fakeopenai import FakeOpenAI

MODEL = "fake-model"
TASK = "Check the build: count the inputs, show the build log and my notes, then the outputs."
FOLLOW_UP = "What should we look at next?"
FINAL = "The build is green; the notes mention the parser."
RESUMED_REPLY = "Resumed and read the history."

# The task as the model plays it: one call per turn, then a closing message.
STEPS = [
    ("call_01count", "run_shell_command", {"command": "seq 1 120"}),
    ("call_02log", "run_shell_command", {"command": "printf 'build step %s ok\\n' $(seq 1 40)"}),
    ("call_03notes", "read_file", {"file_path": "NOTES.md"}),  # in the project (read_file takes it absolute)
    ("call_04outputs", "run_shell_command", {"command": "seq 500 620"}),
    ("call_05status", "run_shell_command", {"command": "echo build green"}),
]
# What each call really returned: text only the original outputs hold.
ORIGINAL = {
    "call_01count": "\n117\n118\n119\n120",
    "call_02log": "build step 37 ok",
    "call_03notes": "note 29: the parser drops trailing commas",
    "call_04outputs": "\n611\n612\n613",
    "call_05status": "build green",
}
CLEARED_BY_MICRO = ["call_01count", "call_02log", "call_04outputs"]  # --keep 1; read_file is preserved


def _stream(delta: dict[str, Any], finish: str, body: dict[str, Any]) -> Reply:
    """One streamed completion (`"stream": true`, as Qwen Code asks) carrying `delta`, with its usage."""
    sent = len(json.dumps(body.get("messages"))) // 4
    base = {
        "id": "chatcmpl-qwen",
        "object": "chat.completion.chunk",
        "created": 1_767_225_600,
        "model": MODEL,
    }
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {
            **base,
            "choices": [],
            "usage": {"prompt_tokens": sent, "completion_tokens": 20, "total_tokens": sent + 20},
        },
    ]
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return Reply(body=text, headers={"content-type": "text/event-stream"})


def _call_reply(call_id: str, name: str, args: dict[str, Any], body: dict[str, Any]) -> Reply:
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return _stream({"content": None, "tool_calls": [call]}, "tool_calls", body)


class ScriptedModel(FakeOpenAI):
    """The fake API playing the model: the first task's STEPS, one call per request, then FINAL; a resumed
    session gets `reply`. Every request is recorded and checked as the fake checks it."""

    def __init__(self, reply: str | None = None, project: Path | None = None) -> None:
        super().__init__(models=(MODEL,))
        self.reply = reply
        self.project = project
        self.reply_text = lambda body: reply or FINAL

    def handle(self, rec: Any) -> Reply:
        answer = super().handle(rec)
        if answer.status != 200 or rec.endpoint != "chat" or self.reply is not None:
            return answer
        made = sum(len(m.get("tool_calls") or []) for m in rec.body["messages"])
        if made >= len(STEPS):
            return answer
        call_id, name, args = STEPS[made]
        if "file_path" in args and self.project is not None:
            args = {**args, "file_path": str(self.project / args["file_path"])}
        return _call_reply(call_id, name, args, rec.body)


def _env(home: Path, api: FakeOpenAI) -> dict[str, str]:
    settings = home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    # No background memory extraction: every request the fake sees is a turn of the session.
    settings.write_text(json.dumps({"memory": {"enableManagedAutoMemory": False}}))
    return agent_env(home, OPENAI_BASE_URL=api.url, OPENAI_API_KEY="sk-fake", OPENAI_MODEL=MODEL)


def qwen_binary() -> Path:
    """The installed Qwen Code; skips the test without it."""
    return require_agent("qwen", "COMPACTCLI_QWEN", "@qwen-code/qwen-code")


@pytest.fixture(scope="module")
def qwen() -> Path:
    return qwen_binary()


@pytest.fixture(scope="module")
def written(qwen: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(home, project): Qwen Code's own session of the scripted task, written once for the module."""
    home, project = home_and_project(tmp_path_factory.mktemp("qwen"))
    (project / "NOTES.md").write_text(
        "".join(f"note {i}: the parser drops trailing commas\n" for i in range(30))
    )
    with ScriptedModel(project=project) as api:
        done = run_agent([qwen, "--auth-type", "openai", "--yolo", TASK], cwd=project, env=_env(home, api))
        assert done.returncode == 0, done.stderr + done.stdout
        assert FINAL in done.stdout
        statuses = [r.status for r in api.calls()]
    assert statuses == [200] * (len(STEPS) + 1), statuses
    return home, project


@pytest.fixture
def session(written: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """(home, project, session file): a fresh copy of the home for this test."""
    home = copy_home(written[0], tmp_path / "home")
    (found,) = (home / ".qwen" / "projects").glob("*/chats/*.jsonl")
    return home, written[1], found


def _resume(qwen: Path, home: Path, project: Path, session: Path) -> dict[str, Any]:
    """Resume the session with a new prompt; the body of the first request Qwen Code sends."""
    with ScriptedModel(RESUMED_REPLY) as api:
        argv = [qwen, "--auth-type", "openai", "--yolo", "--resume", session.stem, FOLLOW_UP]
        run = run_agent(argv, cwd=project, env=_env(home, api))
        calls = api.calls()
    assert calls, f"Qwen Code sent nothing: {run.stderr}{run.stdout}"
    rejected = [c for c in calls if c.status != 200]
    assert not rejected, f"the API refused what Qwen Code sent: {rejected[0].status} {run.stderr}"
    assert run.returncode == 0, run.stderr + run.stdout
    assert RESUMED_REPLY in run.stdout
    return calls[0].body


def _outputs(body: dict[str, Any]) -> dict[str, str]:
    found = {}
    for m in body["messages"]:
        if m["role"] == "tool":
            content = m["content"]
            found[m["tool_call_id"]] = (
                content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
            )
    return found


def _calls(body: dict[str, Any]) -> list[str]:
    return [c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def _texts(body: dict[str, Any], role: str) -> list[str]:
    out = []
    for m in body["messages"]:
        if m["role"] == role:
            content = m["content"]
            out.append(
                content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
            )
    return out


def test_the_session_is_read_as_qwen_code(session):
    _, _, path = session
    done = run_cli("validate", "--json", path, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.splitlines()[0])["stats"]["dialect"] == "qwen-code"


def test_uncompacted_session_resumes_with_every_original_output(qwen, session):
    home, project, path = session
    body = _resume(qwen, home, project, path)
    assert _calls(body) == [step[0] for step in STEPS]
    outputs = _outputs(body)
    for call_id, text in ORIGINAL.items():
        assert text in outputs[call_id], call_id
    assert _texts(body, "user")[-1] == FOLLOW_UP


def test_micro_compacted_session_resumes_with_placeholders(qwen, session):
    home, project, path = session
    done = run_cli("micro", "--keep", "1", path, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(qwen, home, project, path)
    outputs = _outputs(body)
    assert _calls(body) == [step[0] for step in STEPS]  # every call still there, each answered
    for call_id in CLEARED_BY_MICRO:
        assert outputs[call_id] == "[Previous: used run_shell_command]", call_id
    assert ORIGINAL["call_03notes"] in outputs["call_03notes"]  # Qwen Code's read tool is preserved
    assert ORIGINAL["call_05status"] in outputs["call_05status"]  # the last output is kept
    sent = json.dumps(body)
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in sent, f"{call_id}'s output was still sent"
    assert _texts(body, "user")[-1] == FOLLOW_UP


def test_micro_leaves_no_copy_of_a_cleared_output_in_the_session(session):
    """Qwen Code keeps the UI's copy of each output in toolCallResult.resultDisplay; micro clears it too."""
    _, _, path = session
    assert ORIGINAL["call_02log"] in path.read_text()
    done = run_cli("micro", "--keep", "1", path, text=True)
    assert done.returncode == 0, done.stderr
    text = path.read_text()
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in text, call_id


def test_summarized_session_resumes_from_the_summary(qwen, session):
    """summarize appends the compression as Qwen Code does, every record kept; Qwen Code resumes from it
    and sends the summary, not the summarized turns, then appends its new turn after the compression."""
    home, project, path = session
    before = path.read_bytes()
    done = run_cli("summarize", "--backend", "digest", path, text=True)
    assert done.returncode == 0, done.stderr
    written = path.read_bytes()
    assert written.startswith(before) and written.count(b"\n") == before.count(b"\n") + 1
    compression = json.loads(written.splitlines()[-1])
    body = _resume(qwen, home, project, path)
    summaries = [t for t in _texts(body, "user") if t.startswith("[Conversation compressed. Transcript: ")]
    assert len(summaries) == 1
    assert TASK in summaries[0]  # the digest names the task
    assert "Got it. Thanks for the additional context!" in _texts(body, "assistant")
    assert _calls(body) == [] and _outputs(body) == {}  # everything before the summary is gone
    sent = json.dumps(body)
    for call_id in (*CLEARED_BY_MICRO, "call_03notes"):  # ("build green" is in the command, too)
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in sent, call_id
    assert _texts(body, "user")[-1] == FOLLOW_UP
    # Qwen Code kept the file and went on from the compression: its new prompt is the compression's child
    resumed = path.read_bytes()
    assert resumed.startswith(written)
    prompt = next(
        json.loads(raw)
        for raw in resumed[len(written) :].splitlines()
        if json.loads(raw).get("type") == "user" and FOLLOW_UP in raw.decode()
    )
    assert prompt["parentUuid"] == compression["uuid"]


def test_summary_that_keeps_the_last_messages_keeps_their_pairs(qwen, session):
    home, project, path = session
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "2", path, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(qwen, home, project, path)
    assert _calls(body) == ["call_05status"]
    assert ORIGINAL["call_05status"] in _outputs(body)["call_05status"]
    assert any(t.startswith("[Conversation compressed. ") for t in _texts(body, "user"))
    assert _texts(body, "assistant")[-1] == FINAL
    sent = json.dumps(body)
    for call_id in ("call_01count", "call_02log", "call_03notes", "call_04outputs"):
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in sent, call_id  # summarized, not sent


def test_micro_after_summarize_still_resumes_with_the_kept_output(qwen, session):
    """The kept call's output is in the file twice (its record and the compression): micro --keep 1
    counts it once and keeps both, and Qwen Code sends it whole."""
    home, project, path = session
    assert run_cli("summarize", "--backend", "digest", "--keep-last", "2", path).returncode == 0
    done = run_cli("micro", "--keep", "1", path, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(qwen, home, project, path)
    assert _calls(body) == ["call_05status"]
    assert ORIGINAL["call_05status"] in _outputs(body)["call_05status"]
