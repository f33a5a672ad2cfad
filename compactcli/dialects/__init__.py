"""Transcript dialects and their registry (docs/design.md, "Dialects").

Adding a dialect: its module here, and one entry in MODULES.

The registry knows the dialects' names without importing them: `--help` and `--dialect`'s choices need
only the names, and a run the cache answers reads no file. A dialect's module is imported the first
time the dialect itself is asked for (`get`), and all of them when the registry is (`DIALECTS`,
`detect`: detection asks each dialect whether a record is its own).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compactcli.dialects.base import Dialect

# name -> (module in this package, the Dialect it defines), in registry order (detection's order)
MODULES: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic", "ANTHROPIC"),
    "claude-code": ("claude_code", "CLAUDE_CODE"),
    "openai": ("openai", "OPENAI"),
    "codex": ("codex", "CODEX"),
    "pi": ("pi", "PI"),
    "gemini-cli": ("gemini_cli", "GEMINI_CLI"),
    "qwen-code": ("qwen_code", "QWEN_CODE"),
    "copilot": ("copilot", "COPILOT"),
}
NAMES = tuple(MODULES)
DEFAULT_NAME = "anthropic"  # an empty file: nothing in it to misread

# What `from compactcli.dialects import X` gives without naming a dialect module: the interface.
_BASE_NAMES = frozenset(
    {"BOUNDARY", "MAIN", "SUMMARY", "ConversationTracker", "Dialect", "ToolResult", "ToolUse"}
)
_CONSTANTS = {attr: name for name, (_, attr) in MODULES.items()}


def _load(name: str) -> Dialect:
    module, attr = MODULES[name]
    return getattr(importlib.import_module(f"compactcli.dialects.{module}"), attr)


def _registry() -> dict[str, Dialect]:
    registry = globals().get("DIALECTS")
    if registry is None:
        registry = globals()["DIALECTS"] = {name: _load(name) for name in NAMES}
    return registry


def __getattr__(attr: str) -> Any:
    """DIALECTS, DEFAULT, each dialect's constant and the interface's names, imported when first used."""
    if attr == "DIALECTS":
        return _registry()
    if attr == "DEFAULT":
        return get(DEFAULT_NAME)
    if attr in _CONSTANTS:
        return _load(_CONSTANTS[attr])
    if attr in _BASE_NAMES:
        from compactcli.dialects import base

        return getattr(base, attr)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def detect(lines: Iterable[bytes], path: str) -> Dialect | None:
    """The dialect of a file from its first lines (None for a file without any); see detection.detect."""
    from compactcli.dialects import detection

    return detection.detect(lines, path, tuple(_registry().values()))


def get(name: str) -> Dialect:
    """The dialect of that name; only its own module is imported (KeyError for an unknown name)."""
    registry = globals().get("DIALECTS")
    return registry[name] if registry is not None else _load(name)


__all__ = [
    "ANTHROPIC",
    "BOUNDARY",
    "CLAUDE_CODE",
    "CODEX",
    "COPILOT",
    "DEFAULT",
    "DEFAULT_NAME",
    "DIALECTS",
    "MAIN",
    "MODULES",
    "NAMES",
    "OPENAI",
    "PI",
    "SUMMARY",
    "ConversationTracker",
    "Dialect",
    "ToolResult",
    "ToolUse",
    "detect",
    "get",
]
