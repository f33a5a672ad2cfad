"""Shared test helpers: running the CLI, and the real transcripts of ../shared/corpus."""
