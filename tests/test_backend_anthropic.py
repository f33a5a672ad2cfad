"""The Anthropic backend through the real SDK, against the fake API server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from helpers.fakeapi import FakeAnthropic, Reply, error_reply

from compactcli.backends import anthropic as backend
from compactcli.core.errors import UNAVAILABLE, Unavailable


def _message_body(*blocks: dict, stop_reason: str = "end_turn") -> dict:
    return {
        "id": "msg_planned",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


# -- complete ------------------------------------------------------------------------------------


def test_complete_sends_one_user_turn_and_returns_the_text(fake_api: FakeAnthropic) -> None:
    client = backend.make_client()
    text = backend.complete(
        client, model="claude-test-model", system="You summarize.", user="the transcript", max_tokens=321
    )

    # The fake echoes the last user text after "summary: ".
    assert text == "summary: the transcript"
    [call] = fake_api.requests
    assert (call.method, call.path, call.status) == ("POST", "/v1/messages", 200)
    assert call.body == {
        "model": "claude-test-model",
        "max_tokens": 321,
        "system": "You summarize.",
        "messages": [{"role": "user", "content": "the transcript"}],
    }
    assert call.headers["authorization"] == f"Bearer {fake_api.api_key}"
    assert "anthropic-version" in call.headers


def test_complete_joins_text_blocks_and_skips_others(fake_api: FakeAnthropic) -> None:
    fake_api.plan(
        "messages",
        Reply(
            body=_message_body(
                {"type": "text", "text": "first "},
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "second"},
            )
        ),
    )
    text = backend.complete(backend.make_client(), model="m", system="s", user="u", max_tokens=10)
    assert text == "first second"


def test_complete_without_text_is_unavailable(fake_api: FakeAnthropic) -> None:
    fake_api.plan("messages", Reply(body=_message_body(stop_reason="refusal")))
    with pytest.raises(Unavailable, match="no text .*refusal"):
        backend.complete(backend.make_client(), model="m", system="s", user="u", max_tokens=10)


def test_empty_system_prompt_is_not_sent(fake_api: FakeAnthropic) -> None:
    backend.complete(backend.make_client(), model="m", system="", user="u", max_tokens=10)
    assert "system" not in fake_api.requests[0].body


# -- failures ------------------------------------------------------------------------------------


def test_429_with_retry_after_is_retried_and_then_succeeds(fake_api: FakeAnthropic) -> None:
    fake_api.plan("messages", error_reply(429, retry_after=0.01))
    text = backend.complete(
        backend.make_client(max_retries=2), model="m", system="s", user="hi", max_tokens=5
    )

    assert text == "summary: hi"
    calls = fake_api.calls("messages")
    assert [c.status for c in calls] == [429, 200]
    # The SDK numbers its attempts; the second one is its first retry.
    assert [c.headers["x-stainless-retry-count"] for c in calls] == ["0", "1"]


def test_529_forever_is_unavailable_with_status_and_request_id(fake_api: FakeAnthropic) -> None:
    fake_api.always("messages", error_reply(529, retry_after=0.01, request_id="req_overloaded_7"))
    with pytest.raises(Unavailable) as caught:
        backend.complete(backend.make_client(max_retries=2), model="m", system="s", user="u", max_tokens=5)

    err = caught.value
    assert err.exit_code == UNAVAILABLE == 69
    message = str(err)
    assert message.startswith("summarizer unavailable: HTTP 529 overloaded_error (request req_overloaded_7)")
    assert "after 2 retries" in message
    assert len(fake_api.calls("messages")) == 3  # one attempt and two retries
    assert (err.status_code, err.error_type, err.request_id) == (529, "overloaded_error", "req_overloaded_7")


def test_request_id_comes_from_the_response_header(fake_api: FakeAnthropic) -> None:
    fake_api.always("messages", error_reply(500, retry_after=0.01))
    with pytest.raises(Unavailable) as caught:
        backend.complete(backend.make_client(max_retries=1), model="m", system="s", user="u", max_tokens=5)
    last = fake_api.calls("messages")[-1]
    assert last.request_id.startswith("req_fake_")
    assert f"HTTP 500 api_error (request {last.request_id}) after 1 retry" in str(caught.value)


def test_client_errors_are_not_retried_and_carry_the_api_message(fake_api: FakeAnthropic) -> None:
    fake_api.always(
        "messages", error_reply(400, message="prompt is too long: 250000 tokens > 200000 maximum")
    )
    with pytest.raises(Unavailable) as caught:
        backend.complete(backend.make_client(max_retries=2), model="m", system="s", user="u", max_tokens=5)

    assert len(fake_api.calls("messages")) == 1
    message = str(caught.value)
    assert "HTTP 400 invalid_request_error" in message
    assert "retr" not in message
    assert message.endswith(": prompt is too long: 250000 tokens > 200000 maximum")
    assert caught.value.api_message.startswith("prompt is too long")


def test_timeout_is_unavailable_and_says_so(fake_api: FakeAnthropic) -> None:
    fake_api.always("messages", Reply(delay=5))
    client = backend.make_client(timeout=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(Unavailable, match=r"request timed out after 1 retry \(timeout 0\.3 s per attempt\)"):
        backend.complete(client, model="m", system="s", user="u", max_tokens=5)

    assert time.monotonic() - started < 4  # gave up on the client side, not when the server answered
    assert len(fake_api.calls("messages")) == 2


def test_connection_refused_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port that nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-unused")
    with pytest.raises(Unavailable, match=f"could not connect to 127.0.0.1:{port} after 1 retry"):
        backend.complete(backend.make_client(max_retries=1), model="m", system="s", user="u", max_tokens=5)


def test_no_credentials_is_unavailable_not_a_traceback() -> None:
    # The autouse fixture removed every key and pointed the SDK at an empty config folder.
    assert not backend.have_credentials()
    with pytest.raises(Unavailable, match="set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"):
        backend.make_client()


def test_no_credentials_at_request_time_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    # Without a config folder the SDK builds a client and only fails, with a TypeError, at the request.
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    client = backend.make_client(max_retries=0)
    with pytest.raises(Unavailable, match="no credentials"):
        backend.complete(client, model="m", system="", user="hi", max_tokens=10)
    with pytest.raises(Unavailable, match="no credentials"):
        backend.count_tokens(client, model="m", messages=[{"role": "user", "content": "hi"}])


# -- count_tokens --------------------------------------------------------------------------------


def test_count_tokens_returns_the_api_count(fake_api: FakeAnthropic) -> None:
    fake_api.token_count = lambda body: 4242
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
    ]
    n = backend.count_tokens(
        backend.make_client(), model="claude-test", messages=messages, system="Be brief."
    )

    assert n == 4242
    [call] = fake_api.requests
    assert call.path == "/v1/messages/count_tokens"
    assert call.body == {"model": "claude-test", "messages": messages, "system": "Be brief."}


def test_count_tokens_moves_system_messages_into_system(fake_api: FakeAnthropic) -> None:
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}]
    backend.count_tokens(backend.make_client(), model="m", messages=messages)
    body = fake_api.requests[0].body
    assert body["system"] == "You are terse."
    assert body["messages"] == [{"role": "user", "content": "hello"}]


def test_count_tokens_failure_is_unavailable(fake_api: FakeAnthropic) -> None:
    fake_api.always("count_tokens", error_reply(529, retry_after=0.01, request_id="req_ct"))
    with pytest.raises(Unavailable, match=r"token counting unavailable: HTTP 529 .*req_ct"):
        backend.count_tokens(
            backend.make_client(max_retries=0), model="m", messages=[{"role": "user", "content": "x"}]
        )


# -- batches -------------------------------------------------------------------------------------


def test_batch_create_poll_and_results(fake_api: FakeAnthropic) -> None:
    client = backend.make_client()
    requests = [
        backend.batch_request(
            cid, model="claude-test", system="Summarize.", user=f"text {cid}", max_tokens=50
        )
        for cid in ("part-0", "part-1", "part-2")
    ]
    fake_api.batch_polls = 1
    fake_api.batch_outcomes["part-1"] = {
        "type": "errored",
        "error": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    }
    fake_api.batch_outcomes["part-2"] = {"type": "expired"}

    batch_id = backend.create_batch(client, requests)
    [create] = fake_api.calls("batch_create")
    assert create.body == {"requests": requests}
    assert requests[0] == {
        "custom_id": "part-0",
        "params": {
            "model": "claude-test",
            "max_tokens": 50,
            "messages": [{"role": "user", "content": "text part-0"}],
            "system": "Summarize.",
        },
    }

    first = backend.batch_status(client, batch_id)
    assert first["id"] == batch_id
    assert first["processing_status"] == "in_progress"
    assert first["request_counts"]["processing"] == 3

    second = backend.batch_status(client, batch_id)
    assert second["processing_status"] == "ended"
    assert second["request_counts"] == {
        "processing": 0,
        "succeeded": 1,
        "errored": 1,
        "canceled": 0,
        "expired": 1,
    }

    results = sorted(backend.batch_results(client, batch_id))
    assert results == [
        ("part-0", "summary: text part-0", None),
        ("part-1", None, "overloaded_error: Overloaded"),
        ("part-2", None, "expired"),
    ]
    assert len(fake_api.calls("batch_results")) == 1


def test_batch_status_of_unknown_batch_is_unavailable(fake_api: FakeAnthropic) -> None:
    with pytest.raises(Unavailable, match="batch API unavailable: HTTP 404 not_found_error"):
        backend.batch_status(backend.make_client(), "msgbatch_nope")


# -- configuration -------------------------------------------------------------------------------


def test_resolve_model_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend.resolve_model(None) == backend.DEFAULT_MODEL == "claude-sonnet-5-5"
    monkeypatch.setenv("MODEL_ID", "from-model-id")
    assert backend.resolve_model(None) == "from-model-id"
    monkeypatch.setenv("COMPACTCLI_MODEL", "from-compactcli")
    assert backend.resolve_model(None) == "from-compactcli"
    assert backend.resolve_model("from-option") == "from-option"
    monkeypatch.setenv("COMPACTCLI_MODEL", "  ")  # blank counts as unset
    assert backend.resolve_model("") == "from-model-id"


def test_have_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not backend.have_credentials()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    assert not backend.have_credentials()
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-123")
    assert backend.have_credentials()
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    assert backend.have_credentials()


def test_auth_token_is_sent_when_there_is_no_key(
    fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-gateway-1")
    backend.complete(backend.make_client(), model="m", system="s", user="u", max_tokens=5)
    assert fake_api.requests[0].headers["authorization"] == "Bearer tok-gateway-1"


# -- processes -----------------------------------------------------------------------------------


def test_a_subprocess_reaches_the_fake_server_through_env(fake_api: FakeAnthropic) -> None:
    code = (
        "from compactcli.backends import anthropic as b\n"
        "print(b.complete(b.make_client(), model=b.resolve_model(None), system='s', user='from child',"
        " max_tokens=7))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=fake_api.env(COMPACTCLI_MODEL="child-model"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout == "summary: from child\n"
    assert fake_api.requests[0].body["model"] == "child-model"


def test_importing_the_backend_does_not_import_the_sdk() -> None:
    code = "import sys, compactcli.backends.anthropic; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_fake_server_rejects_requests_without_credentials(fake_api: FakeAnthropic) -> None:
    # Guards the fake itself: a client that sent no key must not look like it succeeded.
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        fake_api.url + "/v1/messages",
        data=json.dumps({"model": "m", "max_tokens": 1, "messages": []}).encode(),
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 401
    body = json.loads(caught.value.read())
    assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
    assert body["request_id"] == caught.value.headers["request-id"]
