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


def session_with_a_kept_tail(output: str) -> list[dict]:
    """A Claude Code session compacted the way Claude Code 2.1 does when it keeps the end of the history:
    the boundary names the records it keeps (preservedMessages, preservedSegment: u6 to u9, re-linked to
    the summary s1), which stay where they were written; the next prompt follows the last of them."""
    session = ClaudeCodeSession()
    add = session.add
    add("user", "Count the inputs.")
    for n in range(4):
        add(
            "assistant",
            [{"type": "tool_use", "id": f"a{n}", "name": "Bash", "input": {"command": f"wc {n}"}}],
        )
        add("user", [{"type": "tool_result", "tool_use_id": f"a{n}", "content": output}])
    kept = [record["uuid"] for record in session.records[-4:]]
    metadata = {
        "trigger": "auto",
        "preTokens": 9000,
        "preservedSegment": {"headUuid": kept[0], "anchorUuid": "s1", "tailUuid": kept[-1]},
        "preservedMessages": {"anchorUuid": "s1", "uuids": kept, "allUuids": kept},
    }
    boundary = {"parentUuid": None, "logicalParentUuid": kept[-1], "sessionId": "s-1", "type": "system"}
    boundary |= {"subtype": "compact_boundary", "content": "Conversation compacted", "uuid": "b1"}
    boundary["compactMetadata"] = metadata
    summary = {"parentUuid": "b1", "sessionId": "s-1", "type": "user", "uuid": "s1", "isCompactSummary": True}
    summary["message"] = {"role": "user", "content": "Summary: the inputs were counted."}
    records = [*session.records, boundary, summary]
    session.records.append(session.records[-1])  # the next prompt follows the last record kept
    add("user", "Now count the outputs.")
    add("assistant", [{"type": "tool_use", "id": "b0", "name": "Bash", "input": {"command": "wc out"}}])
    add("user", [{"type": "tool_result", "tool_use_id": "b0", "content": "12 out"}])
    add("assistant", [{"type": "text", "text": "12 outputs."}])
    return records + session.records[10:]


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
