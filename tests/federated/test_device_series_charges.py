"""Every charge a device makes for a keyed (memoized) series covers the exact transcript loss.

For EVERY keyed mechanism in the registry (and the memoized wrapper), on the device path: one
device answers up to 8 collections of the series while its value changes every collection (it
walks through every unit of the domain, and once holds a value outside the domain, which the
domain rule replaces by a random one). After each answered collection ``T``, the device's ledger
is compared with the exact worst-case transcript loss of ``T`` collections at the user level —
the exact ratio over every pair of unit histories the transcript layer enumerates
(:mod:`ldp_plugin.verification.transcript`), with **no** bound on the number of distinct units a
history uses: whatever the charge assumes must hold for the histories the device can really
produce. A collection the ledger refuses (an unbounded charge) releases nothing.

Also: no mechanism takes ``user_keys=`` without being keyed (charged as a series): the memoized
1BitMean bit is refused."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.exact import epsilon_of_ratio
from ldp_plugin.federated import DeviceFleet, DevicePolicy, Query
from ldp_plugin.mechanisms.lifetime import user_bound
from ldp_plugin.mechanisms.protocol import Keyed, has
from ldp_plugin.registry import KINDS, load_registry
from ldp_plugin.verification.histories import worst_cases

REG = load_registry(kinds=KINDS)
T_MAX = 8


def _instances():
    out = []
    for name, decl in sorted(REG.items()):
        m = decl.mechanism_class()(**dict(decl.canonical[0]))
        if has(m, Keyed) or m.needs_user_keys:
            out.append(pytest.param(m, id=name))
    out.append(pytest.param(ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=3, max_values=1), id="memoized-krr"))
    return out


KEYED = _instances()


def test_the_loop_covers_every_keyed_name():
    names = {p.values[0].name for p in KEYED}
    assert names >= {"l-grr", "l-oue", "l-osue", "l-sue", "loloha", "dbitflip", "memoized-krr"}


def _worst_losses(model, T_top):
    """``{T: (float loss, exact ratio or None)}``: the exact worst pair of unit histories of every
    length up to ``T_top`` at the user level (:func:`ldp_plugin.verification.histories.worst_cases`),
    with every number of distinct units allowed (``unit_bound`` lifted to the domain size)."""
    unbounded = dataclasses.replace(model, unit_bound=model.units)
    out = {}
    for (relation, T), wc in worst_cases(unbounded, T_top).items():
        if relation == "user":
            out[T] = (float("inf") if wc.ratio is None else epsilon_of_ratio(wc.ratio), wc.ratio)
    return out


@pytest.mark.parametrize("mech", KEYED)
def test_the_device_ledger_covers_the_exact_loss_of_changing_values(mech, tmp_path):
    model = mech.transcript_model()
    widest = max(len(c[0]) for c in model.inst)
    t_top = 1
    while t_top < T_MAX and widest ** (t_top + 1) <= 1 << 16:
        t_top += 1
    held = np.empty(1, dtype=object)
    fleet = DeviceFleet(tmp_path / "dev.sqlite", held, lifetime_cap="10000",
                        policy=DevicePolicy(max_epsilon_per_query=Fraction(10000)))
    d = int(mech.domain_size)
    answered = 0
    worst = _worst_losses(model, t_top)
    try:
        for t in range(1, t_top + 1):
            held[0] = None if t == 4 else (3 * t) % d  # a new value every collection, once outside the domain
            r = fleet.respond(Query.for_mechanism(f"series-c{t}", mech).to_json())
            before = fleet.ledger.spent()
            if r["reports"]:
                answered += 1
            else:  # refused (an unbounded charge): nothing released, nothing charged
                assert r["refused"] == {"budget_exhausted": 1} and mech.lifetime_bound(t) is None
                assert fleet.ledger.spent() == before
                break
            charged = fleet.ledger.spent()
            loss, exact = worst[t]
            assert exact is not None, (t, loss)
            assert loss <= float(charged) + 1e-9 and epsilon_of_ratio(exact) <= float(charged) + 1e-12, (t, loss, float(charged))
        assert answered >= 1
    finally:
        fleet.close()


def test_a_charge_that_assumed_distinct_values_would_fail_here():
    """The power of the test above: charging memoized-krr with ``K = min(T, max_values)`` (the
    old assumption, enforced nowhere) falls below the exact loss of histories that use more
    values than ``max_values``."""
    m = ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=3, max_values=1)
    assumed = dataclasses.replace(m.transcript_model(), unit_bound=1)
    lt = m._lifetime
    T = 6
    old_charge = user_bound(T, eps_one=lt["eps_one"], eps_inst=lt["eps_inst"], eps_perm=lt["eps_perm"], units=3, unit_bound=assumed.unit_bound)
    loss, _ = _worst_losses(m.transcript_model(), T)[T]
    assert loss > float(old_charge) + 0.1
    assert loss <= float(m.lifetime_bound(T)) + 1e-9


def test_numeric_mechanisms_take_no_user_keys():
    """1BitMean's memoized bit was the one un-keyed memoization: refused, like every numeric
    mechanism's (tests/test_client_entry_points.py checks the other kinds)."""
    for name, decl in sorted(REG.items()):
        m = decl.mechanism_class()(**dict(decl.canonical[0]))
        if m.input_kind != "number":
            continue
        assert not has(m, Keyed)
        with pytest.raises(LDPParameterError, match="user_keys= applies only to keyed"):
            m.randomize(np.linspace(m.lower, m.upper, 4), user_keys=[bytes(32)] * 4)
