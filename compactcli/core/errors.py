"""Exit codes (sysexits-style; docs/design.md, "Exit codes") and the exceptions that carry them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

OK = 0
CHECK_FAILED = 1  # --check would change something, over --max-tokens, invalid conversation
USAGE = 2
DATA_ERR = 65  # bad input data
UNAVAILABLE = 69  # summarizer / API unavailable
IO_ERR = 74
BUSY = 75  # file busy (being written, locked): retry later

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 check failed / over limit / invalid conversation; 2 usage error; "
    "65 bad input data; 69 summarizer unavailable; 74 I/O error; 75 file busy, retry later."
)


class CompactError(Exception):
    """An error that ends the processing of one file with a documented exit code."""

    exit_code = IO_ERR

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class BadInput(CompactError):
    """A line that is not a JSON object (message is `path:line: what`)."""

    exit_code = DATA_ERR


class TornLastLine(BadInput):
    """A last line without a newline that does not parse: perhaps still being written."""


class Busy(CompactError):
    """The file is locked by another writer or changed while it was processed."""

    exit_code = BUSY


class Unavailable(CompactError):
    """The summarizer or token-counting API failed after retries."""

    exit_code = UNAVAILABLE


# Where the reading of the current file is: (name, line), set by the line reader for each line parsed.
reading: ContextVar[tuple[str, int] | None] = ContextVar("reading", default=None)

# What a value of a shape no code expected raises (a number where a list goes, an object for an id).
SHAPE_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError, OverflowError)


@contextmanager
def bad_shapes_are_bad_input(name: str) -> Iterator[None]:
    """Turn an error that a record of an unexpected shape raised deep inside into BadInput (65) naming
    `file:line` of the line being read, so that no input ends a run with a traceback and the other files
    are still processed (docs/design.md, "Exit codes"). Documented errors pass as they are."""
    reading.set(None)
    try:
        yield
    except CompactError:
        raise
    except SHAPE_ERRORS as exc:
        where = reading.get()
        place = f"{where[0]}:{where[1]}" if where else name
        what = " ".join(str(exc).split())[:200]
        raise BadInput(
            f"{place}: a record of a shape compactcli does not read ({type(exc).__name__}: {what})"
        ) from exc
