"""A fake OpenAI Responses API: a real HTTP server on 127.0.0.1 for the Codex CLI to talk to.

    POST /v1/responses  -> a stream of server-sent events (`response.created`, one
                           `response.output_item.done` per output item, `response.completed`)

Anything else is answered 404 and recorded, so a test can see what a client asked for. Like the
real API it refuses (400, in the API's error shape and wording) an input whose function calls and
outputs are not paired, and an input item that carries the id of an item it answered in a response
that also held a reasoning item, without that reasoning item. Tests script the output items per
request (`reply_items`) and read `requests`. Every response carries an `x-request-id` header. A test
of a client's failures plans replies (the Reply of helpers.fakeapi, used once each, in order; then
`always`), e.g. helpers.fakeopenai's error_reply and html_reply; `deltas` streams each message's
text as `response.output_text.delta` events too, as the real API does (off: only the finished items).

    with FakeResponses() as api:
        api.reply_items = lambda body: [function_call("call_1", "exec_command", {"cmd": "ls"})]
        api.plan(error_reply(503, retry_after=0.01), Reply(delay=5))
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
from collections import deque
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from helpers.fakeapi import LoopbackHandler, Recorded, Reply, serve_on_loopback, shut_down

CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = {"function_call_output": "function_call", "custom_tool_call_output": "custom_tool_call"}


def message(text: str) -> dict[str, Any]:
    """An assistant message output item."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A function call output item (`arguments` is sent as a JSON string, as the API does)."""
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(arguments)}


def input_text(body: dict[str, Any]) -> str:
    """Every text of the request's input items, one per line: what a test greps for."""
    return "\n".join(_strings(body.get("input")))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# The ids of items answered in a response with a reasoning item -> that reasoning item's id. Shared by
# every server of the process, as the real API remembers its ids whatever the connection.
_REASONING_OF: dict[str, str] = {}


def _default_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [message("done")]


class FakeResponses:
    """The server. Use as a context manager."""

    api_key = "sk-test-fake-responses"

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.reply_items: Callable[[dict[str, Any]], list[dict[str, Any]]] = _default_items
        self.deltas = False
        self._plan: deque[Reply] = deque()
        self._always: Reply | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._token = secrets.token_hex(4)  # item ids unique across servers
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> FakeResponses:
        self._server, self._thread = serve_on_loopback(self, _Handler, "fake-responses")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # wakes handlers sleeping through a planned delay
        shut_down(self._server, self._thread)

    def plan(self, *replies: Reply) -> None:
        """Answer the next requests to /v1/responses with these, one each, in order (a Reply without
        a body: the normal answer, after its delay)."""
        with self._lock:
            self._plan.extend(replies)

    def always(self, reply: Reply | None) -> None:
        """Answer every request to /v1/responses with `reply` once the plan is used up (None: normal)."""
        with self._lock:
            self._always = reply

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def calls(self) -> list[Recorded]:
        """The POSTs to /v1/responses, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.endpoint == "responses"]

    def handle(self, rec: Recorded) -> Reply:
        """The reply to one request (before any planned delay)."""
        with self._lock:
            self.requests.append(rec)
            n = next(self._ids)
        rec.request_id = f"req_fake_responses_{n:06d}"
        if rec.method != "POST" or rec.path.rstrip("/") != "/v1/responses":
            return _json(404, _error(f"no route for {rec.method} {rec.path}", None))
        rec.endpoint = "responses"
        with self._lock:
            planned = self._plan.popleft() if self._plan else self._always
        if planned is not None and planned.body is not None:
            return planned
        if not rec.headers.get("authorization", "").startswith("Bearer "):
            return _json(401, _error("You didn't provide an API key.", None))
        body = rec.body if isinstance(rec.body, dict) else {}
        problem = unpaired(body.get("input")) or without_reasoning(body.get("input"))
        if problem is not None:
            return _json(400, _error(problem, "input"))
        items = [
            {"id": f"item_{self._token}_{n}_{i}", "status": "completed", **it}
            for i, it in enumerate(self.reply_items(body))
        ]
        reasoning = next((it["id"] for it in items if it.get("type") == "reasoning"), None)
        if reasoning is not None:
            _REASONING_OF.update((it["id"], reasoning) for it in items if it["id"] != reasoning)
        events = _events(f"resp_fake_{n:06d}", body, items, self.deltas)
        headers = {"content-type": "text/event-stream", **(planned.headers if planned else {})}
        return Reply(200, events, headers, planned.delay if planned else 0.0)


def _json(status: int, body: str) -> Reply:
    return Reply(status, body, {"content-type": "application/json"})


def unpaired(items: Any) -> str | None:
    """The API's pairing rule, in its wording: every call in the input has its output, every output
    its call (the outputs come after their calls)."""
    if not isinstance(items, list):
        return "Invalid type for 'input': expected an array."
    calls: set[str] = set()
    answered: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        kind, call_id = item.get("type"), item.get("call_id")
        if kind in CALLS:
            calls.add(call_id)
        elif kind in OUTPUTS:
            if call_id not in calls:
                return f"No tool call found for function call output with call_id {call_id}."
            answered.add(call_id)
    for call_id in calls - answered:
        return f"No tool output found for function call {call_id}."
    return None


def without_reasoning(items: Any) -> str | None:
    """The API's rule for ids, in its wording: an item sent with the id of an output item of a
    response that reasoned needs that reasoning item in the input too (items without ids are new)."""
    if not isinstance(items, list):
        return None
    sent = {item.get("id") for item in items if isinstance(item, dict)}
    for item in items:
        if not isinstance(item, dict):
            continue
        reasoning = _REASONING_OF.get(item.get("id"))  # type: ignore[arg-type]
        if reasoning is not None and reasoning not in sent:
            return (
                f"Item '{item['id']}' of type '{item.get('type')}' was provided without its required "
                f"'reasoning' item: '{reasoning}'."
            )
    return None


def _error(message: str, param: str | None) -> str:
    return json.dumps(
        {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}
    )


def _events(response_id: str, body: dict[str, Any], items: list[dict[str, Any]], deltas: bool) -> str:
    sent = len(json.dumps(body)) // 4
    written = len(json.dumps(items)) // 4 + 1
    response = {"id": response_id, "object": "response", "model": body.get("model"), "status": "in_progress"}
    usage = {
        "input_tokens": sent,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": written,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": sent + written,
    }
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for index, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        for part, content in enumerate((item.get("content") or []) if deltas else []):
            text = content.get("text") if content.get("type") == "output_text" else None
            for at in range(0, len(text or ""), 40):  # the text in pieces, as the API streams it
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": part,
                        "delta": text[at : at + 40],
                    }
                )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    completed = {**response, "status": "completed", "output": items, "usage": usage}
    events.append({"type": "response.completed", "response": completed})
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


class _Handler(LoopbackHandler):
    def _serve(self) -> None:
        fake: FakeResponses = self.server.fake  # type: ignore[attr-defined]
        rec = self.received()
        reply = fake.handle(rec)
        rec.status = reply.status
        if reply.delay and fake._stopping.wait(reply.delay):
            return  # server stopping: drop the request
        rec.request_id = reply.headers.get("x-request-id", rec.request_id)
        self.send(Reply(reply.status, reply.body, {**reply.headers, "x-request-id": rec.request_id}))
