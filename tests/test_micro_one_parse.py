"""micro reads each line once: the first pass already writes every line it may change as it would be if
cleared (pipelines/micro_file), so the second pass parses a line again only where the plan leaves out some
of what the first pass foresaw (a result among the last --keep). Pinned on the bench's generated sessions
of every dialect, UI copies that name no call (Copilot CLI's hook copies, matched to their results by
text) among them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from compactcli.layers.micro import MicroOptions
from compactcli.pipelines.micro_file import analyze

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("make_big", ROOT / "scripts" / "make_big.py")
MAKE_BIG = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MAKE_BIG)


@pytest.mark.parametrize("dialect", MAKE_BIG.DIALECTS)
def test_every_line_micro_changes_was_foreseen_in_its_first_read(dialect: str, tmp_path: Path) -> None:
    path = tmp_path / f"{dialect}.jsonl"
    MAKE_BIG.generate(path, 0.3, dialect, 1)
    with open(path, "rb") as source:
        edit = analyze(source, str(path), options=MicroOptions())
        try:
            assert edit.clears, "nothing cleared: the check would hold vacuously"
            unforeseen = []
            for number, todo in edit.clears.items():
                spooled = edit.spooled.get(number)
                foreseen = set(spooled[2]) if spooled is not None else set()
                # A line whose results are not all cleared (some among the last --keep) is the one
                # case left: the first read cannot know it.
                if not set(todo) <= foreseen:
                    unforeseen.append(number)
        finally:
            edit.close()
    assert unforeseen == []
