"""Choosing a mean or a longitudinal mechanism (``ldp choose --family mean|longitudinal``).

* Means: every mean mechanism ranked by the variance of its mean estimate for ``n`` users, from
  its exact grid channel: the average over inputs spread uniformly on ``[lower, upper]`` and the
  worst input (``second_moments() − t²``, scaled).
* Longitudinal: every protocol ranked by its per-round squared l2 error at a uniform
  distribution (``analytic_mse``), shown beside the **lifetime cost** over ``rounds``
  collections when a user's value is redrawn with probability ``change_prob`` before each round:
  the expected charge ``E[min(#memoized units, bound)]·ε∞`` (value redraws uniform over ``d``;
  LOLOHA's units are hashed values, uniform over ``g``; dBitFlipPM's are patterns) and the worst
  case ``min(rounds, bound)·ε∞``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_int, check_real
from .series import MEAN_NAMES, build_mean, LONGITUDINAL_NAMES, build_longitudinal

__all__ = ["rank_mean_mechanisms", "rank_longitudinal_mechanisms"]


@dataclass(frozen=True)
class SeriesCandidate:
    mechanism: str
    params: dict
    predicted_error: float
    worst_error: float
    lifetime_expected: float | None = None
    lifetime_worst: float | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def rank_mean_mechanisms(epsilon: float, *, n: int, lower: float = 0.0, upper: float = 1.0) -> list:
    """Mean mechanisms, lowest average variance of the mean estimate first."""

    n = check_int("n", n, 1)
    out = []
    for name in MEAN_NAMES:
        m = build_mean(name, epsilon=epsilon, lower=lower, upper=upper)
        t = m.grid_values()
        per = (m.second_moments() - t * t) * ((upper - lower) / 2) ** 2 / n
        out.append(SeriesCandidate(name, {"grid": m.grid}, float(per.mean()), float(per.max())))
    return sorted(out, key=lambda c: c.predicted_error)


def _expected_units(probs: np.ndarray, rounds: int, change_prob: float) -> float:
    """``E[#distinct units]`` when the first value and each redraw (``Bin(rounds − 1,
    change_prob)`` of them) pick a unit independently with ``probs``."""
    from math import comb

    total = 0.0
    for r in range(rounds):
        w = comb(rounds - 1, r) * change_prob**r * (1 - change_prob) ** (rounds - 1 - r)
        draws = 1 + r
        total += w * float(np.sum(1 - (1 - probs) ** draws))
    return total


def rank_longitudinal_mechanisms(d: int, epsilon_perm: float, epsilon_1: float, *, n: int, rounds: int, change_prob: float) -> list:
    """Longitudinal protocols, lowest per-round error first, with the lifetime cost."""

    rounds = check_int("rounds", rounds, 1)
    change_prob = check_real("change_prob", change_prob, 0, 1)
    theta = np.full(d, 1.0 / d)
    out = []
    seen = set()
    for name in LONGITUDINAL_NAMES:
        params: dict[str, Any] = {"g": "optimal"} if name == "loloha" else {}
        variants = [dict(params), {"g": 2}] if name == "loloha" else [params]
        for p in variants:
            m = build_longitudinal(name, d=d, epsilon_perm=epsilon_perm, epsilon_1=epsilon_1, **p)
            bound = m.unit_bound()
            if name == "loloha":
                probs = np.full(m.g, 1.0 / m.g)
                p = {"g": m.g}
            elif name == "dbitflip":
                probs = np.concatenate([np.full(m.d_bits, 1.0 / d), [1 - m.d_bits / d]])
            else:
                probs = theta
            if (name, tuple(sorted(p.items()))) in seen:
                continue
            seen.add((name, tuple(sorted(p.items()))))
            units = min(_expected_units(probs, rounds, change_prob), bound)
            err = m.analytic_mse(n, theta=theta)
            out.append(SeriesCandidate(name, p, err, err, units * epsilon_perm, min(rounds, bound) * epsilon_perm))
    return sorted(out, key=lambda c: (c.predicted_error, c.lifetime_expected or math.inf))
