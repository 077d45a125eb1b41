"""Memoized (longitudinal) reports: permanent reports are a keyed PRF of (key, value), follow the
permanent k-RR channel over random keys, the composite estimator is unbiased, and the series
accounting charges the user-level bound (the classic min(t·ε₁, V·ε∞)-style value-level one only
when named)."""

from __future__ import annotations

import dataclasses
import os
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import ldp_plugin as ldp
from ldp_plugin import DistinctValueGuard, LDPInputError, LDPParameterError, Memoized
from ldp_plugin.exact import epsilon_of_ratio
from ldp_plugin.sampling import SeededRandomSource

ALPHA = 1e-6


def _keys(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.bytes(32) for _ in range(n)]


def test_permanent_is_stable_for_same_key_and_value_and_varies_otherwise():
    m = Memoized(epsilon_permanent=1.0, epsilon_instantaneous=0.5, d=50)
    keys = _keys(2000, 1)
    vals = np.arange(2000) % 50
    a = m.permanent(vals, keys)
    assert np.array_equal(a, m.permanent(vals, keys))  # unchanged value: identical, every time
    other_keys = _keys(2000, 2)
    assert (a != m.permanent(vals, other_keys)).mean() > 0.5  # another key: a fresh permanent report
    assert (a != m.permanent((vals + 1) % 50, keys)).mean() > 0.5  # another value: fresh too
    # the instantaneous layer is fresh each collection
    r1, r2 = m.randomize(vals, keys, rng=1), m.randomize(vals, keys, rng=2)
    assert not np.array_equal(r1, r2)


def test_permanent_follows_krr_channel_over_random_keys_with_power():
    m = Memoized(epsilon_permanent=1.5, epsilon_instantaneous=1.0, d=4)
    n = 40_000
    keys = [os.urandom(32) for _ in range(n)]
    counts = np.bincount(m.permanent(np.full(n, 2), keys), minlength=4)
    P = m.permanent_mechanism.channel().as_float_array()
    assert stats.chisquare(counts, f_exp=P[2] * n).pvalue > ALPHA
    wrong = ldp.KRR(epsilon=1.5 * 1.3, d=4).channel().as_float_array()
    assert stats.chisquare(counts, f_exp=wrong[2] * n).pvalue < ALPHA


@pytest.mark.slow
def test_composite_estimator_unbiased_with_power():
    m = Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, categories=list("abcd"))
    counts = np.array([500, 300, 150, 50])
    vals = np.repeat(np.array(list("abcd"), dtype=object), counts)
    theta = counts / counts.sum()
    R = 300
    src = SeededRandomSource(4)
    est = []
    for r in range(R):
        keys = _keys(vals.size, 100 + r)  # a fresh population of keys per repeat
        est.append(m.estimate(m.randomize(vals, keys, rng=src), postprocess="none").raw)
    est = np.array(est)
    p, q = float(m.p_star_exact), float(m.q_star_exact)
    var = ldp.estimation.pure_variance(theta, vals.size, p, q)
    zcrit = stats.norm.isf(ALPHA / 8)
    assert np.all(np.abs(est.mean(axis=0) - theta) / np.sqrt(var / R) < zcrit)
    # power: decoding with the permanent layer's (p, q) alone is visibly biased
    pa, qa = m.permanent_mechanism.p_star, m.permanent_mechanism.q_star
    wrong = (est * (p - q) + q - qa) / (pa - qa)
    assert np.any(np.abs(wrong.mean(axis=0) - theta) / np.sqrt(var / R) >= zcrit)


def test_series_accounting_and_guard(tmp_path):
    m = Memoized(epsilon_permanent=1.0, epsilon_instantaneous=0.25, d=5, max_values=2)
    costs = [m.collection_cost(t) for t in range(1, 12)]
    # user level (default): the exact bound, every collection charged (a change pattern can still leak)
    assert sum(costs) == m.series_bound(11) == m.lifetime_bound(11) and all(c > 0 for c in costs)
    assert costs[0] == Fraction(epsilon_of_ratio(m.p_star_exact / m.q_star_exact))  # one report: the composed channel
    # max_values is the guard's limit, not an assumption of the charge: K = min(T, d) = 5
    assert m.lifetime_bound(11) == min(costs[0] + 10 * Fraction(1, 4), Fraction(4, 5) * (5 + Fraction(11, 4)), 5 + Fraction(4, 5) * Fraction(11, 4))
    assert m.lifetime_bound(11) == dataclasses.replace(m, max_values=5).lifetime_bound(11)
    # value level (named): at most ε∞ per distinct value, at most d of them
    v = dataclasses.replace(m, relation="value")
    vcosts = [v.collection_cost(t) for t in range(1, 12)]
    assert sum(vcosts) == v.series_bound(11) == min(5, m.lifetime_bound(11)) and vcosts[0] == costs[0]
    assert v.lifetime_bound(3) == min(3, m.lifetime_bound(3))
    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="5"))
    for t in range(1, 12):
        acc.spend_collection(f"series:{t}", v, t)
    assert acc.remaining() == 5 - sum(vcosts) and acc.history()[0].params["relation"] == "value"
    user = ldp.Accountant.create(tmp_path / "u.sqlite", ldp.Population(name="p", lifetime_cap="2"))
    t = 1
    while m.lifetime_bound(t) <= 2:
        user.spend_collection(f"series:{t}", m, t)
        t += 1
    with pytest.raises(ldp.BudgetExceededError):  # the user-level series stops at the cap
        user.spend_collection(f"series:{t}", m, t)
    guard = DistinctValueGuard()
    k = _keys(2, 9)
    m.randomize([0, 1], k, guard=guard)
    m.randomize([1, 1], k, guard=guard)  # first user: values {0, 1}
    with pytest.raises(LDPInputError, match="max_values=2") as e:
        m.randomize([2, 1], k, guard=guard)
    assert "position 0" in str(e.value)


def test_validation():
    with pytest.raises(LDPParameterError, match="at most"):
        Memoized(epsilon_permanent=1.0, epsilon_instantaneous=2.0, d=3)
    m = Memoized(epsilon_permanent=1.0, epsilon_instantaneous=0.5, d=3)
    with pytest.raises(LDPInputError, match="16 to 64"):
        m.permanent([1], [b"short"])
    with pytest.raises(LDPInputError, match="one key per value"):
        m.permanent([1, 2], _keys(1, 0))
