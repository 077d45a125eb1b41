"""The segment runner: fixed segments of work on all cores, a seeded stream consumed in the same
order whatever the number of cores (used by the Bernoulli engine and the subset sampler).

**Fork safety.** The worker threads of :func:`_thread_pool` do not survive ``fork()``: a child that
inherited a pool object would queue work for threads that do not exist and wait forever (a
forked child's first large draw never returned). The pools are therefore per process: an
``os.register_at_fork`` hook forgets them in the child, and the dictionary is also keyed by the
process id, so a child that forks by other means (or a platform without the hook) never reuses
its parent's pool. The kernel loader's lock (:mod:`ldp_plugin.sampling.kernels`) is reset the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

import os

from . import kernels
from .trace import note

if TYPE_CHECKING:  # pragma: no cover
    from .source import RandomSource

_POOLS: dict = {}


def _thread_pool(workers: int):
    """This process's pool of ``workers`` sampling threads (created on first use)."""
    from concurrent.futures import ThreadPoolExecutor

    key = (os.getpid(), workers)
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ldp-sampling")
    return pool


def _forget_pools_in_child() -> None:
    """After ``fork()``, in the child: the parent's pools have no threads here; drop them (never
    shut them down: their threads are not this process's)."""
    _POOLS.clear()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pools_in_child)


def _kernel(name: str, work=None, backend=None):
    k = kernels.select(name, work, backend)
    note("numba" if k is not None else "numpy")
    return k


#: segments drawn before decoding in parallel; a constant, so the output never depends on the
#: number of cores (a seeded stream is consumed in the same order everywhere)
_ROUND = 4


def _run_segments(source: "RandomSource", tasks: list) -> None:
    """Run segment tasks in rounds of ``_ROUND``: each task takes one first block of random bytes
    (``task.first_bytes``; ``task.first(block)``), then draws what else it needs in order
    (``task.settle(draw)``), then computes (``task.finish()``). A seeded stream is consumed in
    task order whatever the number of cores; a source with ``concurrent_draws`` (the OS CSPRNG:
    thread-safe, not reproducible) is drawn by each worker itself, so drawing and computing
    overlap on all cores."""
    workers = min(_ROUND, os.cpu_count() or 1)
    note("segments", len(tasks))
    for r in range(0, len(tasks), _ROUND):
        group = tasks[r : r + _ROUND]
        pool = _thread_pool(workers) if workers > 1 and len(group) > 1 else None
        if pool is not None and source.concurrent_draws:

            def whole(task):
                task.first(source._worker_bytes(task.first_bytes))
                task.settle(source._worker_bytes)
                task.finish()

            list(pool.map(whole, group))
            note("worker-draws", len(group))
            continue
        blocks = [source.random_bytes(task.first_bytes) for task in group]
        if pool is not None:
            list(pool.map(lambda tb: tb[0].first(tb[1]), zip(group, blocks)))
        else:
            for task, block in zip(group, blocks):
                task.first(block)
        for task in group:
            task.settle(source.random_bytes)
        if pool is not None:
            list(pool.map(lambda task: task.finish(), group))
        else:
            for task in group:
                task.finish()
