"""The device side: the randomizer runs where the value lives, and the device can refuse.

A :class:`DeviceFleet` is one device (``n_devices=1``: a phone, one SQLite file) or, in
simulation, many devices hosted by one node — each device is one cohort of the fleet's own
ledger, so every device's lifetime and per-period caps are enforced separately with the exact
Fraction rules and crash safety of :class:`ldp_plugin.Accountant` (a spend is committed before
any report exists; a retried query is charged once and answered with the kept reply, never a
fresh randomization; a killed device never under-counts).

For each query the fleet checks, cheapest first and before any randomization: the query's
version and hash, its mechanism against the local policy (allowed names, a maximum ε per query),
and every device's remaining budget; then it spends once (one transaction) for the devices that
fit, randomizes their values with the OS CSPRNG, and returns one wire report per device or a
refusal with a reason code. Raw values never leave it.

**Repeated collections** (a longitudinal mechanism: memoized by each device's key): a query of
the series is charged, on every device, the worst-case increment of the series' lifetime bound
at the device's collection number ``t`` (``mechanism.collection_cost(t)``: the increment of the
user-level bound, or of the value-level one if the series' spec names ``relation="value"``; see
:mod:`ldp_plugin.mechanisms.lifetime`) — a function of ``t`` only, never of the device's own
units, so a refusal reveals nothing about its values. An unbounded increment (dBitFlipPM's second
collection at the user level) is refused as ``budget_exhausted``. ``t`` is counted from the
device's own spends of queries with the same mechanism spec; devices at different ``t`` are
charged the largest of their increments (over-charging, never under-charging).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..mechanisms.lifetime import UnboundedLossError
from .query import Query

__all__ = ["DevicePolicy", "DeviceFleet", "REFUSAL_REASONS"]

REFUSAL_REASONS = ("unsupported_version", "malformed_query", "mechanism_not_allowed", "epsilon_above_policy", "budget_exhausted", "interrupted")


@dataclass(frozen=True)
class DevicePolicy:
    """What a device accepts: a maximum ε per query and (optionally) the mechanisms allowed."""

    max_epsilon_per_query: Fraction = Fraction(4)
    allowed_mechanisms: Optional[tuple] = None


def _table_spec(spec: Any) -> Any:
    """A spec without its charging ``relation`` (which changes no report)."""
    if isinstance(spec, dict) and isinstance(spec.get("params"), dict):
        return {**spec, "params": {k: v for k, v in spec["params"].items() if k != "relation"}}
    return spec


class DeviceFleet:
    """``values[i]`` is device ``i``'s value (it never leaves the fleet); its budget is cohort ``i``
    of the ledger at ``ledger_path``; ``keys[i]`` its secret (memoized mechanisms)."""

    def __init__(self, ledger_path: str | Path, values: Sequence, *, lifetime_cap: Any, period_cap: Any = None, period: Optional[str] = None,
                 policy: DevicePolicy = DevicePolicy(), name: str = "devices"):
        from ..accountant import Accountant, Population

        self.values = np.asarray(values)
        n = int(self.values.shape[0])
        if n < 1:
            raise LDPParameterError("a fleet needs at least one device")
        self.policy = policy
        self.keys = [os.urandom(32) for _ in range(n)]  # each device's secret, generated on the device
        self.ledger = Accountant.create(ledger_path, Population(name=name, lifetime_cap=lifetime_cap, period_cap=period_cap, period=period, cohorts=n),
                                        exist_ok=True)

    @property
    def n_devices(self) -> int:
        return int(self.values.shape[0])

    def respond(self, query_json: str) -> dict:
        """``{"ids": [16-byte report id per report], "reports": [wire bytes per accepting device],
        "refused": {reason: devices}, "retry": bool}``. Report ids are fresh random bytes (the
        collector refuses a report id it has seen: a replay)."""
        n = self.n_devices
        try:
            query = Query.from_json(query_json)
        except LDPInputError as e:
            reason = "unsupported_version" if "version" in str(e) else "malformed_query"
            return {"ids": [], "reports": [], "refused": {reason: n}, "retry": False}
        except LDPParameterError:
            return {"ids": [], "reports": [], "refused": {"malformed_query": n}, "retry": False}
        name = query.spec.get("name") or query.spec.get("mechanism", {}).get("name")
        if self.policy.allowed_mechanisms is not None and name not in self.policy.allowed_mechanisms:
            return {"ids": [], "reports": [], "refused": {"mechanism_not_allowed": n}, "retry": False}
        eps = query.epsilon_exact
        if eps > self.policy.max_epsilon_per_query:
            return {"ids": [], "reports": [], "refused": {"epsilon_above_policy": n}, "retry": False}
        try:
            mech = query.mechanism()
        except (LDPInputError, LDPParameterError):
            return {"ids": [], "reports": [], "refused": {"malformed_query": n}, "retry": False}
        qid = query.content_hash.hex()
        if hasattr(mech, "collection_cost") and self.ledger.release_status(qid) is None:
            try:
                eps = self._series_charge(query, mech)  # the worst-case lifetime increment, not ε of one report
            except UnboundedLossError:  # e.g. dBitFlipPM's second collection at the user level
                return {"ids": [], "reports": [], "refused": {"budget_exhausted": n}, "retry": False}
            if eps > self.policy.max_epsilon_per_query:
                return {"ids": [], "reports": [], "refused": {"epsilon_above_policy": n}, "retry": False}
        status = self.ledger.release_status(qid)
        if status in ("started", "partial"):  # charged, then killed or failed: never randomize twice
            return {"ids": [], "reports": [], "refused": {"interrupted": n}, "retry": True}
        if status == "released":  # a retried query: the kept reply, charged once
            kept = self.ledger.kept_reports(qid)
            return {"ids": [bytes.fromhex(h) for h in kept["ids"]], "reports": [bytes.fromhex(h) for h in kept["reports"]], "refused": kept["refused"], "retry": True}
        remaining = self.ledger.remaining_by_cohort()
        fit = [i for i in range(n) if remaining[i] >= eps]
        refused = {"budget_exhausted": n - len(fit)} if len(fit) < n else {}
        if not fit:
            return {"ids": [], "reports": [], "refused": refused, "retry": False}
        tag = query.content_hash

        def produce() -> dict:
            codes = mech.encode(self.values[fit]) if mech.input_kind == "value" else None
            if codes is None:
                reports = mech.randomize(list(self.values[fit]))
            elif mech.needs_user_keys:
                reports = mech.randomize_encoded(codes, user_keys=[self.keys[i] for i in fit])
            else:
                reports = mech.randomize_encoded(codes)  # the OS CSPRNG
            blobs = mech.to_wire_each(reports, tag=tag)
            return {"ids": [os.urandom(16).hex() for _ in blobs], "reports": [b.hex() for b in blobs], "refused": refused}

        kept = self.ledger.release(qid, eps, produce, cohorts=fit, keep_reports=True, mechanism=name, params=query.to_dict())
        return {"ids": [bytes.fromhex(h) for h in kept["ids"]], "reports": [bytes.fromhex(h) for h in kept["reports"]], "refused": kept["refused"], "retry": False}

    def _series_charge(self, query: Query, mech: Any) -> Fraction:
        """``max_i collection_cost(t_i)`` over the devices, ``t_i`` = 1 + device ``i``'s earlier
        collections of this series (its spends of a query with the same mechanism spec, whatever
        relation it names: both relations use the same keyed permanent table)."""
        done = np.zeros(self.n_devices, dtype=np.int64)
        for rec in self.ledger.history():
            if isinstance(rec.params, dict) and _table_spec(rec.params.get("spec")) == _table_spec(query.spec):
                done[list(rec.cohorts)] += 1
        return max(mech.collection_cost(int(t) + 1) for t in np.unique(done))

    def close(self) -> None:
        self.ledger.close()

