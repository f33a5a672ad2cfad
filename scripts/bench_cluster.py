"""Many small files: `--jobs N` against a Dask LocalCluster of N worker processes (`bench.py --many-files`).

The cluster is started once, before the timed runs, as a real cluster is already running when a command
is sent to it; it is started as `--scheduler local:N` starts its own (executors.local_cluster). A second
cluster with Dask's default worker environment, started after the first is closed, shows what that
setting costs. `--scheduler local:N` (which starts its cluster inside the command) is timed once besides.

Each command runs in its own subprocess, round-robin, --repeat times, over N files and over a few
(N/100, at least 4 a worker); medians are reported. The machine may be shared, so CPU time is the
measure that counts: the command's own (os.wait4: it and the processes it waited for, --jobs's pool
included) plus, for a cluster, what its scheduler and worker processes spent during the run (psutil).
The cost per file is the slope, (median over N files - median over a few) / (N - few): the start-up
a command pays once (Python, imports, a pool or the connection to the scheduler) is left out of it
and shown apart, as "start" (the run over a few files). The target compares the cost per file; the
whole-run ratios, start included, are printed beside it. Every command reads every file (--no-cache,
its own XDG_CACHE_HOME), and micro's outputs are checked equal between the two executors.

    .venv/bin/python scripts/bench.py --many-files 20000 --workers 2 [--many-commands estimate]
"""

from __future__ import annotations

import filecmp
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import make_big

TARGET_PER_FILE_VS_JOBS = 2.0  # a LocalCluster's CPU time per file / --jobs's, at most
COMMANDS = ("estimate", "micro")


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


class ClusterCPU:
    """CPU seconds spent by this process (where a LocalCluster's scheduler and nannies run) and its
    worker processes; the command's own subprocess is counted by os.wait4 instead."""

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()

    def __call__(self, leave_out: int | None = None) -> float:
        total = sum(self.me.cpu_times()[:2])
        for child in self.me.children(recursive=True):
            if child.pid != leave_out:
                try:
                    total += sum(child.cpu_times()[:2])
                except Exception:  # a process that ended meanwhile
                    pass
        return total


def timed(argv: list[str], env: dict[str, str], cluster_cpu: ClusterCPU | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one command, with its cluster's CPU during the run if given."""
    before = cluster_cpu() if cluster_cpu else 0.0
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stderr = child.stderr.read() if child.stderr else b""
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    took = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}\n{stderr.decode()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    if cluster_cpu:
        cpu += cluster_cpu(leave_out=child.pid) - before
    return took, cpu


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


def run(
    cli: list[str],
    base: Path,
    count: int,
    workers: int,
    repeat: int,
    seed: int,
    commands: tuple[str, ...] = COMMANDS,
) -> dict:
    from distributed import Client

    from compactcli.run.executors import chunk_size, local_cluster

    folder = base / f"many-{count}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    size = make_files(folder, count, seed)
    # The start-up each command pays once is measured over a few files: enough that --jobs starts its
    # pool and the cluster gets a task per worker, as over many.
    few_count = max(4 * workers, count // 100)
    few = folder / "few"
    few.mkdir()
    for path in sorted((folder / "in" / "000").iterdir())[:few_count]:
        shutil.copy(path, few / path.name)
    env = dict(os.environ, XDG_CACHE_HOME=str(folder / "cache"))
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    print(
        f"\n=== {count:,} small files ({size / count / 1e3:.1f} KB each), {workers} workers ===", flush=True
    )
    chunk = chunk_size(count, workers)
    print(f"chunk size chosen: {chunk} files per task ({-(-count // chunk)} tasks)", flush=True)
    cluster_cpu = ClusterCPU()
    rows: dict[str, dict[str, list[tuple[float, float]]]] = {}
    sizes = (("many", folder / "in"), ("few", few))
    # One cluster at a time, so that the CPU of the cluster in use is all that is counted.
    for start_cluster, kinds in ((local_cluster, (JOBS, CLUSTER)), (dask_default_cluster, (DEFAULT_ENV,))):
        if "estimate" not in commands and kinds == (DEFAULT_ENV,):
            continue
        with start_cluster(workers) as cluster, Client(cluster):
            cases = cases_for(cli, workers, cluster.scheduler_address, commands, kinds)
            for _ in range(repeat):
                for name, (argv, on_cluster, output) in cases.items():
                    for label, inputs in sizes:
                        extra = []
                        if output:
                            target = folder / f"out-{label}-{output}"
                            shutil.rmtree(target, ignore_errors=True)
                            extra = ["--output-dir", str(target)]
                        measured = timed(
                            [*argv, str(inputs), *extra], env, cluster_cpu if on_cluster else None
                        )
                        rows.setdefault(name, {}).setdefault(label, []).append(measured)
    argv = [*cli, "estimate", "-q", "--no-cache", "--scheduler", f"local:{workers}"]
    started = {label: timed([*argv, str(inputs)], env, None) for label, inputs in sizes}
    result = report(rows, count - few_count, workers, commands, started)
    if "micro" in commands:
        result["identical"] = same_tree(folder / "out-many-jobs", folder / "out-many-dask")
        print(f"micro outputs identical between --jobs and the cluster: {result['identical']}")
        if not result["identical"]:
            result["failures"].append("micro outputs differ")
    shutil.rmtree(folder, ignore_errors=True)
    return {"files": count, "workers": workers, "chunk_size": chunk, **result}


def dask_default_cluster(workers: int):
    """A LocalCluster as Dask starts one by default (its nanny sets MALLOC_TRIM_THRESHOLD_)."""
    from compactcli.run.executors import local_cluster

    return local_cluster(workers, config={})


JOBS, CLUSTER, DEFAULT_ENV = "--jobs", "cluster", "cluster, Dask's default worker env"


def cases_for(
    cli: list[str], workers: int, address: str, commands: tuple[str, ...], kinds: tuple[str, ...]
) -> dict[str, tuple[list[str], bool, str | None]]:
    """name -> (argv without its input, whether it runs on the cluster, --output-dir tag or None)."""
    cases: dict[str, tuple[list[str], bool, str | None]] = {}
    if "estimate" in commands:
        estimate = [*cli, "estimate", "-q", "--no-cache"]
        if JOBS in kinds:
            cases[f"estimate {JOBS} {workers}"] = ([*estimate, "--jobs", str(workers)], False, None)
        for kind in {CLUSTER, DEFAULT_ENV} & set(kinds):
            cases[f"estimate {kind}"] = ([*estimate, "--scheduler", address], True, None)
    if "micro" in commands and CLUSTER in kinds:
        micro = [*cli, "micro", "-q", "--no-cache"]
        cases[f"micro --output-dir {JOBS} {workers}"] = ([*micro, "--jobs", str(workers)], False, "jobs")
        cases[f"micro --output-dir {CLUSTER}"] = ([*micro, "--scheduler", address], True, "dask")
    return cases


def report(rows: dict, extra_files: int, workers: int, commands: tuple[str, ...], started: dict) -> dict:
    """The table (medians; per file = the slope between few and many files), the ratios and verdicts."""
    figures: dict[str, dict[str, float]] = {}
    for name, by_size in rows.items():
        many = [statistics.median(m[i] for m in by_size["many"]) for i in (0, 1)]
        few = [statistics.median(m[i] for m in by_size["few"]) for i in (0, 1)]
        figures[name] = {
            "wall_s": many[0],
            "cpu_s": many[1],
            "start_wall_s": few[0],
            "start_cpu_s": few[1],
            "wall_ms_per_file": (many[0] - few[0]) / extra_files * 1e3,
            "cpu_ms_per_file": (many[1] - few[1]) / extra_files * 1e3,
        }
    figures[f"estimate --scheduler local:{workers} (starts its cluster; once)"] = {
        "wall_s": started["many"][0],
        "cpu_s": started["many"][1],
        "start_wall_s": started["few"][0],
        "start_cpu_s": started["few"][1],
        "wall_ms_per_file": (started["many"][0] - started["few"][0]) / extra_files * 1e3,
        "cpu_ms_per_file": (started["many"][1] - started["few"][1]) / extra_files * 1e3,
    }
    print(
        f"{'command':<50} {'wall s':>7} {'CPU s':>7} {'start wall':>10} {'start CPU':>9} "
        f"{'wall ms/file':>12} {'CPU ms/file':>11}"
    )
    for name, f in figures.items():
        print(
            f"{name:<50} {f['wall_s']:>7.2f} {f['cpu_s']:>7.2f} {f['start_wall_s']:>10.2f} "
            f"{f['start_cpu_s']:>9.2f} {f['wall_ms_per_file']:>12.3f} {f['cpu_ms_per_file']:>11.3f}"
        )
    ratios: dict[str, dict[str, float]] = {}
    failures: list[str] = []
    pairs = []
    if "estimate" in commands:
        pairs += [("estimate", CLUSTER), ("estimate", DEFAULT_ENV)]
    if "micro" in commands:
        pairs += [("micro --output-dir", CLUSTER)]
    for command, kind in pairs:
        jobs, dask = figures[f"{command} {JOBS} {workers}"], figures[f"{command} {kind}"]
        ratio = {
            "cpu_per_file": dask["cpu_ms_per_file"] / jobs["cpu_ms_per_file"],
            "wall_per_file": dask["wall_ms_per_file"] / jobs["wall_ms_per_file"],
            "cpu_total": dask["cpu_s"] / jobs["cpu_s"],
            "wall_total": dask["wall_s"] / jobs["wall_s"],
        }
        ratios[f"{command} {kind}"] = ratio
        verdict = "ok" if ratio["cpu_per_file"] <= TARGET_PER_FILE_VS_JOBS else "OVER"
        print(
            f"{command} ({kind}) / --jobs {workers}: per file CPU {ratio['cpu_per_file']:.2f}x "
            f"(target <= {TARGET_PER_FILE_VS_JOBS}x) {verdict}; per file wall {ratio['wall_per_file']:.2f}x; "
            f"whole run, start included: CPU {ratio['cpu_total']:.2f}x, wall {ratio['wall_total']:.2f}x"
        )
        if kind == CLUSTER and ratio["cpu_per_file"] > TARGET_PER_FILE_VS_JOBS:
            failures.append(f"{command}: {ratio['cpu_per_file']:.2f}x")
    return {"figures": figures, "ratios": ratios, "failures": failures}
