"""A server that answers 200 with something that is not the API's JSON (a proxy's login page):
each file fails on its own with exit 69 and a message that says so, and the batch goes on.
The real SDK against a real HTTP server on 127.0.0.1 (tests/helpers/fakeapi.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic, Reply

from compactcli.backends import anthropic as api

OK, UNAVAILABLE = 0, 69
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "anthropic" / "session.jsonl"
HTML = "<!DOCTYPE html><html><body><h1>Corporate proxy: please sign in</h1></body></html>"
BODIES = {
    "html": Reply(body=HTML, headers={"content-type": "text/html"}),
    "broken json": Reply(body='{"id": "msg_1", "content": [', headers={"content-type": "application/json"}),
    "other json": Reply(body={"status": "ok"}),
}


def three_files(folder: Path) -> list[Path]:
    paths = []
    for name in ("a", "b", "c"):
        path = folder / f"{name}.jsonl"
        path.write_bytes(SAMPLE.read_bytes())
        paths.append(path)
    return paths


@pytest.mark.parametrize("kind", BODIES)
def test_summarize_fails_each_file_69_and_goes_on(tmp_path: Path, fake_api: FakeAnthropic, kind: str) -> None:
    fake_api.always("messages", BODIES[kind])
    paths = three_files(tmp_path)
    before = [p.read_bytes() for p in paths]

    run = run_cli(
        "summarize", "--backend", "anthropic", "--max-retries", "0", tmp_path, text=True, env=fake_api.env()
    )

    assert run.returncode == UNAVAILABLE, run.stderr
    assert "Traceback" not in run.stderr
    for path in paths:  # every file was tried, and each failure names its file
        assert f"{path}: summarizer unavailable: the reply is not the Messages API's JSON" in run.stderr
    assert "3 failed" in run.stderr
    assert [p.read_bytes() for p in paths] == before
    assert not (tmp_path / ".transcripts").exists() or not list((tmp_path / ".transcripts").glob("*.jsonl"))
    assert len(fake_api.requests) >= 3


def test_estimate_api_fails_each_file_69_and_goes_on(tmp_path: Path, fake_api: FakeAnthropic) -> None:
    fake_api.always("count_tokens", BODIES["html"])
    paths = three_files(tmp_path)
    run = run_cli(
        "estimate",
        "--method",
        "api",
        "--no-cache",
        tmp_path,
        text=True,
        env=fake_api.env(),
    )
    assert run.returncode == UNAVAILABLE, run.stderr
    assert "Traceback" not in run.stderr
    for path in paths:
        assert (
            f"{path}: token counting unavailable: the reply is not the Messages API's JSON but an HTML page"
            in (run.stderr)
        )


def test_replay_with_the_api_summarizer_fails_69(tmp_path: Path, fake_api: FakeAnthropic) -> None:
    fake_api.always("messages", BODIES["html"])
    (path,) = three_files(tmp_path)[:1]
    run = run_cli(
        "replay", path, "--backend", "anthropic", "--max-retries", "0", "--threshold", 200, "--keep", 0,
        text=True, env=fake_api.env(),
    )  # fmt: skip
    assert run.returncode == UNAVAILABLE, run.stderr
    assert "Traceback" not in run.stderr
    assert "the reply is not the Messages API's JSON but an HTML page" in run.stderr


def test_the_default_timeout_per_attempt_is_two_minutes_not_ten(fake_api: FakeAnthropic) -> None:
    client = api.make_client()
    assert (client.timeout.read, client.timeout.connect) == (120.0, 10.0)
    assert api.make_client(timeout=3).timeout.read == 3


def test_a_server_that_never_answers_fails_within_the_timeout(
    tmp_path: Path, fake_api: FakeAnthropic
) -> None:
    fake_api.always("messages", Reply(body={"never": "sent in time"}, delay=5))
    (path,) = three_files(tmp_path)[:1]
    run = run_cli(
        "summarize", "--backend", "anthropic", "--max-retries", "0", "--timeout", "0.5", path,
        text=True, env=fake_api.env(), timeout=30,
    )  # fmt: skip
    assert run.returncode == UNAVAILABLE, run.stderr
    assert "timed out" in run.stderr and json.dumps(str(path))[1:-1] in run.stderr
