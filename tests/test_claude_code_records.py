"""Records and blocks Claude Code 2.1 writes beyond the plain message records (its session writer's
`appendEntry` table and its tool search), read and written the way Claude Code reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.sessions import ClaudeCodeSession, session_with_a_kept_tail

from compactcli.dialects.claude_code import CLAUDE_CODE, discovered_tools

OUTPUT = "build step ok\n" * 40  # long enough to clear and to summarize


def session_with_tool_search(turns: int = 12) -> list[dict]:
    """A session whose first call is ToolSearch: its result names two deferred tools (tool_reference
    blocks, as Claude Code writes them), which the session then calls."""
    session = ClaudeCodeSession()
    add = session.add
    add("user", "List the open issues and label the stale ones.")
    add(
        "assistant",
        [{"type": "tool_use", "id": "ts1", "name": "ToolSearch", "input": {"query": "github issues"}}],
    )
    found = [
        {"type": "tool_reference", "tool_name": "mcp__github__list_issues"},
        {"type": "tool_reference", "tool_name": "mcp__github__add_label"},
    ]
    add("user", [{"type": "tool_result", "tool_use_id": "ts1", "content": found}])
    for n in range(turns):
        tool = "mcp__github__list_issues" if n % 2 == 0 else "mcp__github__add_label"
        add("assistant", [{"type": "tool_use", "id": f"t{n}", "name": tool, "input": {"page": n}}])
        add("user", [{"type": "tool_result", "tool_use_id": f"t{n}", "content": OUTPUT}])
        add("user", f"next page {n + 1}, please")
    add("assistant", [{"type": "text", "text": "All labelled."}])
    return session.records


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_discovered_tools_are_the_tool_references_of_results_and_what_a_boundary_carried() -> None:
    records = session_with_tool_search(1)
    assert discovered_tools(records[2]) == ["mcp__github__list_issues", "mcp__github__add_label"]
    assert [discovered_tools(record) for record in records[3:]] == [[], [], [], []]
    boundary = {"type": "system", "subtype": "compact_boundary", "compactMetadata": {}}
    boundary["compactMetadata"]["preCompactDiscoveredTools"] = ["mcp__a", 7]
    assert discovered_tools(boundary) == ["mcp__a"]


def test_summarize_carries_the_discovered_tools_in_the_boundary(tmp_path: Path) -> None:
    """Claude Code offers a deferred tool only while the history names it: the compaction that
    replaces the ToolSearch result names the tools in its boundary, as Claude Code's own does."""
    original = session_with_tool_search()
    path = write(tmp_path / "s.jsonl", original)
    done = invoke("summarize", "--backend", "digest", "--keep-user-messages", "0", path)
    assert done.exit_code == 0, done.output
    records = read(path)
    kept = {r["uuid"] for r in records}
    first_kept = next((at for at, r in enumerate(original) if r["uuid"] in kept), len(original))
    assert not any(discovered_tools(r) for r in records if r.get("type") == "user"), "ToolSearch result kept"
    boundaries = [r for r in records if r.get("subtype") == "compact_boundary"]
    assert len(boundaries) == 1
    assert boundaries[0]["compactMetadata"]["preCompactDiscoveredTools"] == [
        "mcp__github__add_label",
        "mcp__github__list_issues",
    ]
    # The boundary still continues the history it replaced (its last record), with the session's identity.
    assert boundaries[0]["logicalParentUuid"] == original[first_kept - 1]["uuid"]
    assert boundaries[0]["sessionId"] == "s-1"

    # Summarized again: the tools the first boundary carried are carried on.
    with path.open("a") as out:
        for n in range(12):
            extra = {"parentUuid": records[-1]["uuid"], **{k: records[-1][k] for k in ("sessionId", "cwd")}}
            tool_use = {"type": "tool_use", "id": f"again{n}", "name": "Bash", "input": {}}
            for kind, content in (
                ("assistant", [tool_use]),
                ("user", [{"type": "tool_result", "tool_use_id": f"again{n}", "content": OUTPUT}]),
            ):
                record = {**extra, "type": kind, "uuid": f"again-{kind}-{n}"}
                record["message"] = {"role": kind, "content": content} | (
                    {"id": f"again-m{n}"} if kind == "assistant" else {}
                )
                out.write(json.dumps(record) + "\n")
                records.append(record)
    done = invoke("summarize", "--backend", "digest", "--keep-user-messages", "0", path)
    assert done.exit_code == 0, done.output
    last = [r for r in read(path) if r.get("subtype") == "compact_boundary"][-1]
    assert last["compactMetadata"]["preCompactDiscoveredTools"] == [
        "mcp__github__add_label",
        "mcp__github__list_issues",
    ]


def test_a_session_without_tool_search_gets_no_discovered_tools(tmp_path: Path) -> None:
    records = session_with_tool_search()
    del records[1:3]  # no ToolSearch call
    records[1]["parentUuid"] = records[0]["uuid"]
    path = write(tmp_path / "s.jsonl", records)
    done = invoke("summarize", "--backend", "digest", path)
    assert done.exit_code == 0, done.output
    boundary = next(r for r in read(path) if r.get("subtype") == "compact_boundary")
    assert "preCompactDiscoveredTools" not in boundary["compactMetadata"]


def test_micro_keeps_a_tool_search_result(tmp_path: Path) -> None:
    """A result of tool_reference blocks is what loads the deferred tools: micro leaves it, even with
    --min-chars 0 --clear-multimodal."""
    path = write(tmp_path / "s.jsonl", session_with_tool_search())
    done = invoke("micro", "--keep", "0", "--min-chars", "0", "--clear-multimodal", path)
    assert done.exit_code == 0, done.output
    records = read(path)
    assert discovered_tools(records[2]) == ["mcp__github__list_issues", "mcp__github__add_label"]
    assert records[4]["message"]["content"][0]["content"] != OUTPUT  # the others are cleared


# Records of the session writer's table that carry no sessionId (2.1.332), each as Claude Code writes it.
NO_SESSION_ID = [
    {
        "type": "file-history-delta",
        "messageId": "u1",
        "snapshotMessageId": "u1",
        "trackingPath": "src/app.py",
        "backup": {"backupFileName": None, "version": 1, "backupTime": "2026-05-04T09:00:00.000Z"},
        "timestamp": "2026-05-04T09:00:00.000Z",
    },
    {"type": "memory-mode", "mode": "auto", "afterUuid": None, "timestamp": "2026-05-04T09:00:00.000Z"},
    {"type": "attribution-snapshot", "messageId": "u1", "snapshot": {}},
    {"type": "fork-context-ref", "agentId": "a1b2c3", "parentSessionId": "s-0"},
    {"type": "observer-ref", "agentId": "a1b2c3", "timestamp": "2026-05-04T09:00:00.000Z"},
    {"type": "hybrid-organization", "organizationUuid": "0c1d"},
]


@pytest.mark.parametrize("first", NO_SESSION_ID, ids=lambda record: record["type"])
def test_a_session_that_starts_with_a_record_without_session_id_is_read(tmp_path: Path, first: dict) -> None:
    assert CLAUDE_CODE.fit(first) == 2
    path = write(tmp_path / "s.jsonl", [first, *session_with_tool_search()])
    done = invoke("estimate", "--format", "json", path)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["stats"]["dialect"] == "claude-code"
    done = invoke("micro", "--keep", "1", path)
    assert done.exit_code == 0, done.output
    assert read(path)[0] == first


# Records of the session's state, as Claude Code 2.1.332 writes them (each carries sessionId).
SESSION_STATE = [
    {"type": "custom-title", "customTitle": "label stale issues", "sessionId": "s-1"},
    {"type": "ai-title", "aiTitle": "Labelling stale GitHub issues", "sessionId": "s-1"},
    {"type": "tag", "tag": "triage", "sessionId": "s-1"},
    {"type": "agent-name", "agentName": "triager", "sessionId": "s-1"},
    {"type": "permission-mode", "permissionMode": "acceptEdits", "sessionId": "s-1"},
    {
        "type": "pr-link",
        "sessionId": "s-1",
        "prNumber": 42,
        "prUrl": "https://github.com/o/r/pull/42",
        "prRepository": "o/r",
        "timestamp": "2026-05-04T09:00:00.000Z",
    },
]


def test_summarize_keeps_the_session_state_above_the_summary(tmp_path: Path) -> None:
    """Claude Code reads the session's title, tag, mode and PR link from anywhere in the file: the
    ones written before the cut stay, above the summary, in file order."""
    records = session_with_tool_search()
    other = [{"type": "last-prompt", "lastPrompt": "next page 1, please", "sessionId": "s-1"}]
    path = write(
        tmp_path / "s.jsonl",
        [records[0], *SESSION_STATE[:3], *records[1:6], *SESSION_STATE[3:], *other, *records[6:]],
    )
    done = invoke("summarize", "--backend", "digest", path)
    assert done.exit_code == 0, done.output
    written = read(path)
    assert written[: len(SESSION_STATE)] == SESSION_STATE
    assert written[len(SESSION_STATE)]["subtype"] == "compact_boundary"
    assert other[0] not in written  # a record of the conversation's point in time goes with it


def test_a_compaction_that_keeps_the_end_of_the_history_is_read_as_claude_code_loads_it(
    tmp_path: Path,
) -> None:
    records = session_with_a_kept_tail(OUTPUT)
    assert [r["uuid"] for r in records] == [f"u{n}" for n in range(1, 10)] + ["b1", "s1"] + [
        f"u{n}" for n in range(11, 15)
    ]
    assert records[11]["parentUuid"] == "u9"
    order = CLAUDE_CODE.new_order()
    for line, record in enumerate(records, 1):
        order.add(line, line * 100, record)
    # The boundary, its summary, the records it kept, then what came after; u1 to u5 are no longer sent.
    assert [records[line - 1]["uuid"] for line, _ in order.order()] == [
        "b1",
        "s1",
        *(f"u{n}" for n in range(6, 10)),
        *(f"u{n}" for n in range(11, 15)),
    ]
    path = write(tmp_path / "s.jsonl", records)
    done = invoke("estimate", "--method", "heuristic", "--format", "json", path)
    assert done.exit_code == 0, done.output
    stats = json.loads(done.stdout)["stats"]
    assert stats["messages"] == 1 + 4 + 4  # the summary, the records kept, the last turn
    assert stats["tool_results"] == 3
    assert invoke("validate", path).exit_code == 0


def test_a_kept_tail_whose_first_record_is_not_in_the_file_is_read_as_written(tmp_path: Path) -> None:
    records = session_with_a_kept_tail(OUTPUT)
    records[9]["compactMetadata"]["preservedMessages"]["uuids"][0] = "gone"
    records[9]["compactMetadata"]["preservedSegment"]["headUuid"] = "gone"
    order = CLAUDE_CODE.new_order()
    for line, record in enumerate(records, 1):
        order.add(line, line * 100, record)
    uuids = [records[line - 1]["uuid"] for line, _ in order.order()]
    assert uuids[:9] == [f"u{n}" for n in range(1, 10)] and uuids[-4:] == [f"u{n}" for n in range(11, 15)]


def test_estimate_counts_what_an_attachment_renders_and_no_prompt_snapshot(tmp_path: Path) -> None:
    """Claude Code 2.1.332 writes beside an attachment the messages it sends (`rendered`), and after
    each request a prompt snapshot (its system prompt and tools, no message): only what is sent counts."""
    session = ClaudeCodeSession()
    reminder = "<system-reminder>\nToday's date is 2026-05-04.\n</system-reminder>"
    listing = {"type": "skill_listing", "content": "- a skill: " + "does many things " * 400, "skillCount": 1}
    session.add("user", "What is the date?")
    session.records.append(
        {
            "parentUuid": "u1",
            "sessionId": "s-1",
            "type": "attachment",
            "uuid": "a1",
            "attachment": listing,
            "rendered": [{"content": [{"type": "text", "text": reminder}]}],
            "renderedRole": "system",
        }
    )
    session.add("assistant", [{"type": "text", "text": "It is the fourth of May."}], parentUuid="a1")
    session.records[-1]["message"]["usage"] = {"input_tokens": 4428, "output_tokens": 11}
    snapshot = {"type": "prompt_snapshot", "systemPrompt": ["You are an agent. " * 3000], "tools": []}
    session.records.append(
        {"parentUuid": "u3", "sessionId": "s-1", "type": "attachment", "uuid": "a2", "attachment": snapshot}
    )
    path = write(tmp_path / "s.jsonl", session.records)
    done = invoke("estimate", "--format", "json", path)
    assert done.exit_code == 0, done.output
    stats = json.loads(done.stdout)["stats"]
    assert stats["parts"]["recorded"] == 4428
    assert stats["parts"]["added"] < 20  # the answer; the snapshot after the last call is no message
    done = invoke("estimate", "--method", "heuristic", "--format", "json", path)
    heuristic = json.loads(done.stdout)["stats"]["tokens"]
    assert heuristic < 200  # the prompt, the reminder rendered (not the listing) and the answer
