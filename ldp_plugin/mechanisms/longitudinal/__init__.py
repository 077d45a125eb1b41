"""Longitudinal (repeated-collection) mechanisms: one user's reports over many collections, with a
memoized permanent layer and a fresh instantaneous layer.

* :mod:`.base` — the shared memoization, keyed PRF, accounting (``LongitudinalMechanism``) and L-GRR;
  :class:`LifetimeTracker` (per-user charges of a series);
* :mod:`.hashed` — LOLOHA (a per-user hash, then L-GRR over the hashed values);
* :mod:`.unary` — L-OUE, L-OSUE, L-SUE and dBitFlipPM;
* :mod:`.memoized` — :class:`Memoized`, the RAPPOR-style memoized wrapper of k-RR, and
  :class:`DistinctValueGuard` / :func:`new_user_key`.

The repeated-collection bound and its proof: :mod:`ldp_plugin.mechanisms.lifetime`.
"""

from .base import LGRR, LifetimeTracker, LongitudinalMechanism
from .hashed import LOLOHA, loloha_optimal_g
from .unary import LOSUE, LOUE, LSUE, DBitFlipPM
from .memoized import DistinctValueGuard, Memoized, new_user_key

__all__ = ["LongitudinalMechanism", "LGRR", "LOLOHA", "loloha_optimal_g", "LOUE", "LOSUE", "LSUE", "DBitFlipPM",
           "LifetimeTracker", "Memoized", "DistinctValueGuard", "new_user_key"]
