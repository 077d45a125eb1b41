"""One estimator for every "pure" frequency oracle, and the post-processing steps.

A pure frequency oracle is a mechanism whose report *supports* a set of items such that

    P[report supports i | i is the user's item]     = p*
    P[report supports i | i is not the user's item] = q*

(k-RR, RAPPOR/SUE, OUE, k-subset; later OLH, Hadamard and the wheel). With ``c_i`` the number of
the ``n`` reports that support item ``i``, the estimator (Wang et al. (arXiv 2016) Alg. 2 line 8; Kairouz, Bonawitz & Ramage (ICML 2016)
eq. 8 and 15 are special cases) is

    θ̂_i = (c_i / n − q*) / (p* − q*),                        unbiased,
    Var(θ̂_i) = [θ_i p*(1 − p*) + (1 − θ_i) q*(1 − q*)] / (n (p* − q*)²),

where θ is the empirical distribution of the ``n`` users (Wang et al. (arXiv 2016) §3.3). Standard errors plug the
clipped estimate into the variance; confidence intervals are normal-approximation intervals
around the raw estimate, intersected with [0, 1] (which can only raise coverage).

Post-processing never touches the privacy budget: ``none`` (raw, unbiased), ``normalize``
(clip negatives, rescale to the total), ``projection`` (Euclidean projection onto the scaled
simplex, Wang & Carreira-Perpiñán 2013; the default for distributions, Kairouz, Bonawitz & Ramage (ICML 2016) §4.4) and ``em``
(maximum likelihood by expectation–maximisation, for mechanisms whose report names one item,
i.e. k-RR; Kairouz, Bonawitz & Ramage (ICML 2016) §4.4) and ``ibu`` (iterative Bayesian update for
every pure oracle: the exact multinomial likelihood for k-RR, the composite binomial likelihood of
the support counts otherwise, with parametric-bootstrap intervals; :mod:`.bayes`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Optional, Sequence

import numpy as np

from .._errors import LDPParameterError
from .. import pictures
from .bayes import ibu_bootstrap
from .least_squares import least_squares_decode

__all__ = [
    "POSTPROCESS_CHOICES",
    "FrequencyEstimate",
    "lower_bounds",
    "debias",
    "pure_variance",
    "project_simplex",
    "clip_normalize",
    "em_single_item",
    "estimate_pure",
    "finalize_estimate",
    "check_postprocess",
    "check_estimate_request",
    "normal_quantile",
    "least_squares_decode",
]

POSTPROCESS_CHOICES = ("none", "normalize", "projection", "em", "ibu")


def debias(counts: np.ndarray, n: int, p_star: float, q_star: float) -> np.ndarray:
    """Raw unbiased estimate ``(c/n − q*)/(p* − q*)``."""
    counts = np.asarray(counts, dtype=np.float64)
    return (counts / n - q_star) / (p_star - q_star)


def pure_variance(theta: np.ndarray, n: int, p_star: float, q_star: float) -> np.ndarray:
    """Per-item variance of the raw estimator at true frequencies ``theta`` (fixed population)."""
    theta = np.asarray(theta, dtype=np.float64)
    num = theta * p_star * (1 - p_star) + (1 - theta) * q_star * (1 - q_star)
    return num / (n * (p_star - q_star) ** 2)


def project_simplex(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{x >= 0, sum(x) = total}`` (Wang & Carreira-Perpiñán).

    O(d log d): sort, find the largest ``ρ`` with ``u_ρ + (total − Σ_{j<=ρ} u_j)/ρ > 0``.
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise LDPParameterError("projection needs a non-empty 1-d vector")
    if not np.isfinite(v).all():
        raise LDPParameterError(f"projection needs finite values (entry {int(np.flatnonzero(~np.isfinite(v))[0])} is NaN or infinite)")
    if not isinstance(total, (int, float, np.integer, np.floating)) or isinstance(total, bool) or not math.isfinite(float(total)):
        raise LDPParameterError("total must be a finite number")
    if total <= 0:  # the simplex of total 0 is the single point 0 (e.g. a set total estimated at 0)
        return np.zeros(v.size)
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    ks = np.arange(1, v.size + 1)
    cond = u + (total - css) / ks > 0
    rho = int(np.nonzero(cond)[0][-1]) + 1
    lam = (total - css[rho - 1]) / rho
    return np.maximum(v + lam, 0.0)


def clip_normalize(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Clip negative entries to zero and rescale to sum to ``total`` (uniform if all clip)."""
    x = np.clip(np.asarray(v, dtype=np.float64), 0.0, None)
    s = x.sum()
    if s <= 0:
        return np.full(x.size, total / x.size)
    return x * (total / s)


def em_single_item(
    counts: np.ndarray, n: int, p_star: float, q_star: float, *, tol: float = 1e-12, max_iter: int = 100_000
) -> np.ndarray:
    """Maximum-likelihood frequencies for a mechanism whose report is one item (k-RR), by EM.

    Channel: ``P(y | x) = p*`` if ``y = x`` else ``q*``. With ``D_y = θ_y (p* − q*) + q*``, the EM
    update is ``θ_i ← θ_i / n · [c_i (p* − q*)/D_i + q* Σ_y c_y / D_y]``: O(d) per iteration.
    Starts from the projected unbiased estimate mixed with uniform (interior start).
    """
    c = np.asarray(counts, dtype=np.float64)
    d = c.size
    theta = 0.5 * project_simplex(debias(c, n, p_star, q_star)) + 0.5 / d
    delta = p_star - q_star
    for _ in range(max_iter):
        D = theta * delta + q_star
        s = float(np.sum(c / D))
        new = theta / n * (c * delta / D + q_star * s)
        new /= new.sum()
        if np.max(np.abs(new - theta)) < tol:
            return new
        theta = new
    return theta


@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimated frequencies with per-item standard errors and confidence intervals.

    ``estimate`` is the post-processed estimate; ``raw`` the unbiased one. ``std_error`` is the
    plug-in analytic standard error of the raw estimator; ``ci_lower``/``ci_upper`` the two-sided
    normal interval at ``confidence`` around ``raw``, intersected with ``[0, 1]``.

    ``target`` says what the intervals cover: ``"sample"`` (default) the frequencies of the users
    who reported (Wang et al.'s (arXiv 2016) θ: the randomization is the only noise); ``"population"`` the
    frequencies of a population the users are an i.i.d. sample of (the multinomial sampling
    variance ``θ(1−θ)/n`` is added; see :func:`retarget`).

    ``interval_kind``: ``"interval"`` (the intervals cover at their confidence and ``std_error`` is
    the estimate's standard error) or ``"bound"`` (the intervals claim their coverage only: IBU's
    conservative intervals, whose ``std_error`` is the bootstrap replicates' spread without the
    shrinkage's bias (:mod:`.bayes`); or only ``ci_lower`` bounds each frequency from below,
    ``ci_upper`` being 1: :func:`lower_bounds`).
    """

    estimate: np.ndarray
    raw: np.ndarray
    std_error: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray
    n: int
    postprocess: str
    confidence: float
    items: tuple
    target: str = "sample"
    interval_kind: str = "interval"

    def to_polars(self, truth: Optional[Sequence[float]] = None):
        """A tidy Polars frame ``item, estimate, std_error, ci_lower, ci_upper`` (``truth`` optional)."""
        import polars as pl

        cols = {
            "item": list(self.items),
            "estimate": self.estimate,
            "std_error": self.std_error,
            "ci_lower": self.ci_lower,
            "ci_upper": self.ci_upper,
        }
        if truth is not None:
            cols["truth"] = np.asarray(truth, dtype=np.float64)
        return pl.DataFrame(cols)

    def __repr__(self) -> str:
        """A notebook-sized summary: n, target, confidence and up to 8 items with their intervals."""
        rows = [
            f"  {str(item)[:24]:<24} {float(e):8.4f}  [{float(lo):.4f}, {float(hi):.4f}]"
            for item, e, lo, hi in list(zip(self.items, self.estimate, self.ci_lower, self.ci_upper))[:8]
        ]
        more = f"\n  ... {len(self.items) - 8} more items (to_polars() for all)" if len(self.items) > 8 else ""
        return (
            f"FrequencyEstimate(n={self.n:,}, items={len(self.items)}, postprocess={self.postprocess!r}, "
            f"{self.confidence:.0%} intervals covering the {self.target} frequencies)\n" + "\n".join(rows) + more
        )

    def plot(self, ax=None, *, truth: Optional[Sequence[float]] = None, title: Optional[str] = None, max_items: int = 40):
        """The ``max_items`` largest estimates as bars, each with its confidence interval (and
        ``truth`` as markers); draws into ``ax`` or a new figure and returns the Axes. Needs the
        ``plot`` extra (matplotlib)."""
        return pictures.frequencies(
            self.items, self.estimate, self.ci_lower, self.ci_upper, ax=ax, truth=truth, max_items=max_items, confidence=self.confidence,
            title=title or f"estimated frequencies (n={self.n:,}, {self.postprocess}, intervals for the {self.target})",
        )

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "target": self.target,
            "postprocess": self.postprocess,
            "confidence": self.confidence,
            "items": [i if isinstance(i, (int, str, float, bool)) else str(i) for i in self.items],
            "estimate": self.estimate.tolist(),
            "raw": self.raw.tolist(),
            "std_error": self.std_error.tolist(),
            "ci_lower": self.ci_lower.tolist(),
            "ci_upper": self.ci_upper.tolist(),
        }


def estimate_pure(
    counts: np.ndarray,
    n: int,
    p_star: float,
    q_star: float,
    *,
    total: float = 1.0,
    postprocess: str = "projection",
    confidence: float = 0.95,
    items: Optional[Sequence] = None,
    em_allowed: bool = False,
) -> FrequencyEstimate:
    """The shared estimator: support counts + (p*, q*) → :class:`FrequencyEstimate`."""
    check_postprocess(postprocess, confidence, em_allowed=em_allowed, ibu_allowed=True)
    if not isinstance(n, (int, np.integer)) or n <= 0:
        raise LDPParameterError("an estimate needs at least one report (n >= 1)")
    counts = np.asarray(counts, dtype=np.int64)
    raw = debias(counts, int(n), p_star, q_star)
    se = np.sqrt(pure_variance(np.clip(raw, 0.0, 1.0), int(n), p_star, q_star))
    if postprocess == "ibu":  # the bootstrap's intervals replace the raw estimator's normal ones
        likelihood = "multinomial" if em_allowed else "binomial"
        est, bse, lo, hi = ibu_bootstrap(counts, int(n), p_star, q_star, likelihood=likelihood, confidence=confidence)
        est = est * total
        items_t = tuple(items) if items is not None else tuple(range(raw.size))
        for arr in (est, raw, bse, lo, hi):
            arr.setflags(write=False)
        # conservative (the basic bootstrap interval joined with the raw one) and bse without the bias: a bound
        return FrequencyEstimate(est, raw, bse, lo, hi, int(n), postprocess, confidence, items_t, interval_kind="bound")
    em = (lambda: em_single_item(counts, int(n), p_star, q_star)) if postprocess == "em" else None
    return finalize_estimate(raw, se, int(n), postprocess=postprocess, confidence=confidence, items=items, total=total, em=em)


def check_postprocess(postprocess: str, confidence: float, *, em_allowed: bool = False, ibu_allowed: bool = False) -> None:
    if postprocess not in POSTPROCESS_CHOICES:
        raise LDPParameterError(f"postprocess must be one of {POSTPROCESS_CHOICES} (got {postprocess!r})")
    if postprocess == "ibu" and not ibu_allowed:
        raise LDPParameterError("postprocess='ibu' is available only for the pure frequency oracles (support counts with rates p*, q*)")
    if postprocess == "em" and not em_allowed:
        raise LDPParameterError("postprocess='em' is available only for mechanisms whose report names one item (krr)")
    if not (isinstance(confidence, float) and 0.0 < confidence < 1.0):
        raise LDPParameterError("confidence must be a float in (0, 1)")


def normal_quantile(confidence: object) -> float:
    """``z`` of a two-sided normal interval at ``confidence`` (a float in (0, 1), checked)."""
    if not isinstance(confidence, float) or not 0 < confidence < 1:
        raise LDPParameterError(f"confidence must be a float in (0, 1) (got {confidence!r})")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def check_estimate_request(n: int, confidence: object, target: object = "sample") -> float:
    """The checks every accumulator's ``estimate`` makes before it estimates: at least one
    report, ``confidence`` a float in (0, 1) and ``target`` ``"sample"`` or ``"population"``;
    returns the interval's ``z``."""
    if n == 0:
        raise LDPParameterError("an estimate needs at least one report (n >= 1)")
    z = normal_quantile(confidence)
    if target not in ("sample", "population"):
        raise LDPParameterError(f"target must be 'sample' or 'population' (got {target!r})")
    return z


def finalize_estimate(
    raw: np.ndarray,
    std_error: np.ndarray,
    n: int,
    *,
    postprocess: str = "projection",
    confidence: float = 0.95,
    items: Optional[Sequence] = None,
    total: float = 1.0,
    em=None,
) -> FrequencyEstimate:
    """Confidence intervals and post-processing shared by every decoder (pure and least squares).

    ``raw`` is an unbiased estimate and ``std_error`` its per-item standard error; intervals are
    normal around ``raw``, intersected with ``[0, 1]``; ``em`` computes the EM estimate if asked.
    """
    check_postprocess(postprocess, confidence, em_allowed=em is not None or postprocess != "em")
    raw = np.asarray(raw, dtype=np.float64)
    se = np.asarray(std_error, dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    lo = np.clip(raw - z * se, 0.0, 1.0)
    hi = np.clip(raw + z * se, 0.0, 1.0)
    if postprocess == "none":
        est = raw.copy()
    elif postprocess == "normalize":
        est = clip_normalize(raw, total)
    elif postprocess == "projection":
        est = project_simplex(raw, total)
    else:
        est = em()
    items_t = tuple(items) if items is not None else tuple(range(raw.size))
    for arr in (est, raw, se, lo, hi):
        arr.setflags(write=False)
    return FrequencyEstimate(est, raw, se, lo, hi, int(n), postprocess, confidence, items_t)


TARGETS = ("sample", "population")


def lower_bounds(est: "FrequencyEstimate") -> "FrequencyEstimate":
    """The same estimate whose intervals claim only their lower limit (``interval_kind="bound"``,
    ``ci_upper`` = 1): for set mechanisms with ``on_long="sample"``, where an item of a set longer
    than ``m`` is reported with weight ``m/|X| < 1``. The raw estimate then targets the frequencies of
    the sampled-down sets, which are at most the true ones, so ``ci_lower`` still bounds each true
    frequency from below at the interval's one-sided level; no upper limit is identifiable."""
    upper = np.ones_like(np.asarray(est.ci_upper, dtype=np.float64))
    upper.setflags(write=False)
    return dataclasses.replace(est, ci_upper=upper, interval_kind="bound")


def retarget(est: "FrequencyEstimate", target: str) -> "FrequencyEstimate":
    """The same estimate with intervals for ``target`` (see :class:`FrequencyEstimate`).

    ``"population"``: users are i.i.d. draws from θ, so ``Var(θ̂_i − θ_i) = Var(θ̂_i − θ̂ᵉᵐᵖ_i) +
    θ_i(1−θ_i)/n`` (the two parts are uncorrelated: the randomization is unbiased given the
    users); the plug-in uses ``clip(raw, 0, 1)``. For set-valued data ``θ_i`` is the fraction of
    users holding ``i`` and the same formula holds per item."""
    if target not in TARGETS:
        raise LDPParameterError(f"target must be one of {TARGETS} (got {target!r})")
    if target == est.target:
        return est
    if est.target != "sample":
        raise LDPParameterError("retarget starts from a sample-target estimate")
    if est.postprocess == "ibu":  # its bootstrap draws the fixed population, not a population sample
        raise LDPParameterError("postprocess='ibu' intervals cover the sample frequencies: use target='sample' (or another postprocess)")
    f = np.clip(np.asarray(est.raw), 0.0, 1.0)
    se = np.sqrt(np.asarray(est.std_error) ** 2 + f * (1 - f) / est.n)
    z = NormalDist().inv_cdf(0.5 + est.confidence / 2)
    lo = np.clip(est.raw - z * se, 0.0, 1.0)
    hi = np.clip(est.raw + z * se, 0.0, 1.0)
    for arr in (se, lo, hi):
        arr.setflags(write=False)
    return dataclasses.replace(est, std_error=se, ci_lower=lo, ci_upper=hi, target=target)

