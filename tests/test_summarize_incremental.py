"""Summaries that build on the last one: a transcript that holds a compaction summary (ours, Claude Code's
isCompactSummary record, Codex's `compacted` record) is summarized from that summary plus what followed,
with the prompt that merges the two; the archive and what came before the summary are not sent. The
result records how many compactions deep it is, and replay simulates the same. The model is the fake
Messages API on 127.0.0.1 (tests/helpers/fakeapi.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic

OK = 0
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TASK = "Port the CSV loader in tally/ledger.py to the csv module."
OLD = "OLD-OUTPUT-7731 from the first part"
NEW = "NEW-STEP-4242 after the first summary"
DEPTH = re.compile(r"\(Compaction (\d+): this summary builds on the one before it\.\)")


def user_turn(body: dict) -> str:
    return body["messages"][-1]["content"]


def fenced(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    assert match, text[:300]
    return match.group(1)


def summarize(api: FakeAnthropic, path: Path, *args: str) -> dict:
    done = run_cli("summarize", "--json", *args, path, cwd=path.parent, text=True, env=api.env())
    assert done.returncode == OK, done.stderr
    return json.loads(done.stdout)["stats"]


def test_an_anthropic_transcript_summarized_again_sends_the_last_summary_and_what_followed(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    records = [
        {"role": "user", "content": TASK},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": OLD}]},
        {"role": "assistant", "content": "Listed."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    replies = iter(["FIRST SUMMARY of the port", "SECOND SUMMARY", "THIRD SUMMARY"])
    fake_api.reply_text = lambda body: next(replies)
    assert summarize(fake_api, path)["compaction_depth"] == 1
    first = fake_api.calls("messages")[0].body
    assert "<previous_summary>" not in user_turn(first) and OLD in user_turn(first)

    with path.open("a") as f:
        f.write(json.dumps({"role": "assistant", "content": NEW}) + "\n")
        f.write(json.dumps({"role": "user", "content": "Now write the docs."}) + "\n")
    stats = summarize(fake_api, path)
    second = user_turn(fake_api.calls("messages")[1].body)
    previous = fenced(second, "previous_summary")
    assert "FIRST SUMMARY of the port" in previous
    transcript = fenced(second, "transcript")
    assert NEW in transcript and "Now write the docs." in transcript
    assert OLD not in second  # the first part is in the archive and the summary, not sent again
    assert "<previous_summary> is the summary written then" in second
    assert stats["compaction_depth"] == 2
    text = json.loads(path.read_text().splitlines()[0])["content"]
    assert text.count("SECOND SUMMARY") == 1 and DEPTH.findall(text) == ["2"]

    with path.open("a") as f:
        f.write(json.dumps({"role": "assistant", "content": "Docs written."}) + "\n")
    assert summarize(fake_api, path)["compaction_depth"] == 3
    third = user_turn(fake_api.calls("messages")[2].body)
    assert "SECOND SUMMARY" in fenced(third, "previous_summary")
    assert DEPTH.findall(json.loads(path.read_text().splitlines()[0])["content"]) == ["3"]


def test_a_claude_code_session_builds_on_claude_codes_own_summary(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copyfile(SAMPLES / "claude-code" / "session.jsonl", path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    at = next(i for i, r in enumerate(records) if r.get("isCompactSummary"))
    own = records[at]["message"]["content"]
    own = own if isinstance(own, str) else own[0]["text"]
    before = [
        r["message"]["content"]
        for r in records[:at]
        if r.get("type") == "user" and isinstance(r.get("message", {}).get("content"), str)
    ]
    assert before, "the sample has user messages before its compaction"
    fake_api.reply_text = lambda body: "MERGED CLAUDE SUMMARY"
    stats = summarize(fake_api, path)
    [call] = fake_api.calls("messages")
    sent = user_turn(call.body)
    assert fenced(sent, "previous_summary").startswith(own.strip()[:200])
    assert all(
        text.strip()[:80] not in fenced(sent, "transcript") for text in before if len(text.strip()) > 20
    )
    assert stats["compaction_depth"] == 2
    assert "(Compaction 2: this summary builds on the one before it.)" in path.read_text()

    # Summarized once more after the agent went on: built on ours, three deep.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    last = [r for r in lines if r.get("uuid")][-1]
    identity = {k: last[k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version") if k in last}
    follow = [
        {
            "parentUuid": last["uuid"],
            **identity,
            "type": "user",
            "uuid": "f0000000-0000-4000-8000-000000000001",
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": NEW},
        },
        {
            "parentUuid": "f0000000-0000-4000-8000-000000000001",
            **identity,
            "type": "assistant",
            "uuid": "f0000000-0000-4000-8000-000000000002",
            "timestamp": "2026-12-01T10:00:01.000Z",
            "message": {
                "id": "msg_f1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": "On it."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2},
            },
        },
    ]
    with path.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in follow)
    fake_api.reply_text = lambda body: "THIRD CLAUDE SUMMARY"
    assert summarize(fake_api, path)["compaction_depth"] == 3
    again = user_turn(fake_api.calls("messages")[1].body)
    assert "MERGED CLAUDE SUMMARY" in fenced(again, "previous_summary")
    assert NEW in fenced(again, "transcript") and own.strip()[:200] not in again


def test_a_codex_rollout_builds_on_the_summary_of_its_compacted_record(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "rollout.jsonl"
    shutil.copyfile(SAMPLES / "codex" / "rollout.jsonl", path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    at = next(i for i, r in enumerate(records) if r.get("type") == "compacted")
    own = records[at]["payload"]["message"]
    outputs = [
        r["payload"]["output"]
        for r in records[:at]
        if r.get("type") == "response_item"
        and r["payload"].get("type") == "function_call_output"
        and isinstance(r["payload"].get("output"), str)
        and len(r["payload"]["output"]) > 40
    ]
    assert outputs, "the sample has tool outputs before its compaction"
    fake_api.reply_text = lambda body: "MERGED CODEX SUMMARY"
    stats = summarize(fake_api, path)
    [call] = fake_api.calls("messages")
    sent = user_turn(call.body)
    assert fenced(sent, "previous_summary") == own.strip()
    assert all(output[:60] not in sent for output in outputs)
    assert stats["compaction_depth"] == 2
    compacted = [json.loads(line) for line in path.read_text().splitlines() if '"compacted"' in line]
    assert DEPTH.findall(compacted[-1]["payload"]["message"]) == ["2"]


def test_replay_simulates_summaries_that_build_on_the_last_one(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "long.jsonl"
    records = [{"role": "user", "content": TASK}]
    for n in range(12):
        records.append({"role": "assistant", "content": f"step {n}: " + "work " * 300})
        records.append({"role": "user", "content": f"go on {n}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    fake_api.reply_text = lambda body: "SIMULATED SUMMARY " + str(len(fake_api.calls("messages")))
    done = run_cli(
        "replay",
        path,
        "--threshold",
        "1500",
        "--backend",
        "anthropic",
        "--json",
        cwd=tmp_path,
        text=True,
        env=fake_api.env(),
    )
    assert done.returncode == OK, done.stderr
    report = json.loads(done.stdout)
    report = report.get("stats", report)
    calls = [user_turn(c.body) for c in fake_api.calls("messages")]
    assert len(calls) >= 2
    assert "<previous_summary>" not in calls[0]
    for n, text in enumerate(calls[1:], 1):
        assert f"SIMULATED SUMMARY {n}" in fenced(text, "previous_summary")
        assert "step 0:" not in text
    assert report["compaction_depth"] == len(calls)


def test_a_summary_applied_from_a_message_batch_records_its_depth_like_a_direct_one(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    records = [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "Looked at the loader."},
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": OLD},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    fake_api.reply_text = lambda body: (
        "BATCH SUMMARY" if "<previous_summary>" in user_turn(body) else "FIRST SUMMARY"
    )
    assert summarize(fake_api, path)["compaction_depth"] == 1
    with path.open("a") as f:
        f.write(json.dumps({"role": "assistant", "content": NEW}) + "\n")
    stats = summarize(fake_api, path, "--batch", "--poll-interval", "0")
    [create] = fake_api.calls("batch_create")
    [request] = create.body["requests"]
    assert "FIRST SUMMARY" in fenced(request["params"]["messages"][0]["content"], "previous_summary")
    assert stats["compaction_depth"] == 2
    text = json.loads(path.read_text().splitlines()[0])["content"]
    assert "BATCH SUMMARY" in text and DEPTH.findall(text) == ["2"]
    # The next compaction reads the depth the batch's summary recorded.
    with path.open("a") as f:
        f.write(json.dumps({"role": "user", "content": "Now the docs."}) + "\n")
    assert summarize(fake_api, path)["compaction_depth"] == 3
