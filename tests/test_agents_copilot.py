"""GitHub Copilot CLI itself resumes the sessions compactcli compacted (the agent tier).

The session is written by the real Copilot CLI in its bring-your-own-key mode, offline, against the fake
Messages API on 127.0.0.1 (tests/helpers/fakeapi.py; Copilot calls `<base URL>/v1/messages`): it runs a
scripted task (a `view` of a file and shell commands) and writes
$COPILOT_HOME/session-state/<id>/events.jsonl. Each test compacts that file with the installed compactcli,
resumes the session with `copilot --resume=ID -p ...`, and checks what Copilot then sends the model. The
fake refuses a conversation whose tool_use and tool_result blocks are not paired, with the real API's 400.

Skips unless Copilot is installed (tests/helpers/agents.py says where it is looked for). Its native
package unpacks itself into $XDG_CACHE_HOME on first run; the tier keeps that beside the npm prefix, so
private homes do not unpack it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.agents import copilot_env, home_and_project, require_agent, run_agent, tool_uses_sent
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic

TASK = "Check the build: read my notes, count the inputs, show the build log, then the status."
FOLLOW_UP = "What should we look at next?"
RESUMED_REPLY = "Resumed and read the history."
FINAL_REPLY = "The build is green; the notes mention the parser."
MODEL = "claude-sonnet-4.5"

# The task as the model plays it: one tool call per response, then a closing text.
STEPS = [
    ("toolu_01notes", "view", {"path": "NOTES.md"}),
    ("toolu_02count", "bash", {"command": "seq 1 120", "description": "Count the inputs"}),
    ("toolu_03log", "bash", {"command": "printf 'build step %s ok\\n' $(seq 1 40)", "description": "Log"}),
    ("toolu_04status", "bash", {"command": "echo build green", "description": "Status"}),
]
# What each call really returned: text only the original results hold.
ORIGINAL = {
    "toolu_01notes": "note 29: the parser drops trailing commas",
    "toolu_02count": "\n117\n118\n119\n120",
    "toolu_03log": "build step 37 ok",
    "toolu_04status": "build green",
}
CLEARED_BY_MICRO = ["toolu_02count", "toolu_03log"]  # --keep 1; the view of NOTES.md is preserved


@pytest.fixture(scope="module")
def copilot() -> Path:
    return require_agent("copilot", "COMPACTCLI_COPILOT", "@github/copilot")


def _env(home: Path, api: FakeAnthropic) -> dict[str, str]:
    return copilot_env(home, api, MODEL)


def _play_steps(body: dict[str, Any]) -> list[dict[str, Any]]:
    done = tool_uses_sent(body)
    if done >= len(STEPS):
        return [{"type": "text", "text": FINAL_REPLY}]
    call_id, name, arguments = STEPS[done]
    return [{"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments)}]


@pytest.fixture
def session(copilot: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(home, project, events.jsonl): Copilot's own session of the scripted task, written for this test."""
    home, project = home_and_project(tmp_path)
    notes = project / "NOTES.md"
    notes.write_text("".join(f"note {i}: the parser drops trailing commas\n" for i in range(30)))

    def reply(body: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = _play_steps(body)
        if blocks[0].get("name") == "view":  # Copilot's view takes an absolute path
            blocks[0]["input"] = {"path": str(notes)}
        return blocks

    with FakeAnthropic() as api:
        api.reply_blocks = reply
        done = run_agent([copilot, "-p", TASK, "-s", "--allow-all-tools"], cwd=project, env=_env(home, api))
        assert done.returncode == 0, done.stderr + done.stdout
        assert [r.status for r in api.calls("messages")] == [200] * (len(STEPS) + 1)
    (events,) = (home / ".copilot" / "session-state").glob("*/events.jsonl")
    return home, project, events


def _resume(copilot: Path, home: Path, project: Path, events: Path) -> dict[str, Any]:
    """Resume the session with a new prompt; the body of the first request Copilot sends."""
    with FakeAnthropic() as api:
        api.reply_blocks = lambda body: [{"type": "text", "text": RESUMED_REPLY}]
        argv = [copilot, f"--resume={events.parent.name}", "-p", FOLLOW_UP, "-s", "--allow-all-tools"]
        run = run_agent(argv, cwd=project, env=_env(home, api))
        calls = api.calls("messages")
    assert calls, f"Copilot sent nothing: {run.stderr}{run.stdout}"
    rejected = [c for c in calls if c.status != 200]
    assert not rejected, f"the API refused what Copilot sent: {rejected[0].status} {run.stderr}"
    assert run.returncode == 0, run.stderr + run.stdout
    assert RESUMED_REPLY in run.stdout
    return calls[0].body


def _blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == kind
    ]


def _results(body: dict[str, Any]) -> dict[str, str]:
    return {block["tool_use_id"]: block["content"] for block in _blocks(body, "tool_result")}


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [block["text"] for block in content if block.get("type") == "text"]
    return texts


def test_uncompacted_session_resumes_with_every_original_result(copilot, session):
    home, project, events = session
    body = _resume(copilot, home, project, events)
    assert [block["id"] for block in _blocks(body, "tool_use")] == [step[0] for step in STEPS]
    results = _results(body)
    for call_id, text in ORIGINAL.items():
        assert text in results[call_id], call_id
    assert _user_texts(body)[-1].endswith(FOLLOW_UP)


def test_micro_compacted_session_resumes_with_placeholders(copilot, session):
    home, project, events = session
    done = run_cli("micro", "--keep", "1", events, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(copilot, home, project, events)
    results = _results(body)
    assert [block["id"] for block in _blocks(body, "tool_use")] == [step[0] for step in STEPS]
    for call_id in CLEARED_BY_MICRO:
        assert results[call_id] == "[Previous: used bash]"
    assert ORIGINAL["toolu_01notes"] in results["toolu_01notes"]  # Copilot's read tool is preserved
    assert ORIGINAL["toolu_04status"] in results["toolu_04status"]  # the last result is kept
    sent = json.dumps(body)
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in sent, f"{call_id}'s output was still sent"
    assert _user_texts(body)[-1].endswith(FOLLOW_UP)


def test_micro_leaves_no_copy_of_a_cleared_result_in_the_events(session):
    """Copilot keeps a result's UI copy (detailedContent) beside what the model is sent; micro empties it."""
    _, _, events = session
    assert ORIGINAL["toolu_03log"] in events.read_text()
    done = run_cli("micro", "--keep", "1", events, text=True)
    assert done.returncode == 0, done.stderr
    text = events.read_text()
    for call_id in CLEARED_BY_MICRO:
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in text, call_id


def test_summary_that_keeps_the_last_messages_keeps_their_pairs(copilot, session):
    """--keep-last 3 keeps the last call, its result and the closing text after the summary."""
    home, project, events = session
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "3", events, text=True)
    assert done.returncode == 0, done.stderr
    body = _resume(copilot, home, project, events)
    assert [block["id"] for block in _blocks(body, "tool_use")] == ["toolu_04status"]
    assert ORIGINAL["toolu_04status"] in _results(body)["toolu_04status"]
    assert any(
        t.startswith("Some of the conversation history has been summarized") for t in _user_texts(body)
    )


def test_summarized_session_resumes_from_the_summary(copilot, session):
    home, project, events = session
    done = run_cli("summarize", "--backend", "digest", events, text=True)
    assert done.returncode == 0, done.stderr
    compactions = [json.loads(line) for line in events.read_text().splitlines()]
    (complete,) = [e for e in compactions if e["type"] == "session.compaction_complete"]
    checkpoint = events.parent / complete["data"]["checkpointPath"]
    assert checkpoint.read_text() == complete["data"]["summaryContent"] + "\n"
    body = _resume(copilot, home, project, events)
    texts = _user_texts(body)
    framed = [t for t in texts if t.startswith("Some of the conversation history has been summarized")]
    assert len(framed) == 1
    assert "<summary>\n[Conversation compressed. Transcript: " in framed[0]
    assert TASK in framed[0]  # the digest names the task
    assert _blocks(body, "tool_use") == [] and _results(body) == {}  # everything before it is gone
    sent = json.dumps(body)
    for call_id in ("toolu_01notes", *CLEARED_BY_MICRO):  # "build green" is in a command the digest lists
        assert json.dumps(ORIGINAL[call_id])[1:-1] not in sent, call_id
    assert texts[-1].endswith(FOLLOW_UP)


# Each output is over micro's 100 characters and short enough that Copilot 1.0.102 keeps its hook's copy
# whole (it elides the longer ones itself as "duplicated pre-hook tool-result field").
HOOKED_STEPS = [
    (f"toolu_0{n}hooked", "bash", {"command": f"printf 'run {n} %.0s' $(seq 1 15)", "description": "Run"})
    for n in range(1, 4)
]
HOOKED_OUTPUT = {f"toolu_0{n}hooked": f"run {n} " * 15 for n in range(1, 4)}


@pytest.fixture
def hooked_session(copilot: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A session of three shell calls, recorded with a postToolUse hook configured: each call's
    hook.start holds a copy of its result."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".copilot").mkdir(parents=True)
    project.mkdir()
    hooks = {"postToolUse": [{"type": "command", "bash": "cat > /dev/null", "timeoutSec": 10}]}
    (home / ".copilot" / "settings.json").write_text(json.dumps({"hooks": hooks}))

    def reply(body: dict[str, Any]) -> list[dict[str, Any]]:
        done = tool_uses_sent(body)
        if done >= len(HOOKED_STEPS):
            return [{"type": "text", "text": FINAL_REPLY}]
        call_id, name, arguments = HOOKED_STEPS[done]
        return [{"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments)}]

    with FakeAnthropic() as api:
        api.reply_blocks = reply
        done = run_agent([copilot, "-p", TASK, "-s", "--allow-all-tools"], cwd=project, env=_env(home, api))
        assert done.returncode == 0, done.stderr + done.stdout
    (events,) = (home / ".copilot" / "session-state").glob("*/events.jsonl")
    return home, project, events


def _hook_copies(events: Path) -> list[str]:
    return [
        e["data"]["input"]["toolResult"]["textResultForLlm"]
        for e in map(json.loads, events.read_text().splitlines())
        if e["type"] == "hook.start" and e["data"].get("hookType") == "postToolUse"
    ]


def test_micro_clears_the_hooks_copies_and_copilot_still_resumes(copilot, hooked_session):
    home, project, events = hooked_session
    copies = _hook_copies(events)
    assert len(copies) == 3 and all(out.strip() in copies[n] for n, out in enumerate(HOOKED_OUTPUT.values()))
    done = run_cli("micro", "--keep", "1", "--json", events, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["ui_copies_cleared"] == 2
    assert _hook_copies(events)[:2] == ["[Previous: used bash]"] * 2
    text = events.read_text()
    for call_id in ("toolu_01hooked", "toolu_02hooked"):
        assert HOOKED_OUTPUT[call_id].strip() not in text, f"{call_id}'s output is still in the events"
    body = _resume(copilot, home, project, events)
    results = _results(body)
    assert [block["id"] for block in _blocks(body, "tool_use")] == [step[0] for step in HOOKED_STEPS]
    assert results["toolu_01hooked"] == results["toolu_02hooked"] == "[Previous: used bash]"
    assert HOOKED_OUTPUT["toolu_03hooked"].strip() in results["toolu_03hooked"]  # the last result is kept
    assert _user_texts(body)[-1].endswith(FOLLOW_UP)


@pytest.mark.parametrize("threshold", ["100000", "300"])
def test_replay_output_resumes_as_the_session(copilot, session, threshold):
    """What replay -o writes is a session Copilot resumes: with no compaction every call, the old results
    cleared as the next call would have them (micro's --keep 1); after a simulated compaction its summary."""
    home, project, events = session
    out = events.parent / "replayed.jsonl"
    args = ("--threshold", threshold, "--keep", "1", "--backend", "digest", "-o", out)
    done = run_cli("replay", events, *args, cwd=project, text=True)
    assert done.returncode == 0, done.stderr
    out.replace(events)
    body = _resume(copilot, home, project, events)
    texts = _user_texts(body)
    framed = [t for t in texts if t.startswith("Some of the conversation history has been summarized")]
    if threshold == "100000":
        assert framed == []
        assert [block["id"] for block in _blocks(body, "tool_use")] == [step[0] for step in STEPS]
        results = _results(body)
        assert [results[call_id] for call_id in CLEARED_BY_MICRO] == ["[Previous: used bash]"] * 2
        assert ORIGINAL["toolu_01notes"] in results["toolu_01notes"]
        assert ORIGINAL["toolu_04status"] in results["toolu_04status"]
    else:
        assert len(framed) == 1 and "<summary>\n[Conversation compressed. Transcript: " in framed[0]
        assert ORIGINAL["toolu_01notes"] not in json.dumps(body)  # the summarized view is gone
    assert texts[-1].endswith(FOLLOW_UP)


INTERRUPTED = "The execution of this tool, or a previous tool was interrupted."


def test_a_call_an_abort_left_open_is_answered_by_copilot_and_validate_accepts_it(copilot, session):
    """The user interrupted the last call: Copilot wrote an `abort` and no result. Resumed, it answers the
    call itself, so validate reports nothing then (docs/design.md, "Copilot CLI sessions")."""
    home, project, events = session
    records = [json.loads(line) for line in events.read_text().splitlines()]
    (start,) = [
        n
        for n, r in enumerate(records)
        if r["type"] == "tool.execution_start" and r["data"]["toolCallId"] == "toolu_04status"
    ]
    kept = records[: start + 1]
    abort = {
        "type": "abort",
        "data": {"reason": "user_initiated"},
        "id": "0000abcd-0000-4000-8000-000000000001",
    }
    kept.append(abort | {"timestamp": kept[-1]["timestamp"], "parentId": kept[-1]["id"]})
    events.write_text("".join(json.dumps(r) + "\n" for r in kept))
    body = _resume(copilot, home, project, events)  # the fake refuses a call left unanswered
    assert _results(body)["toolu_04status"] == INTERRUPTED
    done = run_cli("validate", events, text=True)  # the resumed session: the follow-up after the abort
    assert done.returncode == 0, done.stdout
    assert "abort" in [json.loads(line)["type"] for line in events.read_text().splitlines()]


def test_copilot_sends_a_notice_as_a_user_text_where_it_stands(copilot, session):
    """What the dialect's seen_by_model counts: the content of a system.notification and of a mode notice."""
    home, project, events = session
    records = [json.loads(line) for line in events.read_text().splitlines()]
    (first,) = [
        n
        for n, r in enumerate(records)
        if r["type"] == "tool.execution_complete" and r["data"]["toolCallId"] == "toolu_01notes"
    ]
    notice = "<system_notification>\nShell command (shellId: 3) has completed.\n</system_notification>"
    when = records[first]["timestamp"]
    records[first + 1 : first + 1] = [
        {"type": "system.notification", "data": {"content": notice, "kind": {"type": "shell_completed"}}},
        {"type": "session.mode_notice_delivered", "data": {"mode": "plan", "content": "Plan mode is on."}},
    ]
    for n, record in enumerate(records[first + 1 : first + 3], 1):
        record.update(id=f"0000beef-0000-4000-8000-{n:012d}", timestamp=when)
    for before, record in zip(records, records[1:], strict=False):
        record["parentId"] = before["id"]  # each event's parent the one before, as Copilot writes them
    events.write_text("".join(json.dumps(r) + "\n" for r in records))
    texts = _user_texts(_resume(copilot, home, project, events))
    assert notice in texts and "Plan mode is on." in texts


def test_copilot_sends_nothing_from_before_a_cleared_context(copilot, session):
    """What the dialect's context_cleared boundary stands for: resumed, Copilot sends the initial message
    set at the clear and what came after it, nothing before it."""
    home, project, events = session
    records = [json.loads(line) for line in events.read_text().splitlines()]
    (done,) = [
        n
        for n, r in enumerate(records)
        if r["type"] == "tool.execution_complete" and r["data"]["toolCallId"] == "toolu_03log"
    ]
    cleared = {"messagesCleared": 6, "initialMessage": "Start over from the build status."}
    records.insert(done + 1, {"type": "session.context_cleared", "data": cleared})
    records[done + 1].update(id="0000c1ea-0000-4000-8000-000000000001", timestamp=records[done]["timestamp"])
    for before, record in zip(records, records[1:], strict=False):
        record["parentId"] = before["id"]
    events.write_text("".join(json.dumps(r) + "\n" for r in records))
    body = _resume(copilot, home, project, events)
    assert [block["id"] for block in _blocks(body, "tool_use")] == ["toolu_04status"]
    assert cleared["initialMessage"] in _user_texts(body)
    assert TASK not in json.dumps(body)
    assert run_cli("validate", events).returncode == 0
