"""`compactcli hooks install gemini-cli / qwen-code` and `compactcli hook` on their SessionEnd payloads, as
the installed command with a private HOME: both agents keep hooks under `hooks.SessionEnd` of their
settings.json, with the timeout in milliseconds, and send `session_id`, `transcript_path`, `cwd`,
`hook_event_name` (and `reason`) on stdin."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import compactcli_command, home_env, run_cli

ROOT = Path(__file__).resolve().parent.parent
GEMINI_SAMPLE = ROOT / "samples" / "gemini-cli" / "session.jsonl"
QWEN_SAMPLE = ROOT / "samples" / "qwen-code" / "session.jsonl"

# A user's own Gemini CLI settings: auth, session retention, a BeforeTool hook, a two-space indent.
GEMINI_SETTINGS = """{
  "security": {
    "auth": {
      "selectedType": "gemini-api-key"
    }
  },
  "general": {"sessionRetention": {"enabled": false}},
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file|replace",
        "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5000}]
      }
    ]
  }
}
"""
QWEN_SETTINGS = '{\n    "model": {"name": "qwen3-coder-plus"},\n    "disableAllHooks": false\n}\n'


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def _ours(settings: dict) -> list[dict]:
    return [h for g in settings["hooks"]["SessionEnd"] for h in g["hooks"] if " hook " in h["command"] + " "]


@pytest.mark.parametrize(
    ("agent", "folder", "text"),
    [("gemini-cli", ".gemini", GEMINI_SETTINGS), ("qwen-code", ".qwen", QWEN_SETTINGS)],
)
def test_install_adds_a_session_end_hook_in_milliseconds_and_uninstall_gives_the_file_back(
    home: Path, agent: str, folder: str, text: str
) -> None:
    path = home / folder / "settings.json"
    path.parent.mkdir()
    path.write_text(text)

    run = run_cli("hooks", "install", agent, env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    settings, before = json.loads(path.read_text()), json.loads(text)
    assert {k: v for k, v in settings.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    assert {k: v for k, v in settings["hooks"].items() if k != "SessionEnd"} == before.get("hooks", {})
    (entry,) = _ours(settings)
    assert entry == {
        "type": "command",
        "command": f"{compactcli_command()[0]} hook --agent {agent}",
        "timeout": 30000,  # milliseconds: these agents' unit
    }
    assert len(list(path.parent.glob("settings.json.compactcli-*.bak"))) == 1

    once = path.read_bytes()
    again = run_cli("hooks", "install", agent, env=home_env(home), text=True)
    assert again.returncode == 0 and "already installed" in again.stderr
    assert path.read_bytes() == once

    status = run_cli("hooks", "status", env=home_env(home), text=True)
    assert f"{agent}: installed in {path} (SessionEnd)" in status.stdout

    run = run_cli("hooks", "uninstall", agent, env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    assert path.read_text() == text


def test_qwen_code_settings_follow_qwen_home_and_a_project_has_its_own(home: Path, tmp_path: Path) -> None:
    qwen_home = tmp_path / "qwen-home"
    run = run_cli("hooks", "install", "qwen-code", env=home_env(home, QWEN_HOME=str(qwen_home)), text=True)
    assert run.returncode == 0, run.stderr
    assert len(_ours(json.loads((qwen_home / "settings.json").read_text()))) == 1
    assert not (home / ".qwen").exists()

    project = tmp_path / "app"
    project.mkdir()
    run = run_cli("hooks", "install", "gemini-cli", "--project", str(project), env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    assert len(_ours(json.loads((project / ".gemini" / "settings.json").read_text()))) == 1
    assert not (home / ".gemini").exists()


def test_a_gemini_settings_file_with_comments_is_refused_and_left_as_it_is(home: Path) -> None:
    # Gemini CLI reads comments in settings.json; compactcli cannot keep them byte for byte, so it refuses.
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir()
    text = '{\n  // my settings\n  "general": {}\n}\n'
    path.write_text(text)
    run = run_cli("hooks", "install", "gemini-cli", env=home_env(home), text=True)
    assert run.returncode == 65
    assert str(path) in run.stderr
    assert path.read_text() == text
    assert list(path.parent.glob("*.bak")) == []


def _responses(path: Path) -> list[tuple[str, object]]:
    """(tool name, response) of every functionResponse in a Gemini CLI or Qwen Code session, in order."""
    found = []
    for line in path.open(encoding="utf-8"):
        record = json.loads(line)
        parts = (
            list((record.get("message") or {}).get("parts") or []) if record.get("type") != "system" else []
        )
        for call in record.get("toolCalls") or []:
            parts += call.get("result") or []
        for part in parts:
            if "functionResponse" in part:
                found.append((part["functionResponse"]["name"], part["functionResponse"]["response"]))
    return found


def _gemini_session(home: Path) -> tuple[Path, str]:
    session_id = json.loads(GEMINI_SAMPLE.open().readline())["sessionId"]
    chats = home / ".gemini" / "tmp" / "tally" / "chats"
    chats.mkdir(parents=True)
    path = chats / f"session-2026-11-30T10-00-{session_id[:8]}.jsonl"
    shutil.copyfile(GEMINI_SAMPLE, path)
    return path, session_id


def _qwen_session(home: Path) -> tuple[Path, str]:
    session_id = json.loads(QWEN_SAMPLE.open().readline())["sessionId"]
    chats = home / ".qwen" / "projects" / "-home-dev-tally" / "chats"
    chats.mkdir(parents=True)
    path = chats / f"{session_id}.jsonl"
    shutil.copyfile(QWEN_SAMPLE, path)
    return path, session_id


def _payload(path: Path, session_id: str) -> str:
    data = {
        "session_id": session_id,
        "transcript_path": str(path),
        "cwd": "/home/dev/tally",
        "hook_event_name": "SessionEnd",
        "timestamp": "2026-11-30T10:05:00.000Z",
        "reason": "exit",
    }
    return json.dumps(data)


@pytest.mark.parametrize("make", [_gemini_session, _qwen_session], ids=["gemini-cli", "qwen-code"])
def test_session_end_micro_compacts_that_session_and_archives_it(home: Path, make) -> None:
    path, session_id = make(home)
    original = path.read_bytes()
    before = _responses(path)

    run = run_cli("hook", stdin=_payload(path, session_id), env=home_env(home), text=True)  # agent guessed

    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    after = _responses(path)
    assert len(after) == len(before)
    changed = [(name, new) for (name, old), (_, new) in zip(before, after, strict=True) if old != new]
    assert changed, "micro cleared no output"
    assert all(new == {"output": f"[Previous: used {name}]"} for name, new in changed)
    assert all(name != "read_file" for name, _ in changed)  # both agents' read tool is preserved
    manifest = [json.loads(line) for line in (path.parent / ".transcripts" / "manifest.jsonl").open()]
    assert [Path(m["source"]).name for m in manifest] == [path.name]
    assert Path(manifest[0]["archive"]).read_bytes() == original


@pytest.mark.parametrize("make", [_gemini_session, _qwen_session], ids=["gemini-cli", "qwen-code"])
def test_a_payload_naming_another_session_leaves_the_file_untouched(home: Path, make) -> None:
    path, _ = make(home)
    original = path.read_bytes()
    run = run_cli(
        "hook", stdin=_payload(path, "0b5e7a40-1c2d-4e5f-8a9b-0c1d2e3f4a5b"), env=home_env(home), text=True
    )
    assert run.returncode == 0  # the hook never fails its agent
    assert "not the transcript of session" in run.stderr
    assert path.read_bytes() == original
    assert not (path.parent / ".transcripts").exists()


# A user's own Copilot CLI settings, with a SessionEnd hook of their own: Copilot lists the handlers
# themselves under each event.
COPILOT_SETTINGS = """{
  "footer": {"showQuota": false},
  "hooks": {
    "SessionEnd": [
      {"type": "command", "bash": "notify-send done", "timeoutSec": 5}
    ]
  }
}
"""
COPILOT_SESSION = "7f3c2a10-0b1d-4e5f-8a9b-0c1d2e3f4a5b"


def test_copilot_install_lists_the_handler_under_session_end_and_uninstall_gives_the_file_back(
    home: Path,
) -> None:
    path = home / ".copilot" / "settings.json"
    path.parent.mkdir()
    path.write_text(COPILOT_SETTINGS)
    run = run_cli("hooks", "install", "copilot", env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    settings = json.loads(path.read_text())
    assert settings["footer"] == {"showQuota": False}
    theirs, ours = settings["hooks"]["SessionEnd"]
    assert theirs == json.loads(COPILOT_SETTINGS)["hooks"]["SessionEnd"][0]
    assert ours == {
        "type": "command",
        "bash": f"{compactcli_command()[0]} hook --agent copilot --detach",
        "timeoutSec": 30,  # seconds: Copilot's unit
    }
    once = path.read_bytes()
    assert "already installed" in run_cli("hooks", "install", "copilot", env=home_env(home), text=True).stderr
    assert path.read_bytes() == once
    status = run_cli("hooks", "status", env=home_env(home), text=True)
    assert f"copilot: installed in {path} (SessionEnd): {ours['bash']}" in status.stdout
    assert run_cli("hooks", "uninstall", "copilot", env=home_env(home), text=True).returncode == 0
    assert path.read_text() == COPILOT_SETTINGS


def test_copilot_settings_follow_copilot_home_and_an_empty_home_gets_only_the_hook(
    home: Path, tmp_path: Path
) -> None:
    copilot_home = tmp_path / "copilot-home"
    env = home_env(home, COPILOT_HOME=str(copilot_home))
    run = run_cli("hooks", "install", "copilot", env=env, text=True)
    assert run.returncode == 0, run.stderr
    settings = json.loads((copilot_home / "settings.json").read_text())
    assert list(settings) == ["hooks"] and len(settings["hooks"]["SessionEnd"]) == 1
    assert run_cli("hooks", "uninstall", "copilot", env=env).returncode == 0
    assert json.loads((copilot_home / "settings.json").read_text()) == {}


def test_copilot_session_end_finds_the_events_by_the_session_id(home: Path) -> None:
    events = home / ".copilot" / "session-state" / COPILOT_SESSION / "events.jsonl"
    events.parent.mkdir(parents=True)
    shutil.copyfile(ROOT / "samples" / "copilot" / "events.jsonl", events)
    original = events.read_bytes()
    # What Copilot CLI 1.0 sends a SessionEnd (PascalCase) hook: no transcript path.
    payload = {
        "hook_event_name": "SessionEnd",
        "session_id": COPILOT_SESSION,
        "timestamp": "2026-12-02T16:46:26.376Z",
        "cwd": "/home/dev/tally",
        "reason": "complete",
    }
    run = run_cli("hook", "--agent", "copilot", stdin=json.dumps(payload), env=home_env(home), text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert events.read_bytes() != original
    cleared = [
        json.loads(line)["data"]["result"]["content"]
        for line in events.open()
        if '"tool.execution_complete"' in line and '"result"' in line
    ]
    assert "[Previous: used bash]" in cleared
    manifest = [json.loads(line) for line in (events.parent / ".transcripts" / "manifest.jsonl").open()]
    assert Path(manifest[0]["archive"]).read_bytes() == original

    payload["session_id"] = "0b5e7a40-1c2d-4e5f-8a9b-0c1d2e3f4a5b"  # no such session: nothing touched
    now = events.read_bytes()
    run = run_cli("hook", "--agent", "copilot", stdin=json.dumps(payload), env=home_env(home), text=True)
    assert run.returncode == 0 and "no such transcript" in run.stderr
    assert events.read_bytes() == now
