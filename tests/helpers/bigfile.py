"""Deterministic transcripts of any size, with the bytes `compactcli micro` must turn them into.

Stdlib only, so it also runs as a script in child processes:

    python tests/helpers/bigfile.py OUT.jsonl --dialect claude-code --turns 3000 --result-chars 8000

Every turn is one tool call and its result, so the number of results is known before the first
line is written; that is what lets `generate` say, line by line, what micro with its default
options (keep 3, min-chars 100, preserve read_file and Read, placeholder
"[Previous: used {tool_name}]") must write, without asking compactcli. Lines are compact JSON with
non-ASCII kept as UTF-8, the form that orjson and the stdlib both re-serialize identically.
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

DIALECTS = ("anthropic", "anthropic-repr", "claude-code", "openai")
KEEP = 3
MIN_CHARS = 100
PRESERVED = ("read_file",)
PLACEHOLDER = "[Previous: used {tool_name}]"
TOOLS = ("bash", "grep", "edit_file", "read_file", "web_fetch")
SHORT_EVERY = 7  # every 7th result is short enough to be kept whatever its age
# Words that exercise escaping: quotes, backslashes, tabs, multi-byte and astral characters.
_WORDS = (
    "build test ok error warning file line path src main def class return import value "
    'café naïve 日本語 🚀 "quoted" C:\\temp\\x tab\there über résumé ✓'
).split(" ")


def _dumps(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _Text:
    """Cheap deterministic text: slices of one pseudo-random pool."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        lines = []
        for _ in range(2000):
            lines.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14))))
        self.pool = "\n".join(lines)

    def take(self, chars: int) -> str:
        start = self.rng.randrange(0, len(self.pool) - chars) if chars < len(self.pool) else 0
        out = self.pool[start : start + chars]
        while len(out) < chars:
            out += "\n" + self.pool[: chars - len(out) - 1]
        return out


def _repr_tool_use(call_id: str, name: str, command: str) -> str:
    """The Python repr the reference tutorial agent stores for an SDK ToolUseBlock."""
    return (
        f"ToolUseBlock(id={call_id!r}, caller=None, input={{'command': {command!r}}}, "
        f"name={name!r}, type='tool_use')"
    )


def _records(dialect: str, rng: random.Random, i: int, ids: dict) -> tuple[dict, dict]:
    """The record with tool call `i` and the record for its result (its content comes later)."""
    name = ids["names"][i]
    command = f"step {i}"
    if dialect == "openai":
        call_id = f"call_{rng.getrandbits(64):016x}"
        use = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"command": command})},
                }
            ],
        }
        return use, {"role": "tool", "tool_call_id": call_id, "content": None}
    call_id = f"toolu_{rng.getrandbits(64):016x}"
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {"command": command}}
    text = {"type": "text", "text": f"Running {name} for step {i}."}
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": None}],
    }
    if dialect == "anthropic":
        return {"role": "assistant", "content": [text, block]}, result
    if dialect == "anthropic-repr":
        blocks = [
            f"TextBlock(citations=None, text={text['text']!r}, type='text')",
            _repr_tool_use(call_id, name, command),
        ]
        return {"role": "assistant", "content": blocks}, result
    # claude-code: records around the API messages, linked by parentUuid.
    use_uuid, result_uuid = (str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(2))
    common = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/project"}
    use = {
        "parentUuid": ids["last_uuid"],
        **common,
        "sessionId": ids["session"],
        "version": "2.1.6",
        "type": "assistant",
        "message": {
            "id": f"msg_{rng.getrandbits(64):016x}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [text, block],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1000 + i, "output_tokens": 40},
        },
        "uuid": use_uuid,
        "timestamp": f"2026-01-02T03:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
    }
    record = {
        "parentUuid": use_uuid,
        **common,
        "sessionId": ids["session"],
        "version": "2.1.6",
        "type": "user",
        "message": {"role": "user", "content": result["content"]},
        "uuid": result_uuid,
        "timestamp": use["timestamp"],
        "toolUseResult": None,
    }
    ids["last_uuid"] = result_uuid
    return use, record


def _set_result(dialect: str, record: dict, content: str, *, ui_copy: bool) -> None:
    if dialect == "openai":
        record["content"] = content
        return
    if dialect == "claude-code":
        record["message"]["content"][0]["content"] = content
        if ui_copy:
            record["toolUseResult"] = {"stdout": content, "stderr": "", "interrupted": False}
        else:
            del record["toolUseResult"]
        return
    record["content"][0]["content"] = content


def _opening(dialect: str, ids: dict) -> list[dict]:
    task = "Fix the failing build, then run the tests."
    if dialect == "openai":
        return [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": task},
        ]
    if dialect == "claude-code":
        first = str(uuid.UUID(int=ids["rng"].getrandbits(128)))
        ids["last_uuid"] = first
        return [
            {"type": "summary", "summary": "Build fix", "leafUuid": first},
            {
                "parentUuid": None,
                "isSidechain": False,
                "sessionId": ids["session"],
                "type": "user",
                "message": {"role": "user", "content": task},
                "uuid": first,
                "timestamp": "2026-01-02T03:00:00.000Z",
            },
        ]
    return [{"role": "user", "content": task}]


def generate(
    dialect: str = "anthropic", *, turns: int = 10, result_chars: int = 2000, seed: int = 0
) -> Iterator[tuple[bytes, bytes]]:
    """(original line, line after `compactcli micro` with default options), in file order."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; one of {', '.join(DIALECTS)}")
    rng = random.Random(f"{dialect}:{seed}")
    text = _Text(rng)
    ids = {
        "rng": rng,
        "session": str(uuid.UUID(int=rng.getrandbits(128))),
        "last_uuid": None,
        "names": [rng.choice(TOOLS) for _ in range(turns)],
    }
    for record in _opening(dialect, ids):
        line = _dumps(record)
        yield line, line
    for i in range(turns):
        use, result = _records(dialect, rng, i, ids)
        line = _dumps(use)
        yield line, line
        short = i % SHORT_EVERY == SHORT_EVERY - 1
        chars = rng.randint(20, MIN_CHARS) if short else rng.randint(result_chars // 2, result_chars * 3 // 2)
        content = f"$ {ids['names'][i]} step {i}\n" + text.take(max(chars - 20, 1))
        _set_result(dialect, result, content, ui_copy=True)
        original = _dumps(result)
        name = ids["names"][i]
        cleared = i < turns - KEEP and len(content) > MIN_CHARS and name not in PRESERVED
        if cleared:
            _set_result(dialect, result, PLACEHOLDER.replace("{tool_name}", name), ui_copy=False)
            yield original, _dumps(result)
        else:
            yield original, original
        if i % 10 == 9:
            plain = _plain(dialect, f"Progress note {i}: {text.take(60)}")
            line = _dumps(plain)
            yield line, line


def _plain(dialect: str, words: str) -> dict:
    if dialect == "claude-code":
        return {"type": "system", "subtype": "informational", "content": words, "level": "info"}
    return {"role": "assistant", "content": words}


def write(
    path: Path,
    dialect: str = "anthropic",
    *,
    turns: int = 10,
    result_chars: int = 2000,
    seed: int = 0,
    expected: Path | None = None,
) -> tuple[bytes, bytes]:
    """Write the transcript (and, if asked, the expected micro result); return both as bytes."""
    pairs = list(generate(dialect, turns=turns, result_chars=result_chars, seed=seed))
    original = b"".join(a for a, _ in pairs)
    after = b"".join(b for _, b in pairs)
    Path(path).write_bytes(original)
    if expected is not None:
        Path(expected).write_bytes(after)
    return original, after


def turns_for(target_bytes: int, result_chars: int) -> int:
    """About how many turns give a file of `target_bytes` (results dominate the size)."""
    return max(KEEP + 1, target_bytes // (result_chars + 700))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--dialect", choices=DIALECTS, default="anthropic")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--result-chars", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--expected", type=Path, help="also write the expected micro result here")
    args = parser.parse_args(argv)
    write(
        args.path,
        args.dialect,
        turns=args.turns,
        result_chars=args.result_chars,
        seed=args.seed,
        expected=args.expected,
    )


if __name__ == "__main__":
    main()
