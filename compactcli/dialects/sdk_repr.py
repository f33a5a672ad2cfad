"""Blocks stored as Python reprs of SDK objects, as the reference tutorial agent writes them.

    "ToolUseBlock(id='toolu_01', caller=None, input={'command': 'ls'}, name='bash', type='tool_use')"

They are parsed with `ast` (one call, each keyword through literal_eval), never evaluated.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

_LOOKS_LIKE_REPR = re.compile(r"^[A-Z][A-Za-z0-9_]*\(")


def looks_like_sdk_repr(value: object) -> bool:
    return isinstance(value, str) and value.endswith(")") and bool(_LOOKS_LIKE_REPR.match(value))


@lru_cache(maxsize=4096)
def _parse(text: str) -> tuple[tuple[str, object], ...] | None:
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args or not isinstance(call.func, ast.Name):
        return None
    fields = []
    for keyword in call.keywords:
        if keyword.arg is None:
            return None
        try:
            fields.append((keyword.arg, ast.literal_eval(keyword.value)))
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return None
    return tuple(fields)


def parse_sdk_repr(value: object) -> dict | None:
    """The block dict behind a stringified SDK object, or None if it is not one."""
    if not looks_like_sdk_repr(value):
        return None
    fields = _parse(value)  # type: ignore[arg-type]
    if fields is None:
        return None
    block = dict(fields)
    return block if isinstance(block.get("type"), str) else None
