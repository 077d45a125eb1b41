"""Exact channels and integer thresholds: the leaf every mechanism family shares.

A realized probability ``p`` (a :class:`~fractions.Fraction`) becomes the integer threshold
``floor(p · 2**64)`` (or its ceiling) compared against a uniform 64-bit word, so every realized
probability is exactly ``T / 2**64``; :class:`Channel` holds an enumerated channel matrix of such
exact probabilities (the verification layers and the construction-time ratio check read it)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._errors import PrivacyVerificationError
from ..exact import TWO64

__all__ = ["Channel", "floor_threshold", "ceil_threshold"]


def floor_threshold(p: Fraction) -> int:
    """The integer threshold ``floor(p · 2**64)`` (an event of probability ``T / 2**64 <= p``)."""
    return (p.numerator * TWO64) // p.denominator


def ceil_threshold(p: Fraction) -> int:
    return -((-p.numerator * TWO64) // p.denominator)


@dataclass(frozen=True)
class Channel:
    """An exact channel matrix: ``matrix[x][j] = P(output j | input x)`` as Fractions."""

    outputs: tuple
    matrix: tuple

    def rows_sum_to_one(self) -> bool:
        return all(sum(row) == 1 for row in self.matrix)

    def equal_supports(self) -> bool:
        supports = {tuple(p > 0 for p in row) for row in self.matrix}
        return len(supports) == 1

    def max_ratio(self) -> Fraction:
        """``max_{x, x', y} Q(y|x) / Q(y|x')`` over outputs with positive probability."""
        if not self.equal_supports():
            raise PrivacyVerificationError("channel rows have different supports: the likelihood ratio is unbounded")
        best = Fraction(1)
        for j in range(len(self.outputs)):
            col = [row[j] for row in self.matrix]
            if col[0] == 0:
                continue
            r = max(col) / min(col)
            if r > best:
                best = r
        return best

    def as_float_array(self) -> np.ndarray:
        return np.array([[float(p) for p in row] for row in self.matrix])
