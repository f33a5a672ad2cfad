"""Small sessions for tests that need a particular shape: Claude Code sessions written record by record,
and Anthropic Messages tool loops."""

from __future__ import annotations

import re

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


# The user message a summary becomes: the archive's path, a blank line, the summary.
SUMMARY_MESSAGE = re.compile(
    r"^\[Conversation compressed\. Transcript: (?P<path>[^\]]+)\]\n\n(?P<summary>.*)$", re.DOTALL
)


def tool_loop(task: str, turns: int = 3, output: str = "ok", last_user: str | None = None) -> list[dict]:
    """An Anthropic Messages conversation: the `task`, `turns` bash calls each answered by `output`,
    `last_user` (when given) and a closing "All steps done."."""
    records = [{"role": "user", "content": task}]
    for n in range(turns):
        records.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {n}."},
                    {"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"command": f"step {n}"}},
                ],
            }
        )
        records.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": output}]}
        )
    if last_user is not None:
        records.append({"role": "user", "content": last_user})
    records.append({"role": "assistant", "content": "All steps done."})
    return records


def tool_calls(task: str, calls: list[tuple[str, str]]) -> list[dict]:
    """An Anthropic Messages conversation: the `task`, then one call per (tool name, output), each
    answered, and a closing "Done."."""
    records: list[dict] = [{"role": "user", "content": task}]
    for n, (tool, output) in enumerate(calls):
        use = {"type": "tool_use", "id": f"c{n}", "name": tool, "input": {"step": n}}
        records.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {n}."}, use]})
        result = {"type": "tool_result", "tool_use_id": f"c{n}", "content": output}
        records.append({"role": "user", "content": [result]})
    records.append({"role": "assistant", "content": "Done."})
    return records
