"""Range queries with the **Haar wavelet**: HaarHRR (Cormode, Kulkarni, Srivastava, *Answering
Range Queries Under Local Differential Privacy*, VLDB 2019, §5 "Wavelet approach", HRR §3.3).

``[lower, upper]`` is cut into ``B = 2^h`` leaves. The (unnormalized) Haar coefficient of a
binary-tree node at depth ``ℓ − 1`` is ``D_ℓ[a] = f(left child) − f(right child)``; a user's own
coefficient vector at level ``ℓ`` (``m_ℓ = 2^{ℓ−1}`` coefficients) has one nonzero entry,
``s = +1`` (left) or ``−1`` (right), at the node ``a`` above its leaf. Client, one report per user:
a level ``ℓ`` drawn uniformly and a Hadamard row ``j`` uniform in ``[0, m_ℓ)`` (exact uniform
integers, independent of the data), and the bit ``s·H[j, a]`` (``H[j, a] = (−1)^{popcount(j & a)}``)
kept with ``p = e^ε/(e^ε + 1)`` (an integer threshold ``T``) or flipped — the report is
``(ℓ, j, bit)``.

**Guarantee**: ε-LDP per user: for every report ``P(y|x) = (1/h)(1/m_ℓ)·(p or 1 − p)``, so
``max_{x,x',y} P(y|x)/P(y|x') = T/(2^64 − T) <= e^ε`` (``max_divergence``, checked exactly);
neighbouring relation: one user's number replaced by any other in ``[lower, upper]``
(``discrete_distance``).

**Estimation** (post-processing): per level, ``D̂_ℓ[a] = (1/(n_ℓ(2p − 1)))·Σ_u r_u H[j_u, a]``
(one fast Walsh–Hadamard transform of the ±1 sums per row ``j``) is unbiased for the level's
users' coefficients; its fixed-data variance is exactly ``(1/(2p − 1)² − f_ℓ(a))/n_ℓ`` and the
coefficients are uncorrelated (``Σ_j H[j,a]H[j,a'] = 0``). Node masses follow top-down from the
known total, ``left = (mass + D)/2``, ``right = (mass − D)/2``, so a prefix (CDF) value touches
one coefficient per level and every range is a linear functional with an exact standard error
(computed by the adjoint of the reconstruction), plus the users' split over the levels:
``Σ_ℓ (Σ w² f − (Σ w D)²)/n_ℓ`` for an i.i.d. population, minus ``Var(a[leaf])/n`` against the
``n`` users themselves (``target="sample"``; as in :mod:`.hierarchy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .._errors import LDPParameterError
from ..exact import TWO64, exp_lower_bound, ratio_within_exp
from .channel import Channel, floor_threshold
from .hadamard import fast_walsh_hadamard, parity
from .linear_estimate import LinearLeafEstimate
from .leaf_client import GridTree
from ..estimation import check_estimate_request
from .mixins import MergeableCounts
from .reports import ReportField, checked_reports

__all__ = ["HaarHRR", "HaarEstimate", "HaarAccumulator"]


@dataclass(frozen=True, kw_only=True)
class HaarHRR(GridTree):
    """The Haar wavelet with Hadamard randomized response per level (module docstring).

    Proof: docs/proofs/numeric.md

    >>> import ldp_plugin as ldp, numpy as np
    >>> m = ldp.HaarHRR(epsilon=2.0, buckets=64)
    >>> est = m.estimate(m.randomize(np.random.default_rng(0).uniform(0, 1, 20000), rng=1))
    >>> r = est.range_fraction(0.25, 0.5)
    >>> abs(r.fraction - 0.25) < 4 * r.std_error
    True
    """

    name: ClassVar[str] = "haar-hrr"

    keep_threshold: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps, B = self._check_grid()
        object.__setattr__(self, "levels", B.bit_length() - 1)
        L = exp_lower_bound(eps)
        T = floor_threshold(L / (L + 1))
        if not 0 < T < TWO64:
            raise LDPParameterError(f"haar-hrr: epsilon={eps!r} gives a keep probability that rounds to 0 or 1 at 64 bits")
        ratio = Fraction(T, TWO64 - T)
        if not ratio_within_exp(ratio, eps):  # pragma: no cover - a floor threshold cannot exceed it
            raise LDPParameterError("haar-hrr: the realized likelihood ratio exceeds e^epsilon")
        object.__setattr__(self, "keep_threshold", int(T))
        object.__setattr__(self, "realized_ratio", ratio)

    @property
    def p(self) -> float:
        return self.keep_threshold / 2.0**64

    # -- client -----------------------------------------------------------------------------------
    def _node_and_sign(self, k: np.ndarray, level: np.ndarray) -> tuple:
        """The level-``ℓ`` coefficient index above leaf ``k`` and the sign (+1 left, −1 right)."""
        shift = self.levels - level  # the child's subtree holds 2^shift leaves
        a = k >> (shift + 1)
        right = (k >> shift) & 1
        return a, 1 - 2 * right

    def _randomize_codes(self, k: np.ndarray, source: Any) -> dict:
        n, h = k.size, self.levels
        level = source.uniform_int(h, n).astype(np.int64) + 1
        j = source.uniform_int_each(np.left_shift(1, level - 1))
        a, s = self._node_and_sign(k, level)
        true_bit = s * (1 - 2 * parity((j & a).astype(np.uint64)).astype(np.int64))  # s·H[j, a] in ±1
        keep = source.bernoulli(self.keep_threshold, n)
        bit = np.where(keep, true_bit, -true_bit) > 0
        return {"level": level.astype(np.uint8), "row": j.astype(np.uint32), "bit": bit}

    def report_fields(self) -> tuple:
        return (ReportField("level", "uint8", kind="int", bound=self.levels + 1),
                ReportField("row", "uint32", kind="int", bound=max(1, self.buckets // 2)),
                ReportField("bit", "bool", kind="bool"))

    def _row_problems(self, columns: dict) -> dict:
        """A level in ``[1, h]`` and a row below ``2^{ℓ−1}`` (``out_of_range``)."""
        lv = np.asarray(columns["level"]).astype(np.int64)
        row = np.asarray(columns["row"]).astype(np.int64)
        bad = (lv < 1) | (lv > self.levels)
        bad |= row >= np.left_shift(1, np.clip(lv, 1, self.levels) - 1)
        return {"out_of_range": bad}

    # -- verification -----------------------------------------------------------------------------
    def _offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([2 * (1 << (l - 1)) for l in range(1, self.levels + 1)])])

    def output_alphabet_size(self) -> int:
        return int(self._offsets()[-1])

    def channel(self) -> Channel:
        if self.buckets > 64:
            raise LDPParameterError("channel enumeration needs buckets <= 64")
        h = self.levels
        p = Fraction(self.keep_threshold, TWO64)
        rows = []
        for x in range(self.buckets):
            row = []
            for l in range(1, h + 1):
                m = 1 << (l - 1)
                a, s = self._node_and_sign(np.array([x]), np.array([l]))
                for j in range(m):
                    tb = int(s[0]) * (1 - 2 * (bin(j & int(a[0])).count("1") & 1))
                    for bit in (-1, 1):
                        row.append((p if bit == tb else 1 - p) / (h * m))
            rows.append(tuple(row))
        return Channel(tuple(range(len(rows[0]))), tuple(rows))

    def output_index(self, reports: Any) -> np.ndarray:
        lv = np.asarray(reports["level"]).astype(np.int64)
        return self._offsets()[lv - 1] + 2 * np.asarray(reports["row"]).astype(np.int64) + np.asarray(reports["bit"]).astype(np.int64)

    # -- server -----------------------------------------------------------------------------------
    def accumulator(self) -> "HaarAccumulator":
        return HaarAccumulator(self)

    def analytic_range_variance(self, values: Any, lo: float, hi: float) -> float:
        """The exact variance (``n_ℓ = n/h``) of the estimate of the fraction in ``[lo, hi)`` for
        the users holding ``values``."""
        k = self.encode(values)
        n, h = k.size, self.levels
        D, f = [], []
        for l in range(1, h + 1):
            a, s = self._node_and_sign(k, np.full(k.size, l))
            D.append(np.bincount(a, weights=s, minlength=1 << (l - 1)) / n)
            f.append(np.bincount(a, minlength=1 << (l - 1)) / n)
        est = HaarEstimate(self, D, [n / h] * h, n, 0.95, "sample", occupancy=f)
        return float(est._variance(est._weights(lo, hi)[:, None])[0])


class HaarAccumulator(MergeableCounts):
    """Per level and row: the sum of the ±1 bits and the reports; per level: the users."""

    _summed = ("sums", "rows", "per_level", "n")

    def __init__(self, mechanism: HaarHRR):
        self.mechanism = mechanism
        self.offsets = np.concatenate([[0], np.cumsum([1 << (l - 1) for l in range(1, mechanism.levels + 1)])])
        self.sums = np.zeros(int(self.offsets[-1]), dtype=np.int64)
        self.rows = np.zeros(int(self.offsets[-1]), dtype=np.int64)
        self.per_level = np.zeros(mechanism.levels, dtype=np.int64)
        self.n = 0

    def add(self, reports: Any) -> "HaarAccumulator":
        m = self.mechanism
        ok = checked_reports(m, reports)
        lv = np.asarray(ok["level"]).astype(np.int64)
        pos = self.offsets[lv - 1] + np.asarray(ok["row"]).astype(np.int64)
        sign = np.where(np.asarray(ok["bit"]), 1, -1)
        self.sums += np.bincount(pos, weights=sign, minlength=self.sums.size).astype(np.int64)
        self.rows += np.bincount(pos, minlength=self.rows.size)
        self.per_level += np.bincount(lv - 1, minlength=m.levels)
        self.n += int(lv.size)
        return self

    def estimate(self, *, confidence: float = 0.95, target: str = "sample") -> "HaarEstimate":
        m = self.mechanism
        check_estimate_request(self.n, confidence, target)
        if (self.per_level == 0).any():
            raise LDPParameterError(f"every level needs at least one report (levels without: {np.flatnonzero(self.per_level == 0) + 1})")
        c = 2 * m.p - 1
        D = []
        for l in range(m.levels):
            s = self.sums[self.offsets[l]:self.offsets[l + 1]]
            D.append(fast_walsh_hadamard(s) / (self.per_level[l] * c))  # Σ_u r_u H[j_u, a] for every a
        return HaarEstimate(m, D, [float(v) for v in self.per_level], self.n, confidence, target)


class HaarEstimate(LinearLeafEstimate):
    """Haar coefficients per level and the leaves reconstructed from the known total (module
    docstring); ranges, quantiles and histograms with exact standard errors."""

    def __init__(self, mech: HaarHRR, D: list, n_level: list, n: int, confidence: float, target: str, *, occupancy: Any = None):
        self.mechanism, self.D, self.n_level, self.n = mech, [np.asarray(d, dtype=np.float64) for d in D], n_level, n
        self.confidence, self.target = confidence, target
        self.leaves = self._reconstruct(self.D)
        if occupancy is None:  # each level's node shares, from the reconstructed masses (clipped)
            mass = np.maximum(self.leaves, 0.0)
            mass = mass / mass.sum() if mass.sum() > 0 else np.full(mass.size, 1.0 / mass.size)
            occupancy = [mass.reshape(1 << (l - 1), -1).sum(axis=1) for l in range(1, mech.levels + 1)]
        self._f = [np.asarray(o, dtype=np.float64) for o in occupancy]
        c = 2 * mech.p - 1
        self._var = [(1.0 / (c * c) - f) / nl for f, nl in zip(self._f, n_level)]

    def _reconstruct(self, D: list) -> np.ndarray:
        mass = np.ones(1)
        for d in D:
            mass = np.stack([(mass + d) / 2, (mass - d) / 2], axis=1).ravel()
        return mass

    def _adjoint(self, a: np.ndarray) -> list:
        g = a
        w = [None] * len(self.D)
        for l in range(len(self.D) - 1, -1, -1):
            gl, gr = g[0::2], g[1::2]
            w[l] = (gl - gr) / 2
            g = (gl + gr) / 2
        return w

    def _variance(self, a: np.ndarray) -> np.ndarray:
        w = self._adjoint(a)
        var = np.zeros(a.shape[1])
        for wl, vl, f, d, nl in zip(w, self._var, self._f, self.D, self.n_level):
            var += (wl * wl * vl[:, None]).sum(axis=0)
            var += np.maximum((wl * wl * f[:, None]).sum(axis=0) - ((wl * d[:, None]).sum(axis=0)) ** 2, 0.0) / nl
        return var - (self._query_spread(a) if self.target == "sample" else 0.0)
