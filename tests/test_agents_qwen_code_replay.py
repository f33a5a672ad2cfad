"""Qwen Code replays a micro-compacted session over ACP with its todo plan and its sub-agent's usage.

The real Qwen Code (pinned in .ci/run) writes a session of a todo_write, a sub-agent (`agent`) call, a second
todo_write and two shell commands against the fake Chat Completions API (tests/helpers/fakeopenai.py); the
sub-agent's own request gets a closing text. `qwen --acp` then loads each copy (`session/load`), which replays
the history as `session/update` notifications (HistoryReplayer.ts): a todo_write's list as a `plan`, a
sub-agent's token usage from its `task_execution` summary. Skips unless Qwen Code is installed.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import copy_home, home_and_project, run_agent
from helpers.cli import run_cli
from helpers.fakeapi import Reply
from helpers.fakeopenai import FakeOpenAI
from test_agents_qwen_code import MODEL, _call_reply, _env, qwen_binary

SUBTASK = "SUBTASK: report the callers of parse()."
# Long enough for micro to clear (it leaves an output no longer than its placeholder would be).
SUB_AGENT_ANSWER = "parse() is called from " + ", ".join(f"src/module{n}.py:{n * 7}" for n in range(30))
TODOS = [
    {"id": "1", "content": "Count the inputs", "status": "in_progress"},
    {"id": "2", "content": "Ask a sub-agent for the callers", "status": "pending"},
]
DONE_FIRST = [{**TODOS[0], "status": "completed"}, {**TODOS[1], "status": "in_progress"}]
STEPS = [
    ("call_01todo", "todo_write", {"todos": TODOS}),
    (
        "call_02agent",
        "agent",
        {"description": "Find callers", "prompt": SUBTASK, "subagent_type": "general-purpose"},
    ),
    ("call_03todo", "todo_write", {"todos": DONE_FIRST}),
    ("call_04count", "run_shell_command", {"command": "seq 1 120"}),
    ("call_05status", "run_shell_command", {"command": "echo build green"}),
]


def _user_text(body: dict[str, Any]) -> str:
    texts = []
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return "\n".join(texts)


class PlannedModel(FakeOpenAI):
    """The model of the parent session plays STEPS, one call per request, then a closing text; the
    sub-agent (its request holds SUBTASK as the user's words) answers at once."""

    def __init__(self) -> None:
        super().__init__(models=(MODEL,))
        self.reply_text = lambda body: SUB_AGENT_ANSWER if SUBTASK in _user_text(body) else "All done."

    def handle(self, rec: Any) -> Reply:
        answer = super().handle(rec)
        if answer.status != 200 or rec.endpoint != "chat" or SUBTASK in _user_text(rec.body):
            return answer
        made = sum(len(m.get("tool_calls") or []) for m in rec.body["messages"])
        return _call_reply(*STEPS[made], rec.body) if made < len(STEPS) else answer


@pytest.fixture(scope="module")
def qwen() -> Path:
    return qwen_binary()


@pytest.fixture(scope="module")
def written(qwen: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(home, project): Qwen Code's own session of the planned task, written once for the module."""
    home, project = home_and_project(tmp_path_factory.mktemp("qwen-plan"))
    with PlannedModel() as api:
        done = run_agent([qwen, "--auth-type", "openai", "--yolo", "Plan, delegate, check."], cwd=project,
                         env=_env(home, api))  # fmt: skip
        assert done.returncode == 0, done.stderr + done.stdout
        statuses = [r.status for r in api.calls()]
    assert statuses == [200] * (len(STEPS) + 2), statuses  # the steps, the sub-agent's request, the close
    return home, project


def _load(qwen: Path, home: Path, project: Path, session_id: str) -> list[dict[str, Any]]:
    """The `session/update`s `qwen --acp` sends while it loads the session (before its answer)."""
    with FakeOpenAI(models=(MODEL,)) as api:
        process = subprocess.Popen(
            [str(qwen), "--acp", "--auth-type", "openai"],
            cwd=project,
            env=_env(home, api),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        timer = threading.Timer(120, process.kill)
        timer.start()
        try:
            updates: list[dict[str, Any]] = []
            requests = [
                ("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False}}}),
                ("session/load", {"sessionId": session_id, "cwd": str(project), "mcpServers": []}),
            ]
            for number, (method, params) in enumerate(requests, 1):
                request = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
                while True:
                    line = process.stdout.readline()
                    assert line, f"qwen --acp ended: {process.stderr.read()}"
                    message = json.loads(line)
                    if message.get("id") == number and "method" not in message:
                        assert "error" not in message, message
                        break
                    if message.get("method") == "session/update":
                        updates.append(message["params"]["update"])
        finally:
            timer.cancel()
            process.kill()
            process.communicate()
    return updates


def _plans(updates: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [u["entries"] for u in updates if u.get("sessionUpdate") == "plan"]


def _usages(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u["_meta"]["usage"] for u in updates if "usage" in (u.get("_meta") or {})]


def _outputs(updates: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        u["toolCallId"]: u.get("rawOutput") for u in updates if u.get("sessionUpdate") == "tool_call_update"
    }


def test_micro_keeps_what_qwen_code_replays_of_the_todo_list_and_the_sub_agent(qwen, written, tmp_path):
    home = copy_home(written[0], tmp_path / "home")
    project = written[1]
    (path,) = (home / ".qwen" / "projects").glob("*/chats/*.jsonl")
    before = _load(qwen, home, project, path.stem)
    expected_plans = [
        [{"content": t["content"], "priority": "medium", "status": t["status"]} for t in todos]
        for todos in (TODOS, DONE_FIRST)
    ]
    assert _plans(before) == expected_plans
    assert SUB_AGENT_ANSWER in json.dumps(_outputs(before)["call_02agent"])
    done = run_cli("micro", "--keep", "1", path, text=True)
    assert done.returncode == 0, done.stderr
    after = _load(qwen, home, project, path.stem)
    assert _plans(after) == expected_plans  # the todo lists are still replayed as the plan
    assert _usages(after) == _usages(before)  # the sub-agent's usage (its executionSummary) among them
    outputs = _outputs(after)
    assert outputs["call_02agent"]["executionSummary"] == _outputs(before)["call_02agent"]["executionSummary"]
    # The sub-agent's final text, its output, is cleared in its answer and in its summary.
    (answer,) = [r for r in map(json.loads, path.read_text().splitlines()) if r.get("uuid") and
                 (r.get("toolCallResult") or {}).get("callId") == "call_02agent"]  # fmt: skip
    assert SUB_AGENT_ANSWER not in json.dumps(answer)
    assert outputs["call_02agent"]["result"] == "[Previous: used agent]"
    assert outputs["call_04count"] == "[Previous: used run_shell_command]"
    assert outputs["call_05status"] == _outputs(before)["call_05status"]  # the last output is kept
