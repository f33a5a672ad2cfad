"""`--backend openai`: any OpenAI-compatible Chat Completions server, through the official SDK.

The same code serves OpenAI itself, a gateway (LiteLLM, OpenRouter) and a local or self-hosted
server (Ollama, vLLM, llama.cpp's server, LM Studio): `--base-url` (else $OPENAI_BASE_URL, else
OpenAI's) says where, `--model` what (required: no default is right for every server), and
$OPENAI_API_KEY the key, which a local server does not need. The SDK is an optional extra,
`pip install 'compactcli[openai]'`, imported on the first request (it costs about a second).

The reply is streamed (a local model on a CPU may take minutes to write a summary; each chunk keeps
the read timeout from firing) with `stream_options.include_usage`, so that the last chunk carries the
server's token counts where it reports them. The SDK retries connection errors, timeouts, 408/409/
429 and 5xx itself (honouring retry-after); what still fails is ApiUnavailable (exit 69), whose
message says the HTTP status and request id, or the URL of a server that could not be reached.

`--openai-api responses` asks the Responses API instead (`responses.create`, on the same client, key,
URL and model), streamed too: the text is the `response.output_text.delta` events (else the
completed response's output), the usage the completed response's. `store=False`, so that OpenAI
keeps no copy of the transcript. A failed or errored stream is ApiUnavailable with the API's code
and message, like an HTTP error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compactcli.backends.anthropic import (
    CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    ApiUnavailable,
    resolve_model_given,
)
from compactcli.backends.base import Reply
from compactcli.core.constants import OPENAI_APIS
from compactcli.counting.pricing import Price, openai_price

if TYPE_CHECKING:
    import openai

OPENAI_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"
KEY_ENV = "OPENAI_API_KEY"
# Sent as the key to a server that needs none: the SDK refuses to build a client without one.
NO_KEY = "no-key"
EXTRA_HINT = "--backend openai needs the openai SDK: pip install 'compactcli[openai]'"


def make_backend(
    *,
    model: str | None,
    timeout: float | None,
    max_retries: int,
    base_url: str | None = None,
    api: str = "chat",
) -> OpenAIBackend:
    """The backend of `--backend openai` (`api`: chat or responses); ValueError when no model is named."""
    chosen = resolve_model_given(model)
    if chosen is None:
        raise ValueError(
            '--backend openai needs --model (or $COMPACTCLI_MODEL, or model = "..." under '
            "[tool.compactcli.summarize]): the name the server knows the model by"
        )
    url = (base_url or os.environ.get(BASE_URL_ENV) or "").strip() or OPENAI_URL
    if api not in OPENAI_APIS:
        raise ValueError(f"--openai-api {api!r}: one of {', '.join(OPENAI_APIS)}")
    return OpenAIBackend(
        model=chosen, base_url=url.rstrip("/"), timeout=timeout, max_retries=max_retries, api=api
    )


@dataclass
class OpenAIBackend:
    """compactcli.backends.base.Backend over Chat Completions, or the Responses API (`api`)."""

    model: str
    base_url: str = OPENAI_URL
    timeout: float | None = None
    max_retries: int = 2
    api: str = "chat"  # or "responses"
    name: str = "openai"
    # Set once a server refused max_tokens for max_completion_tokens (OpenAI's newer models do).
    completion_tokens_key: str = "max_tokens"
    _client: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None}

    def ready(self) -> None:
        try:
            import openai  # noqa: F401
        except ImportError:
            raise ApiUnavailable(EXTRA_HINT) from None
        if self.base_url == OPENAI_URL and not _key():
            raise ApiUnavailable(
                f"--backend openai needs {KEY_ENV} for {OPENAI_URL}, or --base-url (or ${BASE_URL_ENV}) "
                "naming your own server, e.g. http://localhost:11434/v1 for Ollama"
            )

    def list_price(self, model: str | None, request_tokens: int) -> Price | None:
        """OpenAI's list price, on OpenAI's own API only: a gateway or a local server bills (or not)
        by its own prices, which no table here knows."""
        return openai_price(model, request_tokens) if self.base_url == OPENAI_URL else None

    def describe(self) -> str:
        through = ", Responses API" if self.api == "responses" else ""
        return f"openai (model {self.model} at {self.base_url}{through})"

    def complete(self, system: str, user: str, max_tokens: int) -> Reply:
        try:
            import openai
        except ImportError:
            raise ApiUnavailable(EXTRA_HINT) from None
        if self._client is None:
            self._client = self._make_client(openai)
        if self.api == "responses":
            try:
                return self._respond(system, user, max_tokens)
            except openai.OpenAIError as err:
                raise self._unavailable(openai, err) from err
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": user})
        try:
            return self._stream(messages, max_tokens)
        except openai.BadRequestError as err:
            if self.completion_tokens_key == "max_tokens" and "max_completion_tokens" in str(err):
                self.completion_tokens_key = "max_completion_tokens"
                try:
                    return self._stream(messages, max_tokens)
                except openai.OpenAIError as again:
                    raise self._unavailable(openai, again) from again
            raise self._unavailable(openai, err) from err
        except openai.OpenAIError as err:
            raise self._unavailable(openai, err) from err

    # -- the rest --------------------------------------------------------------------------

    def _make_client(self, openai: Any) -> openai.OpenAI:
        seconds = self.timeout if self.timeout is not None else DEFAULT_TIMEOUT
        return openai.OpenAI(
            api_key=_key() or NO_KEY,
            base_url=self.base_url,
            max_retries=self.max_retries,
            timeout=openai.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT)),
        )

    def _stream(self, messages: list[dict[str, str]], max_tokens: int) -> Reply:
        stream = self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
            **{self.completion_tokens_key: max_tokens},
        )
        if isinstance(stream, str):  # a 200 whose body is no event stream: an HTML page, a wrong URL
            raise ApiUnavailable(self._not_the_api(stream))
        request_id = getattr(stream, "_request_id", None) or _header(stream, "x-request-id")
        texts: list[str] = []
        usage = None
        finish = None
        answered = None  # the model the server says answered (a dated snapshot of --model, say)
        chunks = 0
        with stream:
            for chunk in stream:
                chunks += 1
                answered = getattr(chunk, "model", None) or answered
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                for choice in getattr(chunk, "choices", None) or []:
                    if choice.index not in (0, None):
                        continue
                    delta = getattr(choice, "delta", None)
                    piece = getattr(delta, "content", None)
                    if isinstance(piece, str):
                        texts.append(piece)
                    finish = choice.finish_reason or finish
        text = "".join(texts).strip()
        if chunks == 0:
            kind = (_header(stream, "content-type") or "no content type").split(";")[0]
            raise ApiUnavailable(
                f"summarizer unavailable: {self.base_url} answered 200 with {kind}, not an event stream of "
                f"completion chunks (request {request_id or 'id unknown'}): is --base-url the server's "
                "OpenAI-compatible API (it usually ends in /v1)?",
                request_id=request_id,
            )
        if not text:
            raise ApiUnavailable(
                f"summarizer unavailable: the reply had no text (finish_reason {finish}, "
                f"request {request_id or 'id unknown'})",
                request_id=request_id,
            )
        return Reply(
            text,
            input_tokens=_count(getattr(usage, "prompt_tokens", None)),
            output_tokens=_count(getattr(usage, "completion_tokens", None)),
            request_id=request_id,
            model=answered if isinstance(answered, str) and answered else None,
        )

    def _respond(self, system: str, user: str, max_tokens: int) -> Reply:
        """One streamed Responses API request."""
        params: dict[str, Any] = {"instructions": system} if system else {}
        stream = self._client.responses.create(
            model=self.model,
            input=[{"role": "user", "content": user}],
            max_output_tokens=max_tokens,
            store=False,
            stream=True,
            **params,
        )
        if isinstance(stream, str):
            raise ApiUnavailable(self._not_the_api(stream))
        request_id = getattr(stream, "_request_id", None) or _header(stream, "x-request-id")
        texts: list[str] = []
        final = None  # the response of the last response.completed / response.incomplete event
        events = 0
        with stream:
            for event in stream:
                events += 1
                kind = getattr(event, "type", None)
                if kind == "response.output_text.delta" and isinstance(getattr(event, "delta", None), str):
                    texts.append(event.delta)
                elif kind in ("response.completed", "response.incomplete"):
                    final = event.response
                elif kind in ("response.failed", "error"):
                    raise ApiUnavailable(self._failed(event, request_id), request_id=request_id)
        if events == 0:
            kind = (_header(stream, "content-type") or "no content type").split(";")[0]
            raise ApiUnavailable(
                f"summarizer unavailable: {self.base_url} answered 200 with {kind}, not an event stream of "
                f"response events (request {request_id or 'id unknown'}): is --base-url the server's "
                "OpenAI-compatible API (it usually ends in /v1), and does it have the Responses API "
                "(else --openai-api chat)?",
                request_id=request_id,
            )
        # Deltas are what was streamed; a server that sends only the finished items has the text there.
        text = ("".join(texts) or _output_text(final)).strip()
        if not text:
            status = getattr(final, "status", None) or "no response.completed event"
            raise ApiUnavailable(
                f"summarizer unavailable: the response had no text (status {status}, "
                f"request {request_id or 'id unknown'})",
                request_id=request_id,
            )
        usage = getattr(final, "usage", None)
        answered = getattr(final, "model", None)
        return Reply(
            text,
            input_tokens=_count(getattr(usage, "input_tokens", None)),
            output_tokens=_count(getattr(usage, "output_tokens", None)),
            request_id=request_id,
            model=answered if isinstance(answered, str) and answered else None,
        )

    def _failed(self, event: Any, request_id: str | None) -> str:
        """What a `response.failed` or `error` event says, as a line."""
        error = getattr(getattr(event, "response", None), "error", None) or event
        code = getattr(error, "code", None)
        message = getattr(error, "message", None)
        return (
            f"summarizer unavailable: the response failed at {self.base_url}"
            + (f" ({code})" if code else "")
            + f" (request {request_id or 'id unknown'})"
            + (f": {_one_line(message)}" if isinstance(message, str) and message else "")
        )

    def _not_the_api(self, body: str) -> str:
        seen = "an HTML page" if body.lstrip()[:1] == "<" else "text that is not the API's"
        return (
            f"summarizer unavailable: {self.base_url} answered with {seen} ({_one_line(body, 80)}), "
            "not a completion: is --base-url the server's API (it usually ends in /v1)?"
        )

    def _unavailable(self, openai: Any, err: Exception) -> ApiUnavailable:
        retries = (
            f" after {self.max_retries} retr{'y' if self.max_retries == 1 else 'ies'}"
            if self.max_retries
            else ""
        )
        if isinstance(err, openai.APIStatusError):
            request_id = err.request_id or _response_header(err, "x-request-id")
            body = getattr(err, "body", None)
            error_type = getattr(err, "type", None) or getattr(err, "code", None)
            message = _error_message(body) or _page(err)
            return ApiUnavailable(
                f"summarizer unavailable: HTTP {err.status_code}"
                + (f" {error_type}" if error_type else "")
                + f" from {self.base_url} (request {request_id or 'id unknown'}){retries}"
                + (f": {message}" if message else ""),
                status_code=err.status_code,
                error_type=error_type,
                request_id=request_id,
                api_message=message,
                retries=self.max_retries,
            )
        if isinstance(err, openai.APITimeoutError):
            seconds = self.timeout if self.timeout is not None else DEFAULT_TIMEOUT
            return ApiUnavailable(
                f"summarizer unavailable: {self.base_url} did not answer within {seconds:g} s per "
                f"attempt{retries} (--timeout)",
                retries=self.max_retries,
            )
        if isinstance(err, openai.APIConnectionError):
            cause = f" ({_one_line(str(err.__cause__), 120)})" if err.__cause__ else ""
            return ApiUnavailable(
                f"summarizer unavailable: cannot reach {self.base_url}{retries}{cause}: is the server "
                "running, and is --base-url (or $OPENAI_BASE_URL) its address?",
                retries=self.max_retries,
            )
        return ApiUnavailable(f"summarizer unavailable: {_one_line(str(err))}")


def _output_text(response: Any) -> str:
    """The text of a Responses API response's assistant messages."""
    texts = []
    for item in getattr(response, "output", None) or []:
        if getattr(item, "type", None) != "message":
            continue
        for part in getattr(item, "content", None) or []:
            if getattr(part, "type", None) == "output_text" and isinstance(getattr(part, "text", None), str):
                texts.append(part.text)
    return "".join(texts)


def _key() -> str:
    return (os.environ.get(KEY_ENV) or "").strip()


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _error_message(body: object) -> str | None:
    """The API's `{"error": {"message"}}` (or a body that is that inner object), else None."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return _one_line(inner["message"])
        if isinstance(inner, str):
            return _one_line(inner)
    return None


def _page(err: Exception) -> str | None:
    """What a proxy's HTML error page says, in a line."""
    try:
        text = err.response.text  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        return None
    if not text:
        return None
    return ("an HTML page: " if text.lstrip()[:1] == "<" else "") + _one_line(text, 120)


def _response_header(err: Exception, name: str) -> str | None:
    try:
        return err.response.headers.get(name)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        return None


def _header(stream: object, name: str) -> str | None:
    try:
        return stream.response.headers.get(name)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        return None


def _one_line(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
