"""One ε everywhere: what the ledger, the device and the shuffle record charge is what the
mechanism realizes, rounded up — the float's exact binary value, never its decimal text.

Over every registered name (canonical instances and seeded random draws), the exact realized ratio
of the channel is at most ``e^charge`` (exactly), where the charge is
:func:`ldp_plugin.mechanisms.charge.report_charge` — the one rule the accountant, the device and the
query use. The power check: for many of the same instances the decimal text's value (the device's
old charge) lies *below* the realized ln-ratio, so a test that charged it would fail.
"""

from __future__ import annotations

from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.accountant.budget import _cost_of
from ldp_plugin.exact import charge_up, ratio_within_exp
from ldp_plugin.federated import DeviceFleet, DevicePolicy, Query
from ldp_plugin.mechanisms.charge import collection_charge, report_charge
from ldp_plugin.mechanisms.protocol import Keyed, has
from ldp_plugin.registry import load_registry
from ldp_plugin.registry._loader import KINDS
from ldp_plugin.verification.draws import random_instances

_CTX = Context(prec=80)


def _ln(r: Fraction) -> Decimal:
    return _CTX.ln(Decimal(r.numerator)) - _CTX.ln(Decimal(r.denominator))


def _instances() -> list:
    out = []
    for name, decl in sorted(load_registry(kinds=KINDS).items()):
        cls = decl.mechanism_class()
        out += [(name, dict(inst), cls(**inst)) for inst in decl.canonical]
        out += [(name, inst, mech) for inst, mech in random_instances(decl, seed=5, count=2)]
    return out


INSTANCES = _instances()


@pytest.mark.slow
def test_every_charge_covers_the_realized_ratio_exactly():
    below_decimal = 0
    names = set()
    for name, inst, mech in INSTANCES:
        ratio = mech.channel().max_ratio()
        charge = report_charge(mech)
        assert Fraction(float(charge)) == charge, (name, inst)  # a float's exact value: no decimal text
        assert ratio_within_exp(ratio, float(charge)), (name, inst, float(charge))
        # the charge is the mechanism's float ε exactly (its realized ratio is within it)
        assert charge == Fraction(float(mech.epsilon)), (name, inst)
        if has(mech, Keyed):  # collection 1 of a series: the lifetime bound's first step
            assert ratio_within_exp(ratio, float(collection_charge(mech, 1)))
        else:
            assert collection_charge(mech, 1) == charge
        # the accountant charges the same number
        assert _cost_of(mech, 1)[0] == charge
        names.add(name)
        if _ln(ratio) > Decimal(repr(float(mech.epsilon))):
            below_decimal += 1  # the decimal text would have been charged below what is realized
    assert names == set(load_registry(kinds=KINDS))
    assert below_decimal >= 10, below_decimal  # power: the old charge was wrong on many instances


def test_charge_up_rounds_up_and_covers_a_realized_ratio_above_the_declared_one():
    assert charge_up(0.1) == Fraction(0.1) > Fraction("0.1")
    assert charge_up(0.3) == Fraction(0.3) < Fraction("0.3")  # the mechanism is built with this float
    third = Fraction(1, 3)
    assert charge_up(third) >= third and Fraction(float(charge_up(third))) == charge_up(third)
    r = Fraction(3)  # realized e^{ln 3} above a declared 1.0: the charge is ln 3 rounded up
    c = charge_up(1.0, r)
    assert c > 1 and ratio_within_exp(r, float(c)) and not ratio_within_exp(r, float(np.nextafter(float(c), 0)))
    for bad in (float("inf"), float("nan"), True, "0.1"):
        with pytest.raises(ValueError):
            charge_up(bad)


def test_the_device_and_the_query_charge_the_realized_value(tmp_path):
    mech = ldp.KRR(epsilon=0.1, d=4)
    q = Query.for_mechanism("q-one-eps", mech)
    assert q.epsilon == "0.1" and q.epsilon_exact == report_charge(mech) == Fraction(0.1) > Fraction("0.1")
    fleet = DeviceFleet(tmp_path / "d.sqlite", np.arange(20) % 4, lifetime_cap="1", policy=DevicePolicy(max_epsilon_per_query=Fraction(1)))
    reply = fleet.respond(q.to_json())
    assert len(reply["reports"]) == 20
    spent = [r.epsilon for r in fleet.ledger.history()]
    assert spent == [Fraction(0.1)]
    ratio = mech.channel().max_ratio()
    assert _ln(ratio) <= Decimal(Fraction(0.1).numerator) / Decimal(Fraction(0.1).denominator)
