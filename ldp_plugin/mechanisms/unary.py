"""Unary encodings: k-RAPPOR (basic one-time RAPPOR, symmetric unary encoding) and OUE.

The user's item ``x`` becomes the standard basis vector ``e_x`` of ``{0,1}^d``; every bit is
reported independently:

* bit ``x`` is 1 with probability ``p``; every other bit is 1 with probability ``q``.
* **k-RAPPOR / SUE** (Kairouz, Bonawitz & Ramage (ICML 2016) §4.2, eq. 14–15): per-bit randomized response with budget
  ``ε/2``: ``p = e^{ε/2}/(e^{ε/2} + 1)``, ``q = 1 − p``.
* **OUE** (optimized unary encoding, Wang et al. 2017): ``p = 1/2``, ``q = 1/(e^ε + 1)``.

Changing the input changes two bits, so the worst-case likelihood ratio is
``p(1 − q) / ((1 − p) q)``. Each probability is an integer threshold over ``2**64`` chosen so the
realized ratio is at most ``e^ε`` (checked exactly at construction). The client draws the whole
``n × d`` bit matrix with ``q`` by geometric-run decoding
(:meth:`~ldp_plugin.sampling.RandomSource.bernoulli_packed`: exact, 2 random bits per bit on
average, all cores) and then redraws each user's own bit with ``p``.

Report: the ``d`` bits packed into ``ceil(d/8)`` bytes, least-significant bit first (bit ``j`` is
``(byte[j // 8] >> (j % 8)) & 1``, the order OpenDP's ``debias_randomized_response_bitvec``
reads). Server: support count of item ``j`` is the number of reports with bit ``j`` set.
Estimation: the shared pure estimator with ``p* = p``, ``q* = q`` (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 15); variance
``[p(1−p) + (d−1) q(1−q)]/(n (p−q)²)`` summed over items (Kairouz, Bonawitz & Ramage (ICML 2016) Prop. 4 for SUE).
"""

from __future__ import annotations

import abc
import itertools
from dataclasses import dataclass, field
from fractions import Fraction
import math
from typing import Any, ClassVar, Optional

import numpy as np

from ..sampling import as_source
from .protocol import MaxGainAttack, SupportTestable
from .reports import ReportField
from .._errors import LDPInputError, LDPParameterError
from ..exact import TWO64, exp_lower_bound
from ..sampling.aggregate_kernels import packed_column_counts as _packed_column_counts
from ..theory import golden_section_min
from .channel import Channel, ceil_threshold, floor_threshold
from ._base import FrequencyOracle

__all__ = ["RUE", "UnaryEncoding", "RAPPOR", "OUE", "THE", "the_optimal_threshold", "randomize_bit_rows", "packed_column_counts"]

_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def packed_column_counts(packed: np.ndarray, d: int) -> np.ndarray:
    """Number of rows with bit ``j`` set, for each ``j < d``, of an ``(n, ceil(d/8))`` matrix of
    bits packed LSB-first — without unpacking the bits
    (:func:`ldp_plugin.sampling.aggregate_kernels.packed_column_counts`: byte-lane SWAR counters
    with the compiled kernels, a bit-sliced adder tree on the numpy path; identical counts)."""
    return _packed_column_counts(packed, d)


def bit_vector_outputs(n_bits: int) -> tuple:
    """Every ``n_bits``-bit report as a 0/1 tuple, in ``itertools.product`` order."""
    return tuple(itertools.product((0, 1), repeat=n_bits))


def bit_vector_row(outputs: tuple, ones, p_on: Fraction, p_off: Fraction) -> tuple:
    """Exact probabilities of ``outputs`` (from :func:`bit_vector_outputs`) when bit ``j`` is 1
    with probability ``p_on`` if ``j`` is in ``ones`` and ``p_off`` otherwise, independently —
    the channel row of every unary-encoding sampler (:func:`randomize_bit_rows`)."""
    probs = []
    for y in outputs:
        pr = Fraction(1)
        for j, bit in enumerate(y):
            b = p_on if j in ones else p_off
            pr *= b if bit else 1 - b
        probs.append(pr)
    return tuple(probs)


def randomize_bit_rows(positions: np.ndarray, n_bits: int, p_threshold: int, q_threshold: int, source) -> np.ndarray:
    """Packed (LSB-first) rows of ``n_bits`` bits: bit ``j`` of row ``i`` is 1 with probability
    ``p_threshold/2**64`` if ``j`` is one of ``positions[i]`` (an ``(n, h)`` integer array) and
    ``q_threshold/2**64`` otherwise, independently — exact integer-threshold sampling.

    Every bit is drawn with ``q`` first, then each listed position is redrawn with ``p`` (a
    position listed twice is redrawn twice: still exactly Bernoulli(``p``));
    :meth:`~ldp_plugin.sampling.RandomSource.bernoulli_rows`.
    """
    n, h = positions.shape
    return source.bernoulli_rows(q_threshold, n, n_bits, positions, p_threshold)


@dataclass(frozen=True, kw_only=True)
class UnaryEncoding(FrequencyOracle):
    """Shared machinery of unary encodings: per-bit thresholds for ``p`` (own bit) and ``q``."""

    capabilities = FrequencyOracle.capabilities | {MaxGainAttack, SupportTestable}

    name = "unary"
    client_cost, server_cost = "O(d)", "O(n·d/64)"
    channel_max_outputs = 256
    p_threshold: int = field(init=False, repr=False, compare=False)
    q_threshold: int = field(init=False, repr=False, compare=False)

    @abc.abstractmethod
    def _thresholds(self) -> tuple[int, int]:
        """Integer thresholds (over 2**64) of P[own bit = 1] and P[other bit = 1]."""

    def _realize(self):
        tp, tq = self._thresholds()
        object.__setattr__(self, "p_threshold", tp)
        object.__setattr__(self, "q_threshold", tq)
        p, q = Fraction(tp, TWO64), Fraction(tq, TWO64)
        if not (0 < p < 1 and 0 < q < 1):
            return p, q, Fraction(0)  # refused by the base class (probabilities round to 0/1)
        return p, q, (p * (1 - q)) / ((1 - p) * q)

    @property
    def n_bytes(self) -> int:
        return (self.d + 7) // 8

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        return randomize_bit_rows(codes[:, None], self.d, self.p_threshold, self.q_threshold, source)

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint8", self.n_bytes, "bits", self.d),)

    #: independent bits, ``p*`` at the own item and ``q*`` elsewhere (closed forms in amplification, choose)
    channel_shape = "unary"

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.dtype != np.uint8 or arr.shape[1] != self.n_bytes:
            raise LDPInputError(f"{self.name} reports must be a (n, {self.n_bytes}) uint8 array of packed bits")
        if self.d % 8 and arr.size and (arr[:, -1] >> (self.d % 8)).any():
            raise LDPInputError(f"{self.name} reports have padding bits set beyond d={self.d}")
        return arr

    def supports(self, output: tuple, item: int) -> bool:
        """Whether a channel output supports ``item``: its bit is set."""
        return output[item] == 1

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """Column sums of the packed bit matrix (see :func:`packed_column_counts`)."""
        return packed_column_counts(reports, self.d)

    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def output_alphabet_size(self) -> int:
        return 1 << self.d if self.d < 64 else 1 << 64

    def _enumerate_channel(self) -> Channel:
        p, q = self.p_star_exact, self.q_star_exact
        outputs = bit_vector_outputs(self.d)
        return Channel(outputs=outputs, matrix=tuple(bit_vector_row(outputs, {x}, p, q) for x in range(self.d)))

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        bits = np.unpackbits(reports, axis=1, count=self.d, bitorder="little").astype(np.int64)
        weights = 1 << np.arange(self.d - 1, -1, -1, dtype=np.int64)  # itertools.product order
        return bits @ weights

    def unpack(self, reports: np.ndarray) -> np.ndarray:
        """``(n, d)`` 0/1 array of the packed reports."""
        return np.unpackbits(self.validate_reports(reports), axis=1, count=self.d, bitorder="little")

    # -- poisoning: the report space seen by an attacker and by a per-report test ----------------
    def support_law(self) -> tuple[Fraction, Fraction]:
        """Exact ``(p*, q*)``: given the user's item the ``d`` bits are independent, the own bit is 1
        with ``p*`` and every other bit with ``q*`` — so an honest report's number of ones is exactly
        ``Bernoulli(p*) + Binomial(d − 1, q*)``."""
        return self.p_star_exact, self.q_star_exact

    def support_matrix(self, reports: Any, items: Any) -> np.ndarray:
        """``(n, len(items))`` bool: bit ``items[j]`` of each report."""
        r = self.validate_reports(reports)
        it = np.asarray(items, dtype=np.int64).ravel()
        return ((r[:, it >> 3] >> (it & 7).astype(np.uint8)) & 1).astype(bool)

    def support_sizes(self, reports: Any) -> np.ndarray:
        """Number of ones of each report (``int64``), by a byte popcount table."""
        r = self.validate_reports(reports)
        return _POPCOUNT[r].sum(axis=1, dtype=np.int64)

    def max_gain_reports(self, targets: Any, m: int, *, rng: Any = None) -> np.ndarray:
        """``m`` fake reports of the maximal-gain attack for OUE (Cao, Jia, Gong, USENIX Security
        2021): every target bit set, plus ``l − r`` other bits drawn uniformly so the report has
        ``l = ⌊p* + (d − 1)q*⌋`` ones like a typical honest report (``r`` targets)."""
        t = np.unique(np.asarray(targets, dtype=np.int64).ravel())
        d, m = int(self.d), int(m)
        bits = np.zeros((m, d), dtype=np.uint8)
        bits[:, t] = 1
        extra = int(math.floor(self.p_star + (d - 1) * self.q_star)) - t.size
        if extra > 0:
            src = as_source(rng)
            others = np.setdiff1d(np.arange(d), t)
            keys = src.uniform_int(1 << 30, m * others.size).reshape(m, others.size)  # a uniform subset per row
            pick = np.argsort(keys, axis=1, kind="stable")[:, :extra]
            bits[np.arange(m)[:, None], others[pick]] = 1
        return np.packbits(bits, axis=1, bitorder="little")


@dataclass(frozen=True, kw_only=True)
class RAPPOR(UnaryEncoding):
    """k-RAPPOR / basic one-time RAPPOR (symmetric unary encoding), ``epsilon``-LDP per user.

    Each bit of the one-hot vector is kept with probability ``e^{ε/2}/(e^{ε/2} + 1)`` and flipped
    otherwise (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 14–15; Wang et al. (arXiv 2016) "BRR"). True bits *are* cleared with probability
    ``1/(e^{ε/2}+1)``. Runtime: client O(d) per user (≈ d bytes of randomness), server O(n·d/8).

    Proof: docs/proofs/unary.md

    >>> from ldp_plugin import RAPPOR
    >>> RAPPOR(epsilon=2.0, d=10).randomize([3, 4], rng=0).shape
    (2, 2)
    """

    name = "rappor"

    def _thresholds(self):
        L = exp_lower_bound(self.epsilon / 2)  # (ε/2 computed in floats is exact: a power-of-2 scale)
        tp = floor_threshold(L / (L + 1))
        return tp, TWO64 - tp


@dataclass(frozen=True, kw_only=True)
class OUE(UnaryEncoding):
    """Optimized unary encoding: ``p = 1/2``, ``q = 1/(e^ε + 1)``; ``epsilon``-LDP per user.

    (Wang, Blocki, Li, Jha 2017.) Same report format and cost as :class:`RAPPOR`, lower variance
    ``4 e^ε/(n (e^ε − 1)²)`` per item for rare items.

    Proof: docs/proofs/unary.md

    >>> from ldp_plugin import OUE
    >>> OUE(epsilon=1.0, d=16).p_star
    0.5
    """

    name = "oue"

    def _thresholds(self):
        L = exp_lower_bound(self.epsilon)
        return TWO64 // 2, ceil_threshold(1 / (L + 1))


@dataclass(frozen=True, kw_only=True)
class RUE(UnaryEncoding):
    """Re-optimized unary encoding (Further Study on Frequency Estimation under Local Differential
    Privacy, USENIX Security 2025): the unary encoding whose ``(p, q)`` minimize the **exact**
    squared error at a uniform distribution, frequency term included,
    ``[p(1−p) + (d−1)·q(1−q)] / (n (p−q)²)`` under ``p(1−q)/(q(1−p)) = e^ε``. With the odds
    ``p/(1−p) = 1/h`` and ``q/(1−q) = 1/(h e^ε)`` the minimum is at
    ``h = sqrt((d − 1 + e^{−ε}) / (d − 1 + e^ε))`` (OUE is ``h = 1``: it drops the frequency term);
    ``epsilon``-LDP per user. ``p`` is realized as ``floor(p·2^64)/2^64`` and ``q`` as the smallest
    threshold that keeps the exact ratio at most ``e^ε``.

    Proof: docs/proofs/unary.md

    >>> from ldp_plugin import RUE
    >>> round(RUE(epsilon=4.0, d=4).p_star, 3)
    0.814
    """

    name = "rue"

    def _thresholds(self):
        e = math.exp(self.epsilon)
        h = math.sqrt((self.d - 1 + 1 / e) / (self.d - 1 + e))
        tp = floor_threshold(Fraction(1 / (h + 1)))
        P, L = Fraction(tp, TWO64), exp_lower_bound(self.epsilon)
        return tp, ceil_threshold(P / (P + (1 - P) * L))  # q >= p/(p + (1−p)e^ε): ratio <= e^ε


def _the_probs(epsilon: float, theta: float) -> tuple[float, float]:
    """THE's per-bit probabilities: ``P(1 | bit 1) = 1 − ½e^{−ε(1−θ)/2}``, ``P(1 | bit 0) = ½e^{−εθ/2}``."""
    return 1 - 0.5 * math.exp(-epsilon * (1 - theta) / 2), 0.5 * math.exp(-epsilon * theta / 2)


def the_optimal_threshold(epsilon: float) -> float:
    """The threshold θ ∈ (1/2, 1) minimising THE's rare-item variance ``q(1−q)/(p−q)²``
    (Wang et al. 2017 §4.3 optimise it numerically; golden-section search here)."""
    def var(t):
        p, q = _the_probs(epsilon, t)
        return q * (1 - q) / (p - q) ** 2

    return golden_section_min(var, 0.5, 1.0, iterations=100)


@dataclass(frozen=True, kw_only=True)
class THE(UnaryEncoding):
    """Thresholded histogram encoding (Wang, Blocki, Li, Jha 2017 §4.3), ``epsilon``-LDP per user.

    Each coordinate of the one-hot vector gets Laplace noise of scale ``2/ε`` (the histogram with
    two changed coordinates is ε-DP) and is reported as the bit "noisy value > θ": post-processing,
    so still ε-LDP. That is a unary encoding with ``p = 1 − ½e^{−ε(1−θ)/2}`` and
    ``q = ½e^{−εθ/2}``, sampled here directly from integer thresholds (no continuous noise); the
    realized ratio ``p(1−q)/((1−p)q)`` is checked ``<= e^ε`` exactly (it has slack:
    ``(2e^{ε/4} − 1)² <= e^ε`` at θ = 1/2). ``threshold=None`` picks the variance-optimal θ.

    Proof: docs/proofs/unary.md

    >>> from ldp_plugin import THE
    >>> m = THE(epsilon=2.0, d=8)
    >>> 0.5 < m.threshold < 1.0, m.realized_epsilon < 2.0
    (True, True)
    """

    name = "the"
    uses_full_budget: ClassVar[bool] = False  # thresholding Laplace noise is not tight
    threshold: Optional[float] = None

    def _validate_extra(self) -> None:
        t = self.threshold
        if t is None:
            t = the_optimal_threshold(self.epsilon)
        elif isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.5 <= float(t) < 1.0:
            raise LDPParameterError(f"threshold must be a number in [0.5, 1) (got {t!r})")
        object.__setattr__(self, "threshold", float(t))

    def _extra_params(self) -> dict:
        return {"threshold": self.threshold}

    def _thresholds(self):
        p, q = _the_probs(self.epsilon, self.threshold)
        return floor_threshold(Fraction(p)), ceil_threshold(Fraction(q))
