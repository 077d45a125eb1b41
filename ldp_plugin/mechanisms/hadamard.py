"""Hadamard response (Acharya, Sun, Zhang, *Hadamard response: estimating distributions
privately, efficiently, and with little communication*, AISTATS 2019).

Let ``K`` be the smallest power of two with ``K >= d + 1`` and ``H`` the ``K × K`` Sylvester
Hadamard matrix, ``H[i][y] = (−1)^popcount(i & y)``. Item ``x`` owns the set
``C_x = {y : H[x + 1][y] = +1}`` of ``K/2`` outputs (row 0, all ones, is skipped).

* Client: with probability ``p_in = e^ε/(e^ε + 1)`` output a uniform element of ``C_x``, else a
  uniform element of its complement. Sampling: a Bernoulli(``p_in``) from an integer threshold and
  a uniform ``y`` in ``[0, K)`` (``log2 K`` exact random bits); if ``y`` is on the wrong side,
  flip the lowest set bit of ``x + 1`` in ``y`` — a bijection between ``C_x`` and its complement,
  so the result is exactly uniform on the chosen side.
* Realized channel: ``P(y | x) = p_in/(K/2)`` on ``C_x``, ``(1 − p_in)/(K/2)`` off it; worst-case
  ratio ``p_in/(1 − p_in) = T/(2**64 − T) <= e^ε`` (checked exactly).
* Support: ``y`` supports ``v`` iff ``y ∈ C_v``; ``p* = p_in``, ``q* = 1/2`` exactly (rows of
  ``H`` agree on exactly ``K/4`` of each side). The shared estimator gives
  ``θ̂_v = 2(c_v/n − 1/2)/(2p_in − 1)``; variance ``≈ (e^ε + 1)²/(4 n (e^ε − 1)²)`` per item.
* Report: one ``uint32`` (``log2 K`` bits). Server: a histogram of the ``n`` reports and one fast
  Walsh–Hadamard transform, ``O(n + K log K)``: ``c_v = (n + (H·hist)[v + 1])/2``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..exact import TWO64, exp_lower_bound
from ..sampling.aggregate_kernels import bounded_histogram
from .channel import Channel, floor_threshold
from ._base import FrequencyOracle

__all__ = ["HadamardResponse", "HadamardMechanism", "fast_walsh_hadamard", "parity"]


#: the largest domain of the Hadamard oracles: ``K = 2^31`` columns, whose reports (``y``, or
#: ``2j + b`` for the mechanism) still fit the ``uint32`` report column
MAX_HADAMARD_D = (1 << 31) - 1


def _check_size(d: int, name: str) -> None:
    if d > MAX_HADAMARD_D:
        raise LDPParameterError(f"d must be an integer in [2, 2^31 - 1] for {name} (got {d}): its reports are uint32 codes of 2^31 transform columns")


def parity(v: np.ndarray) -> np.ndarray:
    """``popcount(v) mod 2`` elementwise (``H[i][y] = (−1)^parity(i & y)``), as ``uint8``."""
    return (np.bitwise_count(v) & 1).astype(np.uint8)


def fast_walsh_hadamard(a: np.ndarray) -> np.ndarray:
    """``H·a`` along the last axis for the Sylvester Hadamard matrix of that size (a power of two),
    in int64, O(K log K) per row."""
    a = np.array(a, dtype=np.int64, copy=True, order="C")
    K = a.shape[-1]
    h = 1
    while h < K:
        v = a.reshape(-1, 2, h)  # blocks of 2h never straddle two rows: K is a multiple of 2h
        x, y = v[:, 0, :].copy(), v[:, 1, :]
        v[:, 0, :] += y
        v[:, 1, :] = x - y
        h *= 2
    return a


@dataclass(frozen=True, kw_only=True)
class HadamardResponse(FrequencyOracle):
    """Hadamard response over ``d`` categories, ``epsilon``-LDP per user.

    Privacy: ``max_divergence``, ``ε`` per user (realized ratio ``T/(2**64 − T) <= e^ε``, exact).
    Citation: Acharya, Sun, Zhang 2019, §4 (HR for high privacy). Runtime: client O(1);
    server O(n + K log K). Report: one ``uint32`` in ``[0, K)``.

    Proof: docs/proofs/hadamard.md

    >>> from ldp_plugin import HadamardResponse
    >>> m = HadamardResponse(epsilon=1.0, d=6)
    >>> m.K, m.q_star
    (8, 0.5)
    """

    name = "hadamard"
    client_cost, server_cost = "O(1)", "O(n + d log d)"
    in_threshold: int = field(init=False, repr=False, compare=False)
    K: int = field(init=False, compare=False)

    histogram_columns = ("report",)

    def _realize(self):
        _check_size(self.d, self.name)
        object.__setattr__(self, "K", 1 << self.d.bit_length())  # smallest power of 2 > d
        L = exp_lower_bound(self.epsilon)
        T = floor_threshold(L / (L + 1))
        object.__setattr__(self, "in_threshold", T)
        p = Fraction(T, TWO64)
        return p, Fraction(1, 2), Fraction(T, TWO64 - T)

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        n = codes.size
        row = (codes + 1).astype(np.uint32)
        inside = source.bernoulli(self.in_threshold, n)
        y = source.uniform_int(self.K, n).astype(np.uint32)
        wrong = parity(row & y) != (~inside).astype(np.uint8)  # parity 0 <=> y in C_x
        y ^= np.where(wrong, row & (~row + np.uint32(1)), np.uint32(0))  # flip lowest set bit of x+1
        return y

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise LDPInputError("hadamard reports must be a 1-d integer array")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= self.K):
            raise LDPInputError(f"hadamard reports must be in [0, {self.K})")
        return arr

    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        hist = np.bincount(reports.astype(np.int64), minlength=self.K)
        t = fast_walsh_hadamard(hist)
        return ((reports.size + t[1 : self.d + 1]) // 2).astype(np.int64)

    def count_reports(self, reports: Any) -> tuple:
        """Range check and histogram of the K outputs in one pass (:func:`bounded_histogram`),
        then the Walsh–Hadamard transform: the counts of :meth:`support_counts`, exactly."""
        if type(self).validate_reports is not HadamardResponse.validate_reports or type(self).support_counts is not HadamardResponse.support_counts:
            return super().count_reports(reports)  # a subclass with its own check or count
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise LDPInputError("hadamard reports must be a 1-d integer array")
        hist = bounded_histogram(arr, self.K, message=f"hadamard reports must be in [0, {self.K})")
        t = fast_walsh_hadamard(hist)
        return ((arr.shape[0] + t[1 : self.d + 1]) // 2).astype(np.int64), int(arr.shape[0])

    def histogram_support_counts(self, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        hist = np.zeros(self.K, dtype=np.int64)
        np.add.at(hist, np.asarray(values, dtype=np.int64), np.asarray(weights, dtype=np.int64))
        t = fast_walsh_hadamard(hist)
        return ((int(hist.sum()) + t[1 : self.d + 1]) // 2).astype(np.int64)

    def output_alphabet_size(self) -> int:
        return self.K

    def _enumerate_channel(self) -> Channel:
        p = self.p_star_exact
        half = self.K // 2
        rows = []
        for x in range(self.d):
            rows.append(tuple((p if bin((x + 1) & y).count("1") % 2 == 0 else 1 - p) / half for y in range(self.K)))
        return Channel(outputs=tuple(range(self.K)), matrix=tuple(rows))

    def supports(self, output: int, item: int) -> bool:
        return bin((item + 1) & int(output)).count("1") % 2 == 0

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)


@dataclass(frozen=True, kw_only=True)
class HadamardMechanism(FrequencyOracle):
    """Hadamard mechanism (one randomized Hadamard coefficient per user; Bassily et al. 2017,
    pure-ldp's ``HadamardMechanism`` with t = 1), ``epsilon``-LDP per user.

    Client: a uniform column ``j ∈ [0, K)`` (``K`` the smallest power of two above ``d``) and the
    sign ``H[x + 1][j]``, kept with probability ``e^ε/(e^ε + 1)`` (Warner RR), else flipped. Report:
    ``2j + [sign = +1]`` (one ``uint32``). Realized channel ``P(j, b | x) = (p or 1 − p)/K``;
    worst-case ratio ``T/(2**64 − T) <= e^ε`` (exact). Support: report ``(j, b)`` supports ``v`` iff
    ``H[v + 1][j] = b``: ``p* = p``, ``q* = 1/2`` exactly (distinct rows agree on half the columns).
    Server: per-column signed sums and one fast Walsh–Hadamard transform, ``O(n + K log K)``.

    Proof: docs/proofs/hadamard.md

    >>> from ldp_plugin import HadamardMechanism
    >>> HadamardMechanism(epsilon=1.0, d=6).randomize([0, 5], rng=1).shape
    (2,)
    """

    name = "hadamard-mechanism"
    client_cost, server_cost = "O(1)", "O(n + d log d)"
    keep_threshold: int = field(init=False, repr=False, compare=False)
    K: int = field(init=False, compare=False)

    histogram_columns = ("report",)

    def _realize(self):
        _check_size(self.d, self.name)
        object.__setattr__(self, "K", 1 << self.d.bit_length())
        L = exp_lower_bound(self.epsilon)
        T = floor_threshold(L / (L + 1))
        object.__setattr__(self, "keep_threshold", T)
        return Fraction(T, TWO64), Fraction(1, 2), Fraction(T, TWO64 - T)

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        n = codes.size
        j = source.uniform_int(self.K, n).astype(np.uint32)
        plus = parity((codes + 1).astype(np.uint32) & j) == 0  # H[x+1][j] = +1
        keep = source.bernoulli(self.keep_threshold, n)
        return (j << np.uint32(1)) | (plus == keep).astype(np.uint32)  # sign kept iff keep

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise LDPInputError("hadamard-mechanism reports must be a 1-d integer array")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= 2 * self.K):
            raise LDPInputError(f"hadamard-mechanism reports must be in [0, {2 * self.K})")
        return arr

    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        return self.histogram_support_counts(reports, np.ones(reports.size, dtype=np.int64))

    def histogram_support_counts(self, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        r = np.asarray(values, dtype=np.int64)
        w = np.asarray(weights, dtype=np.int64)
        signed = np.zeros(self.K, dtype=np.int64)
        np.add.at(signed, r >> 1, (2 * (r & 1) - 1) * w)
        t = fast_walsh_hadamard(signed)
        return ((int(w.sum()) + t[1 : self.d + 1]) // 2).astype(np.int64)

    def output_alphabet_size(self) -> int:
        return 2 * self.K

    def _enumerate_channel(self) -> Channel:
        p = self.p_star_exact
        rows = []
        for x in range(self.d):
            row = []
            for y in range(2 * self.K):
                j, b = y >> 1, y & 1
                plus = bin((x + 1) & j).count("1") % 2 == 0
                row.append((p if plus == bool(b) else 1 - p) / self.K)
            rows.append(tuple(row))
        return Channel(outputs=tuple(range(2 * self.K)), matrix=tuple(rows))

    def supports(self, output: int, item: int) -> bool:
        j, b = int(output) >> 1, int(output) & 1
        return (bin((item + 1) & j).count("1") % 2 == 0) == bool(b)

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)
