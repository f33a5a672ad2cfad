"""Columns of line numbers and lengths: 4-byte machine integers, widened to 8 bytes by the first value
that does not fit (docs/design.md, "Memory per record")."""

from __future__ import annotations

from array import array

# Unsigned 4 bytes: every line number and line length of a file under four billion lines or bytes a line.
NARROW = "I" if array("I").itemsize == 4 else "q"
NARROW_SIGNED = "i" if array("i").itemsize == 4 else "q"


def narrow(signed: bool = False) -> array:
    """An empty 4-byte column; `signed` for values from -2³¹ (a result's slot: -1 for a whole message)."""
    return array(NARROW_SIGNED if signed else NARROW)


def widened(column: array, value: int) -> array:
    """`column` with `value` appended, as 8-byte integers: for a value `column` cannot hold."""
    wide = array("q", column)
    wide.append(value)
    return wide
