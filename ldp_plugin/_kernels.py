"""Optional compiled kernels (numba) for the sampling layer's hot loops.

Nothing here changes *what* is sampled: every kernel has a pure-numpy twin in
:mod:`ldp_plugin.sampling` that consumes the same random bytes and returns the same output bit for
bit (tests compare the two on the same streams). The kernels only make it faster. They are used
when numba is installed (``pip install "ldp-plugin[fast]"``) unless the environment variable
``LDP_PLUGIN_KERNELS`` says otherwise:

* ``auto`` (default): numba if importable, else numpy;
* ``numpy``: never import numba;
* ``numba``: require numba (an ImportError names the extra to install).
"""

from __future__ import annotations

import os
import warnings
from typing import Optional

import numpy as np

__all__ = ["kernel_backend", "run_decoder"]

_STATE: dict = {}


def kernel_backend() -> str:
    """``"numba"`` or ``"numpy"``: which implementation the sampling layer's kernels use now."""
    choice = os.environ.get("LDP_PLUGIN_KERNELS", "auto").strip().lower() or "auto"
    if choice not in ("auto", "numpy", "numba"):
        raise ValueError("LDP_PLUGIN_KERNELS must be one of auto, numpy, numba")
    if choice == "numpy":
        return "numpy"
    ok = _load() is not None
    if choice == "numba" and not ok:
        raise ImportError('LDP_PLUGIN_KERNELS=numba needs numba: pip install "ldp-plugin[fast]"')
    return "numba" if ok else "numpy"


def run_decoder():
    """The compiled geometric-run decoder (see :func:`ldp_plugin.sampling.run_table`), or None."""
    k = _load()
    return None if k is None else k["decode_runs"]


def _load() -> Optional[dict]:
    if "kernels" in _STATE:
        return _STATE["kernels"]
    try:
        import numba  # noqa: F401
    except Exception:  # not installed, or broken against this numpy: fall back to numpy
        _STATE["kernels"] = None
        return None
    with warnings.catch_warnings():  # an unwritable cache directory must not turn into an error
        warnings.simplefilter("ignore")
        _STATE["kernels"] = _compile()
    return _STATE["kernels"]


def _compile() -> dict:
    import numba as nb

    @nb.njit(
        nb.types.UniTuple(nb.int64, 5)(
            nb.types.Array(nb.uint8, 1, "C", readonly=True),
            nb.int64,
            nb.types.Array(nb.uint32, 1, "C", readonly=True),
            nb.uint8[::1], nb.int64, nb.int64, nb.int64, nb.int64, nb.int64
        ),
        nogil=True,
        cache=True,
    )
    def decode_runs(v, i, table, out, pos, acc, nacc, s, need):  # pragma: no cover - compiled
        # One table step per random byte: state s (zeros of the current run, capped at 64) and
        # byte v give the events completed in v (count and bits) and the next state. Output bits
        # are appended LSB-first to out; the loop stops once `need` events have been produced or
        # the block is used up. Returns (next byte, s, acc, nacc, pos) to resume on a new block.
        n = v.shape[0]
        produced = pos * 8 + nacc
        while i < n and produced < need:
            e = np.int64(table[s * 256 + np.int64(v[i])])
            i += 1
            c = (e >> 8) & 15
            acc |= (e & 255) << nacc
            nacc += c
            produced += c
            s = e >> 12
            out[pos] = np.uint8(acc & 255)
            f = nacc >> 3
            pos += f
            acc >>= f << 3
            nacc -= f << 3
        if produced >= need and nacc > 0 and pos < out.shape[0]:
            out[pos] = np.uint8(acc & 255)
        return i, s, acc, nacc, pos

    return {"decode_runs": decode_runs}
