"""`compactcli summarize` through the installed command, with the offline digest backend.

The transcript below is written by hand, so what the command must keep is known without asking it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.corpus import corpus_params, expectation

from compactcli import dialects
from compactcli.layers.validate import validate_records

OK, CHECK_FAILED, DATA_ERR = 0, 1, 65
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SECRET = "ghp_" + "Zq7xW2" * 6
PREFIX = re.compile(
    r"^\[Conversation compressed\. Transcript: (?P<path>[^\]]+)\]\n\n(?P<summary>.+)$", re.DOTALL
)


def use(use_id: str, name: str, args: dict, text: str | None = None) -> dict:
    blocks = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": use_id, "name": name, "input": args})
    return {"role": "assistant", "content": blocks}


def answer(use_id: str, content: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": content}]}


RECORDS = [
    {"role": "user", "content": f"Fix the failing test in calc.py. Push with token {SECRET} when done."},  # 1
    use("t1", "bash", {"command": "python -m pytest -q"}, "Running the tests."),  # 2
    answer("t1", "FAILED test_calc.py::test_add - assert -1 == 5\nExit code 1"),  # 3
    use("t2", "read_file", {"path": "calc.py"}),  # 4
    answer("t2", "def add(a, b):\n    return a - b\n"),  # 5
    use("t3", "edit_file", {"path": "calc.py", "old": "a - b", "new": "a + b"}),  # 6
    answer("t3", "ok"),  # 7
    {"role": "user", "content": "Also add a docstring."},  # 8
    use("t4", "bash", {"command": "python -m pytest -q"}),  # 9
    answer("t4", "1 passed"),  # 10
    {"role": "assistant", "content": "Fixed: add() adds now, and it has a docstring."},  # 11
]
LINES = [json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in RECORDS]
ORIGINAL = b"".join(LINES)


def run(
    *args: str, cwd: Path, stdin: bytes | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    environment = dict(env if env is not None else os.environ)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if env is None else ():
        environment.pop(name, None)
    return run_cli("summarize", *args, cwd=cwd, stdin=stdin, env=environment)


def records_of(data: bytes, lenient: bool = False) -> list[dict]:
    """The records of a file; `lenient` passes over lines that are not JSON (torn corpus lines)."""
    records = []
    for line in data.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            if not lenient:
                raise
    return records


def summary_of(record: dict) -> re.Match:
    if record.get("type") == "compacted":  # Codex: the summary is the compaction's message
        content = record["payload"]["message"]
    else:
        content = record["message"]["content"] if "message" in record else record["content"]
    match = PREFIX.match(content)
    assert match, content[:200]
    return match


def assert_archive_holds(match: re.Match, original: bytes) -> Path:
    archive = Path(match["path"])
    assert archive.is_absolute() and archive.exists()
    assert archive.read_bytes() == original
    assert archive.stat().st_mode & 0o777 == 0o600
    return archive


def valid(path: Path, dialect: str, lenient: bool = False) -> None:
    records = [(n, r) for n, r in enumerate(records_of(path.read_bytes(), lenient), 1)]
    assert validate_records(dialects.get(dialect), records) == []


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_bytes(ORIGINAL)
    return path


# ------------------------------------------------------------------------------ in place


def test_in_place_one_summary_message_naming_a_byte_exact_archive(transcript: Path) -> None:
    done = run("-v", transcript.name, cwd=transcript.parent)
    assert done.returncode == OK, done.stderr
    stderr = done.stderr.decode()
    assert "backend digest" in stderr and "no API key" in stderr
    assert "1 file summarized" in stderr
    [record] = records_of(transcript.read_bytes())
    assert record["role"] == "user"
    match = summary_of(record)
    archive = assert_archive_holds(match, ORIGINAL)
    assert archive.parent == transcript.parent / ".transcripts"
    assert re.fullmatch(r"run\.\d{8}T\d{12}Z\.[0-9a-f]{12}\.jsonl", archive.name)
    # The digest: the task (its secret redacted), the files and commands, the error, the last text.
    summary = match["summary"]
    assert "Fix the failing test in calc.py." in summary
    assert SECRET not in transcript.read_text() and "[REDACTED:github_token]" in summary
    assert "- `python -m pytest -q`" in summary
    assert "FAILED test_calc.py::test_add" in summary
    assert "Fixed: add() adds now" in summary
    assert "1 secrets redacted" in stderr
    manifest = records_of((transcript.parent / ".transcripts" / "manifest.jsonl").read_bytes())
    assert manifest[-1]["archive"] == str(archive) and manifest[-1]["command"] == "summarize"
    assert manifest[-1]["options"]["backend"] == "digest"
    valid(transcript, "anthropic")


def test_keep_last_keeps_tool_pairs_together_byte_for_byte(transcript: Path) -> None:
    # The last 2 messages start at t4's result: the cut moves to its call, line 9.
    done = run("--keep-last", "2", str(transcript), cwd=transcript.parent)
    assert done.returncode == OK, done.stderr
    lines = transcript.read_bytes().splitlines(keepends=True)
    assert lines[1:] == LINES[8:]
    summary_of(json.loads(lines[0]))
    valid(transcript, "anthropic")


def test_a_second_run_changes_nothing(transcript: Path) -> None:
    assert run("--keep-last", "3", str(transcript), cwd=transcript.parent).returncode == OK
    after = transcript.read_bytes()
    again = run("-v", "--keep-last", "3", str(transcript), cwd=transcript.parent)
    assert again.returncode == OK
    assert transcript.read_bytes() == after
    assert "unchanged" in again.stderr.decode() and "nothing to summarize" in again.stderr.decode()


def test_no_redact_keeps_secrets(transcript: Path) -> None:
    assert run("--no-redact", str(transcript), cwd=transcript.parent).returncode == OK
    assert SECRET in transcript.read_text()


def test_focus_reaches_the_digest(transcript: Path) -> None:
    assert run("--focus", "docstring", str(transcript), cwd=transcript.parent).returncode == OK
    assert (
        "## About docstring\n- [message 8] Also add a docstring."
        in summary_of(records_of(transcript.read_bytes())[0])["summary"]
    )


# ------------------------------------------------------------------------------ other destinations


def test_output_file_leaves_the_input_and_archives_it_beside_the_input(
    transcript: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "small.jsonl"
    out.parent.mkdir()
    done = run("-o", str(out), str(transcript), cwd=tmp_path)
    assert done.returncode == OK, done.stderr
    assert transcript.read_bytes() == ORIGINAL
    archive = assert_archive_holds(summary_of(records_of(out.read_bytes())[0]), ORIGINAL)
    assert archive.parent == transcript.parent / ".transcripts"
    # Nothing was replaced: no manifest line (restore has nothing to undo).
    assert not (archive.parent / "manifest.jsonl").exists()


def test_stdin_to_stdout_archives_the_input_in_the_current_folder(tmp_path: Path) -> None:
    done = run("-", cwd=tmp_path, stdin=ORIGINAL)
    assert done.returncode == OK, done.stderr
    [record] = records_of(done.stdout)
    archive = assert_archive_holds(summary_of(record), ORIGINAL)
    assert archive.parent == (tmp_path / ".transcripts").resolve()
    assert archive.name.startswith("stdin.")


def test_previews_change_nothing_and_create_no_archive(transcript: Path) -> None:
    for flag in ("--dry-run", "--diff"):
        done = run(flag, str(transcript), cwd=transcript.parent)
        assert done.returncode == OK, done.stderr
        assert transcript.read_bytes() == ORIGINAL
    assert not (transcript.parent / ".transcripts").exists()
    dry = run("--dry-run", str(transcript), cwd=transcript.parent).stdout.decode()
    assert "summarize 11 messages (lines 1-11) into one" in dry
    diff = run("--diff", "--keep-last", "2", str(transcript), cwd=transcript.parent).stdout.decode()
    assert diff.count("\n-{") == 8 and "@@ -1,8 +1,1 @@" in diff
    assert "(summary written by digest when applied)" in diff


# ------------------------------------------------------------------------------ threshold and check


def test_threshold_and_check(tmp_path: Path) -> None:
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"".join(LINES[:1] + LINES[-1:]))
    big = tmp_path / "big.jsonl"
    big.write_bytes(ORIGINAL)
    # The heuristic puts the small file near 40 tokens and the big one over 200.
    check = run("--check", "--threshold", "150", str(small), str(big), cwd=tmp_path)
    assert check.returncode == CHECK_FAILED
    stderr = check.stderr.decode()
    assert f"would summarize {big}" in stderr and f"would summarize {small}" not in stderr
    assert "1 file would be summarized" in stderr
    assert small.read_bytes() == LINES[0] + LINES[-1] and big.read_bytes() == ORIGINAL
    assert run("--check", "--threshold", "100000", str(big), cwd=tmp_path).returncode == OK
    done = run("-v", "--threshold", "150", str(small), str(big), cwd=tmp_path)
    assert done.returncode == OK
    assert small.read_bytes() == LINES[0] + LINES[-1]
    assert len(records_of(big.read_bytes())) == 1
    assert "below threshold" in done.stderr.decode()


def test_threshold_by_recorded_usage_leaves_files_without_usage(transcript: Path) -> None:
    done = run("-v", "--threshold", "10", "--method", "usage", str(transcript), cwd=transcript.parent)
    assert done.returncode == OK
    assert transcript.read_bytes() == ORIGINAL
    assert "no token count (no usage recorded)" in done.stderr.decode()


def test_check_without_threshold_lists_every_file_with_a_conversation(transcript: Path) -> None:
    done = run("--check", str(transcript), cwd=transcript.parent)
    assert done.returncode == CHECK_FAILED
    assert f"would summarize {transcript}" in done.stderr.decode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (LINES[0] + b"{not json\n" + LINES[1], "bad.jsonl:2: "),  # a bad line in the middle
        (LINES[0] + LINES[1] + LINES[2][:25], "bad.jsonl:3: torn last line"),  # cut off, no newline
    ],
)
def test_bad_input_exits_65_and_leaves_the_file(tmp_path: Path, data: bytes, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(data)
    done = run(str(bad), cwd=tmp_path)
    assert done.returncode == DATA_ERR
    assert message in done.stderr.decode()
    assert bad.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]  # nothing archived


# ------------------------------------------------------------------------------ samples per dialect


SAMPLE_FILES = [
    ("anthropic/session.jsonl", "anthropic"),
    ("anthropic/stringified.jsonl", "anthropic"),
    ("claude-code/session.jsonl", "claude-code"),
    ("claude-code/agent-subagent.jsonl", "claude-code"),
    ("openai/session.jsonl", "openai"),
    ("openai/flattened.jsonl", "openai"),
]


def _copy_sample(relative: str, tmp_path: Path) -> Path:
    source = SAMPLES / relative
    assert source.is_file(), f"committed sample {source} is missing"
    target = tmp_path / source.name
    shutil.copyfile(source, target)
    return target


@pytest.mark.parametrize(("relative", "dialect"), SAMPLE_FILES)
@pytest.mark.parametrize("keep_last", [0, 4])
def test_every_sample_stays_valid_and_names_its_archive(
    relative: str, dialect: str, keep_last: int, tmp_path: Path
) -> None:
    path = _copy_sample(relative, tmp_path)
    original = path.read_bytes()
    done = run("--keep-last", str(keep_last), str(path), cwd=tmp_path)
    assert done.returncode == OK, done.stderr
    valid(path, dialect)
    records = records_of(path.read_bytes())
    carrier = next(r for r in records if r.get("isCompactSummary") or r.get("role") == "user")
    assert_archive_holds(summary_of(carrier), original)
    if keep_last:
        # The kept tail is the original's last lines, byte for byte (Claude Code: but re-linked parents).
        kept = path.read_bytes().splitlines(keepends=True)[-2:]
        if dialect != "claude-code":
            assert original.endswith(b"".join(kept))
    assert len(path.read_bytes()) < len(original)


def test_openai_system_messages_stay_on_top(tmp_path: Path) -> None:
    path = _copy_sample("openai/session.jsonl", tmp_path)
    first = path.read_bytes().splitlines(keepends=True)[0]
    assert json.loads(first)["role"] == "system"
    assert run(str(path), cwd=tmp_path).returncode == OK
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[0] == first
    summary_of(json.loads(lines[1]))
    assert len(lines) == 2


def _chain_to_root(records: list[dict]) -> list[dict]:
    by_uuid = {r["uuid"]: r for r in records if "uuid" in r}
    chain = []
    record = [r for r in records if r.get("type") in ("user", "assistant") and not r.get("isSidechain")][-1]
    while record is not None:
        chain.append(record)
        parent = record.get("parentUuid")
        record = by_uuid.get(parent) if parent else None
    return chain[::-1]


@pytest.mark.parametrize("keep_last", [0, 5])
def test_claude_code_gets_a_boundary_and_a_summary_with_the_session_identity(
    keep_last: int, tmp_path: Path
) -> None:
    path = _copy_sample("claude-code/session.jsonl", tmp_path)
    original_records = records_of(path.read_bytes())
    main = [
        r for r in original_records if r.get("type") in ("user", "assistant") and not r.get("isSidechain")
    ]
    done = run("--keep-last", str(keep_last), str(path), cwd=tmp_path)
    assert done.returncode == OK, done.stderr
    records = records_of(path.read_bytes())
    # The session's title line stays on top; then what Claude Code writes at a compaction.
    assert records[0]["type"] == "summary"
    boundary, summary = records[1], records[2]
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None and boundary["content"] == "Conversation compacted"
    assert boundary["compactMetadata"]["trigger"] == "manual" and boundary["compactMetadata"]["preTokens"] > 0
    assert summary["isCompactSummary"] is True and summary["isVisibleInTranscriptOnly"] is True
    assert summary["parentUuid"] == boundary["uuid"]
    assert isinstance(summary["message"]["content"], str)
    for field in ("sessionId", "cwd", "version", "gitBranch", "userType", "slug"):
        assert boundary[field] == summary[field] == main[-1][field]
    assert summary["uuid"] not in {r.get("uuid") for r in original_records}
    chain = _chain_to_root(records)
    # The resumed conversation: boundary, summary, then exactly the kept records.
    assert chain[0] is boundary and chain[1] is summary
    kept = [r for r in chain[2:] if r.get("type") in ("user", "assistant")]
    if keep_last:
        assert [r["uuid"] for r in kept] == [r["uuid"] for r in main[-len(kept) :]]
        assert len(kept) >= keep_last
        assert boundary["logicalParentUuid"] == next(
            r["uuid"]
            for r in reversed(original_records[: original_records.index(main[-len(kept)])])
            if "uuid" in r
        )
    else:
        assert kept == [] and len(records) == 3
        assert boundary["logicalParentUuid"] == [r for r in original_records if "uuid" in r][-1]["uuid"]


# ------------------------------------------------------------------------------ the real corpus


@pytest.mark.corpus
@pytest.mark.parametrize("source", corpus_params())
def test_corpus_files_summarize_to_valid_files(source: Path, tmp_path: Path) -> None:
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    original = path.read_bytes()
    dialect = expectation(source).dialect
    done = run("--on-invalid", "keep", "--keep-last", "6", str(path), cwd=tmp_path)
    if dialect is None:  # refused: nothing written
        assert done.returncode == 65 and path.read_bytes() == original, done.stderr
        return
    assert done.returncode == OK, done.stderr
    if not expectation(source).summarizes:  # only the last compaction's summary before the kept part
        assert path.read_bytes() == original and b"1 unchanged" in done.stderr
        return
    records = records_of(path.read_bytes(), lenient=True)
    # The record that carries the summary: Claude Code's, a user message, or Codex's compacted record.
    carrier = next(
        r
        for r in records
        if r.get("isCompactSummary") or r.get("role") == "user" or r.get("type") == "compacted"
    )
    assert_archive_holds(summary_of(carrier), original)

    # Torn lines may already break a pair in the original: no violation may be new.
    def found(data: bytes) -> set[tuple[str, str]]:
        records = list(enumerate(records_of(data, lenient=True), 1))
        return {(v.rule, v.message) for v in validate_records(dialects.get(dialect), records)}

    assert found(path.read_bytes()) <= found(original)
    assert len(path.read_bytes()) < len(original)
