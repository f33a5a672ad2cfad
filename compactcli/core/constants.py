"""Values the commands' option declarations and a run the cache answers need, in a module that imports
nothing: `--help` and a second cron run then need not load transcript reading, the layers, the
backends or their regular expressions just to learn a default or a list of choices.

Each value lives here only; the modules that work with it import it from here.
"""

from __future__ import annotations

# transcript: inputs and bad-input handling
STDIN = "-"
ON_INVALID = ("error", "keep")

# micro (layers/micro.py)
DEFAULT_PLACEHOLDER = "[Previous: used {tool_name}]"
# Each agent's own file-read tool: Codex's, Gemini CLI's and Qwen Code's read_file, Claude Code's Read,
# pi's read, Copilot CLI's view.
DEFAULT_PRESERVE = frozenset({"read_file", "Read", "read", "view"})

# token counting (context.py)
METHODS = ("auto", "seed", "heuristic", "api", "usage")
DEFAULT_METHOD = "heuristic"  # for the thresholds of micro, summarize and replay
ESTIMATE_METHOD = "auto"  # estimate's: what the next call would send (docs/design.md, "Estimate")

# summaries (layers/summarize.py, backends/)
BACKENDS = ("auto", "anthropic", "openai", "claude-code", "codex", "digest")
OPENAI_APIS = ("chat", "responses")  # --openai-api: Chat Completions, or the Responses API
DEFAULT_SUMMARY_TOKENS = 8192
DEFAULT_MAX_INPUT_TOKENS = 150_000
DEFAULT_MODEL = "claude-sonnet-5-5"  # the anthropic backend's
# The user's own messages kept verbatim after a summary, newest first (what Codex keeps).
USER_MESSAGES_TOKENS = 20_000

# estimate (pipelines/estimate_file.py): how a file ends besides failing
UNDER, OVER, NO_USAGE = "ok", "over", "no-usage"
NO_USAGE_TEXT = "no usage recorded"

# replay (layers/replay.py) and replay --compare (layers/compare.py)
DEFAULT_THRESHOLD = 50_000
DEFAULT_THRESHOLDS = (50_000, 100_000, 150_000)
