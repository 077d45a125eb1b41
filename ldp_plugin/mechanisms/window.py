"""The **window channel** shared by Square Wave (:mod:`.distribution`; Li et al., SIGMOD 2020,
eq. (3)) and the Piecewise mechanism (:mod:`.numeric`; Wang et al., ICDE 2019, Alg. 2), both on
exact grids: input cell ``k`` in ``[0, inputs)`` is reported as one of
``cells = inputs + window − 1`` output cells; the ``window`` cells ``k … k + window − 1`` each
have probability ``p_hi``, every other cell ``p_lo``.

It is realized with one integer threshold ``T`` over ``2^64`` (``P(in window) = T/2^64``, the
class computes ``T`` as the floor of ``w·E/(w·E + cells − w)`` with ``E`` a rational lower bound of
``e^ε``) and two exact uniform integers (the cell inside, or outside, the window), so
``p_hi/p_lo = (T/w)/((2^64 − T)/(cells − w)) <= e^ε`` exactly: **ε-LDP**, ``max_{k,k',j}
P(j|k)/P(j|k') = p_hi/p_lo`` (``max_divergence``; the neighbouring relation is the using
mechanism's: one user's number replaced by any other).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..exact import TWO64, epsilon_of_ratio

__all__ = ["WindowChannel"]


class WindowChannel:
    """Mixin: the class supplies ``window`` (cells per window), ``window_threshold`` (``T``) and
    ``_window_inputs`` (the number of input cells)."""

    window: int
    window_threshold: int

    @property
    def _window_inputs(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def cells(self) -> int:
        """Number of output cells ``inputs + window − 1``."""
        return self._window_inputs + self.window - 1

    @property
    def p_hi(self) -> Fraction:
        return Fraction(self.window_threshold, TWO64) / self.window

    @property
    def p_lo(self) -> Fraction:
        return (1 - Fraction(self.window_threshold, TWO64)) / (self.cells - self.window)

    @property
    def realized_ratio(self) -> Fraction:
        return self.p_hi / self.p_lo

    @property
    def realized_epsilon(self) -> float:
        return epsilon_of_ratio(self.realized_ratio)

    def output_alphabet_size(self) -> int:
        return self.cells

    def _window_sample(self, k: np.ndarray, source: Any) -> np.ndarray:
        """One output cell per input cell ``k`` (``uint32``): a Bernoulli(``T``) for the window,
        then a uniform cell inside it or a uniform cell outside it."""
        n, w = k.size, self.window
        inside = source.bernoulli(self.window_threshold, n)
        j_in = k + source.uniform_int(w, n)
        u = source.uniform_int(self.cells - w, n)
        j_out = np.where(u < k, u, u + w)  # uniform over the cells outside [k, k + w)
        return np.where(inside, j_in, j_out).astype(np.uint32)
