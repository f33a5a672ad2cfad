"""Several `compactcli micro` processes at once, and files still being appended to while micro runs.

Contract (docs/design.md, "Concurrency"): one writer per file; a file that changed while it was processed
is left alone and reported busy (exit 75); nothing an agent appends is ever lost.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import bigfile, reference
from helpers.cli import run_cli, start_cli

BUSY = 75
# Stand-in for an agent that appends to its transcript: open, append, close, as Claude Code does.
#   mode "lines":    whole lines, one write(2) each, until STOP exists (or 20 s pass)
#   mode "pieces":   each line in two write(2)s 20 ms apart (a buffered writer flushing a long line)
#   mode "manifest": one line, the moment the archive manifest gets its first line
APPENDER = r"""
import json, os, sys, time
path, stop, mode, manifest = sys.argv[1:5]

def line(i):
    return (json.dumps({"role": "user", "content": f"appended {i}"}) + "\n").encode()

def append(data, pieces=1):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        cut = len(data) // 2 if pieces == 2 else len(data)
        os.write(fd, data[:cut])
        if pieces == 2:
            time.sleep(0.02)
            os.write(fd, data[cut:])
    finally:
        os.close(fd)

count = 0
deadline = time.monotonic() + 20
if mode == "manifest":
    print("ready", flush=True)
    while time.monotonic() < deadline and not os.path.exists(stop):
        if os.path.exists(manifest) and os.path.getsize(manifest) > 0:
            append(line(0))
            count = 1
            break
        time.sleep(0.0001)
else:
    append(line(0))
    count = 1
    print("ready", flush=True)
    while time.monotonic() < deadline and not os.path.exists(stop):
        append(line(count), pieces=2 if mode == "pieces" else 1)
        count += 1
        time.sleep(0.001)
print(count, flush=True)
"""


def appended(count: int) -> bytes:
    """What APPENDER wrote after `count` lines (the same json.dumps call)."""
    return b"".join(
        (json.dumps({"role": "user", "content": f"appended {i}"}) + "\n").encode() for i in range(count)
    )


def manifest_lines(archive_dir: Path) -> list[dict]:
    manifest = archive_dir / "manifest.jsonl"
    return [json.loads(x) for x in manifest.read_bytes().splitlines()] if manifest.exists() else []


def archives_of(path: Path) -> list[Path]:
    """Archive files of `path`: `<stem>.<time>.<sha12>.jsonl` in its .transcripts folder."""
    folder = path.parent / ".transcripts"
    if not folder.exists():
        return []
    return [p for p in folder.iterdir() if p.name.startswith(path.stem + ".") and p.suffix == ".jsonl"]


SAMPLES = Path(__file__).resolve().parent.parent / "samples"


DUMPS = (
    lambda r: json.dumps(r, ensure_ascii=False, separators=(",", ":")),  # Claude Code's style
    json.dumps,
    lambda r: json.dumps(r, ensure_ascii=False),
)


@functools.cache
def expected_result(sample: Path) -> bytes:
    """What micro makes of a sample, by the reference model: a changed line is written back in its style."""
    lines = sample.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    expected, changed = reference.micro(records, sample.parent.name, reference.MicroRules())
    assert changed, f"{sample}: the samples are meant to have results to clear"
    out = []
    for number, line in enumerate(lines):
        if number in changed:
            [dump] = [d for d in DUMPS if d(records[number]).encode() + b"\n" == line][:1]
            line = dump(expected[number]).encode() + b"\n"
        out.append(line)
    return b"".join(out)


def make_folder(root: Path, count: int = 32, seed: int = 7) -> dict[Path, tuple[bytes, bytes]]:
    """`count` small transcripts in all dialects, some in subfolders, some that micro leaves alone.

    The project's samples are among them; their expected result comes from the reference model in
    tests/helpers/reference.py. The rest come from bigfile, which knows their result by itself.
    Returns {path: (original bytes, expected bytes after micro)}.
    """
    rng = random.Random(seed)
    files = {}
    for sample in sorted(SAMPLES.glob("*/*.jsonl"))[: count // 4]:
        path = root / f"sample-{sample.parent.name}-{sample.name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sample, path)
        files[path] = (sample.read_bytes(), expected_result(sample))
    for i in range(count - len(files)):
        dialect = bigfile.DIALECTS[i % len(bigfile.DIALECTS)]
        sub = root / ("nested/deeper" if i % 5 == 0 else "nested" if i % 3 == 0 else "")
        sub.mkdir(parents=True, exist_ok=True)
        turns = 3 if i % 8 == 7 else rng.randint(8, 40)  # 3 results: nothing to clear
        path = sub / f"{dialect}-{i:02d}.jsonl"
        files[path] = bigfile.write(path, dialect, turns=turns, result_chars=rng.randint(200, 3000), seed=i)
    return files


def assert_compacted_once(files: dict[Path, tuple[bytes, bytes]]) -> None:
    for path, (original, expected) in files.items():
        assert path.read_bytes() == expected, f"{path}: not the expected result"
        archives = archives_of(path)
        records = [
            r for r in manifest_lines(path.parent / ".transcripts") if r["source"] == str(path.resolve())
        ]
        if original == expected:
            assert archives == [] and records == [], f"{path}: archived though unchanged"
            continue
        assert len(archives) == 1, f"{path}: {len(archives)} archives"
        assert len(records) == 1, f"{path}: {len(records)} manifest lines"
        assert archives[0].read_bytes() == original
        assert records[0]["archive"] == str(archives[0].resolve())
        assert records[0]["sha256_before"] == hashlib.sha256(original).hexdigest()
        assert records[0]["sha256_after"] == hashlib.sha256(expected).hexdigest()


def run_all(commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """The commands (each compactcli's arguments) started at once; their results once all are done."""
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    procs = [start_cli(*c, **pipes) for c in commands]
    results = []
    for proc, command in zip(procs, commands, strict=True):
        out, err = proc.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    return results


@pytest.mark.parametrize("inputs", ["the folder", "its files, shuffled"])
def test_four_processes_at_once_compact_each_file_exactly_once(tmp_path: Path, inputs: str) -> None:
    files = make_folder(tmp_path)
    changing = sum(1 for original, expected in files.values() if original != expected)
    assert 0 < changing < len(files)
    rng = random.Random(3)
    commands = []
    for _ in range(4):
        if inputs == "the folder":
            args = [str(tmp_path)]
        else:
            args = [str(p) for p in files]
            rng.shuffle(args)
        commands.append(["micro", "--json", *args])

    results = run_all(commands)

    for result in results:
        assert result.returncode in (0, BUSY), result.stderr
        if result.returncode == BUSY:
            assert "busy" in result.stderr
    compacted: Counter[str] = Counter()
    everyone = sorted(str(p.resolve()) for p in files)
    for result in results:
        outcomes = [json.loads(line) for line in result.stdout.splitlines()]
        # Every process accounts for every file, once: done, found done, or busy.
        assert sorted(str(Path(o["path"]).resolve()) for o in outcomes) == everyone
        for outcome in outcomes:
            assert outcome["status"] in ("changed", "unchanged", "busy"), outcome
            if outcome["status"] == "changed":
                compacted[str(Path(outcome["path"]).resolve())] += 1
    # Each file that needed it was compacted by exactly one of the four processes.
    assert compacted == Counter(
        {str(p.resolve()): 1 for p, (original, expected) in files.items() if original != expected}
    )
    assert_compacted_once(files)

    rerun = run_cli("micro", tmp_path, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stderr.strip().splitlines()[-1] == f"0 files compacted, {len(files)} unchanged"
    assert_compacted_once(files)


def test_jobs_2_gives_the_same_result_as_jobs_1(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    files_one = make_folder(one, count=20, seed=11)
    files_two = make_folder(two, count=20, seed=11)
    runs = {}
    for name, folder in (("1", one), ("2", two)):
        runs[name] = run_cli("micro", "--jobs", name, folder, text=True)
        assert runs[name].returncode == 0, runs[name].stderr
    assert runs["1"].stderr == runs["2"].stderr  # the same summary line
    assert_compacted_once(files_one)
    assert_compacted_once(files_two)
    for path in files_one:
        twin = two / path.relative_to(one)
        assert path.read_bytes() == twin.read_bytes()
        assert len(archives_of(path)) == len(archives_of(twin))


def start_appender(path: Path, mode: str) -> tuple[subprocess.Popen, Path]:
    stop = path.parent / "stop-appending"
    manifest = path.parent / ".transcripts" / "manifest.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), str(stop), mode, str(manifest)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc, stop


def stop_appender(proc: subprocess.Popen, stop: Path) -> int:
    stop.touch()
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    stop.unlink()
    return int(out.strip())


def big_transcript(folder: Path) -> tuple[Path, bytes, bytes]:
    """A transcript big enough (about 8 MB) that micro takes a noticeable time on it."""
    path = folder / "live.jsonl"
    original, expected = bigfile.write(path, "anthropic", turns=1000, result_chars=8000, seed=5)
    assert original != expected
    return path, original, expected


@pytest.mark.parametrize("mode", ["lines", "pieces"])
def test_file_appended_to_during_the_run_is_left_alone_and_reported_busy(tmp_path: Path, mode: str) -> None:
    path, original, _ = big_transcript(tmp_path)
    appender, stop = start_appender(path, mode)
    try:
        run = run_cli("micro", path, text=True)
    finally:
        count = stop_appender(appender, stop)
    assert count > 3  # the file grew all through the run

    assert run.returncode == BUSY, run.stderr
    assert "busy" in run.stderr and str(path) in run.stderr
    assert path.read_bytes() == original + appended(count)  # every appended line, intact
    assert archives_of(path) == []
    assert manifest_lines(tmp_path / ".transcripts") == []

    # Once the agent has stopped, the file is compacted, appended lines and all.
    rerun = run_cli("micro", path, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert path.read_bytes().endswith(appended(count))
    assert len(archives_of(path)) == 1


def test_line_appended_just_before_the_replacement_is_not_lost(tmp_path: Path) -> None:
    """The appender writes the moment the manifest line is written, i.e. just before the rename."""
    path, original, expected = big_transcript(tmp_path)
    appender, stop = start_appender(path, "manifest")
    try:
        run = run_cli("micro", path, text=True)
    finally:
        count = stop_appender(appender, stop)
    assert count == 1, "the run ended without writing the manifest"

    final = path.read_bytes()
    # Left alone and busy, or compacted with the line on top; never without the line.
    assert final in (original + appended(1), expected + appended(1)), (
        f"exit {run.returncode}; the appended line is "
        + ("lost" if appended(1) not in final else "misplaced")
    )
    if final == original + appended(1):
        assert run.returncode == BUSY, run.stderr
    # Whatever happened, a manifest line names an archive that holds the original.
    for record in manifest_lines(tmp_path / ".transcripts"):
        assert Path(record["archive"]).read_bytes() == original
