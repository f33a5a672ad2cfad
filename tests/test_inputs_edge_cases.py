"""Inputs that real folders hold and a careful run must survive: odd file names, unreadable folders,
byte-order marks, pipes; and what the summary says for previews. Each through the installed command."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.other_user import hand_to_nobody, needs_a_lockable_folder

DATA_ERR, IO_ERR = 65, 74
LONG = "x" * 300


def transcript(results: int = 5) -> bytes:
    """A user task, `results` bash calls each answered by 300 characters, a final answer."""
    records: list[dict] = [{"role": "user", "content": "Fix the build."}]
    for i in range(results):
        call = {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {"command": "make"}}
        records.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": LONG}
        records.append({"role": "user", "content": [result]})
    records.append({"role": "assistant", "content": "Done."})
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def cleared(data: bytes) -> int:
    return data.count(b'"[Previous: used bash]"')


# ------------------------------------------------------------------ file names that are not UTF-8


def test_file_name_not_utf8_is_compacted_recorded_and_restorable(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.jsonl")  # Latin-1 name, as old tools write them
    original = transcript()
    (tmp_path / name).write_bytes(original)
    (tmp_path / "plain.jsonl").write_bytes(original)

    run = run_cli("micro", "--json", ".", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # 5 results, the last 3 kept: 2 cleared in each file.
    assert cleared((tmp_path / name).read_bytes()) == 2
    assert cleared((tmp_path / "plain.jsonl").read_bytes()) == 2
    assert len(run.stdout.splitlines()) == 2
    assert b"Traceback" not in run.stderr

    listed = run_cli("restore", "--list", name, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    back = run_cli("restore", name, cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / name).read_bytes() == original


# ------------------------------------------------------------------ folders that cannot be searched


@needs_a_lockable_folder
def test_unreadable_sub_folder_fails_the_run_instead_of_being_skipped() -> None:
    top = Path(tempfile.mkdtemp(prefix="compactcli-unreadable-"))
    try:
        (top / "logs" / "locked").mkdir(parents=True)
        (top / "logs" / "a.jsonl").write_bytes(transcript())
        (top / "logs" / "locked" / "b.jsonl").write_bytes(transcript())
        nobody = hand_to_nobody(top)
        os.chmod(top, 0o755)
        os.chmod(top / "logs" / "locked", 0o000)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))

        run = run_cli("validate", "logs", cwd=top, env=env, prefix=nobody)
        assert run.returncode == IO_ERR, run.stderr
        assert b"logs/locked: cannot search folder: Permission denied" in run.stderr
        assert b"1 file valid" in run.stderr

        run = run_cli("micro", "logs", cwd=top, env=env, prefix=nobody)
        assert run.returncode == IO_ERR, run.stderr
        assert cleared((top / "logs" / "a.jsonl").read_bytes()) == 2
        assert b"1 failed" in run.stderr
    finally:
        os.chmod(top / "logs" / "locked", 0o755)
        shutil.rmtree(top)


# ------------------------------------------------------------------ previews say what they would do


@pytest.mark.parametrize("flag", ["--dry-run", "--diff"])
def test_preview_summary_counts_the_files_that_would_change(tmp_path: Path, flag: str) -> None:
    (tmp_path / "a.jsonl").write_bytes(transcript())
    (tmp_path / "b.jsonl").write_bytes(transcript(results=3))  # nothing to clear
    run = run_cli("micro", flag, ".", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stderr.decode().splitlines()[-1] == "1 file would be compacted, 1 unchanged"
    assert cleared((tmp_path / "a.jsonl").read_bytes()) == 0


# ------------------------------------------------------------------ a byte-order mark at the start


def test_byte_order_mark_at_file_start_is_read_and_kept(tmp_path: Path) -> None:
    # Windows tools (PowerShell 5's Out-File) start UTF-8 files with a BOM; Python's json reads it.
    body = transcript()
    first = body.split(b"\n", 1)[0]
    assert json.loads(b"\xef\xbb\xbf" + first) == {"role": "user", "content": "Fix the build."}
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + body)

    check = run_cli("validate", "bom.jsonl", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    run = run_cli("micro", "bom.jsonl", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf" + first + b"\n")
    assert cleared(after) == 2
    assert run_cli("micro", "--check", "bom.jsonl", cwd=tmp_path).returncode == 0


def test_byte_order_mark_on_a_changed_line_is_kept(tmp_path: Path) -> None:
    # A file whose first line is itself a tool result that gets cleared (OpenAI tool message first).
    lines = [
        {"role": "tool", "tool_call_id": "call_0", "content": LONG},
        *(
            record
            for i in range(1, 5)
            for record in (
                {"role": "assistant", "tool_calls": [{"id": f"call_{i}", "name": "bash", "arguments": {}}]},
                {"role": "tool", "tool_call_id": f"call_{i}", "content": LONG},
            )
        ),
    ]
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(json.dumps(r).encode() + b"\n" for r in lines))
    run = run_cli("micro", "--dialect", "openai", "bom.jsonl", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    first = path.read_bytes().split(b"\n", 1)[0]
    assert first.startswith(b"\xef\xbb\xbf{")
    assert json.loads(first)["content"] == "[Previous: used unknown]"


# ------------------------------------------------------------------ pipes given by name


def feed_fifo(path: Path, data: bytes) -> threading.Thread:
    """A writer for a named pipe, as `<(command)` or a FIFO on disk provides."""

    def write() -> None:
        with contextlib.suppress(OSError), open(path, "wb") as fifo:
            fifo.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "args",
    [("validate",), ("micro", "-o", "-"), ("micro", "--check"), ("micro", "--dry-run")],
    ids=["validate", "micro-o", "micro-check", "micro-dry-run"],
)
def test_named_pipe_input_is_read_like_stdin(tmp_path: Path, args: tuple[str, ...]) -> None:
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    writer = feed_fifo(fifo, transcript())
    run = run_cli(*args, str(fifo), cwd=tmp_path)
    writer.join(5)
    expected = 1 if "--check" in args else 0
    assert run.returncode == expected, run.stderr
    if "-o" in args:
        assert cleared(run.stdout) == 2
        assert run.stdout.count(b"\n") == transcript().count(b"\n")
    if "--dry-run" in args:
        assert run.stdout.count(b"clear tool result") == 2
    assert not (tmp_path / ".transcripts").exists()


def test_named_pipe_is_not_rewritten_in_place_and_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)  # no writer: opening it for reading would wait forever
    run = run_cli("micro", str(fifo), cwd=tmp_path, timeout=20)
    assert run.returncode == IO_ERR, run.stderr
    assert f"{fifo}: not a regular file".encode() in run.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ------------------------------------------------------------------ idempotence with any placeholder


def test_placeholder_naming_the_tool_twice_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(transcript())
    options = ("--min-chars", "5", "--placeholder", "[{tool_name} output cleared; rerun {tool_name}]")
    first = run_cli("micro", *options, "t.jsonl", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    after = path.read_bytes()
    assert after.count(b'"[bash output cleared; rerun bash]"') == 2
    second = run_cli("micro", "-v", *options, "t.jsonl", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert b"0 files compacted, 1 unchanged" in second.stderr
    assert path.read_bytes() == after
    assert len(list((tmp_path / ".transcripts").glob("t.*.jsonl"))) == 1
