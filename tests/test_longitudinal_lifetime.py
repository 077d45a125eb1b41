"""Issue 32 (items 1 and 3): the privacy of repeated collections of every keyed mechanism.

* the lifetime charge after T collections is at least the exact transcript loss of every history
  pair for T <= 8 on small domains — checked by the transcript layer (exact rationals) and, for
  the smallest instances, against an independent brute force over the whole permanent table
  ``B`` (the definition ``P(y|h) = E_B Π_t IRR(y_t | B[u_t])``, no block factorization);
* the value-level charge (the papers') is *below* the exact user-level loss — the bug the
  transcript layer must catch (seeded bug), and does;
* the relation is named: spec, registry round trip, ledger audit row; the PRF does not depend on it;
* ``make_longitudinal`` takes the code and holds the key; its map ``ε_inst`` holds at its edge
  against a black-box audit of the measurement, which rejects the old ``ε₁`` claim (power).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.exact import TWO64, epsilon_of_ratio, float_up
from ldp_plugin.federated import DeviceFleet, DevicePolicy, Query
from ldp_plugin.mechanisms.lifetime import UnboundedLossError, user_bound
from ldp_plugin.registry import from_spec
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.verification.layers import audit_layer
from ldp_plugin.verification.seeded_bugs import ValueChargedAsUserLGRR
from ldp_plugin.verification.transcript import _Column, exact_pair_loss, float_pair_loss, transcript_layer

KEYED = [
    ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=2),
    ldp.LGRR(epsilon_perm=1.0, epsilon_1=0.5, d=3),
    ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8),
    ldp.LOLOHA(epsilon_perm=3.0, epsilon_1=1.0, d=5, g=3),
    ldp.LOUE(epsilon_perm=2.0, epsilon_1=1.0, d=2),
    ldp.LOSUE(epsilon_perm=2.0, epsilon_1=1.0, d=3),
    ldp.LSUE(epsilon_perm=1.0, epsilon_1=0.5, d=2),
    ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=4, d_bits=2),
    ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=3, max_values=2),
    ldp.Memoized(epsilon_permanent=8.0, epsilon_instantaneous=4.0, d=3, max_values=1),
]


def _id(m):
    return f"{m.name}-" + "-".join(f"{k}{v}" for k, v in m.spec()["params"].items() if k in ("d", "g", "d_bits", "max_values"))


@pytest.mark.parametrize("mech", [pytest.param(m, marks=pytest.mark.slow) if len(m.transcript_model().perm) > 1 and m.transcript_model().units >= 3 else m
                                  for m in KEYED], ids=_id)
def test_charge_covers_the_exact_transcript_loss_up_to_T8(mech):
    """The transcript layer (every T <= 8, the exact worst case over every pair of histories):
    the exact loss never exceeds what the ledger charges, under either relation."""
    r = transcript_layer(mech)
    assert r["applicable"] and r["T_max"] >= 6 and r["passed"], [x for x in r["rows"] if not x["passed"]]
    assert {x["relation"] for x in r["rows"]} == {"user", "value"}
    for row in r["rows"]:
        if row["charged"] is not None:
            assert row["exact_loss"] <= row["charged"] + 1e-12


# -- an independent brute force: the whole permanent table B, no factorization -----------------------
def _layers(mech):
    """(perm rows over units, inst rows) as floats, per column, built from the realized thresholds."""
    if mech.name in ("l-grr", "loloha"):
        k = mech.d if mech.name == "l-grr" else mech.g
        p1, q1, p2, q2 = (float(x) for x in mech.thresholds[2:6])
        perm = [[p1 if b == v else q1 for b in range(k)] for v in range(k)]
        inst = [[p2 if y == b else q2 for y in range(k)] for b in range(k)]
        return k, [(perm, inst)]
    if mech.name in ("l-oue", "l-osue", "l-sue"):
        P1, Q1, p2, q2 = (x / TWO64 for x in mech.thresholds[:4])
        inst = [[1 - q2, q2], [1 - p2, p2]]
        return mech.d, [([[1 - P1, P1] if v == j else [1 - Q1, Q1] for v in range(mech.d)], inst) for j in range(mech.d)]
    if mech.name == "memoized-krr":
        A = [[float(x) for x in row] for row in mech.permanent_mechanism.channel().matrix]
        B = [[float(x) for x in row] for row in mech.instantaneous_mechanism.channel().matrix]
        return mech.d, [(A, B)]
    raise AssertionError(mech.name)


def _brute(mech, u, T):
    """P(y | u) for every transcript y, summing over every permanent table B (all units)."""
    N, cols = _layers(mech)
    out = None
    for perm, inst in cols:
        S, O = len(inst), len(inst[0])
        probs = np.zeros(O ** T)
        for table in itertools.product(range(S), repeat=N):
            pb = math.prod(perm[v][table[v]] for v in range(N))
            for i, y in enumerate(itertools.product(range(O), repeat=T)):
                probs[i] += pb * math.prod(inst[table[u[t]]][y[t]] for t in range(T))
        out = [probs] if out is None else out + [probs]
    return out


@pytest.mark.parametrize("mech", [KEYED[0], KEYED[1], KEYED[4], KEYED[6], KEYED[8]], ids=_id)
def test_brute_force_over_every_permanent_table_agrees_and_stays_below_the_charge(mech):
    N, _ = _layers(mech)
    model = mech.transcript_model()
    T = 4 if N == 2 else 3
    U = model.unit_bound
    seqs = [s for s in itertools.product(range(N), repeat=T) if len(set(s)) <= U]
    brute = {s: _brute(mech, s, T) for s in seqs}
    cols = [_Column(p, i, T) for p, i in zip(model.perm, model.inst)]
    charge = float(sum(mech.collection_cost(t) for t in range(1, T + 1)))
    worst = 0.0
    for u, w in itertools.combinations(seqs, 2):
        loss = max(sum(float(np.max(np.log(a) - np.log(b))) for a, b in zip(brute[u], brute[w])),
                   sum(float(np.max(np.log(b) - np.log(a))) for a, b in zip(brute[u], brute[w])))
        assert loss == pytest.approx(float_pair_loss(cols, u, w), abs=1e-9)  # the layer's factorization
        worst = max(worst, loss)
    assert 0 < worst <= charge
    # and the one-step model is the exact one-report channel the other layers verify
    if hasattr(mech, "channel") and mech.name != "loloha":
        ch = mech.channel()
        for x in range(min(mech.d, N)):
            one = np.ones(1)
            for perm, inst in zip(model.perm, model.inst):
                col = np.array([sum(perm[x][b] * inst[b][y] for b in range(len(inst))) for y in range(len(inst[0]))], dtype=float)
                one = np.outer(one, col).ravel()  # column 0 most significant
            if len(model.perm) > 1:  # unary: channel index is the bit vector, bit j = column j
                idx = [sum(((y >> j) & 1) * (2 ** (len(model.perm) - 1 - j)) for j in range(len(model.perm))) for y in range(2 ** len(model.perm))]
                assert np.allclose(np.array([float(p) for p in ch.matrix[x]]), one[idx], atol=1e-15)
            else:
                assert np.allclose(np.array([float(p) for p in ch.matrix[x]]), one, atol=1e-15)


# -- the issue's example: the exact numbers the lead quotes ---------------------------------------------
@pytest.mark.parametrize("mech", [ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=2), ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8, g=2)], ids=_id)
def test_issue_example_constant_vs_alternating(mech):
    """ε∞ = 2, ε₁ = 1, two units: after 8 collections, constant vs alternating loses
    ln-ratio 5.378 exactly — above the papers' value-level 2·ε∞ = 4 (so the old charge was
    false at the user level), below the user-level charge 7.63."""
    T = 8
    model = mech.transcript_model()
    cols = [_Column(p, i, T) for p, i in zip(model.perm, model.inst)]
    ratio = exact_pair_loss(cols, (0,) * T, tuple(t % 2 for t in range(T)))
    loss = epsilon_of_ratio(ratio)
    assert 5.37 < loss < 5.39
    value, user = mech.lifetime_bound(T, relation="value"), mech.lifetime_bound(T)
    assert value == 4 < Fraction(loss) <= user
    assert float(user) == pytest.approx(0.5 * (2 * 2.0 + T * float(mech.epsilon_inst)))
    # every pair of histories of 8 collections: the worst (a witness pair, recomputed over every transcript)
    row = {(r["relation"], r["T"]): r for r in transcript_layer(mech)["rows"]}[("user", 8)]
    witness = exact_pair_loss(cols, tuple(row["histories"][0]), tuple(row["histories"][1]))
    assert 6.15 < row["exact_loss"] == epsilon_of_ratio(witness) < 6.17 <= float(user)


def test_dbitflip_second_collection_is_unbounded_at_the_user_level(tmp_path):
    m = ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=4, d_bits=2)
    model = m.transcript_model()
    cols = [_Column(p, i, 2) for p, i in zip(model.perm, model.inst)]
    assert exact_pair_loss(cols, (0, 0), (0, 1)) is None  # infinite: a transcript impossible under one history
    assert m.collection_cost(1) == 2 and m.lifetime_bound(2) is None
    with pytest.raises(UnboundedLossError, match="relation='value'"):
        m.collection_cost(2)
    acc = ldp.Accountant.create(tmp_path / "d.sqlite", ldp.Population(name="p", lifetime_cap="100"))
    acc.spend_collection("c1", m, 1)
    with pytest.raises(UnboundedLossError):
        acc.spend_collection("c2", m, 2)
    assert acc.spent() == 2 and len(acc.history()) == 1  # nothing spent for the refused collection
    v = dataclasses.replace(m, relation="value")
    assert [v.collection_cost(t) for t in (1, 2, 3, 4)] == [2, 2, 2, 0]


# -- the bound itself --------------------------------------------------------------------------------
def test_bound_is_exact_monotone_and_data_independent():
    for m in KEYED:
        prev = Fraction(0)
        for t in range(1, 40):
            b = m.lifetime_bound(t)
            if b is None:
                assert m.epsilon_inst is None and t >= 2
                continue
            assert isinstance(b, Fraction) and b >= prev and m.collection_cost(t) == b - prev
            assert m.lifetime_bound(t, relation="value") <= b
            prev = b
    m = ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=2)
    e1, ei, ep = Fraction(1.0), m.epsilon_inst, Fraction(2.0)
    assert ei == Fraction(float_up(Fraction(epsilon_of_ratio(m.thresholds[4] / m.thresholds[5]))))
    for t in range(1, 30):
        k = min(t, 2)
        expect = min(e1 + (t - 1) * ei, Fraction(1, 2) * (k * ep + t * ei), k * ep + Fraction(k - 1, k) * t * ei)
        assert m.lifetime_bound(t) == expect == user_bound(t, eps_one=e1, eps_inst=ei, eps_perm=ep, units=2, unit_bound=2)
    # a unary report: any two permanent vectors differ in up to d bits
    u = ldp.LOSUE(epsilon_perm=2.0, epsilon_1=1.0, d=4)
    p2, q2 = Fraction(u.thresholds[2], TWO64), Fraction(u.thresholds[3], TWO64)
    assert u.epsilon_inst == 4 * Fraction(epsilon_of_ratio(max(p2 / q2, (1 - q2) / (1 - p2))))


def test_relation_is_named_carried_and_does_not_change_the_reports():
    keys = [bytes([i]) * 32 for i in range(50)]
    codes = np.arange(50) % 4
    for cls, kw in ((ldp.LGRR, {}), (ldp.LOLOHA, {"g": 3}), (ldp.LOSUE, {}), (ldp.DBitFlipPM, {"d_bits": 2})):
        u = cls(epsilon_perm=2.0, epsilon_1=1.0, d=4, **kw)
        v = cls(epsilon_perm=2.0, epsilon_1=1.0, d=4, relation="value", **kw)
        assert u.spec()["params"]["relation"] == "user" and v.spec()["params"]["relation"] == "value"
        assert from_spec(v.spec()) == v and from_spec(v.spec()).relation == "value"
        a, b = u.randomize(codes, keys, rng=SeededRandomSource(3)), v.randomize(codes, keys, rng=SeededRandomSource(3))
        assert all(np.array_equal(x, y) for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)))
    memo = ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2, relation="value")
    assert memo.spec()["params"]["relation"] == "value" and from_spec(memo.spec()).relation == "value"
    assert np.array_equal(memo.permanent(codes, keys), dataclasses.replace(memo, relation="user").permanent(codes, keys))
    with pytest.raises(LDPParameterError, match="relation"):
        ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, relation="item")


# -- the seeded bug ----------------------------------------------------------------------------------
def test_transcript_layer_catches_the_value_level_charge_presented_as_user_level():
    bug = ValueChargedAsUserLGRR(epsilon_perm=2.0, epsilon_1=1.0, d=2)
    r = transcript_layer(bug, quick=True)
    failed = [x for x in r["rows"] if not x["passed"]]
    assert not r["passed"] and failed and {x["relation"] for x in failed} == {"user"}
    assert all(x["exact_loss"] > x["charged"] for x in failed)
    assert transcript_layer(ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=2), quick=True)["passed"]
    assert transcript_layer(ldp.KRR(epsilon=1.0, d=4)) == {"layer": "transcript", "applicable": False, "passed": True}


# -- make_longitudinal: the map at its edge ------------------------------------------------------------
class _MeasurementUnderAudit:
    """The audit's mechanism interface over one make_longitudinal measurement (one hidden key,
    called once per sample: the black box a holder of its outputs sees)."""

    def __init__(self, meas, mech, claim):
        self.meas, self.mech, self.epsilon = meas, mech, claim

    def verification_input_count(self):
        return self.mech.d

    def sample_verification_outputs(self, x, n, source):
        return np.array([int(self.meas(x)[0]) for _ in range(n)], dtype=np.int64)

    def channel(self):
        raise NotImplementedError  # black box: no declared channel


def _key_with_distinct_permanent_reports(mech):
    for i in range(100):
        key = bytes([i]) * 32
        if len(set(mech._permanent(np.arange(mech.d), [key] * mech.d).tolist())) == mech.d:
            return key
    raise AssertionError("no key")


@pytest.mark.slow
def test_make_longitudinal_map_holds_at_its_edge_and_the_old_claim_fails():
    mech = ldp.LGRR(epsilon_perm=1.5, epsilon_1=1.0, d=2)  # ε_inst = 1.847 > ε₁ = 1
    key = _key_with_distinct_permanent_reports(mech)
    meas = ldp.make_longitudinal(mech, key=key, rng=SeededRandomSource(11))
    edge = meas.map(1)
    # the edge, exactly: the realized instantaneous ratio's ε rounded up (no slack)
    assert edge == float_up(Fraction(epsilon_of_ratio(mech.thresholds[4] / mech.thresholds[5])))
    assert math.nextafter(edge, 0) < epsilon_of_ratio(mech.thresholds[4] / mech.thresholds[5]) + 1e-12
    kw = dict(seed=5, n_pilot=1_000, max_samples=4_000, pairs=[(0, 1)], declared_channel=False)
    ok = audit_layer(_MeasurementUnderAudit(meas, mech, edge), **kw)
    assert ok["passed"] and ok["audit_epsilon_lower_bound"] > 1.0
    # power: the same audit of the measurement rejects the old map ε₁ = 1
    old = audit_layer(_MeasurementUnderAudit(ldp.make_longitudinal(mech, key=key, rng=SeededRandomSource(11)), mech, mech.epsilon_1), **kw)
    assert not old["passed"]


def test_make_longitudinal_takes_the_code_and_holds_the_key():
    mech = ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=8)
    m = ldp.make_longitudinal(mech)
    assert m.map(0) == 0.0 and m.map(1) == float_up(mech.epsilon_inst) and m.map(1) > 1.78  # the issue's audit found 1.78 > ε₁
    assert 0 <= int(m(3)[0]) < 8
    with pytest.raises(Exception):
        m((3, b"k" * 32))  # no (code, key) pairs any more: the key lives inside
    with pytest.raises(LDPParameterError):
        ldp.make_longitudinal(mech, key=b"short")
    d = ldp.make_longitudinal(ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=4))
    assert d.map(1) == 2.0 and len(d(1)) == 2
    with pytest.raises(Exception, match="unbounded"):
        d(1)  # no instantaneous layer: one call per measurement
    with pytest.raises(LDPParameterError, match="no key="):
        ldp.make_longitudinal(ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=4), key=b"k" * 32)


def test_device_counts_collections_across_relations(tmp_path):
    """Both relations use the same keyed permanent table, so a device numbers its collections
    across them: after two user-level collections a value-level query is collection 3."""
    lol = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8)
    value = dataclasses.replace(lol, relation="value")
    owner = DevicePolicy(max_epsilon_per_query=Fraction(100), allowed_relations=("user", "value"))  # the owner allows the value level
    fleet = DeviceFleet(tmp_path / "d.sqlite", np.arange(10) % 8, lifetime_cap="100", policy=owner)
    for day in range(2):
        assert len(fleet.respond(Query.for_mechanism(f"u{day}", lol).to_json())["reports"]) == 10
    assert len(fleet.respond(Query.for_mechanism("v", value).to_json())["reports"]) == 10
    assert fleet.ledger.spent() == lol.lifetime_bound(2) + value.collection_cost(3) != lol.lifetime_bound(2) + value.collection_cost(1)
    fleet.close()
