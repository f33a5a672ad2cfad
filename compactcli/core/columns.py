"""Columns of line numbers and lengths: 4-byte machine integers, widened to 8 bytes by the first value
that does not fit (docs/design.md, "Memory per record")."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable

# Unsigned 4 bytes: every line number and line length of a file under four billion lines or bytes a line.
NARROW = "I" if array("I").itemsize == 4 else "q"
NARROW_SIGNED = "i" if array("i").itemsize == 4 else "q"
# The typecode of arrays of ids kept as their `hash()`: C longs where they hold 64 bits (a hash goes in
# without the slower conversion of a long long), else long longs.
HASHES = "l" if array("l").itemsize == 8 else "q"


def narrow(signed: bool = False) -> array:
    """An empty 4-byte column; `signed` for values from -2³¹ (a result's slot: -1 for a whole message)."""
    return array(NARROW_SIGNED if signed else NARROW)


def widened(column: array, value: int) -> array:
    """`column` with `value` appended, as 8-byte integers: for a value `column` cannot hold."""
    wide = array("q", column)
    wide.append(value)
    return wide


SET_UP_TO = 1 << 16  # values; a set of this many holds about 5 MB


def repeated(values: Callable[[], Iterable[int]], count: int) -> set[int]:
    """The values that come more than once among the `count` that `values()` gives, without a set of
    every value where there are many (at the end of a long file, that set would be the largest thing
    held): a table of one bit per slot, 16 to 32 slots a value, passes on only the values whose slot is
    taken (about one in twenty), and only those are counted."""
    if count <= SET_UP_TO:  # a set is faster, and small at this size
        if len(set(values())) == count:
            return set()
        counts = Counter(values())
    else:
        mask = (1 << (16 * count).bit_length()) - 1
        bits = bytearray((mask >> 3) + 1)
        maybe: set[int] = set()
        for value in values():
            slot = value & mask
            bit = 1 << (slot & 7)
            if bits[slot >> 3] & bit:
                maybe.add(value)
            else:
                bits[slot >> 3] |= bit
        counts = Counter(filter(maybe.__contains__, values())) if maybe else Counter()
    return {value for value, times in counts.items() if times > 1}
