"""Longitudinal protocols (issue 18): exact layers (the composed one-report channel is ε1-LDP,
the permanent one ε∞-LDP), memoization by the key (never the id), the sampler against the
declared layers, lifetime accounting, the done-when (20 rounds, change probability 0.2, d = 64,
ε∞ = 2, ε1 = 1) with a deliberately wrong estimator that must fail it, and the CLI."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.exact import float_up, ratio_within_exp
from ldp_plugin.mechanisms.longitudinal import LifetimeTracker, loloha_optimal_g
from ldp_plugin.simulate import LONGITUDINAL_NAMES, build_longitudinal, simulate_longitudinal

KEYS = [i.to_bytes(4, "little") * 8 for i in range(4000)]


@pytest.mark.parametrize("e_inf,e_one", [(2.0, 1.0), (4.0, 0.5), (1.0, 0.9)])
@pytest.mark.parametrize("d", [2, 8, 64])
def test_layers_are_exactly_private(e_inf, e_one, d):
    m = ldp.LGRR(epsilon_perm=e_inf, epsilon_1=e_one, d=d)
    T1, T2, p1, q1, p2, q2, ps, qs = m.thresholds
    assert ratio_within_exp(p1 / q1, e_inf) and ratio_within_exp(ps / qs, e_one)
    assert ps / qs > Fraction(np.exp(e_one)) * Fraction(99, 100)  # not needlessly noisy
    assert m.channel().max_ratio() == ps / qs
    for cls in (ldp.LOUE, ldp.LOSUE, ldp.LSUE):
        u = cls(epsilon_perm=e_inf, epsilon_1=e_one, d=d)
        P1, P0 = u.p_star_exact, u.q_star_exact
        assert ratio_within_exp(P1 * (1 - P0) / (P0 * (1 - P1)), e_one)
        T_p1, T_q1 = u.thresholds[:2]
        a, b = Fraction(T_p1, 2**64), Fraction(T_q1, 2**64)
        assert ratio_within_exp(a * (1 - b) / (b * (1 - a)), e_inf)
    bf = ldp.DBitFlipPM(epsilon_perm=e_inf, epsilon_1=e_one, d=d)
    r = Fraction(bf.T, 2**64 - bf.T)
    assert ratio_within_exp(r * r, e_inf)


def test_memoized_by_the_key_and_the_value():
    m = ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=16)
    codes = np.arange(4000) % 16
    a, b = m._permanent(codes, KEYS), m._permanent(codes, KEYS)
    assert (a == b).all()
    other = m._permanent(codes, [k[::-1] + b"x" for k in KEYS])
    assert (a != other).any()
    # the permanent layer over random keys is GRR(ε∞): keep rate p1 (binomial, 4 sd)
    p1 = float(m.thresholds[2])
    assert abs((a == codes).mean() - p1) <= 4 * np.sqrt(p1 * (1 - p1) / codes.size)
    u = ldp.LOSUE(epsilon_perm=2.0, epsilon_1=1.0, d=16)
    bits1 = u.randomize(codes, KEYS, rng=1)
    bits2 = u.randomize(codes, KEYS, rng=2)
    assert (bits1 != bits2).any()  # the instantaneous layer is fresh
    with pytest.raises(LDPParameterError, match="user_keys"):
        u.randomize_encoded(codes)
    with pytest.raises(LDPInputError, match="16 to 64 secret bytes"):
        u.randomize(codes[:2], [b"short", b"short"])


@pytest.mark.parametrize("name", ["l-grr", "l-oue", "l-osue", "l-sue"])
def test_composed_channel_with_fresh_keys_matches_the_declared_rates(name):
    """Fresh keys per report: the report is one draw of the composed channel; the rate of the
    own item's bit (or report) must be p*, another's q* (binomial, 4 sd)."""
    m = build_longitudinal(name, d=8, epsilon_perm=2.0, epsilon_1=1.0)
    n = 20_000
    keys = [np.random.default_rng(i).bytes(32) for i in range(n)]
    codes = np.zeros(n, dtype=np.int64)
    rep = m.randomize(codes, keys, rng=5)
    if name == "l-grr":
        own, other = (rep == 0).mean(), (rep == 1).mean()
    else:
        bits = np.unpackbits(rep, axis=1, count=8, bitorder="little")
        own, other = bits[:, 0].mean(), bits[:, 1].mean()
    for got, p in ((own, float(m.p_star_exact)), (other, float(m.q_star_exact))):
        assert abs(got - p) <= 4 * np.sqrt(p * (1 - p) / n)


def test_dbitflip_buckets_and_patterns_are_fixed_per_key():
    m = ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=16, d_bits=3)
    J = m.buckets(KEYS[:500])
    assert (J == m.buckets(KEYS[:500])).all() and (np.diff(J, axis=1) > 0).all() and J.max() < 16
    codes = np.full(500, 5)
    a, b = m.randomize(codes, KEYS[:500], rng=1), m.randomize(codes, KEYS[:500], rng=2)
    assert (a[1] == b[1]).all()  # no instantaneous layer: the memoized pattern repeats
    assert m.unit_bound() == 4 and m.memo_units(codes, KEYS[:500]).max() <= 3


def test_loloha_g_and_its_lifetime_bound():
    g = loloha_optimal_g(2.0, 1.0)
    m = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=64, g="optimal")
    assert m.g == g >= 2 and m.unit_bound() == g
    assert m.lifetime_spend(10) == g * Fraction(2.0)  # the value-level count
    lol = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=64)
    tr = LifetimeTracker(lol, 100)
    tr_value = LifetimeTracker(dataclasses.replace(lol, relation="value"), 100)
    for v in range(64):  # every value of the domain, one after another
        tr.observe(np.full(100, v), KEYS[:100])
        tr_value.observe(np.full(100, v), KEYS[:100])
    # value level (same change pattern): g = 2 hashed values, at most 2·ε∞
    assert tr.value_spend().max() == 4.0 == tr_value.spend().max()
    # user level: the same data-independent bound for every user, above the value-level figure
    user = float_up(lol.lifetime_bound(64))
    assert (tr.spend() == user).all() and user > 4.0


@pytest.fixture(scope="module")
def done_when():
    """The issue's setting: 20 rounds, change probability 0.2, d = 64, ε∞ = 2, ε1 = 1 (n = 5,000
    users, 5 independent populations averaged: one population's rounds share its memoized
    reports, so a single one scatters by about sqrt(2/d))."""
    return {name: simulate_longitudinal(build_longitudinal(name, d=64, epsilon_perm=2.0, epsilon_1=1.0), rounds=20,
                                        change_prob=0.2, n=2000, seed=0, repeats=5) for name in LONGITUDINAL_NAMES}


@pytest.mark.slow
def test_done_when_loloha_spend(done_when):
    lol, grr = done_when["loloha"], done_when["l-grr"]
    # value level (the papers' relation, named): at most g·ε∞ = 4, below L-GRR's
    assert lol["max_user_spend_value_level"] <= 4.0 == lol["spend_bound_value_level"]
    assert lol["max_user_spend_value_level"] < grr["max_user_spend_value_level"]
    # user level (the default): the same for every user, the exact bound after 20 collections
    m = build_longitudinal("loloha", d=64, epsilon_perm=2.0, epsilon_1=1.0)
    assert lol["relation"] == "user" and lol["max_user_spend"] == lol["mean_user_spend"] == lol["spend_bound"] == float_up(m.lifetime_bound(20))
    assert lol["spend_bound"] < grr["spend_bound"] and done_when["dbitflip"]["spend_bound"] is None


@pytest.mark.slow
@pytest.mark.parametrize("name", LONGITUDINAL_NAMES)
def test_done_when_mse_within_15_percent(done_when, name):
    assert abs(done_when[name]["mse_ratio"] - 1) <= 0.15


def test_the_mse_check_fails_for_a_wrong_estimator():
    """Power check: L-GRR decoded with the instantaneous layer's rates alone (forgetting the
    permanent layer) fails the same check."""

    @dataclass(frozen=True, kw_only=True)
    class Wrong(ldp.LGRR):
        @property
        def p_star_exact(self):
            return self.thresholds[4]

        @property
        def q_star_exact(self):
            return self.thresholds[5]

    out = simulate_longitudinal(Wrong(epsilon_perm=2.0, epsilon_1=1.0, d=64), rounds=20, change_prob=0.2, n=2000, seed=0, repeats=5)
    assert abs(out["mse_ratio"] - 1) > 0.15


@pytest.mark.slow
def test_cli_longitudinal_simulate():
    out = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "longitudinal", "simulate", "--mechanism", "loloha", "--d", "16",
                          "--epsilon-perm", "2", "--epsilon-1", "1", "--rounds", "3", "--change-prob", "0.2", "--n", "500",
                          "--seed", "0", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {"max_user_spend", "spend_bound", "rounds"} <= set(doc) and len(doc["rounds"]) == 3
    assert {"mse", "analytic_mse"} <= set(doc["rounds"][0])
    bad = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "longitudinal", "simulate", "--mechanism", "l-grr", "--d", "16",
                          "--epsilon-perm", "1", "--epsilon-1", "2", "--rounds", "3", "--change-prob", "0.2", "--n", "50"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "epsilon_1 must be below epsilon_perm" in bad.stderr and "Traceback" not in bad.stderr


def test_ledger_charges_the_worst_case_lifetime(tmp_path):
    """A server ledger charges collection t the increment of the user-level bound (LOLOHA g = 2:
    1, 1.41, 1.41, 1, 0.70, ... — never free), so a cap of 4 refuses the fourth collection; the
    papers' value-level charge (ε∞ for the first two collections, nothing after) applies only
    when the relation is named, and the audit row records which relation was charged."""
    m = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=64)
    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="4"))
    for t in range(1, 4):
        acc.spend_collection(f"day-{t}", m, t)
    assert acc.spent() == m.lifetime_bound(3) and all(m.collection_cost(t) > 0 for t in range(1, 50))
    with pytest.raises(ldp.BudgetExceededError):
        acc.spend_collection("day-4", m, 4)
    assert [r.params["relation"] for r in acc.history()] == ["user"] * 3
    assert acc.history()[0].params["spec"]["params"]["relation"] == "user" and acc.history()[2].params["collection"] == 3
    v = dataclasses.replace(m, relation="value")
    acc2 = ldp.Accountant.create(tmp_path / "v.sqlite", ldp.Population(name="p", lifetime_cap="4"))
    for t in range(1, 21):
        acc2.spend_collection(f"day-{t}", v, t)
    assert acc2.spent() == 4 == m.lifetime_spend(m.unit_bound()) == v.lifetime_bound(20)
    assert {r.params["relation"] for r in acc2.history()} == {"value"}
    assert all(v.lifetime_bound(t) == min(min(t, 2) * Fraction(2.0), m.lifetime_bound(t)) for t in range(1, 21))
    assert [v.collection_cost(t) for t in range(4, 8)] == [Fraction(4) - v.lifetime_bound(3), 0, 0, 0]
    with pytest.raises(ldp.BudgetExceededError):
        acc2.spend("other", ldp.KRR(epsilon=0.5, d=4))
    with pytest.raises(LDPParameterError):
        m.collection_cost(0)
    with pytest.raises(LDPParameterError, match="relation"):
        ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=64, relation="event")
