"""Range queries and quantiles on a fine grid: the **hierarchical histogram** with constrained
inference (Cormode, Kulkarni, Srivastava, *Answering Range Queries Under Local Differential
Privacy*, VLDB 2019, §4 "Hierarchical histograms", §4.4 consistency).

The declared ``[lower, upper]`` is cut into ``B = buckets`` leaves, grouped by a tree of fan-out
``b`` (``B = b^h``): level ``ℓ = 1..h`` has ``b^ℓ`` nodes (the root, level 0, is the known total).
**Users are split into levels data-independently**: each draws its level uniformly (an exact
uniform integer) and reports the node that holds its value at that level with OUE at the full ε
(Wang et al., USENIX Security 2017: ``p = 1/2``, ``q = 1/(e^ε + 1)``, integer thresholds). The
report is the level and that level's bits (``b^ℓ``; the other levels' fields are zero).

**Guarantee**: ε-LDP per user — the level is independent of the value and reported, and each
level's OUE is ε-LDP, so ``max_{x,x',y} P(y|x)/P(y|x') = max_ℓ`` (OUE ratio) ``<= e^ε``
(``max_divergence``); neighbouring relation: one user's number replaced by any other in
``[lower, upper]`` (``discrete_distance``).

**Fan-out** ("variance formula", VLDB 2019 §4.2): a range decomposes into at most ``2(b − 1)``
nodes per level, ``(b − 1)`` on average, each estimated from ``n/h`` users, so the variance of a
range is about ``(b − 1)·h²·V/n`` (``V`` the oracle's per-item variance); ``fanout="auto"``
picks the power of two ``b`` (with ``B`` a power of ``b``) minimizing ``(b − 1)·(log_b B)²`` —
``b = 4`` for ``B = 4096``.

**Constrained inference** (Hay, Rastogi, Miklau, Suciu, VLDB 2010, §4, the estimator the VLDB
2019 paper applies): all nodes have the same variance here (every level has ``n/h`` users and the
same oracle), so the least-squares consistent tree is two linear passes — bottom-up
``z_v = α_i x_v + β_i Σ_children z_u`` with ``α_i = (b^i − b^{i−1})/(b^i − 1)``,
``β_i = (b^{i−1} − 1)/(b^i − 1)`` (``i`` the height, leaves 1), then top-down
``x̄_v = z_v + (x̄_parent − Σ_siblings z_u)/b`` from the known root ``x̄_root = 1``.
Every range or CDF value is then a linear functional ``wᵀx`` of the raw node estimates; ``w`` is
computed by the adjoint of the two passes (``O(number of nodes)``), so its **standard error is
exact** under the estimator's variance model: OUE's independent bits (fixed data:
``[θ p(1−p) + (1−θ) q(1−q)]/(n_ℓ (p − q)²)`` per node), plus the users' split over the levels:
with ``z_ℓ(u) = w_ℓ[node_ℓ(u)]`` (``Σ_ℓ z_ℓ(u) = a[leaf(u)]``: the estimator is exact on one
user's consistent tree), ``Σ_ℓ Var(z_ℓ)/n_ℓ`` for an i.i.d. population (``target="population"``)
and ``Σ_ℓ Var(z_ℓ)/n_ℓ − Var(a[leaf])/n`` against the ``n`` users themselves
(``target="sample"``: a random partition's group means are negatively correlated).
Quantile intervals invert the pointwise CDF intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

import numpy as np

from .._errors import LDPParameterError
from .channel import Channel
from .linear_estimate import LinearLeafEstimate
from .leaf_client import GridTree
from ..estimation import check_estimate_request
from .mixins import MergeableCounts
from .reports import ReportField, checked_reports
from .unary import OUE, packed_column_counts

__all__ = ["HierarchicalHistogram", "HierarchyEstimate", "HierarchyAccumulator", "choose_fanout", "flat_range_variance"]


def _fanouts(buckets: int) -> list:
    h = buckets.bit_length() - 1
    return [1 << s for s in range(1, h + 1) if h % s == 0]


def choose_fanout(buckets: int) -> int:
    """The fan-out minimizing ``(b − 1)·(log_b B)²`` (module docstring)."""
    return min(_fanouts(buckets)[:-1], key=lambda b: ((b - 1) * (math.log(buckets, b)) ** 2, b))


def flat_range_variance(epsilon: float, n: int, width: int, theta: Optional[np.ndarray] = None) -> float:
    """Variance of a range of ``width`` buckets summed from a flat OUE histogram of ``n`` users
    (independent bits; ``theta``: the range's bucket frequencies, low-frequency if None)."""
    o = OUE(epsilon=epsilon, d=2)
    p, q = o.p_star, o.q_star
    th = np.zeros(width) if theta is None else np.asarray(theta, dtype=np.float64)
    return float(np.sum(th * p * (1 - p) + (1 - th) * q * (1 - q)) / (n * (p - q) ** 2))


@dataclass(frozen=True, kw_only=True)
class HierarchicalHistogram(GridTree):
    """Hierarchical histogram over ``buckets`` leaves with OUE per level (module docstring).

    Proof: docs/proofs/numeric.md

    >>> import ldp_plugin as ldp, numpy as np
    >>> hh = ldp.HierarchicalHistogram(epsilon=2.0, buckets=64)
    >>> hh.fanout, hh.levels
    (4, 3)
    >>> est = hh.estimate(hh.randomize(np.random.default_rng(0).uniform(0, 1, 20000), rng=1))
    >>> r = est.range_fraction(0.25, 0.5)
    >>> abs(r.fraction - 0.25) < 4 * r.std_error
    True
    """

    name: ClassVar[str] = "hierarchical-histogram"
    bucket_range: ClassVar[tuple] = (4, 1 << 16)

    fanout: Any = "auto"
    oracles: tuple = field(init=False, repr=False, compare=False)
    #: every level's OUE thresholds (read by the sampling-path layer)
    oracle_thresholds: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps, B = self._check_grid()
        b = choose_fanout(B) if self.fanout == "auto" else self.fanout
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or int(b) not in _fanouts(B) or int(b) == B:
            raise LDPParameterError(f"fanout must be 'auto' or a power of two b < buckets with buckets a power of b: {_fanouts(B)[:-1]} (got {self.fanout!r})")
        object.__setattr__(self, "fanout", int(b))
        h = round(math.log(B, int(b)))
        object.__setattr__(self, "levels", h)
        oracles = tuple(OUE(epsilon=eps, d=int(b) ** l) for l in range(1, h + 1))
        object.__setattr__(self, "oracles", oracles)
        object.__setattr__(self, "oracle_thresholds", tuple(t for o in oracles for t in (o.p_threshold, o.q_threshold)))
        object.__setattr__(self, "realized_ratio", max(o.realized_ratio for o in oracles))

    def spec(self) -> dict:
        return {"name": self.name, "params": {"epsilon": self.epsilon, "lower": self.lower, "upper": self.upper, "buckets": self.buckets,
                                              "fanout": self.fanout}}

    # -- client -----------------------------------------------------------------------------------
    def _randomize_codes(self, k: np.ndarray, source: Any) -> dict:
        n, h, b = k.size, self.levels, self.fanout
        level = source.uniform_int(h, n).astype(np.int64)  # data-independent: 0-based level
        out = {"level": (level + 1).astype(np.uint8)}
        for l, o in enumerate(self.oracles, start=1):
            rows = np.zeros((n, o.n_bytes), dtype=np.uint8)
            idx = np.flatnonzero(level == l - 1)
            if idx.size:
                rows[idx] = o._randomize_codes(k[idx] // b ** (h - l), source)
            out[f"level_{l}"] = rows
        return out

    def report_fields(self) -> tuple:
        return (ReportField("level", "uint8", kind="int", bound=self.levels + 1),) + tuple(
            ReportField(f"level_{l}", "uint8", width=o.n_bytes, kind="bits", bound=o.d) for l, o in enumerate(self.oracles, start=1))

    def _row_problems(self, columns: dict) -> dict:
        """A level in ``[1, h]`` and every other level's bits zero (``out_of_range``)."""
        lv = np.asarray(columns["level"]).astype(np.int64)
        bad = (lv < 1) | (lv > self.levels)
        for l in range(1, self.levels + 1):
            bad |= (lv != l) & np.asarray(columns[f"level_{l}"]).any(axis=1)
        return {"out_of_range": bad}

    # -- verification -----------------------------------------------------------------------------
    def output_alphabet_size(self) -> int:
        return sum(1 << o.d for o in self.oracles) if self.buckets < 64 else 1 << 62

    def channel(self) -> Channel:
        if self.buckets > 8:
            raise LDPParameterError("channel enumeration needs buckets <= 8")
        h, b = self.levels, self.fanout
        rows = []
        chans = [o.channel().matrix for o in self.oracles]
        for x in range(self.buckets):
            row = []
            for l, M in enumerate(chans, start=1):
                row.extend(p / h for p in M[x // b ** (h - l)])
            rows.append(tuple(row))
        return Channel(tuple(range(len(rows[0]))), tuple(rows))

    def output_index(self, reports: Any) -> np.ndarray:
        lv = np.asarray(reports["level"]).astype(np.int64)
        out = np.zeros(lv.size, dtype=np.int64)
        offset = 0
        for l, o in enumerate(self.oracles, start=1):
            sel = lv == l
            if sel.any():
                out[sel] = offset + o.output_index(np.asarray(reports[f"level_{l}"])[sel])
            offset += 1 << o.d
        return out

    # -- server -----------------------------------------------------------------------------------
    def accumulator(self) -> "HierarchyAccumulator":
        return HierarchyAccumulator(self)

    def node_variance(self, theta: np.ndarray, n_level: float) -> np.ndarray:
        """OUE's fixed-data variance of each node's raw estimate from ``n_level`` users."""
        p, q = self.oracles[0].p_star, self.oracles[0].q_star
        return (theta * p * (1 - p) + (1 - theta) * q * (1 - q)) / (n_level * (p - q) ** 2)

    def analytic_range_variance(self, values: Any, lo: float, hi: float) -> float:
        """The exact variance (the module's model, ``n_ℓ = n/h``) of the consistent estimate of
        the fraction in ``[lo, hi)`` for the users holding ``values``."""
        k = self.encode(values)
        n = k.size
        thetas = [np.bincount(k // self.fanout ** (self.levels - l), minlength=self.fanout ** l) / n for l in range(1, self.levels + 1)]
        est = HierarchyEstimate(self, thetas, [n / self.levels] * self.levels, n, 0.95, "sample")
        return est._variance(est._weights(lo, hi)[:, None])[0]


class HierarchyAccumulator(MergeableCounts):
    """Per-level support counts (concatenated) and users per level; mergeable."""

    _summed = ("flat", "per_level", "n")

    def __init__(self, mechanism: HierarchicalHistogram):
        self.mechanism = mechanism
        self.offsets = np.concatenate([[0], np.cumsum([o.d for o in mechanism.oracles])])
        self.flat = np.zeros(int(self.offsets[-1]), dtype=np.int64)
        self.per_level = np.zeros(mechanism.levels, dtype=np.int64)
        self.n = 0

    def add(self, reports: Any) -> "HierarchyAccumulator":
        m = self.mechanism
        ok = checked_reports(m, reports)
        lv = np.asarray(ok["level"]).astype(np.int64)
        for l, o in enumerate(m.oracles, start=1):
            sel = lv == l
            self.per_level[l - 1] += int(sel.sum())
            if sel.any():
                self.flat[self.offsets[l - 1]:self.offsets[l]] += packed_column_counts(np.ascontiguousarray(ok[f"level_{l}"][sel]), o.d)
        self.n += int(lv.size)
        return self

    def estimate(self, *, confidence: float = 0.95, target: str = "sample") -> "HierarchyEstimate":
        m = self.mechanism
        check_estimate_request(self.n, confidence, target)
        if (self.per_level == 0).any():
            raise LDPParameterError(f"every level needs at least one report (levels without: {np.flatnonzero(self.per_level == 0) + 1})")
        p, q = m.oracles[0].p_star, m.oracles[0].q_star
        raws = [(self.flat[self.offsets[l]:self.offsets[l + 1]] / self.per_level[l] - q) / (p - q) for l in range(m.levels)]
        return HierarchyEstimate(m, raws, [float(v) for v in self.per_level], self.n, confidence, target)


class HierarchyEstimate(LinearLeafEstimate):
    """Raw node estimates per level and the consistent tree (module docstring): ranges,
    quantiles, the CDF and histograms with exact standard errors."""

    def __init__(self, mech: HierarchicalHistogram, raws: list, n_level: list, n: int, confidence: float, target: str):
        self.mechanism, self.raws, self.n_level, self.n = mech, [np.asarray(r, dtype=np.float64) for r in raws], n_level, n
        self.confidence, self.target = confidence, target
        b, h = mech.fanout, mech.levels
        heights = [h - l + 1 for l in range(1, h + 1)]  # level l's height (leaves: 1)
        self._alpha = [(b**i - b ** (i - 1)) / (b**i - 1) for i in heights]
        self._beta = [(b ** (i - 1) - 1) / (b**i - 1) for i in heights]
        thetas = [np.clip(r, 0.0, 1.0) for r in self.raws]
        self._theta = thetas
        self._var = [mech.node_variance(t, nl) for t, nl in zip(thetas, n_level)]
        self.leaves = self._consistent(self.raws)

    # -- the two linear passes and their adjoint ---------------------------------------------------
    def _consistent(self, x: list) -> np.ndarray:
        b, h = self.mechanism.fanout, self.mechanism.levels
        z = [None] * h
        z[h - 1] = x[h - 1]
        for l in range(h - 2, -1, -1):
            z[l] = self._alpha[l] * x[l] + self._beta[l] * z[l + 1].reshape(-1, b).sum(axis=1)
        parent = np.ones(1)
        for l in range(h):
            s = z[l].reshape(-1, b).sum(axis=1)
            parent = z[l] + np.repeat(parent - s, b) / b
        return parent

    def _adjoint(self, a: np.ndarray) -> list:
        """``∂(aᵀ leaves)/∂x_ℓ`` for each level (``a``: leaves × queries)."""
        b, h = self.mechanism.fanout, self.mechanism.levels
        g = a
        gz = [None] * h
        for l in range(h - 1, -1, -1):
            s = g.reshape(-1, b, g.shape[1]).sum(axis=1)  # S g: children summed
            gz[l] = g - np.repeat(s, b, axis=0) / b
            g = s / b
        w = [None] * h
        G = None
        for l in range(h):
            G = gz[l] if G is None else gz[l] + self._beta[l - 1] * np.repeat(G, b, axis=0)
            w[l] = G if l == h - 1 else self._alpha[l] * G
        return w

    def _variance(self, a: np.ndarray) -> np.ndarray:
        w = self._adjoint(a)
        var = np.zeros(a.shape[1])
        for wl, vl, th, nl in zip(w, self._var, self._theta, self.n_level):
            var += (wl * wl * vl[:, None]).sum(axis=0)
            var += np.maximum((wl * wl * th[:, None]).sum(axis=0) - ((wl * th[:, None]).sum(axis=0)) ** 2, 0.0) / nl
        return var - (self._query_spread(a) if self.target == "sample" else 0.0)
