"""HaarHRR (issue 37): the exact channel, the Haar reconstruction (exact on the users' own
coefficients; its adjoint against finite differences), the range variance against the exact
analytic one with a power check, quantile coverage, Polars and OpenDP."""

from __future__ import annotations


import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.exact import ratio_within_exp
from ldp_plugin.mechanisms.haar import HaarEstimate
from ldp_plugin.mechanisms.hierarchy import flat_range_variance
from ldp_plugin.registry import build, from_spec, verify_instance
from ldp_plugin.mechanisms.reports import check_reports, report_schema

from ._helpers import polars_latency_intervals, quantile_coverage, range_variance_with_power


def _coefficients(m, k):
    out = []
    for l in range(1, m.levels + 1):
        a, s = m._node_and_sign(k, np.full(k.size, l))
        out.append(np.bincount(a, weights=s, minlength=1 << (l - 1)) / k.size)
    return out


def test_channel_layers_spec_and_errors():
    for eps, B in [(1.0, 4), (3.0, 8)]:
        m = build("haar-hrr", epsilon=eps, buckets=B)
        ch = m.channel()
        assert ch.rows_sum_to_one() and ch.max_ratio() == m.realized_ratio and ratio_within_exp(m.realized_ratio, eps)
        assert from_spec(m.spec()) == m
    m = build("haar-hrr", epsilon=1.0, buckets=8)
    assert verify_instance(m, name="haar-hrr", instance={}, quick=True)["passed"]
    r = m.randomize(np.linspace(0, 1, 50), rng=0)
    bad = {k: v.copy() for k, v in r.items()}
    bad["row"][np.asarray(bad["level"]) == 1] = 1  # level 1 has one Hadamard row
    _, rej = check_reports(m, bad)
    assert rej["out_of_range"] == int((np.asarray(r["level"]) == 1).sum())
    with pytest.raises(LDPParameterError, match="buckets must be a power of two"):
        ldp.HaarHRR(epsilon=1.0, buckets=12)


def test_reconstruction_is_exact_and_the_adjoint_is_the_gradient():
    m = ldp.HaarHRR(epsilon=1.0, buckets=64)
    k = m.encode(np.random.default_rng(0).beta(2, 5, 5000))
    D = _coefficients(m, k)
    e = HaarEstimate(m, D, [800.0] * 6, 5000, 0.95, "sample")
    assert np.abs(e.leaves - np.bincount(k, minlength=64) / k.size).max() < 1e-12
    a = e._weights(0.1, 0.37)
    w = e._adjoint(a[:, None])
    base = a @ e._reconstruct(D)
    for l in range(6):
        for j in (0, (1 << l) - 1):
            bumped = [d.copy() for d in D]
            bumped[l][j] += 1e-3
            assert (a @ e._reconstruct(bumped) - base) / 1e-3 == pytest.approx(float(w[l][j, 0]), abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("B", [64, 4096])
def test_range_variance_matches_analytic_with_power(B):
    """n = 5000, ε = 1, an unaligned range of width B/4 (the issue's B = 4096 and a coarse B = 64):
    the measured variance over 2000 seeded collections of the same users within 3 standard errors
    (±9.5%) of the exact analytic one; a variance model 30% off is rejected; the estimate is
    unbiased; at B = 4096 the flat OUE sum has ≥ 4× the variance."""
    a, th, analytic = range_variance_with_power(ldp.HaarHRR(epsilon=1.0, buckets=B), 2000)
    if B == 4096:
        assert flat_range_variance(1.0, 5000, int((a > 0).sum()), theta=th[a > 0]) / analytic >= 4


@pytest.mark.slow
def test_quantile_intervals_cover():
    assert (quantile_coverage(ldp.HaarHRR(epsilon=1.0, buckets=256)) >= 0.93).all()


def test_polars_and_opendp():
    m = ldp.HaarHRR(epsilon=2.0, lower=0, upper=1000, buckets=64)
    reports, _q = polars_latency_intervals(m, [0.5, 0.95])
    assert reports.schema == report_schema(m)
    assert ldp.make_haar_hrr(epsilon=1.0, buckets=16).map(1) == 1.0
