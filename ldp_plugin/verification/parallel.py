"""Independent verification jobs on a pool of worker processes, results in job order.

``ldp verify`` verifies each registered name, each wrapper, the command line's workflows, each
system layer and each seeded bug on its own: a job's seed and its share of the false-alarm rate are
fixed by its place in the run before any job starts, and a job reads no state another job writes
(each system layer runs in its own temporary directory). So a job's result does not depend on which
process runs it or when, and :func:`run_jobs` returns the same rows, in the same order, on one
process or on several (only the secure source's draws — the joint and production layers — differ
from run to run, as they do on one process).

:func:`job_pool` opens the pool for a block: ``processes`` **spawned** workers (fresh interpreters:
forking a parent whose secure source, numba or Polars already run threads is unsafe), each started by
``initializer`` (the command's opt-in to OpenDP's features: a library never flips that switch for its
caller). Inside the block :func:`run_jobs` hands its jobs to the pool, the costliest first (a job's
``cost`` only orders the queue, so the last job to finish is a short one); outside a block, or with one
process, it runs them here, in order. Blocks nest: an inner :func:`job_pool` reuses the open pool.

Coverage: under ``ldp verify --coverage`` the measured interpreter runs with coverage.py's
``patch = subprocess`` (:mod:`.privacy_paths`), so every spawned worker starts under coverage too and
writes its own data file, which :func:`.privacy_paths.measure` combines. The workers must exit on
their own for their data to be saved: the pool is closed and joined, never terminated, unless a job
failed.
"""

from __future__ import annotations

import multiprocessing
import os
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

from ..progress import progress

__all__ = ["job_pool", "run_jobs", "default_processes", "MAX_PROCESSES"]

#: the most worker processes :func:`default_processes` asks for (the secure source and the numba
#: kernels already use threads inside a job; more processes than cores only add memory)
MAX_PROCESSES = 2

_POOL: Optional["_Pool"] = None


def default_processes() -> int:
    """The workers of a ``ldp verify`` run: the cores this process may use, at most
    :data:`MAX_PROCESSES`; ``LDP_PLUGIN_VERIFY_PROCESSES`` overrides (1: no pool)."""
    env = os.environ.get("LDP_PLUGIN_VERIFY_PROCESSES")
    if env is not None and env.strip().isdigit() and int(env) >= 1:
        return int(env)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_PROCESSES, cores))


class _Pool:
    """The open block's pool, started by the first :func:`run_jobs` with more than one job (a
    block that runs one job, or none, starts no worker)."""

    def __init__(self, processes: int, initializer: Optional[Callable[[], None]]) -> None:
        self.processes, self.initializer, self.pool = processes, initializer, None

    def get(self) -> Any:
        if self.pool is None:
            self.pool = multiprocessing.get_context("spawn").Pool(self.processes, initializer=self.initializer)
        return self.pool

    def close(self, ok: bool) -> None:
        if self.pool is None:
            return
        if ok:
            self.pool.close()  # the workers exit on their own (and save their coverage data)
        else:
            self.pool.terminate()
        self.pool.join()


@contextmanager
def job_pool(processes: int, *, initializer: Optional[Callable[[], None]] = None) -> Iterator[None]:
    """A pool of ``processes`` spawned workers for the block (module docstring), started when a
    :func:`run_jobs` first has two jobs or more; one process, or a pool already open: nothing to open."""
    global _POOL
    if _POOL is not None or processes <= 1:
        yield
        return
    pool = _POOL = _Pool(processes, initializer)
    ok = False
    try:
        yield
        ok = True
    finally:
        _POOL = None
        pool.close(ok)


def _call(job: Callable[[], Any]) -> Any:
    return job()


def run_jobs(jobs: Sequence[Callable[[], Any]], *, costs: Optional[Sequence[float]] = None, desc: str = "") -> list:
    """``[job() for job in jobs]``, on the open :func:`job_pool` if there is one (each job must then
    be picklable: a module-level function or a :func:`functools.partial` of one, with picklable
    arguments and result). ``costs``: each job's expected cost, to start the costliest first;
    ``desc``: a progress bar's label (:mod:`ldp_plugin.progress`: on a terminal, when enabled)."""
    jobs = list(jobs)
    pool = _POOL
    if pool is None or len(jobs) <= 1:
        return [job() for job in progress(jobs, total=len(jobs), desc=desc, unit="job")]
    order = sorted(range(len(jobs)), key=lambda i: -(costs[i] if costs is not None else 0.0))
    workers = pool.get()
    pending = {i: workers.apply_async(_call, (jobs[i],)) for i in order}
    return [pending[i].get() for i in progress(range(len(jobs)), total=len(jobs), desc=desc, unit="job")]
