"""`compactcli hooks install / uninstall / status`: the hook entry in each agent's settings file, merged into
the file's text so that every other byte stays (docs/design.md, "Hooks")."""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from compactcli.core import errors
from compactcli.hooks import codex_notify, jsontext
from compactcli.hooks.payload import codex_home, copilot_home


@dataclass(frozen=True)
class AgentHook:
    """Where an agent keeps its hooks and what compactcli's entry there says."""

    agent: str
    event: str
    timeout: int  # seconds the agent lets the hook run
    detach: bool  # the agent allows less than a compaction may take: the hook returns at once
    kind: str = "hooks-json"  # or "codex-notify": the `notify` program of Codex's config.toml; or
    # "copilot-json": Copilot CLI's settings.json, whose `hooks.<event>` lists the handlers themselves
    timeout_ms: bool = False  # the entry's `timeout` is in milliseconds (Gemini CLI, Qwen Code)

    def settings_file(self, project: Path | None) -> Path:
        if self.agent == "copilot":
            return (project / ".github" / "copilot" if project else copilot_home()) / "settings.json"
        if self.agent in _SETTINGS_FOLDERS:
            folder = _SETTINGS_FOLDERS[self.agent]
            return (project / folder if project else _agent_home(self.agent)) / "settings.json"
        folder_path = project / ".codex" if project else codex_home()
        return folder_path / ("config.toml" if self.kind == "codex-notify" else "hooks.json")

    def words(self, executable: str) -> list[str]:
        agent = "codex" if self.agent.startswith("codex") else self.agent
        return [executable, "hook", "--agent", agent] + (["--detach"] if self.detach else [])

    def entry(self, executable: str) -> dict:
        command = " ".join(shlex.quote(word) for word in self.words(executable))
        if self.kind == "copilot-json":
            return {"type": "command", "bash": command, "timeoutSec": self.timeout}
        timeout = self.timeout * 1000 if self.timeout_ms else self.timeout
        return {"type": "command", "command": command, "timeout": timeout}


# Agents whose hooks live under `hooks` in a settings.json of their own folder (the user's, or a project's).
_SETTINGS_FOLDERS = {"claude-code": ".claude", "gemini-cli": ".gemini", "qwen-code": ".qwen"}


def _agent_home(agent: str) -> Path:
    """The agent's user folder: ~/.claude, ~/.gemini, or $QWEN_HOME else ~/.qwen (Qwen Code's Storage)."""
    given = os.environ.get("QWEN_HOME", "").strip() if agent == "qwen-code" else ""
    return Path(given).expanduser() if given else Path.home() / _SETTINGS_FOLDERS[agent]


# Claude Code cancels a SessionEnd hook after 1.5 s unless its entry sets `timeout` (seconds, at most 60):
# this one waits for the hook, whose own budget (`hook --timeout`, 5 s) is well inside it. Codex runs its
# `notify` program after each turn, while it still holds the rollout open, and without waiting for it: the
# hook detaches, and its background process compacts the rollout once Codex has closed it. Codex's
# hooks.json SessionEnd runs only once the user trusts it, capped at 3 s during teardown: detached too.
AGENTS = {
    "claude-code": AgentHook("claude-code", "SessionEnd", 30, detach=False),
    "codex": AgentHook("codex", "notify", 0, detach=True, kind="codex-notify"),
    "codex-hooks": AgentHook("codex-hooks", "SessionEnd", 3, detach=True),
    # Gemini CLI 0.61 and Qwen Code 0.15 (its fork) run SessionEnd hooks when they exit and wait for them
    # up to the entry's `timeout` (milliseconds); both append to the session with a write that opens and
    # closes the file, so the hook finds it closed and compacts it at once, as for Claude Code.
    "gemini-cli": AgentHook("gemini-cli", "SessionEnd", 30, detach=False, timeout_ms=True),
    "qwen-code": AgentHook("qwen-code", "SessionEnd", 30, detach=False, timeout_ms=True),
    # Copilot CLI 1.0 reads user hooks from $COPILOT_HOME/settings.json (`hooks.SessionEnd`: a list of
    # `{type, bash, timeoutSec}`); the PascalCase event name makes it send the snake_case payload
    # (`session_id`, `hook_event_name`, `cwd`, `reason`), without the transcript's path. It runs the hook
    # at the end of every session, `-p` too, but before it writes events.jsonl and while it still holds the
    # session: the hook detaches, and its background process waits for the file (hooks/session.py).
    "copilot": AgentHook("copilot", "SessionEnd", 30, detach=True, kind="copilot-json"),
}

_OURS = re.compile(r"(^|[/'\"\s])compactcli['\"]?\s+hook(\s|$)")


def is_ours(handler: object) -> bool:
    """Whether a hook handler is compactcli's (its command runs `compactcli hook`)."""
    return isinstance(handler, dict) and bool(_OURS.search(command_text(handler)))


def command_text(handler: dict) -> str:
    """A handler's command line: `command`, or Copilot CLI's `bash`."""
    return str(handler.get("command") or handler.get("bash") or "")


def executable() -> str:
    """The compactcli the entry runs: this one, by its absolute path (an agent's PATH may lack it)."""
    script = Path(sys.argv[0])
    if script.name == "compactcli" and script.is_file():
        return str(script.resolve().parent / "compactcli") if not script.is_absolute() else str(script)
    found = shutil.which("compactcli")
    return str(Path(found).absolute()) if found else "compactcli"


@dataclass
class Change:
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: nor will it

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(old, new, f"{self.path} (now)", f"{self.path} (new)"))


def _read(path: Path) -> tuple[str | None, jsontext.Node | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.CompactError(f"{path}: cannot read: {exc}") from None
    if not text.strip():
        return text, None
    try:
        root = jsontext.parse(text)
    except ValueError as exc:
        raise errors.BadInput(f"{path}: not JSON, left as it is: {exc}") from None
    if root.kind != "object":
        raise errors.BadInput(f"{path}: not a JSON object, left as it is")
    return text, root


def _handlers(text: str, root: jsontext.Node, event: str, flat: bool = False) -> list[tuple[int, int, dict]]:
    """(group index, handler index, handler) of compactcli's handlers under hooks.<event>; with `flat`
    (Copilot CLI) the list holds the handlers themselves, each its own group (handler index -1)."""
    hooks = root.get("hooks")
    groups = hooks.get(event) if hooks is not None and hooks.kind == "object" else None
    if groups is None or groups.kind != "array":
        return []
    found = []
    for g, (_, _, group) in enumerate(groups.members):
        if flat:
            value = json.loads(text[group.start : group.end])
            if is_ours(value):
                found.append((g, -1, value))
            continue
        handlers = group.get("hooks") if group.kind == "object" else None
        for h, (_, _, node) in enumerate(handlers.members if handlers and handlers.kind == "array" else []):
            value = json.loads(text[node.start : node.end])
            if is_ours(value):
                found.append((g, h, value))
    return found


def planned_install(hook: AgentHook, path: Path, command: str) -> Change:
    """The file's text with compactcli's entry (unchanged when it is there already)."""
    if hook.kind == "codex-notify":
        return Change(path, *codex_notify.planned_install(path, hook.words(command)))
    before, root = _read(path)
    entry = hook.entry(command)
    flat = hook.kind == "copilot-json"
    group = entry if flat else {"hooks": [entry]}
    if root is None:  # no file, or an empty one
        return Change(path, before, json.dumps({"hooks": {hook.event: [group]}}, indent=2) + "\n")
    assert before is not None
    present = _handlers(before, root, hook.event, flat)
    if [value for _, _, value in present] == [entry]:
        return Change(path, before, before)
    text = _without_ours(before, hook.event, flat) if present else before
    root = jsontext.parse(text)
    unit = jsontext.indent_unit(text, root)
    hooks = root.get("hooks")
    if hooks is None:
        return Change(path, before, jsontext.insert(text, root, {hook.event: [group]}, "hooks", unit))
    if hooks.kind != "object":
        raise errors.BadInput(f"{path}: `hooks` is not an object, left as it is")
    groups = hooks.get(hook.event)
    if groups is None:
        return Change(path, before, jsontext.insert(text, hooks, [group], hook.event, unit))
    if groups.kind != "array":
        raise errors.BadInput(f"{path}: `hooks.{hook.event}` is not a list, left as it is")
    return Change(path, before, jsontext.insert(text, groups, group, None, unit))


def _without_ours(text: str, event: str, flat: bool = False) -> str:
    """`text` without compactcli's handlers under hooks.<event>; a group, list or `hooks` object left empty
    by that goes too, so that an uninstall after an install gives the file back as it was."""
    while True:
        root = jsontext.parse(text)
        found = _handlers(text, root, event, flat)
        if not found:
            return text
        g, h, _ = found[-1]
        hooks = root.get("hooks")
        assert hooks is not None
        groups = hooks.get(event)
        assert groups is not None
        group = groups.members[g][2]
        handlers = group.get("hooks") if h >= 0 else None
        if handlers is not None and len(handlers.members) > 1:
            text = jsontext.remove(text, handlers, h)
        elif len(groups.members) > 1:  # a group (its matcher too) with no handler left means nothing
            text = jsontext.remove(text, groups, g)
        elif len(hooks.members) > 1:
            index = next(i for i, (k, _, _) in enumerate(hooks.members) if k == event)
            text = jsontext.remove(text, hooks, index)
        else:
            index = next(i for i, (k, _, _) in enumerate(root.members) if k == "hooks")
            text = jsontext.remove(text, root, index)


def planned_uninstall(hook: AgentHook, path: Path) -> Change:
    """The file's text without compactcli's entry. When the file is exactly what the last install made of
    its backup, that backup's text comes back (an empty `hooks` the user had stays); else the entry is
    cut out, with the lists and objects it leaves empty."""
    if hook.kind == "codex-notify":
        before, present = codex_notify.read(path)
        if present is None:
            return Change(path, before, before)
        handlers = [{"command": " ".join(present)}]
    else:
        before, root = _read(path)
        if root is None or before is None:
            return Change(path, before, before)
        handlers = [h for _, _, h in _handlers(before, root, hook.event, hook.kind == "copilot-json")]
        if not handlers:
            return Change(path, before, before)
    backups = sorted(path.parent.glob(f"{path.name}.compactcli-*.bak"))
    if backups:
        with contextlib.suppress(errors.CompactError, OSError):
            earlier = backups[-1].read_text(encoding="utf-8")
            if len(handlers) == 1:
                command = _command_of(handlers[0], hook)
                if command and planned_install(hook, backups[-1], command).after == before:
                    return Change(path, before, earlier)
    if hook.kind == "codex-notify":
        return Change(path, before, codex_notify.without(before))
    return Change(path, before, _without_ours(before, hook.event, hook.kind == "copilot-json"))


def _command_of(handler: dict, hook: AgentHook) -> str | None:
    """The executable an installed entry names (to redo that install on a backup)."""
    words = shlex.split(command_text(handler))
    if not words:
        return None
    if hook.kind == "codex-notify":
        return words[0] if hook.words(words[0]) == words else None
    return words[0] if hook.entry(words[0]) == handler else None


def installed(hook: AgentHook, path: Path) -> list[dict]:
    """compactcli's handlers in the file (BadInput if it cannot be parsed)."""
    if hook.kind == "codex-notify":
        present = codex_notify.read(path)[1]
        return [{"command": " ".join(shlex.quote(w) for w in present)}] if present else []
    text, root = _read(path)
    flat = hook.kind == "copilot-json"
    return [value for _, _, value in _handlers(text, root, hook.event, flat)] if text and root else []


def backup_name(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return path.with_name(f"{path.name}.compactcli-{stamp}.bak")


def apply(change: Change) -> Path | None:
    """Write the change: the old file copied to a backup first, the new text replacing it atomically with
    the old file's mode. Returns the backup (None when there was no file)."""
    path = change.path
    backup = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o600
        if change.before is not None:
            backup = backup_name(path)
            shutil.copy2(path, backup)
            mode = os.stat(path).st_mode & 0o7777
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(change.after or "")
                f.flush()
                os.fsync(f.fileno())
            os.chmod(temp, mode)
            os.replace(temp, path.resolve())
        except BaseException:
            with_suppress_unlink(temp)
            raise
    except OSError as exc:
        raise errors.CompactError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return backup


def with_suppress_unlink(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass
