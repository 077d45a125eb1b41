"""OpenDP measurements for numeric means and longitudinal reports.

The numeric mechanisms go through :func:`ldp_plugin.measurements.make_ldp` unchanged (one user's
number in ``[lower, upper]`` → one report; ``max_divergence``; map ``0 if d_in == 0 else ε``).
A longitudinal report needs the user's secret key as well as the value, so its measurement takes
``(code, key)`` pairs; its map is the ε of **one report** (``epsilon_1``); what a series of
reports costs a user over its lifetime is the mechanism's ``lifetime_spend`` (charged by the
ledger / the device, :class:`ldp_plugin.LifetimeTracker`), not this map.
"""

from __future__ import annotations

from typing import Any

import opendp.prelude as dp

from ._errors import LDPInputError, LDPParameterError
from .measurements import enable_ldp_features, make_duchi, make_hybrid, make_one_bit_mean, make_piecewise, make_rue  # noqa: F401  (compatibility re-exports: the pairs live in measurements)
from .sampling import RNGLike, as_source

__all__ = ["make_rue", "make_duchi", "make_piecewise", "make_hybrid", "make_one_bit_mean", "make_longitudinal"]


def make_longitudinal(mechanism: Any, *, rng: RNGLike = None) -> dp.Measurement:
    """One report of a longitudinal ``mechanism`` for one user: input ``(code, key)``, output the
    report; ``discrete_distance``, ``max_divergence``, map ``0 if d_in == 0 else ε1``.

    >>> import ldp_plugin as ldp
    >>> m = ldp.make_longitudinal(ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=8))
    >>> key = bytes(range(32))
    >>> 0 <= int(m((3, key))[0]) < 8, m.map(1)
    (True, 1.0)
    """
    enable_ldp_features()
    if not getattr(mechanism, "needs_user_keys", False) or not hasattr(mechanism, "lifetime_spend"):
        raise LDPParameterError("make_longitudinal takes a longitudinal mechanism (l-grr, l-oue, l-osue, l-sue, dbitflip, loloha)")
    eps = float(mechanism.epsilon)
    domain = dp.user_domain(f"LDPKeyedValue(d={mechanism.d}, {mechanism.name})", lambda _x: True)

    def function(pair):
        try:
            code, key = pair
        except (TypeError, ValueError):
            raise LDPInputError("a longitudinal report takes one (code, key) pair") from None
        import numpy as np

        return mechanism.randomize(np.array([int(code)]), [key], rng=as_source(rng))

    def privacy_map(d_in):
        if isinstance(d_in, bool) or not isinstance(d_in, int) or d_in < 0:
            raise LDPParameterError("d_in must be a non-negative Python int")
        return 0.0 if d_in == 0 else eps

    return dp.m.make_user_measurement(domain, dp.discrete_distance(), dp.max_divergence(), function, privacy_map)
