"""What each agent's hook hands `compactcli hook`, read into one HookCall (docs/design.md, "Hooks").

Claude Code (SessionEnd, PreCompact, ...) and Codex's hooks write one JSON object on stdin with
`session_id`, `transcript_path`, `cwd` and `hook_event_name` (Claude Code adds `reason`, and `prompt_id` in
`-p` mode; Codex's `transcript_path` may be null). Gemini CLI's and Qwen Code's hooks send the same four
fields (and `timestamp`; SessionEnd adds `reason`). Copilot CLI's SessionEnd (PascalCase) sends `session_id`,
`hook_event_name`, `cwd`, `timestamp` and `reason` and no path: the events are found by the id. Codex's
legacy `notify` program gets its JSON as the last argument instead: `type` ("agent-turn-complete"),
`thread-id`, `turn-id`, `cwd`, and no path, so the rollout is found by its id under $CODEX_HOME/sessions.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from compactcli.core import errors

MAX_PAYLOAD = 1 << 20  # a hook's JSON is a few hundred bytes; anything larger is not one


@dataclass(frozen=True)
class HookCall:
    """One hook invocation: which agent, which event, which session and its transcript."""

    agent: str
    event: str
    session_id: str
    transcript: Path | None
    cwd: str | None
    reason: str | None = None


def parse(text: str, agent: str | None = None) -> HookCall:
    """The HookCall in a hook's JSON; BadInput (65) for anything that is not one."""
    if len(text) > MAX_PAYLOAD:
        raise errors.BadInput(f"hook payload: {len(text)} characters, more than any hook sends")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise errors.BadInput(f"hook payload: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise errors.BadInput("hook payload: not a JSON object")
    if "thread-id" in data or data.get("type") == "agent-turn-complete":
        return _codex_notify(data)
    session_id = _text(data, "session_id")
    event = _text(data, "hook_event_name")
    if not session_id or not event:
        raise errors.BadInput("hook payload: no session_id or hook_event_name")
    path = data.get("transcript_path")
    if path is not None and not isinstance(path, str):
        raise errors.BadInput("hook payload: transcript_path is not a string")
    named = agent or _guess_agent(path)
    transcript = Path(path).expanduser() if path else None
    if transcript is None and named == "codex":
        transcript = codex_rollout(session_id)
    if transcript is None and named == "copilot":
        transcript = copilot_events(session_id)
    return HookCall(named, event, session_id, transcript, _text(data, "cwd"), _text(data, "reason"))


def _text(data: dict, key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def _guess_agent(path: str | None) -> str:
    """Which agent sent a stdin payload, by where its transcript lives (its folders are its own)."""
    parts = Path(path).parts if path else ()
    if ".codex" in parts or (parts and parts[-1].startswith("rollout-")):
        return "codex"
    if ".gemini" in parts:
        return "gemini-cli"
    if ".qwen" in parts:
        return "qwen-code"
    return "claude-code"


def _codex_notify(data: dict) -> HookCall:
    thread = _text(data, "thread-id")
    if not thread:
        raise errors.BadInput("hook payload: a Codex notify payload without thread-id")
    event = _text(data, "type") or "notify"
    return HookCall("codex", event, thread, codex_rollout(thread), _text(data, "cwd"))


def copilot_home() -> Path:
    """$COPILOT_HOME, else ~/.copilot."""
    given = os.environ.get("COPILOT_HOME", "").strip()
    return Path(given).expanduser() if given else Path.home() / ".copilot"


def copilot_events(session_id: str) -> Path | None:
    """Where a Copilot CLI session's events are: $COPILOT_HOME/session-state/<session id>/events.jsonl
    (Copilot writes the file as the session closes, after its SessionEnd hook has started)."""
    if "/" in session_id or not session_id.strip("."):
        return None
    return copilot_home() / "session-state" / session_id / "events.jsonl"


def codex_home() -> Path:
    """$CODEX_HOME, else ~/.codex."""
    given = os.environ.get("CODEX_HOME", "").strip()
    return Path(given).expanduser() if given else Path.home() / ".codex"


def codex_rollout(thread_id: str) -> Path | None:
    """The rollout of a Codex thread: sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl."""
    if "/" in thread_id or not thread_id.strip("."):
        return None
    found = sorted((codex_home() / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[-1] if found else None
