"""What a report costs: the one ε every ledger, device and report header charges for a mechanism.

A mechanism realizes its channel against the exact binary value of its float ``epsilon`` (the
constructor's exact check); :func:`report_charge` charges that value, rounded up to what the
realized worst-case ratio needs when the mechanism declares one (``SupportRates``), through
:func:`ldp_plugin.exact.charge_up`. A keyed (memoized) mechanism's collection ``t`` costs its
lifetime increment ``collection_cost(t)`` (:func:`collection_charge`; :mod:`.lifetime`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..exact import charge_up
from .protocol import Keyed, SupportRates, has

__all__ = ["report_charge", "collection_charge"]


def report_charge(mechanism: Any) -> Fraction:
    """The ε one report of ``mechanism`` costs one user (``max_divergence``, per user): its float
    ε's exact binary value, at least ``ln`` of its realized worst-case ratio rounded up."""
    realized = mechanism.realized_ratio if has(mechanism, SupportRates) else None
    return charge_up(mechanism.epsilon, realized)


def collection_charge(mechanism: Any, t: int = 1) -> Fraction:
    """What collection ``t`` (1-based) charges: ``collection_cost(t)`` for a keyed mechanism (a
    function of ``t`` only), else :func:`report_charge`. Raises the keyed mechanism's
    ``UnboundedLossError`` where its charge is unbounded."""
    if has(mechanism, Keyed):
        return Fraction(mechanism.collection_cost(t))
    return report_charge(mechanism)
