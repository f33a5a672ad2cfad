"""Copilot CLI events as 1.0.102 writes them (its session-events schema): `{"type", "data", "id",
"timestamp", "parentId"}`, each event's parent the one before, for tests of the kinds real sessions hold."""

from __future__ import annotations

import json
from pathlib import Path


class Events:
    def __init__(self) -> None:
        self.records: list[dict] = []
        self.add("session.start", sessionId="s", version=1, producer="copilot-agent", context={"cwd": "/w"})

    def add(self, kind: str, **data: object) -> dict:
        own = f"00000000-0000-4000-8000-{len(self.records) + 1:012d}"
        parent = self.records[-1]["id"] if self.records else None
        record = {"type": kind, "data": data, "id": own, "timestamp": "2026-12-01T00:00:00.000Z"}
        record["parentId"] = parent
        self.records.append(record)
        return record

    def user(self, text: str) -> dict:
        return self.add("user.message", content=text, transformedContent=f"<date/>\n\n{text}")

    def calls(self, *requests: tuple[str, str, dict], text: str = "") -> dict:
        tool_requests = [
            {"toolCallId": call, "name": name, "arguments": arguments, "type": "function"}
            for call, name, arguments in requests
        ]
        return self.add("assistant.message", messageId="m", content=text, toolRequests=tool_requests)

    def result(self, call: str, content: str, **result: object) -> dict:
        return self.add(
            "tool.execution_complete", toolCallId=call, success=True, result={"content": content, **result}
        )

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return path
