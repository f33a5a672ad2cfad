"""Minimal edits of a JSON settings file's text: a member or an array element added or removed, every other
byte kept (its formatting, key order, other settings). The text is parsed into spans, the edit made on the
text; inserting then removing the same entry gives the original bytes back."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


@dataclass
class Node:
    """A value's span in the text; objects and arrays keep their members' spans (key None in arrays)."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int
    members: list[tuple[str | None, int, Node]] = field(default_factory=list)  # (key, member start, value)

    def get(self, key: str) -> Node | None:
        return next((v for k, _, v in self.members if k == key), None)


def parse(text: str) -> Node:
    """The root value's span tree; ValueError (with json's message and position) if `text` is not JSON."""
    json.loads(text, parse_constant=_no_constant)  # json decides what is JSON; the scan only finds spans
    node, end = _value(text, _skip(text, 0))
    return node


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _string_end(text: str, i: int) -> int:
    i += 1
    while text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _value(text: str, i: int) -> tuple[Node, int]:
    c = text[i]
    if c == "{":
        node = Node("object", i, i)
        i = _skip(text, i + 1)
        while text[i] != "}":
            key_end = _string_end(text, i)
            key = json.loads(text[i:key_end])
            start = i
            i = _skip(text, _skip(text, key_end) + 1)
            value, i = _value(text, i)
            node.members.append((key, start, value))
            i = _skip(text, i)
            if text[i] == ",":
                i = _skip(text, i + 1)
        node.end = i + 1
        return node, i + 1
    if c == "[":
        node = Node("array", i, i)
        i = _skip(text, i + 1)
        while text[i] != "]":
            value, end = _value(text, i)
            node.members.append((None, i, value))
            i = _skip(text, end)
            if text[i] == ",":
                i = _skip(text, i + 1)
        node.end = i + 1
        return node, i + 1
    if c == '"':
        end = _string_end(text, i)
    elif c in "tfn":
        end = i + {"t": 4, "f": 5, "n": 4}[c]
    else:
        end = _NUMBER.match(text, i).end()  # type: ignore[union-attr]
    return Node("scalar", i, end), end


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    return _WS.match(text, start).group().replace("\n", "").replace("\r", "")  # type: ignore[union-attr]


def indent_unit(text: str, root: Node) -> str:
    """The file's indentation step, from its first member on a line of its own (else two spaces)."""
    if root.members:
        first = root.members[0][1]
        if text.rfind("\n", 0, first) > root.start:
            found = _line_indent(text, first)[len(_line_indent(text, root.start)) :]
            if found:
                return found
    return "  "


def _render(value: object, unit: str, base: str) -> str:
    """`value` as JSON in the file's style, its lines after the first indented by `base`."""
    text = json.dumps(value, indent=unit, ensure_ascii=False)
    return text.replace("\n", "\n" + base)


def insert(text: str, container: Node, value: object, key: str | None, unit: str) -> str:
    """`text` with `value` added at the end of `container` (as member `key` of an object)."""
    closing = container.end - 1
    if container.members:
        _, last_start, last = container.members[-1]
        indent = _line_indent(text, last_start)
        if text.rfind("\n", 0, last_start) < container.start:  # all on one line: stay on it
            piece = ", " + (json.dumps(key) + ": " if key is not None else "") + json.dumps(value)
            return text[: last.end] + piece + text[last.end :]
        member = (json.dumps(key) + ": " if key is not None else "") + _render(value, unit, indent)
        return text[: last.end] + ",\n" + indent + member + text[last.end :]
    outer = _line_indent(text, container.start)
    indent = outer + unit
    member = (json.dumps(key) + ": " if key is not None else "") + _render(value, unit, indent)
    inner_end = closing
    return text[: container.start + 1] + "\n" + indent + member + "\n" + outer + text[inner_end:]


def remove(text: str, container: Node, index: int) -> str:
    """`text` without member `index` of `container` (its separator and the whitespace before it too)."""
    members = container.members
    _, start, value = members[index]
    if len(members) == 1:
        return text[: container.start + 1] + text[container.end - 1 :]
    if index == len(members) - 1:
        previous_end = members[index - 1][2].end
        return text[:previous_end] + text[value.end :]
    next_start = members[index + 1][1]
    return text[:start] + text[next_start:]
