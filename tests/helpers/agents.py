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
import tempfile
import time
from collections.abc import Callable
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


def home_and_project(root: Path) -> tuple[Path, Path]:
    """A new private home and an empty project folder beside it in `root`, for one agent's session."""
    home, project = root / "home", root / "project"
    home.mkdir()
    project.mkdir()
    return home, project


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


def wait_for(what: str, done: Callable[[], bool], timeout: float, shown: Callable[[], str]) -> None:
    """Poll `done` until it is true; fails at `timeout`, with what `shown` shows then."""
    end = time.monotonic() + timeout
    while not done():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}; the terminal shows:\n{shown()}")
        time.sleep(0.25)


class Terminal:
    """An interactive agent in a real terminal: a detached tmux session (160 columns) on a tmux server of
    its own, its socket in `folder`, that a test types into as a person would. Skips without tmux."""

    def __init__(self, folder: Path, rows: int = 45) -> None:
        if shutil.which("tmux") is None:
            pytest.skip("tmux is not installed: apt-get install tmux")
        self.socket = folder / "tmux.sock"
        self.rows = rows
        self.name = "agent"

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = ["tmux", "-S", str(self.socket), "-f", os.devnull, *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    def start(self, argv: list[str | Path], *, cwd: Path, env: dict[str, str]) -> None:
        # `env -i`: the agent gets exactly `env`, not the tmux server's environment
        command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *map(str, argv)])
        size = ("-x", "160", "-y", str(self.rows))
        done = self.tmux("new-session", "-d", "-s", self.name, *size, "-c", str(cwd), command)
        assert done.returncode == 0, done.stderr

    def type(self, text: str, taken: Callable[[], bool]) -> None:
        """Type `text` and press Enter, again every few seconds until `taken()` says the agent acted on
        it (an Enter pressed while the input box is still taking the text is lost)."""
        assert self.tmux("send-keys", "-t", self.name, "-l", text).returncode == 0
        wait_for("the text in the input box", lambda: text in self.screen(), 30, self.screen)
        for _ in range(10):
            time.sleep(1)
            assert self.tmux("send-keys", "-t", self.name, "Enter").returncode == 0
            end = time.monotonic() + 3
            while time.monotonic() < end:
                if taken():
                    return
                time.sleep(0.2)
        raise AssertionError(f"{text!r} was not taken; the terminal shows:\n{self.screen()}")

    def screen(self, scrollback: int = 0) -> str:
        """What the terminal shows, and `scrollback` lines above it."""
        shown = self.tmux("capture-pane", "-p", "-S", str(-scrollback), "-t", self.name)
        return shown.stdout if shown.returncode == 0 else ""

    def running(self) -> bool:
        return self.tmux("has-session", "-t", self.name).returncode == 0

    def close(self) -> None:
        self.tmux("kill-server")


def screen_of(
    argv: list[str | Path], *, cwd: Path, env: dict[str, str], until: str, timeout: float = 60
) -> str:
    """Run an interactive agent in a real terminal (160x60), as a person would, and return its screen and
    scrollback once `until` shows on it (or at `timeout`); the agent is then ended. Skips without tmux."""
    with tempfile.TemporaryDirectory() as folder:
        terminal = Terminal(Path(folder), rows=60)
        terminal.start(argv, cwd=cwd, env=env)
        screen = ""
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                screen = terminal.screen(scrollback=500) or screen
                if until in screen:
                    break
                time.sleep(0.5)
        finally:
            terminal.close()
        return screen
