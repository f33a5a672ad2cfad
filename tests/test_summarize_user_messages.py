"""summarize keeps the user's own words: --keep-user-messages puts them verbatim (newest first within the
budget, redacted, isMeta records and tool results left out) into the summary message, for the digest and
the anthropic backend (the real SDK against the fake API on 127.0.0.1).

Token counts are bytes / 4, so the budgets below are worked out from the messages' lengths by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.cli import run_cli
from helpers.files import write_jsonl
from helpers.sessions import claude_code_records

SECRET = "ghp_" + "Qw8rT3" * 6
FIRST = "Port the report command to the new template engine."  # 51 bytes
SECOND = "B" * 80  # 20 tokens
THIRD = f"Push it with {SECRET} when the tests pass!!!!!!!"  # 80 bytes: 20 tokens
FOURTH = "C" * 40  # 10 tokens


def transcript() -> list[dict]:
    def result(use_id: str) -> dict:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "ok"}]}

    def call(use_id: str) -> dict:
        block = {"type": "tool_use", "id": use_id, "name": "bash", "input": {"command": "make test"}}
        return {"role": "assistant", "content": [block]}

    return [
        {"role": "user", "content": FIRST},
        call("t1"),
        result("t1"),
        {"role": "user", "content": SECOND},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": [{"type": "text", "text": THIRD}]},
        call("t2"),
        result("t2"),
        {"role": "user", "content": FOURTH},
        {"role": "assistant", "content": "All done."},
    ]


def summarize(tmp_path: Path, *args: str, env: dict | None = None) -> str:
    path = tmp_path / "t.jsonl"
    write_jsonl(path, transcript())
    done = run_cli("summarize", *args, "t.jsonl", cwd=tmp_path, env=env, text=True)
    assert done.returncode == 0, done.stderr
    [summary] = [json.loads(line) for line in path.read_text().splitlines()]
    return summary["content"]


def kept_section(summary: str) -> str:
    return summary.split("## The user's own messages, verbatim", 1)[1]


def test_the_newest_messages_within_the_budget_are_kept_verbatim(tmp_path: Path) -> None:
    # 30 tokens, newest first: FOURTH (10) fits, THIRD (20) fits, nothing is left for SECOND.
    summary = summarize(tmp_path, "--backend", "digest", "--keep-user-messages", "30")
    section = kept_section(summary)
    assert section.startswith(" (the newest 2 of 4 user messages, within 30 tokens)\n")
    assert len(THIRD.encode()) == 80
    redacted = THIRD.replace(SECRET, "[REDACTED:github_token]")
    assert (
        section.split("\n", 1)[1] == f"\n[user message 3 of 4]\n{redacted}\n\n[user message 4 of 4]\n{FOURTH}"
    )
    assert SECRET not in summary


def test_the_default_budget_keeps_all_four_and_zero_keeps_none(tmp_path: Path) -> None:
    summary = summarize(tmp_path, "--backend", "digest")
    section = kept_section(summary)
    assert section.startswith(" (the newest 4 of 4 user messages, within 20,000 tokens)\n")
    for text in (FIRST, SECOND, FOURTH):
        assert f"]\n{text}\n" in section + "\n"
    none = summarize(tmp_path, "--backend", "digest", "--keep-user-messages", "0")
    assert "## The user's own messages" not in none


def test_the_model_summary_gets_the_messages_after_it(fake_api, tmp_path: Path) -> None:
    fake_api.reply_text = lambda body: "THE MODEL'S SUMMARY"
    summary = summarize(tmp_path, "--backend", "anthropic", "--keep-user-messages", "10", env=fake_api.env())
    [call] = fake_api.calls("messages")
    sent = call.body["messages"][0]["content"]
    assert SECRET not in sent  # the transcript sent is redacted as always
    assert summary.split("\n\n", 1)[1].startswith("THE MODEL'S SUMMARY\n\n## The user's own messages")
    # 10 tokens: FOURTH (10) fills them
    assert kept_section(summary).split("\n", 1)[1] == f"\n[user message 4 of 4]\n{FOURTH}"


def test_meta_records_are_not_the_users_messages(tmp_path: Path) -> None:
    rows = [
        ("user", FIRST, {}),
        ("user", "Base directory for this skill: /skills/x\n\nSKILL BODY", {"isMeta": True}),
        ("assistant", [{"type": "text", "text": "On it."}], {}),
        ("user", FOURTH, {}),
        ("assistant", [{"type": "text", "text": "Done."}], {}),
    ]
    records = claude_code_records(rows)
    path = tmp_path / "cc.jsonl"
    write_jsonl(path, records)
    done = run_cli("summarize", "--backend", "digest", "cc.jsonl", cwd=tmp_path, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads(path.read_text().splitlines()[-1])["message"]["content"]
    section = kept_section(summary)
    assert section.split("\n", 1)[1] == f"\n[user message 1 of 2]\n{FIRST}\n\n[user message 2 of 2]\n{FOURTH}"


def test_the_oldest_message_kept_is_cut_to_fit(tmp_path: Path) -> None:
    # 35 tokens = 140 bytes: FOURTH (40) and THIRD (80) leave 20 bytes: the end of SECOND.
    section = kept_section(summarize(tmp_path, "--backend", "digest", "--keep-user-messages", "35"))
    assert section.startswith(" (the newest 3 of 4 user messages, within 35 tokens)\n")
    assert (
        "[user message 2 of 4]\n[... the start of this message is left out]\n" + "B" * 20 + "\n\n" in section
    )


# --- --pin ----------------------------------------------------------------------------------------


def pin_run(
    tmp_path: Path, records: list[dict], *args: str, name: str = "t.jsonl"
) -> tuple[list[bytes], list[bytes]]:
    path = tmp_path / name
    write_jsonl(path, records)
    before = path.read_bytes().splitlines(keepends=True)
    done = run_cli(
        "summarize", "--backend", "digest", "--keep-user-messages", "0", *args, name, cwd=tmp_path, text=True
    )
    assert done.returncode == 0, done.stderr
    return before, path.read_bytes().splitlines(keepends=True)


def test_a_pinned_message_stays_verbatim_after_the_summary(tmp_path: Path) -> None:
    # transcript(): lines 1-10; keep the last message (line 10); pin "template engine" (line 1).
    before, after = pin_run(tmp_path, transcript(), "--keep-last", "1", "--pin", "template engine")
    assert len(after) == 3
    assert json.loads(after[0])["content"].startswith("[Conversation compressed. Transcript: ")
    assert after[1:] == [before[0], before[9]]


def test_a_pinned_tool_result_keeps_its_call_and_a_pinned_call_its_result(tmp_path: Path) -> None:
    records = transcript()
    records[7]["content"][0]["content"] = "ERROR 42: disk full"  # line 8 answers line 7's call t2
    _, after = pin_run(tmp_path, records, "--keep-last", "1", "--pin", r"ERROR \d+")
    expected = [json.dumps(records[6]).encode() + b"\n", json.dumps(records[7]).encode() + b"\n"]
    assert after[1:3] == expected and len(after) == 4
    _, after = pin_run(tmp_path, transcript(), "--keep-last", "1", "--pin", "make test", name="u.jsonl")
    # both calls run `make test`: lines 2-3 and 7-8, each call with its result
    assert [json.loads(line) for line in after[1:5]] == [transcript()[i] for i in (1, 2, 6, 7)]
    done = run_cli("validate", "t.jsonl", "u.jsonl", cwd=tmp_path, text=True)
    assert done.returncode == 0, done.stdout


def test_pinned_claude_code_records_are_relinked_into_the_chain(tmp_path: Path) -> None:
    shutil.copy(Path(__file__).parent / "fixtures" / "claude-code" / "rewind.jsonl", tmp_path / "r.jsonl")
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "1", "--pin", "argparse", "r.jsonl",
                   cwd=tmp_path, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    # boundary, summary, then the call (line 2) and result (line 3) with "argparse", then line 11
    assert [r.get("uuid") for r in records[2:]] == ["a1", "r1", "a5"]
    assert records[2]["parentUuid"] == records[1]["uuid"]
    assert records[3]["parentUuid"] == "a1" and records[4]["parentUuid"] == "r1"
    assert run_cli("validate", "r.jsonl", cwd=tmp_path).returncode == 0


def test_a_bad_pattern_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    done = run_cli(
        "summarize", "--backend", "digest", "--pin", "(unclosed", "t.jsonl", cwd=tmp_path, text=True
    )
    assert done.returncode == 2
    assert "'(unclosed' is not a regular expression" in done.stderr
