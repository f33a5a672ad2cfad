"""The real coding agents (Claude Code, Codex CLI, GitHub Copilot CLI) as subprocesses, for the tier that
resumes the sessions compactcli compacted and looks at what the agent then sends the model.

The binaries come from `$COMPACTCLI_CLAUDE` / `$COMPACTCLI_CODEX` / `$COMPACTCLI_COPILOT` when set, else from
the npm prefix .ci/run installs the pinned versions into (`$COMPACTCLI_AGENTS_PREFIX`, default
~/.cache/compactcli/agents). Without them the tier skips and says how to enable it. Never the ones on
PATH: a developer's own agent may be any version, and its settings live in the real home.

Each run gets a private home and only the environment it needs: the agent talks to nothing but the
fake API on 127.0.0.1 and never reads the developer's settings or credentials.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

PREFIX = Path(os.environ.get("COMPACTCLI_AGENTS_PREFIX") or Path.home() / ".cache/compactcli/agents")

_HOW = (
    "set {var} to its binary, or install the version .ci/run pins: "
    "npm install --prefix {prefix} {package}@<version>"
)


def agent_binary(name: str, var: str, prefix: Path = PREFIX) -> Path | None:
    """The agent's executable, or None when it is not installed (in `prefix`, the npm prefix .ci/run
    installs it into)."""
    given = os.environ.get(var)
    path = Path(given) if given else prefix / "node_modules" / ".bin" / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def require_agent(name: str, var: str, package: str, prefix: Path = PREFIX) -> Path:
    """The agent's executable; skips the test, saying how to enable it, when there is none."""
    found = agent_binary(name, var, prefix)
    if found is None:
        pytest.skip(f"{name} is not installed: " + _HOW.format(var=var, prefix=prefix, package=package))
    return found


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """A bare environment: the system PATH (the agents run shell commands), a private HOME, `extra`."""
    path = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir())
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", **extra}


def run_agent(
    argv: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the agent with stdin closed (it must not wait for a prompt) and capture its output."""
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def copy_home(source: Path, target: Path) -> Path:
    """A fresh copy of a home an agent wrote its session into, so each test resumes its own copy."""
    shutil.copytree(source, target, symlinks=True)
    return target


def copilot_env(home: Path, api: Any, model: str) -> dict[str, str]:
    """Copilot CLI in its bring-your-own-key mode against the fake Messages API `api`: no GitHub login,
    offline, its home under `home`; its 235 MB self-extraction is cached beside the npm prefix, once."""
    return agent_env(
        home,
        COPILOT_HOME=str(home / ".copilot"),
        COPILOT_OFFLINE="true",
        COPILOT_PROVIDER_TYPE="anthropic",
        COPILOT_PROVIDER_BASE_URL=api.url,
        COPILOT_PROVIDER_API_KEY=api.api_key,
        COPILOT_MODEL=model,
        XDG_CACHE_HOME=str(PREFIX.parent / "copilot-unpacked"),
    )


def tool_uses_sent(body: dict[str, Any]) -> int:
    """How many tool_use blocks a Messages API request's history holds: the step a scripted model is at."""
    return sum(
        1
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    )


def screen_of(
    argv: list[str | Path], *, cwd: Path, env: dict[str, str], until: str, timeout: float = 60
) -> str:
    """Run an interactive agent in a real terminal (a detached tmux session, 160x60), as a person would,
    and return its screen and scrollback once `until` shows on it (or at `timeout`); the agent is then
    ended. Skips without tmux."""
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed: apt-get install tmux")
    name = f"compactcli-{os.getpid()}-{time.monotonic_ns()}"
    command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *map(str, argv)])
    subprocess.run(
        [tmux, "new-session", "-d", "-s", name, "-x", "160", "-y", "60", "-c", str(cwd), command], check=True
    )
    screen = ""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = subprocess.run(
                [tmux, "capture-pane", "-p", "-S", "-500", "-t", name], capture_output=True, text=True
            )
            screen = shown.stdout if shown.returncode == 0 else screen
            if until in screen:
                break
            time.sleep(0.5)
    finally:
        subprocess.run([tmux, "kill-session", "-t", name], capture_output=True)
    return screen
