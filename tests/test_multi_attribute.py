"""Several attributes per user (issue 37): SPL, SMP, RS+FD — exact channels over all tuples, the
whole-tuple guarantee (and the per-attribute one of RS+FD's amplified configuration), errors,
per-attribute MSE against the analytic one with a power check, interval coverage, Polars and
OpenDP."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.exact import ratio_within_exp
from ldp_plugin.registry import KINDS, build, from_spec, load_registry, verify_instance
from ldp_plugin.mechanisms.reports import check_reports, report_count

A, K, EPS = 5, 10, 2.0


@pytest.mark.parametrize("cls", [ldp.SPL, ldp.SMP, ldp.RSFD])
def test_exact_channel_and_verification(cls):
    for eps, dom in [(1.0, (2, 3)), (2.0, (3, 2, 2))]:
        m = cls(epsilon=eps, domains=dom)
        ch = m.channel()
        assert ch.rows_sum_to_one() and ch.equal_supports()
        assert ch.max_ratio() == m.realized_ratio and ratio_within_exp(m.realized_ratio, eps)
    m = build(cls.name, epsilon=1.0, domains=[2, 3])
    assert from_spec(m.spec()) == m and from_spec(json.dumps(m.spec())) == m
    assert verify_instance(m, name=cls.name, instance={}, quick=True)["passed"]
    assert load_registry(kinds=KINDS)[cls.name].kind == "multi-attribute"


def test_rsfd_amplified_configuration_is_per_attribute_only():
    """The paper's ε' = ln(A(e^ε − 1) + 1): ε-LDP when one attribute changes (equal domain
    sizes), ε'-LDP (not ε) for the whole tuple — the exact channel's ratio says so; with unequal
    domain sizes even the per-attribute ratio exceeds e^ε."""
    assert ldp.RSFD.from_attribute_epsilon(1.0, domains=(2, 3)).attribute_epsilon > 1.07
    m = ldp.RSFD.from_attribute_epsilon(1.0, domains=(3, 3))
    eps_prime = math.log(2 * math.expm1(1.0) + 1)
    assert m.epsilon == pytest.approx(eps_prime) and m.attribute_epsilon == pytest.approx(1.0)
    ch = m.channel()
    assert ch.max_ratio() == m.realized_ratio and float(m.realized_ratio) > math.exp(1.0) * 1.5
    # the worst single-attribute change, from the channel itself
    T = m._tuples()
    M = ch.matrix
    worst = max(M[a][y] / M[b][y] for a in range(len(T)) for b in range(len(T)) if (T[a] != T[b]).sum() == 1 for y in range(len(T)))
    assert ratio_within_exp(worst, math.nextafter(1.0, 2.0)) and not ratio_within_exp(worst, 0.99)


def test_errors():
    with pytest.raises(LDPParameterError, match=r"domains\[0\] \(attribute 0's domain size\) must be an integer"):
        ldp.SMP(epsilon=1.0, domains=(1, 3))
    with pytest.raises(LDPParameterError, match="2 to 64 attributes"):
        ldp.SPL(epsilon=1.0, domains=(3,))
    m = ldp.SMP(epsilon=1.0, domains=(3, 4))
    with pytest.raises(LDPInputError, match="attribute 1 needs codes in \\[0, 4\\)") as e:
        m.randomize(np.array([[0, 1], [2, 77]]))
    assert "77" not in str(e.value)
    with pytest.raises(LDPInputError, match="n × 2 array"):
        m.randomize(np.array([[0, 1, 2]]))
    att, val = m.randomize(np.array([[0, 1]] * 10), rng=0)
    ok, rej = check_reports(m, (np.r_[att, 1].astype(np.uint8), np.r_[val, 3].astype(np.uint32)))
    assert rej == {} and report_count(m, ok) == 11
    ok, rej = check_reports(m, (np.r_[att, 0].astype(np.uint8), np.r_[val, 3].astype(np.uint32)))  # 3 is outside attribute 0's [0, 3)
    assert rej == {"out_of_range": 1} and report_count(m, ok) == 10


def _population(n, seed=0):
    gen = np.random.default_rng(seed)
    theta = [np.r_[0.3, np.full(K - 1, 0.7 / (K - 1))]] + [np.full(K, 1 / K)] * (A - 1)
    x = np.stack([gen.choice(K, n, p=theta[j]) for j in range(A)], 1)
    return x, [np.bincount(x[:, j], minlength=K) / n for j in range(A)]


def _mse(m, x, truth, runs):
    """Mean per-attribute squared l2 error against all users' frequencies, and (SMP) against the
    frequencies of the users who sampled each attribute (the oracle's own error)."""
    out, own = [], []
    for s in range(runs):
        r = m.randomize(x, rng=s)
        e = m.estimate(r)
        out.append(np.mean([np.sum((a.raw - truth[j]) ** 2) for j, a in enumerate(e.attributes)]))
        if m.name == "smp":
            att = np.asarray(r[0])
            own.append(np.mean([np.sum((a.raw - np.bincount(x[att == j, j], minlength=K) / (att == j).sum()) ** 2)
                                for j, a in enumerate(e.attributes)]))
    return float(np.mean(out)), (float(np.mean(own)) if own else None)


def test_smp_mse_matches_analytic_and_beats_spl_with_power():
    """5 attributes, k = 10, ε = 2: SMP's per-attribute MSE (against all users' frequencies)
    within 10% of analytic (80 runs: ~2.5% sd); the analytic formula without the subsampling
    term (a deliberately wrong variant) is rejected by the same test. SPL's error is ≥ 15× SMP's
    oracle error (against the sampled users' own frequencies: the issue's comparison) and ≥ 13×
    SMP's error against all users' frequencies (analytic: 14.3×)."""
    n = 20_000
    x, truth = _population(n)
    smp, spl = ldp.SMP(epsilon=EPS, domains=(K,) * A), ldp.SPL(epsilon=EPS, domains=(K,) * A)
    measured, own = _mse(smp, x, truth, 80)
    analytic = smp.analytic_mse(n, theta=truth)
    assert abs(measured / analytic - 1) < 0.10
    wrong = float(np.mean([o.mse(n / A) for o in smp.oracles]))  # no subsampling term
    assert abs(measured / wrong - 1) > 0.10
    assert abs(own / wrong - 1) < 0.10  # the oracle's own error is k-RR's on n/A users
    spl_mse, _ = _mse(spl, x, truth, 20)
    assert abs(spl_mse / spl.analytic_mse(n) - 1) < 0.15
    assert spl_mse / own >= 15 and spl_mse / measured >= 13


def test_intervals_cover_and_rsfd_is_unbiased():
    n = 10_000
    x, truth = _population(n, seed=1)
    for cls in (ldp.SMP, ldp.RSFD, ldp.SPL):
        m = cls(epsilon=EPS, domains=(K,) * A)
        cov, bias = [], []
        for s in range(30):
            e = m.estimate(m.randomize(x, rng=s))
            cov.append(np.mean([np.mean((a.ci_lower <= truth[j]) & (truth[j] <= a.ci_upper)) for j, a in enumerate(e.attributes)]))
            bias.append(e.attributes[0].raw[0] - truth[0][0])
        assert 0.92 <= np.mean(cov) <= 0.98, (cls.name, np.mean(cov))
        se = e.attributes[0].std_error[0]
        assert abs(np.mean(bias)) < 4 * se / math.sqrt(30), cls.name


def test_merge_and_population_target():
    m = ldp.SMP(epsilon=1.0, domains=(3, 4))
    x = np.random.default_rng(2).integers(0, [3, 4], size=(2000, 2))
    r1, r2 = m.randomize(x[:1000], rng=1), m.randomize(x[1000:], rng=2)
    acc = m.accumulator().add(r1).merge(m.accumulator().add(r2))
    both = (np.r_[r1[0], r2[0]], np.r_[r1[1], r2[1]])
    a, b = acc.estimate(), m.estimate(both)
    assert all(np.allclose(p.raw, q.raw) for p, q in zip(a.attributes, b.attributes))
    pop = m.estimate(both, target="population")
    assert all((p.std_error > q.std_error).all() for p, q in zip(pop.attributes, b.attributes))


def test_polars_several_columns_in_one_report_out():
    df = pl.DataFrame({"uid": range(6), "country": [0, 1, 2, 1, 0, 0], "app": [3, 0, 1, 1, 2, 2]})
    for cls in (ldp.SMP, ldp.SPL, ldp.RSFD):
        m = cls(epsilon=2.0, domains=(3, 4))
        r = df.ldp.privatize_attributes(["country", "app"], m, seed=0, user_id="uid", keep_user_id=True)
        assert r.height == 6 and r.columns[0] == "uid"
        est = r.drop("uid").lazy().ldp.attribute_frequencies(m, names=["country", "app"])
        assert est.height == 7 and est["attribute"].to_list()[:3] == ["country"] * 3
    m = ldp.SMP(epsilon=2.0, domains=(3, 4))
    with pytest.raises(LDPInputError, match="column 'app' holds a code outside \\[0, 4\\) at row 1"):
        pl.DataFrame({"country": [0, 1], "app": [3, 9]}).ldp.privatize_attributes(["country", "app"], m)
    with pytest.raises(LDPInputError, match="null"):
        pl.DataFrame({"country": [0, None], "app": [3, 1]}).ldp.privatize_attributes(["country", "app"], m)
    with pytest.raises(LDPParameterError, match="multi-attribute mechanism"):
        df.ldp.privatize_attributes(["country", "app"], ldp.KRR(epsilon=1.0, d=3))


def test_opendp_measurements():
    m = ldp.make_smp(epsilon=2.0, domains=(3, 4))
    att, val = m((2, 1))
    assert att in (0, 1) and m.map(1) == 2.0
    assert len(ldp.make_rsfd(epsilon=1.0, domains=(3, 4))((2, 1))) == 2
    assert ldp.make_spl(epsilon=1.0, domains=(3, 4), unit="population").map(3) >= 3.0


def test_smp_pairs_marginals_match_analytic_with_power_and_cover():
    """Two-way marginals from SMP over attribute pairs (4 attributes, k = 4, ε = 2, n = 20,000):
    per-pair MSE of the joint distribution within 10% of analytic over 80 runs (an analytic
    error 30% off is rejected), intervals covering 93–98%; channel and layers."""
    m = ldp.SMPPairs(epsilon=2.0, domains=(4, 4, 4, 4))
    assert len(m.pairs) == 6 and m.realized_ratio == m.oracles[0].realized_ratio
    gen = np.random.default_rng(0)
    n = 20_000
    a = gen.integers(0, 4, n)
    x = np.stack([a, (a + gen.integers(0, 2, n)) % 4, gen.integers(0, 4, n), (a * 3 + gen.integers(0, 2, n)) % 4], 1)  # correlated
    truth = [np.bincount(x[:, i] * 4 + x[:, j], minlength=16) / n for i, j in m.pairs]
    mse, cov = [], []
    for s in range(80):
        e = m.estimate(m.randomize(x, rng=s))
        mse.append(np.mean([np.sum((g.raw - truth[p]) ** 2) for p, g in enumerate(e.attributes)]))
        cov.append(np.mean([np.mean((g.ci_lower <= truth[p]) & (truth[p] <= g.ci_upper)) for p, g in enumerate(e.attributes)]))
    analytic = m.analytic_mse(n, theta=truth)
    assert abs(np.mean(mse) / analytic - 1) < 0.10
    assert abs(np.mean(mse) / (1.3 * analytic) - 1) > 0.10 and abs(np.mean(mse) * 1.3 / analytic - 1) > 0.10
    assert 0.93 <= np.mean(cov) <= 0.98
    small = build("smp-pairs", epsilon=1.0, domains=[2, 3])
    assert small.channel().max_ratio() == small.realized_ratio
    assert verify_instance(small, name="smp-pairs", instance={}, quick=True)["passed"]
    df = pl.DataFrame({"country": [0, 1, 2, 3] * 50, "os": [1, 0, 1, 1] * 50, "app": [2, 2, 0, 1] * 50})
    m3 = ldp.SMPPairs(epsilon=2.0, domains=(4, 2, 3))
    out = df.ldp.privatize_attributes(["country", "os", "app"], m3, seed=0).ldp.attribute_frequencies(m3, names=["country", "os", "app"])
    assert out["attribute"].unique(maintain_order=True).to_list() == ["country x os", "country x app", "os x app"]
    assert out.height == 8 + 12 + 6
