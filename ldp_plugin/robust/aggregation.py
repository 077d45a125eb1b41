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
  ``θ`` (the ``population``-target standard errors ``SE_k`` cover the sampling), then with
  probability ``>= 1 − α`` every honest ``|θ̂_k,i − θ_i| <= z·SE_k,i`` with
  ``z = Φ⁻¹(1 − α/(2·N·d))`` (Bonferroni over nodes and items), so

      |combined_i − θ_i| <= bound_i = z · max_k SE_k,i

  (the maximum over *all* nodes is used — it is at least the honest maximum; a hostile node that
  understates its report count only loosens it), and the combined estimate is within ``2·bound_i``
  of the honest nodes' pooled estimate. A hostile node cannot move any item further, however many
  reports it claims.

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

__all__ = ["RULES", "RobustEstimate", "combine", "combine_accumulators"]

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

    @property
    def variance_price(self) -> np.ndarray:
        """Per item, ``Var(robust)/Var(pooled)`` without hostile nodes (predicted)."""
        return (self.std_error / np.maximum(self.pooled_std_error, 1e-300)) ** 2

    def to_dict(self) -> dict:
        return {"rule": self.rule, "f": self.f, "nodes": [str(k) for k in self.nodes], "alpha": self.alpha,
                "items": [i if isinstance(i, (int, str)) else str(i) for i in self.items],
                "estimate": self.estimate.tolist(), "bound": self.bound.tolist(), "pooled": self.pooled.tolist(),
                "std_error": self.std_error.tolist(), "pooled_std_error": self.pooled_std_error.tolist()}


def _rule(values: np.ndarray, weights: np.ndarray, rule: str, f: int, groups: int) -> np.ndarray:
    """Apply the rule along axis -2 of ``values`` (``(..., N, d)``)."""
    if rule == "trimmed":
        s = np.sort(values, axis=-2)
        return s[..., f : values.shape[-2] - f, :].mean(axis=-2)
    N = values.shape[-2]
    idx = np.array_split(np.arange(N), groups)
    means = [np.tensordot(weights[g] / weights[g].sum(), values[..., g, :], axes=([0], [-2])) for g in idx]
    return np.median(np.stack(means, axis=-2), axis=-2)


def combine(node_estimates: dict, *, rule: str = "trimmed", f: int = 1, groups: Optional[int] = None, alpha: float = 1e-3,
            items: Optional[tuple] = None, draws: int = 400) -> RobustEstimate:
    """Combine per-node estimates ``{node: (raw, std_error, n)}`` (raw: unbiased per-item estimates,
    std_error: their ``population``-target standard errors) with a robust ``rule`` tolerating ``f``
    hostile nodes (``"trimmed"``: ``N > 2f``; ``"median-of-means"``: ``groups`` groups, default
    ``2f + 1``, at most ``N``)."""
    if rule not in RULES:
        raise LDPParameterError(f"rule must be one of {RULES} (got {rule!r})")
    names = tuple(node_estimates)
    N = len(names)
    if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < 0:
        raise LDPParameterError("f (the hostile nodes tolerated) must be a non-negative integer")
    if not 0 < alpha < 1:
        raise LDPParameterError("alpha must be in (0, 1)")
    G = 2 * int(f) + 1 if groups is None else groups
    if rule == "trimmed" and N <= 2 * f:
        raise LDPParameterError(f"a trimmed mean tolerating f={f} hostile nodes needs more than {2 * f} nodes (got {N})")
    if rule == "median-of-means" and (isinstance(G, bool) or not isinstance(G, (int, np.integer)) or not 2 * f < G <= N):
        raise LDPParameterError(f"groups must be an integer in ({2 * f}, {N}] for median-of-means tolerating f={f} (got {G!r})")
    raw = np.array([np.asarray(node_estimates[k][0], dtype=np.float64) for k in names])
    se = np.array([np.asarray(node_estimates[k][1], dtype=np.float64) for k in names])
    n = np.array([float(node_estimates[k][2]) for k in names])
    if raw.ndim != 2 or se.shape != raw.shape or (n <= 0).any():
        raise LDPParameterError("every node needs a raw estimate and standard errors over the same items, and n >= 1")
    d = raw.shape[1]
    est = _rule(raw, n, rule, int(f), int(G))
    w = n / n.sum()
    pooled = w @ raw
    pooled_se = np.sqrt((w[:, None] ** 2 * se**2).sum(axis=0))
    z = NormalDist().inv_cdf(1 - alpha / (2 * N * d))
    bound = z * se.max(axis=0)
    sim = np.random.default_rng(0).standard_normal((int(draws), N, d)) * se[None, :, :]
    robust_se = _rule(sim, n, rule, int(f), int(G)).std(axis=0, ddof=1)
    for a in (est, bound, pooled, robust_se, pooled_se):
        a.setflags(write=False)
    return RobustEstimate(est, bound, pooled, robust_se, pooled_se, rule, int(f), names, float(alpha),
                          tuple(items) if items is not None else tuple(range(d)))


def combine_accumulators(mechanism: Any, accumulators: dict, **kwargs: Any) -> RobustEstimate:
    """:func:`combine` over per-node accumulators of one mechanism (e.g. the federated collector's
    ``node_accumulators``): each node's raw estimate with population-target standard errors."""
    ests = {}
    items = None
    for k, acc in accumulators.items():
        e = mechanism.estimate_from(acc, postprocess="none", target="population")
        ests[k] = (e.raw, e.std_error, e.n)
        items = e.items
    return combine(ests, items=items, **kwargs)
