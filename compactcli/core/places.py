"""Where compactcli keeps files of its own (the caches), apart from the transcripts' archives."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/compactcli, else ~/.cache/compactcli."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base.strip() else Path.home() / ".cache"
    return root / "compactcli"


def agent_session_folders() -> list[tuple[str, Path]]:
    """(agent, folder) for each agent whose sessions compactcli reads, where that agent keeps them on this
    machine (the folder need not exist): what read-only commands read when given no PATHS."""
    codex = os.environ.get("CODEX_HOME", "").strip()
    return [
        ("Claude Code", Path.home() / ".claude" / "projects"),
        ("Codex", (Path(codex).expanduser() if codex else Path.home() / ".codex") / "sessions"),
        ("pi", Path.home() / ".pi" / "agent" / "sessions"),
    ]
