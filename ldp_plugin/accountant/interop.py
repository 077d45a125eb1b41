"""OpenDP interop: privacy filters and compositors reserved in the ledger, pre-checked; kept
reports as data."""

from __future__ import annotations

import io
import json
from fractions import Fraction
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ..mechanisms.cohort import report_batch_arrays, report_batch_from_arrays
from .budget import BudgetExceededError, _cost_of, as_fraction


class _OpenDPInterop:
    # -- OpenDP interop ------------------------------------------------------------------------------
    def privacy_filter(self, query_id: str, epsilon: Any, *, input_domain: Any, input_metric: Any = None, cohorts: Optional[Iterable[int]] = None):
        """Reserve ``epsilon`` in the ledger (one spend), and hand out an OpenDP privacy filter
        (``make_fully_adaptive_composition`` + ``make_privacy_filter``, ``d_out = epsilon``) for
        interactive use in this process, wrapped so each query is **pre-checked** (a query the
        filter would reject would otherwise exhaust it)."""
        import opendp.prelude as dp

        eps = as_fraction(epsilon)
        rec = self.spend(query_id, eps, cohorts=cohorts, mechanism="opendp-privacy-filter")
        metric = input_metric if input_metric is not None else dp.discrete_distance()
        odo = dp.c.make_fully_adaptive_composition(input_domain, metric, dp.max_divergence())
        filt = dp.c.make_privacy_filter(odo, d_in=1, d_out=float(eps))
        return PrecheckedFilter(filt, rec.epsilon)

    def compositor(self, query_id: str, d_mids: Sequence[float], *, input_domain: Any, input_metric: Any = None, cohorts: Optional[Iterable[int]] = None):
        """Spend ``Σ d_mids`` and return ``make_adaptive_composition`` over those budgets."""
        import opendp.prelude as dp

        metric = input_metric if input_metric is not None else dp.discrete_distance()
        comp = dp.c.make_adaptive_composition(input_domain, metric, dp.max_divergence(), d_in=1, d_mids=[float(x) for x in d_mids])
        self.spend(query_id, comp, cohorts=cohorts, mechanism="opendp-adaptive-composition")
        return comp


class PrecheckedFilter:
    """An OpenDP privacy-filter queryable whose queries are checked against the remaining
    budget *before* they reach the filter (OpenDP exhausts a filter on a rejected query)."""

    def __init__(self, filter_measurement: Any, budget: Fraction):
        self._queryable = filter_measurement(1)
        self.budget = budget
        self.spent = Fraction(0)

    @property
    def remaining(self) -> Fraction:
        return self.budget - self.spent

    def __call__(self, measurement: Any):
        eps, _, _ = _cost_of(measurement, 1)
        if self.spent + eps > self.budget:
            raise BudgetExceededError(
                f"query needs epsilon={float(eps)!r} but the filter has {float(self.remaining)!r} left",
                requested=eps, remaining=self.remaining, cap="filter",
            )
        out = self._queryable(measurement)
        self.spent += eps
        return out


def _serialize(obj: Any) -> tuple[str, bytes]:
    buf = io.BytesIO()
    if type(obj).__module__.startswith("polars") and type(obj).__name__ == "DataFrame":
        obj.write_parquet(buf)
        return "polars", buf.getvalue()
    arrays = report_batch_arrays(obj)
    if arrays is not None:
        kind = arrays.pop("__kind__")
        np.savez(buf, **arrays)
        return kind, buf.getvalue()
    if isinstance(obj, np.ndarray) and obj.dtype != object:
        np.save(buf, obj, allow_pickle=False)
        return "numpy", buf.getvalue()
    return "json", json.dumps(obj, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)).encode()


def _deserialize(kind: str, blob: bytes) -> Any:
    buf = io.BytesIO(blob)
    if kind == "polars":
        import polars as pl

        return pl.read_parquet(buf)
    if kind == "cohort":

        return report_batch_from_arrays(kind, np.load(buf, allow_pickle=False))
    if kind == "numpy":
        return np.load(buf, allow_pickle=False)
    return json.loads(blob.decode())
