"""Local hashing: OLH (optimized local hashing) and BLH (binary local hashing).

(Wang, Blocki, Li, Jha, *Locally differentially private protocols for frequency estimation*,
USENIX Security 2017, §4.4.) Each user draws a fresh uniform 64-bit seed ``s``, hashes the item
with the seeded hash of :mod:`ldp_plugin.hashing` into ``[0, g)`` and applies k-RR with ``g``
outputs to the hashed value. Report = ``(s, y)``.

* Privacy: given the seed, the report is k-RR over ``g`` values of a function of the input, so
  ``P(s, y | x) / P(s, y | x') <= p/q_g``, the realized k-RR ratio (checked ``<= e^ε`` exactly),
  whatever the hash. The seed is data-independent.
* Support: report ``(s, y)`` supports item ``v`` iff ``h_s(v) = y``. ``p* = e^ε/(e^ε + g − 1)``
  (the realized k-RR keep probability); ``q* = 1/g`` in expectation over the seed (exact for a
  random hash; the multiply-add-shift family is within ``O(g/2**32)``). The variance is the
  shared pure-oracle formula; with ``g = e^ε + 1`` it is ``≈ 4e^ε/(n(e^ε − 1)²)`` per item.
* ``g="auto"`` (OLH) is ``round(e^ε + 1)``; ``g=2`` is BLH.
* Report: an ``(n, 2)`` ``uint64`` array, column 0 the seed, column 1 the hashed value
  (16 bytes per report; 64 + ceil(log2 g) bits of information).
* Server: ``O(n·d)`` support checks, vectorized: per (report, item) three 64-bit word operations
  (``(a_s·key_v + b'_s) mod 2**64 < w_s``, see :func:`ldp_plugin.hashing.hash_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Optional, Union

import numpy as np

from ..sampling import as_source
from .protocol import MaxGainAttack, SupportTestable
from .reports import ReportField
from .mixins import SeededReports
from .._errors import LDPInputError, LDPParameterError
from ..sampling.aggregate_kernels import hashed_support
from ..hashing import hash_interval, item_keys, keys_of_items, mix64, seed_multipliers, seeded_hash
from .channel import Channel
from ._base import FrequencyOracle
from .randomized_response import KRR

__all__ = ["OLH", "olh_default_g"]

# users per server chunk: chunk × d words stay in cache
_CHECKS_PER_CHUNK = 1 << 16
# seeds used to enumerate the seed-conditioned channel on small instances
VERIFICATION_SEEDS = tuple(int(s) for s in mix64(np.arange(1, 5, dtype=np.uint64)))


def olh_default_g(epsilon: float) -> int:
    """OLH's hash range ``round(e^ε + 1)`` (at least 2, at most ``2**31``, k-RR's largest domain)."""
    if epsilon > 22:
        return 1 << 31
    return int(min(1 << 31, max(2, math.floor(math.exp(epsilon) + 1.5))))


@dataclass(frozen=True, kw_only=True)
class OLH(SeededReports, FrequencyOracle):
    """Optimized local hashing over ``d`` categories, ``epsilon``-LDP per user.

    Privacy: ``max_divergence``, ``ε`` per user; conditional on the (data-independent) seed the
    report is k-RR over ``g`` hashed values, whose realized ratio is checked ``<= e^ε`` exactly.
    Citation: Wang et al. 2017 §4.4 (OLH), the estimator of Kairouz, Bonawitz & Ramage (ICML 2016) eq. 11 with ``q* = 1/g``.
    Runtime: client O(1) per user; server O(n·d) support checks (vectorized).

    Proof: docs/proofs/local-hashing.md

    >>> from ldp_plugin import OLH
    >>> m = OLH(epsilon=2.0, d=100)
    >>> m.g
    8
    >>> m.randomize([5, 6, 7], rng=0).shape
    (3, 2)
    """

    capabilities = FrequencyOracle.capabilities | {MaxGainAttack, SupportTestable}

    name = "olh"
    client_cost, server_cost = "O(1)", "O(n·d)"

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """OLH (``g = round(e^ε + 1)``) and BLH (``g = 2``)."""
        return ({"g": "auto"}, {"g": 2})

    q_star_over_hash: ClassVar[bool] = True
    g: Union[int, str, None] = "auto"
    _krr: KRR = field(init=False, repr=False, compare=False)
    _keys_cache: Optional[np.ndarray] = field(init=False, repr=False, compare=False, default=None)

    def _validate_extra(self) -> None:
        g = self.g
        if g is None or g == "auto":
            g = olh_default_g(self.epsilon)
        elif isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 2 <= int(g) <= 1 << 31:
            raise LDPParameterError(f"g must be 'auto' or an integer in [2, 2**31] (got {g!r})")
        object.__setattr__(self, "g", int(g))
        if self.categories is not None:  # the labels are hashed: checked now, not at the first report
            self.item_keys()

    def _realize(self):
        try:
            krr = KRR(epsilon=self.epsilon, d=self.g)
        except LDPParameterError:
            raise LDPParameterError(
                f"olh: epsilon={self.epsilon} with hash range g={self.g} cannot be realized at 64-bit precision; "
                "use a smaller epsilon (OLH's g = e^epsilon + 1 is capped at 2**31)"
            ) from None
        object.__setattr__(self, "_krr", krr)
        return krr.p_star_exact, Fraction(1, self.g), krr.realized_ratio

    def _extra_params(self) -> dict:
        return {"g": self.g}

    # -- item keys -------------------------------------------------------------------------------
    def item_keys(self) -> np.ndarray:
        """64-bit keys of the domain's items (labels if there are categories, else codes)."""
        if self._keys_cache is None:
            keys = keys_of_items(self.categories if self.categories is not None else range(self.d))
            keys.setflags(write=False)
            object.__setattr__(self, "_keys_cache", keys)
        return self._keys_cache

    def _keys_of_codes(self, codes: np.ndarray) -> np.ndarray:
        if self.categories is None:
            return item_keys(codes)
        return self.item_keys()[codes]

    # -- client ----------------------------------------------------------------------------------
    def _randomize_with_seeds(self, codes: np.ndarray, seeds: np.ndarray, source) -> np.ndarray:
        hashed = seeded_hash(self._keys_of_codes(codes), seeds, self.g)
        y = self._krr._randomize_codes(hashed, source)
        out = np.empty((codes.size, 2), dtype=np.uint64)
        out[:, 0] = seeds
        out[:, 1] = y
        return out

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        return self._randomize_with_seeds(codes, source.words(codes.size), source)

    def _verification_randomize(self, codes: np.ndarray, source) -> np.ndarray:
        """The same client with the seed drawn uniformly from :data:`VERIFICATION_SEEDS`."""
        idx = source.uniform_int(len(VERIFICATION_SEEDS), codes.size)
        return self._randomize_with_seeds(codes, np.asarray(VERIFICATION_SEEDS, dtype=np.uint64)[idx], source)

    def _report_of_one(self, reports: np.ndarray):
        return (int(reports[0, 0]), int(reports[0, 1]))

    # -- server ----------------------------------------------------------------------------------
    def report_fields(self) -> tuple:
        return (ReportField("seed", "uint64"), ReportField("report", "uint32", bound=self.g))

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype != np.uint64:
            raise LDPInputError("olh reports must be an (n, 2) uint64 array of (seed, hashed value)")
        if arr.size and int(arr[:, 1].max()) >= self.g:
            raise LDPInputError(f"olh reports must have hashed values in [0, {self.g})")
        return arr

    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        return olh_support_counts(reports[:, 0], reports[:, 1], self.g, self.item_keys())

    # -- poisoning: the report space seen by an attacker and by a per-report test ----------------
    def support_law(self) -> tuple[Fraction, Fraction]:
        """``(p*, q*) = (p, 1/g)``: the own item is supported with the k-RR keep probability; another
        item ``v`` iff ``h_s(v) = y`` — with probability ``1/g`` and independently across items for a
        random hash over the uniform seed (the model OLH's own estimator assumes, ``q* = 1/g``)."""
        return self.p_star_exact, self.q_star_exact

    def support_matrix(self, reports: Any, items: Any) -> np.ndarray:
        """``(n, len(items))`` bool: whether each report supports each item (``h_s(v) = y``)."""
        r = self.validate_reports(reports)
        it = np.asarray(items, dtype=np.int64).ravel()
        keys = self.item_keys()[it]
        return seeded_hash(keys[None, :], r[:, :1], self.g) == r[:, 1:2].astype(np.int64)

    def support_sizes(self, reports: Any) -> np.ndarray:
        """Number of the ``d`` items each report supports (``int64``; O(n·d) hash checks, in chunks)."""
        r = self.validate_reports(reports)
        out = np.zeros(r.shape[0], dtype=np.int64)
        rows = max(1, _CHECKS_PER_CHUNK // int(self.d))
        keys = self.item_keys()[None, :]
        for a in range(0, r.shape[0], rows):
            blk = r[a : a + rows]
            out[a : a + rows] = (seeded_hash(keys, blk[:, :1], self.g) == blk[:, 1:2].astype(np.int64)).sum(axis=1)
        return out

    def max_gain_reports(self, targets: Any, m: int, *, rng: Any = None, tries: int = 1000) -> np.ndarray:
        """``m`` fake reports of the maximal-gain attack for OLH (Cao, Jia, Gong, USENIX Security
        2021): each fake draws ``tries`` seeds, keeps the one under which the most targets share
        a hashed value, and reports that value (one target: any seed and the target's hash)."""
        t = np.unique(np.asarray(targets, dtype=np.int64).ravel())
        m, g = int(m), int(self.g)
        src = as_source(rng)
        keys = self.item_keys()[t]
        out = np.empty((m, 2), dtype=np.uint64)
        if t.size == 1:
            seeds = src.words(m)
            out[:, 0] = seeds
            out[:, 1] = seeded_hash(np.full(m, keys[0], dtype=np.uint64), seeds, g).astype(np.uint64)
            return out
        tries = max(1, int(tries))
        step = max(1, (1 << 21) // (tries * t.size * t.size))
        for a in range(0, m, step):
            b = min(m, a + step)
            seeds = src.words((b - a) * tries).reshape(b - a, tries)
            h = seeded_hash(keys[None, None, :], seeds[:, :, None], g)  # (fakes, tries, r)
            same = (h[..., :, None] == h[..., None, :]).sum(axis=3)  # how many targets share each one's value
            j = same.argmax(axis=2)
            best_v = np.take_along_axis(h, j[..., None], axis=2)[..., 0]
            best_n = same.max(axis=2)
            pick = best_n.argmax(axis=1)
            rows = np.arange(b - a)
            out[a:b, 0] = seeds[rows, pick]
            out[a:b, 1] = best_v[rows, pick].astype(np.uint64)
        return out

    # -- channel ---------------------------------------------------------------------------------
    def output_alphabet_size(self) -> int:
        return (1 << 64) * self.g

    def channel(self) -> Channel:
        """The exact channel *conditional on the seed* being one of :data:`VERIFICATION_SEEDS`
        (uniformly): outputs ``(seed index, y)``. Its worst-case ratio equals the mechanism's, for
        every seed (the hash only relabels k-RR's inputs)."""
        if len(VERIFICATION_SEEDS) * self.g > self.channel_max_outputs:
            raise LDPParameterError(f"channel enumeration is limited to {self.channel_max_outputs} outputs (olh has 4·g)")
        return self._enumerate_channel()

    def _enumerate_channel(self) -> Channel:
        p, q = self._krr.p_star_exact, self._krr.q_star_exact
        S = len(VERIFICATION_SEEDS)
        keys = self.item_keys()
        outputs, rows = [], [[] for _ in range(self.d)]
        hashed = [seeded_hash(keys, np.uint64(s), self.g) for s in VERIFICATION_SEEDS]
        for si in range(S):
            for y in range(self.g):
                outputs.append((si, y))
                for x in range(self.d):
                    rows[x].append((p if hashed[si][x] == y else q) / S)
        return Channel(outputs=tuple(outputs), matrix=tuple(tuple(r) for r in rows))

    def supports(self, output: tuple, item: int) -> bool:
        si, y = output
        return int(seeded_hash(self.item_keys()[item : item + 1], np.uint64(VERIFICATION_SEEDS[si]), self.g)[0]) == y

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        seeds = np.asarray(VERIFICATION_SEEDS, dtype=np.uint64)
        si = np.searchsorted(np.sort(seeds), reports[:, 0])
        order = np.argsort(seeds)
        if not (np.sort(seeds)[np.minimum(si, seeds.size - 1)] == reports[:, 0]).all():
            raise LDPInputError("output_index needs reports drawn with the verification seeds")
        return order[si].astype(np.int64) * self.g + reports[:, 1].astype(np.int64)


def olh_support_counts(seeds: np.ndarray, y: np.ndarray, g: int, keys: np.ndarray) -> np.ndarray:
    """``counts[v] = #{reports (s, y): h_s(key_v) = y}`` — vectorized over reports × items.

    Per (report, item): ``z = a_s·key_v + b'_s`` (mod 2**64) and ``z < w_s``, where
    ``b'_s = b_s − lo_y`` shifts the hash interval of ``y`` to start at 0.
    """
    d = keys.size
    counts = np.zeros(d, dtype=np.int64)
    if seeds.size == 0:
        return counts
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    if seeds.size * d >= _CHECKS_PER_CHUNK:  # the compiled kernel when it runs (the same counts)
        a, b = seed_multipliers(seeds)
        lo, width = hash_interval(y, g)
        fast = hashed_support(a, b - lo, width, keys)
        if fast is not None:
            return fast
    rows = max(1, _CHECKS_PER_CHUNK // d)
    z = np.empty((rows, d), dtype=np.uint64)
    hit = np.empty((rows, d), dtype=np.bool_)
    for start in range(0, seeds.size, rows):
        s = seeds[start : start + rows]
        m = s.size
        a, b = seed_multipliers(s)
        lo, width = hash_interval(y[start : start + rows], g)
        b -= lo
        zz, hh = z[:m], hit[:m]
        np.multiply(a[:, None], keys[None, :], out=zz)
        zz += b[:, None]
        np.less(zz, width[:, None], out=hh)
        counts += np.count_nonzero(hh, axis=0)
    return counts
