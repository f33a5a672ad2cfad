"""Gemini CLI itself resumes the sessions compactcli compacted (the agent tier).

The session is written by the real Gemini CLI: `gemini -p` runs a scripted task against the fake Gemini
API on 127.0.0.1 (tests/helpers/fakegemini.py), reading real files, and writes its own session under
$HOME/.gemini/tmp/<project>/chats/session-*.jsonl. Each test compacts a copy with the installed
compactcli, resumes it with `gemini --resume ID -p ...`, and checks what Gemini CLI then sends the model.
The fake refuses a request whose function calls are not answered, with the API's 400.

Skips unless Gemini CLI is installed: `$COMPACTCLI_GEMINI`, else the npm prefix .ci/run installs the
pinned version into ($COMPACTCLI_GEMINI_PREFIX, default ~/.cache/compactcli/agents-gemini).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import agent_env, copy_home, require_agent, run_agent
from helpers.cli import run_cli
from helpers.fakegemini import FakeGemini, contents_text, function_call, text

PREFIX = Path(os.environ.get("COMPACTCLI_GEMINI_PREFIX") or Path.home() / ".cache/compactcli/agents-gemini")
PACKAGE = "@google/gemini-cli"
TASK = "Read the four notes files and tell me what they have in common."
FOLLOW_UP = "What should we look at next?"
RESUMED_REPLY = "Resumed and read the history."
FILES = {
    f"notes-{n}.txt": "".join(f"note {n}.{line}: the parser drops commas\n" for line in range(30))
    for n in range(4)
}
FINAL = "They all say the parser drops commas."


def gemini_binary() -> Path:
    return require_agent("gemini", "COMPACTCLI_GEMINI", PACKAGE, PREFIX)


def _env(home: Path, api: FakeGemini) -> dict[str, str]:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    # Session clean-up is on by default and deletes sessions it judges old: off, as a user's would be.
    config = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"sessionRetention": {"enabled": False}},
    }
    settings.write_text(json.dumps(config))
    return agent_env(
        home, GEMINI_API_KEY=api.api_key, GOOGLE_GEMINI_BASE_URL=api.url, GEMINI_CLI_TRUST_WORKSPACE="true"
    )


def _play(body: dict[str, Any]) -> list[dict[str, Any]]:
    """One read_file call per turn, one file each, then the answer."""
    asked = sum(
        1
        for c in body.get("contents", [])
        if c.get("role") == "model"
        for p in c["parts"]
        if "functionCall" in p
    )
    if asked < len(FILES):
        return [function_call("read_file", {"file_path": sorted(FILES)[asked]})]
    return [text(FINAL)]


def session_file(home: Path) -> Path:
    found = sorted(home.glob(".gemini/tmp/*/chats/session-*.jsonl"), key=lambda p: p.stat().st_size)
    assert found, "Gemini CLI wrote no session"
    return found[-1]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(home, project, session id) of a session Gemini CLI wrote itself."""
    binary = gemini_binary()
    root = tmp_path_factory.mktemp("gemini")
    home, project = root / "home", root / "project"
    project.mkdir()
    for name, content in FILES.items():
        (project / name).write_text(content)
    with FakeGemini() as api:
        api.reply_parts = _play
        run = run_agent([binary, "-p", TASK], cwd=project, env=_env(home, api), timeout=240)
        assert run.returncode == 0, run.stdout + run.stderr
        assert api.refused() == []
        assert FINAL in run.stdout
    path = session_file(home)
    session_id = json.loads(path.read_text().splitlines()[0])["sessionId"]
    assert run_cli("validate", path).returncode == 0
    return home, project, session_id


def _resume(binary: Path, home: Path, project: Path, session_id: str) -> tuple[str, FakeGemini]:
    with FakeGemini() as api:
        api.reply_parts = lambda body: [text(RESUMED_REPLY)]
        run = run_agent(
            [binary, "--resume", session_id, "-p", FOLLOW_UP], cwd=project, env=_env(home, api), timeout=240
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert RESUMED_REPLY in run.stdout
        assert api.refused() == [], [r.body for r in api.refused()]
        sent = api.streamed()
        assert sent, "Gemini CLI called no model"
        return contents_text(sent[-1].body), api


def test_resumed_after_micro_gemini_cli_sends_the_placeholders(recorded, tmp_path):
    home, project, session_id = recorded
    home = copy_home(home, tmp_path / "home")
    path = session_file(home)
    run = run_cli("micro", "--json", "--keep", "1", "--no-preserve", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)["stats"]
    assert stats["dialect"] == "gemini-cli" and stats["cleared"] >= 3
    sent, _ = _resume(gemini_binary(), home, project, session_id)
    assert sent.count("[Previous: used read_file]") >= 3
    for name in sorted(FILES)[:3]:
        assert FILES[name].splitlines()[7] not in sent, f"{name}'s cleared content was sent"
    assert FILES[sorted(FILES)[3]].splitlines()[7] in sent  # the last result is kept
    assert TASK in sent and FOLLOW_UP in sent


def test_resumed_after_summarize_gemini_cli_sends_the_summary(recorded, tmp_path):
    home, project, session_id = recorded
    home = copy_home(home, tmp_path / "home")
    path = session_file(home)
    run = run_cli("summarize", "--backend", "digest", "--keep-last", "2", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    assert run_cli("validate", path).returncode == 0
    sent, _ = _resume(gemini_binary(), home, project, session_id)
    assert "<state_snapshot>" in sent and "Got it. Thanks for the additional context!" in sent
    assert TASK in sent  # the user's words follow the digest
    for name in sorted(FILES)[:3]:
        assert FILES[name].splitlines()[7] not in sent, f"{name} was summarized, yet sent"
    assert FINAL in sent  # the kept records
