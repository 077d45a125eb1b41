"""Randomized response: Warner's binary RR and k-ary RR (k-RR).

k-RR (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 6; Wang et al. (arXiv 2016) eq. 6, "MRR"): report the true item with probability
``e^ε/(e^ε + d − 1)``, otherwise a uniform *other* item. Warner RR (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 3) is the case
``d = 2`` on booleans.

Sampling: keep the item iff a uniform 64-bit word is below the integer threshold
``T = floor(2**64 · L/(L + d − 1))`` with ``L`` a certain lower bound of ``e^ε``; otherwise draw an
exactly uniform integer in ``[0, d − 1)`` and skip the true item. Realized channel:
``P(y = x) = T/2**64``, ``P(y = j ≠ x) = (1 − T/2**64)/(d − 1)``; worst-case likelihood ratio
``T (d − 1)/(2**64 − T) <= L <= e^ε`` (checked exactly at construction).

Estimation (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 8–11): ``p̂ = (m̂ (e^ε + d − 1) − 1)/(e^ε − 1)`` is the shared pure
estimator with ``p* = T/2**64``, ``q* = (1 − p*)/(d − 1)``; maximum likelihood by EM is available.
Variance (Kairouz, Bonawitz & Ramage (ICML 2016) Prop. 3, fixed population): ``(d−1)(d + 2(e^ε − 1))/(n (e^ε − 1)²)`` summed
over items (with the ideal probabilities).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..exact import TWO64, exp_lower_bound
from ..sampling import as_source
from ..sampling.aggregate_kernels import bounded_histogram
from .protocol import MaxGainAttack
from .reports import ReportField
from .channel import Channel, floor_threshold
from ._base import FrequencyOracle

__all__ = ["KRR", "WarnerRR"]


def _report_dtype(d: int):
    return np.uint16 if d <= 1 << 16 else np.uint32


@dataclass(frozen=True, kw_only=True)
class KRR(FrequencyOracle):
    """k-ary randomized response over ``d`` categories (``epsilon``-LDP per user).

    Privacy: ``max_divergence``, ``ε`` per user (input metric ``discrete_distance``); the realized
    likelihood ratio is checked ``<= e^ε`` exactly. Citation: Kairouz, Bonawitz & Ramage (ICML 2016) eq. 6–11.
    Runtime: client O(1) per user (≈ 1 byte + one 16/32-bit word of randomness);
    server O(n + d). Report: one item code (``uint16``/``uint32``).

    Proof: docs/proofs/randomized-response.md

    >>> from ldp_plugin import KRR
    >>> m = KRR(epsilon=1.0, d=4)
    >>> reports = m.randomize([0, 1, 2, 3, 3], rng=7)
    >>> reports.shape
    (5,)
    >>> m.realized_epsilon <= 1.0
    True
    """

    capabilities = FrequencyOracle.capabilities | {MaxGainAttack}

    name = "krr"
    client_cost, server_cost = "O(1)", "O(n + d)"
    supports_em = True
    keep_threshold: int = field(init=False, repr=False, compare=False)

    def _realize(self):
        L = exp_lower_bound(self.epsilon)
        T = floor_threshold(L / (L + self.d - 1))
        object.__setattr__(self, "keep_threshold", T)
        p = Fraction(T, TWO64)
        q = (1 - p) / (self.d - 1)
        ratio = Fraction(T * (self.d - 1), TWO64 - T) if T < TWO64 else Fraction(10**400)
        return p, q, ratio

    histogram_columns = ("report",)

    #: ``R(x)(y) = γ/d + (1 − γ)·[y = x]``: the closed forms of amplification and choose apply
    channel_shape = "randomized-response"

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        n = codes.size
        keep = source.bernoulli(self.keep_threshold, n)
        other = source.uniform_int(self.d - 1, n)
        other += other >= codes  # skip the true item: uniform over the d − 1 others
        return np.where(keep, codes, other).astype(_report_dtype(self.d))

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise LDPInputError("krr reports must be a 1-d array of integer item codes")
        if arr.size and (arr.min() < 0 or arr.max() >= self.d):
            raise LDPInputError(f"krr reports must be item codes in [0, {self.d})")
        return arr

    def supports(self, output: int, item: int) -> bool:
        """Whether a channel output supports ``item``: it names it."""
        return output == item

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        return np.bincount(reports, minlength=self.d).astype(np.int64)

    def count_reports(self, reports: Any) -> tuple:
        """Range check and histogram in one pass (:func:`bounded_histogram`): the same counts and
        the same refusal as :meth:`validate_reports` + :meth:`support_counts`."""
        if type(self).validate_reports is not KRR.validate_reports or type(self).support_counts is not KRR.support_counts:
            return super().count_reports(reports)  # a subclass with its own check or count
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise LDPInputError("krr reports must be a 1-d array of integer item codes")
        return bounded_histogram(arr, self.d, message=f"krr reports must be item codes in [0, {self.d})"), int(arr.shape[0])

    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def histogram_support_counts(self, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Support counts from a histogram of distinct report values (``weights`` int64 counts)."""
        out = np.zeros(self.d, dtype=np.int64)
        np.add.at(out, np.asarray(values, dtype=np.int64), np.asarray(weights, dtype=np.int64))
        return out

    def output_alphabet_size(self) -> int:
        return self.d

    def _enumerate_channel(self) -> Channel:
        p, q = self.p_star_exact, self.q_star_exact
        rows = tuple(tuple(p if y == x else q for y in range(self.d)) for x in range(self.d))
        return Channel(outputs=tuple(range(self.d)), matrix=rows)

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)

    def _report_of_one(self, reports):
        code = int(reports[0])
        return self.categories[code] if self.categories is not None else code

    def max_gain_reports(self, targets: Any, m: int, *, rng: Any = None) -> np.ndarray:
        """``m`` fake reports of the maximal-gain attack (Cao, Jia, Gong, USENIX Security 2021,
        MGA for k-RR): each names one target, drawn uniformly among ``targets``; with one
        target every fake report reaches :meth:`report_influence`'s ``hi``."""
        t = np.asarray(targets, dtype=np.int64).ravel()
        pick = as_source(rng).uniform_int(t.size, int(m)) if t.size > 1 else np.zeros(int(m), dtype=np.int64)
        return t[pick].astype(_report_dtype(self.d))


@dataclass(frozen=True, kw_only=True)
class WarnerRR(KRR):
    """Warner's randomized response on one boolean (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 3): k-RR with d = 2.

    Reports ``True``/``False``; tells the truth with probability ``e^ε/(e^ε + 1)``.

    Proof: docs/proofs/randomized-response.md

    >>> from ldp_plugin import WarnerRR
    >>> WarnerRR(epsilon=1.0).randomize_one(True, rng=1) in (True, False)
    True
    """

    name = "warner"

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """k-RR at d = 2: ``ldp choose`` lists it as krr."""
        return ()


    def __post_init__(self) -> None:
        if self.d not in (None, 2) or isinstance(self.d, bool):
            raise LDPParameterError(f"warner has d fixed at 2 (booleans); got d={self.d!r}")
        if self.categories is not None and tuple(self.categories) != (False, True):
            raise LDPParameterError("warner's categories are fixed at (False, True); do not pass categories (use KRR for labels)")
        object.__setattr__(self, "d", 2)
        object.__setattr__(self, "categories", (False, True))
        super().__post_init__()

    def encode(self, values: Any) -> np.ndarray:
        arr = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
        if arr.ndim != 1:
            raise LDPInputError("values must be a 1-d batch of booleans")
        if arr.dtype == object:
            if not all(isinstance(v, (bool, np.bool_)) for v in arr.tolist()):
                raise LDPInputError("warner values must be booleans")
            arr = arr.astype(bool)
        if arr.dtype != np.bool_:
            raise LDPInputError(f"warner values must be booleans (got dtype {arr.dtype})")
        return arr.astype(np.int64)

    def _report_of_one(self, reports):
        return bool(reports[0])

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        return super()._randomize_codes(codes, source).astype(bool)

    spec_omits = ("d", "categories")

    def report_fields(self) -> tuple:
        return (ReportField("report", "bool", kind="bool"),)

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype != np.bool_:
            raise LDPInputError("warner reports must be a 1-d boolean array")
        return arr.astype(np.uint8)
