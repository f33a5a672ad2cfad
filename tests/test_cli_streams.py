"""One stream, one kind of content: with --json, stdout is JSON lines and nothing else in every mode
(--dry-run, --check), a --diff (data) keeps stdout to itself while the JSON goes to stderr, and under
--format github stdout holds workflow commands only (the --dry-run list, for a person, goes to stderr)."""

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


@pytest.mark.parametrize("command", [["micro"], ["summarize", "--backend", "digest"]])
@pytest.mark.parametrize("check", [[], ["--check"]])
def test_github_dry_run_keeps_stdout_for_workflow_commands(
    openai: Path, command: list[str], check: list[str]
) -> None:
    (openai / "broken.jsonl").write_text('{"role": "user", "content": "hi"}\nnot json\n')
    before = untouched(openai)
    done = run_cli(*command, "--format", "github", "--dry-run", *check, openai, text=True)
    assert done.returncode == 65, done.stderr
    annotations = done.stdout.splitlines()
    # the failed file, and under --check each file that would change: annotations and nothing else
    assert len(annotations) == (3 if check else 1), done.stdout
    assert all(line.startswith("::error ") for line in annotations), done.stdout
    assert any("broken.jsonl,line=2," in line for line in annotations)
    # the list of what would change is on stderr, as the text format prints it on stdout
    listed = [line for line in done.stderr.splitlines() if line.startswith(str(openai))]
    text = run_cli(*command, "--dry-run", openai / "flattened.jsonl", openai / "session.jsonl", text=True)
    assert listed == text.stdout.splitlines() and listed
    assert untouched(openai) == before


def test_diff_with_dry_run_keeps_stdout_for_the_diff(openai: Path) -> None:
    done = run_cli("micro", "--diff", "--dry-run", openai, text=True)
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        assert line[:1] in ("-", "+", "@", " "), line
    assert f"{openai / 'session.jsonl'}:4: clear tool result (message) -> [Previous: used grep]" in (
        done.stderr.splitlines()
    )
