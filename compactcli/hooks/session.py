"""`compactcli hook`'s work: compact the one session a hook named, within a time budget, never failing the
agent (docs/design.md, "Hooks").

The compaction is the user's own command (`micro` unless settings say otherwise) run on the session's
files as a child process, so that it reads the same settings, takes the same locks and writes the same
archives as any other run: a file the agent still holds open for writing is refused there (exit 75) and
left as it was. A child that overruns the budget gets SIGTERM, on which compactcli unwinds and removes
what it had not committed, so the file is untouched; the hook itself always returns 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from compactcli.core import errors
from compactcli.core.places import cache_dir
from compactcli.hooks.payload import HookCall

LOG_NAME = "hooks.log"
LOG_LIMIT = 1 << 20  # bytes
TERM_GRACE = 2.0  # seconds an overrunning child has to unwind after SIGTERM before it is killed
BUSY_RETRY = 0.5  # seconds between attempts while the agent still holds the file (in the background)


@dataclass(frozen=True)
class HookRun:
    """How the hook compacts: the compactcli command and its options, the budget, the settings file."""

    command: str = "micro"
    timeout: float = 5.0
    config: str | None = None
    wait: float = 0.0  # the background process retries a busy file for this long


def log_path() -> Path:
    return cache_dir() / LOG_NAME


def log(line: str) -> None:
    """One line in the hook log (0600, in the 0700 cache folder); a log that cannot be written is skipped:
    the hook must never fail its agent."""
    with contextlib.suppress(OSError):
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        path = folder / LOG_NAME
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > LOG_LIMIT:  # one older log is kept: a hook runs after every session
                os.replace(path, path.with_name(LOG_NAME + ".1"))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(f"{stamp} {' | '.join(line.splitlines())}\n")  # one line per hook run


def session_files(call: HookCall) -> list[Path]:
    """The transcript the hook named and its sub-agents' files; CompactError for a transcript that is
    missing, not a file, or not the named session's (the hook touches no other session)."""
    path = call.transcript
    if path is None:
        raise errors.CompactError(f"{call.agent} session {call.session_id}: no transcript found")
    if not path.is_absolute():
        path = Path(call.cwd or os.getcwd()) / path
    if not path.is_file():
        raise errors.CompactError(f"{path}: no such transcript (session {call.session_id})")
    # Claude Code and Qwen Code name the file <session id>.jsonl, Codex rollout-<time>-<session id>.jsonl;
    # Gemini CLI session-<time>-<first 8 of the id>.jsonl, whose header holds the whole id.
    if call.agent in ("claude-code", "qwen-code"):
        named = path.stem == call.session_id
    elif call.agent == "copilot":  # $COPILOT_HOME/session-state/<session id>/events.jsonl
        named = path.name == "events.jsonl" and path.parent.name == call.session_id
    elif call.agent == "gemini-cli":
        named = _gemini_session_id(path) == call.session_id
    else:
        named = call.session_id in path.name
    if not named:
        raise errors.CompactError(f"{path}: not the transcript of session {call.session_id}")
    files = [path]
    if call.agent == "claude-code":
        # Claude Code keeps a session's sub-agents in <session id>/subagents/ beside its transcript.
        subagents = path.parent / path.stem / "subagents"
        if subagents.is_dir():
            files += sorted(p for p in subagents.glob("*.jsonl") if p.is_file())
    return files


def _gemini_session_id(path: Path) -> str | None:
    """The sessionId of a Gemini CLI session file's header line (None when it has none)."""
    try:
        with open(path, "rb") as f:
            header = json.loads(f.readline(1 << 16))
    except (OSError, ValueError):
        return None
    value = header.get("sessionId") if isinstance(header, dict) else None
    return value if isinstance(value, str) else None


def argv(run: HookRun, files: list[Path]) -> list[str]:
    """The compactcli command line that compacts `files`."""
    head = [sys.executable, "-m", "compactcli"]
    if run.config:
        head += ["--config", run.config]
    return [*head, *shlex.split(run.command), *(str(f) for f in files)]


def compact(call: HookCall, run: HookRun) -> tuple[int, str]:
    """Run the compaction of the session `call` names: (exit code, what it said). Gives up after
    `run.timeout` seconds, the files as they were; retries a busy file until `run.wait` is over."""
    _wait_for_copilot(call, run.wait)
    files = session_files(call)
    command = argv(run, files)
    cwd = call.cwd if call.cwd and os.path.isdir(call.cwd) else None
    started = time.monotonic()
    while True:
        code, said = _run_once(command, cwd, run.timeout)
        waited = time.monotonic() - started
        if code != errors.BUSY or waited + BUSY_RETRY >= run.wait:
            return code, said
        time.sleep(BUSY_RETRY)


def _wait_for_copilot(call: HookCall, wait: float) -> None:
    """Copilot CLI runs its SessionEnd hook before it writes the session's events.jsonl and while it still
    holds the session (an `inuse.<pid>.lock` beside it): in the background, wait (up to `wait` seconds)
    until the file is there and the lock is gone."""
    if call.agent != "copilot" or call.transcript is None or wait <= 0:
        return
    deadline = time.monotonic() + wait
    folder = call.transcript.parent
    while time.monotonic() < deadline:
        if call.transcript.is_file() and not any(folder.glob("inuse.*.lock")):
            return
        time.sleep(BUSY_RETRY)


def _run_once(command: list[str], cwd: str | None, timeout: float) -> tuple[int, str]:
    child = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out, _ = child.communicate(timeout=timeout)
        return child.returncode, out.strip()
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)  # compactcli unwinds: nothing half-written stays
        try:
            child.communicate(timeout=TERM_GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
        return errors.BUSY, f"gave up after {timeout:g}s; the session is left as it was"


def detach(args: list[str], payload: str) -> None:
    """Hand the work to a process of its own (its own session, output to the log) and return at once: the
    agent neither waits for it nor ends it when it exits."""
    folder = cache_dir()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    child = subprocess.Popen(
        [sys.executable, "-m", "compactcli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    assert child.stdin is not None
    with contextlib.suppress(OSError):
        child.stdin.write(payload)
        child.stdin.close()


def describe(call: HookCall) -> str:
    where = call.transcript if call.transcript is not None else "?"
    return f"{call.agent} {call.event} {call.session_id} {where}"
