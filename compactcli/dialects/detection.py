"""Which dialect a file is in, judged from its first records; a file none of them claims is refused.

docs/design.md, "Detection". Each dialect judges a record itself (Dialect.fit), so the registry is
only iterated here: adding a dialect adds no rule to this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from compactcli.core import jsonio
from compactcli.core.errors import BadInput, reading
from compactcli.dialects.base import NO, PROVES, Dialect
from compactcli.dialects.foreign import record_format, text_format

DETECT_MAX_LINES = 2000
KEYS_SHOWN = 12


class UnknownFormat(BadInput):
    """A file whose records are none of the dialects' records (exit 65)."""


def detect(lines: Iterable[bytes], path: str, registry: Sequence[Dialect]) -> Dialect | None:
    """The dialect of a file from its first lines; None when it holds no line at all (an empty file).

    The first record that only one dialect writes decides, provided the first record fits that
    dialect too; records every dialect could hold (plain text messages) leave the first dialect
    of the registry they fit. Raises UnknownFormat when the first record fits none, when a record
    belongs to a recognised foreign format, or when no line in the first ones is a JSON object.
    """
    first: tuple[int, dict] | None = None
    candidates: list[Dialect] = []
    seen_text = False
    for number, raw in enumerate(lines, 1):
        if number > DETECT_MAX_LINES:
            break
        if not raw.strip():
            continue
        try:
            record, _ = jsonio.loads_object(raw)
        except jsonio.LineError as exc:
            if not seen_text and first is None:
                named = text_format(raw)
                if named:
                    raise UnknownFormat(_refusal(path, number, named, None, registry)) from None
            if not seen_text:
                first_error = (number, str(exc))
            seen_text = True
            continue
        seen_text = True
        reading.set(
            (path, number)
        )  # a record no fit expected names its line (errors.bad_shapes_are_bad_input)
        fits = {d.name: d.fit(record) for d in registry}
        proven = [d for d in registry if fits[d.name] == PROVES]
        foreign = record_format(record)
        if foreign and not proven:
            raise UnknownFormat(_refusal(path, number, foreign, record, registry))
        if first is None:
            first = (number, record)
            candidates = [d for d in registry if fits[d.name] != NO]
            if not candidates:
                raise UnknownFormat(_refusal(path, number, None, record, registry))
        for dialect in proven:
            if dialect in candidates:
                return dialect
    if first is None:
        if not seen_text:
            return None
        number, reason = first_error
        raise UnknownFormat(
            f"{path}:{number}: no line in the first {DETECT_MAX_LINES} is a JSON object ({reason}); "
            f"{_read(registry)}"
        )
    return candidates[0]


def _refusal(path: str, number: int, named: str | None, record: dict | None, registry) -> str:
    parts = []
    if named:
        parts.append(f"it looks like {named}")
    if record is not None:
        keys = list(record)
        shown = ", ".join(keys[:KEYS_SHOWN]) + (", ..." if len(keys) > KEYS_SHOWN else "")
        kind = record.get("type")
        typed = f", type {kind!r}" if isinstance(kind, str) else ""
        parts.append(f"its first record has keys {{{shown}}}{typed}")
    return f"{path}:{number}: not a transcript compactcli reads: {'; '.join(parts)}; {_read(registry)}"


def _read(registry: Sequence[Dialect]) -> str:
    return "dialects read: " + ", ".join(d.name for d in registry)
