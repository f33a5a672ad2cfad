"""The hook in the real Claude Code (the agent tier): installed by `compactcli hooks install claude-code`
in a private HOME beside a hook of the user's own, it compacts the session when Claude Code ends it, and the
session still resumes. Skips unless Claude Code is installed (tests/helpers/agents.py)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from helpers.agents import agent_env, home_and_project, require_agent, run_agent
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic
from helpers.fakeresponses import FakeResponses
from test_agents_claude_code import (
    ORIGINAL,
    SECOND_TASK,
    SESSION_ID,
    STEPS,
    TASK,
    _claude_env,
    _play_steps,
    _results,
    _tool_uses,
)

CLEARED = ["toolu_01Count", "toolu_02Log"]  # micro's defaults: the last 3 results kept, Read preserved
REPLY = "Resumed with the hook."


@pytest.fixture
def claude() -> Path:
    return require_agent("claude", "COMPACTCLI_CLAUDE", "@anthropic-ai/claude-code")


def _record(claude: Path, home: Path, project: Path) -> Path:
    notes = project / "NOTES.md"
    notes.write_text("".join(f"note {i}: the parser drops trailing commas\n" for i in range(30)))
    with FakeAnthropic() as api:
        api.reply_blocks = _play_steps(notes)
        done = run_agent(
            [claude, "-p", TASK, "--session-id", SESSION_ID, "--allowedTools", "Bash", "Read"],
            cwd=project,
            env=_claude_env(home, api),
        )
        assert done.returncode == 0, done.stderr + done.stdout
    (log,) = (home / ".claude" / "projects").glob(f"*/{SESSION_ID}.jsonl")
    return log


def _resume(claude: Path, home: Path, project: Path, prompt: str):
    with FakeAnthropic() as api:
        api.reply_blocks = lambda body: [{"type": "text", "text": REPLY}]
        started = time.monotonic()
        run = run_agent(
            [claude, "--resume", SESSION_ID, "-p", prompt], cwd=project, env=_claude_env(home, api)
        )
        took = time.monotonic() - started
        calls = api.calls("messages")
    assert run.returncode == 0, run.stderr + run.stdout
    assert calls and all(c.status == 200 for c in calls), [c.status for c in calls]
    return run, calls[0].body, took


def _cleared_in_file(log: Path) -> dict[str, str]:
    out = {}
    for line in log.read_text().splitlines():
        record = json.loads(line)
        content = (record.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                out[block["tool_use_id"]] = inner if isinstance(inner, str) else json.dumps(inner)
    return out


def test_session_end_hook_compacts_the_session_which_still_resumes(claude: Path, tmp_path: Path) -> None:
    home, project = home_and_project(tmp_path)
    log = _record(claude, home, project)
    marker = tmp_path / "own-hook-payload.json"
    settings = home / ".claude" / "settings.json"
    own = {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": f"cat > {marker}"}]}]}}
    settings.write_text(json.dumps(own, indent=2) + "\n")
    original_settings = settings.read_text()

    installed = run_cli("hooks", "install", "claude-code", env=agent_env(home), text=True)
    assert installed.returncode == 0, installed.stderr
    before = log.read_bytes()

    _, body, took = _resume(claude, home, project, SECOND_TASK)
    # The resumed turn still sent every original result: the hook runs when the session ends.
    for tool_id in CLEARED:
        assert ORIGINAL[tool_id] in _results(body)[tool_id]
    # The user's own SessionEnd hook ran too, and was handed what compactcli's was.
    payload = json.loads(marker.read_text())
    assert payload["hook_event_name"] == "SessionEnd" and payload["session_id"] == SESSION_ID
    assert payload["transcript_path"] == str(log) and payload["reason"] == "other"
    print(f"Claude Code's SessionEnd payload: {sorted(payload)}")

    in_file = _cleared_in_file(log)
    for tool_id in CLEARED:
        assert in_file[tool_id] == "[Previous: used Bash]", tool_id
    assert ORIGINAL["toolu_03Notes"] in in_file["toolu_03Notes"]
    assert SECOND_TASK in log.read_text()  # the turn Claude Code appended is there, then compacted
    manifest = [json.loads(line) for line in (log.parent / ".transcripts" / "manifest.jsonl").open()]
    assert len(manifest) == 1 and manifest[0]["command"] == "micro"
    archived = Path(manifest[0]["archive"]).read_bytes()
    assert archived.startswith(before) and len(archived) > len(before)
    hook_log = (home / ".cache" / "compactcli" / "hooks.log").read_text()
    assert f"claude-code SessionEnd {SESSION_ID} {log}: exit 0" in hook_log

    # Resumes from the compacted file, the placeholders sent and every call still answered.
    _, body, _ = _resume(claude, home, project, "And now?")
    results = _results(body)
    assert _tool_uses(body) == [step[0] for step in STEPS]
    for tool_id in CLEARED:
        assert results[tool_id] == "[Previous: used Bash]"

    # Uninstalled, the user's settings are as they were and only their hook runs.
    removed = run_cli("hooks", "uninstall", "claude-code", env=agent_env(home), text=True)
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == original_settings
    print(f"resume with the hook: {took:.2f}s")


def test_a_session_another_writer_still_holds_is_left_untouched(claude: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    home, project = home_and_project(tmp_path)
    log = _record(claude, home, project)
    assert run_cli("hooks", "install", "claude-code", env=agent_env(home)).returncode == 0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time\nfd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
            "print('open', flush=True)\ntime.sleep(60)\n",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        _resume(claude, home, project, SECOND_TASK)
    finally:
        holder.kill()
        holder.wait()
    in_file = _cleared_in_file(log)
    for tool_id in CLEARED:
        assert ORIGINAL[tool_id] in in_file[tool_id]  # not compacted
    assert SECOND_TASK in log.read_text()  # Claude Code's own append is there
    archives = log.parent / ".transcripts"
    assert not archives.exists() or list(archives.iterdir()) == []  # no archive, no manifest line
    hook_log = (home / ".cache" / "compactcli" / "hooks.log").read_text()
    assert f"{SESSION_ID} {log}: exit 75" in hook_log and "busy" in hook_log


# ---------------------------------------------------------------- Codex


@pytest.fixture
def codex() -> Path:
    return require_agent("codex", "COMPACTCLI_CODEX", "@openai/codex")


def _wait_for(check, seconds: float = 40) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def _rollout_outputs(rollout: Path) -> dict[str, str]:
    """The outputs of the function calls the rollout holds, by call id."""
    outputs = {}
    for line in rollout.read_text().splitlines():
        payload = json.loads(line).get("payload") or {}
        if payload.get("type") == "function_call_output":
            outputs[payload["call_id"]] = payload["output"]
    return outputs


def _codex_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A private HOME, a project whose NOTES.md the scripted Codex reads, and where the hook logs."""
    home, project = home_and_project(tmp_path)
    (project / "NOTES.md").write_text(
        "".join(f"note {i}: the parser drops trailing commas\n" for i in range(30))
    )
    return home, project, home / ".cache" / "compactcli" / "hooks.log"


def test_codex_notify_hook_compacts_the_rollout_once_codex_closed_it(codex: Path, tmp_path: Path) -> None:
    import test_agents_codex as c

    home, project, hook_log = _codex_project(tmp_path)
    with FakeResponses() as api:
        api.reply_items = c._play_steps
        env = c._codex_env(home, api)  # writes config.toml; the hook goes in next
        installed = run_cli("hooks", "install", "codex", env=env, text=True)
        assert installed.returncode == 0, installed.stderr
        assert "notify = [" in (home / "codex" / "config.toml").read_text()
        task = [codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", c.TASK]
        done = run_agent(task, cwd=project, env=env)
        assert done.returncode == 0, done.stderr + done.stdout
        rollout = c._rollout(home)
        manifest = rollout.parent / ".transcripts" / "manifest.jsonl"
        # The background process logs once its child has committed (or given up).
        assert _wait_for(lambda: hook_log.exists() and "codex agent-turn-complete" in hook_log.read_text())
        assert manifest.exists(), hook_log.read_text()
        outputs = _rollout_outputs(rollout)
        for call_id in ("call_01count", "call_02log"):  # micro's defaults keep the last three
            assert c.PLACEHOLDER in str(outputs[call_id]), call_id
        assert c.ORIGINAL["call_05status"] in str(outputs["call_05status"])

        api.reply_items = lambda body: [c.message(c.RESUMED_REPLY)]
        before = len(api.calls())
        resume = [codex, "exec", "--skip-git-repo-check", "resume", c._session_id(rollout), c.FOLLOW_UP]
        done = run_agent(resume, cwd=project, env=env)
        calls = api.calls()[before:]
        assert done.returncode == 0, done.stderr + done.stdout
        assert calls and all(call.status == 200 for call in calls)
        outputs = c._outputs(calls[0].body)
        assert outputs["call_01count"] == c.PLACEHOLDER
        assert c._calls(calls[0].body) == [step[0] for step in c.STEPS]
        # The resumed turn's own notify compacts again in the background: wait for it to finish.
        assert _wait_for(lambda: hook_log.read_text().count("codex agent-turn-complete") >= 2)


def _trust_codex_hooks(codex: Path, env: dict[str, str], cwd: Path) -> list[str]:
    """Trust the hooks Codex lists as untrusted, as its /hooks screen does: each one's key and current hash
    (from `codex app-server`'s hooks/list) under [hooks.state] in CODEX_HOME's config.toml. Their keys."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "t", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
    server = subprocess.Popen([codex, "app-server"], text=True, cwd=cwd, env=env, **pipes)
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        server.stdin.flush()
        listed = next(m for m in map(json.loads, server.stdout) if m.get("id") == 2)
    finally:
        server.terminate()
        server.wait(timeout=30)
    hooks = [
        h for found in listed["result"]["data"] for h in found["hooks"] if h["trustStatus"] == "untrusted"
    ]
    with open(Path(env["CODEX_HOME"]) / "config.toml", "a") as config:
        for hook in hooks:
            config.write(
                f'\n[hooks.state.{json.dumps(hook["key"])}]\ntrusted_hash = "{hook["currentHash"]}"\n'
            )
    return [hook["key"] for hook in hooks]


def test_codex_hooks_json_session_end_runs_once_trusted_and_compacts_the_rollout(
    codex: Path, tmp_path: Path
) -> None:
    """The SessionEnd entry `hooks install codex-hooks` writes to hooks.json: Codex skips it until the user
    trusts it; trusted as /hooks does it, it runs when `codex exec` ends the session and compacts the
    rollout Codex has closed."""
    import test_agents_codex as c

    home, project, hook_log = _codex_project(tmp_path)
    with FakeResponses() as api:
        api.reply_items = c._play_steps
        env = c._codex_env(home, api)
        installed = run_cli("hooks", "install", "codex-hooks", env=env, text=True)
        assert installed.returncode == 0, installed.stderr
        hooks_json = home / "codex" / "hooks.json"
        task = [codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", c.TASK]
        done = run_agent(task, cwd=project, env=env)
        assert done.returncode == 0, done.stderr + done.stdout
        rollout = c._rollout(home)
        # Not trusted: the entry never runs (the hook would detach, so give it time to show up).
        assert not _wait_for(hook_log.exists, seconds=5)
        assert not (rollout.parent / ".transcripts").exists()
        assert c.ORIGINAL["call_01count"] in _rollout_outputs(rollout)["call_01count"]

        assert _trust_codex_hooks(codex, env, project) == [f"{hooks_json}:session_end:0:0"]
        api.reply_items = lambda body: [c.message(c.RESUMED_REPLY)]
        resume = [codex, "exec", "--skip-git-repo-check", "resume", c._session_id(rollout), c.FOLLOW_UP]
        done = run_agent(resume, cwd=project, env=env)
        assert done.returncode == 0, done.stderr + done.stdout
        assert _wait_for(lambda: hook_log.exists() and "codex SessionEnd" in hook_log.read_text())
    assert f"{rollout}: exit 0" in hook_log.read_text() and "1 file compacted" in hook_log.read_text()
    assert (rollout.parent / ".transcripts" / "manifest.jsonl").exists()
    outputs = _rollout_outputs(rollout)
    for call_id in ("call_01count", "call_02log"):  # micro's defaults keep the last three
        assert c.PLACEHOLDER in outputs[call_id], call_id
    assert c.ORIGINAL["call_05status"] in outputs["call_05status"]


def test_a_hook_that_would_overrun_returns_in_time_and_leaves_the_file(claude: Path, tmp_path: Path) -> None:
    """A sub-agent file far too large for the budget that the project's settings give the hook."""
    from helpers import bigfile

    home, project = home_and_project(tmp_path)
    log = _record(claude, home, project)
    (project / "compactcli.toml").write_text("[hook]\ntimeout = 0.3\n")
    assert run_cli("hooks", "install", "claude-code", env=agent_env(home)).returncode == 0
    subagents = log.parent / SESSION_ID / "subagents"
    subagents.mkdir(parents=True)
    big = subagents / "agent-b16f11e.jsonl"
    original, _ = bigfile.write(
        big, "claude-code", turns=bigfile.turns_for(120_000_000, 4000), result_chars=4000
    )

    _, _, took = _resume(claude, home, project, SECOND_TASK)

    assert big.read_bytes() == original
    assert [p.name for p in subagents.iterdir()] == [big.name]  # no temp file, no archive folder
    hook_log = (home / ".cache" / "compactcli" / "hooks.log").read_text()
    assert "gave up after 0.3s; the session is left as it was" in hook_log
    seconds = float(hook_log.split(": exit 75 in ")[1].split("s:")[0])
    assert seconds < 0.3 + 2.0 + 1.0, seconds  # the budget, SIGTERM's grace, a child's start
    print(f"resume with an overrunning hook: {took:.2f}s, the hook {seconds:.2f}s")
