"""Diagnostics of heavy-hitter discovery (as google/rappor's decoder states them): per-item
p-values and intervals, Bonferroni or Benjamini–Hochberg controlled selection, the minimum
detectable frequency announced before collection, allocated and missing mass, and the result type."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..estimation.sketch import MIN_COHORTS, predicted_variances
from ..mechanisms.domain import check_epsilon
from .prefix import DEFAULT_ALPHABET, PrefixCodec


@dataclass(frozen=True, kw_only=True)
class DiscoveryOptions:
    """What every discovery query shares (PEM/TreeHist, SFP): the budget per user, how many items
    to return, the public alphabet and longest string, the oracles' cohorts and hash seed, and the
    selection (``alpha``, ``"bh"``/``"bonferroni"``) and interval ``confidence``."""

    epsilon: float
    top_k: int = 20
    alphabet: str = DEFAULT_ALPHABET
    max_length: int = 10
    cohorts: int = 256
    hash_seed: int = 0
    alpha: float = 0.05
    selection: str = "bh"
    confidence: float = 0.95
    unselected: bool = False
    domain_source: str = field(default="given", compare=False)

    def _check_shared(self) -> None:
        """Check (and normalize) the shared options; sets ``codec`` (each query declares it)."""
        set_ = lambda name, v: object.__setattr__(self, name, v)  # noqa: E731
        set_("epsilon", check_epsilon(self.epsilon))
        check_selection(self)
        set_("codec", PrefixCodec(self.alphabet, self.max_length))
        set_("top_k", positive_int(self.top_k, "top_k", 1, 10_000))
        set_("cohorts", positive_int(self.cohorts, "cohorts", 1, 1 << 20))
        if not isinstance(self.unselected, bool):
            raise LDPParameterError(f"unselected must be True or False (got {self.unselected!r})")


def positive_int(value: Any, name: str, lo: int, hi: int) -> int:
    """``value`` as an int, refused (naming ``name`` and the range) unless an integer in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= int(value) <= hi:
        raise LDPParameterError(f"{name} must be an integer in [{lo}, {hi}] (got {value!r})")
    return int(value)

__all__ = ["select", "p_values", "HeavyHitters", "SELECTIONS"]

SELECTIONS = ("bh", "bonferroni")
_N = NormalDist()


def p_values(estimate: np.ndarray, std_error: np.ndarray) -> np.ndarray:
    """One-sided p-values of ``H0: frequency = 0`` against ``> 0`` (normal approximation)."""
    z = np.asarray(estimate, dtype=np.float64) / np.maximum(np.asarray(std_error, dtype=np.float64), 1e-300)
    return np.array([1.0 - _N.cdf(float(v)) for v in z])


def select(p: np.ndarray, alpha: float, method: str = "bh", tests: Optional[int] = None) -> np.ndarray:
    """Discoveries among ``p`` at level ``alpha``: ``"bonferroni"`` (family-wise error ≤ α over
    ``tests`` hypotheses, ``len(p)`` by default) or ``"bh"`` (Benjamini–Hochberg step-up: false
    discovery rate ≤ α for independent or positively dependent tests)."""
    if method not in SELECTIONS:
        raise LDPParameterError(f"selection must be one of {SELECTIONS} (got {method!r})")
    if not (isinstance(alpha, float) and 0.0 < alpha < 1.0):
        raise LDPParameterError(f"alpha must be a float in (0, 1) (got {alpha!r})")
    p = np.asarray(p, dtype=np.float64)
    m = max(int(tests if tests is not None else p.size), 1)
    if method == "bonferroni":
        return p <= alpha / m
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    ok = np.flatnonzero(ranked <= alpha * np.arange(1, p.size + 1) / m)
    out = np.zeros(p.size, dtype=bool)
    if ok.size:
        out[order[: ok[-1] + 1]] = True
    return out


@dataclass(frozen=True)
class HeavyHitters:
    """A discovery's result. ``items`` are the returned strings (best first) with ``estimate``
    (unbiased; may be negative for a weak item), ``std_error``, the normal ``ci_lower``/``ci_upper``
    (clipped to [0, 1]; FCR-adjusted for the selected items: ``extra["interval_method"]``), the
    one-sided ``p_value`` and ``significant`` (selected by ``selection`` at ``alpha`` among every
    tested candidate). Only selected items are returned unless the query asks for ``unselected``.

    ``allocated_mass`` is the estimated total frequency of the significant items, ``missing_mass``
    ``1 − allocated_mass``; ``min_detectable_frequency`` is the frequency at which a string is
    returned with probability ≥ ½ through every stage it must pass (announced before collection by
    :meth:`~ldp_plugin.discovery.PrefixDiscovery.min_detectable_frequency`; NaN — ``None`` in
    :meth:`to_dict` — for the demoted SFP, which announces none); ``levels`` one row per
    level and one for the held-out group (prefix length, users, candidates, survivors, seconds);
    ``epsilon`` what each user spent; ``extra`` states ``interval_method``, ``privacy_unit``,
    ``alphabet``, ``max_length`` and ``domain_source`` (given, or read from the data)."""

    items: tuple
    estimate: np.ndarray
    std_error: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray
    p_value: np.ndarray
    significant: np.ndarray
    n: int
    epsilon: float
    method: str
    confidence: float
    alpha: float
    selection: str
    allocated_mass: float
    missing_mass: float
    min_detectable_frequency: float
    levels: tuple = ()
    extra: dict = field(default_factory=dict)

    def to_polars(self):
        import polars as pl

        return pl.DataFrame(
            {
                "item": list(self.items),
                "estimate": self.estimate,
                "std_error": self.std_error,
                "ci_lower": self.ci_lower,
                "ci_upper": self.ci_upper,
                "p_value": self.p_value,
                "significant": self.significant,
            },
            schema={"item": pl.String, "estimate": pl.Float64, "std_error": pl.Float64, "ci_lower": pl.Float64,
                    "ci_upper": pl.Float64, "p_value": pl.Float64, "significant": pl.Boolean},
        )

    def to_dict(self) -> dict:
        rows = [
            {
                "item": it,
                "estimate": float(e),
                "std_error": float(s),
                "ci_lower": float(lo),
                "ci_upper": float(hi),
                "p_value": float(p),
                "significant": bool(sig),
            }
            for it, e, s, lo, hi, p, sig in zip(self.items, self.estimate, self.std_error, self.ci_lower, self.ci_upper, self.p_value, self.significant)
        ]
        return {
            "items": rows,
            "n": self.n,
            "epsilon_per_user": self.epsilon,
            "method": self.method,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "selection": self.selection,
            "allocated_mass": self.allocated_mass,
            "missing_mass": self.missing_mass,
            "min_detectable_frequency": None if math.isnan(self.min_detectable_frequency) else self.min_detectable_frequency,
            "levels": [dict(r) for r in self.levels],
            **self.extra,
        }


def intervals(estimate: np.ndarray, se: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    z = _N.inv_cdf(0.5 + confidence / 2)
    return np.clip(estimate - z * se, 0.0, 1.0), np.clip(estimate + z * se, 0.0, 1.0)


def detectable(sd: float, alpha: float, tests: int, selection: str) -> float:
    """The frequency selected with probability ½: the Bonferroni critical value ``z_{1−α/M}·sd``
    (BH selects at least what Bonferroni selects, so this bounds its threshold from above)."""
    del selection
    return float(_N.inv_cdf(1.0 - alpha / max(int(tests), 1)) * sd)


def pooled(values: list[tuple[float, float]]) -> tuple[float, float]:
    """Inverse-variance pooling of independent ``(estimate, std_error)`` pairs."""
    v = np.array(values, dtype=np.float64)
    w = 1.0 / np.maximum(v[:, 1] ** 2, 1e-300)
    est = float((w * v[:, 0]).sum() / w.sum())
    return est, float(np.sqrt(1.0 / w.sum()))


def check_selection(query: Any) -> None:
    """The selection settings every discovery query shares: ``selection``, ``alpha``, ``confidence``."""
    if query.selection not in SELECTIONS:
        raise LDPParameterError(f"selection must be one of {SELECTIONS} (got {query.selection!r})")
    for name in ("alpha", "confidence"):
        v = getattr(query, name)
        if not (isinstance(v, float) and 0.0 < v < 1.0):
            raise LDPParameterError(f"{name} must be a float in (0, 1) (got {v!r})")


def discovery_decoder(accumulator: Any) -> str:
    """The decoder for discovery's candidates: they never cover the data (most strings are not
    candidates, and some uncovered ones are heavy), and least squares' model errors spread the
    uncovered mass evenly over the cells, so they miss its collisions (SFP's word estimates had
    z-scores of sd 1.26 on some seeds). The streamed sketch decoder takes its errors from the spread
    over cohorts, which includes them: it is used whenever there are enough cohorts."""
    return "sketch" if int((accumulator.n_c > 0).sum()) >= MIN_COHORTS else "auto"


def null_std_error(accumulator: Any) -> float:
    """The least standard error a candidate's streamed-sketch estimate is given: a light item's
    predicted randomization error, ``√(cell_variance / (n·h·(1 − h/k)²))``
    (:func:`~ldp_plugin.estimation.sketch.predicted_variances`); ``0`` when least squares decodes
    (its model errors are not estimated per candidate).

    The sketch decoder estimates each candidate's variance from the spread of its ``C`` per-cohort
    estimates, so the estimate is itself noisy (relative sd ≈ ``1/√(2(C − 1))``: ±4.4% at 256
    cohorts) and ``estimate / se`` has Student-t tails with ``C − 1`` degrees of freedom: at the
    z ≈ 4.5 where a selection over tens of thousands of candidates sits, ``t_255`` exceeds it 1.5×
    as often as the normal the p-values assume, and the selection picks exactly the nulls whose
    spread came out small. No candidate's estimate is less noisy than the randomization alone, so
    flooring the spread at this prediction removes that selection effect and only ever widens an
    interval (the spread still covers the collisions above it)."""
    if discovery_decoder(accumulator) != "sketch":
        return 0.0
    active = int((accumulator.n_c > 0).sum())
    return float(np.sqrt(predicted_variances(accumulator.mechanism, accumulator.n, 1, active)[1]))


#: Fewest light candidates (within 2 standard errors of zero) whose median error sets the floor.
LIGHT_MIN = 64


def light_std_error(estimate: np.ndarray, std_error: np.ndarray, floor: float) -> float:
    """The standard error every candidate of one decode is given at least: the larger of ``floor``
    (:func:`null_std_error`) and the median cohort-spread error of the light candidates (those
    within 2 standard errors of zero; used when there are at least :data:`LIGHT_MIN`). Every light
    candidate's estimate has about the same variance — the randomization's plus the collisions
    with the rest of the data, which the prediction leaves out (30% more on skewed data at 2·10^4
    users) — so their median is a precise estimate of it (one number from thousands of spreads)
    where each candidate's own spread is off by ±4.4% at 256 cohorts."""
    if floor <= 0.0:
        return 0.0
    light = np.abs(estimate) < 2.0 * std_error
    if int(light.sum()) >= LIGHT_MIN:
        floor = max(floor, float(np.median(std_error[light])))
    return floor


def decode(accumulator: Any, candidates: list, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """``(estimate, std_error)`` of the ``candidates`` from one group's reports: the
    :func:`discovery_decoder`, its standard errors floored at :func:`light_std_error`."""
    est = accumulator.estimate(candidates=candidates, postprocess="none", confidence=confidence, decoder=discovery_decoder(accumulator))
    S = len(candidates)
    raw, se = np.asarray(est.raw[:S], dtype=np.float64), np.asarray(est.std_error[:S], dtype=np.float64)
    return raw, np.maximum(se, light_std_error(raw, se, null_std_error(accumulator)))


def cell_sd(mechanism: Any, n: float) -> float:
    """Standard error of one light item's read-out from ``n`` reports of a hashed oracle (its
    single-cell variance per report, ``cell_variance()``)."""
    return float(np.sqrt(mechanism.cell_variance() / n))


#: How the returned intervals are made (stated in every result: ``interval_method``).
INTERVAL_METHOD = (
    "estimates from users not involved in selecting the item (later levels and the held-out group); "
    "selected items: Benjamini-Yekutieli (2005) FCR-adjusted intervals at level 1 - R(1 - confidence)/m; "
    "unselected items (listed only with unselected=True): marginal intervals"
)
#: The privacy unit (stated in every result: ``privacy_unit``).
PRIVACY_UNIT = "one user: each user is assigned to one group (one level or the held-out group) and sends one report"


def fcr_confidence(confidence: float, selected: int, tests: int) -> float:
    """Benjamini & Yekutieli (JASA 2005, §2) FCR-adjusted level for ``selected`` of ``tests``
    parameters: ``1 − R·(1 − confidence)/m`` (the false coverage-statement rate among the selected
    is then at most ``1 − confidence`` for independent estimates)."""
    return 1.0 - max(selected, 1) * (1.0 - confidence) / max(tests, 1)


def result(
    query: Any, labels: list, estimate: np.ndarray, se: np.ndarray, n: int, levels: list, *,
    interval_method: str = INTERVAL_METHOD, privacy_unit: str = PRIVACY_UNIT,
) -> HeavyHitters:
    """The result of a discovery over its tested candidates ``labels``: selection over all of them
    at ``alpha``, the selected ones returned by their FCR lower bound, largest first (at most ``top_k``; with
    ``query.unselected`` the ``top_k`` largest, the unselected marked), FCR-adjusted intervals for
    the selected (:func:`fcr_confidence`) and marginal ones for the rest."""
    estimate = np.asarray(estimate, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    p = p_values(estimate, se)
    sig = select(p, query.alpha, query.selection) if len(labels) else np.zeros(0, dtype=bool)
    m, R = len(labels), int(sig.sum())
    level = fcr_confidence(query.confidence, R, m)
    # selected first, ranked by their (unclipped) FCR lower bound: the frequency each is most surely
    # above, so a noisy estimate from few users does not outrank a precise one; then the rest by estimate
    lower = estimate - _N.inv_cdf(0.5 + level / 2) * se
    order = np.lexsort((-estimate, -np.where(sig, lower, -np.inf)))
    top = (order if query.unselected else order[sig[order]])[: query.top_k]
    lo_s, hi_s = intervals(estimate[top], se[top], level)
    lo_m, hi_m = intervals(estimate[top], se[top], query.confidence)
    lo, hi = np.where(sig[top], lo_s, lo_m), np.where(sig[top], hi_s, hi_m)
    allocated = float(np.clip(estimate[sig], 0.0, None).sum())
    return HeavyHitters(
        items=tuple(labels[i] for i in top), estimate=estimate[top], std_error=se[top], ci_lower=lo, ci_upper=hi, p_value=p[top],
        significant=sig[top], n=n, epsilon=query.epsilon, method=query.method, confidence=query.confidence, alpha=query.alpha,
        selection=query.selection, allocated_mass=allocated, missing_mass=1.0 - allocated,
        min_detectable_frequency=query.min_detectable_frequency(max(n, 1)), levels=tuple(levels),
        extra={"discoveries": R, "final_candidates": m, "selected_interval_confidence": level, "interval_method": interval_method,
               "privacy_unit": privacy_unit, "alphabet": query.alphabet, "max_length": query.max_length,
               "domain_source": query.domain_source,
               "returned": "selected and unselected (marked)" if query.unselected else "selected only (top_k is a maximum)"},
    )
