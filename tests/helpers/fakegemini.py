"""A fake Gemini API: a real HTTP server on 127.0.0.1 for Gemini CLI to talk to.

    POST /v1beta/models/<model>:generateContent              -> one GenerateContentResponse (JSON)
    POST /v1beta/models/<model>:streamGenerateContent?alt=sse -> the same response as server-sent events
    POST /v1beta/models/<model>:countTokens                   -> {"totalTokens": bytes / 4}

Anything else is answered 404 and recorded. Like the real API it refuses (400 INVALID_ARGUMENT) a
request whose function calls are not answered by the next user turn, by id where the parts carry one.
Tests script the model's parts per streamed request (`reply_parts`) and read `streamed()`; the
non-streamed calls Gemini CLI makes on its own (its model router) get `route_text`.

    with FakeGemini() as api:
        api.reply_parts = lambda body: [function_call("read_file", {"file_path": "a.txt"})]
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from helpers.fakeapi import LoopbackHandler, LoopbackServer, Recorded, Reply

ROUTE = '{"complexity_reasoning": "Simple read operation.", "complexity_score": 10}'


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def function_call(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


def contents_text(body: dict[str, Any]) -> str:
    """Every string of the request's contents, one per line: what a test greps for."""
    return "\n".join(_strings(body.get("contents")))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def unanswered(contents: Any) -> str | None:
    """The API's rule for function calls, in its wording: a model turn's calls are each answered in the
    user turn right after it (by id where both carry one, else by name), and every response there
    answers one of them. A response repeated is let through: Gemini CLI 0.61 sends a resumed call's
    response twice (from the call's record and from its own), and the API pairs them by id."""
    if not isinstance(contents, list):
        return "Invalid value at 'contents': expected a list."
    previous: list[dict] = []
    for content in contents:
        parts = (
            [p for p in (content.get("parts") or []) if isinstance(p, dict)]
            if isinstance(content, dict)
            else []
        )
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if previous:
            if not responses:
                return (
                    "Please ensure that function call turn comes immediately after a user turn or after "
                    "a function response turn."
                )
            for call in previous:
                if not any(_answers(response, call) for response in responses):
                    return f"Please ensure that function call {call.get('name')} has a function response."
        for response in responses:
            if not any(_answers(response, call) for call in previous):
                return (
                    "Please ensure that function response turn comes immediately after a function call turn."
                )
        previous = [
            p["functionCall"] for p in parts if "functionCall" in p and content.get("role") == "model"
        ]
    return None


def _answers(response: dict, call: dict) -> bool:
    if response.get("id") and call.get("id"):
        return response["id"] == call["id"]
    return response.get("name") == call.get("name")


def _default_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [text("done")]


class FakeGemini(LoopbackServer):
    """The server. Use as a context manager."""

    api_key = "x"

    def __init__(self) -> None:
        super().__init__(_Handler, "fake-gemini")
        self.requests: list[Recorded] = []
        self.reply_parts: Callable[[dict[str, Any]], list[dict[str, Any]]] = _default_parts
        self.route_text = ROUTE
        self._lock = threading.Lock()

    def streamed(self) -> list[Recorded]:
        """The streamGenerateContent requests (the agent's turns), oldest first."""
        with self._lock:
            return [r for r in self.requests if r.endpoint == "streamGenerateContent"]

    def refused(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.status >= 400]

    def handle(self, rec: Recorded) -> tuple[int, str, str]:
        with self._lock:
            self.requests.append(rec)
        model, _, method = rec.path.rpartition("/")[2].partition(":")
        if rec.method != "POST" or "/models/" not in rec.path or not model:
            return 404, "application/json", _error(404, f"no route for {rec.method} {rec.path}", "NOT_FOUND")
        rec.endpoint = method
        if rec.headers.get("x-goog-api-key") != self.api_key and f"key={self.api_key}" not in rec.query:
            return 403, "application/json", _error(403, "API key not valid.", "PERMISSION_DENIED")
        body = rec.body if isinstance(rec.body, dict) else {}
        if method == "countTokens":
            return 200, "application/json", json.dumps({"totalTokens": len(json.dumps(body)) // 4})
        if method not in ("generateContent", "streamGenerateContent"):
            return 404, "application/json", _error(404, f"no method {method}", "NOT_FOUND")
        problem = unanswered(body.get("contents"))
        if problem is not None:
            return 400, "application/json", _error(400, problem, "INVALID_ARGUMENT")
        parts = self.reply_parts(body) if method == "streamGenerateContent" else [text(self.route_text)]
        response = _response(model, body, parts)
        if method == "generateContent":
            return 200, "application/json", json.dumps(response)
        return 200, "text/event-stream", f"data: {json.dumps(response)}\r\n\r\n"


def _response(model: str, body: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    sent = len(json.dumps(body)) // 4
    written = len(json.dumps(parts)) // 4 + 1
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": sent,
            "candidatesTokenCount": written,
            "totalTokenCount": sent + written,
        },
        "modelVersion": model,
    }


def _error(code: int, message: str, status: str) -> str:
    return json.dumps({"error": {"code": code, "message": message, "status": status}})


class _Handler(LoopbackHandler):
    def _serve(self) -> None:
        fake: FakeGemini = self.server.fake  # type: ignore[attr-defined]
        rec = self.received()
        status, content_type, data = fake.handle(rec)
        rec.status = status
        self.send(Reply(status, data, {"content-type": content_type}))
