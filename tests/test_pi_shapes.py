"""Kinds of entries real pi sessions hold beyond the corpus (docs/design.md, "pi sessions"): version 2's
`hookMessage`, redacted thinking, images in the messages extensions inject."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import run_cli
from helpers.pi_entries import Session, call, image, text


def _estimate(path: Path) -> dict:
    done = run_cli("estimate", "--json", "--method", "heuristic", path, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["stats"]


def test_a_version_2_hook_message_is_the_custom_message_pi_renames_it_to(tmp_path: Path):
    session = Session(version=2)
    session.user([text("hi")])
    hooked = "the hook reminds you to run the tests " * 20
    session.message("hookMessage", customType="plan", content=hooked, display=True)
    session.assistant(text("ok"), stop="stop")
    path = session.write(tmp_path / "v2.jsonl")
    done = run_cli("validate", path, text=True)
    assert done.returncode == 0, done.stdout  # pi sends it as a user message (migrateV2ToV3, convertToLlm)
    assert run_cli("summarize", "--backend", "digest", "--keep-last", "1", path).returncode == 0
    assert run_cli("validate", path).returncode == 0
    assert json.loads(path.read_text().splitlines()[-1])["type"] == "compaction"


def _redacted(signature: str) -> Session:
    session = Session()
    session.user([text("go")])
    thinking = {"type": "thinking", "thinking": "[Reasoning redacted]", "redacted": True}
    session.assistant(dict(thinking, thinkingSignature=signature), text("done"), stop="stop")
    return session


def test_redacted_thinking_is_counted_by_its_payload_the_signature(tmp_path: Path):
    short = _estimate(_redacted("x").write(tmp_path / "short.jsonl"))
    long = _estimate(_redacted("E" * 4000).write(tmp_path / "long.jsonl"))
    # pi sends the payload back as a redacted_thinking block's data (pi-ai anthropic.ts)
    assert long["by_category"]["thinking"] > short["by_category"]["thinking"] + 100


def test_keep_images_replaces_the_images_extensions_injected_and_keeps_their_details(tmp_path: Path):
    session = Session()
    session.user([text("see"), image()])
    injected = [text("screen"), image("image/jpeg")]
    session.add("custom_message", customType="shot", content=injected, display=True)
    session.message("custom", customType="shot", content=[image()], display=False, details={"kept": 1})
    session.assistant(call("c1", "read", path="/w/a.png"))
    session.result("c1", [text("Read image file"), image()], name="read")
    session.assistant(text("seen"), stop="stop")
    path = session.write(tmp_path / "s.jsonl")
    done = run_cli("micro", "--keep-images", "0", "--keep", "9", path, text=True)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert '"image"' not in path.read_text()
    custom_entry, custom = records[2], records[3]["message"]
    assert custom_entry["content"][1] == {"type": "text", "text": custom_entry["content"][1]["text"]}
    assert custom_entry["content"][1]["text"].startswith("[image removed: image/jpeg")
    assert custom["details"] == {"kept": 1}  # an extension's own data, no copy of the image
    assert _estimate(path)["by_category"]["images"] == 0
    assert run_cli("validate", path).returncode == 0
