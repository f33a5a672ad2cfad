"""Where compactcli keeps files of its own (the caches), apart from the transcripts' archives."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/compactcli, else ~/.cache/compactcli."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base.strip() else Path.home() / ".cache"
    return root / "compactcli"
