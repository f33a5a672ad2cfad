"""The copilot dialect on the bundled sample (samples/copilot/events.jsonl) and on small event files: what the
model is sent, the active context after Copilot's compaction, micro's clearing, summarize's compaction and
checkpoint (docs/design.md, "Copilot CLI sessions")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.files import write_jsonl
from helpers.invariants import assert_only_results_cleared, is_default_placeholder

from compactcli import dialects
from compactcli.layers import micro

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "copilot" / "events.jsonl"
COPILOT = dialects.get("copilot")


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def event(kind: str, **data: object) -> dict:
    return {
        "type": kind,
        "data": data,
        "id": f"e-{kind}",
        "timestamp": "2026-11-30T10:00:00.000Z",
        "parentId": None,
    }


def test_the_model_is_sent_the_transformed_user_text_tool_requests_and_results():
    user = event(
        "user.message",
        content="Fix it.",
        transformedContent="<current_datetime>x</current_datetime>\n\nFix it.",
    )
    assert COPILOT.normalize(user) == {
        "role": "user",
        "content": [{"type": "text", "text": user["data"]["transformedContent"]}],
    }
    assert COPILOT.normalize(event("user.message", content="Only words.")) == {
        "role": "user",
        "content": [{"type": "text", "text": "Only words."}],
    }
    asked = event(
        "assistant.message",
        content="",
        toolRequests=[{"toolCallId": "c1", "name": "view", "arguments": {"path": "/a"}, "type": "function"}],
    )
    assert COPILOT.normalize(asked) == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "view", "input": {"path": "/a"}}],
    }
    failed = event(
        "tool.execution_complete", toolCallId="c1", success=False, error={"message": "no such file"}
    )
    assert COPILOT.normalize(failed)["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "no such file", "is_error": True}
    ]
    assert COPILOT.failed_calls(failed) == ["c1"]
    # A nudge Copilot sends in the user's turn is not the user's words.
    assert not COPILOT.is_user_words(
        event("user.message", content="", transformedContent="Mark the task done.")
    )
    assert COPILOT.is_user_words(user)


def test_a_sub_agents_events_are_a_conversation_of_their_own():
    own = event("tool.execution_complete", toolCallId="c9", parentToolCallId="c2", result={"content": "x"})
    assert COPILOT.is_side(own) and COPILOT.new_tracker().key(own) == "c2"
    assert not COPILOT.is_side(event("tool.execution_complete", toolCallId="c2", result={"content": "x"}))


def test_estimate_counts_from_copilots_compaction_and_reads_recorded_usage():
    done = run_cli("estimate", "--method", "usage", "--json", SAMPLE, text=True)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    records = events(SAMPLE)
    compaction = next(n for n, r in enumerate(records, 1) if r["type"] == "session.compaction_complete")
    assert stats["active_from"] == compaction
    last = [r["data"]["usage"] for r in records if r["type"] == "session.usage_record"][-1]
    assert stats["tokens"] == last["inputTokens"] + last["outputTokens"]
    # The summary, the two calls and their results after it, the closing text.
    assert (stats["messages"], stats["tool_results"]) == (6, 2)


def test_micro_clears_results_and_their_ui_copies_keeps_view_and_is_idempotent(tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copyfile(SAMPLE, path)
    before = path.read_bytes()
    done = run_cli("micro", "--keep", "1", "--json", path, text=True)
    assert done.returncode == 0, done.stderr
    after = path.read_bytes()
    cleared = assert_only_results_cleared("copilot", before, after, is_default_placeholder)
    assert cleared == json.loads(done.stdout)["stats"]["cleared"] > 0
    results = {
        r["data"]["toolCallId"]: r["data"] for r in events(path) if r["type"] == "tool.execution_complete"
    }
    requests = {
        q["toolCallId"]: q["name"]
        for r in events(path)
        if r["type"] == "assistant.message"
        for q in r["data"]["toolRequests"]
    }
    for call, data in results.items():
        content = data.get("result", {}).get("content")
        if requests[call] == "view":
            assert not is_default_placeholder(content), "Copilot's read tool is preserved"
        elif is_default_placeholder(content):
            assert data["result"].get("detailedContent", "") == "", "the UI's copy goes with the result"
    again = run_cli("micro", "--keep", "1", path, text=True)
    assert again.returncode == 0 and path.read_bytes() == after


def test_summarize_appends_copilots_compaction_and_writes_its_checkpoint(tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copyfile(SAMPLE, path)
    for number, keep in ((2, 3), (3, 1)):  # the sample holds Copilot's checkpoint 1: the next numbers
        done = run_cli("summarize", "--backend", "digest", "--keep-last", keep, path, text=True)
        assert done.returncode == 0, done.stderr
        records = events(path)
        assert records[0]["type"] == "session.start"
        start, complete = records[1], records[2]
        assert (start["type"], complete["type"]) == (
            "session.compaction_start",
            "session.compaction_complete",
        )
        assert complete["parentId"] == start["id"] and complete["data"]["success"] is True
        assert complete["data"]["checkpointNumber"] == number
        summary = complete["data"]["summaryContent"]
        assert summary.startswith("[Conversation compressed. Transcript: ")
        assert "Offline digest of 3 messages" in summary  # the summary, its last call and result
        checkpoint = tmp_path / complete["data"]["checkpointPath"]
        assert checkpoint.parent == tmp_path / "checkpoints"
        assert checkpoint.read_text() == summary + "\n"
        assert [r["type"] for r in records[-2:]] == ["assistant.message", "assistant.turn_end"]
        assert run_cli("validate", path, text=True).returncode == 0


def _call(call_id: str, name: str, output: str, hook_text: str | None = None) -> list[dict]:
    """A tool call as Copilot records it with a postToolUse hook configured: the request, the hook's run
    (its input holds a copy of the result: `hook_text`, the output by default), then the completion."""
    copy = {"textResultForLlm": output if hook_text is None else hook_text, "resultType": "success"}
    copy |= {"sessionLog": output, "contents": [{"type": "terminal", "text": output}], "toolTelemetry": {}}
    hook = {"toolName": name, "toolArgs": {"command": "run"}, "toolResult": copy}
    found = [
        event("assistant.message", content="", toolRequests=[{"toolCallId": call_id, "name": name}]),
        event("hook.start", hookInvocationId=f"h-{call_id}", hookType="postToolUse", input=hook),
        event("hook.end", hookInvocationId=f"h-{call_id}", hookType="postToolUse", success=True),
        event("tool.execution_complete", toolCallId=call_id, success=True, result={"content": output}),
    ]
    return [dict(e, id=f"{e['id']}-{call_id}") for e in found]


def test_micro_clears_a_post_tool_use_hooks_copy_with_the_result_it_copies(tmp_path):
    """A postToolUse hook.start names no call: it copies the result of the next completion of that tool
    with that very text (docs/design.md, "micro and estimate")."""
    same = "a" * 500  # c1 and c4 return the same text: each takes its own hook's copy
    calls = [
        _call("c1", "bash", same),
        _call("c2", "bash", "b" * 500, hook_text="what the hook saw differs"),  # no copy of c2
        _call("c3", "bash", "c" * 500),
        _call("c4", "view", "d" * 500),  # preserved
        _call("c5", "bash", same),  # the last: kept
    ]
    path = write_jsonl(tmp_path / "events.jsonl", [event("session.start"), *(e for c in calls for e in c)])
    before = path.read_bytes().splitlines(keepends=True)
    done = run_cli("micro", "--keep", "1", "--json", path, text=True)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert (stats["cleared"], stats["ui_copies_cleared"]) == (3, 2)
    after = path.read_bytes().splitlines(keepends=True)
    hooks = {r["id"]: r["data"]["input"]["toolResult"] for r in events(path) if r["type"] == "hook.start"}
    placeholder = "[Previous: used bash]"
    emptied = {"textResultForLlm": placeholder, "sessionLog": "", "contents": []}
    for call in ("c1", "c3"):
        assert {k: hooks[f"e-hook.start-{call}"][k] for k in emptied} == emptied, call
    assert hooks["e-hook.start-c2"]["textResultForLlm"] == "what the hook saw differs"
    assert hooks["e-hook.start-c2"]["sessionLog"] == "b" * 500  # not a copy: kept
    assert hooks["e-hook.start-c4"]["textResultForLlm"] == "d" * 500
    assert hooks["e-hook.start-c5"]["textResultForLlm"] == same
    changed = [n for n, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == [2, 4, 8, 10, 12]  # c1's hook and result, c2's result, c3's hook and result
    assert run_cli("validate", path).returncode == 0
    again = run_cli("micro", "--keep", "1", path, text=True)
    assert again.returncode == 0 and path.read_bytes().splitlines(keepends=True) == after


@pytest.mark.parametrize("budget", [0, 520, 1 << 22])  # digests; c1 and c2 texts, c3 and c5 digests; texts
def test_hook_copies_wait_as_their_text_or_as_a_digest_and_match_alike(budget, monkeypatch):
    """A waiting copy is kept as its text while few characters wait, else as a digest of it: the same
    copies go to the same results either way, and what waited is given back once matched."""
    monkeypatch.setattr(micro, "_WAITING_TEXT_CHARS", budget)
    same = "a" * 500
    calls = [
        _call("c1", "bash", same),
        _call("c2", "bash", "b" * 500, hook_text="what the hook saw differs"),
        _call("c3", "bash", "c" * 500),
        _call("c5", "bash", same),
    ]
    records = [event("session.start"), *(e for c in calls for e in c)]
    index = micro.MicroIndex(dialects.get("copilot"))
    for number, record in enumerate(records, 1):
        index.add(number, record)
    assert index.copies == {"c1": [3], "c3": [11], "c5": [15]}
    # c2's copy of other text still waits (a near copy of c2, not one matched by its text).
    assert index._waiting_chars == (len("what the hook saw differs") if budget else 0)


def _put_back_hook_copies(path: Path, outputs: dict[str, str]) -> None:
    """What an earlier micro left: the results cleared, the hooks' copies of them as Copilot wrote them."""
    records = events(path)
    for record in records:
        call = record["id"].removeprefix("e-hook.start-")
        if record["type"] == "hook.start" and call in outputs:
            copy = record["data"]["input"]["toolResult"]
            copy |= {"textResultForLlm": outputs[call], "sessionLog": outputs[call]}
            copy["contents"] = [{"type": "terminal", "text": outputs[call]}]
    write_jsonl(path, records)


def test_micro_clears_the_hook_copies_an_earlier_version_left_beside_results_it_cleared(tmp_path):
    """The copy a postToolUse hook holds of a result an earlier micro cleared no longer matches the
    result's text: it is the copy right before that result, cleared on the next run (docs/design.md,
    "A result cleared before")."""
    calls = [
        _call("c1", "bash", "a" * 500),
        _call("c2", "bash", "b" * 500, hook_text="what the hook saw differs"),  # short: never cleared
        _call("c3", "bash", "c" * 500),
        _call("c4", "view", "d" * 500),  # preserved
        _call("c5", "bash", "e" * 500),  # the last: kept
    ]
    path = write_jsonl(tmp_path / "events.jsonl", [event("session.start"), *(e for c in calls for e in c)])
    assert run_cli("micro", "--keep", "1", path).returncode == 0
    _put_back_hook_copies(path, {"c1": "a" * 500, "c3": "c" * 500})
    left = path.read_bytes()
    assert run_cli("micro", "--keep", "5", path).returncode == 0  # all kept: nothing to clear again
    assert path.read_bytes() == left
    done = run_cli("micro", "--keep", "1", "--json", path, text=True)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert (stats["cleared"], stats["ui_copies_cleared"]) == (0, 2)
    hooks = {r["id"]: r["data"]["input"]["toolResult"] for r in events(path) if r["type"] == "hook.start"}
    emptied = {"textResultForLlm": "[Previous: used bash]", "sessionLog": "", "contents": []}
    for call in ("c1", "c3"):
        assert {k: hooks[f"e-hook.start-{call}"][k] for k in emptied} == emptied, call
    assert hooks["e-hook.start-c2"]["textResultForLlm"] == "what the hook saw differs"
    assert hooks["e-hook.start-c4"]["textResultForLlm"] == "d" * 500
    assert hooks["e-hook.start-c5"]["textResultForLlm"] == "e" * 500
    after = path.read_bytes()
    changed = [
        n for n, (a, b) in enumerate(zip(left.splitlines(), after.splitlines(), strict=True)) if a != b
    ]
    assert changed == [2, 10]  # c1's and c3's hooks only
    assert run_cli("validate", path).returncode == 0
    assert run_cli("micro", "--keep", "1", path).returncode == 0
    assert path.read_bytes() == after


def test_a_long_hook_copy_of_other_text_goes_with_the_result_after_it_and_copilots_elision_stays(tmp_path):
    """A hook given more than --min-chars characters of other text than the result right after it is
    cleared with that result, on the first run as on a later one; the copy Copilot elides itself stays."""
    elided = (
        "[copilot:elided textResultForLlm (500 bytes) - duplicated pre-hook tool-result field; "
        "canonical data remains in adjacent tool and skill events]"
    )
    calls = [
        _call("c1", "bash", "a" * 500, hook_text="f" * 300),
        _call("c2", "bash", "b" * 500, hook_text=elided),
        _call("c3", "bash", "c" * 500),
    ]
    path = write_jsonl(tmp_path / "events.jsonl", [event("session.start"), *(e for c in calls for e in c)])
    done = run_cli("micro", "--keep", "1", "--json", path, text=True)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert (stats["cleared"], stats["ui_copies_cleared"]) == (2, 1)
    hooks = {r["id"]: r["data"]["input"]["toolResult"] for r in events(path) if r["type"] == "hook.start"}
    assert hooks["e-hook.start-c1"]["textResultForLlm"] == "[Previous: used bash]"
    assert hooks["e-hook.start-c2"]["textResultForLlm"] == elided
    assert hooks["e-hook.start-c2"]["sessionLog"] == "b" * 500
    after = path.read_bytes()
    assert run_cli("micro", "--keep", "1", path).returncode == 0
    assert path.read_bytes() == after


def test_estimate_counts_the_summary_of_a_session_summarize_left_with_its_compaction_only(tmp_path):
    # summarize with nothing kept leaves session.start and the compaction events: the summary is the context.
    path = tmp_path / "events.jsonl"
    shutil.copyfile(SAMPLE, path)
    assert run_cli("summarize", "-q", "--backend", "digest", path).returncode == 0
    done = run_cli("estimate", "--method", "heuristic", "--json", path, text=True)
    stats = json.loads(done.stdout)["stats"]
    summary = events(path)[-1]["data"]["summaryContent"]
    assert stats["messages"] == 1
    assert stats["by_category"]["text"] > len(summary) // 8  # the summary's words, not an empty context


def test_replay_output_starts_with_session_start(tmp_path):
    """Copilot reads a session from its session.start: replay -o writes it first, before the recorded
    compaction the context starts from and before a simulated one's compaction events."""
    path = tmp_path / SAMPLE.name
    shutil.copyfile(SAMPLE, path)
    first = SAMPLE.read_bytes().splitlines()[0]
    cases = (("100000", ["session.compaction_complete"]), ("300", ["session.compaction_start"]))
    for threshold, after in cases:
        out = tmp_path / f"out-{threshold}.jsonl"
        args = ("--threshold", threshold, "--keep", "1", "--backend", "digest", "-o", out)
        done = run_cli("replay", path, *args, cwd=tmp_path, text=True)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes().splitlines()[0] == first
        kinds = [record["type"] for record in events(out)]
        assert kinds.count("session.start") == 1 and kinds[1:2] == after
        run = run_cli("validate", "--json", out, text=True)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["stats"]["dialect"] == "copilot"
