"""`compactcli micro` through the installed command: destinations, archive and manifest, previews,
exit codes, bad input, locks, reports and file modes (docs/design.md, "Layers" and "Files and archives").

The transcript is written out by hand below, so what micro must do to it is known without asking
compactcli: of its eight tool results the last three are kept; of the five older ones, one is a
`read_file` result (preserved), one is at most 100 characters, one is a list of blocks, and two are
cleared: line 3 (`bash`) and line 8 (a result whose tool_use is nowhere in the file: `unknown`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.cli import run_cli

import compactcli

OK, CHECK_FAILED, USAGE, DATA_ERR, BUSY = 0, 1, 2, 65, 75
LONG = 'total 48\ndrwxr-xr-x  café  src\n-rw-r--r--  naïve "quoted" C:\\tmp\t✓ 日本語\n' * 4
OUTPUT_LIST = [{"type": "text", "text": LONG}, {"type": "text", "text": "page 2"}]


def tool_use(call_id: str, name: str, text: str | None = None) -> dict:
    blocks = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": {"arg": call_id}})
    return {"role": "assistant", "content": blocks}


def tool_result(call_id: str, content: object) -> dict:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}],
    }


RECORDS = [
    {"role": "user", "content": "List the files, then fix the build."},  # 1
    tool_use("toolu_01", "bash", "Listing."),  # 2
    tool_result("toolu_01", LONG),  # 3  cleared: [Previous: used bash]
    tool_use("toolu_02", "read_file"),  # 4
    tool_result("toolu_02", LONG),  # 5  kept: read_file is preserved
    tool_use("toolu_03", "grep"),  # 6
    tool_result("toolu_03", "3 matches"),  # 7  kept: at most 100 characters
    tool_result("toolu_ghost", LONG),  # 8  cleared: [Previous: used unknown]
    tool_use("toolu_07", "screenshot"),  # 9
    tool_result("toolu_07", OUTPUT_LIST),  # 10 kept: a list of blocks
    tool_use("toolu_04", "edit_file"),  # 11
    tool_result("toolu_04", LONG),  # 12 kept: one of the last three
    tool_use("toolu_05", "bash"),  # 13
    tool_result("toolu_05", LONG),  # 14 kept: one of the last three
    tool_use("toolu_06", "bash"),  # 15
    tool_result("toolu_06", LONG),  # 16 kept: one of the last three
    {"role": "assistant", "content": "Done."},  # 17
]
CLEARED = {3: "[Previous: used bash]", 8: "[Previous: used unknown]"}


def dumps(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def cleared(record: dict, placeholder: str) -> dict:
    record = json.loads(json.dumps(record))
    record["content"][0]["content"] = placeholder
    return record


ORIGINAL_LINES = [dumps(r) + b"\n" for r in RECORDS]
EXPECTED_LINES = [
    dumps(cleared(r, CLEARED[n])) + b"\n" if n in CLEARED else dumps(r) + b"\n"
    for n, r in enumerate(RECORDS, 1)
]
ORIGINAL = b"".join(ORIGINAL_LINES)
EXPECTED = b"".join(EXPECTED_LINES)
ARCHIVE_RE = re.compile(r"^t\.(?P<ts>\d{8}T\d{12}Z)\.(?P<sha>[0-9a-f]{12})\.jsonl$")
SUMMARY_RE = re.compile(r"^\d+ files? compacted, \d+ unchanged(, \d+ skipped)?(, \d+ busy)?(, \d+ failed)?$")


def err(run: subprocess.CompletedProcess) -> str:
    return run.stderr.decode("utf-8", "replace")


def summary(run: subprocess.CompletedProcess) -> str:
    last = err(run).strip().splitlines()[-1]
    assert SUMMARY_RE.match(last), last
    return last


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def archives(folder: Path, stem: str = "t") -> list[Path]:
    archive_dir = folder / ".transcripts"
    if not archive_dir.exists():
        return []
    return sorted(p for p in archive_dir.glob(f"{stem}.*.jsonl"))


def manifest(folder: Path) -> list[dict]:
    path = folder / ".transcripts" / "manifest.jsonl"
    return [json.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(ORIGINAL)
    os.chmod(path, 0o640)
    return path


def assert_untouched(path: Path, data: bytes = ORIGINAL) -> None:
    assert path.read_bytes() == data
    assert archives(path.parent, path.stem) == []
    assert not any(r["source"] == str(path.resolve()) for r in manifest(path.parent))


# ---------------------------------------------------------------- in place


def test_expected_result_is_what_the_rules_say() -> None:
    """The hand-built expectation itself: two lines differ, and only in the cleared content."""
    changed = [n for n, (a, b) in enumerate(zip(ORIGINAL_LINES, EXPECTED_LINES, strict=True), 1) if a != b]
    assert changed == [3, 8]
    assert json.loads(EXPECTED_LINES[2])["content"][0]["content"] == "[Previous: used bash]"
    assert json.loads(EXPECTED_LINES[7])["content"][0]["content"] == "[Previous: used unknown]"


def test_in_place_writes_the_result_an_exact_archive_and_a_manifest_line(transcript: Path) -> None:
    folder = transcript.parent
    before = datetime.now(UTC)
    # umask 0: the private modes must come from compactcli, not from a restrictive umask.
    run = run_cli("micro", transcript, umask=0)
    after = datetime.now(UTC)
    assert run.returncode == OK, err(run)
    assert summary(run) == "1 file compacted, 0 unchanged"
    assert transcript.read_bytes() == EXPECTED
    assert mode(transcript) == 0o640

    archive_dir = folder / ".transcripts"
    assert mode(archive_dir) == 0o700
    [archive] = archives(folder)
    assert archive.read_bytes() == ORIGINAL
    assert mode(archive) == 0o600
    assert mode(archive_dir / "manifest.jsonl") == 0o600
    name = ARCHIVE_RE.match(archive.name)
    assert name and name["sha"] == sha(ORIGINAL)[:12]
    stamp = datetime.strptime(name["ts"], "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
    assert before <= stamp <= after

    [record] = manifest(folder)
    assert record["source"] == str(transcript.resolve())
    assert record["archive"] == str(archive.resolve())
    assert (record["sha256_before"], record["size_before"]) == (sha(ORIGINAL), len(ORIGINAL))
    assert (record["sha256_after"], record["size_after"]) == (sha(EXPECTED), len(EXPECTED))
    assert record["command"] == "micro"
    assert record["version"] == compactcli.__version__
    options = record["options"]
    assert (options["keep"], options["min_chars"]) == (3, 100)
    assert sorted(options["preserve"]) == ["Read", "read", "read_file", "view"]
    assert options["placeholder"] == "[Previous: used {tool_name}]"
    when = datetime.strptime(record["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before <= when <= after

    # Nothing but the result is left beside the transcript.
    assert sorted(p.name for p in folder.iterdir()) == [".transcripts", "t.jsonl"]


def test_second_run_changes_nothing_and_archives_nothing(transcript: Path) -> None:
    assert run_cli("micro", transcript).returncode == OK
    state = os.stat(transcript)
    run = run_cli("micro", transcript)
    assert run.returncode == OK, err(run)
    assert summary(run) == "0 files compacted, 1 unchanged"
    assert transcript.read_bytes() == EXPECTED
    assert os.stat(transcript).st_mtime_ns == state.st_mtime_ns
    assert os.stat(transcript).st_ino == state.st_ino
    assert len(archives(transcript.parent)) == 1
    assert len(manifest(transcript.parent)) == 1


def test_crlf_line_endings_are_kept_on_changed_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(ORIGINAL.replace(b"\n", b"\r\n"))
    run = run_cli("micro", path)
    assert run.returncode == OK, err(run)
    assert path.read_bytes() == EXPECTED.replace(b"\n", b"\r\n")


def test_a_complete_last_line_without_newline_is_not_torn_and_stays_without_one(
    tmp_path: Path,
) -> None:
    """With --keep 0 the last result is cleared too; its line keeps having no newline."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(ORIGINAL[:-1] + b"\n" + ORIGINAL_LINES[15].rstrip(b"\n"))
    run = run_cli("micro", path, "--keep", "0", "--no-preserve")
    assert run.returncode == OK, err(run)
    last = path.read_bytes().split(b"\n")[-1]
    assert json.loads(last)["content"][0]["content"] == "[Previous: used bash]"


def test_archive_dir_holds_archive_and_manifest_and_is_not_searched(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(ORIGINAL)
    elsewhere = tmp_path / "kept"  # inside the folder that is searched
    run = run_cli("micro", tmp_path, "--archive-dir", elsewhere)
    assert run.returncode == OK, err(run)
    assert path.read_bytes() == EXPECTED
    assert not (tmp_path / ".transcripts").exists()
    [archive] = elsewhere.glob("t.*.jsonl")
    assert archive.read_bytes() == ORIGINAL
    [record] = [json.loads(x) for x in (elsewhere / "manifest.jsonl").read_bytes().splitlines()]
    assert record["archive"] == str(archive.resolve())

    rerun = run_cli("micro", tmp_path, "--archive-dir", elsewhere)
    assert rerun.returncode == OK, err(rerun)
    assert summary(rerun) == "0 files compacted, 1 unchanged"  # the archive was not a candidate
    assert archive.read_bytes() == ORIGINAL


# ---------------------------------------------------------------- other destinations


def test_stdin_to_stdout(tmp_path: Path) -> None:
    run = run_cli("micro", "-", stdin=ORIGINAL, cwd=tmp_path)
    assert run.returncode == OK, err(run)
    assert run.stdout == EXPECTED
    assert list(tmp_path.iterdir()) == []  # no archive, no lock for a pipe


def test_output_file_leaves_the_input_alone(transcript: Path) -> None:
    out = transcript.parent / "out.jsonl"
    run = run_cli("micro", transcript, "-o", out, umask=0o022)
    assert run.returncode == OK, err(run)
    assert out.read_bytes() == EXPECTED
    assert mode(out) == 0o640  # the transcript's own bits, as cp gives them
    assert transcript.read_bytes() == ORIGINAL
    assert not (transcript.parent / ".transcripts").exists()


def test_output_dash_writes_stdout_only(transcript: Path) -> None:
    run = run_cli("micro", transcript, "-o", "-")
    assert run.returncode == OK, err(run)
    assert run.stdout == EXPECTED
    assert transcript.read_bytes() == ORIGINAL
    assert not (transcript.parent / ".transcripts").exists()


# ---------------------------------------------------------------- previews write nothing


def assert_wrote_nothing(path: Path, data: bytes = ORIGINAL) -> None:
    assert path.read_bytes() == data
    # Not even the archive folder or a lock file: a preview in a CI checkout must leave it clean.
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_check_exits_1_when_something_would_change_and_writes_nothing(transcript: Path) -> None:
    run = run_cli("micro", "--check", transcript)
    assert run.returncode == CHECK_FAILED, err(run)
    assert transcript.read_bytes() == ORIGINAL
    assert archives(transcript.parent) == []
    assert_wrote_nothing(transcript)


def test_check_exits_0_when_nothing_would_change(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(EXPECTED)
    run = run_cli("micro", "--check", path)
    assert run.returncode == OK, err(run)
    assert_wrote_nothing(path, EXPECTED)


def apply_unified_diff(original: bytes, diff: str) -> bytes:
    """Apply a unified diff (as `patch` would) to the original's text."""
    source = original.decode().splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    last = ""
    for line in diff.splitlines(keepends=True):
        hunk = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if hunk:
            start = int(hunk[1]) - (0 if hunk[2] == "0" else 1)
            assert start >= pos
            out.extend(source[pos:start])
            pos = start
        elif line.startswith(("--- ", "+++ ")) and not out and pos == 0:
            continue
        elif line.startswith(" "):
            assert source[pos] == line[1:]
            out.append(source[pos])
            pos += 1
        elif line.startswith("-"):
            assert source[pos].rstrip("\n") == line[1:].rstrip("\n"), (source[pos], line)
            pos += 1
        elif line.startswith("+"):
            out.append(line[1:])
        elif line.startswith("\\") and last.startswith("+"):
            out[-1] = out[-1].rstrip("\n")
        last = line
    out.extend(source[pos:])
    return "".join(out).encode()


def test_diff_prints_a_unified_diff_that_gives_the_result_and_writes_nothing(
    transcript: Path,
) -> None:
    run = run_cli("micro", "--diff", transcript)
    assert run.returncode == OK, err(run)
    diff = run.stdout.decode()
    assert diff.startswith("--- ") and "\n+++ " in diff
    assert diff.count("\n@@ ") + diff.startswith("@@ ") == 2  # one hunk per changed line
    assert apply_unified_diff(ORIGINAL, diff) == EXPECTED
    assert_wrote_nothing(transcript)


def test_dry_run_lists_what_would_change_and_writes_nothing(transcript: Path) -> None:
    run = run_cli("micro", "--dry-run", transcript)
    assert run.returncode == OK, err(run)
    listing = run.stdout.decode()
    assert f"{transcript}:3:" in listing and f"{transcript}:8:" in listing
    assert "[Previous: used bash]" in listing and "[Previous: used unknown]" in listing
    assert f"{transcript}:5:" not in listing  # read_file is preserved
    assert_wrote_nothing(transcript)


# ---------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["{t}", "{t2}", "-o", "{out}"], id="-o with two inputs"),
        pytest.param(["{t}", "--frobnicate"], id="unknown option"),
        pytest.param(["{t}", "-"], id="stdin with a file"),
        pytest.param(["{missing}"], id="missing file"),
        pytest.param(["{t}", "--keep", "-1"], id="negative --keep"),
    ],
)
def test_usage_error_exits_2_and_touches_nothing(transcript: Path, args: list[str]) -> None:
    second = transcript.parent / "t2.jsonl"
    second.write_bytes(ORIGINAL)
    names = {
        "t": transcript,
        "t2": second,
        "out": transcript.parent / "out.jsonl",
        "missing": transcript.parent / "missing.jsonl",
    }
    run = run_cli("micro", *(a.format(**names) for a in args), stdin=b"")
    assert run.returncode == USAGE, err(run)
    assert "Usage:" in err(run) or "Error" in err(run)
    assert transcript.read_bytes() == ORIGINAL and second.read_bytes() == ORIGINAL
    assert sorted(p.name for p in transcript.parent.iterdir()) == ["t.jsonl", "t2.jsonl"]


# ---------------------------------------------------------------- bad input


BAD_LINES = {
    "not JSON": b'{"role": "user", "content": oops}\n',
    "not an object": b'["role", "user"]\n',
    "invalid UTF-8": b'{"role":"user","content":"caf\xe9 latin-1"}\n',
}


@pytest.mark.parametrize("kind", BAD_LINES)
def test_bad_line_fails_its_file_only_with_exit_65_naming_path_and_line(tmp_path: Path, kind: str) -> None:
    good = tmp_path / "a-good.jsonl"
    good.write_bytes(ORIGINAL)
    bad = tmp_path / "b-bad.jsonl"
    bad_bytes = b"".join(ORIGINAL_LINES[:4]) + BAD_LINES[kind] + b"".join(ORIGINAL_LINES[4:])
    bad.write_bytes(bad_bytes)
    run = run_cli("micro", tmp_path)
    assert run.returncode == DATA_ERR, err(run)
    assert re.search(rf"(^|\s){re.escape(str(bad))}:5: \S", err(run)), err(run)
    assert_untouched(bad, bad_bytes)
    assert good.read_bytes() == EXPECTED  # the other file in the run is still processed
    assert len(archives(tmp_path, "a-good")) == 1
    assert summary(run) == "1 file compacted, 0 unchanged, 1 failed"


def test_torn_last_line_is_reported_as_torn(transcript: Path) -> None:
    torn = ORIGINAL + b'{"role":"user","content":[{"type":"tool_res'
    transcript.write_bytes(torn)
    run = run_cli("micro", transcript)
    assert run.returncode == DATA_ERR, err(run)
    message = err(run)
    assert f"{transcript}:{len(RECORDS) + 1}:" in message
    assert "torn" in message and "newline" in message
    assert_untouched(transcript, torn)


def test_on_invalid_keep_passes_bad_lines_through_byte_for_byte(transcript: Path) -> None:
    bad = list(BAD_LINES.values())
    torn = b'{"role":"user","content":"half'
    lines = ORIGINAL_LINES[:4] + bad + ORIGINAL_LINES[4:]
    expected = EXPECTED_LINES[:4] + bad + EXPECTED_LINES[4:]
    transcript.write_bytes(b"".join(lines) + torn)
    run = run_cli("micro", "--on-invalid", "keep", transcript)
    assert run.returncode == OK, err(run)
    assert transcript.read_bytes() == b"".join(expected) + torn


# ---------------------------------------------------------------- JSON only Python reads

# NaN, an integer beyond 64 bits and a lone surrogate escape: orjson rejects all three.
PY_ONLY = b'"usage":{"ratio":NaN,"big":184467440737095516160,"neg":-Infinity},"note":"\\ud800 lone"'


def canonical(text: bytes) -> str:
    """A value's identity as Python's json sees it (NaN compares equal to itself here)."""
    return json.dumps(json.loads(text), sort_keys=True)


def test_python_only_json_lines_are_kept_byte_for_byte_or_rewritten_readably(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    unchanged = b'{"role":"assistant","content":"thinking",' + PY_ONLY + b"}\n"
    changing = ORIGINAL_LINES[2].rstrip(b"}\n") + b"," + PY_ONLY + b"}\n"  # line 3: cleared
    assert canonical(changing)  # the stdlib reads both
    lines = ORIGINAL_LINES[:2] + [changing] + ORIGINAL_LINES[3:] + [unchanged]
    path.write_bytes(b"".join(lines))

    run = run_cli("micro", path)
    assert run.returncode == OK, err(run)
    out = path.read_bytes().splitlines(keepends=True)
    assert len(out) == len(lines)
    assert out[-1] == unchanged  # not changed: byte for byte
    for n, (got, was) in enumerate(zip(out[:-1], lines[:-1], strict=True), 1):
        if n not in CLEARED:
            assert got == was, n
    want = json.loads(changing)
    want["content"][0]["content"] = "[Previous: used bash]"
    assert canonical(out[2]) == json.dumps(want, sort_keys=True)
    assert out[2].endswith(b"\n")
    assert json.loads(out[7])["content"][0]["content"] == "[Previous: used unknown]"


# ---------------------------------------------------------------- what is left alone


def test_empty_file_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")
    run = run_cli("micro", path)
    assert run.returncode == OK, err(run)
    assert summary(run) == "0 files compacted, 1 unchanged"
    assert_untouched(path, b"")


def test_min_age_skips_a_fresh_file_and_takes_an_old_one(transcript: Path) -> None:
    run = run_cli("micro", "--min-age", "3600", transcript)
    assert run.returncode == OK, err(run)
    assert "1 skipped" in summary(run)
    assert_untouched(transcript)

    two_hours_ago = time.time() - 7200
    os.utime(transcript, (two_hours_ago, two_hours_ago))
    run = run_cli("micro", "--min-age", "3600", transcript)
    assert run.returncode == OK, err(run)
    assert summary(run) == "1 file compacted, 0 unchanged"
    assert transcript.read_bytes() == EXPECTED


LOCKER = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)  # the lock is an flock on the transcript itself
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


def test_file_locked_by_another_process_is_busy_75(transcript: Path) -> None:
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(transcript)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        run = run_cli("micro", transcript)
        assert run.returncode == BUSY, err(run)
        assert "busy" in err(run) and str(transcript) in err(run)
        assert "1 busy" in summary(run)
        assert_untouched(transcript)
    finally:
        locker.communicate(timeout=10)  # closing its stdin ends it, releasing the lock
    run = run_cli("micro", transcript)
    assert run.returncode == OK, err(run)
    assert transcript.read_bytes() == EXPECTED


# ---------------------------------------------------------------- reports


def two_files(tmp_path: Path) -> tuple[Path, Path]:
    changing, settled = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    changing.write_bytes(ORIGINAL)
    settled.write_bytes(EXPECTED)
    return changing, settled


def test_json_gives_one_object_per_file_on_stdout(tmp_path: Path) -> None:
    changing, settled = two_files(tmp_path)
    run = run_cli("micro", "--json", tmp_path)
    assert run.returncode == OK, err(run)
    objects = [json.loads(line) for line in run.stdout.decode().splitlines()]
    assert len(objects) == 2 and all(isinstance(o, dict) for o in objects)
    by_path = {str(Path(o["path"]).resolve()): o["status"] for o in objects}
    assert by_path == {str(changing.resolve()): "changed", str(settled.resolve()): "unchanged"}
    assert summary(run) == "1 file compacted, 1 unchanged"


def test_json_goes_elsewhere_when_stdout_carries_the_transcript(tmp_path: Path) -> None:
    run = run_cli("micro", "--json", "-", stdin=ORIGINAL, cwd=tmp_path)
    assert run.returncode == OK, err(run)
    assert run.stdout == EXPECTED
    # The object goes to stderr, before the summary line; nothing is written in the folder.
    [line, summary_line] = err(run).splitlines()
    report = json.loads(line)
    assert (report["path"], report["status"], report["stats"]["cleared"]) == ("<stdin>", "changed", 2)
    assert summary_line == "1 file compacted, 0 unchanged"
    assert list(tmp_path.iterdir()) == []


def test_verbose_gives_a_line_per_file_and_quiet_none(tmp_path: Path) -> None:
    changing, settled = two_files(tmp_path)
    plain = run_cli("micro", tmp_path / "b.jsonl")
    assert err(plain).strip().splitlines() == ["0 files compacted, 1 unchanged"]

    run = run_cli("micro", "-v", tmp_path)
    assert run.returncode == OK, err(run)
    lines = err(run).strip().splitlines()
    assert len(lines) == 3 and lines[-1] == "1 file compacted, 1 unchanged"
    assert any(str(changing) in line for line in lines[:2])
    assert any(str(settled) in line for line in lines[:2])

    quiet = run_cli("micro", "-q", tmp_path)
    assert quiet.returncode == OK and err(quiet) == ""


def test_summary_counts_each_outcome(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_bytes(ORIGINAL)
    (tmp_path / "c.jsonl").write_bytes(EXPECTED)
    (tmp_path / "d.jsonl").write_bytes(ORIGINAL + b"{not json}\n")
    run = run_cli("micro", tmp_path)
    assert run.returncode == DATA_ERR, err(run)
    assert summary(run) == "2 files compacted, 1 unchanged, 1 failed"


# ---------------------------------------------------------------- help and start-up


@pytest.mark.parametrize("args", [["--help"], ["micro", "--help"]])
def test_help_lists_the_exit_codes(args: list[str]) -> None:
    run = run_cli(*args, text=True)
    assert run.returncode == OK
    text = " ".join(run.stdout.split())
    for code, meaning in [
        (0, "ok"),
        (1, "check failed"),
        (2, "usage"),
        (65, "bad input"),
        (69, "unavailable"),
        (74, "I/O"),
        (75, "busy"),
    ]:
        assert re.search(rf"\b{code}\b[^;]*{meaning}", text), (code, meaning)


def test_help_and_micro_do_not_import_anthropic(transcript: Path) -> None:
    check = (
        "import sys, compactcli.cli\n"
        "try:\n"
        "    compactcli.cli.cli(sys.argv[1:], prog_name='compactcli')\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'anthropic' not in sys.modules, 'anthropic was imported'\n"
    )
    for args in (["--help"], ["micro", "--help"], ["micro", str(transcript)]):
        run = subprocess.run([sys.executable, "-c", check, *args], capture_output=True, text=True)
        assert run.returncode == 0, (args, run.stderr)
    assert transcript.read_bytes() == EXPECTED  # the micro run above did run

    # The installed entry point too, as Python reports its imports.
    run = run_cli("micro", "--help", prefix=(sys.executable, "-X", "importtime"), text=True)
    assert run.returncode == OK
    imported = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()]
    assert "compactcli.cli" in imported
    assert not [m for m in imported if m == "anthropic" or m.startswith("anthropic.")]


def test_bad_data_is_65_and_a_failing_archive_folder_is_74(tmp_path: Path) -> None:
    # The same transcript torn with a usable archive folder, and whole with one under a regular file.
    (tmp_path / "whole.jsonl").write_bytes(ORIGINAL)
    (tmp_path / "torn.jsonl").write_bytes(ORIGINAL + b'{"role": "us')
    (tmp_path / "plain-file").write_bytes(b"")
    cases = [
        ("torn.jsonl", None, DATA_ERR, "torn.jsonl:18: torn last line"),
        ("whole.jsonl", "plain-file/archive", 74, "Not a directory"),
    ]
    for name, archive_dir, code, message in cases:
        before = (tmp_path / name).read_bytes()
        run = run_cli("micro", *(["--archive-dir", archive_dir] if archive_dir else []), name, cwd=tmp_path)
        assert run.returncode == code, (name, archive_dir, err(run))
        assert message in err(run)
        assert (tmp_path / name).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain-file", "torn.jsonl", "whole.jsonl"]
    assert run_cli("micro", "whole.jsonl", cwd=tmp_path).returncode == OK  # the same data with a good folder


@pytest.mark.parametrize(
    ("size", "min_chars", "cleared"), [(100, 100, False), (101, 100, True), (101, 101, False)]
)
def test_min_chars_keeps_results_of_at_most_that_many_characters(
    tmp_path: Path, size: int, min_chars: int, cleared: bool
) -> None:
    # One old bash result of `size` characters, then three newer ones (kept whatever their size).
    records = [{"role": "user", "content": "go"}]
    for n, chars in enumerate([size, 300, 300, 300]):
        records += [tool_use(f"t{n}", "bash"), tool_result(f"t{n}", "r" * chars)]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(dumps(r) + b"\n" for r in records))
    run = run_cli("micro", "--min-chars", min_chars, path, "-o", "-")
    assert run.returncode == OK, err(run)
    first = json.loads(run.stdout.splitlines()[2])["content"][0]["content"]
    assert first == ("[Previous: used bash]" if cleared else "r" * size)
