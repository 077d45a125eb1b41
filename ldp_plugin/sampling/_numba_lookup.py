"""The numba kernels of the exact text lookup (:mod:`ldp_plugin.sampling.row_lookup`), at module
level so that numba's on-disk cache works. Imported only by that module's loader when the numba
backend is selected; ``LDP_PLUGIN_NUMBA_CACHE=0`` compiles in memory.

The kernel hashes a value (``Σ_j x_j·K_j mod 2**64`` over some of its words, top bits: vector
multiply-shift), probes an open-addressing table of the categories and accepts a slot only after
comparing every word of the value with the category's: a code is returned iff the value equals
that category, byte for byte. It has a numpy twin in :mod:`~ldp_plugin.sampling.row_lookup`
(tested against each other and a dictionary lookup)."""

import os

import numba as nb
import numpy as np

_CACHE = os.environ.get("LDP_PLUGIN_NUMBA_CACHE", "1") != "0"


@nb.njit(nogil=True, cache=_CACHE)
def lookup_rows(a, lo, hi, cols, keys, shift, slots, rows, codes, out):  # pragma: no cover - compiled
    # out[i] = codes[r] for the category row r equal to a[i] (i in [lo, hi)); the hash reads the
    # words cols only, the comparison every word. Returns the first i whose row is no category's
    # (out is then partly written and discarded), or -1.
    w = a.shape[1]
    c = cols.shape[0]
    mask = slots.shape[0] - 1
    for i in range(lo, hi):
        h = np.uint64(0)
        for t in range(c):
            h += np.uint64(a[i, cols[t]]) * keys[t]
        s = np.int64(h >> shift)
        r = slots[s]
        while r >= 0:
            diff = a[i, 0] ^ a[i, 0]  # zero in the words' own dtype; the loop has no branch
            for j in range(w):
                diff |= a[i, j] ^ rows[r, j]
            if diff == 0:
                break
            s = (s + 1) & mask
            r = slots[s]
        if r < 0:
            return i
        out[i] = codes[r]
    return -1


KERNELS = {"lookup_rows": lookup_rows}
