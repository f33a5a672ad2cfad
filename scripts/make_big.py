"""Generate a large, realistic transcript (Claude Code log, Anthropic Messages JSONL, Codex CLI rollout, pi,
Qwen Code, Copilot CLI or Gemini CLI session, OpenAI chat log) for benchmarks.

Deterministic: the same --mb, --dialect and --seed give the same bytes. The shape follows real Claude Code
logs: one assistant record per tool_use block, one user record per tool_result with a `toolUseResult` copy of
the output, inline sub-agent (sidechain) traffic after a Task call, and passthrough records (progress,
file-history-snapshot, system/turn_duration, summary). Tool outputs are 200 B to 20 KB (log-uniform), with
escapes (quotes, backslashes, tabs) and non-ASCII text, written as compact JSON the way Claude Code writes it.
A Codex rollout has session_meta, turn_context, parallel exec_command calls whose output is also copied into
an exec_command_end event, apply_patch custom tool calls, reasoning and token_count events. pi, Qwen
Code, Copilot CLI and Gemini CLI sessions carry the same turns in each agent's own records, tool names and
UI copies.

    python scripts/make_big.py --mb 100 --dialect claude-code -o /tmp/big.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

DIALECTS = ("claude-code", "anthropic", "codex", "pi", "qwen-code", "copilot", "gemini-cli", "openai")
GENERATOR_VERSION = 2  # bump when the output changes, so cached files are rebuilt
# How lines are written: "compact" as orjson, Claude Code and Codex write them; "spaced" as Python's
# json.dumps does by default (", " and ": ", non-ASCII escaped), as most Python agents write them.
STYLES = ("compact", "spaced")

# (tool, weight); Read is preserved by micro by default, so its share matters.
TOOLS = [
    ("Bash", 30),
    ("Read", 24),
    ("Grep", 12),
    ("Edit", 11),
    ("Glob", 5),
    ("Write", 4),
    ("TodoWrite", 5),
    ("WebFetch", 3),
    ("mcp__github__search_code", 2),
    ("Task", 2),
]
SUB_AGENT_TOOLS = ("Bash", "Read", "Grep", "Glob")
_WORDS = (
    "def return self import from class value result error path file config data line test assert "
    "None True False async await yield lambda for while if else elif try except raise with open "
    "json orjson record message content block tool_use tool_result session transcript compact "
    "parse dumps loads index plan apply stream buffer bytes utf-8 cache token model summary "
    "0 1 2 3 42 100 1024 65535 0x1f 3.14 -1 src/ tests/ lib/ main.py cli.py utils.rs Cargo.toml"
).split()
_NON_ASCII = ("→", "✓", "—", "é", "ü", "中文", "日本語", "😀", "±", "µs")
_PUNCT = ('"', "'", "\\", "\t", "(", ")", "{", "}", "[", "]", ":", ",", ".", "=", "/")
_MODEL = "claude-opus-4-5-20251101"


def _text_pool(rng: random.Random, size: int, numbered: bool) -> str:
    """A long run of code/log-like lines; tool outputs are slices of it."""
    lines: list[str] = []
    total = 0
    number = 1
    while total < size:
        words = rng.choices(_WORDS, k=rng.randint(0, 14))
        if rng.random() < 0.3:
            words.insert(rng.randint(0, len(words)), rng.choice(_PUNCT))
        if rng.random() < 0.05:
            words.append(rng.choice(_NON_ASCII))
        line = "    " * rng.randint(0, 3) + " ".join(words)
        if numbered:
            line = f"{number:>6}→{line}"
            number = number + 1 if rng.random() < 0.995 else 1
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


class _Maker:
    """Holds the random state and the pools; `records()` yields record dicts until stopped."""

    def __init__(self, dialect: str, seed: int) -> None:
        self.dialect = dialect
        self.rng = random.Random(seed)
        self.output_range = (200, 20000)  # tool output lengths (log-uniform), --outputs
        self.result_count = 0  # tool results made so far, for --results
        self.plain = _text_pool(self.rng, 1 << 21, numbered=False)
        self.numbered = _text_pool(self.rng, 1 << 21, numbered=True)
        self.session = self.uuid()
        self.clock = datetime(2026, 1, 21, 6, 20, tzinfo=UTC)
        self.parent: str | None = None
        self.cwd = "/home/dev/project"
        self.agent_count = 0

    # ------------------------------------------------------------ small random pieces

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def tool_id(self) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "toolu_01" + "".join(self.rng.choices(alphabet, k=22))

    def tick(self) -> str:
        self.clock += timedelta(milliseconds=self.rng.randint(50, 20000))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def slice(self, length: int, numbered: bool = False) -> str:
        pool = self.numbered if numbered else self.plain
        start = self.rng.randrange(0, len(pool) - length)
        return pool[start : start + length]

    def output_length(self) -> int:
        # Log-uniform 200 B .. 20 KB by default: most outputs are short, a few are long.
        low, high = self.output_range
        return int(math.exp(self.rng.uniform(math.log(low), math.log(high))))

    def sentence(self, low: int = 40, high: int = 400) -> str:
        return self.slice(self.rng.randint(low, high)).replace("\n", " ")

    def path(self) -> str:
        parts = self.rng.choices(("src", "lib", "tests", "core", "util", "api", "cli"), k=3)
        return f"{self.cwd}/{'/'.join(parts)}/{self.rng.choice(_WORDS).strip('/.')}.py"

    # ------------------------------------------------------------ tool calls

    def tool_input(self, name: str) -> dict:
        if name == "Bash":
            return {"command": self.sentence(10, 120), "description": self.sentence(10, 60)}
        if name in ("Read", "Write", "Edit"):
            data: dict = {"file_path": self.path()}
            if name == "Write":
                data["content"] = self.slice(self.rng.randint(200, 4000))
            if name == "Edit":
                data.update(old_string=self.slice(120), new_string=self.slice(140), replace_all=False)
            return data
        if name in ("Grep", "Glob"):
            return {"pattern": self.rng.choice(_WORDS), "path": self.cwd}
        if name == "TodoWrite":
            todos = [
                {"content": self.sentence(20, 60), "status": self.rng.choice(("pending", "completed"))}
                for _ in range(self.rng.randint(2, 6))
            ]
            return {"todos": todos}
        if name == "Task":
            return {"description": self.sentence(10, 40), "prompt": self.sentence(200, 800)}
        return {"query": self.sentence(10, 80)}

    def tool_output(self, name: str) -> tuple[object, dict | str]:
        """(tool_result content, toolUseResult copy) for one call."""
        if name in ("Edit", "Write", "TodoWrite"):
            text = f"The file {self.path()} has been updated successfully."
            if self.rng.random() < 0.5:
                text += "\n" + self.slice(self.rng.randint(100, 1500), numbered=True)
            return text, {"filePath": self.path(), "structuredPatch": [{"lines": text.split("\n")[:8]}]}
        length = self.output_length()
        if name == "Task":
            # A list of text blocks: micro keeps it unless --clear-multimodal.
            blocks = [{"type": "text", "text": self.slice(length)}]
            return blocks, {"status": "completed", "content": blocks, "totalToolUseCount": 5}
        if name == "Read":
            text = self.slice(length, numbered=True)
            file = {"filePath": self.path(), "content": text, "numLines": text.count("\n") + 1}
            return text, {"type": "text", "file": file}
        text = self.slice(length)
        if name == "Bash":
            return text, {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
        if name in ("Grep", "Glob"):
            files = text.split("\n")
            return text, {"mode": "content", "numFiles": len(files), "filenames": files[:20]}
        return text, {"type": "text", "content": text}

    # ------------------------------------------------------------ records

    def envelope(self, kind: str, message: dict, sidechain: str | None = None) -> dict:
        record_uuid = self.uuid()
        record: dict = {
            "parentUuid": self.parent,
            "isSidechain": sidechain is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.1.14",
            "gitBranch": "main",
        }
        if sidechain is not None:
            record["agentId"] = sidechain
        record.update(type=kind, message=message, uuid=record_uuid, timestamp=self.tick())
        self.parent = record_uuid
        return record

    def assistant(self, content: list, sidechain: str | None = None) -> dict:
        message = {
            "model": _MODEL,
            "id": "msg_01" + self.tool_id()[8:],
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if content[-1]["type"] == "tool_use" else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.rng.randint(1, 8),
                "cache_creation_input_tokens": self.rng.randint(0, 5000),
                "cache_read_input_tokens": self.rng.randint(1000, 150000),
                "output_tokens": self.rng.randint(1, 2000),
                "service_tier": "standard",
            },
        }
        if self.dialect == "anthropic":
            return {"role": "assistant", "content": content}
        record = self.envelope("assistant", message, sidechain)
        record["requestId"] = "req_011" + self.tool_id()[8:]
        return record

    def results(self, calls: list[tuple[str, str]], sidechain: str | None = None) -> Iterator[dict]:
        """User records answering `calls` [(id, name)]: one per result (Claude Code) or one message."""
        blocks = []
        self.result_count += len(calls)
        for call_id, name in calls:
            content, copy = self.tool_output(name)
            block: dict = {"tool_use_id": call_id, "type": "tool_result", "content": content}
            if self.rng.random() < 0.04:
                block["is_error"] = True
            blocks.append((block, copy))
        if self.dialect == "anthropic":
            yield {"role": "user", "content": [block for block, _ in blocks]}
            return
        for block, copy in blocks:
            record = self.envelope("user", {"role": "user", "content": [block]}, sidechain)
            record["toolUseResult"] = copy
            yield record

    def passthrough(self) -> dict:
        choice = self.rng.random()
        if choice < 0.5:
            return {
                "parentUuid": self.parent,
                "isSidechain": False,
                "type": "progress",
                "data": {"type": "bash_progress", "output": self.sentence(20, 300), "elapsedTimeSeconds": 3},
                "toolUseID": self.tool_id(),
                "uuid": self.uuid(),
                "timestamp": self.tick(),
                "sessionId": self.session,
            }
        if choice < 0.8:
            backups = {self.path(): {"backupFileName": self.uuid()[:16] + "@v2", "version": 2}}
            return {
                "type": "file-history-snapshot",
                "messageId": self.uuid(),
                "snapshot": {
                    "messageId": self.uuid(),
                    "trackedFileBackups": backups,
                    "timestamp": self.tick(),
                },
                "isSnapshotUpdate": False,
            }
        if choice < 0.95:
            record = self.envelope("system", {"role": "system", "content": ""})
            del record["message"]
            record.update(subtype="turn_duration", durationMs=self.rng.randint(1000, 90000), isMeta=False)
            return record
        return {"type": "summary", "summary": self.sentence(20, 80), "leafUuid": self.parent}

    def prompt(self) -> dict:
        text = self.sentence(30, 600)
        if self.dialect == "anthropic":
            return {"role": "user", "content": text}
        return self.envelope("user", {"role": "user", "content": text})

    def sub_agent(self) -> Iterator[dict]:
        """Inline sidechain traffic of a Task call: its own conversation for micro."""
        self.agent_count += 1
        agent = f"a{self.agent_count:06x}"
        main_parent = self.parent
        self.parent = None
        yield self.envelope("user", {"role": "user", "content": self.sentence(100, 400)}, agent)
        for _ in range(self.rng.randint(3, 8)):
            name = self.rng.choice(SUB_AGENT_TOOLS)
            call_id = self.tool_id()
            use = {"type": "tool_use", "id": call_id, "name": name, "input": self.tool_input(name)}
            yield self.assistant([use], agent)
            yield from self.results([(call_id, name)], agent)
        yield self.assistant([{"type": "text", "text": self.sentence(200, 1200)}], agent)
        self.parent = main_parent

    def turn(self) -> Iterator[dict]:
        """A user prompt, then tool calls until the model answers in text."""
        yield self.prompt()
        for _ in range(self.rng.randint(3, 25)):
            preamble: list = []
            if self.rng.random() < 0.25:
                preamble.append(
                    {"type": "thinking", "thinking": self.sentence(100, 1500), "signature": "Eu8B" * 20}
                )
            if self.dialect == "claude-code" and preamble:
                yield self.assistant(preamble)
            width = 1 if self.rng.random() < 0.85 else self.rng.randint(2, 4)  # parallel calls
            names = self.rng.choices([t for t, _ in TOOLS], weights=[w for _, w in TOOLS], k=width)
            calls = [(self.tool_id(), name) for name in names]
            uses = [
                {"type": "tool_use", "id": call_id, "name": name, "input": self.tool_input(name)}
                for call_id, name in calls
            ]
            if self.dialect == "claude-code":
                for use in uses:  # Claude Code writes one record per content block
                    yield self.assistant([use])
            else:
                text = {"type": "text", "text": self.sentence(20, 200)}
                yield self.assistant([*preamble, text, *uses])
            task_calls = [call for call in calls if call[1] == "Task"]
            if task_calls and self.dialect == "claude-code":
                yield from self.sub_agent()
            yield from self.results(calls)
            if self.dialect == "claude-code" and self.rng.random() < 0.15:
                yield self.passthrough()
        yield self.assistant([{"type": "text", "text": self.sentence(100, 2000)}])

    def records(self) -> Iterator[dict]:
        if self.dialect == "claude-code":
            yield {
                "type": "queue-operation",
                "operation": "dequeue",
                "timestamp": self.tick(),
                "sessionId": self.session,
            }
        while True:
            yield from self.turn()


# Codex tools, by weight: its shell tool does most of the work (file reads included), write_stdin polls
# a running command, apply_patch edits (a custom tool: free-form input), read_file is preserved by micro.
CODEX_TOOLS = [("exec_command", 70), ("write_stdin", 10), ("apply_patch", 12), ("read_file", 8)]


class _CodexMaker(_Maker):
    """A Codex CLI rollout: `{"timestamp", "type", "payload"}` records."""

    def call_id(self) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "call_" + "".join(self.rng.choices(alphabet, k=24))

    def line(self, kind: str, payload: dict) -> dict:
        return {"timestamp": self.tick(), "type": kind, "payload": payload}

    def item(self, payload: dict) -> dict:
        return self.line("response_item", payload)

    def text_item(self, role: str, text: str) -> dict:
        kind = "output_text" if role == "assistant" else "input_text"
        return self.item({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    def call(self, name: str, call_id: str) -> dict:
        if name == "apply_patch":
            patch = f"*** Begin Patch\n*** Update File: {self.path()}\n@@\n" + self.slice(
                self.rng.randint(200, 3000)
            )
            return self.item(
                {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": name,
                    "input": patch,
                }
            )
        if name == "read_file":
            arguments = {"file_path": self.path(), "offset": 1, "limit": 400}
        elif name == "write_stdin":
            arguments = {"session_id": self.rng.randint(1000, 99999), "chars": "", "yield_time_ms": 1000}
        else:
            arguments = {"cmd": self.sentence(10, 120), "workdir": self.cwd, "yield_time_ms": 1000}
        return self.item(
            {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}
        )

    def tool_outputs(self, name: str, call_id: str, turn: str) -> Iterator[dict]:
        """The output and, for shell commands, its UI copy (written first as often as not)."""
        self.result_count += 1
        body = self.slice(self.output_length(), numbered=name == "read_file")
        if name == "apply_patch":
            result = {
                "output": "Success. Updated the following files:\nM " + self.path() + "\n",
                "metadata": {},
            }
            yield self.item(
                {"type": "custom_tool_call_output", "call_id": call_id, "output": json.dumps(result)}
            )
            return
        output = f"Chunk ID: {self.rng.getrandbits(24):06x}\nProcess exited with code 0\nOutput:\n{body}"
        result = self.item({"type": "function_call_output", "call_id": call_id, "output": output})
        if name != "exec_command":
            yield result
            return
        copy = self.line(
            "event_msg",
            {
                "type": "exec_command_end",
                "call_id": call_id,
                "turn_id": turn,
                "command": ["/bin/bash", "-lc", self.sentence(10, 80)],
                "cwd": self.cwd,
                "stdout": "",
                "stderr": "",
                "aggregated_output": body,
                "exit_code": 0,
                "formatted_output": body,
                "status": "completed",
            },
        )
        yield from (copy, result) if self.rng.random() < 0.5 else (result, copy)

    def token_count(self, given: int) -> dict:
        usage = {
            "input_tokens": given,
            "cached_input_tokens": given // 2,
            "output_tokens": 300,
            "total_tokens": given + 300,
        }
        return self.line("event_msg", {"type": "token_count", "info": {"last_token_usage": usage}})

    def turn(self) -> Iterator[dict]:
        turn = self.uuid()
        yield self.line("turn_context", {"turn_id": turn, "cwd": self.cwd, "model": "gpt-5-codex"})
        yield self.text_item("user", self.sentence(40, 600))
        for _ in range(self.rng.randint(3, 25)):
            yield self.item(
                {
                    "type": "reasoning",
                    "summary": [],
                    "content": None,
                    "encrypted_content": "gAAAA" + self.slice(800),
                }
            )
            if self.rng.random() < 0.4:
                yield self.text_item("assistant", self.sentence(20, 300))
            width = 1 if self.rng.random() < 0.6 else self.rng.randint(2, 6)  # parallel calls
            names = self.rng.choices(
                [t for t, _ in CODEX_TOOLS], weights=[w for _, w in CODEX_TOOLS], k=width
            )
            calls = [(name, self.call_id()) for name in names]
            for name, call_id in calls:
                yield self.call(name, call_id)
            yield self.token_count(self.rng.randint(10_000, 200_000))
            for name, call_id in self.rng.sample(calls, len(calls)):
                yield from self.tool_outputs(name, call_id, turn)
        yield self.text_item("assistant", self.sentence(100, 2000))

    def records(self) -> Iterator[dict]:
        meta = {"id": self.session, "cwd": self.cwd, "cli_version": "0.122.0", "originator": "codex_cli_rs"}
        meta["base_instructions"] = {"text": self.sentence(5000, 12000)}
        yield self.line("session_meta", meta)
        yield self.text_item("developer", "<permissions instructions>" + self.sentence(500, 3000))
        while True:
            yield from self.turn()


# pi's own tools for the ones the Anthropic-shaped turns call (pi has no sub-agents or todo list).
PI_TOOLS = {"Bash": "bash", "Read": "read", "Write": "write", "Edit": "edit", "Grep": "grep", "Glob": "find"}


class _PiMaker(_Maker):
    """A pi session (version 3): the header, then each message of the Anthropic-shaped turns as an entry
    of the tree, a tool result per entry, with pi's block names, usage and an edit's `details`."""

    def __init__(self, dialect: str, seed: int) -> None:
        super().__init__("anthropic", seed)  # the turns, as Anthropic messages, are converted
        self.leaf: str | None = None

    def entry(self, message: dict) -> dict:
        own = self.uuid()[:8]
        record = {
            "type": "message",
            "id": own,
            "parentId": self.leaf,
            "timestamp": self.tick(),
            "message": message,
        }
        self.leaf = own
        return record

    def block(self, block: dict) -> dict:
        kind = block.get("type")
        if kind == "tool_use":
            name = PI_TOOLS.get(block["name"], block["name"].lower())
            arguments = dict(block["input"])
            if "file_path" in arguments:
                arguments["path"] = arguments.pop("file_path")
            return {"type": "toolCall", "id": block["id"], "name": name, "arguments": arguments}
        if kind == "thinking":
            return {
                "type": "thinking",
                "thinking": block["thinking"],
                "thinkingSignature": block["signature"],
            }
        return block

    def convert(self, record: dict, names: dict[str, str]) -> Iterator[dict]:
        content = record["content"]
        if record["role"] == "assistant":
            blocks = [self.block(b) for b in content]
            names.update((b["id"], b["name"]) for b in blocks if b["type"] == "toolCall")
            usage = {
                "input": 3,
                "output": self.rng.randint(1, 2000),
                "cacheRead": self.rng.randint(1000, 150000),
            }
            usage.update(cacheWrite=self.rng.randint(0, 5000), totalTokens=0)
            stop = "toolUse" if blocks[-1]["type"] == "toolCall" else "stop"
            message = {
                "role": "assistant",
                "content": blocks,
                "api": "anthropic-messages",
                "provider": "anthropic",
            }
            message.update(model=_MODEL, usage=usage, stopReason=stop, timestamp=0)
            yield self.entry(message)
            return
        if isinstance(content, str):
            yield self.entry({"role": "user", "content": [{"type": "text", "text": content}], "timestamp": 0})
            return
        for block in content:
            result = block["content"]
            name = names.get(block["tool_use_id"], "unknown")
            message = {"role": "toolResult", "toolCallId": block["tool_use_id"], "toolName": name}
            message["content"] = [{"type": "text", "text": result}] if isinstance(result, str) else result
            if name == "edit":
                message["details"] = {"diff": self.slice(300), "firstChangedLine": 1}
            message.update(isError=block.get("is_error") is True, timestamp=0)
            yield self.entry(message)

    def records(self) -> Iterator[dict]:
        yield {"type": "session", "version": 3, "id": self.session, "timestamp": self.tick(), "cwd": self.cwd}
        yield {"type": "model_change", "id": "0000model", "parentId": None, "timestamp": self.tick(),
               "provider": "anthropic", "modelId": _MODEL}  # fmt: skip
        self.leaf = "0000model"
        names: dict[str, str] = {}
        for record in super().records():
            yield from self.convert(record, names)


# Qwen Code's own tools for the ones the Anthropic-shaped turns call; its read_file is preserved by micro.
QWEN_TOOLS = {
    "Bash": "run_shell_command",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit",
    "Grep": "grep_search",
    "Glob": "glob",
    "TodoWrite": "todo_write",
    "WebFetch": "web_fetch",
    "Task": "task",
}
_QWEN_MODEL = "qwen3-coder-plus"


class _QwenMaker(_Maker):
    """A Qwen Code session: `{uuid, parentUuid, sessionId, timestamp, type, cwd, version, gitBranch}`
    records on one parentUuid chain; the Anthropic-shaped turns become `message: {role, parts}` (the model's
    Content), one `tool_result` record per functionResponse with its UI copy (`toolCallResult`), failures
    answered `{"error": ...}`, and `ui_telemetry` system records after each model call."""

    def __init__(self, dialect: str, seed: int) -> None:
        super().__init__("anthropic", seed)
        self.session_id = self.uuid()
        self.leaf: str | None = None

    def record(self, kind: str, **fields: object) -> dict:
        own = self.uuid()
        record: dict = {
            "uuid": own,
            "parentUuid": self.leaf,
            "sessionId": self.session_id,
            "timestamp": self.tick(),
            "type": kind,
            "cwd": self.cwd,
            "version": "0.15.10",
            "gitBranch": "main",
        }
        record.update(fields)
        self.leaf = own
        return record

    def telemetry(self, prompt: int, output: int) -> dict:
        event = {
            "event.name": "qwen-code.api_response",
            "model": _QWEN_MODEL,
            "status_code": 200,
            "duration_ms": self.rng.randint(500, 9000),
            "input_token_count": prompt,
            "output_token_count": output,
            "total_token_count": prompt + output,
        }
        return self.record("system", subtype="ui_telemetry", systemPayload={"uiEvent": event})

    def part(self, block: dict) -> dict:
        kind = block.get("type")
        if kind == "tool_use":
            name = QWEN_TOOLS.get(block["name"], block["name"])
            call = {"id": "call_" + block["id"][8:], "name": name, "args": block["input"]}
            return {"functionCall": call}
        if kind == "thinking":
            return {"text": block["thinking"], "thought": True}
        return {"text": block["text"]}

    def convert(self, record: dict, names: dict[str, str]) -> Iterator[dict]:
        content = record["content"]
        if record["role"] == "assistant":
            parts = [self.part(b) for b in content]
            names.update(
                (p["functionCall"]["id"], p["functionCall"]["name"]) for p in parts if "functionCall" in p
            )
            prompt, output = self.rng.randint(10_000, 200_000), self.rng.randint(1, 2000)
            usage = {
                "promptTokenCount": prompt,
                "candidatesTokenCount": output,
                "thoughtsTokenCount": 0,
                "totalTokenCount": prompt + output,
                "cachedContentTokenCount": prompt // 2,
            }
            message = {"role": "model", "parts": parts}
            yield self.telemetry(prompt, output)
            yield self.record("assistant", model=_QWEN_MODEL, message=message, usageMetadata=usage,
                              contextWindowSize=1_000_000)  # fmt: skip
            return
        if isinstance(content, str):
            yield self.record("user", message={"role": "user", "parts": [{"text": content}]})
            return
        for block in content:
            call_id = "call_" + block["tool_use_id"][8:]
            name = names.get(call_id, "unknown")
            result = block["content"]
            text = result if isinstance(result, str) else "\n".join(b["text"] for b in result)
            failed = block.get("is_error") is True
            body = {"error": text} if failed else {"output": text}
            response = {"id": call_id, "name": name, "response": body}
            display = "" if name == "read_file" else text
            copy = {"callId": call_id, "status": "error" if failed else "success", "resultDisplay": display}
            message = {"role": "user", "parts": [{"functionResponse": response}]}
            yield self.record("tool_result", message=message, toolCallResult=copy)

    def records(self) -> Iterator[dict]:
        snapshot = {"type": "attribution-snapshot", "version": 1, "surface": "cli", "fileStates": {}}
        yield self.record("system", subtype="attribution_snapshot", systemPayload={"snapshot": snapshot})
        names: dict[str, str] = {}
        for record in super().records():
            yield from self.convert(record, names)


# GitHub Copilot CLI's own tools for the ones the Anthropic-shaped turns call; its view is preserved.
COPILOT_TOOLS = {
    "Bash": "bash",
    "Read": "view",
    "Write": "create",
    "Edit": "edit",
    "Grep": "grep",
    "Glob": "glob",
    "TodoWrite": "update_todo",
    "WebFetch": "web_fetch",
    "Task": "task",
}
_COPILOT_MODEL = "claude-sonnet-4.5"


class _CopilotMaker(_Maker):
    """A Copilot CLI events.jsonl: `{type, data, id, timestamp, parentId}` events. Each assistant message
    carries its `toolRequests`; each call has a `tool.execution_start` and a `tool.execution_complete` whose
    `result.content` is what the model is sent and `detailedContent` the UI's copy (a failure: `success`
    false and `error.message`), a successful one preceded by a postToolUse hook's `hook.start` (with its
    copy of the result) and `hook.end`; turns are framed by `assistant.turn_start`/`turn_end` and usage
    records."""

    def __init__(self, dialect: str, seed: int) -> None:
        super().__init__("anthropic", seed)
        self.leaf: str | None = None
        self.turn_number = 0

    def event(self, kind: str, fields: dict) -> dict:
        own = self.uuid()
        record = {"type": kind, "data": fields, "id": own, "timestamp": self.tick(), "parentId": self.leaf}
        self.leaf = own
        return record

    def request(self, block: dict) -> dict:
        name = COPILOT_TOOLS.get(block["name"], block["name"])
        arguments = dict(block["input"])
        if "file_path" in arguments:
            arguments["path"] = arguments.pop("file_path")
        return {"toolCallId": block["id"], "name": name, "arguments": arguments, "type": "function"}

    def convert(self, record: dict, calls: dict[str, dict]) -> Iterator[dict]:
        content = record["content"]
        turn = str(self.turn_number)
        if record["role"] == "assistant":
            self.turn_number += 1
            yield self.event("assistant.turn_start", {"turnId": turn})
            usage = {
                "model": _COPILOT_MODEL,
                "inputTokens": self.rng.randint(10_000, 200_000),
                "outputTokens": self.rng.randint(1, 2000),
                "cacheReadTokens": self.rng.randint(1000, 150_000),
                "cacheWriteTokens": 0,
                "interactionType": "conversation-agent",
            }
            yield self.event("session.usage_record", {"usage": usage})
            text = "\n".join(b["text"] for b in content if b["type"] == "text")
            requests = [self.request(b) for b in content if b["type"] == "tool_use"]
            fields = {"messageId": self.uuid(), "model": _COPILOT_MODEL, "content": text}
            reasoning = [b["thinking"] for b in content if b["type"] == "thinking"]
            if reasoning:
                fields["reasoningText"] = reasoning[0]
            fields.update(toolRequests=requests, turnId=turn)
            yield self.event("assistant.message", fields)
            for request in requests:
                calls[request["toolCallId"]] = request
                start = {"toolCallId": request["toolCallId"], "toolName": request["name"]}
                start.update(arguments=request["arguments"], turnId=turn)
                yield self.event("tool.execution_start", start)
            if not requests:
                yield self.event("assistant.turn_end", {"turnId": turn})
            return
        if isinstance(content, str):
            words = {"content": content}
            words["transformedContent"] = f"<current_datetime>{self.tick()}</current_datetime>\n\n{content}"
            words.update(attachments=[], interactionId=self.uuid())
            yield self.event("user.message", words)
            return
        for block in content:
            request = calls.pop(block["tool_use_id"], {"name": "unknown"})
            result = block["content"]
            text = result if isinstance(result, str) else "\n".join(b["text"] for b in result)
            fields = {"toolCallId": block["tool_use_id"], "model": _COPILOT_MODEL, "turnId": turn}
            if block.get("is_error") is True:
                fields.update(success=False, error={"message": text, "code": "failure"})
            else:
                detail = text if request["name"] in ("bash", "view") else self.slice(300)
                fields.update(success=True, result={"content": text, "detailedContent": detail})
                # A postToolUse hook's run, given a copy of the result (whole, as Copilot 1.0.10 writes it).
                hook = {"toolName": request["name"], "toolArgs": request.get("arguments", {})}
                hook["toolResult"] = {"textResultForLlm": text, "resultType": "success", "sessionLog": detail}
                invocation = {"hookInvocationId": self.uuid(), "hookType": "postToolUse"}
                yield self.event("hook.start", {**invocation, "input": hook})
                yield self.event("hook.end", {**invocation, "success": True})
            yield self.event("tool.execution_complete", fields)
        yield self.event("assistant.turn_end", {"turnId": turn})

    def records(self) -> Iterator[dict]:
        start = {
            "sessionId": self.session,
            "version": 1,
            "producer": "copilot-agent",
            "copilotVersion": "1.0.102",
            "startTime": self.tick(),
            "selectedModel": _COPILOT_MODEL,
            "context": {"cwd": self.cwd},
            "alreadyInUse": False,
        }
        yield self.event("session.start", start)
        yield self.event("system.message", {"role": "system", "content": self.sentence(3000, 9000)})
        calls: dict[str, dict] = {}
        for record in super().records():
            yield from self.convert(record, calls)


# Gemini CLI's own tools for the ones the Anthropic-shaped turns call; its read_file is preserved.
GEMINI_TOOLS = {
    "Bash": "run_shell_command",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "replace",
    "Grep": "grep_search",
    "Glob": "glob",
    "TodoWrite": "write_todos",
    "WebFetch": "web_fetch",
    "Task": "codebase_investigator",
}
_GEMINI_MODEL = "gemini-3-flash-preview"


class _GeminiMaker(_Maker):
    """A Gemini CLI session (JSONL): the header, then message records upserted by `id`, each followed by a
    `{"$set": {"lastUpdated"}}` patch. A model turn is written when its stream ends and again, under the
    same id, with its `toolCalls` and their results (functionResponse parts, `resultDisplay` for the UI);
    a failed call answers `{"error": ...}`; `info` notices now and then."""

    def __init__(self, dialect: str, seed: int) -> None:
        super().__init__("anthropic", seed)
        self.calls = 0

    def patch(self) -> dict:
        return {"$set": {"lastUpdated": self.tick()}}

    def model_turn(self, content: list) -> dict:
        thoughts = [
            {"subject": self.sentence(10, 40), "description": b["thinking"], "timestamp": self.tick()}
            for b in content
            if b["type"] == "thinking"
        ]
        prompt, output = self.rng.randint(10_000, 200_000), self.rng.randint(1, 2000)
        tokens = {"input": prompt, "output": output, "cached": prompt // 2, "thoughts": 0, "tool": 0}
        tokens["total"] = prompt + output
        text = "\n".join(b["text"] for b in content if b["type"] == "text")
        record = {"id": self.uuid(), "timestamp": self.tick(), "type": "gemini", "content": text}
        record.update(thoughts=thoughts, tokens=tokens, model=_GEMINI_MODEL)
        return record

    def tool_call(self, use: dict, answer: dict) -> dict:
        self.calls += 1
        name = GEMINI_TOOLS.get(use["name"], use["name"])
        call_id = f"{name}_{1764496800000 + self.calls}_0"
        result = answer["content"]
        text = result if isinstance(result, str) else "\n".join(b["text"] for b in result)
        failed = answer.get("is_error") is True
        body = {"error": text} if failed else {"output": text}
        response = {"functionResponse": {"id": call_id, "name": name, "response": body}}
        call = {"id": call_id, "name": name, "args": use["input"], "result": [response]}
        call.update(status="error" if failed else "success", timestamp=self.tick(), resultDisplay=text)
        return call

    def records(self) -> Iterator[dict]:
        header = {"sessionId": self.session, "projectHash": f"{self.rng.getrandbits(256):064x}"}
        header.update(startTime=self.tick(), lastUpdated=self.tick(), kind="main")
        yield header
        pending: dict | None = None  # a model turn with calls, written again when they are answered
        for record in super().records():
            content = record["content"]
            if record["role"] == "assistant":
                pending = self.model_turn(content)
                yield pending
                yield self.patch()
                uses = [b for b in content if b["type"] == "tool_use"]
                pending["uses"] = uses
                if not uses:
                    pending = None
                continue
            if isinstance(content, str):
                if self.rng.random() < 0.1:
                    notice = {"id": self.uuid(), "timestamp": self.tick(), "type": "info"}
                    notice["content"] = self.sentence(30, 120)
                    yield notice
                yield {
                    "id": self.uuid(),
                    "timestamp": self.tick(),
                    "type": "user",
                    "content": [{"text": content}],
                }
                yield self.patch()
                continue
            uses = pending.pop("uses")
            answers = {b["tool_use_id"]: b for b in content}
            pending["toolCalls"] = [self.tool_call(use, answers[use["id"]]) for use in uses]
            yield pending
            yield self.patch()
            pending = None


# Tool names a coding agent on the Chat Completions API would give the Anthropic-shaped turns' tools.
OPENAI_TOOLS = {
    "Bash": "bash",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "Grep": "grep",
    "Glob": "glob",
    "TodoWrite": "todo",
    "WebFetch": "web_fetch",
    "Task": "task",
}


class _OpenAIMaker(_Maker):
    """An OpenAI Chat Completions log: a system message, then user, assistant (`tool_calls` with JSON
    `arguments`, content null when it only calls) and one `tool` message per result."""

    def __init__(self, dialect: str, seed: int) -> None:
        super().__init__("anthropic", seed)

    def records(self) -> Iterator[dict]:
        yield {"role": "system", "content": self.sentence(2000, 8000)}
        for record in super().records():
            content = record["content"]
            if record["role"] == "assistant":
                text = "\n".join(b["text"] for b in content if b["type"] == "text")
                calls = [
                    {
                        "id": "call_" + b["id"][8:],
                        "type": "function",
                        "function": {
                            "name": OPENAI_TOOLS.get(b["name"], b["name"]),
                            "arguments": json.dumps(b["input"], ensure_ascii=False),
                        },
                    }
                    for b in content
                    if b["type"] == "tool_use"
                ]
                message: dict = {"role": "assistant", "content": text or None}
                if calls:
                    message["tool_calls"] = calls
                yield message
            elif isinstance(content, str):
                yield {"role": "user", "content": content}
            else:
                for block in content:
                    result = block["content"]
                    text = result if isinstance(result, str) else "\n".join(b["text"] for b in result)
                    yield {
                        "role": "tool",
                        "content": text,
                        "tool_call_id": "call_" + block["tool_use_id"][8:],
                    }


def generate(
    path: Path,
    mb: float,
    dialect: str,
    seed: int = 1,
    style: str = "compact",
    results: int = 0,
    outputs: tuple[int, int] | None = None,
) -> int:
    """Write about `mb` MB (10**6 bytes) of transcript to `path`, or, with `results`, until that many tool
    results are written (`mb` then ignored); returns the number of lines. `outputs`: the (shortest,
    longest) tool output, drawn log-uniform between them (default 200 B .. 20 KB)."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {DIALECTS}")
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}")
    target = int(mb * 1_000_000)
    makers = {
        "codex": _CodexMaker,
        "pi": _PiMaker,
        "qwen-code": _QwenMaker,
        "copilot": _CopilotMaker,
        "gemini-cli": _GeminiMaker,
        "openai": _OpenAIMaker,
    }
    maker = makers.get(dialect, _Maker)(dialect, seed)
    if outputs is not None:
        maker.output_range = outputs
    written = lines = 0
    with open(path, "wb") as out:
        for record in maker.records():
            if style == "spaced":
                raw = json.dumps(record).encode("utf-8") + b"\n"
            else:
                raw = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            out.write(raw)
            written += len(raw)
            lines += 1
            if (maker.result_count >= results) if results else written >= target:
                break
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=100.0, help="size in MB (10**6 bytes)")
    parser.add_argument("--dialect", choices=DIALECTS, default="claude-code")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--style", choices=STYLES, default="compact")
    parser.add_argument("--results", type=int, default=0, help="instead of --mb: stop after N tool results")
    parser.add_argument(
        "--outputs", default="200:20000", help="LOW:HIGH tool output length, log-uniform (200:20000)"
    )
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    low, high = (int(part) for part in args.outputs.split(":"))
    lines = generate(args.output, args.mb, args.dialect, args.seed, args.style, args.results, (low, high))
    print(f"{args.output}: {args.output.stat().st_size:,} bytes, {lines:,} lines")


if __name__ == "__main__":
    main()
