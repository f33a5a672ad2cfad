"""Commands on a real Dask cluster (--scheduler): the same results, report and exit code as a local run.

One LocalCluster with two worker processes is shared by the module (it takes seconds to start). The
CLI runs as a real subprocess that connects to it by address, as it would to a remote scheduler.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest
from helpers import bigfile
from helpers.cli import environ, run_cli, start_cli

needs_dask = pytest.mark.skipif(
    find_spec("distributed") is None, reason="needs the dask extra: pip install 'compactcli[dask]'"
)
FILES_PER_DIALECT = 3


@pytest.fixture(autouse=True)
def no_scheduler_of_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local runs are local: a DASK_SCHEDULER_ADDRESS of the machine would be taken as --scheduler."""
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def cluster() -> Iterator:
    """(scheduler address, client) of a LocalCluster of two single-threaded worker processes."""
    pytest.importorskip("distributed", reason="needs the dask extra: pip install 'compactcli[dask]'")
    from distributed import Client

    from compactcli.run.executors import local_cluster

    with local_cluster(2) as local, Client(local) as client:
        yield local.scheduler_address, client


@needs_dask
def test_local_cluster_workers_run_without_what_costs_small_files_cpu(cluster) -> None:
    """Dask's defaults set MALLOC_TRIM_THRESHOLD_ (estimate ~30% more CPU a file) and a 100 Hz profiler:
    the workers that local:N starts have neither (executors.WORKER_CONFIG)."""
    import dask

    _, client = cluster
    assert dask.config.get("distributed.nanny.pre-spawn-environ")["MALLOC_TRIM_THRESHOLD_"] == 65536
    assert dask.config.get("distributed.worker.profile.enabled") is True
    trim = client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_")
    profile = client.run(dask.config.get, "distributed.worker.profile.enabled")
    assert len(trim) == len(profile) == 2
    assert set(trim.values()) == {None}
    assert set(profile.values()) == {False}


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A folder of generated transcripts of every dialect (nested), and what micro must make of each."""
    root = tmp_path_factory.mktemp("transcripts")
    expected: dict[str, bytes] = {}
    for dialect in bigfile.DIALECTS:
        for seed in range(FILES_PER_DIALECT):
            relative = f"{dialect}/s{seed}/session.jsonl" if seed else f"{dialect}/session.jsonl"
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            _, after = bigfile.write(target, dialect, turns=12, result_chars=400, seed=seed)
            expected[relative] = after
    # one file that is not a transcript: it fails alike everywhere (exit 65, named by file and line)
    (root / "broken.jsonl").write_bytes(b'{"role": "user", "content": "hi"}\n{not json\n')
    return root, expected


def files_under(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


@needs_dask
@pytest.mark.parametrize("command", ["estimate", "validate"])
def test_read_only_commands_report_the_same_on_a_cluster(cluster, transcripts, command: str) -> None:
    address, _ = cluster
    root, _ = transcripts
    local = run_cli(command, root, "--json", text=True)
    on_cluster = run_cli(command, root, "--json", "--scheduler", address, text=True)
    assert on_cluster.returncode == local.returncode == 65  # the broken file, on both
    assert on_cluster.stdout == local.stdout
    outcomes = json_lines(on_cluster.stdout)
    assert len(outcomes) == len(bigfile.DIALECTS) * FILES_PER_DIALECT + 1
    assert f"{root / 'broken.jsonl'}:2:" in on_cluster.stderr


@needs_dask
def test_micro_output_dir_on_a_cluster_is_byte_identical_to_a_local_run(
    cluster, transcripts, tmp_path: Path
) -> None:
    address, _ = cluster
    root, expected = transcripts
    before = files_under(root)
    local = run_cli("micro", root, "--output-dir", tmp_path / "local", "--json", text=True)
    on_cluster = run_cli(
        "micro", root, "--output-dir", tmp_path / "dask", "--json", "--scheduler", address, text=True
    )
    assert on_cluster.returncode == local.returncode == 65
    written = files_under(tmp_path / "dask")
    assert written == files_under(tmp_path / "local")
    for relative, after in expected.items():
        assert written[relative] == after, relative
    assert "broken.jsonl" not in written  # a file that fails writes nothing
    assert files_under(root) == before  # the originals stay
    # the same lines but for where each result went
    unplaced = [json.dumps(o).replace(str(tmp_path / "dask"), "OUT") for o in json_lines(on_cluster.stdout)]
    assert unplaced == [
        json.dumps(o).replace(str(tmp_path / "local"), "OUT") for o in json_lines(local.stdout)
    ]
    manifest = json_lines((tmp_path / "dask" / ".compactcli-manifest.jsonl").read_text())
    assert {m["source"] for m in manifest} == {str(root / r) for r in expected}
    assert all(m["output"] == str(tmp_path / "dask" / m["source"][len(str(root)) + 1 :]) for m in manifest)


@needs_dask
def test_micro_in_place_on_a_cluster_archives_and_rewrites_like_a_local_run(
    cluster, transcripts, tmp_path: Path
) -> None:
    address, _ = cluster
    root, expected = transcripts
    work = tmp_path / "work"
    shutil.copytree(root, work)
    (work / "broken.jsonl").unlink()
    done = run_cli("micro", work, "--scheduler", address, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith(f"{len(expected)} files compacted, 0 unchanged")
    assert files_under(work) == expected
    archives = list(work.rglob(".transcripts/session.*.jsonl"))
    assert len(archives) == len(expected)


@needs_dask
def test_a_scheduler_that_cannot_be_reached_fails_before_any_file(transcripts) -> None:
    root, _ = transcripts
    # dask's own setting, as a user would shorten the wait
    done = run_cli(
        "estimate",
        root,
        "--scheduler",
        "tcp://127.0.0.1:9",
        text=True,
        env=environ(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s"),
    )
    assert done.returncode == 74
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in done.stderr
    assert done.stdout == ""


def test_scheduler_without_the_dask_extra_is_a_usage_error_saying_what_to_install(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"role": "user", "content": "hi"}\n')
    hide_dask = "import sys; sys.modules['distributed'] = None; from compactcli.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", hide_dask, "estimate", str(transcript), "--scheduler", "tcp://127.0.0.1:8786"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "pip install 'compactcli[dask]'" in done.stderr


# --- a worker dies mid-run -----------------------------------------------------------------------
#
# The input that pins a task to a worker is a named pipe that this test holds open for writing: the
# worker reading it blocks until the test writes, so the test can find that worker (it has the pipe
# open) and kill it, deterministically.


def _holder_of(pipe: Path, client) -> int | None:
    """The pid of the worker process that has `pipe` open, if any."""
    target = str(pipe)
    for pid in client.run(os.getpid, on_error="ignore").values():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None


def _kill_holder(pipe: Path, client, deadline: float) -> int:
    while time.monotonic() < deadline:
        pid = _holder_of(pipe, client)
        if pid is not None:
            os.kill(pid, 9)
            return pid
        time.sleep(0.05)
    raise AssertionError(f"no worker opened {pipe}")


@pytest.fixture
def held_pipe(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    pipe = tmp_path / "live.jsonl"
    os.mkfifo(pipe)
    fd = os.open(pipe, os.O_RDWR)  # a reader's open returns at once; its reads wait for our write
    try:
        yield pipe, fd
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


@needs_dask
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the worker through /proc")
def test_a_killed_worker_loses_no_file_its_work_runs_again(cluster, transcripts, held_pipe) -> None:
    address, client = cluster
    client.wait_for_workers(2, timeout=60)
    root, expected = transcripts
    pipe, fd = held_pipe
    content = (root / next(iter(expected))).read_bytes()
    job = start_cli(
        "estimate",
        root,
        pipe,
        "--json",
        "--scheduler",
        address,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        killed = _kill_holder(pipe, client, time.monotonic() + 60)
        # The scheduler runs the task again on a live worker; it opens the pipe again.
        deadline = time.monotonic() + 60
        while (_holder_of(pipe, client) in (None, killed)) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.write(fd, content)
        os.close(fd)
        out, err = job.communicate(timeout=120)
    finally:
        job.kill()
    outcomes = json_lines(out)
    assert job.returncode == 65, err  # the broken file only: the pipe's file was processed after all
    assert [o["path"] for o in outcomes][-1] == str(pipe)
    assert outcomes[-1]["status"] == "ok"
    assert len(outcomes) == len(expected) + 2
    assert sum(o["status"] == "failed" for o in outcomes) == 1


@needs_dask
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the worker through /proc")
def test_a_file_whose_worker_keeps_dying_is_reported_failed_and_the_others_done(
    cluster, transcripts, held_pipe
) -> None:
    address, client = cluster
    client.wait_for_workers(2, timeout=60)
    root, expected = transcripts
    pipe, _ = held_pipe

    def allowed_failures(value: int, dask_scheduler=None) -> int:
        before = dask_scheduler.allowed_failures
        dask_scheduler.allowed_failures = value
        return before

    before = client.run_on_scheduler(allowed_failures, 0)  # give up on a task at its first lost worker
    try:
        job = start_cli(
            "estimate",
            root,
            pipe,
            "--json",
            "--scheduler",
            address,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        killer = threading.Thread(target=_keep_killing, args=(pipe, client, job), daemon=True)
        killer.start()
        out, err = job.communicate(timeout=180)
        killer.join(timeout=10)
    finally:
        client.run_on_scheduler(allowed_failures, before)
        client.wait_for_workers(2, timeout=60)
    outcomes = json_lines(out)
    assert job.returncode == 74, err  # an I/O error outranks the broken file's 65
    assert len(outcomes) == len(expected) + 2  # every file is reported
    last = outcomes[-1]
    assert last["path"] == str(pipe) and last["status"] == "failed" and last["exit_code"] == 74
    assert f"error: {pipe}: not processed: the Dask worker processing it died" in err
    assert sum(o["status"] == "ok" for o in outcomes) == len(expected)


def _keep_killing(pipe: Path, client, job: subprocess.Popen) -> None:
    while job.poll() is None:
        pid = _holder_of(pipe, client)
        if pid is not None:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


@needs_dask
def test_the_scheduler_can_come_from_the_configuration_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.compactcli]\nscheduler = "local:0"\n')
    (tmp_path / "t.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    done = run_cli("estimate", "t.jsonl", cwd=tmp_path, text=True)
    assert done.returncode == 2  # the file's value reached --scheduler and was checked there
    assert "local:N takes a number of workers N >= 1" in done.stderr
