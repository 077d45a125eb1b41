"""The shuffled batch as an OpenDP measurement whose map is a privacy profile."""

from __future__ import annotations

from typing import Any

import numpy as np

import opendp.prelude as dp

from .._errors import LDPParameterError
from ..measurements import batch_domain, require_ldp_features
from ..sampling import as_source
from .analysis import central_delta

__all__ = ["make_shuffle_amplified"]


def make_shuffle_amplified(mechanism: Any, n: int):
    """The shuffled batch as an OpenDP measurement: ``n`` users' values in, their reports out
    in random order; input metric ``symmetric_distance`` (one user's value replaced = distance
    2 in OpenDP's convention, i.e. ``d_in <= 2``), output measure ``smoothed_max_divergence()``
    whose map is a privacy profile (ε ↦ the smallest certified δ of :func:`central_delta`), so
    ``make_fix_delta`` and OpenDP's compositors apply. The shuffle itself is done with the OS
    CSPRNG; a batch below the guaranteed minimum ``n`` is refused before any report is drawn.
    Asserts OpenDP's features (:func:`ldp_plugin.enable_ldp_features` is the user's call)."""
    require_ldp_features()
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise LDPParameterError(f"n (the guaranteed minimum batch) must be an integer >= 2 (got {n!r})")
    n = int(n)

    def function(values):
        vals = list(values)
        if len(vals) < n:
            raise LDPParameterError(f"the shuffled batch has {len(vals)} reports, below the guaranteed minimum n={n}")
        src = as_source(None)
        reports = mechanism.randomize(vals)
        cols = mechanism.base._to_columns(reports)
        order = np.argsort(src.words(len(vals)))  # a uniformly random permutation (distinct words w.p. ~1)
        return mechanism.base._from_columns({k: np.asarray(v)[order] for k, v in cols.items()})

    def privacy_map(d_in):
        if isinstance(d_in, bool) or not isinstance(d_in, int) or d_in < 0:
            raise LDPParameterError("d_in must be a non-negative Python int")
        if d_in == 0:
            return dp.new_privacy_profile(lambda eps: 0.0).curve  # the FFI object OpenDP passes on
        if d_in > 2:
            raise LDPParameterError("the shuffle bound covers one user's change (symmetric distance <= 2)")
        return dp.new_privacy_profile(lambda eps: central_delta(mechanism, n, eps)).curve

    return dp.m.make_user_measurement(
        batch_domain(mechanism),
        dp.symmetric_distance(),
        dp.smoothed_max_divergence(),
        function,
        privacy_map,
    )
