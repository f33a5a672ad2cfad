"""Defects found by reviewing summarize, estimate and replay against DESIGN.md, through the real CLI."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "compactcli"]


def run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, env=env or dict(os.environ), capture_output=True, text=True, timeout=120
    )


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def private_key() -> tuple[str, list[str]]:
    """A PEM block of 64-character base64 lines (random bytes: no rule other than the PEM ones fits)."""
    body = base64.b64encode(bytes(range(256)) * 6).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----", lines


def test_digest_task_with_a_private_key_is_redacted_when_clipped(tmp_path: Path) -> None:
    # The task is longer than the digest keeps, and the key's END line falls in the part cut out:
    # what is left of the key must still be redacted in the summary written to the file.
    pem, lines = private_key()
    task = "Deploy the service with this key:\n" + pem + "\n\nThen " + "check the logs carefully. " * 40
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [{"role": "user", "content": task}, {"role": "assistant", "content": "ok"}])
    done = run("summarize", "--backend", "digest", "t.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(path.read_text().splitlines()[0])["content"]
    assert "## Task" in summary
    assert not [line for line in lines if line in summary]
    assert "[REDACTED:private_key]" in summary
    assert "1 secrets redacted" in done.stderr
