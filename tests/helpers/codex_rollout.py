"""A small Codex CLI rollout written for these tests (a made-up session on a made-up CLI, "tally").

It has what real rollouts have: session_meta with base_instructions, turn_context, parallel
function calls answered out of order, UI copies of outputs (exec_command_end, patch_apply_end), a
custom tool call (apply_patch), a read_file call, an aborted turn whose last call has no output, a
user message with an input_image, a view_image output with an image, token_count events, and a
recorded local compaction (compacted + context_compacted), followed by one more turn.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

SESSION = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CWD = "/home/dev/tally"
TURN_1, TURN_2, TURN_3, TURN_4 = (f"0199a1b2-0000-7000-8000-00000000000{n}" for n in range(1, 5))
BASE_INSTRUCTIONS = (
    "You are a coding agent running in a terminal. Read the code before changing it, keep changes small, "
    "run the tests after each change and say plainly what you did and what is left.\n" * 12
)
SUMMARY = (
    "The user wants `tally --json`. cli.py now has the flag and tests/test_cli.py covers it; "
    "two tests failed on the trailing newline and were fixed. Next: document the flag in README."
)


def png(width: int = 2, height: int = 2) -> str:
    """A real (tiny) PNG as a data URL."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height)))
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(data).decode()


def _at(second: int) -> str:
    return f"2026-05-04T09:{second // 60:02d}:{second % 60:02d}.{second * 7 % 1000:03d}Z"


class _Rollout:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def add(self, kind: str, payload: dict) -> None:
        self.records.append({"timestamp": _at(len(self.records)), "type": kind, "payload": payload})

    def item(self, payload: dict) -> None:
        self.add("response_item", payload)

    def event(self, payload: dict) -> None:
        self.add("event_msg", payload)

    def text(self, role: str, text: str, *extra: dict) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        self.item({"type": "message", "role": role, "content": [{"type": kind, "text": text}, *extra]})

    def call(self, call_id: str, name: str, **arguments: object) -> None:
        self.item(
            {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}
        )

    def output(self, call_id: str, output: object) -> None:
        self.item({"type": "function_call_output", "call_id": call_id, "output": output})

    def exec_end(self, call_id: str, turn: str, command: str, output: str) -> None:
        self.event(
            {
                "type": "exec_command_end",
                "call_id": call_id,
                "turn_id": turn,
                "command": ["/bin/bash", "-lc", command],
                "cwd": CWD,
                "parsed_cmd": [{"type": "unknown", "cmd": command}],
                "source": "unified_exec_startup",
                "stdout": "",
                "stderr": "",
                "aggregated_output": output,
                "exit_code": 0,
                "duration": {"secs": 0, "nanos": 120000000},
                "formatted_output": output,
                "status": "completed",
            }
        )

    def tokens(self, given: int, output: int) -> None:
        usage = {
            "input_tokens": given,
            "cached_input_tokens": given // 2,
            "output_tokens": output,
            "reasoning_output_tokens": output // 4,
            "total_tokens": given + output,
        }
        info = {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 272000}
        self.event({"type": "token_count", "info": info, "rate_limits": None})

    def reasoning(self, summary: str) -> None:
        self.item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": summary}],
                "content": None,
                "encrypted_content": "gAAAAAB" + "x9Qz" * 40,
            }
        )

    def turn_context(self, turn: str) -> None:
        self.add(
            "turn_context",
            {
                "turn_id": turn,
                "cwd": CWD,
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write", "network_access": False},
                "model": "gpt-5-codex",
                "effort": "medium",
                "summary": "auto",
            },
        )


def _listing(name: str, lines: int) -> str:
    return "".join(
        f"{name}:{n}: def handler_{n}(args):  # parses the {n}th option\n" for n in range(1, lines)
    )


DEVELOPER = (
    "<permissions instructions>\nFilesystem sandboxing: workspace-write. Network access is restricted. "
    "Ask before running commands outside the workspace.\n</permissions instructions>"
)
ENVIRONMENT = f"<environment_context>\n  <cwd>{CWD}</cwd>\n  <shell>bash</shell>\n</environment_context>"
ASK_1 = "Add a --json flag to tally so that it prints the counts as a JSON object."
ASK_2 = "Here is what the terminal shows now:"
ASK_3 = "Now document --json in the README."


def records() -> list[dict]:
    r = _Rollout()
    r.add(
        "session_meta",
        {
            "id": SESSION,
            "timestamp": _at(0),
            "cwd": CWD,
            "originator": "codex_cli_rs",
            "cli_version": "0.122.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": BASE_INSTRUCTIONS},
        },
    )
    r.event({"type": "task_started", "turn_id": TURN_1, "model_context_window": 272000})
    r.text("developer", DEVELOPER)
    r.text("user", ENVIRONMENT)
    r.turn_context(TURN_1)
    r.text("user", ASK_1)
    r.event({"type": "user_message", "message": ASK_1, "images": [], "local_images": [], "text_elements": []})
    r.event({"type": "token_count", "info": None, "rate_limits": None})
    r.reasoning("Looking at how tally prints its counts")
    r.event({"type": "agent_message", "message": "I'll read the CLI and its tests first."})
    r.text("assistant", "I'll read the CLI and its tests first.")
    # Three calls in parallel; outputs and their UI copies come back in another order.
    r.call("call_grep", "exec_command", cmd="rg -n 'def ' tally", workdir=CWD)
    r.call("call_read", "read_file", file_path=f"{CWD}/tally/cli.py")
    r.call("call_ls", "exec_command", cmd="ls tests", workdir=CWD)
    r.tokens(6100, 240)
    grep = "Chunk ID: 1a2b3c\nProcess exited with code 0\nOutput:\n" + _listing("tally/cli.py", 40)
    cli = "".join(f"{n:>4}\tdef count_{n}(words):\n" for n in range(1, 60))
    r.exec_end("call_ls", TURN_1, "ls tests", "test_cli.py\n")
    r.exec_end("call_grep", TURN_1, "rg -n 'def ' tally", grep)
    r.output("call_ls", "Chunk ID: 4d5e6f\nProcess exited with code 0\nOutput:\ntest_cli.py\n")
    r.output("call_read", cli)
    r.output("call_grep", grep)
    r.reasoning("Adding the flag next to --words")
    patch = (
        "*** Begin Patch\n*** Update File: tally/cli.py\n@@\n-    print(counts)\n"
        "+    emit(counts, args.json)\n*** End Patch\n"
    )
    r.item(
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": "call_patch",
            "name": "apply_patch",
            "input": patch,
        }
    )
    r.tokens(9800, 310)
    applied = "Success. Updated the following files:\nM tally/cli.py\n"
    r.event(
        {
            "type": "patch_apply_end",
            "call_id": "call_patch",
            "turn_id": TURN_1,
            "stdout": applied,
            "stderr": "",
            "success": True,
            "changes": {f"{CWD}/tally/cli.py": {"type": "update", "unified_diff": patch, "move_path": None}},
            "status": "completed",
        }
    )
    r.item(
        {
            "type": "custom_tool_call_output",
            "call_id": "call_patch",
            "output": json.dumps({"output": applied, "metadata": {"exit_code": 0, "duration_seconds": 0.1}}),
        }
    )
    r.call("call_test", "exec_command", cmd="pytest -q", workdir=CWD)
    r.tokens(10400, 90)
    failing = (
        "Chunk ID: 7a8b9c\nProcess exited with code 1\nOutput:\n"
        + "F" * 2
        + "." * 30
        + "\n"
        + ("E   AssertionError: expected '{\"words\": 3}' but got '{\"words\": 3}\\n'\n" * 6)
    )
    r.exec_end("call_test", TURN_1, "pytest -q", failing)
    r.output("call_test", failing)
    # The user interrupts while the next command runs: its call never gets an output.
    r.call("call_rerun", "exec_command", cmd="pytest -q -x", workdir=CWD)
    r.tokens(11900, 60)
    r.event({"type": "turn_aborted", "turn_id": TURN_1, "reason": "interrupted"})
    # Turn 2: a pasted screenshot, then a view_image call whose output is an image.
    r.turn_context(TURN_2)
    screenshot = png(3, 2)
    r.text("user", ASK_2, {"type": "input_image", "image_url": screenshot})
    r.event({"type": "user_message", "message": ASK_2, "images": [screenshot], "local_images": []})
    r.call("call_view", "view_image", path=f"{CWD}/out.png")
    r.tokens(12800, 70)
    r.output("call_view", [{"type": "input_image", "image_url": png(4, 4)}])
    r.event({"type": "agent_message", "message": "The trailing newline is fixed; tests pass."})
    r.text("assistant", "The trailing newline is fixed; tests pass.")
    r.tokens(13900, 120)
    r.event(
        {"type": "task_complete", "turn_id": TURN_2, "last_agent_message": "The trailing newline is fixed."}
    )
    # A local compaction (/compact), as Codex writes it.
    r.turn_context(TURN_3)
    history = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": DEVELOPER}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ENVIRONMENT}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ASK_1}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ASK_2}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": SUMMARY}]},
    ]
    r.add("compacted", {"message": SUMMARY, "replacement_history": history})
    r.event({"type": "context_compacted"})
    usage = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0}
    r.event({"type": "token_count", "info": {"last_token_usage": {**usage, "total_tokens": 1500}}})
    # Turn 4, after the compaction.
    r.turn_context(TURN_4)
    r.text("user", ASK_3)
    r.event({"type": "user_message", "message": ASK_3, "images": [], "local_images": []})
    r.call("call_readme", "exec_command", cmd="sed -n '1,80p' README.md", workdir=CWD)
    r.tokens(2400, 80)
    readme = (
        "Chunk ID: 0f1e2d\nProcess exited with code 0\nOutput:\n# tally\n\nCounts words, lines and bytes.\n"
        * 3
    )
    r.exec_end("call_readme", TURN_4, "sed -n '1,80p' README.md", readme)
    r.output("call_readme", readme)
    r.text("assistant", "README now documents --json with an example.")
    r.tokens(3300, 150)
    r.event({"type": "task_complete", "turn_id": TURN_4, "last_agent_message": "README documents --json."})
    return r.records


def dumps(records_: list[dict]) -> bytes:
    """As Codex writes them: compact JSON, one record a line, non-ASCII kept."""
    return b"".join(
        json.dumps(x, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for x in records_
    )


def write(path: Path, records_: list[dict] | None = None) -> Path:
    path.write_bytes(dumps(records() if records_ is None else records_))
    return path
