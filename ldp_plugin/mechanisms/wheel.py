"""The wheel mechanism (Wang et al. (PVLDB 2020)) for categorical (m = 1) and set-valued data, on an exact grid.

The wheel ``[0, 1)`` is a discrete circle of ``N = 2**b`` cells. Each user draws a fresh 64-bit
seed; each of their items lands at cell ``v = h_seed(item)`` (the seeded hash of
:mod:`ldp_plugin.hashing`) and *covers* the arc of ``L`` cells ``v, v+1, …, v+L−1 (mod N)``
(``p = L/N`` is the paper's coverage length). With ``u`` the size of the union of the user's arcs
(``u <= mL``) the output cell ``z`` has probability (Wang et al. (PVLDB 2020) eq. 4, discretized)

    a = e^ε / Ω     on each covered cell,      b = (1 − u·a)/(N − u)   on each other cell,
    Ω = m·L·e^ε + (N − m·L)                    (the paper's normalization, in cells).

``b`` runs from ``1/Ω`` (disjoint arcs) up to ``a`` (one arc), so every ratio is at most e^ε.

Sampling is exact: "covered" is a Bernoulli with integer threshold ``T_u = floor(2**64·u·L₀/Ω)``
(``L₀`` a certain lower bound of ``e^ε``), then a uniform cell among the ``u`` covered or the
``N − u`` uncovered ones (Lemire, per-user ranges). The realized worst case
``max_u a_u / min_u b_u`` is checked ``<= e^ε`` exactly at construction (all ``u`` in
``[0, mL]``). Client cost: ``O(m log m)`` (sort the arc starts, merge); report ``(seed, cell)``:
64 + b bits.

Estimation (Wang et al. (PVLDB 2020) Alg. 2, Def. 3–6): report ``(s, z)`` supports item ``i`` iff ``z`` lies in
``i``'s arc under seed ``s``. ``P_t = p* = L·e^ε/Ω`` (an arc is always fully covered) and
``P_f = q* = L/N`` in expectation over the seed (a non-member's arc is uniformly placed); the shared
pure estimator gives the frequencies ``f_i`` (fraction of users holding ``i``; ``Σ f <= m``) with
variance ``[f P_t(1−P_t) + (1−f) P_f(1−P_f)]/(n (P_t−P_f)²)`` (Thm 4, 6).

Coverage length ``p``: ``"paper"`` = ``1/(e^ε+1)`` (m = 1) or ``1/(2m−1+m e^ε)`` (sets);
``"optimal"`` (default) minimizes the rare-item variance ``P_f(1−P_f)/(P_t−P_f)²`` over
``p ∈ (0, 1/m)`` numerically (the paper states a closed form exists but does not give it); or a
number. Grid: the smallest ``b >= 10`` with ``L = round(pN) >= 256`` (p quantized to within
0.2%), at most ``b = 30``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Optional, Union

import numpy as np

from .reports import ReportField
from .mixins import PureSetVariance, SeededReports, SetInput
from .._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from ..exact import TWO64, exp_lower_bound, ratio_within_exp
from ..hashing import keys_of_items, mix64, seed_multipliers, seeded_hash
from .sets import gather_sets, subsets_up_to
from ..theory import golden_section_min
from .channel import Channel, floor_threshold
from ._base import RealizedRates
from .domain import check_domain, check_epsilon
from .set_baselines import SetAccumulator
from .protocol import Analytic

__all__ = ["Wheel", "wheel_optimal_p", "arc_union"]

VERIFICATION_SEEDS = tuple(int(s) for s in mix64(np.arange(11, 15, dtype=np.uint64)))
_CHECKS_PER_CHUNK = 1 << 16


def arc_union(pos: np.ndarray, L: int, N: int):
    """Union of the arcs ``[v, v+L)`` on the circle of ``N`` cells, per row of ``pos`` (``-1`` =
    no item): returns the sorted starts, the gap to the next start, the covered length after each
    start (``min(gap, L)``) and the union size ``u`` — ``O(m log m)`` per row (a sort and a sum)."""
    has = (pos >= 0).any(axis=1)
    first = np.where(has, pos.max(axis=1), 0)
    pos = np.where(pos < 0, first[:, None], pos)  # padding repeats an arc: it adds nothing
    pos = np.sort(pos, axis=1)
    nxt = np.concatenate([pos[:, 1:], pos[:, :1] + N], axis=1)
    gap = nxt - pos
    cov = np.minimum(gap, L)
    cov[~has] = 0
    return pos, gap, cov, cov.sum(axis=1)


def _rare_variance(p: float, eps: float, m: int) -> float:
    e = math.exp(eps)
    pt = p * e / (m * p * e + 1 - m * p)
    return p * (1 - p) / (pt - p) ** 2


def wheel_optimal_p(epsilon: float, m: int = 1) -> float:
    """The coverage length minimizing the rare-item variance (golden-section search on (0, 1/m))."""
    return golden_section_min(lambda p: _rare_variance(p, epsilon, m), 1e-9, 1.0 / m - 1e-9, iterations=200)


@dataclass(frozen=True, kw_only=True)
class Wheel(SetInput, PureSetVariance, SeededReports, RealizedRates):
    """The wheel mechanism for sets of at most ``m`` items (``m = 1``: categorical), ``epsilon``-LDP
    per user (the whole set). See the module docstring for the grid, sampler and estimator.

    Proof: docs/proofs/sets.md

    >>> from ldp_plugin import Wheel
    >>> w = Wheel(epsilon=1.0, m=2, d=50)
    >>> reports = w.randomize([[0, 3], [7], []], rng=0)
    >>> reports.shape, w.realized_epsilon <= 1.0
    ((3, 2), True)
    """

    capabilities = RealizedRates.capabilities | {Analytic}

    name: ClassVar[str] = "wheel"
    client_cost, server_cost = "O(m log m)", "O(n·d)"

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """Any ``m`` (the arc length is chosen by the constructor)."""
        return ({},)

    epsilon: float
    m: int = 1
    d: Optional[int] = None
    categories: tuple | list | None = None  # a list or tuple of labels; stored as a tuple
    p: Union[str, float] = "optimal"
    grid_bits: Optional[int] = None
    on_long: str = "error"
    N: int = field(init=False, compare=False)
    L: int = field(init=False, compare=False)
    thresholds: tuple = field(init=False, repr=False, compare=False)
    p_star_exact: Fraction = field(init=False, repr=False, compare=False)
    q_star_exact: Fraction = field(init=False, repr=False, compare=False)
    realized_ratio: Fraction = field(init=False, repr=False, compare=False)
    _T: np.ndarray = field(init=False, repr=False, compare=False)
    _keys_cache: Optional[np.ndarray] = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        m = self.m
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= int(m) <= 1 << 12:
            raise LDPParameterError(f"m (the maximum set size) must be an integer in [1, 4096] (got {m!r})")
        m = int(m)
        object.__setattr__(self, "m", m)
        if self.on_long not in ("error", "sample"):
            raise LDPParameterError(f"on_long must be 'error' or 'sample' (got {self.on_long!r})")
        d, cats = check_domain(self.d, self.categories)
        if m > d:
            raise LDPParameterError(f"m must be at most d (m={m}, d={d})")
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "categories", cats)
        if cats is not None:  # the labels are hashed: checked now, not at the first report
            self.item_keys()
        if isinstance(self.p, str) and self.p == "optimal":  # a str test first: an array's == is not a truth value
            p = wheel_optimal_p(eps, m)
        elif isinstance(self.p, str) and self.p == "paper":
            e = math.exp(eps)
            p = 1 / (e + 1) if m == 1 else 1 / (2 * m - 1 + m * e)
        elif isinstance(self.p, (int, float)) and not isinstance(self.p, bool) and 0 < float(self.p) < 1 / m:
            p = float(self.p)
        else:
            raise LDPParameterError(f"p must be 'optimal', 'paper' or a number in (0, 1/m) (got {self.p!r})")
        object.__setattr__(self, "p", p)
        b = self.grid_bits
        if b is None:
            b = 10
            while round(p * (1 << b)) < 256 and b < 30:
                b += 1
        elif isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 3 <= int(b) <= 30:
            raise LDPParameterError(f"grid_bits must be an integer in [3, 30] (got {b!r})")
        N = 1 << int(b)
        L = max(1, int(round(p * N)))
        if m * L >= N:
            raise LDPParameterError(f"the grid of 2**{b} cells is too coarse for m={m} arcs of length p={p:.3g}")
        object.__setattr__(self, "grid_bits", int(b))
        object.__setattr__(self, "N", N)
        object.__setattr__(self, "L", L)
        L0 = exp_lower_bound(eps)
        omega = m * L * L0 + (N - m * L)
        T = [floor_threshold(Fraction(u) * L0 / omega) for u in range(m * L + 1)]
        achievable = [0, *range(L, m * L + 1)]  # an empty set, or a union of 1..m arcs of length L
        a = [Fraction(T[u], TWO64 * u) for u in achievable if u]
        bb = [Fraction(TWO64 - T[u], TWO64 * (N - u)) for u in achievable]
        ratio = max(max(a) / min(bb), Fraction(1))
        if not ratio_within_exp(ratio, eps):  # pragma: no cover - the thresholds are chosen to pass
            raise PrivacyVerificationError("wheel: the realized likelihood ratio exceeds e**epsilon")
        object.__setattr__(self, "thresholds", tuple(T))
        object.__setattr__(self, "_T", np.array(T, dtype=np.uint64))
        object.__setattr__(self, "realized_ratio", ratio)
        object.__setattr__(self, "p_star_exact", L * L0 / omega)
        object.__setattr__(self, "q_star_exact", Fraction(L, N))

    # -- description -------------------------------------------------------------------------------
    def _extra_params(self) -> dict:
        return {"m": self.m, "p": self.p, "grid_bits": self.grid_bits, "L": self.L}

    def item_keys(self) -> np.ndarray:
        if self._keys_cache is None:
            object.__setattr__(self, "_keys_cache", keys_of_items(self.categories if self.categories is not None else range(self.d)))
        return self._keys_cache

    # -- client ------------------------------------------------------------------------------------------
    # randomize / randomize_encoded: SetInput's (reports ``(n, 2)`` ``uint64``: seed, output cell)

    def _report_of_one(self, reports) -> tuple:
        return int(reports[0, 0]), int(reports[0, 1])

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        """Single items (sets of one) given as codes."""
        codes = np.asarray(codes, dtype=np.int64)
        return self._randomize_csr(codes, np.arange(codes.size + 1, dtype=np.int64), np.ones(codes.size, dtype=np.int64), source)

    def _randomize_csr(self, codes, offsets, lengths, source, seeds=None) -> np.ndarray:
        """The client on CSR sets already limited to ``m`` items (``lengths = diff(offsets)``)."""
        n = offsets.size - 1
        seeds = source.words(n) if seeds is None else np.asarray(seeds, dtype=np.uint64)
        N, L = self.N, self.L
        keys = self.item_keys()[codes] if codes.size else np.empty(0, dtype=np.uint64)
        user = np.repeat(np.arange(n), lengths)
        pos_flat = seeded_hash(keys, seeds[user], N) if codes.size else np.empty(0, dtype=np.int64)
        width = max(1, int(lengths.max()) if n else 1)
        pos = np.full((n, width), -1, dtype=np.int64)
        col = np.arange(codes.size) - np.repeat(offsets[:-1], lengths)
        pos[user, col] = pos_flat
        has = lengths > 0
        pos, gap, cov, u = arc_union(pos, L, N)
        covered = source.bernoulli_each(self._T[u])
        span = np.where(covered, u, N - u)
        idx = source.uniform_int_each(np.maximum(span, 1))
        seg_len = np.where(covered[:, None], cov, gap - cov)
        seg_start = np.where(covered[:, None], pos, pos + cov)
        seg_len[~has] = 0
        cum = np.cumsum(seg_len, axis=1)
        seg = (cum <= idx[:, None]).sum(axis=1)
        seg = np.minimum(seg, width - 1)
        before = np.where(seg > 0, cum[np.arange(n), np.maximum(seg - 1, 0)], 0)
        cell = (seg_start[np.arange(n), seg] + idx - before) % N
        cell = np.where(has, cell, idx)  # an empty set: every cell uncovered, uniform
        out = np.empty((n, 2), dtype=np.uint64)
        out[:, 0] = seeds
        out[:, 1] = cell
        return out

    # -- server ------------------------------------------------------------------------------------------
    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def report_fields(self) -> tuple:
        return (ReportField("seed", "uint64"), ReportField("report", "uint32", bound=self.N))

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype != np.uint64:
            raise LDPInputError("wheel reports must be an (n, 2) uint64 array of (seed, cell)")
        if arr.size and int(arr[:, 1].max()) >= self.N:
            raise LDPInputError(f"wheel report cells must be in [0, {self.N})")
        return arr

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """``counts[i]`` = reports whose cell lies in item ``i``'s arc: O(n·d), vectorized."""
        # N = 2**b, so an item's cell is the top b bits of z = a_s·key + b_s (mod 2**64); its arc
        # covers the report's cell iff z ∈ [(cell − L + 1)·2**s, (cell + 1)·2**s) mod 2**64 with
        # s = 64 − b: one multiply, one add, one compare per (report, item)
        keys = np.ascontiguousarray(self.item_keys(), dtype=np.uint64)
        d = keys.size
        counts = np.zeros(d, dtype=np.int64)
        rows = max(1, _CHECKS_PER_CHUNK // d)
        s = np.uint64(64 - self.grid_bits)
        width = np.uint64(self.L) << s
        z = np.empty((rows, d), dtype=np.uint64)
        hit = np.empty((rows, d), dtype=np.bool_)
        for start in range(0, reports.shape[0], rows):
            r = reports[start : start + rows]
            k = r.shape[0]
            a, b = seed_multipliers(r[:, 0])
            lo = (r[:, 1] - np.uint64(self.L - 1)) << s  # wraps mod 2**64 exactly like the circle
            b -= lo
            zz, hh = z[:k], hit[:k]
            np.multiply(a[:, None], keys[None, :], out=zz)
            zz += b[:, None]
            np.less(zz, width, out=hh)
            counts += np.count_nonzero(hh, axis=0)
        return counts

    def accumulator(self):
        return SetAccumulator(self)

    # -- channel (verification) -----------------------------------------------------------------------
    def verification_inputs(self) -> list:
        """All sets of 0..m items of the domain (the inputs of the enumerated channel)."""
        return subsets_up_to(self.d, self.m)

    def channel(self) -> Channel:
        """The exact channel conditional on the seed being one of :data:`VERIFICATION_SEEDS`
        (uniformly): outputs ``(seed index, cell)``, inputs :meth:`verification_inputs`."""
        inputs = self.verification_inputs()
        if len(VERIFICATION_SEEDS) * self.N * len(inputs) > 1 << 18:
            raise LDPParameterError("channel enumeration of the wheel is limited to small grids and domains")
        S = len(VERIFICATION_SEEDS)
        keys = self.item_keys()
        rows = []
        for items in inputs:
            row = []
            for s in VERIFICATION_SEEDS:
                pos = [int(seeded_hash(keys[i : i + 1], np.uint64(s), self.N)[0]) for i in items]
                cov = set()
                for v in pos:
                    cov.update((v + j) % self.N for j in range(self.L))
                u = len(cov)
                a = Fraction(self.thresholds[u], TWO64 * u) if u else Fraction(0)
                b = Fraction(TWO64 - self.thresholds[u], TWO64 * (self.N - u))
                row.extend((a if z in cov else b) / S for z in range(self.N))
            rows.append(tuple(row))
        outputs = tuple((si, z) for si in range(S) for z in range(self.N))
        return Channel(outputs=outputs, matrix=tuple(rows))

    def _verification_randomize(self, codes: np.ndarray, source) -> np.ndarray:
        flat, offsets, lengths = gather_sets(self.verification_inputs(), codes)
        idx = source.uniform_int(len(VERIFICATION_SEEDS), lengths.size)
        return self._randomize_csr(flat, offsets, lengths, source, np.asarray(VERIFICATION_SEEDS, dtype=np.uint64)[idx])

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        seeds = np.asarray(VERIFICATION_SEEDS, dtype=np.uint64)
        order = np.argsort(seeds)
        si = np.searchsorted(seeds[order], reports[:, 0])
        return order[si].astype(np.int64) * self.N + reports[:, 1].astype(np.int64)
