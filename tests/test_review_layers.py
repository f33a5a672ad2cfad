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


def summarize_through_fake_api(fake_api, tmp_path: Path, text: str) -> str:
    """Summarize a transcript holding `text` (as user text and as a tool result) through the fake
    API; returns everything the API was sent."""
    path = tmp_path / "s.jsonl"
    write_jsonl(
        path,
        [
            {"role": "user", "content": "Set up the deploy. " + text},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]},
            {"role": "assistant", "content": "done"},
        ],
    )
    done = run("summarize", "--backend", "anthropic", "s.jsonl", cwd=tmp_path, env=fake_api.env())
    assert done.returncode == 0, done.stderr
    return json.dumps([call.body for call in fake_api.calls("messages")])


PGP_KEY = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    "lQOYBGXk1cABCADPp3Bj7aQwXyZ0123456789abcdefghijklmnopqrstuvwxyzAB\n"
    "Qm9keU9mVGhlS2V5SXNIZXJlQW5kSXRNdXN0Tm90TGVhdmVUaGVNYWNoaW5lMTIz\n"
    "=Xy9Z\n"
    "-----END PGP PRIVATE KEY BLOCK-----"
)


def test_pgp_private_key_block_is_not_sent(fake_api, tmp_path: Path) -> None:
    sent = summarize_through_fake_api(fake_api, tmp_path, "gpg --import <<EOF\n" + PGP_KEY + "\nEOF")
    assert "lQOYBGXk1cABCADPp3Bj7aQw" not in sent
    assert "Qm9keU9mVGhlS2V5SXNIZXJl" not in sent
    assert "[REDACTED:private_key]" in sent


def test_dotenv_password_of_letters_only_is_not_sent(fake_api, tmp_path: Path) -> None:
    # `cat .env` output: upper-case names are settings, so a value of letters is still a secret.
    dotenv = "DB_HOST=localhost\nDB_PASSWORD=correcthorsebattery\nSECRET_TOKEN=staplegunwizard\n"
    sent = summarize_through_fake_api(fake_api, tmp_path, dotenv)
    assert "correcthorsebattery" not in sent
    assert "staplegunwizard" not in sent
    assert "DB_HOST=localhost" in sent  # not a secret
