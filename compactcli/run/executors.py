"""Where the per-file work runs: here, in local processes (--jobs), or on a Dask cluster (--scheduler).

Every executor yields the outcomes in the order of the items, so the report, --json and the exit code
do not depend on where the work ran; `done(n)` is called as files complete (progress), in whatever
order they complete. Dask is imported only when --scheduler is given (docs/design.md, "Many machines").
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from compactcli.core import errors

if TYPE_CHECKING:
    from compactcli.report import Outcome

Work = Callable[[str], "Outcome"]  # one file -> its outcome; never raises for a file's own failure
Done = Callable[[int], None]

DASK_EXTRA_HINT = "--scheduler needs Dask: pip install 'compactcli[dask]'"
LOCAL_CLUSTER = "local:"  # --scheduler local:N starts a LocalCluster of N worker processes
# Files per Dask task: enough that the ~1 ms a task costs the scheduler is small beside the files' own
# work, few enough that every worker gets several tasks (load balance) and a lost worker costs little.
CHUNK_MAX = 256
CHUNKS_PER_WORKER = 4
# How the workers of `local:N` differ from Dask's defaults, for tasks that read many small files and hold
# no large arrays (docs/design.md, "Many machines"; README says how to start other workers the same way):
# - Dask's nanny sets MALLOC_TRIM_THRESHOLD_ (to hand large arrays' memory back to the system); any fixed
#   value turns off glibc's adaptive mmap threshold, so every buffer of 128 KiB or more (each file's read
#   buffer) is mapped and unmapped again: estimate then costs ~30% more CPU a file;
# - the worker's profiler samples the task's stack 100 times a second: half of an idle worker's CPU.
WORKER_CONFIG = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.worker.profile.enabled": False,
}


class Executor(Protocol):
    def map(self, work: Work, items: Sequence[str], done: Done) -> Iterator[Outcome]:
        """The outcome of `work(item)` for every item, in the order of `items`."""


class LocalExecutor:
    """This process (jobs=1) or a pool of `jobs` local processes."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs

    def map(self, work: Work, items: Sequence[str], done: Done) -> Iterator[Outcome]:
        if self.jobs <= 1 or len(items) <= 1:
            for item in items:
                yield work(item)
                done(1)
            return
        from concurrent.futures import ProcessPoolExecutor  # costs 20 ms of start-up; only here

        # Many small files cost mostly the round trip to a worker process: they go in chunks, still
        # small enough that the workers finish close together. The work goes to each process once.
        chunk = max(1, min(LOCAL_CHUNK_MAX, len(items) // (self.jobs * CHUNKS_PER_WORKER * 2)))
        with ProcessPoolExecutor(max_workers=self.jobs, initializer=_set_work, initargs=(work,)) as pool:
            for outcome in pool.map(_run_work, items, chunksize=chunk):
                yield outcome
                done(1)


LOCAL_CHUNK_MAX = 64
_work: Work | None = None  # the work of this --jobs worker process


def _set_work(work: Work) -> None:
    global _work
    _work = work


def _run_work(item: str) -> Outcome:
    assert _work is not None
    return _work(item)


def dask_available() -> bool:
    """Whether the dask extra is installed (checked without importing it: --help stays fast)."""
    return importlib.util.find_spec("distributed") is not None


def local_cluster(workers: int, config: dict | None = None):
    """A LocalCluster of `workers` single-threaded worker processes, quiet, dashboard on a free port,
    with `config` (by default WORKER_CONFIG; {} for Dask's defaults)."""
    import logging

    import dask
    from distributed import LocalCluster

    with dask.config.set(WORKER_CONFIG if config is None else config):  # read when each nanny is made
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )


def chunk_size(files: int, workers: int) -> int:
    """Files per task: CHUNKS_PER_WORKER tasks per worker thread, at most CHUNK_MAX files each."""
    return max(1, min(CHUNK_MAX, math.ceil(files / (max(1, workers) * CHUNKS_PER_WORKER))))


def run_chunk(work: Work, chunk: Sequence[str]) -> list[Outcome]:
    """One Dask task: the files of a chunk, one after the other, on one worker."""
    return [work(item) for item in chunk]


class DaskExecutor:
    """Chunks of files as tasks on a Dask cluster; results are gathered as they complete.

    A worker that dies takes its running tasks with it; the scheduler runs them again elsewhere (up to
    its `allowed-failures`). A chunk it gives up on (KilledWorker) is split and each file submitted on
    its own, so that one file that kills its worker fails alone; a file that still cannot be processed,
    or any other error of the cluster, is reported failed (exit 74) by name: no file is skipped silently.
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self._client = None
        self._cluster = None

    def __enter__(self) -> DaskExecutor:
        from distributed import Client

        try:
            if self.address.startswith(LOCAL_CLUSTER):
                self._cluster = local_cluster(int(self.address[len(LOCAL_CLUSTER) :]))
                self._client = Client(self._cluster)
            else:
                self._client = Client(self.address)  # waits distributed.comm.timeouts.connect
        except (OSError, TimeoutError) as exc:
            self.__exit__(None, None, None)
            raise errors.CompactError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        return self

    def __exit__(self, *exc_info) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def workers(self) -> int:
        threads = self._client.nthreads() if self._client is not None else {}
        return max(1, sum(threads.values()))

    def map(self, work: Work, items: Sequence[str], done: Done) -> Iterator[Outcome]:
        from distributed import KilledWorker, as_completed

        client = self._client
        tasks: dict = {}  # future -> the positions in `items` of its files

        def submit(positions: list[int]):
            future = client.submit(run_chunk, work, [items[p] for p in positions], pure=False)
            tasks[future] = positions
            return future

        size = chunk_size(len(items), self.workers())
        starts = range(0, len(items), size)
        pending = as_completed([submit(list(range(s, min(s + size, len(items))))) for s in starts])
        results: list = [None] * len(items)
        reported = 0
        failure = "the run ended before the cluster returned it"
        try:
            for future in pending:
                positions = tasks.pop(future)
                try:
                    outcomes = future.result()
                except KilledWorker as exc:
                    if len(positions) > 1:
                        for position in positions:
                            pending.add(submit([position]))
                        continue
                    outcomes = [_lost(items[positions[0]], f"the Dask worker processing it died ({exc})")]
                except Exception as exc:  # the cluster failed the task itself, not one file's error
                    outcomes = [_lost(items[p], f"{type(exc).__name__}: {exc}") for p in positions]
                for position, outcome in zip(positions, outcomes, strict=True):
                    results[position] = outcome
                done(len(positions))
                while reported < len(items) and results[reported] is not None:
                    yield results[reported]
                    results[reported] = _REPORTED
                    reported += 1
        except Exception as exc:  # the scheduler went away mid-run
            failure = f"lost the Dask scheduler: {type(exc).__name__}: {exc}"
        finally:
            for future in tasks:
                future.cancel()
        for position in range(reported, len(items)):
            yield results[position] or _lost(items[position], failure)


_REPORTED = object()  # a reported outcome's slot, so that results do not pile up in memory


def _lost(item: str, why: str) -> Outcome:
    from compactcli.report import FAILED, Outcome

    return Outcome(item, FAILED, errors.IO_ERR, f"{item}: not processed: {why}")
