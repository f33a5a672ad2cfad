"""The Gemini API's Content parts, as Gemini CLI and Qwen Code keep them, read into the interface's blocks.

docs/design.md, "Gemini Content parts". A Content is `{"role": "user" | "model", "parts": [...]}`; a part
is one of `text` (with `thought: true`, the model's thinking), `functionCall {id?, name, args}`,
`functionResponse {id?, name, response, parts?}`, `inlineData {mimeType, data}` or
`fileData {mimeType, fileUri}`. The API pairs a response with its call by `id` when both carry one,
else by name and order: the n-th response of a name answers the n-th call of that name (Pairing).

The API, kept small:
- `part_list(content)`: a PartListUnion (a string, one part or a list) as a list of parts.
- `blocks(parts, pairing=None)`: the parts as Anthropic-shaped blocks, the parts left as they are.
- `Pairing`: the ids of calls and responses that carry none, fed in the order the model saw them.
- `calls(parts)` / `responses(parts)`: (index, functionCall or functionResponse) of the parts.
- `response_content(response)` / `clear_response(response, text)`: a response's output, and its
  output replaced by a text (micro's placeholder).
- `images(parts)` / `replace_images(parts, which)`: inline images, and them replaced by a text part.
- `text_of(parts)`: the text the parts carry, thoughts left out.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable

from compactcli.core import jsonio
from compactcli.dialects.base import Image, base64_size

USER, MODEL = "user", "model"


def part_list(content: object) -> list:
    """A PartListUnion as a list: a string is one text part, a part alone a list of one (Gemini CLI's
    `ensurePartArray`); strings inside a list are text parts too. The parts are the same objects."""
    if isinstance(content, list):
        return [{"text": part} if isinstance(part, str) else part for part in content]
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, dict):
        return [content]
    return []


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def calls(parts: list) -> list[tuple[int, dict]]:
    """(index, functionCall) of each call among the parts."""
    found = []
    for index, part in enumerate(parts):
        call = part.get("functionCall") if isinstance(part, dict) else None
        if isinstance(call, dict):
            found.append((index, call))
    return found


def responses(parts: list) -> list[tuple[int, dict]]:
    """(index, functionResponse) of each response among the parts."""
    found = []
    for index, part in enumerate(parts):
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict):
            found.append((index, response))
    return found


def given_id(entry: dict) -> str | None:
    """The id a functionCall or functionResponse carries, if any."""
    value = entry.get("id")
    return value if isinstance(value, str) and value else None


def name_of(entry: dict) -> str:
    name = entry.get("name")
    return name if isinstance(name, str) and name else "unknown"


class Pairing:
    """Ids for the calls and responses that carry none, by the API's rule: a response answers the
    earliest call of its name not yet answered. Fed every call and response in the order the model
    saw them; a call or response with its own id keeps it. Synthetic ids start with `#`, which no
    agent's ids do, so they never meet a real one."""

    def __init__(self) -> None:
        self._open: defaultdict[str, deque[str]] = defaultdict(deque)
        self._count = 0

    def call(self, entry: dict) -> str:
        own = given_id(entry)
        if own is not None:
            return own
        self._count += 1
        key = f"#{name_of(entry)}:{self._count}"
        self._open[name_of(entry)].append(key)
        return key

    def response(self, entry: dict) -> str:
        own = given_id(entry)
        if own is not None:
            return own
        waiting = self._open.get(name_of(entry))
        if waiting:
            return waiting.popleft()
        self._count += 1
        return f"#{name_of(entry)}:orphan:{self._count}"


def response_content(response: dict) -> object:
    """What a functionResponse gives the model, as a tool_result's content: the `output` string
    Gemini CLI's tools answer with (`{"output": ...}`) as it is, any other response as its JSON; the
    multimodal `parts` a response may carry follow as blocks."""
    body = response.get("response")
    if isinstance(body, dict) and body.keys() == {"output"} and isinstance(body["output"], str):
        text = body["output"]
    elif body is None:
        text = ""
    else:
        text = jsonio.compact_text(body)
    inner = response.get("parts")
    if isinstance(inner, list) and inner:
        return [{"type": "text", "text": text}, *blocks(inner)]
    return text


def clear_response(response: dict, text: str) -> None:
    """Replace a functionResponse's output with `text`, in place: `{"output": text}`, as Gemini CLI's
    own tools answer; the call's id and name stay, so the pair still matches."""
    response["response"] = {"output": text}
    response.pop("parts", None)


def _inline_block(data: dict) -> dict:
    media = str(data.get("mimeType") or "application/octet-stream")
    payload = data.get("data")
    if media.startswith("image/"):
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": payload}}
    if media == "application/pdf":
        return {"type": "document", "source": {"type": "base64", "media_type": media, "data": payload}}
    return {"type": "text", "text": f"[{media}, {base64_size(payload):,} bytes]"}


def _file_block(data: dict) -> dict:
    uri = str(data.get("fileUri") or "")
    if str(data.get("mimeType") or "").startswith("image/"):
        return {"type": "image", "source": {"type": "url", "url": uri}}
    return {"type": "text", "text": f"[file: {uri}]"}


def blocks(parts: list, pairing: Pairing | None = None) -> list[dict]:
    """The parts as Anthropic-shaped blocks (new objects; the parts are not changed). Calls and
    responses without an id get one from `pairing` when given, else none (None)."""
    out: list[dict] = []
    for part in parts:
        if not isinstance(part, dict):
            out.append({"type": "text", "text": str(part)})
            continue
        call, response = part.get("functionCall"), part.get("functionResponse")
        if isinstance(call, dict):
            key = pairing.call(call) if pairing is not None else given_id(call)
            args = call.get("args")
            use = {"type": "tool_use", "id": key, "name": name_of(call)}
            use["input"] = args if isinstance(args, dict) else {}
            out.append(use)
        elif isinstance(response, dict):
            key = pairing.response(response) if pairing is not None else given_id(response)
            out.append({"type": "tool_result", "tool_use_id": key, "content": response_content(response)})
        elif isinstance(part.get("text"), str):
            if part.get("thought") is True:
                out.append({"type": "thinking", "thinking": part["text"]})
            else:
                out.append({"type": "text", "text": part["text"]})
        elif isinstance(part.get("inlineData"), dict):
            out.append(_inline_block(part["inlineData"]))
        elif isinstance(part.get("fileData"), dict):
            out.append(_file_block(part["fileData"]))
        elif part.get("thought") is True:  # a thought with only its signature: nothing the model reads
            out.append({"type": "thinking", "thinking": ""})
        else:  # executableCode, codeExecutionResult and parts yet unknown: what they carry, as text
            shown = {key: value for key, value in part.items() if key != "thoughtSignature"}
            out.append({"type": "text", "text": json.dumps(shown, ensure_ascii=False)})
    return out


def content_message(content: dict, pairing: Pairing | None = None) -> dict:
    """A Content as an Anthropic-shaped message: role `model` is the assistant."""
    role = "assistant" if content.get("role") == MODEL else "user"
    return {"role": role, "content": blocks(part_list(content.get("parts")), pairing)}


def text_of(parts: list) -> str:
    """The text of the parts (thoughts left out), joined as Gemini CLI joins them: without separator."""
    return "".join(
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("thought") is not True
    )


def _image_holders(parts: list) -> list[dict]:
    """The inlineData objects of images among the parts and inside the responses' own parts."""
    found: list[dict] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        data = part.get("inlineData")
        if isinstance(data, dict) and str(data.get("mimeType") or "").startswith("image/"):
            found.append(part)
        response = part.get("functionResponse")
        inner = response.get("parts") if isinstance(response, dict) else None
        if isinstance(inner, list):
            found.extend(_image_holders(inner))
    return found


def images(parts: list) -> list[Image]:
    """The inline images of the parts, responses' parts included, in walk order."""
    return images_in([parts])


def images_in(lists: Iterable[list]) -> list[Image]:
    """The inline images of several part lists (a record's), numbered across them in order."""
    return [
        Image(str(data.get("mimeType")), base64_size(data.get("data")))
        for data in (_dict(part.get("inlineData")) for parts in lists for part in _image_holders(parts))
    ]


def replace_images(parts: list, which: frozenset[int]) -> None:
    """Replace the images numbered `which` (in the order of `images`) with a text part, in place."""
    replace_images_in([parts], which)


def replace_images_in(lists: Iterable[list], which: frozenset[int]) -> None:
    """replace_images over several part lists, numbered as images_in numbers them."""
    holders = (part for parts in lists for part in _image_holders(parts))
    for number, part in enumerate(holders):
        if number in which:
            data = _dict(part.get("inlineData"))
            text = Image(str(data.get("mimeType")), base64_size(data.get("data"))).placeholder()
            part.clear()
            part["text"] = text
