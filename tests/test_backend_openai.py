"""`summarize --backend openai` through the installed command and the real openai SDK, against the fake
OpenAI-compatible server on 127.0.0.1 (tests/helpers/fakeopenai.py; the Responses API's,
tests/helpers/fakeresponses.py, for --openai-api responses): what reaches the server (redacted, fenced,
the task with every part), every dialect's compaction record, the server's usage, and each way a
server fails (exit 69, the file untouched, no archive)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.cli import environ, run_cli
from helpers.fakeapi import Reply
from helpers.fakeopenai import FakeOpenAI, down_url, error_reply, html_reply, message_texts, prompt_tokens
from helpers.fakeresponses import FakeResponses, message
from helpers.files import write_jsonl
from helpers.sessions import SUMMARY_MESSAGE, tool_loop

from compactcli.layers.summarize import SYSTEM_PROMPT

pytest.importorskip("openai", reason="the openai SDK is not installed (pip install -e '.[test]')")

OK, USAGE, UNAVAILABLE = 0, 2, 69
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
KEY = "sk-ant-api03-" + "Q9w8E7r6" * 6
GITHUB = "ghp_" + "Zq7xW2" * 6
TASK = "Port the CSV loader in tally/ledger.py to the csv module and keep the tests green."
MODEL = "fake-model"
SUMMARIZE = ("summarize", "--backend", "openai", "--model", MODEL)  # the server: env=api.env()
RESPONSES = (*SUMMARIZE, "--openai-api", "responses")
PREFIX = SUMMARY_MESSAGE


def conversation(turns: int = 3, output: str = "ok") -> list[dict]:
    task = f"{TASK} The API key for the tests is {KEY}."
    return tool_loop(task, turns, output, last_user=f"Now push it, the token is {GITHUB}.")


def user_turn(body: dict) -> str:
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    return user["content"]


def summary_of(path: Path) -> str:
    first = json.loads(path.read_bytes().splitlines()[0])
    content = first["message"]["content"] if "message" in first else first["content"]
    match = PREFIX.match(content)
    assert match, content[:200]
    return match["summary"]


def no_archive(folder: Path) -> None:
    archives = folder / ".transcripts"
    left = sorted(p.name for p in archives.iterdir()) if archives.exists() else []
    assert [name for name in left if not name.endswith(".lock")] == []


@pytest.fixture
def api():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def transcript(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "session.jsonl"
    return path, write_jsonl(path, conversation()).read_bytes()


# ------------------------------------------------------------------------------ the request


def test_the_request_is_the_fenced_redacted_transcript_with_the_task_focus_and_usage_asked(
    api: FakeOpenAI, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    api.reply_text = lambda body: "THE SUMMARY"
    done = run_cli(
        *SUMMARIZE,
        "--summary-tokens",
        "1234",
        "--focus",
        "the csv module",
        "--json",
        str(path),
        cwd=path.parent,
        text=True,
        env=api.env(),
    )
    assert done.returncode == OK, done.stderr
    [call] = api.calls()
    body = call.body
    assert body["model"] == MODEL and body["max_tokens"] == 1234
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    text = user_turn(body)
    assert text.startswith("<transcript>\n") and text.count("</transcript>") == 1
    assert TASK in text and "All steps done." in text
    assert "the csv module" in text[text.index("</transcript>") :]
    sent = json.dumps(body)
    assert KEY not in sent and GITHUB not in sent
    assert "[REDACTED:anthropic_key]" in text and "[REDACTED:github_token]" in text
    assert call.headers["authorization"] == "Bearer no-key"  # no OPENAI_API_KEY: a local server needs none
    assert summary_of(path).startswith("THE SUMMARY")
    archive = Path(PREFIX.match(json.loads(path.read_bytes().splitlines()[0])["content"])["path"])
    assert archive.read_bytes() == original
    assert f"backend openai (model {MODEL} at {api.url})" in done.stderr
    stats = json.loads(done.stdout)["stats"]
    # The server's usage, as it reported it in the stream's last chunk.
    assert stats["input_tokens"] == prompt_tokens(body)
    assert stats["output_tokens"] == len("THE SUMMARY") // 4 + 1
    assert stats["tokens_from"] == "server" and stats["model"] == MODEL and stats["backend"] == "openai"


def test_a_server_without_usage_gets_the_estimate_marked_as_such(
    api: FakeOpenAI, transcript: tuple[Path, bytes]
) -> None:
    path, _ = transcript
    api.usage = False
    done = run_cli(*SUMMARIZE, "--json", str(path), cwd=path.parent, text=True, env=api.env())
    assert done.returncode == OK, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert stats["tokens_from"] == "estimate" and stats["input_tokens"] > 0 and stats["output_tokens"] > 0


def test_the_key_goes_as_a_bearer_token_when_set(transcript: tuple[Path, bytes]) -> None:
    path, _ = transcript
    with FakeOpenAI(api_key="sk-proj-local-1") as api:
        done = run_cli(*SUMMARIZE, str(path), cwd=path.parent, text=True, env=api.env())
        assert done.returncode == OK, done.stderr
        assert api.calls()[0].headers["authorization"] == "Bearer sk-proj-local-1"


def test_base_url_beats_the_environment(api: FakeOpenAI, transcript: tuple[Path, bytes]) -> None:
    path, _ = transcript
    done = run_cli(
        *SUMMARIZE,
        "--base-url",
        api.url,
        str(path),
        cwd=path.parent,
        text=True,
        env=environ(OPENAI_BASE_URL=down_url()),
    )
    assert done.returncode == OK, done.stderr
    assert len(api.calls()) == 1


@pytest.mark.parametrize(
    ("sample", "dialect"),
    [
        ("anthropic/session.jsonl", "anthropic"),
        ("openai/session.jsonl", "openai"),
        ("claude-code/session.jsonl", "claude-code"),
        ("codex/rollout.jsonl", "codex"),
    ],
)
def test_every_dialect_gets_its_compaction_record_with_the_model_text(
    api: FakeOpenAI, tmp_path: Path, sample: str, dialect: str
) -> None:
    path = tmp_path / Path(sample).name
    shutil.copyfile(SAMPLES / sample, path)
    api.reply_text = lambda body: f"Summary of the {dialect} session."
    done = run_cli(
        *SUMMARIZE, "--keep-last", "2", "--json", str(path), cwd=tmp_path, text=True, env=api.env()
    )
    assert done.returncode == OK, done.stderr
    assert json.loads(done.stdout)["stats"]["dialect"] == dialect
    assert f"Summary of the {dialect} session." in path.read_text()
    assert len(api.calls()) == 1
    checked = run_cli("validate", "--dialect", dialect, str(path), text=True)
    assert checked.returncode == OK, checked.stdout + checked.stderr


def test_keep_last_pins_and_the_user_messages_follow_the_summary(api: FakeOpenAI, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    records = conversation(turns=4)
    records[4]["content"][0]["content"] = "MIGRATION-42 applied"
    write_jsonl(path, records)
    done = run_cli(
        *SUMMARIZE,
        "--keep-last",
        "1",
        "--pin",
        "MIGRATION-42",
        str(path),
        cwd=tmp_path,
        text=True,
        env=api.env(),
    )
    assert done.returncode == OK, done.stderr
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    summary = lines[0]["content"]
    assert "## The user's own messages, verbatim" in summary
    assert "Now push it, the token is [REDACTED:github_token]." in summary
    assert GITHUB not in path.read_text()
    assert lines[-1] == records[-1]  # --keep-last 1
    assert lines[1:3] == records[3:5]  # the pinned result, after its call (a pair is never broken)


def test_an_over_long_transcript_goes_in_parts_each_with_the_task_then_combined(
    api: FakeOpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "long.jsonl"
    write_jsonl(path, conversation(turns=30, output="line of output\n" * 150))
    api.reply_text = lambda body: "COMBINED" if "<part_summary" in message_texts(body) else "PART"
    done = run_cli(
        *SUMMARIZE, "--max-input-tokens", "4000", "--json", str(path), cwd=tmp_path, text=True, env=api.env()
    )
    assert done.returncode == OK, done.stderr
    turns = [user_turn(c.body) for c in api.calls()]
    assert json.loads(done.stdout)["stats"]["api_calls"] == len(turns) >= 4
    assert all(t.startswith("<task>\n" + TASK) for t in turns)
    assert turns[-1].count("<part_summary") == len(turns) - 1
    assert summary_of(path).startswith("COMBINED")


def test_jobs_send_each_file_from_its_own_process(api: FakeOpenAI, tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write_jsonl(tmp_path / f"{name}.jsonl", conversation(2))
    done = run_cli(*SUMMARIZE, "--jobs", "3", str(tmp_path), cwd=tmp_path, text=True, env=api.env())
    assert done.returncode == OK, done.stderr
    assert len(api.calls()) == 3
    assert all(summary_of(tmp_path / f"{name}.jsonl").startswith("summary:") for name in "abc")


def test_a_server_that_wants_max_completion_tokens_gets_it(
    api: FakeOpenAI, transcript: tuple[Path, bytes]
) -> None:
    path, _ = transcript
    api.plan(
        "chat", error_reply(400, "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.")
    )
    done = run_cli(
        *SUMMARIZE, "--summary-tokens", "700", str(path), cwd=path.parent, text=True, env=api.env()
    )
    assert done.returncode == OK, done.stderr
    first, second = (c.body for c in api.calls())
    assert first["max_tokens"] == 700 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 700 and "max_tokens" not in second


# ------------------------------------------------------------------------------ settings


def test_model_is_required_and_nothing_is_sent_without_it(
    api: FakeOpenAI, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    done = run_cli("summarize", "--backend", "openai", str(path), cwd=path.parent, text=True, env=api.env())
    assert done.returncode == USAGE
    assert "--backend openai needs --model" in done.stderr
    assert api.requests == [] and path.read_bytes() == original


def test_openais_own_api_without_a_key_is_refused_before_any_file(transcript: tuple[Path, bytes]) -> None:
    path, original = transcript
    done = run_cli(*SUMMARIZE, str(path), cwd=path.parent, text=True)
    assert done.returncode == UNAVAILABLE
    assert (
        "OPENAI_API_KEY" in done.stderr
        and "--base-url" in done.stderr
        and "no file was changed" in done.stderr
    )
    assert path.read_bytes() == original
    no_archive(path.parent)


def test_dry_run_sends_nothing(api: FakeOpenAI, transcript: tuple[Path, bytes]) -> None:
    path, original = transcript
    done = run_cli(*SUMMARIZE, "--dry-run", str(path), cwd=path.parent, text=True, env=api.env())
    assert done.returncode == OK, done.stderr
    assert api.requests == [] and path.read_bytes() == original


# ------------------------------------------------------------------------------ failures


def _fails(done: subprocess.CompletedProcess, path: Path, original: bytes, *words: str) -> None:
    assert done.returncode == UNAVAILABLE, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr
    assert str(path) in done.stderr
    assert path.read_bytes() == original
    no_archive(path.parent)


def test_a_4xx_exits_69_with_the_status_and_request_id(
    api: FakeOpenAI, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    api.plan(
        "chat", error_reply(400, "This model's maximum context length is 8192 tokens", request_id="req_ctx_9")
    )
    done = run_cli(*SUMMARIZE, str(path), cwd=path.parent, text=True, env=api.env())
    _fails(done, path, original, "HTTP 400", "req_ctx_9", "maximum context length is 8192")


def test_an_unknown_model_exits_69_saying_so(api: FakeOpenAI, transcript: tuple[Path, bytes]) -> None:
    path, original = transcript
    done = run_cli(
        "summarize",
        "--backend",
        "openai",
        "--model",
        "llama9:70b",
        str(path),
        cwd=path.parent,
        text=True,
        env=api.env(),
    )
    _fails(done, path, original, "HTTP 404", "`llama9:70b` does not exist")


def test_a_5xx_is_retried_then_succeeds(api: FakeOpenAI, transcript: tuple[Path, bytes]) -> None:
    path, _ = transcript
    api.plan("chat", error_reply(503, retry_after=0.01))
    done = run_cli(*SUMMARIZE, str(path), cwd=path.parent, text=True, env=api.env())
    assert done.returncode == OK, done.stderr
    assert [c.status for c in api.calls()] == [503, 200]


def test_a_5xx_after_the_retries_exits_69(api: FakeOpenAI, transcript: tuple[Path, bytes]) -> None:
    path, original = transcript
    api.always("chat", error_reply(500, retry_after=0.01, request_id="req_down_3"))
    done = run_cli(*SUMMARIZE, "--max-retries", "2", str(path), cwd=path.parent, text=True, env=api.env())
    _fails(done, path, original, "HTTP 500", "req_down_3", "after 2 retries")
    assert len(api.calls()) == 3


@pytest.mark.parametrize(("status", "words"), [(502, ("HTTP 502", "an HTML page")), (200, ("text/html",))])
def test_an_html_page_exits_69_saying_what_came(
    api: FakeOpenAI, transcript: tuple[Path, bytes], status: int, words: tuple[str, ...]
) -> None:
    path, original = transcript
    api.always("chat", html_reply(status))
    done = run_cli(*SUMMARIZE, "--max-retries", "0", str(path), cwd=path.parent, text=True, env=api.env())
    _fails(done, path, original, *words)


def test_a_timeout_exits_69(api: FakeOpenAI, transcript: tuple[Path, bytes]) -> None:
    path, original = transcript
    api.always("chat", Reply(delay=3))
    done = run_cli(
        *SUMMARIZE,
        "--timeout",
        "0.3",
        "--max-retries",
        "1",
        str(path),
        cwd=path.parent,
        text=True,
        env=api.env(),
    )
    _fails(done, path, original, "did not answer within 0.3 s")
    assert len(api.calls()) == 2


def test_a_server_that_is_down_is_named_by_its_url(transcript: tuple[Path, bytes]) -> None:
    path, original = transcript
    url = down_url()
    done = run_cli(
        *SUMMARIZE,
        "--max-retries",
        "0",
        str(path),
        cwd=path.parent,
        text=True,
        env=environ(OPENAI_BASE_URL=url),
    )
    _fails(done, path, original, f"cannot reach {url}", "is the server running")


# ------------------------------------------------------------------------------ settings files


def test_a_projects_settings_name_the_backend_model_and_server_once(api: FakeOpenAI, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.compactcli.summarize]\nbackend = "openai"\nmodel = "{MODEL}"\nbase-url = "{api.url}"\n'
    )
    path = tmp_path / "s.jsonl"
    write_jsonl(path, conversation())
    env = environ(("OPENAI_", "ANTHROPIC_"))
    done = run_cli("summarize", str(path), cwd=tmp_path, text=True, env=env)
    assert done.returncode == OK, done.stderr
    assert f"backend openai (model {MODEL} at {api.url})" in done.stderr
    [call] = api.calls()
    assert call.body["model"] == MODEL
    shown = run_cli("config", "--json", "summarize", cwd=tmp_path, text=True, env=env)
    rows = {r["option"]: r for r in map(json.loads, shown.stdout.splitlines())}
    where = f"{tmp_path / 'pyproject.toml'} [tool.compactcli.summarize]"
    assert rows["--backend"]["value"] == "openai" and rows["--backend"]["source"] == where
    assert rows["--base-url"]["value"] == api.url and rows["--base-url"]["source"] == where


def test_the_environment_beats_the_file_and_the_command_line_beats_both(
    api: FakeOpenAI, tmp_path: Path
) -> None:
    with FakeOpenAI() as other:
        (tmp_path / "compactcli.toml").write_text(
            f'[summarize]\nbackend = "openai"\nmodel = "{MODEL}"\nbase-url = "{down_url()}"\n'
        )
        path = tmp_path / "s.jsonl"
        write_jsonl(path, conversation())
        done = run_cli(
            "summarize", "--backend", "openai", str(path), cwd=tmp_path, text=True, env=api.env()
        )  # $OPENAI_BASE_URL over the file's base-url
        assert done.returncode == OK, done.stderr
        assert len(api.calls()) == 1
        write_jsonl(path, conversation())
        done = run_cli(
            "summarize",
            "--backend",
            "openai",
            "--base-url",
            other.url,
            str(path),
            cwd=tmp_path,
            text=True,
            env=api.env(),
        )
        assert done.returncode == OK, done.stderr
        assert len(api.calls()) == 1 and len(other.calls()) == 1


# ------------------------------------------------------------------------------ the Responses API


@pytest.fixture
def responses():
    with FakeResponses() as server:
        yield server


def test_the_responses_api_gets_the_instructions_and_the_fenced_redacted_transcript(
    responses: FakeResponses, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    responses.reply_items = lambda body: [message("THE RESPONSES SUMMARY")]
    done = run_cli(
        *RESPONSES,
        "--summary-tokens",
        "1234",
        "--focus",
        "the csv module",
        "--json",
        str(path),
        cwd=path.parent,
        text=True,
        env=responses.env(),
    )
    assert done.returncode == OK, done.stderr
    [call] = responses.calls()
    body = call.body
    assert body["model"] == MODEL and body["max_output_tokens"] == 1234
    assert body["stream"] is True and body["store"] is False
    assert body["instructions"] == SYSTEM_PROMPT
    [turn] = body["input"]
    assert turn["role"] == "user"
    text = turn["content"]
    assert text.startswith("<transcript>\n") and text.count("</transcript>") == 1
    assert TASK in text and "the csv module" in text[text.index("</transcript>") :]
    sent = json.dumps(body)
    assert KEY not in sent and GITHUB not in sent
    assert "[REDACTED:anthropic_key]" in text and "[REDACTED:github_token]" in text
    assert call.headers["authorization"] == "Bearer no-key"
    assert summary_of(path).startswith("THE RESPONSES SUMMARY")
    archive = Path(PREFIX.match(json.loads(path.read_bytes().splitlines()[0])["content"])["path"])
    assert archive.read_bytes() == original
    assert f"backend openai (model {MODEL} at {responses.url}, Responses API)" in done.stderr
    stats = json.loads(done.stdout)["stats"]
    # The usage of the response.completed event (the fake counts characters of the body / 4).
    assert stats["input_tokens"] == len(json.dumps(body)) // 4
    # (at least the items without their ids; an estimate of the text alone would be a few tokens)
    assert stats["output_tokens"] >= len(json.dumps([message("THE RESPONSES SUMMARY")])) // 4
    assert stats["tokens_from"] == "server" and stats["backend"] == "openai"
    manifest = (archive.parent / "manifest.jsonl").read_text().splitlines()
    options = json.loads(manifest[-1])["options"]
    assert options["openai_api"] == "responses" and options["base_url"] == responses.url


def test_the_streamed_text_deltas_make_the_summary(responses: FakeResponses, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_jsonl(path, conversation())
    long = "Ported the loader to csv.DictReader; " * 6 + "the tests pass."
    responses.deltas = True
    responses.reply_items = lambda body: [
        {"type": "reasoning", "summary": []},
        message(long),
    ]
    done = run_cli(*RESPONSES, str(path), cwd=tmp_path, text=True, env=responses.env())
    assert done.returncode == OK, done.stderr
    assert summary_of(path).startswith(long)
    assert summary_of(path).count("the tests pass.") == 1  # the deltas, not also the finished item


def test_a_codex_rollout_gets_its_compaction_record_through_the_responses_api(
    responses: FakeResponses, tmp_path: Path
) -> None:
    path = tmp_path / "rollout.jsonl"
    shutil.copyfile(SAMPLES / "codex/rollout.jsonl", path)
    responses.reply_items = lambda body: [message("Summary of the codex session.")]
    done = run_cli(*RESPONSES, "--keep-last", "2", str(path), cwd=tmp_path, text=True, env=responses.env())
    assert done.returncode == OK, done.stderr
    assert "Summary of the codex session." in path.read_text()
    checked = run_cli("validate", "--dialect", "codex", str(path), text=True)
    assert checked.returncode == OK, checked.stdout + checked.stderr


def test_a_responses_4xx_exits_69_with_the_status_and_request_id(
    responses: FakeResponses, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    responses.plan(error_reply(400, "Unsupported parameter: 'store'.", request_id="req_resp_4"))
    done = run_cli(*RESPONSES, str(path), cwd=path.parent, text=True, env=responses.env())
    _fails(done, path, original, "HTTP 400", "req_resp_4", "Unsupported parameter: 'store'.")


def test_a_responses_5xx_is_retried_then_succeeds(
    responses: FakeResponses, transcript: tuple[Path, bytes]
) -> None:
    path, _ = transcript
    responses.plan(error_reply(503, retry_after=0.01))
    done = run_cli(*RESPONSES, str(path), cwd=path.parent, text=True, env=responses.env())
    assert done.returncode == OK, done.stderr
    assert [c.status for c in responses.calls()] == [503, 200]


def test_a_responses_5xx_after_the_retries_exits_69(
    responses: FakeResponses, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    responses.always(error_reply(500, retry_after=0.01, request_id="req_resp_5"))
    done = run_cli(
        *RESPONSES, "--max-retries", "2", str(path), cwd=path.parent, text=True, env=responses.env()
    )
    _fails(done, path, original, "HTTP 500", "req_resp_5", "after 2 retries")
    assert len(responses.calls()) == 3


def test_a_failed_response_exits_69_with_its_code_and_message(
    responses: FakeResponses, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": "failed",
            "error": {"code": "server_error", "message": "The model stopped answering."},
            "output": [],
        },
    }
    stream = f"event: response.failed\ndata: {json.dumps(failed)}\n\n"
    responses.plan(Reply(200, stream, {"content-type": "text/event-stream", "x-request-id": "req_failed_1"}))
    done = run_cli(*RESPONSES, str(path), cwd=path.parent, text=True, env=responses.env())
    _fails(done, path, original, "server_error", "The model stopped answering.", "req_failed_1")


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (html_reply(502), ("HTTP 502", "an HTML page")),
        (html_reply(200), ("text/html",)),
        (Reply(200, "", {"content-type": "text/event-stream"}), ("not an event stream", "--openai-api chat")),
    ],
)
def test_what_is_not_a_response_stream_exits_69_saying_what_came(
    responses: FakeResponses, transcript: tuple[Path, bytes], reply: Reply, words: tuple[str, ...]
) -> None:
    path, original = transcript
    responses.always(reply)
    done = run_cli(
        *RESPONSES, "--max-retries", "0", str(path), cwd=path.parent, text=True, env=responses.env()
    )
    _fails(done, path, original, *words)


def test_a_responses_timeout_and_a_server_that_is_down_exit_69(
    responses: FakeResponses, transcript: tuple[Path, bytes]
) -> None:
    path, original = transcript
    responses.always(Reply(delay=3))
    done = run_cli(
        *RESPONSES,
        "--timeout",
        "0.3",
        "--max-retries",
        "0",
        str(path),
        cwd=path.parent,
        text=True,
        env=responses.env(),
    )
    _fails(done, path, original, "did not answer within 0.3 s")
    url = down_url()
    done = run_cli(
        *RESPONSES,
        "--max-retries",
        "0",
        str(path),
        cwd=path.parent,
        text=True,
        env=environ(OPENAI_BASE_URL=url),
    )
    _fails(done, path, original, f"cannot reach {url}")


def test_the_responses_api_is_settable_in_a_projects_settings(
    responses: FakeResponses, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.compactcli.summarize]\n"
        f'backend = "openai"\nmodel = "{MODEL}"\nbase-url = "{responses.url}"\nopenai-api = "responses"\n'
    )
    path = tmp_path / "s.jsonl"
    write_jsonl(path, conversation())
    env = environ(("OPENAI_", "ANTHROPIC_"))
    done = run_cli("summarize", str(path), cwd=tmp_path, text=True, env=env)
    assert done.returncode == OK, done.stderr
    assert len(responses.calls()) == 1 and "Responses API" in done.stderr
