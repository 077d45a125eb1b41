"""Fork safety of the sampling layer (issue 32, item 5): after the parent has used the sampling
thread pool, a forked child's large draws return, and two children do not share randomness.

Before the fix a child inherited the parent's ThreadPoolExecutor, whose threads do not exist after
fork(): the child's first request >= 1 MiB (split across the pool) or multi-segment batch waited
forever. Every child here runs under a timeout and is killed if it does not answer."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import time
import warnings

import numpy as np
import pytest

from ldp_plugin import OUE
from ldp_plugin.sampling import SecureRandomSource
from ldp_plugin.sampling import runner

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")

TIMEOUT = 60.0  # seconds; a draw takes well under one even on a loaded machine


def _large_draws() -> str:
    """A 2 MiB request of the secure source (split across the pool) and a multi-segment OUE batch
    (d = 1024, 40,000 users), on the secure default source; the digest of both."""
    raw = SecureRandomSource().random_bytes(2 << 20)
    reports = OUE(epsilon=1.0, d=1024).randomize(np.arange(40_000) % 1024)
    h = hashlib.sha256(raw.tobytes())
    h.update(np.ascontiguousarray(reports).tobytes())
    return h.hexdigest()


def _parent_uses_pool() -> str:
    digest = _large_draws()
    assert any(key[0] == os.getpid() for key in runner._POOLS), "the parent's draws must have used the thread pool"
    return digest


def _fork():
    with warnings.catch_warnings():  # Python >= 3.12 warns when a process with threads forks
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _bare_fork_child() -> tuple[int, int, str]:
    r, w = os.pipe()
    pid = _fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(r)
            os.write(w, _large_draws().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r, ""


def _wait_child(pid: int, r: int) -> str:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            out = os.read(r, 128).decode()
            os.close(r)
            assert os.waitstatus_to_exitcode(status) == 0
            return out
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    os.close(r)
    pytest.fail(f"a forked child's large draw did not return within {TIMEOUT:.0f} s (inherited thread pool)")


def test_bare_fork_after_a_large_draw_returns_and_children_differ():
    parent = _parent_uses_pool()
    pid1, r1, _ = _bare_fork_child()
    one = _wait_child(pid1, r1)
    pid2, r2, _ = _bare_fork_child()
    two = _wait_child(pid2, r2)
    assert len(one) == len(two) == 64
    assert len({parent, one, two}) == 3  # fresh OS entropy in every process: no shared randomness


def _mp_child(queue) -> None:
    queue.put(_large_draws())


def test_multiprocessing_fork_after_a_large_draw_returns_and_children_differ():
    parent = _parent_uses_pool()
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        procs = [ctx.Process(target=_mp_child, args=(queue,)) for _ in range(2)]
        for p in procs:
            p.start()
    try:
        outs = [queue.get(timeout=TIMEOUT) for _ in procs]
    except Exception:
        pytest.fail(f"a forked child's large draw did not return within {TIMEOUT:.0f} s (inherited thread pool)")
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
    assert all(p.exitcode == 0 for p in procs)
    assert len({parent, *outs}) == 3


def test_pools_are_per_process():
    """The pool registry is keyed by process id and emptied in a forked child (the hook)."""
    _parent_uses_pool()
    r, w = os.pipe()
    pid = _fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.write(w, str(len(runner._POOLS)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    assert _wait_child(pid, r) == "0"
