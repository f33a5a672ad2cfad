"""Codex's `notify` program in its config.toml, set and removed as one top-level line of the file's text
(every other byte kept). Codex runs one notify program: a file that names another is refused."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from compactcli.core import errors

_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)


def _is_ours(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 1
        and all(isinstance(word, str) for word in value)
        and Path(value[0]).name == "compactcli"
        and value[1] == "hook"
    )


def read(path: Path) -> tuple[str | None, list[str] | None]:
    """(the file's text or None, compactcli's notify words or None); BadInput for TOML that does not parse,
    CompactError for a notify program that is not compactcli's."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.CompactError(f"{path}: cannot read: {exc}") from None
    try:
        settings = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise errors.BadInput(f"{path}: not TOML, left as it is: {exc}") from None
    notify = settings.get("notify")
    if notify is None:
        return text, None
    if not _is_ours(notify):
        raise errors.CompactError(
            f"{path}: notify already runs {notify!r}; Codex runs one notify program, so it is left as it is "
            "(use `hooks install codex-hooks` for Codex's hooks.json)",
            errors.CHECK_FAILED,
        )
    return text, notify


def _line(words: list[str]) -> str:
    return "notify = [" + ", ".join(json.dumps(word) for word in words) + "]\n"


def planned_install(path: Path, words: list[str]) -> tuple[str | None, str]:
    """(the text now, the text with compactcli's notify line): top-level, so before the first table."""
    before, present = read(path)
    if present == words:
        assert before is not None
        return before, before
    text = without(before) if present else (before or "")
    table = _TABLE.search(text)
    if table is None:
        joined = text if not text or text.endswith("\n") else text + "\n"
        return before, joined + _line(words)
    return before, text[: table.start()] + _line(words) + "\n" + text[table.start() :]


def without(text: str | None) -> str:
    """`text` without compactcli's notify line (and the blank line set after it before a table)."""
    if not text:
        return text or ""
    match = re.search(r"^notify = \[[^\n]*\]\n(\n(?=[ \t]*\[))?", text, re.MULTILINE)
    if match is None or not _is_ours(tomllib.loads(match.group().split("\n")[0]).get("notify")):
        return text
    return text[: match.start()] + text[match.end() :]
