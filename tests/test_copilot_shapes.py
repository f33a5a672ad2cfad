"""Kinds of events real Copilot CLI sessions hold beyond the corpus (docs/design.md, "Copilot CLI
sessions"): an `abort` that leaves calls open, an MCP tool's structured copy and the images a result sends."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import run_cli
from helpers.copilot_events import Events

OUTPUT = "issue 17: the parser drops trailing commas\n" * 40


def _interrupted(abort: bool) -> Events:
    events = Events()
    events.user("run the slow build")
    events.calls(("t1", "bash", {"command": "make"}), ("t2", "bash", {"command": "make test"}))
    events.result("t1", "built")
    if abort:
        events.add("abort", reason="user_initiated")
    events.user("never mind, show me the log")
    events.add("assistant.message", messageId="m2", content="Here it is.")
    return events


def test_calls_an_abort_left_open_are_answered_by_copilot_not_reported(tmp_path: Path):
    done = run_cli("validate", _interrupted(abort=True).write(tmp_path / "aborted.jsonl"), text=True)
    assert done.returncode == 0, done.stdout
    # Without the abort the file itself leaves the call unanswered.
    done = run_cli("validate", _interrupted(abort=False).write(tmp_path / "cut.jsonl"), text=True)
    assert done.returncode == 1 and "cut.jsonl:3: missing-tool-result" in done.stdout


def test_micro_clears_an_mcp_results_structured_copy_and_the_images_it_sends(tmp_path: Path):
    events = Events()
    events.user("look at the issue")
    events.calls(("t1", "github-mcp-server-get_issue", {"issue": 17}))
    image = {"type": "image", "data": "iVBORw0KGgo" * 100, "mimeType": "image/png"}
    structured = {"issue": {"number": 17, "body": OUTPUT}}
    events.result("t1", OUTPUT, structuredContent=structured, binaryResultsForLlm=[image], contents=[image])
    events.calls(("t2", "bash", {"command": "ls"}))
    events.result("t2", "README.md")
    events.add("assistant.message", messageId="m3", content="Done.")
    path = events.write(tmp_path / "events.jsonl")
    before = [json.loads(line) for line in path.read_text().splitlines()]
    done = run_cli("micro", "--keep", "1", path, text=True)
    assert done.returncode == 0, done.stderr
    after = [json.loads(line) for line in path.read_text().splitlines()]
    result = after[3]["data"]["result"]
    assert result == {
        "content": "[Previous: used github-mcp-server-get_issue]",
        "structuredContent": {},
        "binaryResultsForLlm": [],
        "contents": [],
    }
    assert "parser" not in path.read_text() and "iVBOR" not in path.read_text()
    assert [r for n, r in enumerate(after) if n != 3] == [r for n, r in enumerate(before) if n != 3]
    assert run_cli("validate", path).returncode == 0


def test_only_the_users_own_prompts_are_quoted_as_theirs(tmp_path: Path):
    events = Events()
    events.user("Fix the parser so trailing commas are kept.")
    events.add("user.message", content="<skill>pdf: read PDFs page by page</skill>", source="skill-pdf")
    events.add("user.message", content="Continue with the task.", isAutopilotContinuation=True)
    events.add("user.message", content="Report back: parser done?", source="agent-reviewer")
    events.calls(("t1", "bash", {"command": "pytest -q"}))
    events.result("t1", OUTPUT)
    events.add("assistant.message", messageId="m2", content="All tests pass.")
    path = events.write(tmp_path / "events.jsonl")
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "0", "-o", "-", path, text=True)
    assert done.returncode == 0, done.stderr
    (complete,) = [
        json.loads(line)
        for line in done.stdout.splitlines()
        if json.loads(line)["type"] == "session.compaction_complete"
    ]
    summary = complete["data"]["summaryContent"]
    assert "(the newest 1 of 1 user messages" in summary and "trailing commas are kept" in summary
    for injected in ("read PDFs", "Continue with the task", "Report back"):
        assert injected not in summary.split("## The user's own messages")[1], injected


def test_a_response_split_at_its_reasoning_boundaries_is_one_model_call(tmp_path: Path):
    events = Events()
    events.user("Why do the tests fail?")
    chunk = {"messageId": "m1", "apiCallId": "msg_01", "chunkCount": 2}
    events.add("assistant.message", **chunk, chunkIndex=0, content="Let me look.", reasoningText="a test?")
    first = events.calls(("t1", "bash", {"command": "pytest -q"}))
    first["data"].update(chunk, chunkIndex=1, reasoningText="run them")
    events.result("t1", OUTPUT)
    events.add("assistant.message", messageId="m2", apiCallId="msg_02", content="The parser.")
    done = run_cli("replay", "--format", "json", events.write(tmp_path / "events.jsonl"), text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["calls"] == 2
