"""The Anthropic Messages API through the official SDK: summaries, token counts, Message Batches.

`import anthropic` costs about 2 s, so it happens inside the functions that call the API.
Credentials and the endpoint come from the environment, as the SDK reads them:
`ANTHROPIC_API_KEY` or `ANTHROPIC_AUTH_TOKEN`, and `ANTHROPIC_BASE_URL`.

The SDK retries connection errors, timeouts, 408/409/429 and 5xx itself (honouring
`retry-after`); whatever still fails is raised as `ApiUnavailable` (exit code 69), whose message
says the HTTP status, the error type and the request id.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compactcli.backends.base import Reply
from compactcli.core.constants import DEFAULT_MODEL
from compactcli.core.errors import Unavailable
from compactcli.core.redact import redact_request

if TYPE_CHECKING:
    import anthropic

# claude-sonnet-4-5 reaches end of life on 2026-11-30 (the SDK's deprecation table);
# a Sonnet model is the balance of quality and cost that summaries want.

MODEL_ENV = ("COMPACTCLI_MODEL", "MODEL_ID")

# Seconds per attempt. The SDK's own default (600 s, three attempts) lets a hung server hold a file
# for half an hour; a summary of at most a few thousand tokens comes back well within two minutes.
DEFAULT_TIMEOUT = 120.0
CONNECT_TIMEOUT = 10.0


class ApiUnavailable(Unavailable):
    """An API call that failed after the SDK's retries. The fields let callers tell causes apart
    (e.g. a 400 "prompt is too long" from an overloaded service)."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error_type: str | None = None,
        request_id: str | None = None,
        api_message: str | None = None,
        retries: int = 0,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type
        self.request_id = request_id
        self.api_message = api_message
        self.retries = retries


def resolve_model(model: str | None) -> str:
    """`--model`, else `$COMPACTCLI_MODEL`, else `$MODEL_ID`, else `DEFAULT_MODEL`."""
    return resolve_model_given(model) or DEFAULT_MODEL


def resolve_model_given(model: str | None) -> str | None:
    """`--model`, else `$COMPACTCLI_MODEL`, else `$MODEL_ID`; None when none is set (every backend
    reads the model from these, in this order)."""
    for candidate in (model, *(os.environ.get(name) for name in MODEL_ENV)):
        if candidate and candidate.strip():
            return candidate.strip()
    return None


def have_credentials() -> bool:
    """Whether the environment holds an API key or an auth token (non-empty)."""
    return any((os.environ.get(name) or "").strip() for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"))


def make_client(*, timeout: float | None = None, max_retries: int = 2) -> anthropic.Anthropic:
    """A client configured from the environment. `timeout`: seconds per attempt (DEFAULT_TIMEOUT)."""
    import anthropic

    seconds = timeout if timeout is not None else DEFAULT_TIMEOUT
    options: dict[str, Any] = {
        "max_retries": max_retries,
        "timeout": anthropic.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT)),
    }
    try:
        return anthropic.Anthropic(**options)
    except anthropic.AnthropicError as err:  # e.g. no key, token or credentials profile
        hint = "" if have_credentials() else " (set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN)"
        raise ApiUnavailable(f"Anthropic API unavailable: {_one_line(str(err))}{hint}") from err


def make_backend(
    *,
    model: str | None,
    timeout: float | None,
    max_retries: int,
    base_url: str | None = None,
    api: str = "chat",
) -> AnthropicBackend:
    """The backend of `--backend anthropic` (the endpoint: $ANTHROPIC_BASE_URL, as the SDK reads it)."""
    return AnthropicBackend(model=resolve_model(model), timeout=timeout, max_retries=max_retries)


def complete(
    client: anthropic.Anthropic, *, model: str, system: str, user: str, max_tokens: int, redact: bool = True
) -> str:
    """One Messages call with a single user turn; returns the text of the reply."""
    return reply(client, model=model, system=system, user=user, max_tokens=max_tokens, redact=redact).text


def reply(
    client: anthropic.Anthropic, *, model: str, system: str, user: str, max_tokens: int, redact: bool = True
) -> Reply:
    """One Messages call with a single user turn: the reply's text, its usage and request id. What is
    sent is redacted unless `redact` is False (--no-redact)."""
    import anthropic

    params: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": user}],
    }
    if system:
        params["system"] = system
    params, _ = redact_request(params, enabled=redact)
    try:
        message = client.messages.create(**params)
    except (anthropic.AnthropicError, TypeError) as err:
        raise _unavailable(err, "summarizer") from err
    except ValueError as err:  # a 200 whose body is not JSON
        raise _not_the_api("summarizer", f"unparsable JSON ({err})") from err
    text = _text_of(message, "summarizer")
    request_id = getattr(message, "_request_id", None)
    if not text:
        raise ApiUnavailable(
            f"summarizer unavailable: the reply had no text "
            f"(stop_reason {message.stop_reason}, request {request_id or 'unknown'})",
            request_id=request_id or "unknown",
        )
    usage = getattr(message, "usage", None)
    return Reply(
        text,
        input_tokens=_count(getattr(usage, "input_tokens", None)),
        output_tokens=_count(getattr(usage, "output_tokens", None)),
        request_id=request_id,
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass
class AnthropicBackend:
    """`--backend anthropic` (compactcli.backends.base.Backend): the Messages API through the SDK."""

    model: str
    timeout: float | None = None
    max_retries: int = 2
    name: str = "anthropic"
    _client: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None}

    def ready(self) -> None:
        if not have_credentials():
            raise ApiUnavailable(
                "--backend anthropic needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the environment "
                "(--backend digest works offline; openai, claude-code and codex need no Anthropic key)"
            )

    def describe(self) -> str:
        return f"anthropic (model {self.model})"

    def complete(self, system: str, user: str, max_tokens: int) -> Reply:
        if self._client is None:
            self._client = make_client(timeout=self.timeout, max_retries=self.max_retries)
        return reply(self._client, model=self.model, system=system, user=user, max_tokens=max_tokens)


def count_tokens(
    client: anthropic.Anthropic,
    *,
    model: str,
    messages: list[dict[str, Any]],
    system: str | None = None,
    redact: bool = True,
) -> int:
    """Exact input tokens of `messages` (`messages.count_tokens`).

    Messages with role "system" (normalized OpenAI transcripts) go into `system`, since the API
    only takes user and assistant turns. A count is a request to the model's endpoint like any
    other: what is sent is redacted unless `redact` is False (--no-redact).
    """
    import anthropic

    turns, system_text = _split_system(messages, system)
    params: dict[str, Any] = {"model": model, "messages": turns}
    if system_text:
        params["system"] = system_text
    params, _ = redact_request(params, enabled=redact)
    try:
        counted = client.messages.count_tokens(**params)
    except (anthropic.AnthropicError, TypeError) as err:
        raise _unavailable(err, "token counting") from err
    except ValueError as err:  # a 200 whose body is not JSON
        raise _not_the_api("token counting", f"unparsable JSON ({err})") from err
    tokens = getattr(counted, "input_tokens", None)
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise _not_the_api("token counting", counted)
    return tokens


# -- Message Batches ---------------------------------------------------------------------------


def batch_request(
    custom_id: str, *, model: str, system: str, user: str, max_tokens: int, redact: bool = True
) -> dict:
    """One entry for `create_batch`: the same call as `complete` (redacted alike), tagged with
    `custom_id` (1 to 64 characters of letters, digits, `_` and `-`)."""
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": user}],
    }
    if system:
        params["system"] = system
    params, _ = redact_request(params, enabled=redact)
    return {"custom_id": custom_id, "params": params}


def create_batch(client: anthropic.Anthropic, requests: list[dict[str, Any]]) -> str:
    """Submit a Message Batch; returns its id."""
    import anthropic

    try:
        batch_id = client.messages.batches.create(requests=requests).id
    except (anthropic.AnthropicError, TypeError) as err:
        raise _unavailable(err, "batch API") from err
    except (ValueError, AttributeError) as err:  # a 200 whose body is not the API's JSON
        raise _not_the_api("batch API", f"unparsable JSON ({err})") from err
    return batch_id


def batch_status(client: anthropic.Anthropic, batch_id: str) -> dict[str, Any]:
    """`{"id", "processing_status" ("in_progress" | "canceling" | "ended"), "request_counts"
    ({processing, succeeded, errored, canceled, expired}), "ended_at"}`."""
    import anthropic

    try:
        batch = client.messages.batches.retrieve(batch_id)
        return {
            "id": batch.id,
            "processing_status": batch.processing_status,
            "request_counts": batch.request_counts.to_dict(),
            "ended_at": batch.ended_at.isoformat() if batch.ended_at else None,
        }
    except (anthropic.AnthropicError, TypeError) as err:
        raise _unavailable(err, "batch API") from err
    except (ValueError, AttributeError) as err:  # a 200 whose body is not the API's JSON
        raise _not_the_api("batch API", f"unparsable JSON ({err})") from err


def batch_results(client: anthropic.Anthropic, batch_id: str) -> Iterator[tuple[str, str | None, str | None]]:
    """`(custom_id, text, None)` per succeeded request, `(custom_id, None, error)` otherwise,
    where error is "<error type>: <message>" or "canceled" / "expired". Results come in any
    order; match them by custom_id. The batch must have ended."""
    import anthropic

    try:
        for item in client.messages.batches.results(batch_id):
            result = item.result
            if result.type == "succeeded":
                yield item.custom_id, _text_of(result.message, "batch API"), None
            elif result.type == "errored":
                error = result.error.error
                yield item.custom_id, None, f"{error.type}: {error.message}"
            else:
                yield item.custom_id, None, result.type
    except (anthropic.AnthropicError, TypeError) as err:
        raise _unavailable(err, "batch API") from err
    except (ValueError, AttributeError) as err:  # a 200 whose body is not the API's JSON
        raise _not_the_api("batch API", f"unparsable JSON ({err})") from err


# -- helpers -----------------------------------------------------------------------------------


def _text_of(message: Any, what: str) -> str:
    """The text of a Message; a reply of another shape (an HTML page, other JSON) is ApiUnavailable."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise _not_the_api(what, message)
    texts = [getattr(block, "text", None) for block in content if getattr(block, "type", None) == "text"]
    if not all(isinstance(text, str) for text in texts):
        raise _not_the_api(what, message)
    return "".join(texts)  # type: ignore[arg-type]


def _not_the_api(what: str, reply: object) -> ApiUnavailable:
    """A successful status whose body is not the API's JSON: a proxy's login page, a wrong base URL."""
    if isinstance(reply, str) and reply.lstrip()[:1] == "<":
        seen = f"an HTML page ({_one_line(reply, 80)})"
    elif isinstance(reply, str):
        seen = _one_line(reply, 80) or "an empty body"
    else:
        seen = f"JSON of another shape ({_one_line(repr(reply), 80)})"
    return ApiUnavailable(
        f"{what} unavailable: the reply is not the Messages API's JSON but {seen}; "
        "is ANTHROPIC_BASE_URL pointing at a proxy or another service?"
    )


def _split_system(
    messages: list[dict[str, Any]], system: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    parts = [system] if system else []
    turns = []
    for message in messages:
        if message.get("role") != "system":
            turns.append(message)
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
        if content:
            parts.append(str(content))
    return turns, "\n\n".join(parts) or None


def _retries_taken(err: Exception) -> int:
    """The SDK numbers each attempt in the `x-stainless-retry-count` request header; the failed
    request's number is how many retries were made before giving up."""
    try:
        return int(err.request.headers.get("x-stainless-retry-count", 0))  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return 0


def _unavailable(err: Exception, what: str) -> ApiUnavailable:
    """Turn an SDK error into a one-line message with status, error type and request id."""
    import anthropic

    retries = _retries_taken(err)
    after = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    if isinstance(err, anthropic.APIStatusError):
        error_type = err.type or ""
        request_id = err.request_id
        detail = f": {_one_line(err.api_message)}" if err.api_message else ""
        return ApiUnavailable(
            f"{what} unavailable: HTTP {err.status_code} {error_type}".rstrip()
            + f" (request {request_id or 'id unknown'}){after}{detail}",
            status_code=err.status_code,
            error_type=err.type,
            request_id=request_id,
            api_message=err.api_message,
            retries=retries,
        )
    if isinstance(err, anthropic.APITimeoutError):
        limit = _header(err, "x-stainless-read-timeout")
        per_attempt = f" (timeout {limit} s per attempt)" if limit else ""
        return ApiUnavailable(f"{what} unavailable: request timed out{after}{per_attempt}", retries=retries)
    if isinstance(err, anthropic.APIConnectionError):
        cause = f": {_one_line(str(err.__cause__))}" if err.__cause__ else ""
        return ApiUnavailable(
            f"{what} unavailable: could not connect to {_host(err)}{after}{cause}", retries=retries
        )
    if isinstance(err, TypeError) and not have_credentials():
        # The SDK finds no key only when it builds the first request, and says so with a TypeError.
        return ApiUnavailable(
            f"{what} unavailable: no credentials (set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN)"
        )
    if isinstance(err, TypeError):
        raise err
    # A malformed response, ...
    return ApiUnavailable(f"{what} unavailable: {_one_line(str(err))}")


def _header(err: Exception, name: str) -> str | None:
    try:
        return err.request.headers.get(name)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        return None


def _host(err: Exception) -> str:
    try:
        url = err.request.url  # type: ignore[attr-defined]
        return f"{url.host}:{url.port}" if url.port else str(url.host)
    except (AttributeError, RuntimeError):
        return "the API"


def _one_line(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
