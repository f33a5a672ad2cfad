"""A fake Anthropic Messages API: a real HTTP server on 127.0.0.1 for tests.

It answers what the SDK sends for the endpoints compactcli uses:

    POST /v1/messages                          -> a Message (server-sent events when `"stream": true`)
    POST /v1/messages/count_tokens             -> {"input_tokens": N}
    POST /v1/messages/batches                  -> a MessageBatch (in_progress)
    GET  /v1/messages/batches/{id}             -> the MessageBatch (ends after `batch_polls` GETs)
    GET  /v1/messages/batches/{id}/results     -> JSONL, one result per request

Tests script it with planned replies per endpoint (`plan`: used once each, in order; `always`:
every request after the plan runs out), and read `requests` to see what was sent. Every
response carries a `request-id` header; errors have the API's shape
`{"type": "error", "error": {"type": ..., "message": ...}, "request_id": ...}`.

    with FakeAnthropic() as api:
        api.plan("messages", error_reply(429, retry_after=0.01), Reply(body={...}))
        api.always("count_tokens", error_reply(529))
        api.reply_text = lambda body: "summary of " + body["messages"][0]["content"]
        api.reply_blocks = lambda body: [{"type": "tool_use", "id": "toolu_1", "name": "Bash", ...}]

Like the real API it refuses (400, with the real message's wording) a conversation whose tool_use
and tool_result blocks are not paired, so a client that sends a broken history is caught.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from helpers.cli import environ

ENDPOINTS = ("messages", "count_tokens", "batch_create", "batch_retrieve", "batch_results")

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_BATCH_PATH = re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)(?P<results>/results)?$")


@dataclass
class Reply:
    """One planned response. `body=None` means: answer as the endpoint normally would."""

    status: int = 200
    body: Any = None  # dict/list -> JSON; str/bytes -> sent as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (to make the client time out)


def error_reply(
    status: int,
    error_type: str | None = None,
    message: str | None = None,
    *,
    retry_after: float | None = None,
    request_id: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """An error response in the API's shape. `retry_after` is sent as `retry-after-ms` (the
    SDK honours it, so retries in tests stay fast)."""
    error_type = error_type or _ERROR_TYPES.get(status, "api_error")
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["retry-after-ms"] = str(int(retry_after * 1000))
    if request_id is not None:
        headers["request-id"] = request_id
    body = {
        "type": "error",
        "error": {"type": error_type, "message": message or error_type.replace("_", " ")},
    }
    return Reply(status=status, body=body, headers=headers, delay=delay)


@dataclass
class Recorded:
    """A request the server received, and the status and request id it answered with."""

    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None
    endpoint: str | None = None
    status: int = 0
    request_id: str = ""


def _default_reply_text(body: dict[str, Any]) -> str:
    """Echo what was asked, so tests can see it arrived: "summary: <last user text>"."""
    return "summary: " + _last_user_text(body)[:500]


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _default_token_count(body: dict[str, Any]) -> int:
    """A stand-in count the tests can recompute: characters of the JSON messages and system, / 4."""
    sent = json.dumps(body.get("messages")) + json.dumps(body.get("system"))
    return len(sent) // 4


class FakeAnthropic:
    """The server. Use as a context manager, or call `start()` and `stop()`."""

    api_key = "sk-ant-test-00000000-fake"

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.reply_text: Callable[[dict[str, Any]], str] = _default_reply_text
        self.token_count: Callable[[dict[str, Any]], int] = _default_token_count
        # The content blocks of a reply; None: one text block of `reply_text`.
        self.reply_blocks: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
        # GETs of a batch that report it in_progress before it has ended.
        self.batch_polls = 1
        # custom_id -> result object ({"type": "errored", "error": {...}}, {"type": "expired"})
        # instead of a succeeded message.
        self.batch_outcomes: dict[str, dict[str, Any]] = {}
        # Or chosen by what a request asks: request -> result object, or None for a succeeded message.
        self.batch_outcome_of: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
        self.batches: dict[str, dict[str, Any]] = {}
        self._plans: dict[str, deque[Reply]] = {e: deque() for e in ENDPOINTS}
        self._always: dict[str, Reply | None] = dict.fromkeys(ENDPOINTS)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeAnthropic:
        self._server, self._thread = serve_on_loopback(self, _Handler, "fake-anthropic")
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers that are sleeping through a planned delay
        shut_down(self._server, self._thread)

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def env(self, **extra: str) -> dict[str, str]:
        """An environment for a subprocess that talks to this server (and only to it)."""
        return (
            environ("ANTHROPIC_AUTH_TOKEN", ANTHROPIC_BASE_URL=self.url, ANTHROPIC_API_KEY=self.api_key)
            | extra
        )

    # -- scripting -------------------------------------------------------------------------

    def plan(self, endpoint: str, *replies: Reply) -> None:
        """Queue replies for the next requests to `endpoint`, one each, in order."""
        self._check(endpoint)
        with self._lock:
            self._plans[endpoint].extend(replies)

    def always(self, endpoint: str, reply: Reply | None) -> None:
        """Answer every request to `endpoint` with `reply` once its plan is used up
        (None: back to the normal behaviour)."""
        self._check(endpoint)
        with self._lock:
            self._always[endpoint] = reply

    def calls(self, endpoint: str) -> list[Recorded]:
        """The recorded requests to one endpoint, oldest first."""
        self._check(endpoint)
        with self._lock:
            return [r for r in self.requests if r.endpoint == endpoint]

    @staticmethod
    def _check(endpoint: str) -> None:
        if endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r}; one of {ENDPOINTS}")

    # -- serving (called from handler threads) ---------------------------------------------

    def _next_planned(self, endpoint: str) -> Reply | None:
        with self._lock:
            plan = self._plans[endpoint]
            return plan.popleft() if plan else self._always[endpoint]

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            rec.request_id = f"req_fake_{next(self._ids):06d}"
            self.requests.append(rec)

    def handle(self, rec: Recorded) -> Reply:
        """Compute the reply to one request (before any planned delay)."""
        endpoint, batch_id = _route(rec.method, rec.path)
        rec.endpoint = endpoint
        self._record(rec)
        if endpoint is None:
            return error_reply(404, message=f"no route for {rec.method} {rec.path}")
        if not (rec.headers.get("x-api-key") or rec.headers.get("authorization")):
            return error_reply(401, message="x-api-key header is required")
        if "anthropic-version" not in rec.headers:
            return error_reply(400, message="anthropic-version header is required")
        planned = self._next_planned(endpoint)
        if planned is not None and planned.body is not None:
            return planned
        if planned is not None and planned.status >= 400:
            reply = error_reply(planned.status)
        else:
            reply = self._default(endpoint, rec.body, batch_id)
        if planned is not None:  # a planned status/headers/delay around the normal body
            return Reply(
                status=planned.status,
                body=reply.body,
                headers={**reply.headers, **planned.headers},
                delay=planned.delay,
            )
        return reply

    def _default(self, endpoint: str, body: Any, batch_id: str | None) -> Reply:
        if endpoint in ("messages", "count_tokens", "batch_create"):
            problem = _invalid(endpoint, body)
            if problem:
                return error_reply(400, message=problem)
        if endpoint == "messages":
            return Reply(body=self._message(body, f"msg_fake_{next(self._ids):06d}"))
        if endpoint == "count_tokens":
            return Reply(body={"input_tokens": self.token_count(body)})
        if endpoint == "batch_create":
            return Reply(body=self._create_batch(body["requests"]))
        batch = self.batches.get(batch_id or "")
        if batch is None:
            return error_reply(404, message=f"batch {batch_id} not found")
        if endpoint == "batch_retrieve":
            return Reply(body=self._poll_batch(batch))
        if batch["processing_status"] != "ended":
            return error_reply(400, message=f"batch {batch_id} has not ended")
        lines = [
            json.dumps({"custom_id": r["custom_id"], "result": self._batch_result(r)})
            for r in batch["_requests"]
        ]
        return Reply(body="\n".join(lines) + "\n", headers={"content-type": "application/binary"})

    def _message(self, body: dict[str, Any], message_id: str) -> dict[str, Any]:
        if self.reply_blocks is not None:
            content = self.reply_blocks(body)
            written = json.dumps(content)
        else:
            written = self.reply_text(body)
            content = [{"type": "text", "text": written}]
        uses_tools = any(b.get("type") == "tool_use" for b in content)
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if uses_tools else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.token_count(body),
                "output_tokens": len(written) // 4 + 1,
            },
        }

    def _create_batch(self, requests: list[dict[str, Any]]) -> dict[str, Any]:
        batch_id = f"msgbatch_fake_{next(self._ids):06d}"
        batch = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(requests),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": None,
            "_requests": requests,
            "_polls": 0,
        }
        with self._lock:
            self.batches[batch_id] = batch
        return _public(batch)

    def _poll_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            batch["_polls"] += 1
            if batch["processing_status"] != "ended" and batch["_polls"] > self.batch_polls:
                counts = dict.fromkeys(batch["request_counts"], 0)
                for r in batch["_requests"]:
                    counts[self._batch_result(r)["type"]] += 1
                batch.update(
                    processing_status="ended",
                    request_counts=counts,
                    ended_at="2026-01-01T00:05:00Z",
                    results_url=f"{self.url}/v1/messages/batches/{batch['id']}/results",
                )
            return _public(batch)

    def _batch_result(self, request: dict[str, Any]) -> dict[str, Any]:
        outcome = self.batch_outcomes.get(request["custom_id"])
        if outcome is None and self.batch_outcome_of is not None:
            outcome = self.batch_outcome_of(request)
        if outcome is not None:
            return outcome
        message = self._message(request["params"], f"msg_fake_{request['custom_id']}")
        return {"type": "succeeded", "message": message}


def _events(message: dict[str, Any]) -> str:
    """A Message as the stream of server-sent events the API sends for `"stream": true`."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}
    ]
    for index, block in enumerate(message["content"]):
        if block.get("type") == "tool_use":
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}]
        elif block.get("type") == "thinking":
            start = {**block, "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block.get("thinking", "")},
                {"type": "signature_delta", "signature": block.get("signature", "")},
            ]
        else:
            start = {**block, "text": ""}
            deltas = [{"type": "text_delta", "text": block.get("text", "")}]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _route(method: str, path: str) -> tuple[str | None, str | None]:
    if method == "POST" and path == "/v1/messages":
        return "messages", None
    if method == "POST" and path == "/v1/messages/count_tokens":
        return "count_tokens", None
    if method == "POST" and path == "/v1/messages/batches":
        return "batch_create", None
    m = _BATCH_PATH.match(path)
    if method == "GET" and m:
        return ("batch_results" if m["results"] else "batch_retrieve"), m["id"]
    return None, None


def _invalid(endpoint: str, body: Any) -> str | None:
    """The few checks the real API makes that a client bug would trip."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if endpoint == "batch_create":
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return "requests: must be a non-empty list"
        ids = [r.get("custom_id") for r in requests]
        if len(set(ids)) != len(ids):
            return "requests: custom_id values must be unique"
        for r in requests:
            problem = _invalid("messages", r.get("params"))
            if problem:
                return f"requests[{r.get('custom_id')}].params: {problem}"
        return None
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: field required"
    if endpoint == "messages" and not (isinstance(body.get("max_tokens"), int) and body["max_tokens"] > 0):
        return "max_tokens: must be a positive integer"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: must be a non-empty list"
    for i, m in enumerate(messages):
        # Claude Code 2.x sends its environment as a `system` message among the turns.
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
            return f"messages.{i}.role: must be 'user', 'assistant' or 'system'"
        if not isinstance(m.get("content"), str | list):
            return f"messages.{i}.content: must be a string or a list of blocks"
    return _unpaired(messages)


def _ids(message: dict[str, Any], block_type: str, key: str) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b.get(key) for b in content if isinstance(b, dict) and b.get("type") == block_type]


def _unpaired(messages: list[dict[str, Any]]) -> str | None:
    """The API's pairing rule, in its own words: every tool_use is answered by a tool_result in
    the very next message, and every tool_result answers a tool_use of the message before it
    (`system` messages between turns are not turns)."""
    turns = [(i, m) for i, m in enumerate(messages) if m.get("role") != "system"]
    for n, (i, message) in enumerate(turns):
        results = _ids(message, "tool_result", "tool_use_id")
        before = turns[n - 1][1] if n else {}
        asked = _ids(before, "tool_use", "id") if message.get("role") == "user" else []
        stray = [r for r in results if r not in asked]
        if stray:
            return (
                f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{', '.join(map(str, stray))}. Each `tool_result` block must have a corresponding "
                "`tool_use` block in the previous message."
            )
        uses = _ids(message, "tool_use", "id")
        after = turns[n + 1][1] if n + 1 < len(turns) else None
        answered = _ids(after, "tool_result", "tool_use_id") if after else []
        missing = [u for u in uses if u not in answered]
        if message.get("role") == "assistant" and missing and after is not None:
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(map(str, missing))}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
    return None


def serve_on_loopback(
    fake: object, handler: type[BaseHTTPRequestHandler], name: str
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """A threaded HTTP server on 127.0.0.1 (a free port) whose handlers reach `fake` as server.fake."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.fake = fake  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, name=name)
    thread.daemon = True
    thread.start()
    return server, thread


def shut_down(server: ThreadingHTTPServer | None, thread: threading.Thread | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
    if thread is not None:
        thread.join(timeout=5)


class LoopbackHandler(BaseHTTPRequestHandler):
    """What the fake servers' handlers share: keep-alive, the request read into a Recorded, a Reply
    written out."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
    timeout = 10  # close idle keep-alive connections so threads do not linger

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        raise NotImplementedError

    def received(self) -> Recorded:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        return Recorded(
            method=self.command,
            path=path,
            query=query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )

    def send(self, reply: Reply) -> None:
        body = reply.body
        if isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = json.dumps(body).encode()
        headers = {"content-type": "application/json", **reply.headers}
        try:
            self.send_response(reply.status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timed out) before the reply

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


class _Handler(LoopbackHandler):
    def _serve(self) -> None:
        fake: FakeAnthropic = self.server.fake  # type: ignore[attr-defined]
        rec = self.received()
        body = rec.body
        reply = fake.handle(rec)
        rec.status = reply.status
        rec.request_id = reply.headers.get("request-id", rec.request_id)
        if reply.delay and fake._stopping.wait(reply.delay):
            return  # server stopping: drop the request
        if (
            rec.endpoint == "messages"
            and reply.status == 200
            and isinstance(body, dict)
            and body.get("stream")
            and isinstance(reply.body, dict)
        ):
            reply = Reply(
                body=_events(reply.body),
                headers={**reply.headers, "content-type": "text/event-stream"},
            )
        if isinstance(reply.body, dict) and reply.body.get("type") == "error":
            reply = Reply(reply.status, {**reply.body, "request_id": rec.request_id}, reply.headers)
        self.send(Reply(reply.status, reply.body, {**reply.headers, "request-id": rec.request_id}))
