"""The server side of the cohort mechanisms: the mergeable cell counts and the two candidate
decoders (least squares, Kairouz, Bonawitz & Ramage (ICML 2016) eq. 20–22; the streamed sketch decoder of
:mod:`ldp_plugin.estimation.sketch`)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from ..._errors import LDPInputError, LDPParameterError, UnderdeterminedWarning
from ...estimation import FrequencyEstimate, check_postprocess, finalize_estimate, least_squares_decode
from ...estimation.sketch import choose_decoder, sketch_decode
from ..mixins import MergeableCounts
from .design import DENSE_LIMIT, design_rank, needed_rank, rank_bound, rank_deficient_error

__all__ = ["CohortAccumulator", "OTHER", "DENSE_LIMIT", "MAX_DENSE", "DECODERS"]

#: The label of the estimated total mass of items outside an open alphabet's candidates.
OTHER = "<other>"
#: The least-squares decoder's ``S × S`` matrix is refused above this many candidates.
MAX_DENSE = 8192
DECODERS = ("auto", "least-squares", "sketch")


class CohortAccumulator(MergeableCounts):
    """Mergeable server state of a cohort mechanism: ``(C, k)`` int64 cell counts and cohort sizes."""

    def __init__(self, mechanism: Any):
        self.mechanism = mechanism
        self.counts = np.zeros((mechanism.cohorts, mechanism.k), dtype=np.int64)
        self.n_c = np.zeros(mechanism.cohorts, dtype=np.int64)

    @property
    def n(self) -> int:
        return int(self.n_c.sum())

    def add_histogram(self, columns: dict, weights: Any) -> "CohortAccumulator":
        """Add reports given as distinct (cohort, report) pairs with their counts."""
        m = self.mechanism
        cohort = np.asarray(columns["cohort"]).astype(np.int64)
        value = np.asarray(columns["report"]).astype(np.int64)
        w = np.asarray(weights, dtype=np.int64)
        if cohort.size and (cohort.min() < 0 or cohort.max() >= m.cohorts or value.min() < 0 or value.max() >= m.k):
            raise LDPInputError("reports outside the mechanism's cohorts or cells")
        self.counts += m.histogram_cell_counts(cohort, value, w)
        self.n_c += np.bincount(cohort, weights=w, minlength=m.cohorts).astype(np.int64)
        return self

    def add(self, reports: Any) -> "CohortAccumulator":
        r = self.mechanism.validate_reports(reports)
        self.counts += self.mechanism.cell_counts(r)
        self.n_c += np.bincount(r.cohort.astype(np.int64), minlength=self.mechanism.cohorts)
        return self

    _summed = ("counts", "n_c")

    def estimate(
        self,
        *,
        candidates: Any = None,
        other: bool = True,
        postprocess: str = "projection",
        confidence: float = 0.95,
        total: float = 1.0,
        decoder: str = "auto",
    ) -> FrequencyEstimate:
        """Estimate over the closed domain, or over ``candidates`` (open alphabet).

        ``decoder``: ``"least-squares"`` (the weighted least squares of Kairouz, Bonawitz & Ramage (ICML 2016) eq. 20–22 with
        model standard errors; ``S × S`` memory), ``"sketch"`` (streamed, bounded memory, errors
        from the spread over cohorts: :mod:`ldp_plugin.estimation.sketch`) or ``"auto"``
        (the one of smaller predicted error: :func:`~ldp_plugin.estimation.sketch.choose_decoder`).

        Open alphabets also estimate :data:`OTHER`, the total frequency of all non-candidate
        items (``other=True``, the default): without it their mass biases the candidates
        that share hash cells with them."""
        check_postprocess(postprocess, confidence)
        if not isinstance(other, (bool, np.bool_)):
            raise LDPParameterError(f"other must be True or False (got type {type(other).__name__})")
        if decoder not in DECODERS:
            raise LDPParameterError(f"decoder must be one of {DECODERS} (got {decoder!r})")
        if self.n == 0:
            raise LDPParameterError("an estimate needs at least one report (n >= 1)")
        m = self.mechanism
        keys, items = m.candidate_keys(candidates)
        S = len(items)
        active = int((self.n_c > 0).sum())
        if decoder == "auto":
            decoder = choose_decoder(m, self.n_c, S, DENSE_LIMIT)
        if decoder == "sketch":

            if not m.closed and OTHER in items:
                raise LDPParameterError(f"candidates must not contain the reserved label {OTHER!r}")
            z, p, q, _, _ = m.cell_statistic(self.counts, self.n_c)
            raw, se = sketch_decode(m, z, self.n_c, lambda idx: m.covers_of(keys, idx), S, p=p, q=q)
            if m.closed or not other:
                raw, se = raw[:S], se[:S]
            else:
                items = (*items, OTHER)
            return finalize_estimate(raw, se, self.n, postprocess=postprocess, confidence=confidence, items=items, total=total)
        if S > MAX_DENSE:
            raise LDPParameterError(
                f"least-squares decoding holds an S x S matrix: at most {MAX_DENSE} candidates (got {S}); use decoder='sketch'"
            )
        # least squares identifies what the cells' design has rank for (the streamed sketch decoder
        # above instead averages collisions out over many cohorts, its errors from their spread)
        unknowns = S + (1 if not m.closed and other and not m.signed else 0)  # + an unsigned open alphabet's outside mass
        need = needed_rank(unknowns, m.known_total)
        bound = min(rank_bound(m.k, m.cohorts, m.hashes_per_item, m.signed), unknowns)
        what = f"its d={S} items" if m.closed else f"{S} candidates" + (" and the mass outside them" if unknowns > S else "")
        if bound < need:  # the counting bound: refused before the S x S work
            self._underdetermined(unknowns, bound, what, m.cohorts)
        pos, signs = m.covers_of(keys, np.arange(S))
        uniform, other_sum = None, False
        if not m.closed and other:
            if OTHER in items:
                raise LDPParameterError(f"candidates must not contain the reserved label {OTHER!r}")
            if signs is None:  # unsigned: the outside mass is one more unknown, spread evenly
                uniform = m.hashes_per_item / m.k
            else:  # signed: it averages out of the cells; report 1 − Σ θ̂ with its error
                other_sum = True
            items = (*items, OTHER)
        z, p, q, cov, noise = m.cell_statistic(self.counts, self.n_c)
        raw, se, rank = least_squares_decode(
            z, self.n_c, p, q, pos, covariance=cov, uniform_weight=uniform, noise=noise, signs=signs, other_sum=other_sum,
            total=1.0 if m.known_total else None,
        )
        deficient = False
        if need > rank:  # the design itself, or only cohorts left empty by a small batch (not refused)?
            full = rank if active == m.cohorts else design_rank(m, pos, signs, uniform)
            if full < need:
                deficient = True
                self._underdetermined(unknowns, full, what, m.cohorts)
        est = finalize_estimate(raw, se, self.n, postprocess=postprocess, confidence=confidence, items=items, total=total)
        return self._flagged(est, total) if deficient or bound < need else est

    def _underdetermined(self, unknowns: int, rank: int, what: str, active: int) -> None:
        """Refuse a rank-deficient decode, or (``underdetermined=True``) warn loudly."""
        m = self.mechanism
        err = rank_deficient_error(m, unknowns, rank, what, active)
        if not m.underdetermined:
            raise err
        warnings.warn(f"{err} — underdetermined=True: every interval widened to the whole range", UnderdeterminedWarning, stacklevel=3)

    @staticmethod
    def _flagged(est: FrequencyEstimate, total: float) -> FrequencyEstimate:
        """An underdetermined estimate: its intervals cannot be trusted, so they span ``[0, total]``."""
        lo = np.zeros_like(est.ci_lower)
        return dataclasses.replace(est, ci_lower=lo, ci_upper=np.full_like(est.ci_upper, float(total)))

    def __repr__(self) -> str:
        return f"CohortAccumulator({self.mechanism.name}, k={self.mechanism.k}, cohorts={self.mechanism.cohorts}, n={self.n})"
