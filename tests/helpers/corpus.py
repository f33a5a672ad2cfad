"""The real transcripts in ../shared/corpus (beside the repository), and what compactcli must make of each.

Every `.jsonl` file under every dialect folder counts, sub-agent files in nested folders included. Each has
one row in EXPECTED; a file without a row, or a row without a file, fails the corpus tier, so a new corpus
file cannot go unchecked and a vanished one cannot pass silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"


@dataclass(frozen=True)
class Expect:
    """What the CLI makes of one corpus file.

    dialect: the dialect `validate --json` reports; None when the file is refused (exit 65).
    violations: rule -> how many times `validate` reports it; empty means valid (exit 0), else exit 1.
    micro_changes: whether `micro --on-invalid keep` rewrites the file (some old tool result is cleared).
    torn: lines that json.loads rejects (the owner's redactor cut them off), by 1-based number.
    tool_results: whether the file holds any tool result the dialect reads.
    refused_as: for a refused file, the format name every command's refusal gives.
    summarizes: whether `summarize --keep-last 6` has something to summarize; False when the active
    context after the file's last compaction is that compaction and fewer than 6 messages.
    """

    dialect: str | None
    violations: dict[str, int] = field(default_factory=dict)
    micro_changes: bool = True
    torn: frozenset[int] = frozenset()
    tool_results: bool = True
    refused_as: str = ""
    summarizes: bool = True

    @property
    def validate_exit(self) -> int:
        return 65 if self.dialect is None else 1 if self.violations else 0


def refused(format_name: str) -> Expect:
    """A file in a format no dialect reads: every command refuses it, naming the format."""
    return Expect(None, micro_changes=False, tool_results=False, refused_as=format_name, summarizes=False)


# SOURCES.md in the corpus lists these torn lines; they are counted here by hand from it.
TORN_3AF9 = frozenset(
    [4, 8, 20, 41, 45, 51, 59, 84, 117, 126, 134, 136, 145, 151, 158, 159, 166, 193, 196, 197, 227, 231, 278]
    + [300, 303, 322, 324, 325, 326, 368, 424, 450, 453, 501, 513]
)
TORN_554B = frozenset(
    [15, 17, 24, 26, 28, 30, 37, 39, 45, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 88, 94]
    + [125, 127]
)

CC = "claude-code"
EXPECTED: dict[str, Expect] = {
    "claude-code/ccmd-session.jsonl": Expect(CC),
    "claude-code/drm-coverage-test-fix.jsonl": Expect(CC),
    "claude-code/drm-python-to-rust-port.jsonl": Expect(CC),
    # A torn line held the tool_result of one call.
    "claude-code/mclaude-3af9b1a7.jsonl": Expect(CC, {"missing-tool-result": 1}, torn=TORN_3AF9),
    "claude-code/mclaude-3cfce0ff.jsonl": Expect(CC),
    "claude-code/mclaude-43391f62.jsonl": Expect(CC),
    "claude-code/mclaude-554b9fa6.jsonl": Expect(
        CC, {"missing-tool-result": 6, "orphan-tool-result": 18}, torn=TORN_554B
    ),
    "claude-code/mclaude-agent-abc3cb6.jsonl": Expect(CC),
    "claude-code/posthog-claude-session.jsonl": Expect(CC),
    "claude-code/spotter-fa812bfe.jsonl": Expect(CC),
    "claude-code/spotter-fa812bfe/subagents/agent-a93ccab.jsonl": Expect(CC),
    # One API response split over several records with results written between them: read as one
    # message (the parentUuid chain, message.id), it is valid.
    "claude-code/spotter-fa812bfe/subagents/agent-aa84377.jsonl": Expect(CC),
    # The compaction request: user records and a summary, no tool results to clear.
    "claude-code/spotter-fa812bfe/subagents/agent-acompact-70d8e7.jsonl": Expect(
        CC, micro_changes=False, tool_results=False
    ),
    "claude-code/vsla-2cba43de.jsonl": Expect(CC),
    "claude-code/vsla-5f8cbb78.jsonl": Expect(CC),
    "claude-code/vsla-9034225e.jsonl": Expect(CC),
    "claude-code/vsla-dc7e9081.jsonl": Expect(CC),
    "claude-code/vsla-f6108699.jsonl": Expect(CC),
    # 145 function calls and 12 custom tool calls, all answered; a remote compaction 7 lines before the
    # end, after which the model wrote one message.
    "codex/soulpass-codex-session.jsonl": Expect("codex", summarizes=False),
    "openai-chat/hasak1y-transcript_1774924752528_auto.jsonl": Expect("openai"),
    # A manual compaction dump: every old result was already cleared by its runtime.
    "openai-chat/hasak1y-transcript_1774924793206_manual.jsonl": Expect("openai", micro_changes=False),
    # Copilot CLI 1.0.10: 269 tool calls, sub-agent events (parentToolCallId) among them; one compaction
    # (its start and complete 36 events apart), after which the session goes on.
    "copilot-cli/engram-8baa78ec/events.jsonl": Expect("copilot"),
    # Formats no dialect reads yet: refused by every command, the format named.
    "gemini-cli/damini-session-2026-05-19-aacdfa4e.jsonl": Expect("gemini-cli"),
    # one checkpoint holding only the session's own context: no tool result, nothing to clear
    "gemini-cli/damini-session-2026-07-05-a2a-serv.jsonl": Expect(
        "gemini-cli", micro_changes=False, tool_results=False, summarizes=False
    ),
    "gemini-cli/vibe-session-2026-04-25-e435870b.jsonl": Expect("gemini-cli"),
    # Many assistant messages that ended in an error or were aborted: pi never sends them again.
    "pi/coffee-019f300b.jsonl": Expect("pi"),
    # Version 1 (no ids, firstKeptEntryIndex); the second compaction came while a bash call was open (line
    # 628), whose result pi never wrote.
    "pi/pimono-before-compaction.jsonl": Expect("pi", {"missing-tool-result": 1}),
    # Two slash-command records, one prompt and the telemetry of a refused API call: no answer, no tool.
    "qwen-code/crm-portal-67e91b2f.jsonl": Expect(
        "qwen-code", micro_changes=False, tool_results=False, summarizes=False
    ),
    # Stringified assistant blocks; the results were already compacted by its runtime.
    "seed-transcripts/breakinglead-transcript_1782812926.jsonl": Expect("anthropic", micro_changes=False),
}


def corpus_files() -> list[Path]:
    """Every transcript in the corpus, nested folders included; [] when there is no corpus."""
    return sorted(CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else []


def name(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def expectation(path: Path) -> Expect:
    try:
        return EXPECTED[name(path)]
    except KeyError:
        pytest.fail(f"{name(path)} has no row in tests/helpers/corpus.py EXPECTED")


def corpus_params(with_tool_results: bool = False) -> list:
    """pytest parameters, one per corpus file (id: its path in the corpus); optionally only the files
    whose expectation says they hold tool results."""
    return [
        pytest.param(path, id=name(path))
        for path in corpus_files()
        if not with_tool_results or EXPECTED.get(name(path), Expect(None)).tool_results
    ]


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
