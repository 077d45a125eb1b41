"""The sampling layer: exact, vectorized randomness from uniform bits and integer thresholds.

Every random decision a mechanism makes goes through this module, so every realized probability
is an exact rational number that the mechanism can check at construction:

* :meth:`RandomSource.bernoulli` draws events of probability exactly ``T / 2**64`` for an integer
  threshold ``T``: a uniform 64-bit word ``W`` is compared with ``T`` most-significant digits
  first, drawing further random digits only where the prefix ties (about 0.56 random bytes per
  event instead of 8);
* :meth:`RandomSource.bernoulli_packed` draws whole bit matrices of such events by
  geometric-run decoding (``W < T`` is decided at the first bit where ``W`` and ``T`` differ,
  a geometric position: 2 random bits per event on average), one table step per random byte;
* :meth:`RandomSource.uniform_int` draws integers exactly uniform on ``[0, r)`` by Lemire's
  multiply-and-reject method on 16- or 32-bit words (no modulo bias);
* :meth:`RandomSource.inverse_cdf` draws an output of a finite channel by searching integer
  cumulative boundaries with one uniform 64-bit word (exact: interval widths over ``2**64``);
* :meth:`RandomSource.sorted_subsets` draws uniform ``k``-subsets with or without a given item
  (Floyd's algorithm on exact Lemire draws, O(k) per row);
* :meth:`RandomSource.partial_shuffle_prefix` draws uniform ``s``-subsets without replacement of
  ``[0, N)`` in random order (partial Fisher–Yates, exactly uniform).

The two batch samplers have compiled kernels (numba, the ``fast`` extra) and numpy twins that
turn the same random bytes into the same output (:mod:`ldp_plugin.sampling.kernels`); work is cut into
fixed segments that run on all cores, and a seeded stream is consumed in the same order
whatever the number of cores or the backend.

Randomness comes from one injectable source: by default the operating system's CSPRNG
(``os.urandom``). A seeded PCG64-DXSM generator is used only when the caller passes a seed,
and is labelled ``secure=False`` (for reproducible simulations and tests, never for releases).
The global ``random``/``numpy.random`` state is never touched.
"""

from .bernoulli import _RunSegment, _bernoulli_runs, _block_bytes, run_table
from .runner import _run_segments, _thread_pool
from .source import RandomSource, RNGLike, SecureRandomSource, SeededRandomSource, as_source, chunk_source
from .subsets import _mul_hi_lo

__all__ = ["RandomSource", "SecureRandomSource", "SeededRandomSource", "as_source", "chunk_source", "RNGLike"]
