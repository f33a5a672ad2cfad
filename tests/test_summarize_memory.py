"""What summarize holds per message of a long transcript once the cut is placed (docs/design.md,
"Memory per record")."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from helpers import bigfile

from compactcli.pipelines.summarize_file import SummarizeOptions, analyze


def _analyzed(path: Path) -> tuple[object, int]:
    """The edit analyze returns for `path`, and the bytes it allocated that are still held with it."""
    with path.open("rb") as f:
        tracemalloc.start()
        try:
            edit = analyze(f, str(path), options=SummarizeOptions(keep_last=4), summarizer=None)
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
    return edit, held


def test_the_summary_is_written_holding_a_few_bytes_per_message(tmp_path: Path) -> None:
    # A Claude Code message was held in the chain's columns and again in the messages' (line, offset,
    # length and place: 72 bytes), with its skeleton (about 25 more); the summary only needs its span.
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    bigfile.write(small, "claude-code", turns=10, result_chars=120)
    bigfile.write(big, "claude-code", turns=20_000, result_chars=120)
    _analyzed(small)  # what is imported and cached once
    edit, held = _analyzed(big)
    messages = len(edit.conversation.messages)  # type: ignore[attr-defined]
    assert messages > 40_000
    assert held / messages < 40
