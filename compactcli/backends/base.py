"""The interface a model backend implements (docs/design.md, "Backends").

A backend makes one request: a system prompt and one user turn in, the reply's text out, with the
tokens the server counted when it says. Everything else a model summary needs (rendering the
transcript, redaction of what is sent and of the reply, parts for a long one, combining them, the
task with every part, focus, the usage added up) is `ModelSummarizer`'s, the same for every backend.

A backend is picklable (`--jobs` sends it to other processes): a client or connection is made on
the first request in each process, never in `__init__`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Reply:
    """One request's answer."""

    text: str
    input_tokens: int | None = None  # as the server counted them; None when it did not say
    output_tokens: int | None = None
    request_id: str | None = None
    model: str | None = None  # the model that answered, when the reply says (an agent CLI's default)


class Backend(Protocol):
    """What `--backend NAME` makes (registered in compactcli.backends.MODEL_BACKENDS)."""

    name: str  # what --backend calls it
    model: str | None  # what the summary line, the JSON and the manifest name (None: the program's default)

    def ready(self) -> None:
        """Raise Unavailable saying what to do when a request cannot work (no key, no program, no
        login), before any file is read. Sends nothing; cheap."""
        ...

    def describe(self) -> str:
        """How the `summarize: backend ...` line names it: "openai (model X at URL)"."""
        ...

    def complete(self, system: str, user: str, max_tokens: int) -> Reply:
        """One request. Raises Unavailable (exit 69) saying what failed: the status and request id
        for an HTTP API, the server's URL when it cannot be reached, the program and what to do for
        a command-line agent."""
        ...
