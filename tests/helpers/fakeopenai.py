"""A fake OpenAI-compatible API: a real HTTP server on 127.0.0.1 for tests (what Ollama, vLLM,
llama.cpp's server, LM Studio and the gateways answer on /v1).

    POST /v1/chat/completions  -> a ChatCompletion, or server-sent `chat.completion.chunk` events
                                  ending in `data: [DONE]` when `"stream": true` (with a last chunk
                                  that carries the usage when `stream_options.include_usage`)
    GET  /v1/models            -> the model list (`models`)

Anything else is answered 404 (in the API's error shape) and recorded. Tests script replies per
endpoint (`plan`: used once each, in order; `always`: every request after the plan runs out) with
the Reply of helpers.fakeapi, and read `requests` (every request, parsed) or `calls("chat")`.
Every response carries an `x-request-id` header (the SDK's `request_id`); errors have the API's
shape `{"error": {"message", "type", "param", "code"}}`.

    with FakeOpenAI() as api:                       # api.url is the base URL, ".../v1"
        api.plan("chat", error_reply(429, retry_after=0.01), html_reply(502), Reply(delay=5))
        api.reply_text = lambda body: "summary of " + body["messages"][-1]["content"]
        api.usage = False                           # a server that reports no usage
        api.api_key = "sk-local"                    # require this bearer key (default: none needed)

`down_url()` is the base URL of a port nothing listens on: a local server that is not running.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from helpers.cli import environ
from helpers.fakeapi import LoopbackHandler, Recorded, Reply, serve_on_loopback, shut_down

ENDPOINTS = ("chat", "models")
ROLES = ("system", "developer", "user", "assistant", "tool")

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "service_unavailable",
}


def error_reply(
    status: int,
    message: str | None = None,
    *,
    error_type: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
    request_id: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """An error in the API's shape. `retry_after` is sent as `retry-after-ms` (the SDK honours it, so
    retries in tests stay fast)."""
    error_type = error_type or _ERROR_TYPES.get(status, "server_error")
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["retry-after-ms"] = str(int(retry_after * 1000))
    if request_id is not None:
        headers["x-request-id"] = request_id
    body = {
        "error": {
            "message": message or error_type.replace("_", " "),
            "type": error_type,
            "param": None,
            "code": code,
        }
    }
    return Reply(status=status, body=body, headers=headers, delay=delay)


def html_reply(status: int = 502, text: str = "Bad Gateway") -> Reply:
    """What a reverse proxy in front of the server answers: an HTML page, not the API's JSON."""
    page = f"<html><head><title>{status} {text}</title></head><body><h1>{text}</h1></body></html>"
    return Reply(status=status, body=page, headers={"content-type": "text/html"})


def down_url() -> str:
    """The base URL of a loopback port that nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def message_texts(body: dict[str, Any]) -> str:
    """Every text of a chat request's messages, one per line: what a test greps for."""
    out: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p]
    return "\n".join(out)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_texts({"messages": [message]})
    return ""


def _default_reply_text(body: dict[str, Any]) -> str:
    """Echo what was asked, so tests can see it arrived: "summary: <last user text>"."""
    return "summary: " + _last_user_text(body)[:500]


def prompt_tokens(body: dict[str, Any]) -> int:
    """The stand-in count of the usage: characters of the JSON messages, / 4 (tests recompute it)."""
    return len(json.dumps(body.get("messages"))) // 4


def completion_tokens(text: str) -> int:
    return len(text) // 4 + 1


class FakeOpenAI:
    """The server. Use as a context manager, or call `start()` and `stop()`."""

    def __init__(self, *, api_key: str | None = None, models: tuple[str, ...] = ("fake-model",)) -> None:
        self.requests: list[Recorded] = []
        self.api_key = api_key  # None: any key or none (a local server); else `Bearer <api_key>` only
        self.models = models
        self.reply_text: Callable[[dict[str, Any]], str] = _default_reply_text
        self.usage = True  # report usage (in the last chunk only when the stream asks for it)
        self.finish_reason = "stop"
        self._plans: dict[str, deque[Reply]] = {e: deque() for e in ENDPOINTS}
        self._always: dict[str, Reply | None] = dict.fromkeys(ENDPOINTS)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        self._server, self._thread = serve_on_loopback(self, _Handler, "fake-openai")
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping through a planned delay
        shut_down(self._server, self._thread)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL, as OPENAI_BASE_URL and --base-url take it: `http://127.0.0.1:PORT/v1`."""
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def env(self, **extra: str) -> dict[str, str]:
        """An environment for a subprocess that talks to this server (and only to it)."""
        key = {} if self.api_key is None else {"OPENAI_API_KEY": self.api_key}
        return environ("OPENAI_", OPENAI_BASE_URL=self.url, **key) | extra

    # -- scripting -------------------------------------------------------------------------

    def plan(self, endpoint: str, *replies: Reply) -> None:
        """Queue replies for the next requests to `endpoint`, one each, in order. A Reply without a
        body gets the normal body (with its status, headers and delay); an error status without a
        body gets the API's error for that status."""
        self._check(endpoint)
        with self._lock:
            self._plans[endpoint].extend(replies)

    def always(self, endpoint: str, reply: Reply | None) -> None:
        """Answer every request to `endpoint` with `reply` once its plan is used up (None: normal)."""
        self._check(endpoint)
        with self._lock:
            self._always[endpoint] = reply

    def calls(self, endpoint: str = "chat") -> list[Recorded]:
        """The recorded requests to one endpoint, oldest first."""
        self._check(endpoint)
        with self._lock:
            return [r for r in self.requests if r.endpoint == endpoint]

    @staticmethod
    def _check(endpoint: str) -> None:
        if endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r}; one of {ENDPOINTS}")

    # -- serving (called from handler threads) ---------------------------------------------

    def handle(self, rec: Recorded) -> Reply:
        """The reply to one request (before any planned delay)."""
        rec.endpoint = _route(rec.method, rec.path)
        with self._lock:
            rec.request_id = f"req_fake_{next(self._ids):06d}"
            self.requests.append(rec)
        if rec.endpoint is None:
            return error_reply(404, f"Unknown request URL: {rec.method} {rec.path}.", code="unknown_url")
        if self.api_key is not None and rec.headers.get("authorization") != f"Bearer {self.api_key}":
            return error_reply(401, "Incorrect API key provided.", code="invalid_api_key")
        with self._lock:
            plan = self._plans[rec.endpoint]
            planned = plan.popleft() if plan else self._always[rec.endpoint]
        if planned is not None and planned.body is not None:
            return planned
        if planned is not None and planned.status >= 400:
            return error_reply(
                planned.status, delay=planned.delay, request_id=planned.headers.get("x-request-id")
            )
        reply = self._default(rec)
        if planned is not None:
            return Reply(planned.status, reply.body, {**reply.headers, **planned.headers}, planned.delay)
        return reply

    def _default(self, rec: Recorded) -> Reply:
        if rec.endpoint == "models":
            return Reply(
                body={
                    "object": "list",
                    "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models],
                }
            )
        body = rec.body
        problem = _invalid(body)
        if problem:
            return error_reply(400, problem)
        if body["model"] not in self.models:
            return error_reply(404, f"The model `{body['model']}` does not exist.", code="model_not_found")
        text = self.reply_text(body)
        completion = {
            "id": f"chatcmpl-fake{next(self._ids):06d}",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": self.finish_reason,
                    "logprobs": None,
                }
            ],
        }
        if self.usage:
            sent, written = prompt_tokens(body), completion_tokens(text)
            completion["usage"] = {
                "prompt_tokens": sent,
                "completion_tokens": written,
                "total_tokens": sent + written,
            }
        return Reply(body=completion)


def _route(method: str, path: str) -> str | None:
    path = path.rstrip("/")
    if method == "POST" and path == "/v1/chat/completions":
        return "chat"
    if method == "GET" and path == "/v1/models":
        return "models"
    return None


def _invalid(body: Any) -> str | None:
    """The checks a real server makes that a client bug would trip."""
    if not isinstance(body, dict):
        return "We could not parse the JSON body of your request."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            return f"Invalid value for 'messages[{i}].role': expected one of {', '.join(ROLES)}."
        # An assistant message that makes tool calls may have null content, as the API allows.
        calls = message.get("role") == "assistant" and bool(message.get("tool_calls"))
        if not isinstance(message.get("content"), str | list) and not (
            calls and message.get("content") is None
        ):
            return f"Invalid type for 'messages[{i}].content': expected a string or an array."
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if value is not None and not (isinstance(value, int) and value > 0):
            return f"Invalid '{key}': integer below minimum value."
    return None


def _chunks(completion: dict[str, Any], include_usage: bool) -> str:
    """A ChatCompletion as the server-sent chunks of `"stream": true`: the role, the text in pieces,
    the finish reason, then (when asked) a chunk with no choices that carries the usage."""
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = completion["choices"][0]
    text = choice["message"]["content"] or ""
    pieces = [text[i : i + 40] for i in range(0, len(text), 40)] or [""]
    chunks = [
        {
            **base,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
        }
    ]
    chunks += [
        {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in pieces
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if include_usage and "usage" in completion:
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


class _Handler(LoopbackHandler):
    def _serve(self) -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        rec = self.received()
        reply = fake.handle(rec)
        rec.status = reply.status
        rec.request_id = reply.headers.get("x-request-id", rec.request_id)
        if reply.delay and fake._stopping.wait(reply.delay):
            return  # server stopping: drop the request
        body = rec.body if isinstance(rec.body, dict) else {}
        if (
            rec.endpoint == "chat"
            and reply.status == 200
            and body.get("stream")
            and isinstance(reply.body, dict)
            and reply.body.get("object") == "chat.completion"
        ):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            reply = Reply(
                body=_chunks(reply.body, include_usage),
                headers={**reply.headers, "content-type": "text/event-stream"},
            )
        self.send(Reply(reply.status, reply.body, {**reply.headers, "x-request-id": rec.request_id}))
