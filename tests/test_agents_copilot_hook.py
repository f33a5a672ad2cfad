"""Copilot CLI's own SessionEnd hook, installed by `compactcli hooks install copilot`, compacts the session
the moment Copilot ends it (the agent tier; skips unless Copilot is installed, as in
tests/test_agents_copilot.py).

Copilot runs in its bring-your-own-key mode against the fake Messages API on 127.0.0.1 with a private
$COPILOT_HOME; the scripted task makes six shell calls, so micro's default (the last 3 kept) clears three."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import PREFIX, agent_env, copilot_env, require_agent, run_agent, tool_uses_sent
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic

MODEL = "claude-sonnet-4.5"
STEPS = [(f"toolu_0{n}step", f"printf 'step {n} line %s ok\\n' $(seq 1 40)") for n in range(1, 7)]
FINAL = "All six steps ran."


@pytest.fixture(scope="module")
def copilot() -> Path:
    return require_agent("copilot", "COMPACTCLI_COPILOT", "@github/copilot")


def _env(home: Path, api: FakeAnthropic) -> dict[str, str]:
    return copilot_env(home, api, MODEL)


def _play(body: dict[str, Any]) -> list[dict[str, Any]]:
    done = tool_uses_sent(body)
    if done >= len(STEPS):
        return [{"type": "text", "text": FINAL}]
    call_id, command = STEPS[done]
    return [
        {
            "type": "tool_use",
            "id": call_id,
            "name": "bash",
            "input": {"command": command, "description": "step"},
        }
    ]


def test_the_installed_hook_micro_compacts_the_session_copilot_just_ended(copilot, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".copilot").mkdir(parents=True)
    project.mkdir()
    settings = home / ".copilot" / "settings.json"
    settings.write_text('{\n  "footer": {"showQuota": false}\n}\n')
    env = {"HOME": str(home), "COPILOT_HOME": str(home / ".copilot"), "XDG_CACHE_HOME": str(home / ".cache")}
    install = run_cli("hooks", "install", "copilot", env=agent_env(home, **env), text=True)
    assert install.returncode == 0, install.stderr
    assert json.loads(settings.read_text())["footer"] == {"showQuota": False}

    with FakeAnthropic() as api:
        api.reply_blocks = _play
        done = run_agent(
            [copilot, "-p", "Run the six steps.", "-s", "--allow-all-tools"], cwd=project, env=_env(home, api)
        )
        assert done.returncode == 0, done.stderr + done.stdout
    (folder,) = (home / ".copilot" / "session-state").glob("*-*-*-*-*/")
    events, manifest_file = folder / "events.jsonl", folder / ".transcripts" / "manifest.jsonl"
    # The hook detached: its background process compacts once Copilot has written and let go of the file.
    deadline = time.monotonic() + 60
    while not manifest_file.is_file() and time.monotonic() < deadline:
        time.sleep(0.5)
    log = PREFIX.parent / "copilot-unpacked" / "compactcli" / "hooks.log"  # Copilot's XDG_CACHE_HOME
    assert manifest_file.is_file(), log.read_text()[-2000:] if log.exists() else "no hook log"

    outputs = {}
    for line in events.open(encoding="utf-8"):
        event = json.loads(line)
        if event["type"] == "tool.execution_complete":
            outputs[event["data"]["toolCallId"]] = event["data"]["result"]["content"]
    assert list(outputs) == [call_id for call_id, _ in STEPS]
    cleared = [call_id for call_id, text in outputs.items() if text == "[Previous: used bash]"]
    assert cleared == [call_id for call_id, _ in STEPS[:3]], outputs
    assert all(f"step {n} line 40 ok" in outputs[STEPS[n - 1][0]] for n in (4, 5, 6))
    manifest = [json.loads(line) for line in manifest_file.open()]
    assert [Path(m["source"]).name for m in manifest] == ["events.jsonl"]
    assert "step 1 line 40 ok" in Path(manifest[0]["archive"]).read_text()

    with FakeAnthropic() as api:  # Copilot resumes the compacted session and sends the placeholders
        api.reply_blocks = lambda body: [{"type": "text", "text": "Resumed."}]
        argv = [copilot, f"--resume={events.parent.name}", "-p", "And now?", "-s", "--allow-all-tools"]
        run = run_agent(argv, cwd=project, env=_env(home, api))
        calls = api.calls("messages")
    assert run.returncode == 0, run.stderr + run.stdout
    assert calls and all(c.status == 200 for c in calls)
    sent = json.dumps(calls[0].body)
    assert "step 1 line 40 ok" not in sent and "step 6 line 40 ok" in sent
