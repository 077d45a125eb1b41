"""Set-valued baselines (Wang et al. (PVLDB 2020) §1.1, §6): RAPPOR for sets and PrivSet (k-subset for sets).

Both take sets of at most ``m`` items (lists, CSR, Polars List columns; longer sets are an error
or, with ``on_long="sample"``, sampled down to ``m``) and estimate item frequencies ``f_i`` (the
fraction of users holding ``i``, ``Σ f <= m``) with the shared pure estimator.

* **RAPPOR for sets**: the user's ``m`` bits of a ``d``-bit vector are set (fewer for a smaller
  set) and every bit goes through randomized response with budget ``ε/(2m)``: two sets differ in
  at most ``2m`` bits, so the ratio is ``(p/(1−p))^{2m} <= e^ε`` (checked exactly). ``p* = p``,
  ``q* = 1 − p``. Client O(d), report ``d`` packed bits.
* **PrivSet** (Wang, Li, Jha 2018): the set is padded to exactly ``m`` items with ``m`` dummy items
  (``PAD₀ … PAD_{m−1}``, domain ``d' = d + m``), then a ``k``-subset ``S`` of the ``d'`` items is
  output with probability ``∝ e^ε`` if ``S`` meets the padded set ``X`` and ``∝ 1`` otherwise.
  With ``C = C(d', k)`` subsets of which ``ω = C − C(d'−m, k)`` meet ``X``: ``P(meet) =
  ωe^ε/(ωe^ε + C − ω)``. Sampling: a Bernoulli(``P(meet)``) from an integer threshold; if it
  meets, a uniform ``k``-subset of the ``d'`` items drawn until it meets ``X`` (rejection: exactly
  uniform over the meeting subsets); else a uniform ``k``-subset of the ``d' − m`` items outside
  ``X``. Realized ratio ``T(C−ω)/((2**64−T)ω) <= e^ε`` (exact).
  Support: ``i ∈ S``. ``p* = P(meet)·C(d'−1, k−1)/ω``; for ``i ∉ X``
  ``q* = P(meet)·[C(d'−1,k−1) − C(d'−1−m,k−1)]/ω + (1−P(meet))·C(d'−1−m,k−1)/(C−ω)``. ``k`` =
  ``"optimal"`` minimizes the rare-item variance ``q*(1−q*)/(p*−q*)²`` over ``k ∈ [1, d'−m]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any, ClassVar, Optional, Union

import numpy as np

from .reports import ReportField
from .mixins import PureSetVariance, SetInput
from .._errors import LDPInputError, LDPParameterError
from ..estimation import FrequencyEstimate, lower_bounds, debias
from ..exact import TWO64, exp_lower_bound, ratio_within_exp
from .sets import gather_sets, subsets_up_to
from .channel import Channel, floor_threshold
from ._base import FrequencyAccumulator, RealizedRates
from .domain import check_domain, check_epsilon
from .unary import bit_vector_outputs, bit_vector_row, packed_column_counts, randomize_bit_rows
from .subset import KSubset
from .protocol import Analytic, InputKind

__all__ = ["RapporSet", "PrivSet", "SetAccumulator"]


class SetAccumulator(FrequencyAccumulator):
    """The pure-oracle accumulator for set mechanisms: post-processed estimates are projected
    onto the simplex scaled to the *estimated* average set size ``Σ f̂`` (unbiased; clipped to
    ``[0, m]``) — equal to ``m`` when every user holds m items, as in Wang et al. (PVLDB 2020) §6, and not biased
    upward when sets are smaller."""

    def _total(self) -> float:
        m = self.mechanism
        return float(np.clip(debias(self.counts, self.n, m.p_star, m.q_star).sum(), 0.0, m.m))

    def estimate(self, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        """The pure-oracle estimate; ``postprocess="ibu"`` is refused: a user's report supports
        several of her items at once, so the single-item likelihood IBU fits is not the channel, and
        its bootstrap would leave out the variance of the estimated set size the estimate is scaled
        by (its standard errors measured 1.2–6× too small)."""
        if postprocess == "ibu":
            raise LDPParameterError(f"postprocess='ibu' is not available for the set mechanism {self.mechanism.name!r}: its reports "
                                    "have no single-item likelihood (use 'projection', 'normalize' or 'none')")
        est = super().estimate(candidates=candidates, postprocess=postprocess, confidence=confidence)
        # users above m were sampled down: their items are under-counted, only lower limits hold
        return lower_bounds(est) if self.mechanism.on_long == "sample" else est


@dataclass(frozen=True, kw_only=True)
class _SetMechanism(SetInput, PureSetVariance, RealizedRates):
    capabilities = RealizedRates.capabilities | {Analytic}
    name: ClassVar[str] = "set-mechanism"

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """Sets of ``1 < m < d`` items (for ``m = 1`` the single-item oracles serve)."""
        return ({},) if 1 < m < d else ()

    input_kind: ClassVar[InputKind] = InputKind.SET
    epsilon: float
    m: int = 1
    d: Optional[int] = None
    categories: tuple | list | None = None  # a list or tuple of labels; stored as a tuple
    on_long: str = "error"
    p_star_exact: Fraction = field(init=False, repr=False, compare=False)
    q_star_exact: Fraction = field(init=False, repr=False, compare=False)
    realized_ratio: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        m = self.m
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= int(m) <= 1 << 12:
            raise LDPParameterError(f"m (the maximum set size) must be an integer in [1, 4096] (got {m!r})")
        object.__setattr__(self, "m", int(m))
        if self.on_long not in ("error", "sample"):
            raise LDPParameterError(f"on_long must be 'error' or 'sample' (got {self.on_long!r})")
        d, cats = check_domain(self.d, self.categories)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "categories", cats)
        if self.m >= d:
            raise LDPParameterError(f"m must be below d (m={self.m}, d={d})")
        p, q, ratio = self._realize()
        if not ratio_within_exp(ratio, self.epsilon):  # pragma: no cover - thresholds chosen to pass
            raise LDPParameterError(f"{self.name}: the realized likelihood ratio exceeds e**epsilon")
        object.__setattr__(self, "p_star_exact", p)
        object.__setattr__(self, "q_star_exact", q)
        object.__setattr__(self, "realized_ratio", ratio)

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        codes = np.asarray(codes, dtype=np.int64)
        return self._randomize_csr(codes, np.arange(codes.size + 1, dtype=np.int64), np.ones(codes.size, dtype=np.int64), source)

    def _padded_rows(self, codes, offsets, lengths, fill) -> np.ndarray:
        """``(n, m)`` item codes per user, short rows completed by ``fill(j)`` for slot ``j``."""
        n = lengths.size
        rows = np.empty((n, self.m), dtype=np.int64)
        for j in range(self.m):
            rows[:, j] = fill(j)
        user = np.repeat(np.arange(n), lengths)
        col = np.arange(codes.size) - np.repeat(offsets[:-1], lengths)
        rows[user, col] = codes
        return rows

    def accumulator(self) -> SetAccumulator:
        return SetAccumulator(self)

    # -- verification on tiny instances ------------------------------------------------------------
    def verification_inputs(self) -> list:
        return subsets_up_to(self.d, self.m)

    def _verification_randomize(self, codes: np.ndarray, source) -> np.ndarray:
        return self._randomize_csr(*gather_sets(self.verification_inputs(), codes), source)

    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def params(self) -> dict:
        return {**super().params(), "m": self.m}


@dataclass(frozen=True, kw_only=True)
class RapporSet(_SetMechanism):
    """RAPPOR for sets of at most ``m`` items: per-bit RR with ``ε/(2m)``; ``epsilon``-LDP per user.

    Proof: docs/proofs/sets.md

    >>> from ldp_plugin import RapporSet
    >>> RapporSet(epsilon=2.0, m=2, d=10).randomize([[1, 2], [3]], rng=0).shape
    (2, 2)
    """

    name = "rappor-set"
    client_cost, server_cost = "O(d)", "O(n·d/64)"
    p_threshold: int = field(init=False, repr=False, compare=False)

    def _realize(self):
        k = 2 * self.m
        L = exp_lower_bound(self.epsilon / k)
        tp = floor_threshold(L / (L + 1))
        while tp > TWO64 // 2 and not ratio_within_exp(Fraction(tp, TWO64 - tp) ** k, self.epsilon):
            tp -= max(1, tp >> 52)
        object.__setattr__(self, "p_threshold", tp)
        p = Fraction(tp, TWO64)
        return p, 1 - p, (p / (1 - p)) ** k

    def _randomize_csr(self, codes, offsets, lengths, source):
        first = np.where(lengths > 0, codes[np.minimum(offsets[:-1], max(codes.size - 1, 0))] if codes.size else 0, -1)
        rows = self._padded_rows(codes, offsets, lengths, lambda j: first)  # a short set repeats its first bit
        empty = lengths == 0
        out = randomize_bit_rows(np.where(empty[:, None], 0, rows), self.d, self.p_threshold, TWO64 - self.p_threshold, source)
        if empty.any():  # an empty set sets no bit: every bit ~ q
            out[empty] = source.bernoulli_packed(TWO64 - self.p_threshold, int(empty.sum()), self.d)
        return out

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint8", (self.d + 7) // 8, "bits", self.d),)

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        nb = (self.d + 7) // 8
        if arr.ndim != 2 or arr.dtype != np.uint8 or arr.shape[1] != nb:
            raise LDPInputError(f"rappor-set reports must be an (n, {nb}) uint8 array of packed bits")
        if self.d % 8 and arr.size and (arr[:, -1] >> (self.d % 8)).any():
            raise LDPInputError(f"rappor-set reports have padding bits set beyond d={self.d}")
        return arr

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        return packed_column_counts(reports, self.d)

    def channel(self) -> Channel:
        if self.d > 8:
            raise LDPParameterError("channel enumeration of rappor-set is limited to d <= 8")
        p = self.p_star_exact
        outs = bit_vector_outputs(self.d)
        return Channel(outputs=outs, matrix=tuple(bit_vector_row(outs, set(X), p, 1 - p) for X in self.verification_inputs()))

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        bits = np.unpackbits(reports, axis=1, count=self.d, bitorder="little").astype(np.int64)
        return bits @ (1 << np.arange(self.d - 1, -1, -1, dtype=np.int64))


def _privset_probs(d: int, m: int, k: int, L: Fraction):
    dp = d + m
    C = comb(dp, k)
    omega = C - comb(dp - m, k)
    meet = omega * L / (omega * L + C - omega)
    a = comb(dp - 1, k - 1)
    b = comb(dp - 1 - m, k - 1)
    p = meet * Fraction(a, omega)
    q = meet * Fraction(a - b, omega) + (1 - meet) * Fraction(b, C - omega)
    return meet, p, q, C, omega


@dataclass(frozen=True, kw_only=True)
class PrivSet(_SetMechanism):
    """PrivSet: a ``k``-subset weighted ``e^ε`` when it meets the (padded) set; ``epsilon``-LDP
    per user. ``k="optimal"`` minimizes the rare-item variance.

    Proof: docs/proofs/sets.md

    >>> from ldp_plugin import PrivSet
    >>> m = PrivSet(epsilon=2.0, m=2, d=20)
    >>> m.randomize([[1, 2], [3]], rng=0).shape == (2, m.k)
    True
    """

    name = "privset"
    client_cost, server_cost = "O(d)", "O(n·k + d)"
    k: Union[int, str] = "optimal"
    meet_threshold: int = field(init=False, repr=False, compare=False)

    def _realize(self):
        dp = self.d + self.m
        L = exp_lower_bound(self.epsilon)
        k = self.k
        if k == "optimal":
            Lf = Fraction(math.exp(self.epsilon))
            best = None
            for kk in range(1, dp - self.m + 1):
                _, p, q, _, _ = _privset_probs(self.d, self.m, kk, Lf)
                if p <= q:
                    continue
                v = float(q * (1 - q) / (p - q) ** 2)
                if best is None or v < best[0]:
                    best = (v, kk)
            k = best[1]
        elif isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= dp - self.m:
            raise LDPParameterError(f"k must be 'optimal' or an integer in [1, d] (got {k!r})")
        k = int(k)
        object.__setattr__(self, "k", k)
        meet, _, _, C, omega = _privset_probs(self.d, self.m, k, L)
        T = floor_threshold(meet)
        object.__setattr__(self, "meet_threshold", T)
        pm = Fraction(T, TWO64)
        a = comb(dp - 1, k - 1)
        b = comb(dp - 1 - self.m, k - 1)
        p = pm * Fraction(a, omega)
        q = pm * Fraction(a - b, omega) + (1 - pm) * Fraction(b, C - omega)
        ratio = Fraction(T * (C - omega), (TWO64 - T) * omega)
        return p, q, max(ratio, Fraction(1))

    def _extra_params(self) -> dict:
        return {"k": self.k}

    def _randomize_csr(self, codes, offsets, lengths, source):
        d, m, k = self.d, self.m, self.k
        dp = d + m
        X = self._padded_rows(codes, offsets, lengths, lambda j: np.full(lengths.size, d + j))
        # pad short sets with the dummies not used: slot j of a short row holds PAD_j
        n = lengths.size
        meet = source.bernoulli(self.meet_threshold, n)
        out = np.empty((n, k), dtype=np.int64)
        todo = np.flatnonzero(meet)
        while todo.size:  # uniform k-subsets of the d' items until one meets X: exact rejection
            S = source.partial_shuffle_prefix(todo.size, dp, k).astype(np.int64)
            ok = (S[:, :, None] == X[todo][:, None, :]).any(axis=(1, 2))
            out[todo[ok]] = S[ok]
            todo = todo[~ok]
        miss = np.flatnonzero(~meet)
        if miss.size:  # a uniform k-subset of the d' − m items outside X
            S = source.partial_shuffle_prefix(miss.size, dp - m, k).astype(np.int64)
            Xs = np.sort(X[miss], axis=1)
            for j in range(m):  # map [0, d'−m) onto the items not in X (X sorted ascending)
                S += S >= Xs[:, j : j + 1]
            out[miss] = S
        out.sort(axis=1)
        return out.astype(np.uint32)

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", self.k, "sorted", self.d + self.m),)

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != self.k or arr.dtype.kind not in "iu":
            raise LDPInputError(f"privset reports must be an (n, {self.k}) integer array")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= self.d + self.m):
            raise LDPInputError(f"privset reports must hold codes in [0, {self.d + self.m})")
        return arr

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        return np.bincount(reports.ravel().astype(np.int64), minlength=self.d + self.m)[: self.d].astype(np.int64)

    def channel(self) -> Channel:
        import itertools

        dp = self.d + self.m
        outs = tuple(itertools.combinations(range(dp), self.k))
        if len(outs) * len(self.verification_inputs()) > 1 << 16:
            raise LDPParameterError("channel enumeration of privset is limited to tiny instances")
        T = self.meet_threshold
        C = comb(dp, self.k)
        omega = C - comb(dp - self.m, self.k)
        pin, pout = Fraction(T, TWO64 * omega), Fraction(TWO64 - T, TWO64 * (C - omega))
        rows = []
        for X in self.verification_inputs():
            Xp = set(X) | {self.d + j for j in range(len(X), self.m)}  # padded with the unused dummies
            rows.append(tuple(pin if Xp & set(S) else pout for S in outs))
        return Channel(outputs=outs, matrix=tuple(rows))

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        helper = KSubset(epsilon=1.0, d=self.d + self.m, k=self.k)
        return helper.output_index(reports)
