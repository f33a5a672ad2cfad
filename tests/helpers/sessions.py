"""Small Claude Code sessions written record by record, for tests that need a particular shape."""

from __future__ import annotations

IDENTITY = {"isSidechain": False, "userType": "external", "cwd": "/home/u", "sessionId": "s-1"}


class ClaudeCodeSession:
    """A linear session: each record's parent is the record before it; uuids u1, u2, ...; assistant
    messages get ids m1, m2, ... (one API response per record)."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def add(self, kind: str, content: object, **extra: object) -> ClaudeCodeSession:
        number = len(self.records) + 1
        parent = self.records[-1]["uuid"] if self.records else None
        message = {"role": kind, "content": content} | ({"id": f"m{number}"} if kind == "assistant" else {})
        record = {"parentUuid": parent, **IDENTITY, "type": kind, "uuid": f"u{number}", **extra}
        self.records.append(record | {"message": message})
        return self


def claude_code_records(rows: list[tuple[str, object, dict]]) -> list[dict]:
    """The records of a linear session of (kind, content, extra fields) rows."""
    session = ClaudeCodeSession()
    for kind, content, extra in rows:
        session.add(kind, content, **extra)
    return session.records
