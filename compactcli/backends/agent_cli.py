"""`--backend claude-code` and `--backend codex`: the user's own agent CLI writes the summary, with the
login it already has (a Claude subscription, a ChatGPT login); compactcli never sees a credential.

Each request runs the program once, non-interactively, in an empty temporary folder that is removed
afterwards, with the prompt on stdin (already redacted by ModelSummarizer, like every backend's), no
tools that touch files, nothing saved as a session, and a timeout (`--timeout`, default
AGENT_TIMEOUT, for the whole run; the process group is killed past it). Only the reply is taken: the
`result` of `claude -p --output-format json`, the last message `codex exec -o FILE` writes; whatever
else the program prints never reaches the transcript. A program that is missing, not logged in, fails
or times out is Unavailable (exit 69) with what to do.

The programs come from $COMPACTCLI_CLAUDE / $COMPACTCLI_CODEX when set, else from PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from compactcli.backends.anthropic import ApiUnavailable, resolve_model_given
from compactcli.backends.base import Reply

# What the programs say when they have no login: Claude Code's "Not logged in · Please run /login",
# Codex's "Missing environment variable" for its provider's key, a 401 from either.
LOGIN_WORDS = (
    "login",
    "logged in",
    "api key",
    "unauthorized",
    "401",
    "credential",
    "missing environment variable",
)
AGENT_TIMEOUT = 600.0  # seconds for one whole run: the agent's start-up, its model call, its exit
# Set by Claude Code in the shells it runs: a child `claude` would take itself for a nested session.
NESTED = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")


@dataclass
class _Agent:
    """What the two programs share: finding them, running one in an empty folder, the timeout."""

    model: str | None = None  # None: the program's own default
    timeout: float | None = None
    name: str = ""
    program: str = ""  # the command's name on PATH
    program_env: str = ""  # the variable naming its path
    install: str = ""  # how to get it
    login: str = ""  # what to do when it is not logged in

    @property
    def shown_model(self) -> str:
        return self.model or f"{self.program}'s default"

    def executable(self) -> str | None:
        given = (os.environ.get(self.program_env) or "").strip()
        if given:
            return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
        return shutil.which(self.program)

    def ready(self) -> None:
        if self.executable() is None:
            given = os.environ.get(self.program_env)
            where = (
                f"${self.program_env} ({given}) is not an executable"
                if given
                else f"no {self.program} on PATH"
            )
            raise ApiUnavailable(
                f"--backend {self.name} runs `{self.program}`, and {where}: {self.install}, or set "
                f"${self.program_env} to its path"
            )

    def describe(self) -> str:
        return f"{self.name} (`{self.program}`, model {self.shown_model}, its own login)"

    def run(self, argv: list[str], prompt: str, folder: Path) -> subprocess.CompletedProcess[str]:
        """Run `argv` in `folder` with `prompt` on stdin; the whole process group dies at the timeout."""
        program = self.executable()
        if program is None:
            self.ready()
        seconds = self.timeout if self.timeout is not None else AGENT_TIMEOUT
        env = {k: v for k, v in os.environ.items() if k not in NESTED}
        try:
            process = subprocess.Popen(
                [str(program), *argv],
                cwd=folder,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # its children die with it at the timeout
            )
        except OSError as err:
            raise ApiUnavailable(
                f"summarizer unavailable: cannot run {program}: {err.strerror or err}"
            ) from err
        try:
            stdout, stderr = process.communicate(prompt, timeout=seconds)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise ApiUnavailable(
                f"summarizer unavailable: `{self.program}` did not finish within {seconds:g} s (--timeout); "
                f"a long transcript may need more, or --max-input-tokens smaller parts"
            ) from None
        except BaseException:
            _kill(process)
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def failed(self, what: str, code: int, detail: str) -> ApiUnavailable:
        lowered = detail.lower()
        if any(word in lowered for word in LOGIN_WORDS):
            return ApiUnavailable(
                f"summarizer unavailable: `{self.program}` is not logged in "
                f"({_one_line(detail, 200)}): {self.login}"
            )
        return ApiUnavailable(
            f"summarizer unavailable: `{what}` failed (exit {code}): {_one_line(detail, 300) or 'no message'}"
        )


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.communicate()


@dataclass
class ClaudeCode(_Agent):
    """`claude -p --output-format json`: no tools, no MCP servers, no slash commands, no session saved,
    our system prompt in place of Claude Code's."""

    name: str = "claude-code"
    program: str = "claude"
    program_env: str = "COMPACTCLI_CLAUDE"
    install: str = "install Claude Code (npm install -g @anthropic-ai/claude-code)"
    login: str = "run `claude` once and log in (/login), or set ANTHROPIC_API_KEY"

    def complete(self, system: str, user: str, max_tokens: int) -> Reply:
        argv = ["-p", "--output-format", "json", "--tools", "", "--no-session-persistence"]
        argv += ["--strict-mcp-config", "--disable-slash-commands", "--system-prompt", system]
        if self.model:
            argv += ["--model", self.model]
        with tempfile.TemporaryDirectory(prefix="compactcli-claude-") as folder:
            done = self.run(argv, user, Path(folder))
        result = _last_json(done.stdout)
        if result is None:
            detail = done.stderr.strip() or done.stdout.strip()
            raise self.failed("claude -p", done.returncode, detail or "it printed no JSON result")
        text = result.get("result")
        if done.returncode != 0 or result.get("is_error") or not isinstance(text, str) or not text.strip():
            status = result.get("api_error_status")
            detail = str(text or result.get("subtype") or done.stderr.strip())
            raise self.failed("claude -p", done.returncode, (f"HTTP {status}: " if status else "") + detail)
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        parts = [
            usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        sent = sum(p for p in parts if isinstance(p, int)) if isinstance(parts[0], int) else None
        written = usage.get("output_tokens") if isinstance(usage.get("output_tokens"), int) else None
        models = result.get("modelUsage")
        model = next(iter(models), None) if isinstance(models, dict) and len(models) == 1 else None
        return Reply(
            text.strip(),
            input_tokens=sent,
            output_tokens=written,
            request_id=result.get("session_id"),
            model=model or self.model,
        )


@dataclass
class Codex(_Agent):
    """`codex exec` in a read-only sandbox, nothing saved (--ephemeral), outside any repository; the
    reply is the last message it writes to a file of ours (-o)."""

    name: str = "codex"
    program: str = "codex"
    program_env: str = "COMPACTCLI_CODEX"
    install: str = "install the Codex CLI (npm install -g @openai/codex)"
    login: str = "run `codex login` (or set OPENAI_API_KEY)"

    def complete(self, system: str, user: str, max_tokens: int) -> Reply:
        # codex exec takes no system prompt: ours leads the prompt, as the instructions it is.
        prompt = f"{system}\n\n{user}" if system else user
        with tempfile.TemporaryDirectory(prefix="compactcli-codex-") as folder:
            work, last = Path(folder) / "work", Path(folder) / "last-message.txt"
            work.mkdir()
            argv = ["exec", "--sandbox", "read-only", "--skip-git-repo-check", "--ephemeral", "--json"]
            argv += ["--color", "never", "-C", str(work), "-o", str(last)]
            if self.model:
                argv += ["--model", self.model]
            done = self.run([*argv, "-"], prompt, work)
            text = last.read_text(encoding="utf-8", errors="replace").strip() if last.is_file() else ""
        events = _json_lines(done.stdout)
        errors = [_event_error(e) for e in events if e.get("type") in ("error", "turn.failed")]
        errors = [e for e in errors if e]
        if done.returncode != 0 or not text:
            detail = errors[-1] if errors else (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise self.failed("codex exec", done.returncode, detail)
        usage = next(
            (
                e["usage"]
                for e in reversed(events)
                if e.get("type") == "turn.completed" and isinstance(e.get("usage"), dict)
            ),
            {},
        )
        sent, written = usage.get("input_tokens"), usage.get("output_tokens")
        return Reply(
            text,
            input_tokens=sent if isinstance(sent, int) else None,
            output_tokens=written if isinstance(written, int) else None,
            model=self.model,
        )


def claude_code(
    *,
    model: str | None,
    timeout: float | None,
    max_retries: int,
    base_url: str | None = None,
    api: str = "chat",
) -> ClaudeCode:
    """The backend of `--backend claude-code` (--model, else the program's default)."""
    return ClaudeCode(model=resolve_model_given(model), timeout=timeout)


def codex(
    *,
    model: str | None,
    timeout: float | None,
    max_retries: int,
    base_url: str | None = None,
    api: str = "chat",
) -> Codex:
    """The backend of `--backend codex` (--model, else the program's default)."""
    return Codex(model=resolve_model_given(model), timeout=timeout)


def _last_json(text: str) -> dict | None:
    """The last line of `text` that is a JSON object (claude prints one; a warning may come before)."""
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _json_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _event_error(event: dict) -> str:
    error = event.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or "")
    return str(event.get("message") or "")


def _one_line(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
