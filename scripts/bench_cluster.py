"""Many small files: `--jobs N` against a Dask LocalCluster of N worker processes (`bench.py --many-files`).

The cluster is started once, before the timed runs, as a real cluster is already running when a command
is sent to it; `--scheduler local:N` (which starts its own cluster) is timed once besides. Each command
runs in its own subprocess, round-robin, --repeat times; medians are reported, and the cost per file is
the run's time divided by the number of files. Outputs are checked equal between the two executors.

    .venv/bin/python scripts/bench.py --many-files 20000 --workers 2
"""

from __future__ import annotations

import filecmp
import logging
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import make_big

TARGET_PER_FILE_VS_JOBS = 2.0  # a LocalCluster's time per file / --jobs's, at most


def make_files(folder: Path, count: int, seed: int) -> int:
    """`count` small transcripts (a few KB, every dialect) in folders of 1,000; their total bytes."""
    templates = []
    for dialect in make_big.DIALECTS:
        path = folder / f"template-{dialect}.jsonl"
        make_big.generate(path, 0.004, dialect, seed)
        templates.append(path.read_bytes())
        path.unlink()
    total = 0
    for n in range(count):
        target = folder / "in" / f"{n // 1000:03d}" / f"s{n:06d}.jsonl"
        if n % 1000 == 0:
            target.parent.mkdir(parents=True, exist_ok=True)
        data = templates[n % len(templates)]
        target.write_bytes(data)
        total += len(data)
    return total


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}\n{done.stderr[-2000:]}")
    return took


def same_tree(a: Path, b: Path) -> bool:
    compared = filecmp.dircmp(a, b, ignore=[".compactcli-manifest.jsonl"])
    pending = [compared]
    while pending:
        node = pending.pop()
        if node.left_only or node.right_only or node.diff_files or node.funny_files:
            return False
        _, mismatch, errors = filecmp.cmpfiles(node.left, node.right, node.common_files, shallow=False)
        if mismatch or errors:
            return False
        pending.extend(node.subdirs.values())
    return True


def run(cli: list[str], base: Path, count: int, workers: int, repeat: int, seed: int) -> dict:
    from distributed import Client, LocalCluster

    from compactcli.executors import chunk_size

    folder = base / f"many-{count}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    size = make_files(folder, count, seed)
    print(
        f"\n=== {count:,} small files ({size / count / 1e3:.1f} KB each), {workers} workers ===", flush=True
    )
    chunk = chunk_size(count, workers)
    print(f"chunk size chosen: {chunk} files per task ({-(-count // chunk)} tasks)")
    inputs = str(folder / "in")
    rows: dict[str, list[float]] = {}
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster),
    ):
        address = cluster.scheduler_address
        cases = {
            "estimate -j1": [*cli, "estimate", inputs, "-q", "--jobs", "1"],
            f"estimate --jobs {workers}": [*cli, "estimate", inputs, "-q", "--jobs", str(workers)],
            f"estimate --scheduler (running cluster of {workers})": [
                *cli, "estimate", inputs, "-q", "--scheduler", address,
            ],
            f"micro --output-dir --jobs {workers}": [
                *cli, "micro", inputs, "-q", "--jobs", str(workers), "--output-dir", str(folder / "out-jobs"),
            ],
            f"micro --output-dir --scheduler (running cluster of {workers})": [
                *cli, "micro", inputs, "-q", "--scheduler", address, "--output-dir", str(folder / "out-dask"),
            ],
        }  # fmt: skip
        for _ in range(repeat):
            for name, argv in cases.items():
                rows.setdefault(name, []).append(timed(argv))
    rows[f"estimate --scheduler local:{workers} (starts its cluster)"] = [
        timed([*cli, "estimate", inputs, "-q", "--scheduler", f"local:{workers}"])
    ]
    medians = {name: statistics.median(times) for name, times in rows.items()}
    print(f"{'command':<60} {'median s':>9} {'ms/file':>8}")
    for name, seconds in medians.items():
        print(f"{name:<60} {seconds:>9.2f} {seconds / count * 1e3:>8.3f}")
    estimate_ratio = (
        medians[f"estimate --scheduler (running cluster of {workers})"]
        / medians[f"estimate --jobs {workers}"]
    )
    micro_ratio = (
        medians[f"micro --output-dir --scheduler (running cluster of {workers})"]
        / medians[f"micro --output-dir --jobs {workers}"]
    )
    identical = same_tree(folder / "out-jobs", folder / "out-dask")
    for what, ratio in (("estimate", estimate_ratio), ("micro --output-dir", micro_ratio)):
        verdict = "ok" if ratio <= TARGET_PER_FILE_VS_JOBS else "OVER"
        print(
            f"{what}: per file, cluster / --jobs = {ratio:.2f}x "
            f"(target <= {TARGET_PER_FILE_VS_JOBS}x) {verdict}"
        )
    print(f"micro outputs identical between --jobs and the cluster: {identical}")
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "files": count,
        "workers": workers,
        "chunk_size": chunk,
        "medians_s": medians,
        "estimate_ratio": estimate_ratio,
        "micro_ratio": micro_ratio,
        "identical": identical,
        "failures": []
        if identical and max(estimate_ratio, micro_ratio) <= TARGET_PER_FILE_VS_JOBS
        else ["over"],
    }
