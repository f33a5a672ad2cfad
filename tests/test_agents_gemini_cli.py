"""Gemini CLI itself resumes the sessions compactcli compacted (the agent tier).

The session is written by the real Gemini CLI: `gemini -p` runs a scripted task against the fake Gemini
API on 127.0.0.1 (tests/helpers/fakegemini.py), reading real files, and writes its own session under
$HOME/.gemini/tmp/<project>/chats/session-*.jsonl. Each test compacts a copy with the installed
compactcli, resumes it with `gemini --resume ID -p ...`, and checks what Gemini CLI then sends the model.
The fake refuses a request whose function calls are not answered, with the API's 400. One test resumes
the session in Gemini CLI's terminal UI instead (in tmux) and reads what it shows of each call.

Skips unless Gemini CLI is installed: `$COMPACTCLI_GEMINI`, else the npm prefix .ci/run installs the
pinned version into ($COMPACTCLI_GEMINI_PREFIX, default ~/.cache/compactcli/agents-gemini).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import agent_env, copy_home, home_and_project, require_agent, run_agent, screen_of
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
    home, project = home_and_project(tmp_path_factory.mktemp("gemini"))
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


@pytest.mark.parametrize("threshold", ["100000", "300"])
def test_resumed_from_replays_output_gemini_cli_sends_its_context(recorded, tmp_path, threshold):
    """What replay -o writes is a session Gemini CLI resumes: with no compaction every read (read_file is
    preserved), after a simulated compaction its state snapshot and not the summarized reads."""
    home, project, session_id = recorded
    home = copy_home(home, tmp_path / "home")
    path = session_file(home)
    out = tmp_path / "replayed.jsonl"
    args = ("--threshold", threshold, "--keep", "1", "--backend", "digest", "-o", out)
    run = run_cli("replay", path, *args, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    out.replace(path)
    sent, _ = _resume(gemini_binary(), home, project, session_id)
    if threshold == "100000":
        assert "<state_snapshot>" not in sent and TASK in sent and FINAL in sent
        for name in sorted(FILES):
            assert FILES[name].splitlines()[7] in sent, name
    else:
        assert "<state_snapshot>" in sent and "Got it. Thanks for the additional context!" in sent
        assert FILES[sorted(FILES)[0]].splitlines()[7] not in sent  # summarized
    assert FOLLOW_UP in sent


# Shell calls whose outputs Gemini CLI also keeps as the UI's rendering (`resultDisplay`).
SHELL_STEPS = [f"seq -f 'shell {n} line %g' 1 12" for n in range(3)]


def _play_shell(body: dict[str, Any]) -> list[dict[str, Any]]:
    asked = sum(
        1
        for c in body.get("contents", [])
        if c.get("role") == "model"
        for p in c["parts"]
        if "functionCall" in p
    )
    if asked < len(SHELL_STEPS):
        return [function_call("run_shell_command", {"command": SHELL_STEPS[asked], "description": "Run"})]
    return [text(FINAL)]


@pytest.fixture(scope="module")
def shell_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(home, project, session id) of three shell calls Gemini CLI ran and recorded itself."""
    binary = gemini_binary()
    home, project = home_and_project(tmp_path_factory.mktemp("gemini-shell"))
    with FakeGemini() as api:
        api.reply_parts = _play_shell
        run = run_agent([binary, "-p", TASK, "--yolo"], cwd=project, env=_env(home, api), timeout=240)
        assert run.returncode == 0, run.stdout + run.stderr
        assert api.refused() == []
    session_id = json.loads(session_file(home).read_text().splitlines()[0])["sessionId"]
    return home, project, session_id


def _displays(path: Path) -> dict[str, list[object]]:
    """Each call's resultDisplay, in every version of its record."""
    found: dict[str, list[object]] = {}
    for line in path.read_text().splitlines():
        for call in json.loads(line).get("toolCalls") or []:
            if "resultDisplay" in call:
                found.setdefault(call["id"], []).append(call["resultDisplay"])
    return found


def test_micro_clears_the_uis_rendering_and_gemini_cli_still_resumes(shell_session, tmp_path):
    binary = gemini_binary()
    home, project, session_id = shell_session
    home = copy_home(home, tmp_path / "home")
    path = session_file(home)
    calls = list(_displays(path))
    assert len(calls) == 3 and "shell 0 line 7" in json.dumps(_displays(path)[calls[0]])
    run = run_cli("micro", "--json", "--keep", "1", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["stats"]["cleared"] >= 2
    displays = _displays(path)
    placeholder = "[Previous: used run_shell_command]"
    for call_id in calls[:2]:
        assert set(displays[call_id]) == {placeholder}, call_id
    for n in (0, 1):
        assert f"shell {n} line 7" not in path.read_text(), f"call {n}'s output is still in the file"
    assert "shell 2 line 7" in json.dumps(displays[calls[2]])  # the last call's rendering stays
    sent, _ = _resume(binary, home, project, session_id)
    assert sent.count(placeholder) >= 2
    assert "shell 0 line 7" not in sent and "shell 1 line 7" not in sent
    assert "shell 2 line 7" in sent and FOLLOW_UP in sent


def test_resumed_in_its_terminal_ui_gemini_cli_shows_the_placeholder_for_a_cleared_output(
    shell_session, tmp_path
):
    """The interactive UI, in a real terminal: each call's box shows its resultDisplay."""
    binary = gemini_binary()
    home, project, session_id = shell_session
    home = copy_home(home, tmp_path / "home")
    path = session_file(home)
    assert run_cli("micro", "--keep", "1", path, cwd=tmp_path).returncode == 0
    with FakeGemini() as api:
        env = _env(home, api) | {"TERM": "xterm-256color"}
        screen = screen_of([binary, "--resume", session_id], cwd=project, env=env, until=FINAL, timeout=90)
    assert FINAL in screen, screen
    assert screen.count("[Previous: used run_shell_command]") == 2, screen
    assert "shell 0 line 7" not in screen and "shell 1 line 7" not in screen
    assert "shell 2 line 7" in screen  # the kept call's output, as before
