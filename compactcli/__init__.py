"""compactcli: compact saved LLM-agent conversation transcripts."""

__version__ = "0.1.0"
