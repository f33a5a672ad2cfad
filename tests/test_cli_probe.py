"""`compactcli probe`: which facts of a replaced span survive its summary, through the installed command."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.files import write_jsonl
from helpers.sessions import claude_code_records

ROOT = Path(__file__).resolve().parent.parent
TASK = "Fix the crash in src/app/loader.py and always run pytest with -x"
ERROR = "ValueError: bad config value in load_config"
ORIGINAL = [
    {"role": "user", "content": TASK},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "pytest -x tests"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": ERROR}],
    },
    {"role": "assistant", "content": "See https://example.org/config for the 4821 rows."},
]


write = write_jsonl


def summary_file(path: Path, text: str) -> Path:
    return write(path, [{"role": "user", "content": text}, {"role": "assistant", "content": "Understood."}])


def probe_json(*args: object) -> tuple[int, dict]:
    """The exit code and the figures (`stats`) of probe's Report object."""
    done = run_cli("probe", "--format", "json", *args, text=True)
    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    assert (report["command"], report["exit_code"]) == ("probe", done.returncode)
    return done.returncode, report["stats"]


def test_all_facts_survive(tmp_path: Path) -> None:
    original = write(tmp_path / "orig.jsonl", ORIGINAL)
    last = "See https://example.org/config for the 4821 rows."  # the assistant's last words
    text = f"Task: {TASK}. Ran `pytest -x tests`: {ERROR}. {last}"
    code, report = probe_json(original, summary_file(tmp_path / "short.jsonl", text))
    assert code == 0
    assert report["retention"] == 1.0
    assert report["categories"]["paths"] == {"survived": 1, "total": 1, "retention": 1.0, "missing": []}
    assert report["categories"]["instructions"]["total"] == 1


def test_dropped_facts_are_reported_missing(tmp_path: Path) -> None:
    original = write(tmp_path / "orig.jsonl", ORIGINAL)
    text = "Ran `pytest -x tests`. Docs: https://example.org/config, 4821 rows, load_config."
    code, report = probe_json(original, summary_file(tmp_path / "short.jsonl", text))
    assert code == 0  # no --min-retention: a report, not a gate
    categories = report["categories"]
    assert categories["paths"]["missing"] == ["src/app/loader.py"]
    assert categories["errors"]["missing"] == [ERROR]
    assert categories["instructions"]["missing"] == [TASK]
    assert categories["urls"]["missing"] == []
    assert categories["commands"]["missing"] == []
    assert report["retention"] < 1


def test_table_names_what_is_missing(tmp_path: Path) -> None:
    original = write(tmp_path / "orig.jsonl", ORIGINAL)
    done = run_cli("probe", original, summary_file(tmp_path / "short.jsonl", "nothing kept"), text=True)
    assert done.returncode == 0
    assert "missing paths: src/app/loader.py" in done.stdout
    assert f"missing errors: {ERROR}" in done.stdout


@pytest.mark.parametrize(("minimum", "code"), [("0.5", 0), ("0.51", 1), ("0", 0), ("1", 1)])
def test_min_retention_boundary(tmp_path: Path, minimum: str, code: int) -> None:
    # Two facts, counted by hand: the path src/app.py and the instruction itself; the summary keeps one.
    original = write(tmp_path / "orig.jsonl", [{"role": "user", "content": "Edit src/app.py"}])
    short = summary_file(tmp_path / "short.jsonl", "Worked on src/app.py.")
    done, report = probe_json("--min-retention", minimum, original, short)
    assert (report["survived"], report["total"]) == (1, 2)
    assert done == code


def test_bad_line_is_refused_with_its_place(tmp_path: Path) -> None:
    original = tmp_path / "orig.jsonl"
    original.write_text(json.dumps(ORIGINAL[0]) + "\n{not json\n")
    done = run_cli("probe", original, summary_file(tmp_path / "short.jsonl", "x"), text=True)
    assert done.returncode == 65
    assert f"{original}:2" in done.stderr
    assert done.stdout == ""


def test_file_without_messages_is_refused(tmp_path: Path) -> None:
    original = tmp_path / "orig.jsonl"
    original.write_text("")
    done = run_cli("probe", original, summary_file(tmp_path / "short.jsonl", "x"), text=True)
    assert done.returncode == 65
    assert "no conversation" in done.stderr


@pytest.mark.parametrize("dialect", ["anthropic", "claude-code", "openai"])
def test_digest_summary_of_a_sample(tmp_path: Path, dialect: str) -> None:
    session = tmp_path / "session.jsonl"
    shutil.copy(ROOT / "samples" / dialect / "session.jsonl", session)
    short = tmp_path / "short.jsonl"
    made = run_cli("summarize", "--backend", "digest", "-o", short, session, text=True)
    assert made.returncode == 0, made.stderr
    code, report = probe_json(session, short)
    assert code == 0
    assert report["dialect"] == dialect
    assert report["replaced_records"] > 0
    # The digest lists the commands it ran (docs/design.md, "probe"); a sample's paths partly survive.
    assert report["categories"]["commands"]["total"] > 0
    assert report["categories"]["paths"]["survived"] > 0
    assert 0 < report["retention"] < 1


def test_codex_rollout_is_read_through_its_dialect(tmp_path: Path) -> None:
    from helpers import codex_rollout

    rollout = codex_rollout.write(tmp_path / "rollout.jsonl")
    ask = "Add a --json flag to tally so that it prints the counts as a JSON object."
    code, report = probe_json(rollout, summary_file(tmp_path / "short.jsonl", f"{ask} Edited tally/cli.py."))
    assert code == 0
    assert report["dialect"] == "codex"
    categories = report["categories"]
    assert "rg -n 'def ' tally" in categories["commands"]["missing"]
    assert ask not in categories["instructions"]["missing"]
    assert "tally/cli.py" not in categories["paths"]["missing"]
    assert "/home/dev/tally/tally/cli.py" in categories["paths"]["missing"]


def test_only_the_users_own_words_are_instructions(tmp_path: Path) -> None:
    # A Claude Code session: an isMeta record (a hook's note in the user's turn) and a local command's
    # caveat are not instructions; the one thing the user typed is the only one.
    rows = [
        ("user", "Rename load_config to read_config", {}),
        ("user", "<system-reminder>PostToolUse hook: 3 lint warnings</system-reminder>", {"isMeta": True}),
        ("user", "<local-command-stdout>done</local-command-stdout>", {}),
        ("assistant", [{"type": "text", "text": "Renamed."}], {}),
    ]
    records = claude_code_records(rows)
    original = write(tmp_path / "cc.jsonl", records)
    _, report = probe_json(original, summary_file(tmp_path / "short.jsonl", "nothing kept"))
    assert report["categories"]["instructions"]["missing"] == ["Rename load_config to read_config"]


# --- errors are what failed -----------------------------------------------------------------------

CODE = "class LedgerError(ValueError):\n    pass\n\nexcept OSError as error:\n    raise\nerror: str = ''\n"
FAILED_TEST = (
    'Exit code 1\nTraceback (most recent call last):\n  File "x.py"\nValueError: amount is not a number'
)
REFUSED = "<tool_use_error>File has not been read yet. Read it first.</tool_use_error>"
MAKE = "cc -c a.c\nmake: *** No rule to make target 'clean'. Stop.\nProcess exited with code 2"


def failing_session() -> list[dict]:
    def call(call_id: str, name: str, **tool_input) -> dict:
        return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}

    def answer(call_id: str, text: str, **extra) -> dict:
        return {"type": "tool_result", "tool_use_id": call_id, "content": text, **extra}

    return [
        {"role": "user", "content": "Make the ledger tests pass"},
        {
            "role": "assistant",
            "content": [call("r", "read_file", path="a.py"), call("t", "bash", command="pytest")],
        },
        # code that names errors is no failure; the test run is
        {"role": "user", "content": [answer("r", CODE), answer("t", FAILED_TEST, is_error=True)]},
        {
            "role": "assistant",
            "content": [call("w", "write_file", path="b.txt"), call("m", "bash", command="make")],
        },
        {"role": "user", "content": [answer("w", REFUSED, is_error=True), answer("m", MAKE)]},
    ]


def test_errors_are_what_failed_not_code_that_names_an_error(tmp_path: Path) -> None:
    original = write(tmp_path / "orig.jsonl", failing_session())
    code, report = probe_json(original, summary_file(tmp_path / "short.jsonl", "nothing kept"))
    assert code == 0
    # By hand: the exception line of the traceback, the refused call's message (its tags off), and the
    # telling last line of the command that exited 2; nothing of the file read, no bare exit line.
    assert report["categories"]["errors"]["missing"] == [
        "ValueError: amount is not a number",
        "File has not been read yet. Read it first.",
        "make: *** No rule to make target 'clean'. Stop.",
    ]


def test_a_continuations_needs_are_reported_apart_from_the_long_tail(tmp_path: Path) -> None:
    records = [
        *failing_session(),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "m2", "name": "bash", "input": {"command": "make"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "m2", "content": "built"}]},
        {"role": "assistant", "content": "The build passes; pytest still fails on the amount."},
    ]
    original = write(tmp_path / "orig.jsonl", records)
    kept = "Make the ledger tests pass. Changed b.txt. ValueError: amount is not a number"
    code, report = probe_json(original, summary_file(tmp_path / "short.jsonl", kept))
    categories = report["categories"]
    # By hand: the writing tool's path; make failed, then ran clean (resolved); pytest and the refused
    # write are unresolved at the end; the last words are the assistant's last message.
    assert (categories["files_changed"]["total"], categories["files_changed"]["missing"]) == (1, [])
    assert categories["unresolved_errors"]["missing"] == ["File has not been read yet. Read it first."]
    assert categories["unresolved_errors"]["total"] == 2
    assert categories["last_state"]["missing"] == ["The build passes; pytest still fails on the amount."]
    # continuation: files_changed 1/1, instructions 1/1, unresolved_errors 1/2, last_state 0/1
    assert report["continuation"] == {"survived": 3, "total": 5, "retention": 0.6}
    tail = [categories[n] for n in ("paths", "commands", "errors", "urls", "identifiers", "numbers")]
    assert report["long_tail"]["total"] == sum(c["total"] for c in tail)
    assert report["long_tail"]["survived"] == sum(c["survived"] for c in tail)
    facts = ("paths", "commands", "errors", "urls", "identifiers", "numbers", "instructions")
    assert report["total"] == sum(categories[n]["total"] for n in facts)  # each fact once
    table = run_cli("probe", original, tmp_path / "short.jsonl", text=True).stdout
    assert re.search(r"^continuation\s+3\s+5\s+0\.60$", table, flags=re.M), table
