"""Robust aggregation across nodes (or groups of nodes): estimate per node, combine with a rule
that a few hostile nodes cannot drag far.

Rules, per item, over the nodes' raw (unbiased) estimates ``θ̂_k``:

* ``"trimmed"`` — the trimmed mean: drop the ``f`` smallest and ``f`` largest, average the rest
  (Tukey; the coordinate-wise trimmed mean of Yin, Chen, Ramchandran and Bartlett, "Byzantine-Robust
  Distributed Learning: Towards Optimal Statistical Rates", ICML 2018, Alg. 2).
* ``"median-of-means"`` — nodes are split into ``groups`` groups (data-independently: by position),
  each group's estimate is the report-weighted mean of its nodes, the result the median of the
  group estimates (Nemirovsky and Yudin 1983; Yin et al. 2018, Alg. 1 with groups).

**Influence bound.** Let ``H`` be the honest nodes, at least ``N − f`` of the ``N``.

* Deterministic: with ``f`` hostile nodes and trimming ``f`` on each side, at most ``f`` values lie
  below ``min_H θ̂_k`` (all hostile), so the ``(f+1)``-th smallest is ``>= min_H``; likewise the
  ``(N−f)``-th is ``<= max_H``; every kept value, hence the trimmed mean, lies in
  ``[min_{k∈H} θ̂_k, max_{k∈H} θ̂_k]`` **whatever the hostile nodes send**. The median of ``G``
  group means with ``f < G/2`` contaminated groups lies between the smallest and largest honest
  group mean, by the same argument.
* With the honest estimates' errors: if every honest node's users are drawn from one population
  ``θ``, then with probability ``>= 1 − α`` every honest ``|θ̂_k,i − θ_i| <= z·σ_i/√n_k`` with
  ``z = Φ⁻¹(1 − α/(2·N·d))`` (Bonferroni over nodes and items; ``σ_i`` bounds the standard
  deviation of one report's contribution to item ``i``), so

      |combined_i − θ_i| <= bound_i = z · σ_i / √n_min

  and the combined estimate is within ``2·bound_i`` of the honest nodes' pooled estimate.

**The bound is computed from quantities no single node controls.** A node chooses its own report
count and its reports, so neither its standard errors nor its size may enter the bound (a hostile
node sending 3 reports once inflated it from 0.09 to 6):

* ``n_min`` is a minimum number of reports per node: ``min_reports`` when the plan fixes it, else
  half the **median** of the nodes' report counts (with ``f < N/2`` hostile nodes the median lies
  between two honest counts). A node with fewer reports is **refused**: left out of the rule and
  listed in ``excluded`` (the rule then needs enough nodes left; the pooled estimate keeps every
  node, as before).
* ``σ_i`` is the mechanism's worst case: for a pure oracle (support rates ``p* > q*``) one
  report's contribution ``(s − q*)/(p* − q*)`` with ``P(s = 1) = P ∈ [q*, p*]`` has standard
  deviation at most ``√(P̄(1 − P̄))/(p* − q*)``, ``P̄`` the point of ``[q*, p*]`` nearest 1/2;
  otherwise half the range of one report's influence (Popoviciu; ``report_influence``); for a
  mechanism with neither, the ``(f + 1)``-th largest of the nodes' ``SE_k,i·√n_k`` — which no
  ``f`` hostile nodes can raise above the largest honest one (an estimate, not a worst case).

**Price.** Without hostile nodes, trimming or taking medians discards information: the rule's
standard error is predicted by simulating the nodes' honest estimates as independent normals with
their standard errors (fixed seed, ``draws`` draws) and reported beside the pooled estimate's
(``variance_price`` = the ratio of variances, per item; measured in BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms.protocol import PoisonBounded, SupportRates, has

__all__ = ["RULES", "RobustEstimate", "combine", "combine_accumulators", "report_sd"]

RULES = ("trimmed", "median-of-means")


@dataclass(frozen=True)
class RobustEstimate:
    """The combined per-item estimate, its influence ``bound`` (see the module docstring), the
    pooled (non-robust) estimate for comparison, and the predicted standard errors of both."""

    estimate: np.ndarray
    bound: np.ndarray
    pooled: np.ndarray
    std_error: np.ndarray
    pooled_std_error: np.ndarray
    rule: str
    f: int
    nodes: tuple
    alpha: float
    items: tuple
    #: the nodes refused for sending fewer than ``min_reports`` reports (left out of the rule)
    excluded: tuple = ()
    #: the reports per node the bound assumes (``n_min``): the plan's, or half the median count
    min_reports: int = 1

    @property
    def variance_price(self) -> np.ndarray:
        """Per item, ``Var(robust)/Var(pooled)`` without hostile nodes (predicted)."""
        return (self.std_error / np.maximum(self.pooled_std_error, 1e-300)) ** 2

    def to_dict(self) -> dict:
        return {"rule": self.rule, "f": self.f, "nodes": [str(k) for k in self.nodes], "alpha": self.alpha,
                "items": [i if isinstance(i, (int, str)) else str(i) for i in self.items],
                "estimate": self.estimate.tolist(), "bound": self.bound.tolist(), "pooled": self.pooled.tolist(),
                "std_error": self.std_error.tolist(), "pooled_std_error": self.pooled_std_error.tolist(),
                "excluded": [str(k) for k in self.excluded], "min_reports": self.min_reports}


def _rule(values: np.ndarray, weights: np.ndarray, rule: str, f: int, groups: int) -> np.ndarray:
    """Apply the rule along axis -2 of ``values`` (``(..., N, d)``)."""
    if rule == "trimmed":
        s = np.sort(values, axis=-2)
        return s[..., f : values.shape[-2] - f, :].mean(axis=-2)
    N = values.shape[-2]
    idx = np.array_split(np.arange(N), groups)
    means = [np.tensordot(weights[g] / weights[g].sum(), values[..., g, :], axes=([0], [-2])) for g in idx]
    return np.median(np.stack(means, axis=-2), axis=-2)


def _min_reports(n: np.ndarray, min_reports: Optional[int]) -> int:
    if min_reports is None:
        return max(1, int(np.median(n) // 2))
    if isinstance(min_reports, bool) or not isinstance(min_reports, (int, np.integer)) or min_reports < 1:
        raise LDPParameterError(f"min_reports must be an integer >= 1 (got {min_reports!r})")
    return int(min_reports)


def combine(node_estimates: dict, *, rule: str = "trimmed", f: int = 1, groups: Optional[int] = None, alpha: float = 1e-3,
            items: Optional[tuple] = None, draws: int = 400, min_reports: Optional[int] = None,
            report_sd: Optional[Any] = None) -> RobustEstimate:
    """Combine per-node estimates ``{node: (raw, std_error, n)}`` (raw: unbiased per-item estimates,
    std_error: their ``population``-target standard errors) with a robust ``rule`` tolerating ``f``
    hostile nodes (``"trimmed"``: more than ``2f`` nodes left; ``"median-of-means"``: ``groups``
    groups, default ``2f + 1``, at most the nodes left). Nodes with fewer than ``min_reports``
    reports (default: half the median count) are refused; ``report_sd`` (per item, or one number)
    is the worst-case standard deviation of one report's contribution, from the mechanism (module
    docstring); without it the bound uses the ``(f + 1)``-th largest per-report deviation of the nodes."""
    if rule not in RULES:
        raise LDPParameterError(f"rule must be one of {RULES} (got {rule!r})")
    everyone = tuple(node_estimates)
    if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < 0:
        raise LDPParameterError("f (the hostile nodes tolerated) must be a non-negative integer")
    if not 0 < alpha < 1:
        raise LDPParameterError("alpha must be in (0, 1)")
    n_all = np.array([float(node_estimates[k][2]) for k in everyone])
    if not everyone or (n_all <= 0).any():
        raise LDPParameterError("every node needs a raw estimate and standard errors over the same items, and n >= 1")
    n_min = _min_reports(n_all, min_reports)
    names = tuple(k for k, n in zip(everyone, n_all) if n >= n_min)
    excluded = tuple(k for k, n in zip(everyone, n_all) if n < n_min)
    N = len(names)
    G = 2 * int(f) + 1 if groups is None else groups
    if rule == "trimmed" and N <= 2 * f:
        raise LDPParameterError(f"a trimmed mean tolerating f={f} hostile nodes needs more than {2 * f} nodes (got {N}"
                                + (f" after refusing {len(excluded)} with fewer than {n_min} reports)" if excluded else ")"))
    if rule == "median-of-means" and (isinstance(G, bool) or not isinstance(G, (int, np.integer)) or not 2 * f < G <= N):
        raise LDPParameterError(f"groups must be an integer in ({2 * f}, {N}] for median-of-means tolerating f={f} (got {G!r})")
    raw_all = np.array([np.asarray(node_estimates[k][0], dtype=np.float64) for k in everyone])
    se_all = np.array([np.asarray(node_estimates[k][1], dtype=np.float64) for k in everyone])
    if raw_all.ndim != 2 or se_all.shape != raw_all.shape:
        raise LDPParameterError("every node needs a raw estimate and standard errors over the same items, and n >= 1")
    keep = np.array([k in set(names) for k in everyone])
    raw, se, n = raw_all[keep], se_all[keep], n_all[keep]
    d = raw.shape[1]
    est = _rule(raw, n, rule, int(f), int(G))
    w = n_all / n_all.sum()
    pooled = w @ raw_all
    pooled_se = np.sqrt((w[:, None] ** 2 * se_all**2).sum(axis=0))
    z = NormalDist().inv_cdf(1 - alpha / (2 * N * d))
    if report_sd is not None:
        sigma = np.broadcast_to(np.asarray(report_sd, dtype=np.float64), (d,))
    else:  # the (f + 1)-th largest per-report deviation: f hostile nodes cannot raise it above an honest one
        per_report = np.sort(se * np.sqrt(n)[:, None], axis=0)
        sigma = per_report[max(N - 1 - int(f), 0)]
    bound = z * sigma / np.sqrt(n_min)
    sim = np.random.default_rng(0).standard_normal((int(draws), N, d)) * se[None, :, :]
    robust_se = _rule(sim, n, rule, int(f), int(G)).std(axis=0, ddof=1)
    bound = np.array(bound, dtype=np.float64)
    for a in (est, bound, pooled, robust_se, pooled_se):
        a.setflags(write=False)
    return RobustEstimate(est, bound, pooled, robust_se, pooled_se, rule, int(f), names, float(alpha),
                          tuple(items) if items is not None else tuple(range(d)), excluded, n_min)


def report_sd(mechanism: Any) -> Optional[np.ndarray]:
    """The worst-case standard deviation of one report's contribution to each item's raw estimate
    (module docstring), or ``None`` if the mechanism declares neither support rates nor a report
    influence."""
    if has(mechanism, SupportRates):
        p, q = float(mechanism.p_star_exact), float(mechanism.q_star_exact)
        P = min(max(0.5, q), p)
        return np.full(int(mechanism.d), np.sqrt(P * (1 - P)) / (p - q))
    if has(mechanism, PoisonBounded):
        lo, hi = mechanism.report_influence()
        return (np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)) / 2
    return None


def combine_accumulators(mechanism: Any, accumulators: dict, **kwargs: Any) -> RobustEstimate:
    """:func:`combine` over per-node accumulators of one mechanism (e.g. the federated collector's
    ``node_accumulators``): each node's raw estimate with population-target standard errors, and
    the mechanism's worst-case per-report deviation (:func:`report_sd`)."""
    ests = {}
    items = None
    for k, acc in accumulators.items():
        e = mechanism.estimate_from(acc, postprocess="none", target="population")
        ests[k] = (e.raw, e.std_error, e.n)
        items = e.items
    kwargs.setdefault("report_sd", report_sd(mechanism))
    return combine(ests, items=items, **kwargs)
