"""OpenDP measurements for numeric means and longitudinal reports.

The numeric mechanisms go through :func:`ldp_plugin.measurements.make_ldp` unchanged (one user's
number in ``[lower, upper]`` → one report; ``max_divergence``; map ``0 if d_in == 0 else ε``).
A longitudinal (keyed) measurement takes the input a user holds — the value's code — and holds
the user's secret key inside (:func:`make_longitudinal`); its map is the instantaneous layer's
``ε_inst`` per call, which composes correctly over repeated calls (the lifetime bound a ledger
charges for a whole series is the mechanism's ``collection_cost``, see
:mod:`ldp_plugin.mechanisms.lifetime`).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional, Sequence

import numpy as np
import opendp.prelude as dp

from ._errors import LDPInputError, LDPParameterError
from ._opendp_boundary import checked
from .exact import float_up
from .measurements import enable_ldp_features, make_duchi, make_hybrid, make_one_bit_mean, make_piecewise, make_rue  # noqa: F401  (compatibility re-exports: the pairs live in measurements)
from .sampling import RNGLike, as_source

__all__ = ["make_rue", "make_duchi", "make_piecewise", "make_hybrid", "make_one_bit_mean", "make_longitudinal"]


def make_longitudinal(mechanism: Any, *, key: Optional[bytes] = None, rng: RNGLike = None) -> dp.Measurement:
    """Reports of a keyed (memoized) longitudinal ``mechanism`` for **one user**: input the code of
    the value the user holds, output one report per call; the user's secret key is held inside
    the measurement (a fresh 32-byte OS-CSPRNG key per measurement unless ``key`` is passed).
    ``discrete_distance``, ``max_divergence``, map ``0 if d_in == 0 else ε_inst`` (rounded up).

    Guarantee (user level: any two values of the user at each call). With the key hidden, the
    permanent table ``B`` is random but *shared by every call*: one call, conditioned on any past
    outputs of this key, is a mixture over the posterior of ``B`` of the instantaneous layer, hence
    ``ε_inst``-LDP (:mod:`ldp_plugin.mechanisms.lifetime`, Lemma 2) — so OpenDP's sequential
    composition of ``T`` calls (``T·ε_inst``) is valid even though the calls share the key.
    ``ε₁`` (one report's ε) is **not** a valid map: after a few calls the permanent layer is
    known and a call costs ``ε_inst`` (a black-box audit of the measurement finds it). A ledger
    that charges a whole series should charge ``mechanism.collection_cost(t)`` (tighter over
    many collections). dBitFlipPM has no instantaneous layer: its measurement answers **once**
    (map ``ε∞``; a second call is refused — it would be unbounded) and takes no ``key=`` (a key
    shared with another measurement would make its one call unbounded too).

    >>> import ldp_plugin as ldp
    >>> mech = ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=8)
    >>> m = ldp.make_longitudinal(mech)
    >>> 0 <= int(m(3)[0]) < 8, m.map(1) == float(mech.epsilon_inst) > mech.epsilon_1
    (True, True)
    """
    enable_ldp_features()
    if not getattr(mechanism, "needs_user_keys", False) or not hasattr(mechanism, "collection_cost") or not hasattr(mechanism, "epsilon_inst"):
        raise LDPParameterError("make_longitudinal takes a longitudinal mechanism (l-grr, l-oue, l-osue, l-sue, dbitflip, loloha)")
    once = mechanism.epsilon_inst is None
    if once and key is not None:
        raise LDPParameterError(f"{mechanism.name} has no instantaneous layer: its measurement holds its own fresh key (no key=)")
    if key is None:
        key = os.urandom(32)
    if not isinstance(key, (bytes, bytearray)) or not 16 <= len(key) <= 255:
        raise LDPParameterError("key must be 16 to 255 bytes (the user's secret)")
    key = bytes(key)
    eps = float(mechanism.epsilon) if once else float_up(mechanism.epsilon_inst)
    d = int(mechanism.d)
    source = as_source(rng)
    state = {"calls": 0}
    lock = threading.Lock()
    domain = dp.user_domain(f"LDPValueCode(d={d}, {mechanism.name}, keyed)", lambda _x: True)

    def check_code(code):  # run before the FFI call too (the OpenDP boundary), so the error is the library's
        if isinstance(code, bool) or not isinstance(code, (int, np.integer)) or not 0 <= int(code) < d:
            raise LDPInputError(f"the measurement's argument must be one item code in [0, {d}) (an int; got type {type(code).__name__})")

    def function(code):
        check_code(code)
        with lock:
            if once and state["calls"]:
                raise LDPParameterError(f"{mechanism.name} has no instantaneous layer: a second report of the same key has "
                                        "unbounded user-level privacy loss (refused)")
            state["calls"] += 1
        return mechanism.randomize(np.array([int(code)]), [key], rng=source)

    def privacy_map(d_in):
        if isinstance(d_in, bool) or not isinstance(d_in, int) or d_in < 0:
            raise LDPParameterError("d_in must be a non-negative Python int")
        return 0.0 if d_in == 0 else eps

    return checked(dp.m.make_user_measurement(domain, dp.discrete_distance(), dp.max_divergence(), function, privacy_map), check_code)
