"""The fake OpenAI-compatible server answers the real `openai` SDK as a real server would: completions
with and without streaming, usage or none, the API's errors, an HTML page from a proxy, a reply too
slow for the timeout, and a server that is not running. Without this, the openai backend's tests could
not fail on what a real server does."""

from __future__ import annotations

import time

import pytest
from helpers.fakeapi import Reply
from helpers.fakeopenai import (
    FakeOpenAI,
    completion_tokens,
    down_url,
    error_reply,
    html_reply,
    message_texts,
    prompt_tokens,
)

openai = pytest.importorskip("openai", reason="the openai SDK is not installed (pip install -e '.[test]')")

ASK = [{"role": "system", "content": "You summarize."}, {"role": "user", "content": "the transcript"}]


def _client(api_url: str, **options) -> openai.OpenAI:
    return openai.OpenAI(base_url=api_url, api_key=options.pop("api_key", "unused"), **options)


def test_a_completion_echoes_the_last_user_message_with_usage_and_records_the_request():
    with FakeOpenAI() as api:
        reply = _client(api.url).chat.completions.create(model="fake-model", messages=ASK, max_tokens=50)
        (call,) = api.calls("chat")
    assert reply.choices[0].message.content == "summary: the transcript"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.prompt_tokens == prompt_tokens({"messages": ASK})
    assert reply.usage.completion_tokens == completion_tokens("summary: the transcript")
    assert reply._request_id == call.request_id and call.request_id.startswith("req_fake_")
    assert call.body["messages"] == ASK and call.body["max_tokens"] == 50
    assert call.status == 200
    assert message_texts(call.body) == "You summarize.\nthe transcript"


def test_a_stream_carries_the_text_in_chunks_and_the_usage_last_when_asked():
    with FakeOpenAI() as api:
        api.reply_text = lambda body: "x" * 100 + " the end"
        chunks = list(
            _client(api.url).chat.completions.create(
                model="fake-model", messages=ASK, stream=True, stream_options={"include_usage": True}
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "x" * 100 + " the end"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == completion_tokens(text)
    assert all(c.usage is None for c in chunks[:-1])


def test_a_stream_without_include_usage_has_no_usage_and_neither_has_a_server_that_reports_none():
    with FakeOpenAI() as api:
        chunks = list(_client(api.url).chat.completions.create(model="fake-model", messages=ASK, stream=True))
        assert all(c.usage is None for c in chunks) and len(chunks) >= 3
        api.usage = False
        assert _client(api.url).chat.completions.create(model="fake-model", messages=ASK).usage is None


def test_a_planned_error_carries_its_status_type_and_request_id():
    with FakeOpenAI() as api:
        api.plan("chat", error_reply(400, "context length exceeded", code="context_length_exceeded"))
        with pytest.raises(openai.BadRequestError) as caught:
            _client(api.url, max_retries=0).chat.completions.create(model="fake-model", messages=ASK)
        (call,) = api.calls()
    assert caught.value.status_code == 400
    assert caught.value.request_id == call.request_id
    assert caught.value.code == "context_length_exceeded"
    assert "context length exceeded" in str(caught.value)


def test_a_server_error_is_retried_by_the_sdk_as_retry_after_says():
    with FakeOpenAI() as api:
        api.plan("chat", error_reply(503, retry_after=0.01), error_reply(429, retry_after=0.01))
        reply = _client(api.url, max_retries=2).chat.completions.create(model="fake-model", messages=ASK)
        statuses = [c.status for c in api.calls()]
    assert statuses == [503, 429, 200]
    assert reply.choices[0].message.content.startswith("summary:")


def test_an_error_that_outlasts_the_retries_raises():
    with FakeOpenAI() as api:
        api.always("chat", error_reply(500, retry_after=0.01))
        with pytest.raises(openai.InternalServerError):
            _client(api.url, max_retries=1).chat.completions.create(model="fake-model", messages=ASK)
        assert len(api.calls()) == 2


def test_an_html_page_from_a_proxy_is_an_error_with_the_page_as_its_body():
    with FakeOpenAI() as api:
        api.plan("chat", html_reply(502))
        with pytest.raises(openai.APIStatusError) as caught:
            _client(api.url, max_retries=0).chat.completions.create(model="fake-model", messages=ASK)
    assert caught.value.status_code == 502
    assert "<h1>Bad Gateway</h1>" in caught.value.response.text


def test_a_reply_slower_than_the_timeout_times_out():
    with FakeOpenAI() as api:
        api.plan("chat", Reply(delay=5))
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            _client(api.url, max_retries=0, timeout=0.3).chat.completions.create(
                model="fake-model", messages=ASK
            )
        assert time.monotonic() - started < 4


def test_a_server_that_is_down_is_a_connection_error():
    with pytest.raises(openai.APIConnectionError):
        _client(down_url(), max_retries=0).chat.completions.create(model="fake-model", messages=ASK)


def test_a_required_key_refuses_a_wrong_one_and_takes_the_right_one():
    with FakeOpenAI(api_key="sk-local-1") as api:
        with pytest.raises(openai.AuthenticationError):
            _client(api.url, api_key="sk-wrong", max_retries=0).chat.completions.create(
                model="fake-model", messages=ASK
            )
        reply = _client(api.url, api_key="sk-local-1").chat.completions.create(
            model="fake-model", messages=ASK
        )
        assert reply.choices[0].message.content
        assert api.calls()[-1].headers["authorization"] == "Bearer sk-local-1"


def test_an_unknown_model_a_bad_request_and_an_unknown_path_are_refused():
    with FakeOpenAI(models=("qwen2.5:7b",)) as api:
        client = _client(api.url, max_retries=0)
        with pytest.raises(openai.NotFoundError) as caught:
            client.chat.completions.create(model="gpt-x", messages=ASK)
        assert "`gpt-x` does not exist" in caught.value.message
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="qwen2.5:7b", messages=[{"role": "robot", "content": "hi"}])
        assert "messages[0].role" in caught.value.message
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="qwen2.5:7b", input="hi")
        assert [m.id for m in client.models.list()] == ["qwen2.5:7b"]
        assert [r.endpoint for r in api.requests] == ["chat", "chat", None, "models"]


def test_a_200_html_page_reaches_the_caller_as_text_not_as_a_completion():
    # What a captive portal or a misconfigured proxy answers; the SDK hands back the body as a str.
    with FakeOpenAI() as api:
        api.plan("chat", html_reply(200, "Welcome"))
        reply = _client(api.url, max_retries=0).chat.completions.create(model="fake-model", messages=ASK)
    assert isinstance(reply, str) and "<h1>Welcome</h1>" in reply
