"""The production-path layer: the real client on the **secure default source**, on the
paths production batches take, with a record of which paths actually ran.

Every other statistical layer draws from a seeded stream in small batches, so three paths that
users run were never looked at: the AES-256-CTR expansion of the secure source (requests of at
least :data:`~ldp_plugin.sampling.cipher.CIPHER_MIN` = 64 KiB), a request split across worker
threads (the secure source's parallel fill of requests of at least 1 MiB, or the segment runner's
workers drawing their own blocks), and the compiled (numba) batch kernels beside their numpy
twins. :func:`production_layer` runs one mixed batch (user ``i`` holds input ``i mod m`` for the
``m`` verification inputs) through the client's verification entry point with
``SecureRandomSource()`` once per kernel backend (``LDP_PLUGIN_KERNELS=numpy`` and ``=numba``, set
for the duration of the call), with :class:`~ldp_plugin.sampling.trace.PathTrace` recording what
ran:

* **requested paths**: the AES expansion when the secure source's backend is AES-256-CTR (the
  ``cryptography`` package is installed and ``LDP_PLUGIN_RANDOM`` allows it), a worker split when
  the machine has at least two cores (full mode only: a packed-bit client needs batches of
  ``2**22`` users to span two segments), and the backend under test for every batch kernel the client
  calls (a client that calls none is reported as such). The batch grows (×4, up to ``n_max`` rows:
``2**22``, ``2**21`` in quick mode)
  until every requested path ran; **a requested path that did not run fails the layer**.
* **goodness of fit per input** of each batch against the declared channel (χ², bins with expected
  count below 5 pooled, level ``α / (m · backends)``): a client that is exact on the seeded
  source but not on the AES path or on one backend fails here.

Without numba installed (the ``fast`` extra) only the numpy backend can be requested; the report's
``backends`` then lists ``numpy`` alone, so a run that did not exercise the compiled kernels says so.

What it cannot see: anything that needs two batches or two processes (the joint layer's
cross-batch, cross-request and forked-child checks), and a defect whose effect is below the χ²
test's power at this batch size (about ``2/√(n/m)`` relative on a bin).
"""

from __future__ import annotations

import importlib.util
import os
from contextlib import contextmanager
from typing import Any, Iterator, Optional

import numpy as np

from ..sampling import SecureRandomSource
from ..sampling.cipher import random_backend
from ..sampling.trace import PathTrace
from .layers import _pooled_chisquare
from .channels import channel_floats

__all__ = ["production_layer", "production_outputs", "kernel_env", "env_value", "numba_available"]


def numba_available() -> bool:
    """Whether the numba backend can be requested (the ``fast`` extra is installed)."""
    return importlib.util.find_spec("numba") is not None


@contextmanager
def env_value(var: str, value: str) -> Iterator[None]:
    """``var=value`` for the duration of the block (restored after; removed if it was unset)."""
    old = os.environ.get(var)
    os.environ[var] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old


def kernel_env(backend: str) -> Any:
    """``LDP_PLUGIN_KERNELS=backend`` for the duration of the block (restored after)."""
    return env_value("LDP_PLUGIN_KERNELS", backend)


def production_outputs(mech: Any, codes: np.ndarray, source: Any) -> np.ndarray:
    """The client's outputs (channel column indices) for a batch of verification input codes:
    the same entry point as ``sample_verification_outputs``, on a mixed batch."""
    return np.asarray(mech.output_index(mech._verification_randomize(codes, source)), dtype=np.int64)


def _paths(counts: dict) -> dict:
    return {
        "aes_bytes": int(counts.get("aes-256-ctr", 0)),
        "os_bytes": int(counts.get("os.urandom", 0)),
        "threaded_requests": int(counts.get("threaded-request", 0)),
        "worker_segment_draws": int(counts.get("worker-draws", 0)),
        "segments": int(counts.get("segments", 0)),
        "numba_kernel_calls": int(counts.get("numba", 0)),
        "numpy_kernel_calls": int(counts.get("numpy", 0)),
    }


def production_layer(
    mech: Any,
    *,
    quick: bool = False,
    alpha: float = 1e-6,
    n: Optional[int] = None,
    n_max: Optional[int] = None,
    backends: Optional[tuple] = None,
) -> dict:
    """Run the real client on the secure source on both kernel backends (see the module
    docstring); fail if a requested path did not run or a batch does not fit the channel."""
    P = channel_floats(mech)
    m = mech.verification_input_count()
    n0 = n or (1 << 15 if quick else 1 << 16)
    n_max = n_max or (1 << 21 if quick else 1 << 22)
    backends = backends or (("numpy", "numba") if numba_available() else ("numpy",))
    aes_expected = random_backend() == "aes-256-ctr"
    want_workers = (os.cpu_count() or 1) >= 2 and not quick
    level = alpha / (m * len(backends))
    runs, missing, worst = [], [], 1.0
    for backend in backends:
        size = max(n0, m)
        while True:
            codes = np.arange(size, dtype=np.int64) % m
            with kernel_env(backend), PathTrace() as trace:
                out = production_outputs(mech, codes, SecureRandomSource())
            paths = _paths(trace.counts)
            workers = paths["threaded_requests"] + paths["worker_segment_draws"] > 0
            random_ok = paths["aes_bytes"] > 0 or not aes_expected
            if (workers or not want_workers) and random_ok or size >= n_max:
                break
            size = min(4 * size, n_max)
        p_min = 1.0
        for x in range(m):
            counts = np.bincount(out[codes == x], minlength=P.shape[1])
            p = 0.0 if counts.size > P.shape[1] else _pooled_chisquare(counts, P[x])
            p_min = min(p_min, p)
        worst = min(worst, p_min)
        kernels_used = paths["numba_kernel_calls"] + paths["numpy_kernel_calls"] > 0
        requested = (["aes-256-ctr"] if aes_expected else ["os.urandom"]) + (["workers"] if want_workers else [])
        requested += [backend] if kernels_used else []
        ran = {
            "aes-256-ctr": paths["aes_bytes"] > 0,
            "os.urandom": paths["os_bytes"] > 0 and not aes_expected,
            "workers": workers,
            "numba": paths["numba_kernel_calls"] > 0 and paths["numpy_kernel_calls"] == 0,
            "numpy": paths["numpy_kernel_calls"] > 0 and paths["numba_kernel_calls"] == 0,
        }
        not_run = [r for r in requested if not ran[r]]
        missing += [f"{backend}:{r}" for r in not_run]
        runs.append({
            "kernels": backend, "rows": size, "random": "aes-256-ctr" if paths["aes_bytes"] else "os.urandom",
            "kernels_used": kernels_used, "requested": requested, "ran": sorted(k for k, v in ran.items() if v), "not_run": not_run, "min_p_value": p_min, **paths,
        })
    return {
        "layer": "production path",
        "source": "SecureRandomSource",
        "random_backend": random_backend(),
        "backends": list(backends),
        "runs": runs,
        "paths_ran": sorted(set().union(*(r["ran"] for r in runs))),
        "requested_not_run": missing,
        "min_p_value": worst,
        "passed": bool(not missing and worst > level),
    }
