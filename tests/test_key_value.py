"""Key–value sets (issue 37): PCKV-GRR — the exact channel, errors, unbiased frequency and
(consistent) mean estimates with intervals covering, a power check, Polars (two list columns and
a list of structs) and OpenDP."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.exact import ratio_within_exp
from ldp_plugin.registry import build, from_spec, verify_instance

D, ELL = 8, 2


def _population(n, seed=0):
    gen = np.random.default_rng(seed)
    hold = gen.random((n, D)) < np.linspace(0.05, 0.35, D)
    mu = np.linspace(-0.6, 0.6, D)
    keys, vals, off = [], [], [0]
    for i in range(n):
        ks = np.flatnonzero(hold[i])[:ELL]  # at most ell keys: the estimator's unbiased regime
        keys += ks.tolist()
        vals += np.clip(mu[ks] + gen.normal(0, 0.3, ks.size), -1, 1).tolist()
        off.append(len(keys))
    k, v = np.array(keys), np.array(vals)
    batch = ldp.KeyValueBatch(k, v, np.array(off))
    return batch, np.bincount(k, minlength=D) / n, np.bincount(k, weights=v, minlength=D) / np.bincount(k, minlength=D)


def test_channel_layers_and_spec():
    m = build("pckv", epsilon=1.0, d=2, ell=1)
    assert m.codes == 6 and m.channel().max_ratio() == m.realized_ratio and ratio_within_exp(m.realized_ratio, 1.0)
    assert from_spec(m.spec()) == m
    assert verify_instance(m, name="pckv", instance={}, quick=True)["passed"]
    # PCKV-GRR's a and b (USENIX Security 2020, eq. (9)) are the k-RR rates over 2d' codes
    e = math.exp(2.0)
    m = ldp.PCKV(epsilon=2.0, d=D, ell=ELL)
    p, q = m.inner.p_star, m.inner.q_star
    assert p + q == pytest.approx((e + 1) / (e + 2 * (D + ELL) - 1)) and p / (p + q) == pytest.approx(e / (e + 1))


def test_errors_never_echo_values():
    m = ldp.PCKV(epsilon=1.0, d=3)
    with pytest.raises(LDPInputError, match="keys must be integers in \\[0, 3\\)"):
        m.randomize([[(0, 0.5)], [(7, 0.1)]])
    with pytest.raises(LDPInputError, match="values must be in \\[-1, 1\\]") as e:
        m.randomize([[(0, 0.123456)], [(1, 4.5678)]])
    assert "4.5678" not in str(e.value)
    with pytest.raises(LDPInputError, match="holds a key twice"):
        m.randomize([[(0, 0.5), (0, 0.1)]])
    with pytest.raises(LDPParameterError, match="ell"):
        ldp.PCKV(epsilon=1.0, d=3, ell=0)


def test_unbiased_and_intervals_cover_with_power():
    """100 seeded collections of the same 20,000 users: frequency and mean unbiased (|z| < 4 per
    key), intervals covering 93–98% overall; a decoder that forgets the padding factor ℓ is
    biased far beyond the same bound."""
    batch, f_true, m_true = _population(20_000)
    m = ldp.PCKV(epsilon=2.0, d=D, ell=ELL)
    F, M, cf, cm = [], [], [], []
    for s in range(100):
        e = m.estimate(m.randomize(batch, rng=s))
        F.append(e.frequency)
        M.append(e.mean)
        cf.append((e.frequency_ci_lower <= f_true) & (f_true <= e.frequency_ci_upper))
        cm.append((e.mean_ci_lower <= m_true) & (m_true <= e.mean_ci_upper))
    F, M = np.array(F), np.array(M)
    zf = (F.mean(0) - f_true) / (F.std(0, ddof=1) / 10)
    zm = (M.mean(0) - m_true) / (M.std(0, ddof=1) / 10)
    assert np.abs(zf).max() < 4 and np.abs(zm).max() < 4
    assert 0.93 <= np.mean(cf) <= 0.98 and 0.93 <= np.mean(cm) <= 0.98
    wrong = F / ELL  # the estimator without the padding-and-sampling factor
    assert np.abs((wrong.mean(0) - f_true) / (F.std(0, ddof=1) / ELL / 10)).max() > 4


def test_merge():
    batch, _, _ = _population(2000, seed=1)
    m = ldp.PCKV(epsilon=1.0, d=D, ell=ELL)
    r = m.randomize(batch, rng=0)
    acc = m.accumulator().add(r[:700]).merge(m.accumulator().add(r[700:]))
    assert np.allclose(acc.estimate().frequency, m.estimate(r).frequency)


def test_polars_and_opendp():
    pckv = ldp.PCKV(epsilon=2.0, d=3, ell=2)
    df = pl.DataFrame({"keys": [[0, 2], [], [1]] * 50, "values": [[0.5, -1.0], [], [0.25]] * 50})
    r1 = df.ldp.privatize_key_values("keys", pckv, values="values", seed=0)
    structs = pl.DataFrame({"apps": [[{"key": 0, "value": 0.5}, {"key": 2, "value": -1.0}], [], [{"key": 1, "value": 0.25}]] * 50})
    r2 = structs.lazy().ldp.privatize_key_values("apps", pckv, seed=0)
    assert r1.equals(r2) and r1.height == 150
    out = r1.ldp.key_values(pckv)
    assert out.height == 3 and {"frequency", "mean_ci_upper"} <= set(out.columns)
    assert out.equals(r1.lazy().ldp.key_values(pckv))  # the streamed reports give the same estimate
    with pytest.raises(LDPInputError, match=r"lacks column\(s\) \['report'\]"):
        r1.rename({"report": "r"}).ldp.key_values(pckv)
    with pytest.raises(LDPInputError, match="empty"):
        r1.head(0).ldp.key_values(pckv)
    with pytest.raises(LDPInputError, match="different lengths at row 1"):
        pl.DataFrame({"keys": [[0], [1, 2]], "values": [[0.5], [0.1]]}).ldp.privatize_key_values("keys", pckv, values="values")
    with pytest.raises(LDPParameterError, match="key-value mechanism"):
        df.ldp.privatize_key_values("keys", ldp.KRR(epsilon=1.0, d=3), values="values")
    m = ldp.make_pckv(epsilon=1.0, d=4, ell=2)
    assert 0 <= m([(1, 0.5)]) < 12 and m.map(1) == 1.0
