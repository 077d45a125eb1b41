"""The client shared by the mechanisms over a declared range ``[lower, upper]`` cut into ``grid``
equal cells (:class:`~ldp_plugin.mechanisms.distribution.SquareWave`,
:class:`~ldp_plugin.mechanisms.distribution.BucketedOracle`,
:class:`~ldp_plugin.mechanisms.hierarchy.HierarchicalHistogram`,
:class:`~ldp_plugin.mechanisms.haar.HaarHRR`): the range and grid checks, a number's cell, and the
one client signature around the family's own ``_randomize_codes(cells, source)``.

Nothing here randomizes: a number's cell is a deterministic function of the number, so each
mechanism's guarantee (stated in its own module) is over the cells and carries over to the numbers
(one user's number replaced by any other in ``[lower, upper]`` changes its cell at most)."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .._errors import LDPArgumentError, LDPInputError, LDPParameterError
from ..exact import epsilon_of_ratio
from ..sampling import RNGLike, as_source
from .base import MechanismBase
from .domain import check_codes, check_epsilon, real_numbers
from .protocol import Distribution, InputKind, Numeric, Verifiable

__all__ = ["check_range", "check_power_of_two", "NumberCells", "LeafClient", "ColumnReports", "AccumulatedEstimate", "GridTree"]


def check_range(lower: Any, upper: Any) -> tuple[float, float]:
    """``(lower, upper)`` as floats: finite numbers with ``lower < upper``."""
    for name, v in (("lower", lower), ("upper", upper)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)):
            raise LDPParameterError(f"{name} must be a finite number (got {v!r})")
    if not float(lower) < float(upper):
        raise LDPParameterError(f"lower must be below upper (got lower={lower!r}, upper={upper!r})")
    if not math.isfinite(float(upper) - float(lower)):  # e.g. ±1e308: every cell width and position overflows
        raise LDPParameterError(f"upper - lower must be a finite number (got lower={lower!r}, upper={upper!r}): rescale the values")
    return float(lower), float(upper)


def check_power_of_two(name: str, v: Any, lo: int, hi: int) -> int:
    """``v`` as an int: a power of two in ``[lo, hi]``."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi or int(v) & (int(v) - 1):
        raise LDPParameterError(f"{name} must be a power of two in [{lo}, {hi}] (got {v!r})")
    return int(v)


class NumberCells:
    """A declared range cut into ``grid`` equal cells: a number's cell, with clear errors (the
    class supplies ``lower``, ``upper``, ``grid`` and ``realized_ratio``)."""

    lower: float
    upper: float

    def _check_cells(self, name: str, lo: int, hi: int) -> float:
        """Check and normalize the (frozen) ``epsilon``, ``lower``/``upper`` and the power-of-two
        cell count field ``name`` (in ``[lo, hi]``); returns ε."""
        eps = check_epsilon(self.epsilon)  # type: ignore[attr-defined]
        object.__setattr__(self, "epsilon", eps)
        low, up = check_range(self.lower, self.upper)
        object.__setattr__(self, "lower", low)
        object.__setattr__(self, "upper", up)
        object.__setattr__(self, name, check_power_of_two(name, getattr(self, name), lo, hi))
        return eps

    def encode(self, values: Any) -> np.ndarray:
        """Each number's cell in ``[0, grid)`` (errors give the position, never the value)."""
        x = real_numbers(values.to_numpy() if hasattr(values, "to_numpy") else values)
        bad = ~np.isfinite(x) | (x < self.lower) | (x > self.upper)
        if bad.any():
            raise LDPInputError(f"{int(bad.sum())} value(s) are missing or outside [lower, upper] = [{self.lower!r}, {self.upper!r}] "
                                f"(first at position {int(np.flatnonzero(bad)[0])}); clip or drop them before randomizing")
        cells = self.grid  # type: ignore[attr-defined]
        return np.clip(np.floor((x - self.lower) / (self.upper - self.lower) * cells).astype(np.int64), 0, cells - 1)

    @property
    def realized_epsilon(self) -> float:
        return epsilon_of_ratio(self.realized_ratio)  # type: ignore[attr-defined]

    @property
    def domain_size(self) -> int:
        return self.grid  # type: ignore[attr-defined]

    def verification_input_count(self) -> int:
        return self.grid  # type: ignore[attr-defined]


class LeafClient(NumberCells):
    """Mixin: ``randomize`` / ``randomize_encoded`` / ``randomize_one`` on the cells; the class
    supplies ``_randomize_codes`` and inherits ``_check_client_arguments`` from the mechanism base."""

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None) -> Any:
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)  # type: ignore[attr-defined]
        return self._randomize_codes(self.encode(values), as_source(rng))  # type: ignore[attr-defined]

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> Any:
        """Reports for cells ``k`` in ``[0, grid)``."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)  # type: ignore[attr-defined]
        return self._randomize_codes(check_codes(codes, self.grid, "cells"), as_source(rng))  # type: ignore[attr-defined]

    def randomize_one(self, value: Any, *, rng: RNGLike = None, user_key: Any = None) -> Any:
        self._check_client_arguments(user_keys=None if user_key is None else [user_key])  # type: ignore[attr-defined]
        return self._report_of_one(self.randomize(real_numbers([value]), rng=rng))  # type: ignore[attr-defined]


class ColumnReports:
    """Reports as a dict of named columns (the tree mechanisms): the columns codec; one user's
    report is the batch of one."""

    def _to_columns(self, reports: Any) -> dict:
        return dict(reports)

    def _from_columns(self, cols: dict) -> dict:
        return {k: np.asarray(v) for k, v in cols.items()}

    def _report_of_one(self, reports: Any) -> Any:
        return reports


class AccumulatedEstimate:
    """``estimate`` / ``estimate_from`` for mechanisms whose accumulator makes the estimate itself
    (the frequency-oracle keywords ``candidates``/``postprocess`` do not apply)."""

    def estimate(self, reports: Any, *, candidates: Any = None, postprocess: Any = None, **options: Any) -> Any:
        """Aggregate ``reports`` and estimate; ``options`` are the accumulator's ``estimate``
        keywords (an unknown one is refused, never ignored)."""
        self._refuse_frequency_options(candidates, postprocess)  # type: ignore[attr-defined]
        acc = self.accumulator()  # type: ignore[attr-defined]
        _check_options(self, acc.estimate, options)
        return acc.add(reports).estimate(**options)

    def estimate_from(self, acc: Any, *, candidates: Any = None, postprocess: Any = None, **options: Any) -> Any:
        self._refuse_frequency_options(candidates, postprocess)  # type: ignore[attr-defined]
        _check_options(self, acc.estimate, options)
        return acc.estimate(**options)


def _check_options(mech: Any, estimate: Any, options: dict) -> None:
    """Refuse an option the accumulator's ``estimate`` does not take (a misspelt keyword)."""
    params = inspect.signature(estimate).parameters
    unknown = sorted(k for k in options if k not in params)
    if unknown:
        raise LDPArgumentError(f"{mech.name}.estimate has no parameter(s) {unknown}; it takes reports, {', '.join(params)}")


@dataclass(frozen=True, kw_only=True)
class GridTree(LeafClient, ColumnReports, AccumulatedEstimate, MechanismBase):
    """Base of the tree mechanisms over ``buckets`` leaves of ``[lower, upper]`` (hierarchical
    histogram, HaarHRR): the shared fields and their checks; the subclass sets ``levels`` and
    ``realized_ratio`` in ``__post_init__`` after :meth:`_check_grid`."""

    capabilities = frozenset({Numeric, Verifiable, Distribution})

    input_kind: ClassVar[InputKind] = InputKind.NUMBER
    #: the allowed numbers of leaves (powers of two)
    bucket_range: ClassVar[tuple] = (2, 1 << 20)

    epsilon: float
    lower: float = 0.0
    upper: float = 1.0
    buckets: int = 1024
    levels: int = field(init=False, repr=False, compare=False)
    realized_ratio: Fraction = field(init=False, repr=False, compare=False)

    def _check_grid(self) -> tuple[float, int]:
        """Check and normalize ``epsilon``, ``lower``/``upper`` and ``buckets``; ``(ε, B)``."""
        return self._check_cells("buckets", *self.bucket_range), self.buckets

    @property
    def grid(self) -> int:
        return self.buckets
