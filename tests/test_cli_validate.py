"""validate: the Messages API's conversation rules, per dialect, on hand-built transcripts.

Line numbers in the expectations are counted by hand from the record lists (1-based, as written).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.bigfile import DIALECTS as BIG_DIALECTS
from helpers.bigfile import generate
from helpers.cli import invoke, run_cli
from helpers.corpus import corpus_params, expectation
from helpers.files import write_jsonl

from compactcli import dialects
from compactcli.layers.validate import RULES, Violation, validate_records

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"


def check(dialect: str, records: list[dict]) -> list[tuple[int, str]]:
    found = validate_records(dialects.get(dialect), enumerate(records, 1))
    return [(v.line, v.rule) for v in found]


# --- Anthropic Messages --------------------------------------------------------------------


def text(role: str, words: str) -> dict:
    return {"role": role, "content": words}


def uses(*ids: str) -> dict:
    blocks = [{"type": "tool_use", "id": i, "name": "bash", "input": {"command": "ls"}} for i in ids]
    return {"role": "assistant", "content": [{"type": "text", "text": "running"}, *blocks]}


def results(*ids: str) -> dict:
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
    return {"role": "user", "content": blocks}


def test_anthropic_valid_conversation_with_merged_turns():
    records = [
        text("user", "fix the bug"),
        uses("a", "b"),
        results("a"),  # each result in its own message: one user turn once combined
        results("b"),
        text("user", "and also this"),
        uses("c"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "d", "name": "x", "input": {}}]},
        results("d", "c"),  # any order inside the turn
        text("assistant", "done"),
    ]
    assert check("anthropic", records) == []


def test_anthropic_stringified_sdk_blocks_pair_with_dict_results():
    records = [
        text("user", "list files"),
        {
            "role": "assistant",
            "content": [
                "TextBlock(citations=None, text='Listing.', type='text')",
                "ToolUseBlock(id='toolu_01', caller=None, input={'command': 'ls'}, name='bash', "
                "type='tool_use')",
            ],
        },
        results("toolu_01"),
        text("assistant", "two files"),
    ]
    assert check("anthropic", records) == []
    # Without its result, the stringified call is seen as a call: proof it is parsed, not skipped.
    assert check("anthropic", records[:2] + [text("user", "hm"), text("assistant", "?")]) == [
        (2, "missing-tool-result")
    ]


def test_first_message_may_be_assistant():
    # A compaction summary often opens the conversation; the first-party API accepts it.
    records = [text("assistant", "[summary] earlier we fixed x"), text("user", "go on"), uses("a")]
    assert check("anthropic", records) == []


def test_final_assistant_turn_may_have_open_tool_uses():
    assert check("anthropic", [text("user", "go"), uses("a", "b")]) == []
    # Results still being appended: one of two is in, the file ends.
    assert check("anthropic", [text("user", "go"), uses("a", "b"), results("a")]) == []


def test_invalid_role():
    records = [text("user", "hi"), {"role": "system", "content": "be brief"}, text("assistant", "ok")]
    found = validate_records(dialects.ANTHROPIC, enumerate(records, 1))
    assert found == [Violation(2, "invalid-role", "role 'system': only user and assistant are allowed")]


def test_not_a_message():
    records = [text("user", "hi"), text("assistant", "ok"), {"summary": "no role here"}]
    assert check("anthropic", records) == [(3, "not-a-message")]


def test_orphan_result_before_any_assistant():
    assert check("anthropic", [results("a"), text("assistant", "?")]) == [(1, "orphan-tool-result")]


def test_orphan_result_answering_an_older_turn():
    records = [
        text("user", "go"),
        uses("a"),
        results("a"),
        text("assistant", "done"),
        results("a"),  # line 5: the assistant turn before it (line 4) has no tool use
    ]
    found = validate_records(dialects.ANTHROPIC, enumerate(records, 1))
    assert [(v.line, v.rule) for v in found] == [(5, "orphan-tool-result")]
    assert "line 4" in found[0].message and "a" in found[0].message


def test_missing_result_is_reported_on_the_tool_use_line():
    records = [text("user", "go"), uses("a", "b"), results("a"), text("assistant", "next")]
    found = validate_records(dialects.ANTHROPIC, enumerate(records, 1))
    assert [(v.line, v.rule) for v in found] == [(2, "missing-tool-result")]
    assert "tool_use b " in found[0].message


def test_text_reply_instead_of_result():
    records = [text("user", "go"), uses("a"), text("user", "never mind"), text("assistant", "ok")]
    assert check("anthropic", records) == [(2, "missing-tool-result")]


def test_duplicate_result():
    records = [text("user", "go"), uses("a"), results("a"), results("a"), text("assistant", "ok")]
    assert check("anthropic", records) == [(4, "duplicate-tool-result")]


def test_result_without_id():
    no_id = {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}
    records = [text("user", "go"), uses("a"), results("a"), no_id]
    assert check("anthropic", records) == [(4, "tool-result-without-id")]


def test_tool_use_without_id_and_duplicate_tool_use():
    no_id = {"role": "assistant", "content": [{"type": "tool_use", "name": "bash", "input": {}}]}
    records = [text("user", "go"), uses("a"), no_id, uses("a"), results("a")]
    assert check("anthropic", records) == [(3, "tool-use-without-id"), (4, "duplicate-tool-use")]


def test_misplaced_tool_blocks():
    user_use = {"role": "user", "content": [{"type": "tool_use", "id": "u", "name": "x", "input": {}}]}
    assistant_result = {
        "role": "assistant",
        "content": [{"type": "tool_result", "tool_use_id": "u", "content": "?"}],
    }
    assert check("anthropic", [user_use, assistant_result]) == [
        (1, "misplaced-tool-block"),
        (2, "misplaced-tool-block"),
    ]


def test_text_before_result_in_one_message():
    mixed = {
        "role": "user",
        "content": [{"type": "text", "text": "here:"}, {"type": "tool_result", "tool_use_id": "a"}],
    }
    assert check("anthropic", [text("user", "go"), uses("a"), mixed]) == [(3, "tool-result-not-first")]
    # Results first, then text: what the API asks for.
    mixed["content"].reverse()
    assert check("anthropic", [text("user", "go"), uses("a"), mixed]) == []


def test_server_tool_use_needs_no_user_result():
    # Server tools (web search) carry their result in the same assistant message.
    server = {
        "role": "assistant",
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "text", "text": "found it"},
        ],
    }
    assert check("anthropic", [text("user", "search"), server, text("user", "thanks")]) == []


def test_every_rule_is_documented_and_exercised():
    # The rules listed in --help are exactly those the tests above expect.
    exercised = {
        "not-a-message",
        "invalid-role",
        "orphan-tool-result",
        "missing-tool-result",
        "duplicate-tool-result",
        "duplicate-tool-use",
        "tool-result-without-id",
        "tool-use-without-id",
        "misplaced-tool-block",
        "tool-result-not-first",
    }
    assert set(RULES) == exercised


# --- Claude Code ---------------------------------------------------------------------------


class Session:
    """Claude Code records with uuid/parentUuid links, as the CLI writes them."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.n = 0
        self.last: dict[str, str | None] = {}  # chain -> last uuid

    def _base(self, kind: str, chain: str, **extra) -> dict:
        self.n += 1
        uid = f"{chain}-{self.n:04d}"
        record = {
            "parentUuid": self.last.get(chain),
            "isSidechain": chain != "main",
            "userType": "external",
            "cwd": "/home/dev/project",
            "sessionId": "5e55-1011",
            "version": "2.1.6",
            "type": kind,
            "uuid": uid,
            "timestamp": f"2026-01-10T10:00:{self.n % 60:02d}.000Z",
        }
        if chain != "main" and chain.startswith("agent"):
            record["agentId"] = chain
        record.update(extra)
        self.last[chain] = uid
        self.records.append(record)
        return record

    def user(self, content, chain: str = "main", **extra) -> int:
        self._base("user", chain, message={"role": "user", "content": content}, **extra)
        return len(self.records)

    def assistant(self, blocks: list, chain: str = "main", msg_id: str = "msg_1", **extra) -> int:
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-5-20251101",
            "content": blocks,
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        self._base("assistant", chain, message=message, **extra)
        return len(self.records)

    def use(self, tool_id: str, chain: str = "main", msg_id: str = "msg_1") -> int:
        block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "ls"}}
        return self.assistant([block], chain, msg_id)

    def result(self, tool_id: str, chain: str = "main") -> int:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": "file.txt"}
        return self.user([block], chain, toolUseResult={"stdout": "file.txt"})

    def other(self, kind: str, **extra) -> int:
        self.n += 1
        self.records.append({"type": kind, "uuid": f"o-{self.n}", **extra})
        return len(self.records)

    def check(self) -> list[tuple[int, str]]:
        return check("claude-code", self.records)


def test_claude_code_split_response_and_passthrough_records_are_valid():
    s = Session()
    s.other("queue-operation", operation="enqueue", content="fix it")
    s.user("fix the failing test")
    s.assistant([{"type": "thinking", "thinking": "hm", "signature": "sig"}], msg_id="msg_1")
    s.assistant([{"type": "text", "text": "Looking."}], msg_id="msg_1")
    s.use("toolu_a", msg_id="msg_1")
    s.other("progress", data={"type": "bash_progress"}, toolUseID="toolu_a")
    s.use("toolu_b", msg_id="msg_1")
    s.other("file-history-snapshot", snapshot={})
    s.result("toolu_a")
    s.other("system", subtype="turn_duration", durationMs=10)
    s.result("toolu_b")
    s.user([{"type": "text", "text": "[Request interrupted by user]"}])
    s.user("Caveat: local command output follows", isMeta=True)
    s.assistant([{"type": "text", "text": "Done."}], msg_id="msg_2")
    assert s.check() == []


def test_claude_code_api_error_notices_do_not_break_pairing():
    s = Session()
    s.user("go")
    s.use("toolu_a")
    s.result("toolu_a")
    s.assistant(
        [{"type": "text", "text": "API Error: 529 overloaded"}],
        msg_id="synthetic-1",
        isApiErrorMessage=True,
    )
    s.records[-1]["message"]["model"] = "<synthetic>"
    s.user("try again")
    s.use("toolu_b", msg_id="msg_2")
    s.result("toolu_b")
    assert s.check() == []


def test_claude_code_text_before_result_is_accepted():
    # Claude Code moves tool results to the front of the turn itself when it sends them.
    s = Session()
    s.user("go")
    s.use("toolu_a")
    s.user([{"type": "text", "text": "note"}, {"type": "tool_result", "tool_use_id": "toolu_a"}])
    assert s.check() == []


def test_claude_code_sidechains_are_separate_conversations():
    s = Session()
    s.user("review the code")
    s.use("toolu_task")  # main: a Task call whose result comes after the sub-agent's work
    s.user("check utils.py", chain="side")
    s.use("toolu_s1", chain="side", msg_id="msg_s1")
    s.result("toolu_s1", chain="side")
    s.assistant([{"type": "text", "text": "utils ok"}], chain="side", msg_id="msg_s2")
    s.result("toolu_task")
    s.assistant([{"type": "text", "text": "all good"}], msg_id="msg_2")
    assert s.check() == []


def test_claude_code_violation_inside_a_sidechain():
    s = Session()
    s.user("review")
    s.use("toolu_task")
    s.user("check a.py", chain="agent-7")
    line = s.use("toolu_s1", chain="agent-7", msg_id="msg_s1")  # line 4, never answered
    s.user("and b.py?", chain="agent-7")
    s.assistant([{"type": "text", "text": "fine"}], chain="agent-7", msg_id="msg_s2")
    s.result("toolu_task")
    assert line == 4
    assert s.check() == [(4, "missing-tool-result")]


def test_claude_code_only_the_context_after_the_last_compaction_counts():
    s = Session()
    s.user("go")
    s.use("toolu_lost")
    s.user("never mind")  # breaks the pairing, but before the compaction
    s.assistant([{"type": "text", "text": "ok"}], msg_id="msg_2")
    s.other("system", subtype="compact_boundary", parentUuid=None, compactMetadata={"trigger": "auto"})
    s.user("This session is being continued... Summary: ...", isCompactSummary=True)
    s.use("toolu_new", msg_id="msg_3")
    s.result("toolu_new")
    orphan = s.result("toolu_lost")  # line 9
    assert orphan == 9
    assert s.check() == [(9, "orphan-tool-result")]


def test_claude_code_boundary_alone_starts_the_context():
    # The summary record after the boundary may be unreadable (torn) and skipped.
    s = Session()
    s.user("go")
    s.use("toolu_lost")
    s.user("never mind")
    s.other("system", subtype="compact_boundary", parentUuid=None)
    s.assistant([{"type": "text", "text": "continuing"}], msg_id="msg_2")
    assert s.check() == []


def test_claude_code_old_compaction_without_boundary_record():
    # Claude Code 1.0 wrote only the isCompactSummary user record.
    s = Session()
    s.user("go")
    s.use("toolu_lost")
    s.user("stop")
    s.assistant([{"type": "text", "text": "ok"}], msg_id="msg_2")
    s.user("Summary of the conversation so far", isCompactSummary=True, parentUuid=None)
    s.assistant([{"type": "text", "text": "continuing"}], msg_id="msg_3")
    assert s.check() == []
    s.result("toolu_lost")  # line 7: the call it answers is gone with the compaction
    assert s.check() == [(7, "orphan-tool-result")]


def test_claude_code_invalid_role():
    s = Session()
    s.user("go")
    s.records[0]["message"]["role"] = "system"
    s.assistant([{"type": "text", "text": "hi"}])
    assert s.check() == [(1, "invalid-role")]


def test_claude_code_duplicate_result_and_missing_id():
    s = Session()
    s.user("go")
    s.use("toolu_a")
    s.result("toolu_a")
    s.result("toolu_a")  # line 4
    s.user([{"type": "tool_result", "content": "x"}])  # line 5
    assert s.check() == [(4, "duplicate-tool-result"), (5, "tool-result-without-id")]


# --- OpenAI chat completions ---------------------------------------------------------------


def call(call_id: str, flattened: bool = False) -> dict:
    if flattened:
        return {"id": call_id, "name": "bash", "arguments": {"command": "ls"}}
    arguments = json.dumps({"command": "ls"})
    return {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}


def calls(*ids: str, flattened: bool = False) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [call(i, flattened) for i in ids]}


def tool(call_id: str | None) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_openai_valid_conversation():
    records = [
        {"role": "system", "content": "You are a coding agent."},
        text("user", "fix it"),
        calls("c1", "c2"),
        tool("c2"),
        tool("c1"),
        text("assistant", "done"),
        {"role": "developer", "content": "be terse"},  # allowed mid-conversation
        text("user", "now test"),
        calls("c3", flattened=True),
        tool("c3"),
        {"role": "assistant", "content": "ok", "tool_calls": [], "tool_call_id": None},
    ]
    assert check("openai", records) == []


def test_openai_starts_with_assistant_and_ends_with_open_calls():
    records = [text("assistant", "[summary]"), text("user", "continue"), calls("c1", "c2"), tool("c1")]
    assert check("openai", records) == []


def test_openai_tool_message_after_user_is_orphan():
    assert check("openai", [text("user", "hi"), tool("c1")]) == [(2, "orphan-tool-result")]


def test_openai_tool_message_with_unknown_id():
    records = [text("user", "go"), calls("c1"), tool("c1"), tool("zz")]
    found = validate_records(dialects.OPENAI, enumerate(records, 1))
    assert [(v.line, v.rule) for v in found] == [(4, "orphan-tool-result")]
    assert "line 2" in found[0].message


def test_openai_missing_tool_message():
    records = [text("user", "go"), calls("c1", "c2"), tool("c1"), text("user", "hurry")]
    found = validate_records(dialects.OPENAI, enumerate(records, 1))
    assert [(v.line, v.rule) for v in found] == [(2, "missing-tool-result")]
    assert "c2" in found[0].message and "line 4" in found[0].message


def test_openai_message_between_call_and_tool_message():
    # Unlike Anthropic turns, nothing may come between: both ends are reported.
    records = [text("user", "go"), calls("c1"), text("user", "wait"), tool("c1")]
    assert check("openai", records) == [(2, "missing-tool-result"), (4, "orphan-tool-result")]
    records[2] = {"role": "system", "content": "reminder"}
    assert check("openai", records) == [(2, "missing-tool-result"), (4, "orphan-tool-result")]


def test_openai_duplicate_and_id_problems():
    records = [
        text("user", "go"),
        calls("c1"),
        tool("c1"),
        tool("c1"),  # 4
        tool(None),  # 5
        {"role": "assistant", "content": None, "tool_calls": [{"type": "function"}]},  # 6
        calls("c2", "c2"),  # 7
        tool("c2"),
    ]
    assert check("openai", records) == [
        (4, "duplicate-tool-result"),
        (5, "tool-result-without-id"),
        (6, "tool-use-without-id"),
        (7, "duplicate-tool-use"),
    ]


def test_openai_roles():
    records = [{"role": "critic", "content": "meh"}, {"content": "no role"}, text("user", "hi")]
    assert check("openai", records) == [(1, "invalid-role"), (2, "not-a-message")]


# --- Streaming ---------------------------------------------------------------------------


def test_records_are_consumed_as_a_stream():
    # A generator is read once, in order; nothing asks for the records again.
    seen: list[int] = []

    def stream():
        for number, record in enumerate([text("user", "go"), uses("a"), results("a")], 1):
            seen.append(number)
            yield number, record

    assert validate_records(dialects.ANTHROPIC, stream()) == []
    assert seen == [1, 2, 3]


@pytest.mark.parametrize("dialect", BIG_DIALECTS)
def test_generated_transcripts_and_their_micro_output_are_valid(dialect, tmp_path):
    # tests/helpers/bigfile.py builds correct pairings by construction, and knows micro's output for them.
    name = "anthropic" if dialect == "anthropic-repr" else dialect
    before, after = zip(*generate(dialect, turns=40, result_chars=300), strict=True)
    source, out = tmp_path / "t.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b"".join(before))
    micro = run_cli("micro", "--dialect", name, source, "-o", out)
    assert micro.returncode == 0, micro.stderr
    assert out.read_bytes() == b"".join(after)  # micro did run, and made what bigfile expects
    for path in (source, out):
        check = invoke("validate", str(path), "--dialect", name)
        assert check.exit_code == 0, check.output
    # And the same file with one result line dropped is not.
    records = [(n, json.loads(raw)) for n, raw in enumerate(before, 1)]
    result_line = next(n for n, r in records[len(records) // 2 :] if dialects.get(name).tool_results(r))
    broken = [(n, r) for n, r in records if n != result_line]
    assert [v.rule for v in validate_records(dialects.get(name), broken)] == ["missing-tool-result"]


# --- The command -----------------------------------------------------------------------------


write = write_jsonl


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write(tmp_path / "good.jsonl", [text("user", "go"), uses("a"), results("a")])


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    return write(
        tmp_path / "bad.jsonl",
        [text("user", "go"), uses("a", "b"), results("a"), text("assistant", "next")],
    )


def test_cli_valid_file_exits_0_and_prints_no_violation(good):
    result = invoke("validate", str(good))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "1 file valid, 0 invalid\n"


def test_cli_invalid_file_exits_1_with_one_line_per_violation(good, bad):
    result = invoke("validate", str(good), str(bad))
    assert result.exit_code == 1
    assert result.stdout == (
        f"{bad}:2: missing-tool-result: tool_use b is not answered in the next user turn\n"
    )
    assert result.stderr == "1 file valid, 1 invalid\n"


def test_cli_bad_input_exits_65_and_still_checks_the_other_files(tmp_path, good, bad):
    torn = tmp_path / "torn.jsonl"
    torn.write_text(json.dumps(text("user", "go")) + '\n{"role": "assistant", "con')  # cut off: no newline
    result = invoke("validate", str(good), str(bad), str(torn))
    assert result.exit_code == 65
    assert f"error: {torn}:2: torn last line" in result.stderr
    assert result.stdout.startswith(f"{bad}:2: missing-tool-result")
    assert result.stderr.endswith("1 file valid, 1 invalid, 1 failed\n")


@pytest.mark.parametrize("end", ["\n", ""])  # a bad last line, and one torn off (no newline)
def test_cli_on_invalid_keep_skips_unreadable_lines(tmp_path, end):
    torn = tmp_path / "torn.jsonl"
    lines = [json.dumps(r) for r in (text("user", "go"), uses("a"), results("a"))]
    torn.write_text("\n".join(lines) + '\n{"role": "assistant", "content": "Hal' + end)
    assert invoke("validate", str(torn)).exit_code == 65
    kept = invoke("validate", str(torn), "--on-invalid", "keep", "--json")
    assert kept.exit_code == 0
    report = json.loads(kept.stdout)
    assert report["status"] == "valid"
    assert report["stats"]["unreadable_lines"] == 1
    assert report["stats"]["lines"] == 4


def test_cli_json_reports_each_file(good, bad):
    result = invoke("validate", str(good), str(bad), "--json")
    assert result.exit_code == 1
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["path"], r["status"], r["exit_code"]) for r in reports] == [
        (str(good), "valid", 0),
        (str(bad), "invalid", 1),
    ]
    assert reports[1]["stats"]["violations"] == [
        {
            "line": 2,
            "rule": "missing-tool-result",
            "message": "tool_use b is not answered in the next user turn",
        }
    ]
    assert reports[0]["stats"]["dialect"] == "anthropic"
    assert reports[0]["stats"]["messages"] == 3


def test_cli_stdin(bad):
    result = invoke("validate", "-", input=bad.read_text())
    assert result.exit_code == 1
    assert result.stdout.startswith("<stdin>:2: missing-tool-result:")


def test_cli_dialect_overrides_detection(tmp_path):
    path = write(tmp_path / "chat.jsonl", [{"role": "system", "content": "hi"}, text("user", "go")])
    assert invoke("validate", str(path)).exit_code == 0  # detected as openai: system is a role there
    forced = invoke("validate", str(path), "--dialect", "anthropic")
    assert forced.exit_code == 1
    assert f"{path}:1: invalid-role:" in forced.stdout


def test_cli_folder_with_jobs_and_quiet(tmp_path, good, bad):
    result = invoke("validate", str(tmp_path), "--jobs", "2", "-q", "-v")
    assert result.exit_code == 1
    assert result.stderr == ""  # -q wins over -v
    assert result.stdout.splitlines() == [
        f"{bad}:2: missing-tool-result: tool_use b is not answered in the next user turn"
    ]


def test_cli_verbose_names_each_file(good, bad):
    result = invoke("validate", str(good), str(bad), "-v")
    assert f"valid {good}\n" in result.stderr
    assert f"invalid {bad}\n" in result.stderr


def test_help_lists_the_rules_and_exit_codes():
    result = invoke("validate", "--help")
    assert result.exit_code == 0
    for rule in RULES:
        assert rule in result.stdout
    assert "65 bad input data" in result.stdout


def test_real_process_keeps_data_on_stdout_and_summary_on_stderr(good, bad):
    proc = run_cli("validate", good, bad, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout == (
        f"{bad}:2: missing-tool-result: tool_use b is not answered in the next user turn\n"
    )
    assert proc.stderr == "1 file valid, 1 invalid\n"


# --- Project samples and the real corpus -----------------------------------------------------


def sample_files() -> list[Path]:
    return sorted(SAMPLES.rglob("*.jsonl"))


def test_samples_are_committed():
    # Each dialect's folder holds samples; an empty or missing samples/ is a broken checkout.
    assert {p.relative_to(SAMPLES).parts[0] for p in sample_files()} >= set(dialects.NAMES)


@pytest.mark.parametrize("path", sample_files(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_samples_validate(path):
    result = invoke("validate", str(path))
    assert result.exit_code == 0, result.output


def unreadable(path: Path) -> dict[int, bytes]:
    """Lines the stdlib cannot parse (the corpus's redactor tore some), by number."""
    torn = {}
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            json.loads(raw)
        except ValueError:
            torn[number] = raw
    return torn


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params())
def test_corpus_violations_name_a_torn_line(path):
    # What validate reports per file is pinned in tests/helpers/corpus.py (test_corpus.py). Here: on a
    # file with torn lines, a reported tool id is one found in a torn line (the pair it lost).
    torn = unreadable(path)
    result = invoke("validate", str(path), "--on-invalid", "keep", "--json")
    report = json.loads(result.stdout)
    for violation in report["stats"]["violations"] if torn else ():
        tool_id = re.search(r"toolu_\w+", violation["message"]).group(0).encode()
        assert any(tool_id in raw for raw in torn.values()), violation


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params(with_tool_results=True))
def test_corpus_file_with_a_repeated_result_is_invalid(path, tmp_path):
    # Proof that the check bites on real files: repeat the last tool result right after itself. What
    # the file already violated stays, one line further down past the copy. A result before a recorded
    # compaction that restarts the context (Codex's compacted record) is no longer sent: no violation.
    expect = expectation(path)
    assert expect.dialect is not None
    dialect = dialects.get(expect.dialect)
    lines = path.read_bytes().splitlines(keepends=True)
    parsed = {n: json.loads(raw) for n, raw in enumerate(lines) if n + 1 not in expect.torn}
    last = max(n for n, record in parsed.items() if dialect.tool_results(record))
    before = json.loads(invoke("validate", str(path), "--on-invalid", "keep", "--json").stdout)["stats"][
        "violations"
    ]
    copy = tmp_path / path.name
    copy.write_bytes(b"".join(lines[: last + 1] + [lines[last]] + lines[last + 1 :]))
    result = invoke("validate", str(copy), "--on-invalid", "keep", "--json")
    violations = json.loads(result.stdout)["stats"]["violations"]
    restart = max((n for n, record in parsed.items() if dialect.compaction(record) is not None), default=-1)
    # The copy sits on 1-based line last + 2. In a pi session with ids the copy has the entry's id: pi
    # takes the id's last entry, so the path holds it once and nothing is sent twice; a dialect that
    # upserts records by id (results_repeat) reads the copy as the record again.
    once = (dialect.name == "pi" and "id" in parsed[last]) or dialect.results_repeat
    added = {(last + 2, "duplicate-tool-result")} if last > restart and not once else set()
    shifted = {(v["line"] + (v["line"] > last + 1), v["rule"]) for v in before}
    assert result.exit_code == (1 if added or shifted else 0)
    assert {(v["line"], v["rule"]) for v in violations} == shifted | added
