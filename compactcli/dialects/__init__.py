"""Transcript dialects and their registry (docs/design.md, "Dialects").

Adding a dialect: its module here, and one entry in DIALECTS.
"""

from __future__ import annotations

from collections.abc import Iterable

from compactcli.dialects import detection
from compactcli.dialects.anthropic import ANTHROPIC
from compactcli.dialects.base import (
    BOUNDARY,
    MAIN,
    SUMMARY,
    ConversationTracker,
    Dialect,
    ToolResult,
    ToolUse,
)
from compactcli.dialects.claude_code import CLAUDE_CODE
from compactcli.dialects.codex import CODEX
from compactcli.dialects.openai import OPENAI

DIALECTS: dict[str, Dialect] = {d.name: d for d in (ANTHROPIC, CLAUDE_CODE, OPENAI, CODEX)}
NAMES = tuple(DIALECTS)
DEFAULT = ANTHROPIC  # an empty file: nothing in it to misread


def detect(lines: Iterable[bytes], path: str) -> Dialect | None:
    """The dialect of a file from its first lines (None for a file without any); see detection.detect."""
    return detection.detect(lines, path, tuple(DIALECTS.values()))


def get(name: str) -> Dialect:
    return DIALECTS[name]


__all__ = [
    "ANTHROPIC",
    "BOUNDARY",
    "CLAUDE_CODE",
    "CODEX",
    "DEFAULT",
    "DIALECTS",
    "MAIN",
    "NAMES",
    "OPENAI",
    "SUMMARY",
    "ConversationTracker",
    "Dialect",
    "ToolResult",
    "ToolUse",
    "detect",
    "get",
]
