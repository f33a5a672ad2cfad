"""pi session entries as pi's session manager writes them (core/session-manager.ts, pi-ai's types), for
tests of the kinds a real session holds: a header, then entries with `id` and `parentId`, each a child of
the entry before."""

from __future__ import annotations

import base64
import json
from pathlib import Path

# The smallest PNG header image_size reads: 1x1 pixels.
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00\x00\x00\x01" * 2 + b"\x00" * 2000)


def header(version: int = 3) -> dict:
    when = "2026-01-01T00:00:00.000Z"
    return {"type": "session", "version": version, "id": "s1", "timestamp": when, "cwd": "/w"}


class Session:
    """Entries appended in order, each the child of the one before (pi's leaf)."""

    def __init__(self, version: int = 3) -> None:
        self.records: list[dict] = [header(version)]
        self.leaf: str | None = None

    def add(self, kind: str = "message", **fields: object) -> dict:
        own = f"e{len(self.records):07d}"
        entry = {"type": kind, "id": own, "parentId": self.leaf, "timestamp": "2026-01-01T00:00:01.000Z"}
        entry.update(fields)
        self.records.append(entry)
        self.leaf = own
        return entry

    def message(self, role: str, **fields: object) -> dict:
        return self.add(message={"role": role, "timestamp": 1, **fields})

    def user(self, content: object) -> dict:
        return self.message("user", content=content)

    def assistant(self, *blocks: dict, stop: str = "toolUse", context: int = 100) -> dict:
        usage = {"input": context, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": context + 10}
        return self.message(
            "assistant",
            content=list(blocks),
            api="anthropic-messages",
            provider="anthropic",
            model="claude-x",
            usage=usage,
            stopReason=stop,
        )

    def result(self, call_id: str, content: list, name: str = "bash", **extra: object) -> dict:
        return self.message(
            "toolResult", toolCallId=call_id, toolName=name, content=content, isError=False, **extra
        )

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return path


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def image(mime: str = "image/png") -> dict:
    return {"type": "image", "data": PNG.decode(), "mimeType": mime}


def call(call_id: str, name: str = "bash", **arguments: object) -> dict:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments or {"command": "ls"}}
