"""The committed samples (data, kept by hand): their files, shapes and dialect features, and that tool calls
are paired; and the compaction in the Claude Code sample has the shape summarize itself writes.

The pairing check here is written independently of compactcli.dialects so that it can catch
mistakes in either the samples or the strategies.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import run_cli
from helpers.strategies import GENERATORS, conversations, jsonl_bytes
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import find as hfind

from compactcli import dialects

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SAMPLE_FILES = {
    "anthropic/session.jsonl": "anthropic",
    "anthropic/stringified.jsonl": "anthropic",
    "claude-code/session.jsonl": "claude-code",
    "claude-code/agent-subagent.jsonl": "claude-code",
    "openai/session.jsonl": "openai",
    "openai/flattened.jsonl": "openai",
    "codex/rollout.jsonl": "codex",
    "pi/session.jsonl": "pi",
    "gemini-cli/session.jsonl": "gemini-cli",
    "qwen-code/session.jsonl": "qwen-code",
    "copilot/events.jsonl": "copilot",
}

Message = tuple[str, list[str], list[str]]  # role, tool_use ids, tool_result ids


def parse_sdk_block(text: str) -> tuple[str, dict[str, Any]]:
    """`ToolUseBlock(id='x', ...)` -> ("ToolUseBlock", {"id": "x", ...}) without eval."""
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), text
    assert not node.args, text
    return node.func.id, {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}


def _blocks_ids(content: Any) -> tuple[list[str], list[str]]:
    uses: list[str] = []
    results: list[str] = []
    if not isinstance(content, list):
        return uses, results
    for block in content:
        if isinstance(block, str):
            kind, fields = parse_sdk_block(block)
            if kind == "ToolUseBlock":
                uses.append(fields["id"])
        elif block.get("type") == "tool_use":
            uses.append(block["id"])
        elif block.get("type") == "tool_result":
            results.append(block["tool_use_id"])
    return uses, results


def anthropic_messages(records: list[dict[str, Any]]) -> list[list[Message]]:
    msgs = [(r["role"], *_blocks_ids(r["content"])) for r in records]
    return [msgs]


def openai_messages(records: list[dict[str, Any]]) -> list[list[Message]]:
    msgs: list[Message] = []
    for r in records:
        if r["role"] == "system":
            continue
        if r["role"] == "tool":
            msgs.append(("user", [], [r["tool_call_id"]]))
        else:
            msgs.append((r["role"], [c["id"] for c in r.get("tool_calls") or []], []))
    return [msgs]


def claude_code_messages(records: list[dict[str, Any]]) -> list[list[Message]]:
    """One message list per conversation and compaction segment (docs/design.md, "Dialects")."""
    by_uuid = {r["uuid"]: r for r in records if "uuid" in r}

    def key(r: dict[str, Any]) -> str:
        if not r.get("isSidechain"):
            return "main"
        if r.get("agentId"):
            return "agent:" + r["agentId"]
        root = r
        while (parent := by_uuid.get(root.get("parentUuid"))) and parent.get("isSidechain"):
            root = parent
        return "tree:" + root["uuid"]

    segments: dict[str, list[list[Message]]] = {}
    for r in records:
        if r.get("type") not in ("user", "assistant"):
            continue
        segs = segments.setdefault(key(r), [[]])
        if r.get("isCompactSummary"):
            segs.append([])
        segs[-1].append((r["message"]["role"], *_blocks_ids(r["message"]["content"])))
    return [seg for segs in segments.values() for seg in segs]


def codex_calls(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """A Codex rollout's call ids, and what is wrong with their outputs: each output answers a call made
    before it, once; a call is left unanswered only by a turn the user aborted (turn_aborted). A
    `compacted` record replaces the history, so calls before it are no longer asked about."""
    calls: list[str] = []
    pending: set[str] = set()
    problems: list[str] = []
    for n, record in enumerate(records, 1):
        payload = record.get("payload") or {}
        kind = payload.get("type")
        if record["type"] == "compacted":
            pending.clear()
        elif record["type"] == "event_msg" and kind == "turn_aborted":
            pending.clear()
        elif record["type"] != "response_item":
            continue
        elif kind in ("function_call", "custom_tool_call"):
            calls.append(payload["call_id"])
            pending.add(payload["call_id"])
        elif kind in ("function_call_output", "custom_tool_call_output"):
            if payload["call_id"] not in pending:
                problems.append(f"line {n}: output for {payload['call_id']}, which is not an open call")
            pending.discard(payload["call_id"])
    problems += [f"unanswered at the end: {call}" for call in sorted(pending)]
    dup = [call for call, count in Counter(calls).items() if count > 1]
    return calls, problems + ([f"call ids used more than once: {dup}"] if dup else [])


def pi_messages(records: list[dict[str, Any]]) -> list[list[Message]]:
    """A pi session's path from its last entry to the root, in two parts at its last compaction: what
    the summary replaced, and the entries from the compaction's firstKeptEntryId on (what pi sends
    after the summary)."""
    by_id = {r["id"]: r for r in records[1:]}
    path: list[dict[str, Any]] = []
    entry: dict[str, Any] | None = records[-1]
    while entry is not None:
        path.insert(0, entry)
        entry = by_id.get(entry["parentId"])
    last = max((n for n, r in enumerate(path) if r["type"] == "compaction"), default=None)
    parts = [path]
    if last is not None:
        first = next(n for n, r in enumerate(path) if r["id"] == path[last]["firstKeptEntryId"])
        parts = [path[:first], path[first:last] + path[last + 1 :]]
    return [_pi_part(part) for part in parts]


def _pi_part(entries: list[dict[str, Any]]) -> list[Message]:
    msgs: list[Message] = []
    for r in entries:
        m = r.get("message") or {}
        if m.get("role") == "assistant":
            msgs.append(("assistant", [b["id"] for b in m["content"] if b["type"] == "toolCall"], []))
        elif m.get("role") == "toolResult":
            msgs.append(("user", [], [m["toolCallId"]]))
        elif m.get("role") in ("user", "bashExecution"):
            msgs.append(("user", [], []))
    return msgs


def gemini_cli_messages(records: list[dict[str, Any]]) -> list[list[Message]]:
    """Gemini CLI: the last version of each message id, where the id first stood; a gemini record is the
    model's turn (its calls) and then a user turn of the calls' results."""
    latest: dict[str, dict[str, Any]] = {}
    for r in records:
        if "$set" in r and isinstance(r["$set"].get("messages"), list):
            latest = {m["id"]: m for m in r["$set"]["messages"]}
        elif isinstance(r.get("id"), str) and r.get("type") in ("user", "gemini"):
            latest[r["id"]] = r
    msgs: list[Message] = []
    for r in latest.values():
        if r["type"] == "user":
            msgs.append(("user", [], []))
            continue
        calls = r.get("toolCalls") or []
        msgs.append(("assistant", [c["id"] for c in calls], []))
        answered = [p["functionResponse"]["id"] for c in calls for p in c.get("result") or []]
        if answered:
            msgs.append(("user", [], answered))
    return [msgs]


def qwen_messages(records: list[dict[str, Any]]) -> list[list[Message]]:
    """Gemini Contents (functionCall / functionResponse parts, paired by id); a chat_compression record
    starts a segment with its compressedHistory. The sample is one chain, in file order."""

    def message(content: dict[str, Any]) -> Message:
        parts = content["parts"]
        uses = [p["functionCall"]["id"] for p in parts if "functionCall" in p]
        results = [p["functionResponse"]["id"] for p in parts if "functionResponse" in p]
        return ("assistant" if content["role"] == "model" else "user", uses, results)

    segments: list[list[Message]] = [[]]
    for r in records:
        if r["type"] == "system" and r.get("subtype") == "chat_compression":
            segments.append([message(c) for c in r["systemPayload"]["compressedHistory"]])
        elif r["type"] in ("user", "assistant", "tool_result"):
            segments[-1].append(message(r["message"]))
    return segments


MESSAGES = {
    "anthropic": anthropic_messages,
    "claude-code": claude_code_messages,
    "openai": openai_messages,
    "pi": pi_messages,
    "gemini-cli": gemini_cli_messages,
    "qwen-code": qwen_messages,
}


def copilot_calls(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """A Copilot CLI session's tool call ids, and what is wrong with their results: each
    tool.execution_complete answers a toolRequest made before it, once, and every request is answered."""
    calls: list[str] = []
    pending: set[str] = set()
    problems: list[str] = []
    for n, record in enumerate(records, 1):
        if record["type"] == "assistant.message":
            for request in record["data"].get("toolRequests") or []:
                calls.append(request["toolCallId"])
                pending.add(request["toolCallId"])
        elif record["type"] == "tool.execution_complete":
            call = record["data"]["toolCallId"]
            if call not in pending:
                problems.append(f"line {n}: result for {call}, which is not an open call")
            pending.discard(call)
    problems += [f"unanswered at the end: {call}" for call in sorted(pending)]
    dup = [call for call, count in Counter(calls).items() if count > 1]
    return calls, problems + ([f"call ids used more than once: {dup}"] if dup else [])


MESSAGES = {"anthropic": anthropic_messages, "claude-code": claude_code_messages, "openai": openai_messages}


def pairing_problems(conversation: list[Message]) -> list[str]:
    """Every tool_use answered by id in the next user turn, every result with its tool_use."""
    turns: list[list[Any]] = []
    for role, uses, results in conversation:
        if turns and turns[-1][0] == role:  # consecutive same-role messages form one turn
            turns[-1][1] += uses
            turns[-1][2] += results
        else:
            turns.append([role, list(uses), list(results)])
    problems = []
    for i, (role, uses, results) in enumerate(turns):
        if role == "assistant":
            if results:
                problems.append(f"turn {i}: tool results in an assistant turn: {results}")
            if uses and i == len(turns) - 1:
                problems.append(f"turn {i}: unanswered at the end: {uses}")
            continue
        if uses:
            problems.append(f"turn {i}: tool uses in a user turn: {uses}")
        asked = turns[i - 1][1] if i > 0 and turns[i - 1][0] == "assistant" else []
        if Counter(results) != Counter(asked):
            problems.append(f"turn {i}: results {sorted(results)} for uses {sorted(asked)}")
    return problems


def file_problems(records: list[dict[str, Any]], dialect: str) -> list[str]:
    if dialect == "codex":
        return codex_calls(records)[1]
    if dialect == "copilot":
        return copilot_calls(records)[1]
    problems = []
    all_uses: list[str] = []
    for conversation in MESSAGES[dialect](records):
        problems += pairing_problems(conversation)
        all_uses += [u for _, uses, _ in conversation for u in uses]
    dup = [u for u, n in Counter(all_uses).items() if n > 1]
    if dup:
        problems.append(f"tool_use ids used more than once: {dup}")
    return problems


def load(rel: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (SAMPLES / rel).read_bytes().decode().splitlines()]


# ---------------------------------------------------------------------------------------------
# the checker itself


def test_checker_catches_broken_pairing() -> None:
    ok = [("user", [], []), ("assistant", ["a", "b"], []), ("user", [], ["b", "a"])]
    assert pairing_problems(ok) == []
    assert pairing_problems(ok[:2])  # unanswered
    assert pairing_problems(ok + [("user", [], ["a"])])  # answered twice
    assert pairing_problems([("user", [], ["x"])])  # result without a tool_use
    late = [
        ("user", [], []),
        ("assistant", ["a"], []),
        ("user", [], []),
        ("assistant", [], []),
        ("user", [], ["a"]),
    ]
    assert pairing_problems(late)  # answered, but not in the next user turn


def test_codex_checker_catches_broken_calls() -> None:
    def item(kind: str, call: str) -> dict[str, Any]:
        return {"type": "response_item", "payload": {"type": kind, "call_id": call}}

    aborted = {"type": "event_msg", "payload": {"type": "turn_aborted"}}
    ok = [item("function_call", "a"), item("custom_tool_call", "b"), item("custom_tool_call_output", "b")]
    ok += [item("function_call_output", "a"), item("function_call", "c"), aborted]
    assert codex_calls(ok) == (["a", "b", "c"], [])
    assert codex_calls(ok[:-1])[1] == ["unanswered at the end: c"]
    assert codex_calls([item("function_call_output", "x")])[1]  # an output without its call
    assert codex_calls(ok[:4] + [item("function_call_output", "a")])[1]  # answered twice
    assert codex_calls(ok[:4] + [item("function_call", "a"), aborted])[1]  # an id used twice
    compacted = {"type": "compacted", "payload": {"message": "summary"}}
    assert codex_calls([item("function_call", "a"), compacted])[1] == []


def test_parse_sdk_block_reads_python_reprs() -> None:
    kind, fields = parse_sdk_block(
        "ToolUseBlock(id='toolu_01', caller=None, input={'command': 'ls \\'x\"'}, name='bash', "
        "type='tool_use')"
    )
    assert kind == "ToolUseBlock"
    assert fields == {
        "id": "toolu_01",
        "caller": None,
        "input": {"command": "ls 'x\""},
        "name": "bash",
        "type": "tool_use",
    }


# ---------------------------------------------------------------------------------------------
# the committed samples


def test_samples_folder_holds_the_listed_files() -> None:
    committed = {p.relative_to(SAMPLES).as_posix() for p in SAMPLES.rglob("*") if p.is_file()}
    assert committed == set(SAMPLE_FILES) | {"README.md"}
    readme = (SAMPLES / "README.md").read_text()
    for rel in SAMPLE_FILES:  # each file is described, with its line count
        lines = (SAMPLES / rel).read_bytes().count(b"\n")
        assert f"`{rel}` ({lines} lines)" in readme, rel


def test_sample_compaction_has_the_records_summarize_writes(tmp_path: Path) -> None:
    # The sample's compact_boundary and summary records carry the same fields as the ones compactcli's
    # summarize writes into the same session (the builders live in the package, not in the samples).
    def compaction(records: list[dict]) -> tuple[dict, dict]:
        i = next(n for n, r in enumerate(records) if r.get("subtype") == "compact_boundary")
        return records[i], records[i + 1]

    copy = tmp_path / "session.jsonl"
    copy.write_bytes((SAMPLES / "claude-code/session.jsonl").read_bytes())
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "4", copy, cwd=tmp_path, text=True)
    assert done.returncode == 0, done.stderr
    written = compaction([json.loads(line) for line in copy.read_text().splitlines()])
    sample = compaction(load("claude-code/session.jsonl"))
    for ours, theirs in zip(written, sample, strict=True):
        assert set(ours) == set(theirs), set(ours) ^ set(theirs)
    assert written[0]["compactMetadata"].keys() == sample[0]["compactMetadata"].keys()


@pytest.mark.parametrize("rel", sorted(SAMPLE_FILES))
def test_sample_lines_are_json_objects(rel: str) -> None:
    data = (SAMPLES / rel).read_bytes()
    assert data.endswith(b"\n") and b"\n\n" not in data
    lines = data.decode("utf-8").splitlines()
    assert 20 <= len(lines) <= 80, len(lines)
    for n, line in enumerate(lines, 1):
        assert isinstance(json.loads(line), dict), f"{rel}:{n}"


@pytest.mark.parametrize("rel", sorted(SAMPLE_FILES))
def test_sample_tool_calls_are_paired(rel: str) -> None:
    records = load(rel)
    assert file_problems(records, SAMPLE_FILES[rel]) == []
    dialect = SAMPLE_FILES[rel]
    if dialect == "codex":
        uses = codex_calls(records)[0]
    elif dialect == "copilot":
        uses = copilot_calls(records)[0]
    else:
        uses = [u for conv in MESSAGES[dialect](records) for _, us, _ in conv for u in us]
    assert len(uses) >= 5  # the check above had something to check


def test_samples_total_size() -> None:
    total = sum((SAMPLES / rel).stat().st_size for rel in SAMPLE_FILES)
    # A few sessions per dialect, small enough that the demo and these tests stay quick.
    assert 20_000 <= total <= 50_000 * len(dialects.NAMES), total


def test_anthropic_session_features() -> None:
    records = load("anthropic/session.jsonl")
    blocks = [b for r in records if isinstance(r["content"], list) for b in r["content"]]
    types = Counter(b["type"] for b in blocks)
    assert types["thinking"] >= 1 and all(b["signature"] for b in blocks if b["type"] == "thinking")
    names = {b["name"] for b in blocks if b["type"] == "tool_use"}
    assert {"bash", "read_file", "write_file", "edit_file", "grep"} <= names
    results = [b for b in blocks if b["type"] == "tool_result"]
    lengths = {len(b["content"]) for b in results if isinstance(b["content"], str)}
    assert {100, 101} <= lengths and min(lengths) < 100 and max(lengths) > 2000
    listed = [b["content"] for b in results if isinstance(b["content"], list)]
    assert [[c["type"] for c in content] for content in listed] == [["text", "image"]]
    assert listed[0][1]["source"]["data"].startswith("iVBORw0KGgo")  # a PNG
    parallel = [r for r in records if r["role"] == "user" and isinstance(r["content"], list)]
    assert max(len(r["content"]) for r in parallel) >= 3


def test_stringified_sample_uses_sdk_reprs() -> None:
    text = (SAMPLES / "anthropic/stringified.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    kinds = Counter()
    for r in records:
        if r["role"] == "assistant":
            for block in r["content"]:
                assert isinstance(block, str)
                kind, fields = parse_sdk_block(block)
                kinds[kind] += 1
                order = {
                    "ThinkingBlock": ["signature", "thinking", "type"],
                    "TextBlock": ["citations", "text", "type"],
                    "ToolUseBlock": ["id", "caller", "input", "name", "type"],
                }[kind]
                assert list(fields) == order
        elif isinstance(r["content"], list):
            assert all(isinstance(b, dict) for b in r["content"])
    assert set(kinds) == {"ThinkingBlock", "TextBlock", "ToolUseBlock"}
    assert '", "' in text and '": ' in text  # json.dumps default separators


def test_claude_code_session_features() -> None:
    raw = (SAMPLES / "claude-code/session.jsonl").read_text("utf-8")
    assert '", "' not in raw and '": ' not in raw  # compact like the real logs
    records = [json.loads(line) for line in raw.splitlines()]
    kinds = Counter(r["type"] for r in records)
    assert {"summary", "file-history-snapshot", "queue-operation", "system"} <= set(kinds)
    assert {r.get("subtype") for r in records if r["type"] == "system"} == {
        "turn_duration",
        "compact_boundary",
    }
    by_id: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r["type"] == "assistant":
            by_id.setdefault(r["message"]["id"], []).append(r)
    split = [rs for rs in by_id.values() if len(rs) > 1]
    assert split and all(len({json.dumps(r["message"]["usage"]) for r in rs}) == 1 for rs in split)
    usage_keys = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}
    assert all(usage_keys <= set(rs[0]["message"]["usage"]) for rs in by_id.values())
    results = [r for r in records if r["type"] == "user" and isinstance(r["message"]["content"], list)]
    assert all(len(r["message"]["content"]) == 1 and "toolUseResult" in r for r in results)
    turs = [r["toolUseResult"] for r in results]
    assert any(isinstance(t, dict) and set(t) == {"stdout", "stderr", "interrupted", "isImage"} for t in turs)
    assert any(isinstance(t, dict) and t.get("type") == "text" and "file" in t for t in turs)
    side = [r for r in records if r.get("isSidechain")]
    assert side and all(r.get("agentId") for r in side)
    assert any(b.get("name") == "Task" for rs in by_id.values() for r in rs for b in r["message"]["content"])
    i = next(n for n, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    boundary, summary = records[i], records[i + 1]
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"] == records[i - 1]["uuid"]
    assert boundary["compactMetadata"]["trigger"] == "auto"
    assert boundary["compactMetadata"]["preTokens"] > 0
    assert summary["isCompactSummary"] and summary["isVisibleInTranscriptOnly"]
    assert summary["parentUuid"] == boundary["uuid"]
    assert isinstance(summary["message"]["content"], str)
    assert 0 < i < len(records) - 5  # in the middle


def test_claude_code_uuid_chain_and_usage_growth() -> None:
    records = load("claude-code/session.jsonl")
    seen: set[str] = set()
    sizes: dict[bool, list[int]] = {False: [], True: []}  # main context before/after compaction
    compacted = False
    for r in records:
        if "uuid" not in r:
            continue
        parent = r["parentUuid"]
        assert parent is None or parent in seen, r["uuid"]  # parents come first
        seen.add(r["uuid"])
        compacted = compacted or r.get("subtype") == "compact_boundary"
        if r["type"] == "assistant" and not r["isSidechain"]:
            u = r["message"]["usage"]
            size = u["input_tokens"] + u["cache_creation_input_tokens"]
            sizes[compacted].append(size + u["cache_read_input_tokens"])
    roots = [r for r in records if "uuid" in r and r["parentUuid"] is None]
    # the first prompt, the sub-agent's first prompt, and the compact boundary
    assert [r["type"] for r in roots] == ["user", "user", "system"]
    before, after = sizes[False], sizes[True]
    assert before == sorted(before) and before[0] < before[-1]  # the context grows
    assert after == sorted(after) and after[0] < before[-1]  # and shrinks at the compaction
    assert before[-1] < roots[2]["compactMetadata"]["preTokens"]


def test_agent_file_is_all_sidechain() -> None:
    records = load("claude-code/agent-subagent.jsonl")
    assert all(r["isSidechain"] is True and r["agentId"] == "b7e41f2" for r in records)
    main = load("claude-code/session.jsonl")
    task_results = [
        r["toolUseResult"]
        for r in main
        if isinstance(r.get("toolUseResult"), dict) and "agentId" in r["toolUseResult"]
    ]
    assert {t["agentId"] for t in task_results} == {"a3f9c21", "b7e41f2"}


def test_codex_sample_features() -> None:
    records = load("codex/rollout.jsonl")
    kinds = Counter((r["type"], (r.get("payload") or {}).get("type")) for r in records)
    assert records[0]["type"] == "session_meta" and records[0]["payload"]["base_instructions"]["text"]
    assert kinds["turn_context", None] >= 2
    assert kinds["response_item", "custom_tool_call"] and kinds["event_msg", "patch_apply_end"]
    assert kinds["event_msg", "exec_command_end"] >= 2  # UI copies of outputs
    assert kinds["event_msg", "turn_aborted"] and kinds["compacted", None]
    assert kinds["event_msg", "context_compacted"] and kinds["event_msg", "token_count"] >= 2
    # A later turn follows the compaction.
    compaction = next(n for n, r in enumerate(records) if r["type"] == "compacted")
    assert any(r["type"] == "turn_context" for r in records[compaction:])


def test_pi_sample_features() -> None:
    records = load("pi/session.jsonl")
    assert records[0]["type"] == "session" and records[0]["version"] == 3
    kinds = Counter(r["type"] for r in records)
    assert kinds["compaction"] == 1 and kinds["model_change"] >= 2 and kinds["thinking_level_change"]
    parents = Counter(r.get("parentId") for r in records[1:])
    assert max(parents.values()) == 2  # one branch point: an abandoned branch
    roles = Counter(r["message"]["role"] for r in records if r["type"] == "message")
    assert roles["bashExecution"] and roles["toolResult"] >= 10
    compaction = next(r for r in records if r["type"] == "compaction")
    assert compaction["firstKeptEntryId"] in {r.get("id") for r in records}


def test_qwen_sample_features() -> None:
    records = load("qwen-code/session.jsonl")
    kinds = Counter((r["type"], r.get("subtype")) for r in records)
    assert kinds["tool_result", None] >= 4 and kinds["system", "ui_telemetry"] >= 4
    assert kinds["system", "chat_compression"] == 1 and kinds["system", "custom_title"] == 1
    parents = [r["parentUuid"] for r in records]
    assert parents[0] is None and parents[1:] == [r["uuid"] for r in records[:-1]]  # one chain
    parts = [p for r in records if "message" in r for p in r["message"]["parts"]]
    assert any(p.get("thought") for p in parts)
    assert all("usageMetadata" in r for r in records if r["type"] == "assistant")
    # A later turn follows the compression.
    compression = next(n for n, r in enumerate(records) if r.get("subtype") == "chat_compression")
    assert any(r["type"] == "user" for r in records[compression:])


def test_copilot_checker_catches_broken_calls() -> None:
    def event(kind: str, **data: Any) -> dict[str, Any]:
        return {"type": kind, "data": data, "id": kind, "parentId": None}

    asked = event("assistant.message", toolRequests=[{"toolCallId": "a"}, {"toolCallId": "b"}])
    done = [event("tool.execution_complete", toolCallId=call) for call in ("a", "b")]
    assert copilot_calls([asked, *done]) == (["a", "b"], [])
    assert copilot_calls([asked, done[0]])[1] == ["unanswered at the end: b"]
    assert copilot_calls([done[0], asked, done[1]])[1]  # a result before its call
    assert copilot_calls([asked, *done, done[1]])[1]  # answered twice


def test_copilot_sample_features() -> None:
    records = load("copilot/events.jsonl")
    kinds = Counter(r["type"] for r in records)
    assert records[0]["type"] == "session.start" and records[0]["data"]["copilotVersion"]
    assert all(set(r) == {"type", "data", "id", "timestamp", "parentId"} for r in records)
    assert [r["parentId"] for r in records[1:]] == [r["id"] for r in records[:-1]]  # one chain
    assert (
        kinds["system.message"] == 2 and kinds["session.resume"] == 1 and kinds["session.usage_record"] >= 5
    )
    users = [r["data"] for r in records if r["type"] == "user.message"]
    assert all(u["transformedContent"].endswith(u["content"]) for u in users)
    results = [r["data"] for r in records if r["type"] == "tool.execution_complete"]
    assert any("detailedContent" in r["result"] for r in results if "result" in r)  # the UI's copies
    assert any(r["success"] is False for r in results)
    names = [
        q["name"] for r in records if r["type"] == "assistant.message" for q in r["data"]["toolRequests"]
    ]
    assert {"view", "bash", "edit", "grep"} <= set(names)
    # Copilot's own compaction, with a later turn after it.
    (done,) = [n for n, r in enumerate(records) if r["type"] == "session.compaction_complete"]
    assert records[done - 1]["type"] == "session.compaction_start"
    assert records[done]["data"]["summaryContent"] and records[done]["data"]["checkpointNumber"] == 1
    assert any(r["type"] == "assistant.message" for r in records[done:])


def test_openai_standard_sample_shape() -> None:
    records = load("openai/session.jsonl")
    assert records[0]["role"] == "system" and records[-1]["role"] == "assistant"
    calls = [c for r in records for c in r.get("tool_calls") or []]
    for c in calls:
        assert set(c) == {"id", "type", "function"} and c["type"] == "function"
        assert isinstance(json.loads(c["function"]["arguments"]), dict)
    assert max(len(r.get("tool_calls") or []) for r in records) >= 2  # parallel calls
    assert all(r["tool_call_id"] for r in records if r["role"] == "tool")


def test_openai_flattened_sample_shape() -> None:
    raw = (SAMPLES / "openai/flattened.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in raw.splitlines()]
    keys = ["role", "content", "tool_call_id", "name", "tool_calls"]
    assert all(list(r) == keys for r in records)
    calls = [c for r in records for c in r["tool_calls"]]
    assert calls and all(set(c) == {"id", "name", "arguments"} for c in calls)
    assert all(isinstance(c["arguments"], dict) for c in calls)
    assert "百分比" in raw  # CJK written raw (ensure_ascii=False)
    unused = [r for r in records if r["role"] == "user"]
    assert all(r["tool_call_id"] is None and r["tool_calls"] == [] for r in unused)


# ---------------------------------------------------------------------------------------------
# the strategies

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# reachability: stop at the first example (shrinking several-KB conversations takes minutes)
FIRST = settings(max_examples=500, database=None, phases=[Phase.generate])
# hypothesis warns when it builds the repr of a found several-KB example; that is expected here
QUIET_REPR = pytest.mark.filterwarnings("ignore:Generating overly large repr")


@pytest.mark.parametrize("dialect", GENERATORS)
def test_strategies_produce_paired_conversations(dialect: str) -> None:
    @FAST
    @given(conversations(dialect))
    def check(records: list[dict[str, Any]]) -> None:
        assert records and all(isinstance(r, dict) for r in records)
        assert file_problems(records, dialect) == []

    check()


@FAST
@given(conversations("openai"))
def test_jsonl_bytes_round_trips(records: list[dict[str, Any]]) -> None:
    data = {style: jsonl_bytes(records, style=style) for style in ("compact", "default", "unicode")}
    for blob in data.values():
        lines = blob.decode("utf-8").split("\n")
        assert lines[-1] == "" and [json.loads(line) for line in lines[:-1]] == records
    assert data["default"].isascii()
    # no spaces after separators, and raw UTF-8 instead of \u escapes
    assert len(data["compact"]) < len(data["unicode"]) <= len(data["default"])


def test_jsonl_bytes_rejects_unknown_style() -> None:
    with pytest.raises(ValueError):
        jsonl_bytes([{}], style="pretty")


def _string_result_lengths(records: list[dict[str, Any]]) -> set[int]:
    return {
        len(b["content"])
        for r in records
        if isinstance(r.get("content"), list)
        for b in r["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b["content"], str)
    }


@QUIET_REPR
@pytest.mark.parametrize("length", [100, 101, 4000])
def test_strategies_reach_the_min_chars_boundary(length: int) -> None:
    found = hfind(
        conversations("anthropic"),
        lambda records: any(
            n >= length if length > 1000 else n == length for n in _string_result_lengths(records)
        ),
        settings=FIRST,
    )
    assert _string_result_lengths(found)


@QUIET_REPR
@pytest.mark.parametrize(
    ("dialect", "wanted"),
    [
        (
            "anthropic",
            lambda rs: any(
                isinstance(b, str) and b.startswith("ToolUseBlock(")
                for r in rs
                if isinstance(r["content"], list)
                for b in r["content"]
            ),
        ),
        (
            "claude-code",
            lambda rs: (
                any(r.get("isSidechain") and r.get("agentId") for r in rs)
                and any(not r.get("isSidechain") for r in rs)
            ),
        ),
        ("claude-code", lambda rs: any(r.get("isCompactSummary") for r in rs)),
        (
            "claude-code",
            lambda rs: (
                len({r["message"]["id"] for r in rs if r.get("type") == "assistant"})
                < sum(r.get("type") == "assistant" for r in rs)
            ),
        ),
        ("openai", lambda rs: any("function" in c for r in rs for c in r.get("tool_calls") or [])),
        (
            "openai",
            lambda rs: any(
                isinstance(c.get("arguments"), dict) for r in rs for c in r.get("tool_calls") or []
            ),
        ),
    ],
)
def test_strategies_reach_dialect_features(dialect: str, wanted: Any) -> None:
    assert wanted(hfind(conversations(dialect), wanted, settings=FIRST))


def test_unknown_dialect_is_rejected() -> None:
    with pytest.raises(ValueError):
        conversations("gemini")
