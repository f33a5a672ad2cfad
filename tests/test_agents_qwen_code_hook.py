"""Qwen Code's own SessionEnd hook, installed by `compactcli hooks install qwen-code`, compacts the session
the moment an interactive Qwen Code session ends (the agent tier; skips unless Qwen Code and tmux are
installed).

Qwen Code fires SessionEnd only when an interactive session (or its ACP server) ends, not after a one-shot
prompt, so the real Qwen Code runs in a terminal: tmux (a private server) types the task and `/quit`, as a
person would, and the agent talks to the fake OpenAI API on 127.0.0.1 (the scripted model of
tests/test_agents_qwen_code.py). The project's compactcli.toml makes the hook run `micro --keep 1`; the
compacted session is then resumed with `qwen --resume`, which sends the placeholders.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.agents import Terminal, agent_env, home_and_project, wait_for
from helpers.cli import run_cli
from test_agents_qwen_code import (
    CLEARED_BY_MICRO,
    FINAL,
    MODEL,
    ORIGINAL,
    STEPS,
    TASK,
    ScriptedModel,
    _env,
    _outputs,
    _resume,
    qwen_binary,
)

PROMPT_READY = "Type your message"


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    folder = tmp_path / "tmux"
    folder.mkdir()
    term = Terminal(folder)
    try:
        yield term
    finally:
        term.close()


def test_the_installed_hook_micro_compacts_the_session_qwen_code_just_ended(terminal, tmp_path):
    qwen = qwen_binary()
    home, project = home_and_project(tmp_path)
    (project / "NOTES.md").write_text(
        "".join(f"note {i}: the parser drops trailing commas\n" for i in range(30))
    )
    (project / "compactcli.toml").write_text("[hook]\nrun = 'micro --keep 1'\n")

    with ScriptedModel(project=project) as api:
        env = {**_env(home, api), "TERM": "xterm-256color"}  # a real terminal, as a person has
        install = run_cli("hooks", "install", "qwen-code", env=agent_env(home), text=True)
        assert install.returncode == 0, install.stderr
        settings = json.loads((home / ".qwen" / "settings.json").read_text())
        assert settings["memory"] == {"enableManagedAutoMemory": False}  # the other settings stay
        terminal.start([qwen, "--auth-type", "openai", "--yolo"], cwd=project, env=env)
        wait_for("the prompt", lambda: PROMPT_READY in terminal.screen(), 90, terminal.screen)
        terminal.type(TASK, lambda: bool(api.calls()))
        wait_for("the task's last reply", lambda: FINAL in terminal.screen(), 120, terminal.screen)
        assert [r.status for r in api.calls()] == [200] * (len(STEPS) + 1)
        (path,) = (home / ".qwen" / "projects").glob("*/chats/*.jsonl")
        assert ORIGINAL["call_02log"] in path.read_text()  # nothing compacted while the session is open
        terminal.type("/quit", lambda: not terminal.running())
        wait_for("Qwen Code to exit", lambda: not terminal.running(), 60, terminal.screen)

    log = home / ".cache" / "compactcli" / "hooks.log"
    logged = log.read_text() if log.exists() else "no hook log"
    assert f"qwen-code SessionEnd {path.stem}" in logged, logged
    text = path.read_text()
    assert text.count("[Previous: used run_shell_command]") >= len(CLEARED_BY_MICRO), logged
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in text, call_id
    manifest = [json.loads(line) for line in (path.parent / ".transcripts" / "manifest.jsonl").open()]
    assert [Path(m["source"]).name for m in manifest] == [path.name]
    assert ORIGINAL["call_02log"] in Path(manifest[0]["archive"]).read_text()

    body = _resume(qwen, home, project, path)  # Qwen Code resumes the compacted session
    outputs = _outputs(body)
    for call_id in CLEARED_BY_MICRO:
        assert outputs[call_id] == "[Previous: used run_shell_command]", call_id
    assert ORIGINAL["call_05status"] in outputs["call_05status"]
    assert body["model"] == MODEL
