"""docs/json-output.schema.json: a valid JSON Schema that docs/json-output.md and the installed command's
--format json and --format json-document output agree with."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.cli import run_cli

jsonschema = pytest.importorskip("jsonschema", reason="the test extra's jsonschema checks the schema")

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "docs" / "json-output.schema.json").read_text())
DOC = (REPO / "docs" / "json-output.md").read_text()
SAMPLES = REPO / "samples"
COMMANDS = ("micro", "summarize", "estimate", "validate", "replay", "restore", "prune", "probe")


def validator():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


def problems(obj: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(obj)]


def section(command: str) -> str:
    return DOC.split(f"### {command}\n", 1)[1].split("\n#", 1)[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_schema_lists_the_stats_keys_the_doc_names(command: str) -> None:
    listed = set(SCHEMA["$defs"][f"stats_{command}"]["properties"])
    text = section(command)
    named = set(re.findall(r"`(\w+)`", text))
    assert listed <= named, listed - named  # each key of the schema is said in the doc
    leading = set()  # the keys a bullet opens with, before what it says of them
    for line in text.splitlines():
        if line.startswith("- `"):
            leading.update(re.findall(r"`(\w+)`", line.split(":", 1)[0]))
    assert leading <= listed, leading - listed
    assert SCHEMA["$defs"]["command"]["enum"] == list(COMMANDS)


def test_the_schemas_file_object_is_the_docs_fields_table() -> None:
    fields = DOC.split("## Fields", 1)[1].split("\n## ", 1)[0]
    table = re.findall(r"^\| `(\w+)` \|", fields, flags=re.M)
    assert SCHEMA["$defs"]["file"]["required"] == table
    assert set(SCHEMA["$defs"]["file"]["properties"]) == set(table)
    assert SCHEMA["$defs"]["exit_code"]["enum"] == [0, 1, 65, 69, 74, 75]


def test_an_object_off_the_schema_is_caught() -> None:
    good = {"schema_version": 1, "command": "estimate", "path": "a", "status": "ok", "exit_code": 0,
            "message": "", "stats": {"tokens": 3}}  # fmt: skip
    assert problems(good) == []
    assert problems({**good, "exit_code": 3})
    assert problems({**good, "stats": {"tokens": "3"}})
    assert problems({**good, "extra": 1})
    assert problems(
        {"schema_version": 1, "command": "estimate", "exit_code": 0, "files": [good]}
    )  # no totals


def lines_and_document(*args: object, cwd: Path) -> tuple[list[dict], dict]:
    streamed = run_cli(*args, "--format", "json", cwd=cwd, text=True)
    whole = run_cli(*args, "--format", "json-document", cwd=cwd, text=True)
    assert streamed.returncode == whole.returncode, streamed.stderr + whole.stderr
    objects = [json.loads(line) for line in streamed.stdout.splitlines()]
    [document] = [json.loads(line) for line in whole.stdout.splitlines()]  # one line, one document
    for obj in objects:
        assert problems(obj) == [], (args, obj)
    assert problems(document) == [], args
    assert document["exit_code"] == whole.returncode
    return objects, document


def test_estimate_json_document_has_the_files_and_their_totals(tmp_path: Path) -> None:
    objects, document = lines_and_document(
        "estimate", "--max-tokens", "9000", "--top", "1", SAMPLES, cwd=tmp_path
    )
    assert document["command"] == "estimate" and document["exit_code"] == 1  # some samples are over 9,000
    assert sorted(document["files"], key=lambda o: o["path"]) == sorted(objects, key=lambda o: o["path"])
    totals = document["totals"]
    stats = [o["stats"] for o in objects]
    assert totals["files"] == len(objects) == len(list(SAMPLES.glob("*/*.jsonl")))
    assert totals["tokens"] == sum(s["tokens"] for s in stats)
    assert totals["bytes"] == sum(p.stat().st_size for p in SAMPLES.glob("*/*.jsonl"))
    assert totals["over"] == sum(s["tokens"] > 9000 for s in stats) == totals["by_status"]["over"]
    assert totals["by_status"]["over"] + totals["by_status"].get("ok", 0) == len(objects)
    assert (totals["method"], totals["max_tokens"]) == ("auto", 9000)
    for name in ("recorded", "added", "overhead"):
        assert totals["parts"].get(name, 0) == sum(s["parts"].get(name, 0) for s in stats)
    for s in stats:  # every number of the count has its part
        assert s["tokens"] == sum(s["parts"].values()), s


def test_every_command_json_and_document_are_on_the_schema(tmp_path: Path) -> None:
    work = tmp_path / "s"
    for sample in ("anthropic", "claude-code", "openai"):
        (work / sample).mkdir(parents=True)
        for path in (SAMPLES / sample).glob("*.jsonl"):
            (work / sample / path.name).write_bytes(path.read_bytes())
    session = "s/claude-code/session.jsonl"
    runs = [
        ("validate", "s"),
        ("micro", "--dry-run", "s"),
        ("summarize", "--backend", "digest", "--threshold", "0", "--dry-run", "s"),
        ("replay", "--backend", "digest", session),
        ("replay", "--backend", "digest", "--compare", session),
        ("probe", session, session),
    ]
    for args in runs:
        objects, document = lines_and_document(*args, cwd=tmp_path)
        assert document["files"] == objects, args
        assert document["totals"]["files"] == len(objects)
    # Commands that change files: the document run on a fresh copy of what the lines run saw.
    micro_lines = run_cli("micro", "--json", "s/openai", cwd=tmp_path, text=True)
    for line in micro_lines.stdout.splitlines():
        assert problems(json.loads(line)) == []
    restored = run_cli("restore", "--format", "json-document", "s/openai", cwd=tmp_path, text=True)
    document = json.loads(restored.stdout)
    assert problems(document) == [] and document["totals"]["by_status"] == {"restored": 2}
    pruned = run_cli(
        "prune", "--keep-last", "0", "--format", "json-document", "s/openai", cwd=tmp_path, text=True
    )
    document = json.loads(pruned.stdout)
    assert problems(document) == [] and document["totals"]["bytes_freed"] > 0
    micro = run_cli("micro", "--format", "json-document", "s/anthropic", cwd=tmp_path, text=True)
    document = json.loads(micro.stdout)
    assert problems(document) == []
    sizes = [o["stats"] for o in document["files"]]
    assert document["totals"]["bytes_after"] == sum(s["bytes_after"] for s in sizes)
    assert document["totals"]["bytes_after"] == sum(
        p.stat().st_size for p in (work / "anthropic").glob("*.jsonl")
    )
