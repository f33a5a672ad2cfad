"""Summarizer backends.

- `anthropic`: the Messages API through the official SDK (summaries, token counts, batches).
- `digest`: an offline, deterministic digest of the transcript, no model involved.

Modules here are imported lazily by the commands that need them: `anthropic` pulls in the SDK.
"""
