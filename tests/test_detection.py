"""Strict detection: a file in no dialect compactcli reads is refused by every command (exit 65)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from helpers.cli import invoke

from compactcli import dialects
from compactcli.core.errors import BadInput
from compactcli.pipelines.transcript import detect_dialect

FORMATS = Path(__file__).parent / "fixtures" / "formats"

# fixture -> the format the refusal must name (None: no format is recognised; the keys are named)
UNKNOWN = {
    "gemini-stream.jsonl": "Gemini CLI stream-json",
    "gemini-messages-only.jsonl": "Gemini CLI stream-json",
    "managed-agents-events.jsonl": "Claude Managed Agents event log",
    "gemini-session-document.jsonl": "an older Gemini CLI session",
    "json-array.jsonl": "a JSON array, not JSONL",
    "pretty-array.jsonl": "a JSON array, not JSONL",
    "pretty-document.jsonl": "a pretty-printed JSON document",
    "unknown-records.jsonl": None,
}
if "copilot" not in dialects.NAMES:
    UNKNOWN["copilot-events.jsonl"] = "a GitHub Copilot CLI session"
if "codex" not in dialects.NAMES:
    UNKNOWN["codex-rollout.jsonl"] = "Codex CLI rollout"

COMMANDS = {
    "micro": ["micro"],
    "summarize": ["summarize", "--backend", "digest"],
    "estimate": ["estimate"],
    "validate": ["validate"],
    "replay": ["replay", "--backend", "digest", "--quiet"],
}


@pytest.mark.parametrize("on_invalid", ["error", "keep"])
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("fixture", UNKNOWN)
def test_every_command_refuses_a_file_in_no_dialect(fixture, command, on_invalid, tmp_path):
    path = tmp_path / fixture
    shutil.copyfile(FORMATS / fixture, path)
    before = path.read_bytes()
    result = invoke(*COMMANDS[command], "--on-invalid", on_invalid, path)
    assert result.exit_code == 65, result.output
    assert f"{path}:1: not a transcript compactcli reads" in result.stderr
    assert "dialects read: anthropic, claude-code, openai" in result.stderr
    named = UNKNOWN[fixture]
    if named is None:
        assert "its first record has keys {event, at}" in result.stderr
    else:
        assert named in result.stderr
    assert path.read_bytes() == before
    assert list(tmp_path.rglob("*.jsonl")) == [path], "nothing archived or written"


def test_record_keys_and_type_are_named():
    with pytest.raises(BadInput, match=r"keys \{event, at\}"):
        detect_dialect(open(FORMATS / "unknown-records.jsonl", "rb"), "x.jsonl")


def test_a_pi_session_is_read_as_pi():
    assert detect_dialect(open(FORMATS / "pi-session.jsonl", "rb"), "pi.jsonl") == "pi"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        # plain text messages fit anthropic and openai: anthropic, as before
        ([b'{"role":"user","content":"hi"}', b'{"role":"assistant","content":"hello"}'], "anthropic"),
        # a later record proves the dialect
        ([b'{"role":"user","content":"hi"}', b'{"role":"tool","tool_call_id":"c","content":"x"}'], "openai"),
        ([b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}'], "anthropic"),
        # Claude Code: a known record type, or an unknown one carrying sessionId
        ([b'{"type":"summary","summary":"s","leafUuid":"u"}'], "claude-code"),
        ([b'{"type":"new-kind-of-record","sessionId":"s"}'], "claude-code"),
        # a torn first line is left to --on-invalid; the next record decides
        ([b'{"type":"user","message":{"role":"us', b'{"type":"user","sessionId":"s"}'], "claude-code"),
        # empty and blank files hold nothing to misread
        ([], "anthropic"),
        ([b"", b"  "], "anthropic"),
    ],
)
def test_detected_dialect(lines, expected):
    assert detect_dialect(io.BytesIO(b"".join(line + b"\n" for line in lines))) == expected


# Fixtures of formats a dialect reads now: every command reads them in it.
READ = {"qwen-session.jsonl": "qwen-code"}


@pytest.mark.parametrize("fixture", READ)
def test_a_fixture_of_a_read_format_is_read_in_its_dialect(fixture):
    with open(FORMATS / fixture, "rb") as source:
        assert detect_dialect(source, fixture) == READ[fixture]


def test_a_copilot_cli_session_is_read_and_its_look_alikes_are_not(tmp_path):
    """Copilot's events prove the dialect; Managed Agents events (no `data`, no `parentId`) stay refused."""
    path = tmp_path / "events.jsonl"
    shutil.copyfile(FORMATS / "copilot-events.jsonl", path)
    result = invoke("validate", "--json", path)
    assert result.exit_code == 0, result.output
    assert '"dialect": "copilot"' in result.output
    result = invoke("validate", FORMATS / "managed-agents-events.jsonl")
    assert result.exit_code == 65 and "Claude Managed Agents event log" in result.stderr
    event = b'{"type":"user.message","data":{"content":"hi"},"id":"e1","timestamp":"t"}'  # no parentId
    with pytest.raises(BadInput, match="Claude Managed Agents"):
        detect_dialect(io.BytesIO(event + b"\n"), "x.jsonl")


def test_a_file_of_text_lines_is_refused():
    with pytest.raises(BadInput, match=r"notes.jsonl:1: no line in the first 2000 is a JSON object"):
        detect_dialect(io.BytesIO(b"hello\nworld\n"), "notes.jsonl")


def test_a_first_record_no_dialect_fits_is_refused_even_if_later_ones_fit():
    data = b'{"kind":"header"}\n{"role":"user","content":"hi"}\n'
    with pytest.raises(BadInput, match=r"x.jsonl:1: .*keys \{kind\}"):
        detect_dialect(io.BytesIO(data), "x.jsonl")
