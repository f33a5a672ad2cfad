"""One stream, one kind of content: with --json, stdout is JSON lines and nothing else in every mode
(--dry-run, --check), and a --diff (data) keeps stdout to itself while the JSON goes to stderr."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture
def openai(tmp_path: Path) -> Path:
    folder = tmp_path / "openai"
    shutil.copytree(SAMPLES / "openai", folder)
    return folder


def json_lines(text: str) -> list[dict]:
    """Every line parsed as a JSON object: a line that is not one fails the test."""
    objects = [json.loads(line) for line in text.splitlines()]
    assert all(isinstance(o, dict) for o in objects)
    return objects


def untouched(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("command", [["micro"], ["summarize", "--backend", "digest"]])
def test_dry_run_json_is_only_json_on_stdout(openai: Path, command: list[str]) -> None:
    before = untouched(openai)
    done = run_cli(*command, "--json", "--dry-run", openai, text=True)
    assert done.returncode == 0, done.stderr
    objects = json_lines(done.stdout)
    assert [Path(o["path"]).name for o in objects] == ["flattened.jsonl", "session.jsonl"]
    for obj in objects:
        assert obj["status"] == "would-change"
        # the text list of the changes is in the object, not beside it
        assert obj["stats"]["changes"] and all(set(c) == {"line", "change"} for c in obj["stats"]["changes"])
    assert untouched(openai) == before


def test_dry_run_changes_name_the_lines_the_text_list_names(openai: Path) -> None:
    text = run_cli("micro", "--dry-run", openai, text=True)
    listed = [line for line in text.stdout.splitlines() if line]
    objects = json_lines(run_cli("micro", "--json", "--dry-run", openai, text=True).stdout)
    from_json = [f"{o['path']}:{c['line']}: {c['change']}" for o in objects for c in o["stats"]["changes"]]
    assert listed == from_json
    assert any(":8: clear tool result (message) -> [Previous: used grep]" in line for line in listed)


@pytest.mark.parametrize("command", [["micro"], ["summarize", "--backend", "digest"]])
def test_diff_json_keeps_stdout_for_the_diff(openai: Path, command: list[str]) -> None:
    done = run_cli(*command, "--json", "--diff", openai, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"--- {openai / 'flattened.jsonl'}\n")
    assert '"schema_version"' not in done.stdout
    for line in done.stdout.splitlines():
        assert line[:1] in ("-", "+", "@", " "), line
    objects = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [o["status"] for o in objects] == ["would-change", "would-change"]
    # the summary line is the only other thing on stderr
    others = [line for line in done.stderr.splitlines() if not line.startswith("{")]
    assert others[-1].startswith("2 files would be ")


def test_check_json_is_only_json_on_stdout(openai: Path) -> None:
    done = run_cli("micro", "--json", "--check", openai, text=True)
    assert done.returncode == 1
    assert [o["exit_code"] for o in json_lines(done.stdout)] == [1, 1]
