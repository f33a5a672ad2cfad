"""The one Report every command speaks through, from the outside: the exit-code order of a mixed run,
the JSON objects against docs/json-output.md, --format and --dialect, --check naming files, a closed
pipe, and a missing API key."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.cli import run_cli

from compactcli.report import Outcome, exit_code
from compactcli.storage.locks import file_lock

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "json-output.md"
ORDER = [74, 65, 69, 75, 1]  # the README's and docs/json-output.md's order, most serious first


# --- samples of our own ----------------------------------------------------------------------------


def tool_session(turns: int = 6, size: int = 400) -> bytes:
    """An Anthropic transcript whose old tool results micro clears."""
    records: list[dict] = [{"role": "user", "content": "Look at the logs."}]
    for n in range(turns):
        records.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {}}],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"line {n} " + "x" * size}
        records.append({"role": "user", "content": [result]})
    records.append({"role": "assistant", "content": "Done."})
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def invalid_session() -> bytes:
    """Valid JSON, but a tool use that is never answered: validate says invalid (exit 1)."""
    records = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {}}]},
        {"role": "user", "content": "never mind"},
        {"role": "assistant", "content": "ok"},
    ]
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


BAD = b'{"role": "user", "content": "hi"}\n{not json\n'


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# --- the exit-code order ---------------------------------------------------------------------------


def test_exit_code_follows_the_documented_order_for_any_mix() -> None:
    for size in range(1, len(ORDER) + 1):
        for codes in itertools.permutations(ORDER + [0], size):
            outcomes = [Outcome(f"f{n}", "x", code) for n, code in enumerate(codes)]
            expected = next((code for code in ORDER if code in codes), 0)
            assert exit_code(outcomes) == expected, codes


def test_the_documented_order_is_the_readme_order() -> None:
    doc = DOC.read_text()
    assert (
        "74 (I/O error), 65 (bad input data), 69\n(summarizer or API unavailable), 75 (busy, retry later), 1"
        in doc
    )


@pytest.mark.parametrize("command", ["micro", "summarize"])
def test_mixed_batch_in_place(tmp_path: Path, command: str) -> None:
    """I/O error (a named pipe cannot be rewritten in place) > bad data > busy (locked)."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    bad = write(tmp_path / "bad.jsonl", BAD)
    locked = write(tmp_path / "locked.jsonl", tool_session())
    extra = ("--backend", "digest") if command == "summarize" else ()
    with file_lock(locked, None):
        everything = run_cli(command, *extra, fifo, bad, locked, text=True)
        no_fifo = run_cli(command, *extra, bad, locked, text=True)
        only_busy = run_cli(command, *extra, locked, text=True)
    assert (everything.returncode, no_fifo.returncode, only_busy.returncode) == (74, 65, 75), (
        everything.stderr + no_fifo.stderr + only_busy.stderr
    )
    assert locked.read_bytes() == tool_session()


def test_mixed_batch_summarize_api_unavailable(tmp_path: Path) -> None:
    """Bad data (65) > API unavailable (69) > busy (75)."""
    bad = write(tmp_path / "bad.jsonl", BAD)
    good = write(tmp_path / "good.jsonl", tool_session())
    locked = write(tmp_path / "locked.jsonl", tool_session())
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    base = ("summarize", "--backend", "anthropic", "--max-retries", "0", "--timeout", "5")
    with file_lock(locked, None):
        all_three = run_cli(*base, bad, good, locked, env=env, text=True)
        api_and_busy = run_cli(*base, good, locked, env=env, text=True)
    assert (all_three.returncode, api_and_busy.returncode) == (65, 69), all_three.stderr + api_and_busy.stderr
    assert good.read_bytes() == tool_session()


def test_mixed_batch_micro_check(tmp_path: Path) -> None:
    """Bad data (65) > would change under --check (1)."""
    bad = write(tmp_path / "bad.jsonl", BAD)
    todo = write(tmp_path / "todo.jsonl", tool_session())
    assert run_cli("micro", "--check", todo, bad).returncode == 65
    assert run_cli("micro", "--check", todo).returncode == 1


def test_mixed_batch_estimate(tmp_path: Path) -> None:
    """Bad data (65) > over --max-tokens (1)."""
    bad = write(tmp_path / "bad.jsonl", BAD)
    big = write(tmp_path / "big.jsonl", tool_session())
    assert run_cli("estimate", "--max-tokens", "10", big, bad).returncode == 65
    assert run_cli("estimate", "--max-tokens", "10", big).returncode == 1


def test_mixed_batch_validate(tmp_path: Path) -> None:
    """Bad data (65) > invalid conversation (1)."""
    bad = write(tmp_path / "bad.jsonl", BAD)
    invalid = write(tmp_path / "invalid.jsonl", invalid_session())
    assert run_cli("validate", invalid, bad).returncode == 65
    assert run_cli("validate", invalid).returncode == 1


def test_mixed_batch_replay(tmp_path: Path) -> None:
    """replay takes one file: its code is that file's (bad data: 65), reported like any other."""
    bad = write(tmp_path / "bad.jsonl", BAD)
    done = run_cli("replay", "--backend", "digest", "--json", bad, text=True)
    assert done.returncode == 65
    [obj] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (obj["status"], obj["exit_code"]) == ("failed", 65)


def test_mixed_batch_restore_io_error_beats_busy(tmp_path: Path) -> None:
    """I/O error (an archive that no longer matches its manifest) > busy (locked) > no history (1).
    restore used to pick max(): 75 over 74."""
    tampered = write(tmp_path / "tampered.jsonl", tool_session())
    locked = write(tmp_path / "locked.jsonl", tool_session())
    plain = write(tmp_path / "plain.jsonl", tool_session())
    assert run_cli("micro", tampered, locked).returncode == 0
    [archive] = (tmp_path / ".transcripts").glob("tampered.*.jsonl")
    archive.write_bytes(b"changed\n")
    with file_lock(locked, None):
        three = run_cli("restore", tampered, locked, plain, text=True)
        two = run_cli("restore", locked, plain, text=True)
    assert (three.returncode, two.returncode) == (74, 75), three.stderr + two.stderr
    assert run_cli("restore", plain).returncode == 1


# --- JSON against docs/json-output.md --------------------------------------------------------------


def documented_fields() -> list[str]:
    section = DOC.read_text().split("## Fields", 1)[1].split("##", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.M)


def documented_stats(command: str) -> set[str]:
    section = DOC.read_text().split(f"### {command}\n", 1)[1].split("###", 1)[0]
    return set(
        re.findall(
            r"`(\w+)`", "\n".join(line for line in section.splitlines() if line.startswith(("- ", "  ")))
        )
    )


def json_objects(*args: object, cwd: Path) -> list[dict]:
    done = run_cli(*args, "--json", cwd=cwd, text=True)
    assert done.returncode in (0, 1, 65), done.stderr
    objects = [json.loads(line) for line in done.stdout.splitlines()]
    assert objects, done.stderr
    return objects


def test_json_of_every_command_has_the_documented_fields(tmp_path: Path) -> None:
    fields = documented_fields()
    assert fields == ["schema_version", "command", "path", "status", "exit_code", "message", "stats"]
    write(tmp_path / "a.jsonl", tool_session())
    write(tmp_path / "b.jsonl", BAD)
    write(tmp_path / "c.jsonl", invalid_session())
    runs = {
        "micro": [("micro", "--check", "."), ("micro", "a.jsonl", "b.jsonl")],
        "summarize": [
            ("summarize", "--backend", "digest", "--check", "."),
            ("summarize", "--backend", "digest", "a.jsonl"),
        ],
        "estimate": [("estimate", "--top", "1", "--max-tokens", "50", ".")],
        "validate": [("validate", "c.jsonl", "b.jsonl")],
        "replay": [
            ("replay", "--backend", "digest", "--threshold", "300", "c.jsonl"),
            ("replay", "--backend", "digest", "--keep", "1,2", "c.jsonl"),
            ("replay", "--backend", "digest", "--compare", "--threshold", "300", "c.jsonl"),
        ],
        "restore": [("restore", "--list", "a.jsonl"), ("restore", "a.jsonl")],
        "prune": [("prune", "--keep-last", "0", "--dry-run", "a.jsonl"), ("prune", "--keep-last", "0", ".")],
        "probe": [("probe", "c.jsonl", "a.jsonl"), ("probe", "--min-retention", "1", "a.jsonl", "c.jsonl"),
                  ("probe", "b.jsonl", "a.jsonl")],
    }  # fmt: skip
    for command, calls in runs.items():
        allowed = documented_stats(command)
        assert allowed, command
        for args in calls:
            for obj in json_objects(*args, cwd=tmp_path):
                assert list(obj) == fields, args
                assert obj["schema_version"] == 1 and obj["command"] == command
                assert isinstance(obj["exit_code"], int) and isinstance(obj["message"], str)
                assert set(obj["stats"]) <= allowed, (args, set(obj["stats"]) - allowed)


def test_failed_file_is_one_object_like_the_others(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.jsonl", BAD)
    for command in ("micro", "estimate", "validate"):
        done = run_cli(command, "--json", bad, text=True)
        [obj] = [json.loads(line) for line in done.stdout.splitlines()]
        assert (obj["status"], obj["exit_code"]) == ("failed", 65)
        assert obj["message"].startswith(f"{bad}:2:")


# --- --format and --dialect ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["micro", "summarize", "estimate", "validate", "replay"])
def test_format_names_the_output_and_a_dialect_there_points_to_dialect(tmp_path: Path, command: str) -> None:
    path = write(tmp_path / "a.jsonl", tool_session())
    done = run_cli(command, "--format", "anthropic", path, text=True)
    assert done.returncode == 2
    assert "use --dialect anthropic" in done.stderr
    assert path.read_bytes() == tool_session()


def test_dialect_option_reads_the_input_as_that_dialect(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", tool_session())
    done = run_cli("validate", "--dialect", "anthropic", "--json", path, text=True)
    assert json.loads(done.stdout)["stats"]["dialect"] == "anthropic"
    done = run_cli("validate", "--dialect", "openai", "--json", path, text=True)
    assert json.loads(done.stdout)["stats"]["dialect"] == "openai"


def test_json_and_another_format_is_a_usage_error(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", tool_session())
    done = run_cli("estimate", "--json", "--format", "csv", path, text=True)
    assert done.returncode == 2 and "--json" in done.stderr and done.stdout == ""


def test_validate_github_annotations(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", invalid_session())
    done = run_cli("validate", "--format", "github", path, text=True)
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    assert line.startswith(f"::error file={path},line=2,title=missing-tool-result::")


def test_micro_check_github_annotations_name_each_file(tmp_path: Path) -> None:
    todo = write(tmp_path / "todo.jsonl", tool_session())
    done_already = write(tmp_path / "short.jsonl", tool_session(turns=1, size=10))
    done = run_cli("micro", "--check", "--format", "github", tmp_path, text=True)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"::error file={todo},title=compactcli compact::would compact {todo} (would clear 3 tool results)"
    ]
    assert done_already.read_bytes() == tool_session(turns=1, size=10)


# --- --check names each file -----------------------------------------------------------------------


def test_check_names_each_file_that_would_change(tmp_path: Path) -> None:
    first = write(tmp_path / "one.jsonl", tool_session())
    second = write(tmp_path / "two.jsonl", tool_session())
    write(tmp_path / "fine.jsonl", tool_session(turns=1, size=10))
    done = run_cli("micro", "--check", tmp_path, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"would compact {first} (would clear 3 tool results)",
        f"would compact {second} (would clear 3 tool results)",
        "2 files would be compacted, 1 unchanged",
    ]
    assert run_cli("micro", "--check", "-q", tmp_path, text=True).stderr == ""


# --- a closed pipe ---------------------------------------------------------------------------------


def closed_pipe_run(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    """Run with stdout a pipe whose reader is already gone (`| head` that has finished)."""
    read, write_end = os.pipe()
    os.close(read)
    try:
        return run_cli(*args, stdout=write_end, cwd=cwd)
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ("micro", "-o", "-", "a.jsonl"),
        ("summarize", "--backend", "digest", "-q", "-o", "-", "a.jsonl"),
        ("estimate", "."),
        ("estimate", "--json", "."),
        ("validate", "c.jsonl"),
        ("micro", "--diff", "a.jsonl"),
        ("replay", "--backend", "digest", "c.jsonl"),
        ("restore", "--list", "a.jsonl"),
    ],
)
def test_closed_pipe_ends_quietly_with_exit_0(tmp_path: Path, args: tuple) -> None:
    write(tmp_path / "a.jsonl", tool_session())
    write(tmp_path / "c.jsonl", invalid_session())
    if args[0] == "restore":
        assert run_cli("micro", "a.jsonl", cwd=tmp_path).returncode == 0
    before = (tmp_path / "a.jsonl").read_bytes()
    done = closed_pipe_run(*args, cwd=tmp_path)
    assert (done.returncode, done.stderr.decode()) == (0, "")
    assert (tmp_path / "a.jsonl").read_bytes() == before


# --- no credentials --------------------------------------------------------------------------------


def test_missing_api_key_fails_once_before_any_file(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    for n in range(4):
        write(folder / f"{n}.jsonl", tool_session())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = run_cli("summarize", "--backend", "anthropic", folder, env=env, text=True)
    assert done.returncode == 69
    assert done.stderr.count("error:") == 1 and "ANTHROPIC_API_KEY" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == [f"{n}.jsonl" for n in range(4)]  # no archive, no lock
    assert all((folder / f"{n}.jsonl").read_bytes() == tool_session() for n in range(4))
    # previews never call a model, so they need no key
    assert run_cli("summarize", "--backend", "anthropic", "--check", folder, env=env).returncode == 1
    shutil.rmtree(folder)
