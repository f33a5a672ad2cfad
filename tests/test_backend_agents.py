"""`summarize --backend claude-code` and `--backend codex`: the real agent CLIs from npm (the versions
.ci/run pins; tests/helpers/agents.py finds them, and these tests skip saying how to get them) write the
summary, pointed at the loopback fakes the agent tier runs: the Messages API (tests/helpers/fakeapi.py)
for Claude Code, the Responses API (tests/helpers/fakeresponses.py) for Codex. What those servers
received is checked: the prompt, redacted; no tools for Claude Code; nothing saved as a session."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.agents import agent_env, require_agent
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic, Reply
from helpers.fakeresponses import FakeResponses, input_text, message

from compactcli.layers.summarize import SYSTEM_PROMPT

OK, UNAVAILABLE = 0, 69
KEY = "sk-ant-api03-" + "Q9w8E7r6" * 6
GITHUB = "ghp_" + "Zq7xW2" * 6
TASK = "Port the CSV loader in tally/ledger.py to the csv module and keep the tests green."
PREFIX = re.compile(
    r"^\[Conversation compressed\. Transcript: (?P<path>[^\]]+)\]\n\n(?P<summary>.*)$", re.DOTALL
)


def write_transcript(path: Path) -> bytes:
    records = [
        {"role": "user", "content": f"{TASK} The API key for the tests is {KEY}."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ledger.py"}]},
        {"role": "user", "content": f"Push with {GITHUB}."},
        {"role": "assistant", "content": "Done."},
    ]
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    path.write_bytes(data)
    return data


def summary_of(path: Path) -> str:
    first = json.loads(path.read_bytes().splitlines()[0])
    match = PREFIX.match(first["content"])
    assert match, first
    return match["summary"]


def no_archive(folder: Path) -> None:
    archives = folder / ".transcripts"
    assert not archives.exists() or all(p.name.endswith(".lock") for p in archives.iterdir())


# ------------------------------------------------------------------------------ claude-code


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_agent("claude", "COMPACTCLI_CLAUDE", "@anthropic-ai/claude-code")


def claude_env(home: Path, claude: Path, api: FakeAnthropic | None, **extra: str) -> dict[str, str]:
    """The user's own login is the key in the environment here; compactcli is told only the program."""
    login = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": api.api_key} if api else {}
    return agent_env(
        home,
        COMPACTCLI_CLAUDE=str(claude),
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        **login,
        **extra,
    )


def test_claude_code_writes_the_summary_from_the_redacted_prompt_with_no_tools_and_no_session(
    claude: Path, tmp_path: Path
) -> None:
    home, path = tmp_path / "home", tmp_path / "session.jsonl"
    home.mkdir()
    original = write_transcript(path)
    with FakeAnthropic() as api:
        api.reply_text = lambda body: "THE CLAUDE SUMMARY"
        done = run_cli(
            "summarize",
            "--backend",
            "claude-code",
            "--json",
            path,
            cwd=tmp_path,
            text=True,
            env=claude_env(home, claude, api),
            timeout=300,
        )
        calls = api.calls("messages")
    assert done.returncode == OK, done.stderr
    assert len(calls) == 1
    body = calls[0].body
    sent = json.dumps(body)
    assert KEY not in sent and GITHUB not in sent and "[REDACTED:anthropic_key]" in sent
    assert SYSTEM_PROMPT.splitlines()[0] in json.dumps(body.get("system"))
    assert not body.get("tools")  # --tools "": the model is offered nothing to run
    first_user = body["messages"][0]["content"]
    text = first_user if isinstance(first_user, str) else json.dumps(first_user)
    assert "<transcript>" in text and TASK in text
    summary = summary_of(path)
    assert summary.startswith("THE CLAUDE SUMMARY")
    assert "session_id" not in path.read_text() and "total_cost_usd" not in path.read_text()
    assert (
        Path(PREFIX.match(json.loads(path.read_bytes().splitlines()[0])["content"])["path"]).read_bytes()
        == original
    )
    assert list(home.glob(".claude/projects/**/*.jsonl")) == []  # --no-session-persistence
    stats = json.loads(done.stdout)["stats"]
    assert (
        stats["backend"] == "claude-code" and stats["tokens_from"] == "server" and stats["input_tokens"] > 0
    )
    assert "backend claude-code (`claude`" in done.stderr


def test_claude_code_not_logged_in_exits_69_saying_how_to_log_in(claude: Path, tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "session.jsonl"
    home.mkdir()
    original = write_transcript(path)
    done = run_cli(
        "summarize",
        "--backend",
        "claude-code",
        path,
        cwd=tmp_path,
        text=True,
        env=claude_env(home, claude, None),
        timeout=300,
    )
    assert done.returncode == UNAVAILABLE, done.stderr
    assert "not logged in" in done.stderr and "/login" in done.stderr
    assert path.read_bytes() == original
    no_archive(tmp_path)


def test_claude_code_past_the_timeout_exits_69(claude: Path, tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "session.jsonl"
    home.mkdir()
    original = write_transcript(path)
    with FakeAnthropic() as api:
        api.always("messages", Reply(delay=60))
        done = run_cli(
            "summarize",
            "--backend",
            "claude-code",
            "--timeout",
            "5",
            path,
            cwd=tmp_path,
            text=True,
            env=claude_env(home, claude, api),
            timeout=120,
        )
    assert done.returncode == UNAVAILABLE, done.stderr
    assert "did not finish within 5 s" in done.stderr
    assert path.read_bytes() == original
    no_archive(tmp_path)


def test_a_missing_program_exits_69_before_any_file(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    original = write_transcript(path)
    for backend, variable, program in (
        ("claude-code", "COMPACTCLI_CLAUDE", "claude"),
        ("codex", "COMPACTCLI_CODEX", "codex"),
    ):
        env = agent_env(tmp_path, **{variable: str(tmp_path / "no-such-program")})
        done = run_cli("summarize", "--backend", backend, path, cwd=tmp_path, text=True, env=env)
        assert done.returncode == UNAVAILABLE, done.stderr
        assert (
            f"runs `{program}`" in done.stderr
            and "npm install -g" in done.stderr
            and "no file was changed" in done.stderr
        )
        assert path.read_bytes() == original
    no_archive(tmp_path)


# ------------------------------------------------------------------------------ codex


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_agent("codex", "COMPACTCLI_CODEX", "@openai/codex")


def codex_env(home: Path, codex: Path, api: FakeResponses, *, logged_in: bool = True) -> dict[str, str]:
    """A private CODEX_HOME whose provider is the fake; its env_key stands for the user's login."""
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f"""model = "gpt-5.1-codex"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{api.url}"
wire_api = "responses"
env_key = "FAKE_OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""
    )
    login = {"FAKE_OPENAI_API_KEY": api.api_key} if logged_in else {}
    return agent_env(home, CODEX_HOME=str(codex_home), COMPACTCLI_CODEX=str(codex), **login)


def test_codex_writes_the_summary_from_the_redacted_prompt_read_only_and_saves_no_session(
    codex: Path, tmp_path: Path
) -> None:
    home, path = tmp_path / "home", tmp_path / "session.jsonl"
    original = write_transcript(path)
    with FakeResponses() as api:
        api.reply_items = lambda body: [message("THE CODEX SUMMARY")]
        env = codex_env(home, codex, api)
        done = run_cli(
            "summarize", "--backend", "codex", "--json", path, cwd=tmp_path, text=True, env=env, timeout=300
        )
        calls = api.calls()
    assert done.returncode == OK, done.stderr
    assert len(calls) == 1
    sent = json.dumps(calls[0].body)
    assert KEY not in sent and GITHUB not in sent and "[REDACTED:github_token]" in sent
    prompt = input_text(calls[0].body)
    assert SYSTEM_PROMPT.splitlines()[0] in prompt and "<transcript>" in prompt and TASK in prompt
    assert 'access="write"' not in prompt  # --sandbox read-only: nothing on disk is writable
    assert summary_of(path).startswith("THE CODEX SUMMARY")
    assert "thread.started" not in path.read_text()
    assert (
        Path(PREFIX.match(json.loads(path.read_bytes().splitlines()[0])["content"])["path"]).read_bytes()
        == original
    )
    assert list((home / "codex").glob("sessions/**/*.jsonl")) == []  # --ephemeral
    stats = json.loads(done.stdout)["stats"]
    assert stats["backend"] == "codex" and stats["tokens_from"] == "server" and stats["input_tokens"] > 0


def test_codex_not_logged_in_exits_69_saying_how_to_log_in(codex: Path, tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "session.jsonl"
    original = write_transcript(path)
    with FakeResponses() as api:
        env = codex_env(home, codex, api, logged_in=False)
        done = run_cli("summarize", "--backend", "codex", path, cwd=tmp_path, text=True, env=env, timeout=300)
    assert done.returncode == UNAVAILABLE, done.stderr
    assert "codex login" in done.stderr and "FAKE_OPENAI_API_KEY" in done.stderr
    assert path.read_bytes() == original
    no_archive(tmp_path)
