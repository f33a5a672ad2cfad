"""Writing the tests' own transcripts: one JSON record per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, records: list[Any], **dumps: Any) -> Path:
    """`records` as JSONL at `path` (json.dumps' defaults unless `dumps` says otherwise: ensure_ascii,
    separators); a str item is written as the raw line, for bad input. Returns `path`."""
    lines = [r if isinstance(r, str) else json.dumps(r, **dumps) for r in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
