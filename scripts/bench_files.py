"""Many small files: what a cron job over a log folder costs once its files are compacted.

The files are small transcripts micro leaves unchanged (at most --keep tool results), as a folder looks
after the first run; nothing is written, so the cases measure reading and deciding, not fsync.

    (a) every file read (--no-cache), -j1 and -jN: a first run, and --jobs against one process
    (b) second run, nothing changed since the last run: the cache answers without reading
    (c) floor: a Python loop that walks the folder and stats every file (os.walk + os.stat)

Used by bench.py; the helpers for running a child and taking medians are passed in.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

WALK_STAT = """
import os, sys
n = 0
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        os.stat(os.path.join(folder, name))
        n += 1
"""
FILES_PER_FOLDER = 100
SETTLE = 2.1  # the cache does not remember a file changed less than 2 s before it was read


def _record(role: str, content) -> bytes:
    return json.dumps({"role": role, "content": content}, separators=(",", ":")).encode() + b"\n"


def small_transcript(n: int) -> bytes:
    """An Anthropic transcript of 1-3 tool calls with outputs of 0.4-2 KB (micro leaves it unchanged)."""
    lines = [_record("user", f"task {n}: look around the repository")]
    for call in range(1 + n % 3):
        tool_id = f"toolu_{n:05d}_{call}"
        use = {"type": "tool_use", "id": tool_id, "name": "bash", "input": {"command": f"ls src/{call}"}}
        output = "".join(f"src/{call}/module_{k}.py\n" for k in range(20 + (n + call) % 80))
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        lines += [_record("assistant", [use]), _record("user", [result])]
    lines.append(_record("assistant", f"done with task {n}"))
    return b"".join(lines)


def make_folder(root: Path, files: int) -> Path:
    """`files` small transcripts in folders of FILES_PER_FOLDER, made once per count."""
    folder = root / f"small-{files}"
    if folder.exists():
        return folder
    partial = root / f"small-{files}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    for n in range(files):
        sub = partial / f"project-{n // FILES_PER_FOLDER:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"session-{n:05d}.jsonl").write_bytes(small_transcript(n))
    partial.rename(folder)
    return folder


def bench_many(
    *,
    files: int,
    jobs: list[int],
    repeat: int,
    base: Path,
    cli: list[str],
    python: str,
    run_child: Callable,
) -> dict:
    """Medians of each case; every case runs in its own subprocess, round-robin."""
    print(f"\n=== {files:,} small files ===", flush=True)
    pristine = make_folder(base, files)
    size = sum(p.stat().st_size for p in pristine.rglob("*.jsonl"))
    work = base / "many-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    cache_home = work / "cache-home"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_home))

    micro = [*cli, "micro", "-q", str(pristine)]
    # Remember every file: read once after the files settled (the cache skips files changed just now).
    time.sleep(max(0.0, SETTLE - (time.time() - pristine.stat().st_ctime)))
    run_child(micro, env=env)

    cases: dict[str, list[str]] = {
        "walk+stat loop (floor)": [python, "-c", WALK_STAT, str(pristine)],
        "second run, nothing changed": micro,
    }
    for n in jobs:
        cases[f"every file read -j{n}"] = [*micro, "--no-cache", f"-j{n}", "--json"]
    samples: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    outputs = {n: work / f"j{n}.json" for n in jobs}
    for round_ in range(repeat):
        for name, argv in cases.items():
            n = int(name.rsplit("-j", 1)[1]) if "-j" in name else None
            sample = run_child(argv, stdout=outputs.get(n), env=env)
            samples[name].append(sample.seconds)
            cpu[name].append(sample.cpu)
            print(
                f"  round {round_ + 1}: {name:30s} {sample.seconds:6.2f}s wall {sample.cpu:6.2f}s CPU",
                flush=True,
            )
    verified = [outputs[jobs[0]].read_bytes() == outputs[n].read_bytes() for n in jobs[1:]]
    shutil.rmtree(work, ignore_errors=True)
    return {
        "files": files,
        "bytes": size,
        "medians": {name: statistics.median(times) for name, times in samples.items()},
        "cpu_medians": {name: statistics.median(times) for name, times in cpu.items()},
        "jobs_identical": all(verified),
    }
