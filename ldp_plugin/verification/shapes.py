"""The data shapes the estimator checks draw their users from: five shapes of a number on ``[0, 1]``
(smooth, bimodal, spiky, heavy-tailed, point masses) and three of a category (uniform, Zipf, one point
mass), each a pure function of its name, the size and a seeded generator.

A server estimator that is right on the shape its paper used can be wrong on another: smoothing that
fits a Beta density biases a narrow peak, a range ending inside a bucket is exact only when users are
uniform within it, a quantile of point masses sits on a jump of the CDF. The shapes are chosen so that
each of those situations occurs: ``smooth`` is Beta(2, 5); ``bimodal`` two narrow normals at 0.2 and
0.75; ``spiky`` 40% of the users at exactly 0.33, the rest uniform; ``heavy-tailed`` a Pareto(1.2)
scaled by 1/20 and clipped at 1 (most users near 0, a long right tail and a mass at the top);
``point-masses`` four values (0.05, 0.33, 0.34, 0.9) with masses 0.2, 0.3, 0.3, 0.2. For a category in
``[0, d)``: ``uniform``, ``zipf`` (``P(i) ∝ 1/(i+1)^1.1``) and ``point-mass`` (every user holds item 0).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NUMBER_SHAPES", "CATEGORY_SHAPES", "number_shape", "category_shape", "category_probabilities"]

NUMBER_SHAPES = ("smooth", "bimodal", "spiky", "heavy-tailed", "point-masses")
CATEGORY_SHAPES = ("uniform", "zipf", "point-mass")


def number_shape(name: str, n: int, gen: np.random.Generator) -> np.ndarray:
    """``n`` values on ``[0, 1]`` of the shape ``name`` (one of :data:`NUMBER_SHAPES`)."""
    if name == "smooth":
        return gen.beta(2, 5, n)
    if name == "bimodal":
        return np.where(gen.random(n) < 0.5, gen.normal(0.2, 0.04, n), gen.normal(0.75, 0.05, n)).clip(0, 1)
    if name == "spiky":
        return np.where(gen.random(n) < 0.4, 0.33, gen.random(n))
    if name == "heavy-tailed":
        return np.minimum(gen.pareto(1.2, n) / 20, 1.0)
    if name == "point-masses":
        return gen.choice([0.05, 0.33, 0.34, 0.9], size=n, p=[0.2, 0.3, 0.3, 0.2])
    raise ValueError(f"shape must be one of {NUMBER_SHAPES} (got {name!r})")


def category_probabilities(name: str, d: int) -> np.ndarray:
    """The distribution over ``[0, d)`` of the shape ``name`` (one of :data:`CATEGORY_SHAPES`)."""
    if name == "uniform":
        return np.full(d, 1.0 / d)
    if name == "zipf":
        w = 1.0 / np.arange(1, d + 1) ** 1.1
        return w / w.sum()
    if name == "point-mass":
        p = np.zeros(d)
        p[0] = 1.0
        return p
    raise ValueError(f"shape must be one of {CATEGORY_SHAPES} (got {name!r})")


def category_shape(name: str, n: int, d: int, gen: np.random.Generator) -> np.ndarray:
    """``n`` codes in ``[0, d)`` drawn from the shape ``name``."""
    return gen.choice(d, size=n, p=category_probabilities(name, d)).astype(np.int64)
