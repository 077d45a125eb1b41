"""The device side of a secure sum (no Flower import): what a node contributes to SecAgg+.

:func:`contribute` is called by the secure-sum ClientApp (:mod:`~ldp_plugin.federated.secure_sum`)
with the query JSON and the parameters Flower's SecAgg+ setup stage gave the node. It checks,
cheapest first and **before any spend**: the query parses and re-derives (the device computes the
configuration itself, :meth:`SecureSumQuery.derive`); SecAgg+'s setup is exactly that
configuration (same node count, shares, threshold, clipping, quantization, modulus, weight); the
reconstruction threshold — the fewest devices a released sum can hold — is at least the owner's
``secure_sum_min_participants``; ``d`` is at most the owner's ``secure_sum_max_bins``; the node
hosts at most ``site_bound`` devices; the owner's policy allows the option (``allowed_mechanisms``:
``"krr"`` for summed local reports, ``"secure-sum-skellam"`` for distributed noise) and its ε.
Every check reads only the query, the setup and the owner's configuration — never a value — so a
refusal reveals nothing about the data. A refusal raises :class:`SecureSumRefusal` (the node then
sends no masked vector: SecAgg+ treats it as dropped before masking, it is not summed).

Then it spends once per device (one transaction, :meth:`Accountant.release`, reports kept: a
retried round returns the **same** vector, never a fresh randomization) and builds the vector:

* ``"noise"``: per bin, the count of the node's devices with that value plus Skellam(μ_dev)
  (exact, OS CSPRNG); each device is charged the central ``(ε, δ)`` of Skellam(t · μ_dev) — the
  noise in any released sum — as ε in its ledger, with δ, μ and t in the audit row;
* ``"local"``: per bin, the count of the node's devices whose k-RR report is that bin; each device
  is charged ε₀ and the ledger records the central ``(ε, δ)`` of the shuffle bound at ``t``
  reports (:meth:`Accountant.record_shuffle`; the argument is in
  :mod:`~ldp_plugin.federated.secure_query`).

A device's value outside ``[0, d)`` is replaced by the device's fixed domain rule (a uniformly
random category), never refused: the answer depends on the values only through the sum.

The last entry is the number of devices summed. A noisy entry outside the clipping range (a
failure of probability at most β, accounted in δ) is left for SecAgg+ to clip.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..accountant.budget import as_fraction
from ..sampling import SecureRandomSource
from ..sampling.poisson import skellam_dyadic
from ..mechanisms import KRR
from .domain_rule import in_domain
from .secure_config import SecureSumConfigError
from .secure_query import NOISE_MECHANISM, SecureSumQuery

__all__ = ["contribute", "SecureSumRefusal", "SECURE_REFUSALS"]

SECURE_REFUSALS = ("malformed_query", "setup_mismatch", "below_min_participants", "too_many_bins", "above_site_bound",
                   "mechanism_not_allowed", "epsilon_above_policy", "budget_exhausted", "interrupted", "ledger_tampered", "device_misconfigured")


class SecureSumRefusal(Exception):
    """The node does not contribute; ``reason`` is one of :data:`SECURE_REFUSALS` (or, from the
    ClientApp, a :class:`~ldp_plugin.federated.device.DeviceRefusal` code: the fleet cannot open)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _check(fleet: Any, query_json: str, setup: Mapping[str, Any]) -> tuple:
    try:
        q = SecureSumQuery.from_json(query_json)
        dv = q.derive()
    except (LDPInputError, LDPParameterError, SecureSumConfigError):
        raise SecureSumRefusal("malformed_query") from None
    if not dv.config.matches_setup(setup):
        raise SecureSumRefusal("setup_mismatch")
    policy = fleet.policy
    if dv.threshold < policy.secure_sum_min_participants:
        raise SecureSumRefusal("below_min_participants")
    if q.d > policy.secure_sum_max_bins:
        raise SecureSumRefusal("too_many_bins")
    if fleet.n_devices > q.site_bound:
        raise SecureSumRefusal("above_site_bound")
    name, eps = ("krr", dv.mechanism.epsilon) if q.option == "local" else (NOISE_MECHANISM, dv.charge.epsilon)
    reason = policy.refusal(name, eps if q.option == "noise" else q.epsilon_exact)
    if reason is not None:
        raise SecureSumRefusal(reason)
    return q, dv, name


def contribute(fleet: Any, query_json: str, setup: Mapping[str, Any]) -> np.ndarray:
    """The node's ``d + 1`` integer entries for the secure sum (module docstring), or
    :class:`SecureSumRefusal`. ``fleet`` is an opened :class:`~ldp_plugin.federated.device.DeviceFleet`."""
    q, dv, name = _check(fleet, query_json, setup)
    ledger = fleet.ledger
    if fleet.keystore is not None and fleet.keystore.verify_ledger(ledger.path) is not None:
        raise SecureSumRefusal("ledger_tampered")
    qid = "secure-sum:" + q.content_hash.hex()
    status = ledger.release_status(qid)
    if status in ("started", "partial"):
        raise SecureSumRefusal("interrupted")
    if status == "released":
        return np.asarray(ledger.kept_reports(qid)["vector"], dtype=np.int64)
    cost = dv.mechanism if q.option == "local" else dv.charge.epsilon
    each = as_fraction(float(dv.mechanism.epsilon)) if q.option == "local" else dv.charge.epsilon  # what spend charges each device
    remaining = ledger.remaining_by_cohort()
    fit = [i for i in range(fleet.n_devices) if remaining[i] >= each]
    if not fit:
        raise SecureSumRefusal("budget_exhausted")
    codes = _codes(fleet.values[fit], q.d)

    def produce() -> dict:
        nonlocal codes
        if q.option == "local":
            codes = np.asarray(dv.mechanism.randomize_encoded(codes), dtype=np.int64)  # the OS CSPRNG
        vec = np.bincount(codes, minlength=q.d).astype(np.int64)
        if q.option == "noise":
            vec += skellam_dyadic(SecureRandomSource(), dv.m, dv.T, q.d)
        return {"vector": [int(v) for v in vec] + [len(fit)]}

    params = {"secure_sum": q.to_dict(), "threshold": dv.threshold}
    if q.option == "noise":
        params.update(dv.charge.to_dict())
    try:
        kept = ledger.release(qid, cost, produce, cohorts=fit, keep_reports=True, mechanism=name if q.option == "noise" else None, params=params)
        if q.option == "local":
            ledger.record_shuffle(qid, dv.mechanism, batch_id=qid, n_min=dv.threshold, n_observed=dv.threshold, delta=q.delta, cohorts=fit)
    finally:
        if fleet.keystore is not None:
            fleet.keystore.anchor_ledger(ledger.path)
    return np.asarray(kept["vector"], dtype=np.int64)


def _codes(values: np.ndarray, d: int) -> np.ndarray:
    """The devices' categories as codes in ``[0, d)`` by the device's fixed out-of-domain rule
    (:mod:`~ldp_plugin.federated.domain_rule`: a value k-RR over ``d`` categories cannot encode
    becomes a uniformly random category, OS CSPRNG). Never a refusal: ``d`` is the query's, so a
    refusal on a value ``>= d`` would tell the server the largest value a node's users hold."""
    return np.asarray(in_domain(KRR(epsilon=1.0, d=d), values).data, dtype=np.int64)
