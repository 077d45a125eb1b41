"""Shared pieces of the mechanism protocol (re-exported by :mod:`.protocol`): native set input
(CSR), seeded ``(seed, value)`` reports, mergeable count accumulators, kept report batches."""

from __future__ import annotations

import copy
import functools
from typing import Any, Callable, ClassVar

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from .domain import check_codes, check_offsets
from .sets import set_codes, limit_sets
from .tagged import check_origin
from ..estimation import pure_variance
from ..sampling import as_source
from .protocol import InputKind

__all__ = ["MergeableCounts", "OutputCounts", "SeededReports", "SetInput"]


def check_report_layout(mech: Any, reports: Any) -> None:
    """A report batch has its mechanism's columns, shapes and dtypes (integer or boolean fields;
    no row is scanned: each accumulator checks its rows' ranges), else :class:`LDPInputError` —
    ``None``, text, floats (never truncated into counts) or an array of another shape are refused
    before anything is counted, never with a raw numpy or Python error."""
    base = mech.base
    fields = base.report_fields()
    parts = reports if isinstance(reports, tuple) else (reports,)
    if any(isinstance(p, np.ndarray) and p.size and p.dtype.kind not in "iub" for p in parts):  # before a cast to the fields' dtypes
        raise LDPInputError(f"{base.name} reports must hold integers (got an array of dtype {next(p.dtype for p in parts if isinstance(p, np.ndarray))})")
    try:
        cols = base._to_columns(reports)
        arrays = [np.asarray(cols[f.name]) for f in fields]
    except LDPInputError:
        raise
    except (TypeError, ValueError, IndexError, KeyError, AttributeError):
        raise LDPInputError(f"{base.name} reports must be a batch of its reports (columns {[f.name for f in fields]})") from None
    if isinstance(reports, np.ndarray) and reports.ndim == 2 and len(fields) > 1 and not any(f.width for f in fields) and reports.shape[1] != len(fields):
        raise LDPInputError(f"{base.name} reports must be an (n, {len(fields)}) array: one column per field {[f.name for f in fields]}")
    n = arrays[0].shape[0] if arrays and arrays[0].ndim else None
    for f, a in zip(fields, arrays):
        if n is None or a.ndim != (2 if f.width else 1) or a.shape[0] != n or (f.width and a.shape[1] != f.width):
            raise LDPInputError(f"{base.name} report column {f.name!r} does not have the mechanism's shape")
        if a.size and (a.dtype != np.bool_ if f.dtype == "bool" else (a.dtype.kind not in "iu")):
            raise LDPInputError(f"{base.name} report column {f.name!r} must hold {'booleans' if f.dtype == 'bool' else 'integers'} (got dtype {a.dtype})")


def _origin_checked(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def add(self: Any, reports: Any, *args: Any, **kwargs: Any) -> Any:
        check_origin(self.mechanism, reports, base=True)
        check_report_layout(self.mechanism, reports)
        return fn(self, reports, *args, **kwargs)
    add._ldp_wrapped = True  # type: ignore[attr-defined]
    return add


class MergeableCounts:
    """``merge`` for accumulators whose state is integer arrays/counts that add up (the fields in
    ``_summed``); two accumulators merge only if they are of the same type and ``_identity()``."""

    _summed: ClassVar[tuple] = ("counts", "n")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every accumulator's ``add`` refuses a batch tagged with another spec than its
        mechanism's reports (:func:`.tagged.check_origin`), before it counts anything."""
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("add")
        if callable(fn) and not getattr(fn, "_ldp_wrapped", False):
            cls.add = _origin_checked(fn)  # type: ignore[method-assign]

    def _identity(self) -> Any:
        return self.mechanism

    def merge(self, other: Any):
        if type(other) is not type(self) or other._identity() != self._identity():
            raise LDPParameterError("can only merge accumulators of the same mechanism and parameters")
        out = copy.copy(self)
        for name in self._summed:  # a field still None (nothing added yet) is the sum's identity
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(out, name, theirs if mine is None else mine if theirs is None else mine + theirs)
        return out


class OutputCounts(MergeableCounts):
    """Exact integer counts of each output of a mechanism whose report is one integer in
    ``[0, size)`` (a 1-d batch): batches, grouped (histogram) scans, partitions and devices merge."""

    _summed = ("counts", "n")

    def __init__(self, mechanism: Any, size: int):
        self.mechanism = mechanism
        self.counts = np.zeros(int(size), dtype=np.int64)
        self.n = 0

    def add(self, reports: Any):
        m, size = self.mechanism, self.counts.size
        r = np.asarray(reports)
        if r.ndim != 1 or (r.size and (r.dtype.kind not in "iu" or r.min() < 0 or r.max() >= size)):
            raise LDPInputError(f"{m.name} reports must be a 1-d batch of integers in [0, {size})")
        self.counts += np.bincount(r.astype(np.int64), minlength=size)
        self.n += int(r.size)
        return self

    def add_histogram(self, columns: dict, weights: Any):
        """Distinct report values with their counts (a grouped Parquet scan)."""
        values = np.asarray(columns["report"]).astype(np.int64)
        w = np.asarray(weights, dtype=np.int64)
        if values.size and (values.min() < 0 or values.max() >= self.counts.size):
            raise LDPInputError("reports outside the mechanism's output range")
        np.add.at(self.counts, values, w)
        self.n += int(w.sum())
        return self


class SetInput:
    """Native set mechanisms: the encoded input is CSR (item codes + offsets), sets of one when
    ``offsets`` is omitted; sets longer than ``m`` follow the mechanism's ``on_long`` policy."""

    input_kind: ClassVar[InputKind] = InputKind.SET

    def encode_sets(self, sets: Any) -> tuple:
        """``(codes, offsets)`` of a batch of sets (validated: known items, no repeats)."""

        return set_codes(sets, self)

    def randomize(self, sets: Any, *, rng: Any = None, cohorts: Any = None, user_keys: Any = None):
        """Randomize a batch of per-user sets (lists of items; a Polars List column)."""
        codes, offsets = self.encode_sets(sets)
        return self.randomize_encoded(codes, offsets=offsets, rng=rng, cohorts=cohorts, user_keys=user_keys)

    def _batch_of_one(self, items: Any) -> list:
        """One user's set (or a single item) as a batch of one set."""
        return [list(items) if isinstance(items, (list, tuple, set, frozenset)) else [items]]

    def randomize_encoded(self, codes: Any, *, rng: Any = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None):
        """Sets as CSR item codes (``offsets`` omitted: sets of one)."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        source = as_source(rng)
        codes = check_codes(codes, int(self.d))
        offsets = np.arange(codes.size + 1, dtype=np.int64) if offsets is None else check_offsets(offsets, codes.size)
        codes, offsets, lengths = limit_sets(codes, offsets, self.m, self.on_long, source)
        return self._randomize_csr(codes, offsets, lengths, source)


class PureSetVariance:
    """The variance of a pure set oracle's estimate (its realized ``p*``, ``q*``) at the users' own
    set-item frequencies ``f`` (Σ f = the mean set size, at most ``m``): ``Var f̂_i`` of each item
    (:func:`~ldp_plugin.estimation.pure_variance`, Wang et al. (USENIX Security 2017) Eq. 5 with
    the set rates; Wang et al. (PVLDB 2020) Thm 6 for the wheel) and their sum."""

    def variance(self, f: Any, n: int) -> np.ndarray:
        return pure_variance(np.asarray(f, dtype=np.float64), n, self.p_star, self.q_star)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        if sampling != "fixed":  # never ignored: the set variance is at the users' own frequencies f
            raise LDPParameterError(f"{self.name}'s analytic_mse is at the users' own set-item frequencies f: sampling must be 'fixed'")
        return self.mse(n, f)

    def mse(self, n: int, f: Any = None) -> float:
        """``Σ_i Var f̂_i`` at ``f`` (default: uniform with Σ f = m)."""
        f = np.full(self.d, self.m / self.d) if f is None else np.asarray(f, dtype=np.float64)
        return float(self.variance(f, n).sum())


class SeededReports:
    """Reports stored natively as an ``(n, 2)`` ``uint64`` array ``(seed, value)`` (OLH, wheel)."""

    channel_is_client: ClassVar[bool] = False  # channel() enumerates the verification seeds only

    def _to_columns(self, reports: Any) -> dict:
        a = np.asarray(reports)
        if a.ndim != 2 or a.shape[1] != 2:
            raise LDPInputError(f"{self.name} reports must be an (n, 2) array of (seed, value)")
        return {"seed": a[:, 0], "report": a[:, 1]}

    def _from_columns(self, cols: dict) -> Any:
        seed = np.asarray(cols["seed"])
        out = np.empty((seed.shape[0], 2), dtype=np.uint64)
        out[:, 0] = seed
        out[:, 1] = cols["report"]
        return out
