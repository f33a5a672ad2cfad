"""Hypothesis strategies for valid transcripts in each dialect.

`conversations(dialect)` draws a list of JSON objects, one per transcript line, in which every
tool call is answered by id in the next user turn and every result has its call. The variety
follows the real files: tool results around the 100-character boundary and long ones, string
and list contents, preserved tool names (read_file, Read), stringified SDK blocks (anthropic),
split assistant records, toolUseResult copies, sub-agent sidechains and passthrough records
(claude-code), and both tool_calls shapes (openai).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# Pieces that tool output is made of: code, tracebacks, CJK, quotes and backslashes (which the
# SDK reprs must escape), tabs and a JSON fragment.
PIECES = (
    "def total(rows):\n    return sum(r.amount for r in rows)\n",
    'Traceback (most recent call last):\n  File "cli.py", line 12, in main\n',
    "E   AssertionError: assert Decimal('1') == Decimal('1234.50')\n",
    "路径 tally/ledger.py：读取失败 ✓\n",
    'it\'s a "quoted" \\path\\to\\file\t',
    '{"k": [1, 2, {"x": null}]}\n',
    "ok",
)
# Exactly 100 and 101 sit on both sides of the default --min-chars.
LENGTHS = st.one_of(st.sampled_from([0, 1, 99, 100, 101, 4096]), st.integers(2, 400), st.integers(1000, 6000))
PROSE = (
    "Add a --since option to the report command.",
    "Run the tests again, please.",
    "请在输出里加上百分比。",
    "That's not what I meant: keep the output format.",
    'Here\'s the traceback:\n  File "x.py", line 3\n',
)
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4//8/AAX+Av4N70a4AAAAAElFTkSuQmCC"

ANTHROPIC_TOOLS = ("bash", "read_file", "write_file", "edit_file", "grep", "glob", "todo")
CLAUDE_CODE_TOOLS = ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "TodoWrite", "WebFetch")
OPENAI_TOOLS = ("bash", "shell", "read_file", "edit_file", "grep", "todo", "Read")


def _fill(piece: str, n: int) -> str:
    return (piece * (n // len(piece) + 1))[:n]


def sized_text(lengths: st.SearchStrategy[int] = LENGTHS) -> st.SearchStrategy[str]:
    """Text of a drawn exact length (cheap even for several KB)."""
    pieces = st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map("".join)
    return st.builds(_fill, pieces, lengths)


def prose() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(PROSE), st.text(min_size=1, max_size=40))


def _result_content(list_ok: bool = True) -> st.SearchStrategy[Any]:
    text = sized_text()
    if not list_ok:
        return text
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}}
    blocks = st.builds(
        lambda t, with_image: [{"type": "text", "text": t}] + ([image] if with_image else []),
        text,
        st.booleans(),
    )
    return st.one_of(text, text, text, blocks)


def _tool_input(name: str) -> st.SearchStrategy[dict[str, Any]]:
    value = st.one_of(st.sampled_from(["tally/cli.py", "ls -la", "def total"]), prose())
    if name in ("bash", "shell", "Bash"):
        return st.fixed_dictionaries({"command": value})
    if name in ("Read", "Edit", "Write"):
        return st.fixed_dictionaries({"file_path": value})
    if name == "Task":  # the sub-agent's first message is the prompt (micro --drop-sidechains)
        return st.fixed_dictionaries({"description": prose(), "prompt": prose()})
    if name in ("todo", "TodoWrite"):
        item = st.fixed_dictionaries({"content": prose(), "status": st.just("pending")})
        return st.fixed_dictionaries({"items": st.lists(item, max_size=3)})
    return st.fixed_dictionaries({"path": value}, optional={"limit": st.integers(1, 400)})


class _Ids:
    """Unique ids within one drawn conversation."""

    def __init__(self, prefix: str, salt: int) -> None:
        self.prefix, self.salt, self.n = prefix, salt, 0

    def next(self) -> str:
        self.n += 1
        return f"{self.prefix}{self.salt:08x}{self.n:06d}"

    def uuid(self) -> str:
        self.n += 1
        return f"{self.salt:08x}-0000-4000-8000-{self.n:012x}"


def sdk_repr(block: dict[str, Any]) -> str:
    """The repr the anthropic SDK gives its content blocks (values via Python's repr)."""
    if block["type"] == "thinking":
        return (
            f"ThinkingBlock(signature={block['signature']!r}, thinking={block['thinking']!r}, "
            "type='thinking')"
        )
    if block["type"] == "text":
        return f"TextBlock(citations=None, text={block['text']!r}, type='text')"
    return (
        f"ToolUseBlock(id={block['id']!r}, caller=None, input={block['input']!r}, "
        f"name={block['name']!r}, type='tool_use')"
    )


# ---------------------------------------------------------------------------------------------
# anthropic


@st.composite
def _anthropic(draw: st.DrawFn) -> list[dict[str, Any]]:
    prefix = draw(st.sampled_from(["toolu_01", "call_00_", "toolu_bdrk_01"]))
    ids = _Ids(prefix, draw(st.integers(0, 2**32 - 1)))
    style = draw(st.sampled_from(["dict", "stringified", "mixed"]))
    msgs: list[dict[str, Any]] = [{"role": "user", "content": draw(prose())}]
    n_turns = draw(st.integers(1, 6))
    for turn in range(n_turns):
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": draw(prose()),
                    "signature": draw(st.sampled_from(["EqQBCkYIBxgC", "48c7b86a-a6"])),
                }
            )
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(prose())})
        uses = []
        for _ in range(draw(st.integers(0, 4))):
            name = draw(st.sampled_from(ANTHROPIC_TOOLS))
            uses.append(
                {"type": "tool_use", "id": ids.next(), "name": name, "input": draw(_tool_input(name))}
            )
        blocks += uses
        if not blocks:
            blocks.append({"type": "text", "text": draw(prose())})
        if style == "stringified" or (style == "mixed" and draw(st.booleans())):
            content: Any = [sdk_repr(b) for b in blocks]
        elif len(blocks) == 1 and blocks[0]["type"] == "text" and draw(st.booleans()):
            content = blocks[0]["text"]  # a plain string message
        else:
            content = blocks
        msgs.append({"role": "assistant", "content": content})
        if uses:
            results = []
            for use in uses:
                result = {"type": "tool_result", "tool_use_id": use["id"], "content": draw(_result_content())}
                if draw(st.integers(0, 5)) == 0:
                    result["is_error"] = True
                results.append(result)
            results = draw(st.permutations(results))
            extra = draw(st.sampled_from(["none", "none", "block", "message"]))
            if extra == "block":
                results.append({"type": "text", "text": draw(prose())})
            msgs.append({"role": "user", "content": results})
            if extra == "message":
                msgs.append({"role": "user", "content": draw(prose())})
        elif turn < n_turns - 1:
            msgs.append({"role": "user", "content": draw(prose())})
    return msgs


# ---------------------------------------------------------------------------------------------
# claude-code


class _ClaudeCode:
    def __init__(self, salt: int) -> None:
        self.ids = _Ids("toolu_01", salt)
        self.session = self.ids.uuid()
        self.records: list[dict[str, Any]] = []
        self.second = 0

    def stamp(self) -> str:
        self.second += 1
        return f"2025-11-18T09:{self.second // 60 % 60:02d}:{self.second % 60:02d}.000Z"

    def head(self, parent: str | None, sidechain: bool, agent: str | None) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": "/home/dev/tally",
            "sessionId": self.session,
            "version": "2.1.9",
            "gitBranch": "main",
        }
        if agent:
            rec["agentId"] = agent
        return rec

    def add(self, rec: dict[str, Any], kind: str) -> str:
        rec["type"] = kind
        rec["uuid"] = self.ids.uuid()
        rec["timestamp"] = self.stamp()
        self.records.append(rec)
        return rec["uuid"]


def _tool_use_result(name: str, content: Any, error: bool) -> Any:
    if error:
        return "Error: " + (content if isinstance(content, str) else "failed")
    if not isinstance(content, str):
        return content
    if name == "Bash":
        return {"stdout": content, "stderr": "", "interrupted": False, "isImage": False}
    if name == "Read":
        n = content.count("\n") + 1
        file = {
            "filePath": "/home/dev/tally/x.py",
            "content": content,
            "numLines": n,
            "startLine": 1,
            "totalLines": n,
        }
        return {"type": "text", "file": file}
    return {"mode": "content", "content": content, "numLines": content.count("\n") + 1}


def _passthrough(draw: st.DrawFn, cc: _ClaudeCode, last: str | None) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["summary", "file-history-snapshot", "queue-operation", "progress", "turn_duration"])
    )
    if kind == "summary":
        return {"type": "summary", "summary": draw(prose()), "leafUuid": last or cc.session}
    if kind == "file-history-snapshot":
        snap = {"messageId": cc.session, "trackedFileBackups": {}, "timestamp": cc.stamp()}
        return {"type": kind, "messageId": cc.session, "snapshot": snap, "isSnapshotUpdate": False}
    if kind == "queue-operation":
        return {
            "type": kind,
            "operation": "enqueue",
            "timestamp": cc.stamp(),
            "sessionId": cc.session,
            "content": draw(prose()),
        }
    if kind == "progress":
        rec = cc.head(last, False, None)
        rec.update(
            {
                "type": "progress",
                "data": {"type": "hook_progress", "hookEvent": "Stop"},
                "toolUseID": "t1",
                "parentToolUseID": "t1",
                "uuid": cc.ids.uuid(),
                "timestamp": cc.stamp(),
            }
        )
        return rec
    rec = cc.head(last, False, None)
    rec.update(
        {
            "type": "system",
            "subtype": "turn_duration",
            "durationMs": 4242,
            "timestamp": cc.stamp(),
            "uuid": cc.ids.uuid(),
            "isMeta": False,
        }
    )
    return rec


def _passed_through(draw: st.DrawFn, cc: _ClaudeCode, last: str) -> str:
    """A passthrough record after `last`; what the next record's parent is. Claude Code chains hook
    progress: the record after it may name it as its parent."""
    record = _passthrough(draw, cc, last)
    cc.records.append(record)
    return record["uuid"] if record["type"] == "progress" and draw(st.booleans()) else last


def _cc_conversation(
    draw: st.DrawFn,
    cc: _ClaudeCode,
    sidechain: bool,
    agent: str | None,
    depth: int,
    prompt: str | None = None,
) -> None:
    """One conversation (main or sub-agent), appended to cc.records in file order; a sub-agent's
    starts with its Task's prompt."""
    first = prompt if prompt is not None else draw(prose())
    last = cc.add({**cc.head(None, sidechain, agent), "message": {"role": "user", "content": first}}, "user")
    n_turns = draw(st.integers(1, 4 if depth == 0 else 2))
    for turn in range(n_turns):
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(prose()), "signature": "Eq0B"})
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(prose())})
        uses = []
        for _ in range(draw(st.integers(0, 3))):
            tasks = ("Task",) * 3 if depth == 0 else ()  # sub-agents are the interesting part
            name = draw(st.sampled_from(CLAUDE_CODE_TOOLS + tasks))
            uses.append(
                {"type": "tool_use", "id": cc.ids.next(), "name": name, "input": draw(_tool_input(name))}
            )
        blocks += uses
        if not blocks:
            blocks.append({"type": "text", "text": draw(prose())})
        usage = {
            "input_tokens": 1,
            "cache_creation_input_tokens": draw(st.integers(0, 5000)),
            "cache_read_input_tokens": draw(st.integers(0, 150_000)),
            "output_tokens": draw(st.integers(1, 900)),
        }
        message_id = cc.ids.next().replace("toolu_", "msg_")
        split = draw(st.integers(0, 4)) > 0  # Claude Code writes one record per block
        groups = [[b] for b in blocks] if split else [blocks]
        use_record: dict[str, str] = {}
        for group in groups:
            message = {
                "model": "claude-sonnet-4-5-20250929",
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": group,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            rec = {**cc.head(last, sidechain, agent), "message": message, "requestId": "req_1"}
            last = cc.add(rec, "assistant")
            for b in group:
                if b["type"] == "tool_use":
                    use_record[b["id"]] = last
        for use in uses:
            if use["name"] == "Task" and draw(st.booleans()):
                sub_agent = draw(st.sampled_from([None, f"a{cc.ids.n:06x}"]))
                _cc_conversation(draw, cc, True, sub_agent, depth + 1, use["input"]["prompt"])
            content = draw(_result_content())
            error = isinstance(content, str) and draw(st.integers(0, 5)) == 0
            block = {"tool_use_id": use["id"], "type": "tool_result", "content": content}
            if error:
                block["is_error"] = True
            rec = {
                **cc.head(use_record[use["id"]], sidechain, agent),
                "message": {"role": "user", "content": [block]},
            }
            if draw(st.integers(0, 3)) > 0:
                rec["toolUseResult"] = _tool_use_result(use["name"], content, error)
            last = cc.add(rec, "user")
            if depth == 0 and draw(st.integers(0, 5)) == 0:
                last = _passed_through(draw, cc, last)
        if depth == 0 and draw(st.integers(0, 3)) == 0:
            last = _passed_through(draw, cc, last)
        if depth == 0 and not sidechain and draw(st.integers(0, 5)) == 0:
            boundary = {
                "parentUuid": None,
                "logicalParentUuid": last,
                **{k: v for k, v in cc.head(None, False, None).items() if k != "parentUuid"},
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "level": "info",
                "compactMetadata": {"trigger": "auto", "preTokens": 155_554},
            }
            last = cc.add(boundary, "system")
            summary = {
                **cc.head(last, False, None),
                "message": {"role": "user", "content": draw(sized_text(st.integers(50, 3000)))},
                "isVisibleInTranscriptOnly": True,
                "isCompactSummary": True,
            }
            last = cc.add(summary, "user")
        elif not uses and turn < n_turns - 1:
            last = cc.add(
                {**cc.head(last, sidechain, agent), "message": {"role": "user", "content": draw(prose())}},
                "user",
            )


@st.composite
def _claude_code(draw: st.DrawFn) -> list[dict[str, Any]]:
    cc = _ClaudeCode(draw(st.integers(0, 2**32 - 1)))
    if draw(st.integers(0, 4)) == 0:
        # a sub-agent file: every record is a sidechain record of one agent
        _cc_conversation(draw, cc, True, "abc3cb6", 1)
        return cc.records
    for _ in range(draw(st.integers(0, 2))):
        cc.records.append(_passthrough(draw, cc, None))
    _cc_conversation(draw, cc, False, None, 0)
    return cc.records


# ---------------------------------------------------------------------------------------------
# openai


@st.composite
def _openai(draw: st.DrawFn) -> list[dict[str, Any]]:
    flattened = draw(st.booleans())
    ids = _Ids("call_", draw(st.integers(0, 2**32 - 1)))

    def line(role: str, content: Any, call_id: Any = None, name: Any = None, calls: Any = None):
        if flattened:
            return {
                "role": role,
                "content": content,
                "tool_call_id": call_id,
                "name": name,
                "tool_calls": calls or [],
            }
        msg: dict[str, Any] = {"role": role, "content": content}
        if calls:
            msg["tool_calls"] = calls
        if call_id:
            msg["tool_call_id"] = call_id
            if name and draw(st.booleans()):
                msg["name"] = name
        return msg

    msgs = []
    if draw(st.booleans()):
        msgs.append(line("system", draw(prose())))
    msgs.append(line("user", draw(prose())))
    n_turns = draw(st.integers(1, 6))
    for turn in range(n_turns):
        calls, results = [], []
        for _ in range(draw(st.integers(0, 3))):
            name = draw(st.sampled_from(OPENAI_TOOLS))
            args = draw(_tool_input(name))
            call_id = ids.next()
            if flattened:
                calls.append({"id": call_id, "name": name, "arguments": args})
            else:
                text = json.dumps(args, ensure_ascii=draw(st.booleans()))
                fn = {"name": name, "arguments": text}
                calls.append({"id": call_id, "type": "function", "function": fn})
            # standard results may also be a list of text parts
            content = (
                draw(sized_text())
                if flattened or draw(st.integers(0, 5))
                else [{"type": "text", "text": draw(sized_text())}]
            )
            results.append(line("tool", content, call_id, name))
        if calls:
            text = draw(st.one_of(st.none(), st.just(""), prose()))
            text = "" if flattened and text is None else text
        else:
            text = draw(prose())
        msgs.append(line("assistant", text, calls=calls))
        msgs.extend(draw(st.permutations(results)))
        if (not calls and turn < n_turns - 1) or (calls and draw(st.integers(0, 3)) == 0):
            msgs.append(line("user", draw(prose())))
    return msgs


# ---------------------------------------------------------------------------------------------
# codex


def _codex_item(payload: dict[str, Any], second: int) -> dict[str, Any]:
    return {
        "timestamp": f"2026-05-04T09:{second // 60 % 60:02d}:{second % 60:02d}.000Z",
        "type": "response_item",
        "payload": payload,
    }


def _codex_text(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


@st.composite
def _codex(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A rollout: session_meta and turn_context, user messages (some with an input_image), reasoning
    items, shell calls that read files (`cat`, `sed -n`) or run other commands, apply_patch calls on
    relative paths, their outputs (some lists with an image), and assistant messages that end turns."""
    ids = _Ids("call_", draw(st.integers(0, 2**32 - 1)))
    files = ("src/app.py", "README.md", "/repo/src/app.py", "tests/test_app.py")
    clock = iter(range(10_000))
    meta = {"id": "0199a1b2-c3d4", "cwd": "/repo", "originator": "codex_cli_rs", "cli_version": "0.171.0"}
    rollout: list[dict[str, Any]] = [
        {"timestamp": "2026-05-04T09:00:00.000Z", "type": "session_meta", "payload": meta},
        {
            "timestamp": "2026-05-04T09:00:00.000Z",
            "type": "turn_context",
            "payload": {"cwd": "/repo", "model": "gpt-5"},
        },
    ]
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_1X1}"}
    for _ in range(draw(st.integers(1, 4))):
        words = _codex_text("user", draw(prose()))
        if draw(st.integers(0, 3)) == 0:
            words["content"].append(image)
        rollout.append(_codex_item(words, next(clock)))
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                summary = [{"type": "summary_text", "text": draw(prose())}]
                reasoning = {"type": "reasoning", "summary": summary, "encrypted_content": "gAAAA" + "x" * 40}
                rollout.append(_codex_item(reasoning, next(clock)))
            call_id, path = ids.next(), draw(st.sampled_from(files))
            kind = draw(st.sampled_from(["cat", "sed", "other", "patch"]))
            if kind == "patch":
                patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch"
                call = {"type": "custom_tool_call", "name": "apply_patch", "call_id": call_id, "input": patch}
                answer_kind = "custom_tool_call_output"
            else:
                command = {
                    "cat": f"cat {path}",
                    "sed": f"sed -n '1,{draw(st.integers(1, 3)) * 100}p' {path}",
                }.get(kind, "pytest -q | tail -5")
                arguments = json.dumps({"cmd": command, "workdir": "/repo"})
                call = {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": arguments,
                    "call_id": call_id,
                }
                answer_kind = "function_call_output"
            rollout.append(_codex_item(call, next(clock)))
            output: Any = draw(sized_text())
            if answer_kind == "function_call_output" and draw(st.integers(0, 4)) == 0:
                output = [{"type": "input_text", "text": output}, image]
            rollout.append(
                _codex_item({"type": answer_kind, "call_id": call_id, "output": output}, next(clock))
            )
        rollout.append(_codex_item(_codex_text("assistant", draw(prose())), next(clock)))
    return rollout


QWEN_TOOLS = ("run_shell_command", "read_file", "grep_search", "edit")


@st.composite
def _qwen_code(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Qwen Code session: one parentUuid chain of user prompts, model turns (a thought, text, one or
    parallel functionCalls) with usageMetadata, tool_result records answering each call by id (with the
    UI's copy in toolCallResult), telemetry records, and at times the agent's own chat_compression."""
    ids = _Ids("call_", draw(st.integers(0, 2**32 - 1)))
    session = ids.uuid()
    records: list[dict[str, Any]] = []
    last: list[str | None] = [None]

    def add(kind: str, **fields: Any) -> dict[str, Any]:
        uuid = ids.uuid()
        record = {"uuid": uuid, "parentUuid": last[0], "sessionId": session, "timestamp": "2026-11-30T09:00Z",
                  "type": kind, "cwd": "/repo", "version": "0.15.10", **fields}  # fmt: skip
        records.append(record)
        last[0] = uuid
        return record

    for turn in range(draw(st.integers(1, 4))):
        add("user", message={"role": "user", "parts": [{"text": draw(prose())}]})
        for _ in range(draw(st.integers(0, 3))):
            calls = [(ids.next(), draw(st.sampled_from(QWEN_TOOLS))) for _ in range(draw(st.integers(1, 2)))]
            parts: list[dict[str, Any]] = []
            if draw(st.booleans()):
                parts.append({"text": draw(prose()), "thought": True})
            parts += [{"functionCall": {"id": c, "name": n, "args": draw(_tool_input(n))}} for c, n in calls]
            usage = {"promptTokenCount": 1000 + len(records) * 50, "candidatesTokenCount": 20}
            add(
                "assistant",
                model="qwen3-coder-plus",
                message={"role": "model", "parts": parts},
                usageMetadata=usage,
            )
            add(
                "system",
                subtype="ui_telemetry",
                systemPayload={"uiEvent": {"event.name": "qwen-code.tool_call"}},
            )
            for call_id, name in calls:
                output = draw(sized_text())
                answer = {"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}
                copy = {"callId": call_id, "status": "success", "resultDisplay": output}
                add("tool_result", message={"role": "user", "parts": [answer]}, toolCallResult=copy)
        add(
            "assistant",
            model="qwen3-coder-plus",
            message={"role": "model", "parts": [{"text": draw(prose())}]},
        )
        if turn == 1 and draw(st.booleans()):
            history = [
                {
                    "role": "user",
                    "parts": [{"text": "<state_snapshot>" + draw(prose()) + "</state_snapshot>"}],
                },
                {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
            ]
            payload = {"info": {"compressionStatus": 1}, "compressedHistory": history}
            add("system", subtype="chat_compression", systemPayload=payload)
    return records


# ---------------------------------------------------------------------------------------------
# pi


class _PiTree:
    """A pi session's entries, each the child of the one before (the active path is the whole file)."""

    def __init__(self, seed: int) -> None:
        self.entries: list[dict[str, Any]] = [
            {
                "type": "session",
                "version": 3,
                "id": f"{seed:08x}-pi",
                "timestamp": _pi_time(0),
                "cwd": "/repo",
            }
        ]
        self.last: str | None = None
        self.n = 0

    def add(self, kind: str, **fields: Any) -> str:
        self.n += 1
        entry_id = f"{self.n:08x}"
        self.entries.append(
            {"type": kind, "id": entry_id, "parentId": self.last, "timestamp": _pi_time(self.n), **fields}
        )
        self.last = entry_id
        return entry_id

    def message(self, role: str, content: Any, **fields: Any) -> str:
        return self.add("message", message={"role": role, "content": content, **fields, "timestamp": self.n})


def _pi_time(n: int) -> str:
    return f"2026-03-14T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


PI_TOOLS = ("read", "bash", "edit", "write", "grep")


@st.composite
def _pi(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A pi session: the header, a model change, user turns, assistant messages with thinking, text and
    toolCalls, a toolResult per call (some errors), and now and then a compaction entry that keeps the
    entries from a user turn on."""
    tree = _PiTree(draw(st.integers(0, 2**32 - 1)))
    ids = _Ids("toolu_", draw(st.integers(0, 2**32 - 1)))
    tree.add("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    usage = {"input": 10, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 30}
    user_turns: list[str] = []
    for turn in range(draw(st.integers(1, 4))):
        user_turns.append(tree.message("user", [{"type": "text", "text": draw(prose())}]))
        if turn and draw(st.integers(0, 3)) == 0:
            kept = draw(st.sampled_from(user_turns))
            tree.add("compaction", summary=draw(prose()), firstKeptEntryId=kept, tokensBefore=5000)
        for _ in range(draw(st.integers(0, 3)) + 1):
            content: list[dict[str, Any]] = []
            if draw(st.booleans()):
                content.append(
                    {"type": "thinking", "thinking": draw(prose()), "thinkingSignature": "EuYBCkYI"}
                )
            calls = [(ids.next(), draw(st.sampled_from(PI_TOOLS))) for _ in range(draw(st.integers(0, 2)))]
            last = not calls
            if last or draw(st.booleans()):
                content.append({"type": "text", "text": draw(prose())})
            for call_id, name in calls:
                content.append(
                    {"type": "toolCall", "id": call_id, "name": name, "arguments": {"path": "a.py"}}
                )
            tree.message(
                "assistant",
                content,
                api="anthropic-messages",
                provider="anthropic",
                model="claude-sonnet-4-5",
                usage=usage,
                stopReason="stop" if last else "toolUse",
            )
            for call_id, name in calls:
                output = [{"type": "text", "text": draw(sized_text())}]
                tree.message(
                    "toolResult", output, toolCallId=call_id, toolName=name, isError=draw(st.booleans())
                )
            if last:
                break
    return tree.entries


# ---------------------------------------------------------------------------------------------
# gemini-cli

GEMINI_TOOLS = ("read_file", "run_shell_command", "list_directory", "replace", "write_file")


@st.composite
def _gemini_cli(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Gemini CLI session: the header, user records, gemini records written first without their calls
    and then again (upserted by id) with the calls and their results, `$set` patches of lastUpdated
    between them, and now and then an info notice that is never sent."""
    salt = draw(st.integers(0, 2**32 - 1))
    clock = iter(range(10_000))

    def at() -> str:
        n = next(clock)
        return f"2026-11-30T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

    records: list[dict[str, Any]] = [
        {"sessionId": f"{salt:08x}-gem", "projectHash": "4be1c0d2", "startTime": at(), "lastUpdated": at()}
        | {"kind": "main"}
    ]
    n = 0

    def next_id() -> str:
        nonlocal n
        n += 1
        return f"{salt:08x}-{n:04d}"

    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 4)) == 0:
            records.append({"id": next_id(), "timestamp": at(), "type": "info", "content": draw(prose())})
        records.append(
            {"id": next_id(), "timestamp": at(), "type": "user", "content": [{"text": draw(prose())}]}
        )
        records.append({"$set": {"lastUpdated": at()}})
        for _ in range(draw(st.integers(1, 3))):
            turn = {
                "id": next_id(),
                "timestamp": at(),
                "type": "gemini",
                "content": draw(st.sampled_from(["", "Let me look."])),
                "thoughts": [],
                "tokens": {"input": 1000, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 1020},
                "model": "gemini-3-flash-preview",
            }
            records.append(turn)
            calls = []
            for k in range(draw(st.integers(0, 2))):
                name = draw(st.sampled_from(GEMINI_TOOLS))
                call_id = f"{name}_{salt}{n}_{k}"
                output = {"output": draw(sized_text())}
                response = {"functionResponse": {"id": call_id, "name": name, "response": output}}
                calls.append(
                    {"id": call_id, "name": name, "args": {"file_path": "a.py"}, "result": [response]}
                    | {"status": "success", "timestamp": at(), "resultDisplay": "done"}
                )
            if not calls:
                break
            records.append({"$set": {"lastUpdated": at()}})
            records.append({**turn, "toolCalls": calls})
        records.append(
            {
                "id": next_id(),
                "timestamp": at(),
                "type": "gemini",
                "content": draw(prose()),
                "thoughts": [],
                "tokens": {"input": 1100, "output": 30, "cached": 0, "thoughts": 0, "tool": 0, "total": 1130},
                "model": "gemini-3-flash-preview",
            }
        )
    return records


# ---------------------------------------------------------------------------------------------
# copilot

COPILOT_TOOLS = ("view", "bash", "edit", "grep", "create")


@st.composite
def _copilot(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Copilot CLI events.jsonl: session.start, a system message, user messages with their
    transformedContent, assistant messages with toolRequests, each call's execution start and complete
    (result.content and the UI's detailedContent, some failed; some after a postToolUse hook's run, given
    a copy of the result or other text; some cleared by an earlier micro that left the hook's copy), usage
    records and turn boundaries."""
    salt = draw(st.integers(0, 2**32 - 1))
    events: list[dict[str, Any]] = []

    def add(kind: str, data: dict[str, Any]) -> None:
        n = len(events) + 1
        parent = events[-1]["id"] if events else None
        stamp = f"2026-11-30T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
        events.append(
            {"type": kind, "data": data, "id": f"{n:08x}-{salt:08x}", "timestamp": stamp, "parentId": parent}
        )

    add("session.start", {"sessionId": f"{salt:08x}", "version": 1, "producer": "copilot-agent"})
    add("system.message", {"role": "system", "content": "You are the GitHub Copilot CLI."})
    calls = 0
    for turn in range(draw(st.integers(1, 4))):
        words = draw(prose())
        add("user.message", {"content": words, "transformedContent": f"<current_datetime/>\n\n{words}"})
        add("assistant.turn_start", {"turnId": str(turn)})
        for _ in range(draw(st.integers(1, 3))):
            requests = []
            for _ in range(draw(st.integers(0, 2))):
                calls += 1
                name = draw(st.sampled_from(COPILOT_TOOLS))
                requests.append(
                    {"toolCallId": f"toolu_{salt:x}_{calls}", "name": name, "arguments": {"path": "a.py"}}
                    | {"type": "function"}
                )
            usage = {"model": "claude-sonnet-4.5", "inputTokens": 1000, "outputTokens": 20}
            add("session.usage_record", {"usage": usage})
            add(
                "assistant.message",
                {"messageId": f"m{calls}", "content": draw(prose()), "toolRequests": requests},
            )
            for request in requests:
                call = {"toolCallId": request["toolCallId"], "toolName": request["name"], "turnId": str(turn)}
                add("tool.execution_start", {**call, "arguments": request["arguments"]})
                output = copied = draw(sized_text())
                if draw(st.integers(0, 5)) == 0:  # an earlier micro cleared it, leaving the hook's copy
                    output = f"[Previous: used {request['name']}]"
                elif draw(st.integers(0, 3)) == 0:  # the hook was given other text
                    copied = f"[hook {calls}] " + "h" * draw(st.integers(0, 300))
                done = {**call, "success": draw(st.booleans())}
                if draw(st.booleans()):  # a postToolUse hook ran, given a copy of the result
                    copy = {"textResultForLlm": copied, "resultType": "success", "sessionLog": copied}
                    hook = {"toolName": request["name"], "toolArgs": request["arguments"], "toolResult": copy}
                    add(
                        "hook.start",
                        {"hookInvocationId": f"h{calls}", "hookType": "postToolUse", "input": hook},
                    )
                    add(
                        "hook.end",
                        {"hookInvocationId": f"h{calls}", "hookType": "postToolUse", "success": True},
                    )
                add(
                    "tool.execution_complete",
                    done | {"result": {"content": output, "detailedContent": output}},
                )
            if not requests:
                break
        add("assistant.turn_end", {"turnId": str(turn)})
    return events


# ---------------------------------------------------------------------------------------------
# public API


def conversations(dialect: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Valid conversations in `dialect` (anthropic | claude-code | openai | codex | qwen-code), one dict
    per line."""
    if dialect not in GENERATORS:
        raise ValueError(f"no generator for dialect {dialect!r}; one of {', '.join(GENERATORS)}")
    return GENERATORS[dialect]()


# dialect -> its strategy; tests/test_dialect_coverage.py checks that every dialect has one
GENERATORS = {
    "anthropic": _anthropic,
    "claude-code": _claude_code,
    "openai": _openai,
    "codex": _codex,
    "qwen-code": _qwen_code,
    "copilot": _copilot,
    "pi": _pi,
    "gemini-cli": _gemini_cli,
}


def jsonl_bytes(records: list[dict[str, Any]], *, style: str = "compact") -> bytes:
    """Serialize records as JSONL in one of the styles real files use.

    compact: no spaces, raw UTF-8 (Claude Code); default: json.dumps defaults (", ", ": " and
    \\u escapes, the reference tutorial agent); unicode: default separators, raw UTF-8.
    """
    if style == "compact":
        dump = lambda r: json.dumps(r, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    elif style == "default":
        dump = json.dumps
    elif style == "unicode":
        dump = lambda r: json.dumps(r, ensure_ascii=False)  # noqa: E731
    else:
        raise ValueError(f"unknown style {style!r}; expected compact, default or unicode")
    return "".join(dump(r) + "\n" for r in records).encode("utf-8")
