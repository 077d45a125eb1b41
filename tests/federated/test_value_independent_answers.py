"""A device's answer depends on its value only through the mechanism.

Forged queries chosen so that a refusal *would* depend on the value — categories that exclude it,
``d`` smaller than its code, tiny numeric ranges, ``m = 1`` for a long set, ε = 1e-6 probes,
attribute domains and key ranges that miss it, keyed series, oversized domains, broken specs —
are sent to one-device fleets holding very different values (in the domain, outside it, NaN,
None, huge numbers, text in other scripts, long sets, tuples, key–value lists, bytes). Every fleet
must give the same response class and a byte-identical reply apart from the random reports:
the same refusal codes and counts, the same retry flag, the same number of envelopes of the same
sizes. The out-of-domain rule (:mod:`ldp_plugin.federated.domain_rule`) is then checked to be a
mixture of the mechanism's channel rows, and the new owner policy fields to refuse before the spend.
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.federated import DeviceFleet, DevicePolicy, Query
from ldp_plugin.federated import device as device_module
from ldp_plugin.federated.device import REFUSAL_REASONS
from ldp_plugin.federated.domain_rule import in_domain
from ldp_plugin.registry import KINDS, from_spec, load_registry
from ldp_plugin.sampling import SeededRandomSource

REG = load_registry(kinds=KINDS)

#: what the devices hold: one device per fleet
HELD = {
    "in-domain code": 0,
    "another code": 1,
    "label": "zz",
    "nan": float("nan"),
    "none": None,
    "huge int": 10**400,
    "huge float": -1e308,
    "inf": float("inf"),
    "other script": "日本語テキスト",
    "emoji": "\U0001f600" * 40,
    "long set": list(range(50)),
    "set of labels": ["a", "b", "zz", "a"],
    "tuple": (1, 0),
    "key-value": [(0, 0.5), (0, 2.0), (7, float("nan"))],
    "bytes": b"\x00\xff",
    "bool": True,
    "dict": {"a": 1},
}


def _mk(name, **over):
    decl = REG[name]
    return decl.mechanism_class()(**{**dict(decl.canonical[0]), **over})


def _forged():
    """(label, query JSON) of the forged family; each query id is new."""
    mechs = [
        ("categories exclude the value", ldp.KRR(epsilon=1.0, categories=["a", "b"])),
        ("int categories", ldp.KRR(epsilon=1.0, categories=[5, 6, 7])),
        ("d smaller than the code", ldp.KRR(epsilon=1.0, d=2)),
        ("epsilon 1e-6 probe", ldp.KRR(epsilon=1e-6, d=2)),
        ("unary d=2", ldp.OUE(epsilon=1.0, d=2)),
        ("olh d=3", _mk("olh", d=3)),
        ("hadamard d=2", _mk("hadamard", d=2)),
        ("warner booleans", _mk("warner")),
        ("cohort oracle", _mk("orr")),
        ("open alphabet", ldp.ORR(epsilon=3.0, k=21, cohorts=16, hash_seed=7)),
        ("sketch", _mk("cms")),
        ("tiny range mean", ldp.Duchi(epsilon=1.0, lower=0.0, upper=1e-9)),
        ("far range mean", _mk("piecewise", lower=5.0, upper=6.0)),
        ("hybrid probe", _mk("hybrid", epsilon=1e-6)),
        ("distribution", _mk("square-wave", lower=-1.0, upper=-0.5)),
        ("hierarchy", _mk("hierarchical-histogram")),
        ("set m=1", _mk("wheel", m=1)),
        ("rappor-set m=1", _mk("rappor-set", m=1)),
        ("privset m=1", _mk("privset", m=1)),
        ("sample-one m=1", ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=3), m=1)),
        ("attributes", _mk("spl", domains=[2, 2])),
        ("attributes probe", _mk("rsfd", epsilon=1e-6, domains=[3, 2])),
        ("key-value d=1", _mk("pckv", d=1)),
        ("keyed series d=2", ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=2)),
        ("keyed hashed", _mk("loloha")),
        ("memoized d=2", ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=2, max_values=1)),
        ("oversized unary", ldp.OUE(epsilon=1.0, d=2**28)),
        ("epsilon above policy", ldp.KRR(epsilon=50.0, d=2)),
    ]
    out = [(label, Query.for_mechanism(f"forged-{i}", m).to_json()) for i, (label, m) in enumerate(mechs)]
    bad = json.loads(out[0][1])
    bad["spec"]["params"]["d"] = -3
    bad["query_id"] = "forged-bad-spec"
    out.append(("broken spec", json.dumps(bad)))
    odd = json.loads(out[0][1])
    odd["spec"] = {"name": "krr", "params": {"epsilon": "x" * 10000}}
    odd["query_id"] = "forged-odd"
    out.append(("text where a number goes", json.dumps(odd)))
    return out


FORGED = _forged()


def _shape(reply):
    """Everything in a reply but the random report bytes (their sizes included)."""
    return json.dumps({"devices": reply["devices"], "refused": reply["refused"], "retry": reply["retry"],
                       "sizes": [len(r) for r in reply["reports"]]}, sort_keys=True)


def _object_array(v):
    a = np.empty(1, dtype=object)
    a[0] = v
    return a


def test_the_forged_family_is_large_and_reaches_every_kind():
    assert len(FORGED) >= 20
    kinds = {from_spec(json.loads(q)["spec"]).input_kind for label, q in FORGED if "broken" not in label and "text" not in label}
    assert kinds == {"value", "number", "set", "tuple", "key-value"}


#: a few contrasting holdings for the default (fast) loop; the slow test takes all of HELD
FEW = ("in-domain code", "nan", "other script", "long set", "key-value")


@pytest.mark.parametrize("held", [pytest.param(FEW, id="few"), pytest.param(tuple(HELD), id="all", marks=pytest.mark.slow)])
def test_every_forged_query_gets_the_same_answer_whatever_the_device_holds(tmp_path, held):
    policy = DevicePolicy(max_epsilon_per_query=Fraction(8))
    fleets = {k: DeviceFleet(tmp_path / f"{i}.sqlite", _object_array(HELD[k]), lifetime_cap="1000", policy=policy) for i, k in enumerate(held)}
    try:
        answered = 0
        for label, q in FORGED:
            for attempt in ("first", "retry"):
                shapes = {k: _shape(f.respond(q)) for k, f in fleets.items()}
                assert len(set(shapes.values())) == 1, (label, attempt, shapes)
            reply = json.loads(next(iter(shapes.values())))
            assert set(reply["refused"]) <= set(REFUSAL_REASONS)
            answered += bool(reply["sizes"])
        assert answered >= 20  # most of the family is answered (with reports), not refused
        spent = {k: f.ledger.spent() for k, f in fleets.items()}
        assert len(set(spent.values())) == 1
        # what was refused, was refused for sizes or the policy, before any spend
        refused = {label: json.loads(_shape(fleets["nan"].respond(q)))["refused"] for label, q in FORGED}
        assert refused["oversized unary"] == {"query_too_large": 1}
        assert refused["epsilon above policy"] == {"epsilon_above_policy": 1}
        assert refused["broken spec"] == {"malformed_query": 1} and refused["text where a number goes"] == {"malformed_query": 1}
    finally:
        for f in fleets.values():
            f.close()


def test_a_fleet_mixing_good_and_bad_values_answers_every_device(tmp_path):
    vals = np.empty(len(HELD), dtype=object)
    vals[:] = list(HELD.values())
    fleet = DeviceFleet(tmp_path / "mixed.sqlite", vals, lifetime_cap="1000", policy=DevicePolicy(max_epsilon_per_query=Fraction(8)))
    try:
        for label, q in FORGED:
            r = fleet.respond(q)
            assert r["refused"] == {} or set(r["refused"].values()) == {len(HELD)}, label
            assert len(r["reports"]) in (0, len(HELD)), label
    finally:
        fleet.close()


def test_an_unexpected_failure_before_the_spend_is_one_code_and_spends_nothing(tmp_path, monkeypatch):
    fleet = DeviceFleet(tmp_path / "f.sqlite", np.arange(3), lifetime_cap="10")

    def explode(self, *a, **k):
        raise ZeroDivisionError("value 3 at position 2")

    monkeypatch.setattr(ldp.KRR, "randomize_encoded", explode)  # the dry run fails first
    try:
        r = fleet.respond(Query.for_mechanism("early", ldp.KRR(epsilon=1.0, d=4)).to_json())
        assert r == {"reports": [], "refused": {"device_error": 3}, "retry": False, "devices": 3}
        assert fleet.ledger.spent() == 0
    finally:
        fleet.close()


def test_an_unexpected_failure_after_the_spend_is_one_code_without_text(tmp_path, monkeypatch):
    fleet = DeviceFleet(tmp_path / "f.sqlite", np.arange(3), lifetime_cap="10")
    q = Query.for_mechanism("boom", ldp.KRR(epsilon=1.0, d=4)).to_json()

    def explode(*a, **k):
        raise RuntimeError("position 2 holds 3")  # text that must never leave the device

    def explode_as_a_library_error(*a, **k):
        raise ldp.LDPParameterError("the value at position 2 is 3")

    monkeypatch.setattr(device_module, "seal", explode)  # the envelopes of the produce step, after the spend
    try:
        r = fleet.respond(q)
        assert r == {"reports": [], "refused": {"device_error": 3}, "retry": False, "devices": 3}
        assert "position" not in json.dumps(r)
        monkeypatch.setattr(device_module, "seal", explode_as_a_library_error)  # not mistaken for a concurrent charge
        assert fleet.respond(Query.for_mechanism("boom-2", ldp.KRR(epsilon=1.0, d=4)).to_json())["refused"] == {"device_error": 3}
        monkeypatch.undo()
        assert fleet.respond(q)["refused"] == {"interrupted": 3}  # charged once, never randomized twice
        assert fleet.ledger.spent() == 2
    finally:
        fleet.close()


# -- the rule is a mixture of the mechanism's channel rows ----------------------------------------------
def test_an_out_of_domain_category_is_a_uniformly_random_one():
    """Exact: the fallback codes are uniform on [0, d) (chi-square at a tiny alpha, with a power
    check: the same test rejects a fallback that always picks code 0 one time in ten)."""
    from scipy import stats

    mech = ldp.KRR(epsilon=1.0, categories=["a", "b", "c", "d", "e"])
    n = 50_000
    vals = np.array(["zz"] * n, dtype=object)
    codes = in_domain(mech, vals, rng=SeededRandomSource(11)).data
    counts = np.bincount(codes, minlength=5)
    assert stats.chisquare(counts).pvalue > 1e-6
    biased = counts.copy()
    biased[0] += n // 10
    assert stats.chisquare(biased).pvalue < 1e-6
    good = in_domain(mech, np.array(["c", "zz", "a"], dtype=object), rng=SeededRandomSource(1)).data
    assert good[0] == 2 and good[2] == 0  # in-domain values are kept exactly


def test_numbers_are_clipped_and_missing_numbers_drawn_in_range():
    mech = ldp.Duchi(epsilon=1.0, lower=-2.0, upper=3.0)
    vals = np.array([1.5, 10**400, -1e308, float("inf"), float("nan"), None, "7", True], dtype=object)
    x = in_domain(mech, vals, rng=SeededRandomSource(2)).data
    assert x[0] == 1.5 and x[1] == 3.0 and x[2] == -2.0 and x[3] == 3.0
    assert np.all((x[4:] >= -2.0) & (x[4:] <= 3.0))


def test_long_sets_are_sampled_to_m_and_foreign_items_dropped():
    mech = ldp.Wheel(epsilon=1.0, d=8, m=2)
    vals = np.empty(3, dtype=object)
    vals[:] = [[0, 1, 2, 3, 4, 5], [7, "x", 7, None], 5]
    sets = in_domain(mech, vals, rng=SeededRandomSource(3)).data
    assert len(sets[0]) == 2 and set(sets[0]) <= {0, 1, 2, 3, 4, 5} and len(set(sets[0])) == 2
    assert sets[1] == [7] and sets[2] == []
    picks = np.zeros(6)
    src = SeededRandomSource(4)
    for _ in range(3000):
        for v in in_domain(mech, vals[:1], rng=src).data[0]:
            picks[v] += 1
    assert np.all(np.abs(picks / 6000 - 1 / 6) < 0.03)  # each item kept with probability m/len = 1/3 (sd 0.005)


def test_the_owner_policy_fields(tmp_path):
    policy = DevicePolicy.from_dict({"lifetime_cap": "10", "max_epsilon_per_query": "2", "min_epsilon_per_query": "0.1",
                                     "max_queries_per_day": 2, "max_query_bytes": 64 << 20})
    fleet = DeviceFleet(tmp_path / "p.sqlite", np.arange(4), lifetime_cap="10", policy=policy)
    try:
        assert fleet.respond(Query.for_mechanism("tiny", ldp.KRR(epsilon=0.01, d=4)).to_json())["refused"] == {"epsilon_below_policy": 4}
        assert fleet.respond(Query.for_mechanism("big", ldp.OUE(epsilon=1.0, d=2**23)).to_json())["refused"] == {"query_too_large": 4}
        assert fleet.ledger.spent() == 0
        for i in range(2):
            assert len(fleet.respond(Query.for_mechanism(f"q{i}", ldp.KRR(epsilon=1.0, d=4)).to_json())["reports"]) == 4
        again = fleet.respond(Query.for_mechanism("q0", ldp.KRR(epsilon=1.0, d=4)).to_json())
        assert again["retry"] and len(again["reports"]) == 4  # a kept reply is not a new query
        assert fleet.respond(Query.for_mechanism("q2", ldp.KRR(epsilon=1.0, d=4)).to_json())["refused"] == {"daily_query_limit": 4}
        assert fleet.ledger.spent() == 2
    finally:
        fleet.close()
    for bad in ({"min_epsilon_per_query": "3"}, {"max_queries_per_day": 0}, {"max_queries_per_day": True}, {"max_query_bytes": "1"}):
        with pytest.raises(ldp.LDPParameterError):
            DevicePolicy.from_dict({"lifetime_cap": "10", "max_epsilon_per_query": "2", **bad})
    assert dataclasses.replace(policy, min_epsilon_per_query="0.5").min_epsilon_per_query == Fraction(1, 2)
