"""Numeric means (Duchi et al., the Piecewise and Hybrid mechanisms, 1BitMean): one user's number
in ``[lower, upper]`` on an exact grid, one report; :mod:`.mechanisms` holds the clients and their
exact channels, :mod:`.server` the mergeable accumulator and the mean estimate (one-way:
``mechanisms → server``)."""

from .mechanisms import Duchi, Hybrid, NumericMechanism, OneBitMean, Piecewise
from .server import MeanAccumulator, MeanEstimate

__all__ = ["MeanEstimate", "MeanAccumulator", "NumericMechanism", "Duchi", "Piecewise", "Hybrid", "OneBitMean"]
