"""The k-subset mechanism (Wang et al. (arXiv 2016), Wang et al. 2016).

Output: a size-``k`` subset ``Z`` of the ``d`` items with (eq. 5)

    Q(Z | x) ∝ e^ε if x ∈ Z, 1 otherwise.

Sampler (Alg. 1): with probability ``g = k e^ε/(k e^ε + d − k)`` the report contains ``x`` plus
``k − 1`` items drawn uniformly without replacement from the other ``d − 1``; otherwise ``k``
items from the other ``d − 1``. The inclusion event is a 64-bit integer threshold
``T = floor(2**64 · k L/(k L + d − k))`` (``L`` a certain lower bound of ``e^ε``), and the
subsets come from Floyd's algorithm on exact uniform draws
(:meth:`~ldp_plugin.sampling.RandomSource.sorted_subsets`: exactly uniform, O(k) per user
instead of Alg. 1's O(d)), so the realized channel is

    Q(Z | x) = ĝ / C(d−1, k−1) if x ∈ Z,  (1 − ĝ) / C(d−1, k) otherwise,   ĝ = T / 2**64,

with worst-case likelihood ratio ``ĝ/(1 − ĝ) · (d − k)/k <= L <= e^ε`` (checked exactly).
Reports are sorted, so their order reveals nothing.

Estimation (Alg. 2): count the reports containing each item; the shared pure estimator with
``p* = ĝ``, ``q* = (ĝ (k−1) + (1−ĝ) k)/(d−1)``. l2 error ``[g(1−g) + (d−1)h(1−h)]/(n (g−h)²)``
(§3.3). Sizes: ``k = "l2"`` (default, ``k#`` of Thm 3.1), ``k = "mi"`` (``k*`` of Thm 2.1), or any
integer in ``[1, d − 1]``.

Runtime: client O(k) exact draws and O(d/64) bitmap words per user (Floyd's algorithm,
:meth:`~ldp_plugin.sampling.RandomSource.sorted_subsets`); server O(n·k + d). Report: ``k`` sorted item codes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any, Union

import numpy as np

from .reports import ReportField
from .._errors import LDPInputError, LDPParameterError
from ..exact import TWO64, exp_lower_bound
from ..sampling.aggregate_kernels import sorted_rows_histogram
from ..theory import k_sharp, k_star
from .channel import Channel, floor_threshold
from ._base import FrequencyOracle

__all__ = ["KSubset"]

@dataclass(frozen=True, kw_only=True)
class KSubset(FrequencyOracle):
    """k-subset mechanism: report a size-k subset, weighted e^ε when it contains the user's item.

    Privacy: ``epsilon``-LDP per user (``max_divergence``; realized ratio checked exactly).
    Citation: Wang et al. (arXiv 2016) eq. 5, Alg. 1–2, Thm 2.1 (k*), Thm 3.1 (k#).

    Proof: docs/proofs/k-subset.md

    >>> from ldp_plugin import KSubset
    >>> m = KSubset(epsilon=1.0, d=16)          # k = k# = 4
    >>> m.k, m.randomize([0, 5, 9], rng=3).shape
    (4, (3, 4))
    """

    name = "k-subset"
    client_cost, server_cost = "O(k)", "O(n·k + d)"

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """The optimal subset size, when it is above 1 (``k = 1`` is k-RR itself)."""
        k = cls(epsilon=epsilon, d=d).k if d >= 3 else 1
        return ({"k": k},) if k > 1 else ()

    k: Union[int, str] = "l2"
    include_threshold: int = field(init=False, repr=False, compare=False)

    def _validate_extra(self) -> None:
        k = self.k
        if isinstance(k, str):
            if k == "l2":
                k = k_sharp(self.d, self.epsilon)
            elif k == "mi":
                k = k_star(self.d, self.epsilon)
            else:
                raise LDPParameterError(f"k must be an integer in [1, d-1] or 'l2' or 'mi' (got {k!r})")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise LDPParameterError(f"k must be an integer in [1, d-1] or 'l2' or 'mi' (got type {type(k).__name__})")
        k = int(k)
        if not 1 <= k <= self.d - 1:
            raise LDPParameterError(f"k must be an integer in [1, d-1] = [1, {self.d - 1}] (got {k})")
        object.__setattr__(self, "k", k)

    def _extra_params(self) -> dict:
        return {"k": self.k}

    def _realize(self):
        d, k = self.d, self.k
        L = exp_lower_bound(self.epsilon)
        T = floor_threshold(k * L / (k * L + d - k))
        object.__setattr__(self, "include_threshold", T)
        g = Fraction(T, TWO64)
        q = (g * (k - 1) + (1 - g) * k) / (d - 1)
        if not 0 < g < 1:
            return g, q, Fraction(0)
        return g, q, g / (1 - g) * Fraction(d - k, k)

    #: a uniform k-subset, the own item kept with the exact rate p* (closed form in choose)
    channel_shape = "subset"

    def _report_dtype(self):
        return np.uint16 if self.d <= 1 << 16 else np.uint32

    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        include = source.bernoulli(self.include_threshold, codes.size)
        return source.sorted_subsets(codes, include, self.d, self.k)

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", self.k, "sorted", self.d),)

    def _from_columns(self, cols: dict):
        return np.asarray(cols["report"]).astype(np.int64)

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != self.k or arr.dtype.kind not in "iu":
            raise LDPInputError(f"k-subset reports must be an (n, {self.k}) integer array")
        if arr.size and (arr.min() < 0 or arr.max() >= self.d):
            raise LDPInputError(f"k-subset reports must hold item codes in [0, {self.d})")
        if self.k > 1 and arr.size and (np.diff(arr.astype(np.int64), axis=1) <= 0).any():
            raise LDPInputError("k-subset reports must be strictly increasing within each row")
        return arr

    def supports(self, output: tuple, item: int) -> bool:
        """Whether a channel output supports ``item``: the reported subset holds it."""
        return item in output

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        return np.bincount(reports.ravel(), minlength=self.d).astype(np.int64)

    def count_reports(self, reports: Any) -> tuple:
        """The checks of :meth:`validate_reports` (same errors) and the counts of
        :meth:`support_counts` in one pass over the batch (:func:`sorted_rows_histogram`)."""
        if type(self).validate_reports is not KSubset.validate_reports or type(self).support_counts is not KSubset.support_counts:
            return super().count_reports(reports)  # a subclass with its own check or count
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != self.k or arr.dtype.kind not in "iu":
            raise LDPInputError(f"k-subset reports must be an (n, {self.k}) integer array")
        counts, flags = sorted_rows_histogram(arr, self.d)
        if flags & 1:
            raise LDPInputError(f"k-subset reports must hold item codes in [0, {self.d})")
        if flags & 2 and self.k > 1:
            raise LDPInputError("k-subset reports must be strictly increasing within each row")
        return counts, int(arr.shape[0])

    def n_reports(self, reports: np.ndarray) -> int:
        return int(reports.shape[0])

    def output_alphabet_size(self) -> int:
        return comb(self.d, self.k)

    def _enumerate_channel(self) -> Channel:
        d, k = self.d, self.k
        g = self.p_star_exact
        pin = g / comb(d - 1, k - 1)
        pout = (1 - g) / comb(d - 1, k)
        outputs = tuple(itertools.combinations(range(d), k))
        rows = tuple(tuple(pin if x in z else pout for z in outputs) for x in range(d))
        return Channel(outputs=outputs, matrix=rows)

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        """Rank of each sorted report in ``itertools.combinations(range(d), k)`` order (vectorized:
        ``Σ_i Σ_{prev_i < j < c_i} C(d−1−j, k−1−i)``, from a cumulative table)."""
        d, k = self.d, self.k
        if comb(d, k) >= 1 << 62:
            raise LDPParameterError("output_index is limited to fewer than 2**62 subsets")
        cum = np.zeros((k, d + 1), dtype=np.int64)
        for i in range(k):
            cum[i, 1:] = np.cumsum([comb(d - 1 - j, k - 1 - i) for j in range(d)])
        r = np.asarray(reports, dtype=np.int64)
        prev = np.concatenate([np.full((r.shape[0], 1), -1, dtype=np.int64), r[:, :-1]], axis=1)
        rows = np.arange(k)[None, :]
        return (cum[rows, r] - cum[rows, prev + 1]).sum(axis=1)

    def _report_of_one(self, reports):
        codes = tuple(int(v) for v in reports[0])
        return codes if self.categories is None else tuple(self.categories[c] for c in codes)
