"""Shuffle-model accounting (issue 16): soundness against exact two-dataset divergences, the
counterexample that rules out mixing the victim's common part into the counts, monotonicity,
closed-form parameters equal to the exact ones, and the OpenDP face."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.amplification.variation import _divergence
from ldp_plugin.amplification import (
    BlanketParameters,
    blanket_delta,
    blanket_epsilon,
    blanket_parameters,
    mechanism_variation_parameters,
    amplify,
    binary_rr_exact_lower,
    exact_variation_parameters,
    generic_parameters,
    make_shuffle_amplified,
    shuffle_delta,
    shuffle_epsilon,
    variation_parameters,
)


def _exact_delta(M, others, x0, x1, eps):
    """Exact hockey-stick divergence of the shuffled histograms for two neighbouring datasets
    (victim x0 or x1, others[v] users holding v), by dynamic programming over histograms."""
    d = M.shape[0]

    def dist(victim):
        cur = {(0,) * d: 1.0}
        rows = [M[v] for v, c in enumerate(others) for _ in range(c)] + [M[victim]]
        for row in rows:
            nxt = {}
            for h, pr in cur.items():
                for y in range(d):
                    hh = h[:y] + (h[y] + 1,) + h[y + 1:]
                    nxt[hh] = nxt.get(hh, 0.0) + pr * row[y]
            cur = nxt
        return cur

    P, Q = dist(x0), dist(x1)
    e = math.exp(eps)
    keys = set(P) | set(Q)
    return max(sum(max(P.get(k, 0) - e * Q.get(k, 0), 0) for k in keys), sum(max(Q.get(k, 0) - e * P.get(k, 0), 0) for k in keys))


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("n", [50, 500, 5000])
def test_binary_rr_never_below_its_exact_lower_bound(eps0, n):
    vp = variation_parameters(ldp.WarnerRR(epsilon=eps0))
    ub = shuffle_epsilon(vp, n, 1e-4)
    exact = binary_rr_exact_lower(eps0, n, 1e-4)
    assert ub >= exact - 1e-12
    assert ub <= eps0
    assert shuffle_epsilon(vp, n, 1e-4, upper=False) is None  # d = 2: no third value for the exact pair


@pytest.mark.parametrize("eps0,d,n", [(1.0, 3, 30), (2.0, 4, 20)])
def test_krr_lower_bound_is_attained_by_an_exact_pair(eps0, d, n):
    """The lower bound is the exact divergence of the two distinguishing outputs' counts with the
    others on a third value — a post-processing of the real view, so the real pair is at least
    as distinguishable at that ε."""
    m = ldp.KRR(epsilon=eps0, d=d)
    low = shuffle_epsilon(mechanism_variation_parameters(m), n, 1e-3, upper=False)
    others = [0, 0, n - 1] + [0] * (d - 3)
    assert _exact_delta(m.channel().as_float_array(), others, 0, 1, low) >= 1e-3 * (1 - 1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("eps0,d,n", [(1.0, 3, 30), (3.0, 4, 25), (2.0, 5, 20)])
def test_krr_bound_is_never_below_an_exact_neighbouring_pair(eps0, d, n):
    m = ldp.KRR(epsilon=eps0, d=d)
    M = m.channel().as_float_array()
    vp = variation_parameters(m)
    gen = generic_parameters(eps0)
    for eps in (0.4 * eps0, 0.7 * eps0):
        bound = min(shuffle_delta(eps, vp, n), shuffle_delta(eps, gen, n))
        for others in ([n - 1] + [0] * (d - 1), [0] * (d - 1) + [n - 1]):
            assert _exact_delta(M, others, 0, 1, eps) <= bound + 1e-12


def test_mixing_the_common_part_into_the_counts_would_be_unsound():
    """The power check behind the design: with the victim's common part mixed into the counts
    (the formula whose k-RR numbers are often quoted), δ at ε = 2 for k-RR, d = 4, ε0 = 3,
    n = 25 is 0.071 — below the exact divergence 0.079 of a concrete neighbouring pair."""
    m = ldp.KRR(epsilon=3.0, d=4)
    vp = mechanism_variation_parameters(m)
    alpha = vp.beta / (vp.p - 1)
    r0 = alpha * vp.p / vp.q
    mixed = _divergence(2.0, vp.p, alpha, r0, r0, 25, upper=False, mix=True)
    exact = _exact_delta(m.channel().as_float_array(), [0, 0, 0, 24], 0, 1, 2.0)
    assert mixed < exact  # the mixed formula under-states δ ...
    assert shuffle_delta(2.0, vp, 25) >= exact  # ... the shipped bound does not


@pytest.mark.parametrize("eps0,d,n", [(1.0, 3, 30), (3.0, 4, 25), (2.0, 5, 14), (2.0, 2, 40)])
def test_blanket_bound_is_never_below_an_exact_neighbouring_pair(eps0, d, n):
    """The privacy-blanket bound against exact divergences of concrete neighbouring pairs
    (others all on the victim's value, on the other value, on a third value, or split)."""
    m = ldp.KRR(epsilon=eps0, d=d)
    M = m.channel().as_float_array()
    bp = blanket_parameters(m)
    assert bp.gamma == pytest.approx(d * float(m.q_star_exact), rel=1e-15) and bp.gamma <= d * m.q_star_exact
    datasets = [[n - 1] + [0] * (d - 1), [0, n - 1] + [0] * (d - 2), [0] * (d - 1) + [n - 1], [(n - 1) // 2, n - 1 - (n - 1) // 2] + [0] * (d - 2)]
    for eps in (0.2 * eps0, 0.5 * eps0, 0.7 * eps0):
        bound = blanket_delta(eps, bp, n)
        for others in datasets:
            assert _exact_delta(M, others, 0, 1, eps) <= bound + 1e-12


def test_blanket_bound_catches_a_claimed_blanket_too_large():
    """Power check: the same exact-pair comparison fails for a bound that claims 30% more
    blanket than the channel has (the d = 4 counterexample pair)."""
    m = ldp.KRR(epsilon=3.0, d=4)
    exact = _exact_delta(m.channel().as_float_array(), [0, 0, 0, 24], 0, 1, 2.0)
    honest = blanket_delta(2.0, blanket_parameters(m), 25)
    wrong = blanket_delta(2.0, BlanketParameters(4, min(0.99, 1.3 * blanket_parameters(m).gamma)), 25)
    assert wrong < exact <= honest
    assert shuffle_delta(2.0, mechanism_variation_parameters(m), 25) >= honest  # both certified; here the blanket is tighter


@pytest.mark.slow
@pytest.mark.parametrize("eps0,d,n", [(1.0, 3, 2000), (4.0, 64, 10**5), (2.0, 1024, 10**5), (6.0, 16, 10**4)])
def test_blanket_bound_is_above_the_exact_lower_bound_and_close_to_it(eps0, d, n):
    m = ldp.KRR(epsilon=eps0, d=d)
    lower = shuffle_epsilon(mechanism_variation_parameters(m), n, 1e-8, upper=False)
    upper = blanket_epsilon(blanket_parameters(m), n, 1e-8, epsilon0=eps0)
    assert lower <= upper <= lower * 1.02 + 1e-9  # a sound bound, within 2% of an attained divergence


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0])
def test_blanket_binary_rr_never_below_its_exact_lower_bound(eps0):
    for n in (50, 500, 5000):
        exact = binary_rr_exact_lower(eps0, n, 1e-4)
        ub = blanket_epsilon(blanket_parameters(ldp.KRR(epsilon=eps0, d=2)), n, 1e-4, epsilon0=eps0)
        assert exact - 1e-12 <= ub <= eps0


@pytest.mark.slow
def test_blanket_monotone_in_n_and_eps0():
    e = [blanket_epsilon(blanket_parameters(ldp.KRR(epsilon=2.0, d=64)), n, 1e-8, epsilon0=2.0) for n in (10**3, 10**4, 10**5)]
    assert e[0] > e[1] > e[2]
    by_eps0 = [blanket_epsilon(blanket_parameters(ldp.KRR(epsilon=x, d=64)), 10**4, 1e-8, epsilon0=x) for x in (1.0, 2.0, 4.0, 6.0)]
    assert by_eps0 == sorted(by_eps0) and len(set(by_eps0)) == 4


@pytest.mark.slow
def test_monotone_in_n_eps0_and_beta():
    base = generic_parameters(2.0)
    e = [shuffle_epsilon(base, n, 1e-6) for n in (10**3, 10**4, 10**5)]
    assert e[0] > e[1] > e[2]
    assert shuffle_epsilon(generic_parameters(1.0), 10**4, 1e-6) < shuffle_epsilon(generic_parameters(3.0), 10**4, 1e-6)
    vp = mechanism_variation_parameters(ldp.KRR(epsilon=2.0, d=8))
    assert shuffle_epsilon(vp, 10**4, 1e-6) >= shuffle_epsilon(vp, 10**4, 1e-6, upper=False)
    # NOT monotone in β at a fixed q (a larger β also means more clones): so β is never rounded
    # or bounded from above; it is computed exactly (closed forms equal the exact channel's)
    wider = type(vp)(vp.p, min(1.0, vp.beta * 1.5), vp.q, "test")
    assert shuffle_epsilon(wider, 10**4, 1e-6) < shuffle_epsilon(vp, 10**4, 1e-6)


@pytest.mark.parametrize("mech", [ldp.KRR(epsilon=1.0, d=4), ldp.KRR(epsilon=3.0, d=6), ldp.RAPPOR(epsilon=2.0, d=4),
                                  ldp.OUE(epsilon=2.0, d=5), ldp.THE(epsilon=1.0, d=4)], ids=lambda m: f"{m.name}-{m.d}")
def test_closed_form_parameters_equal_the_exact_ones(mech):
    a, b = mechanism_variation_parameters(mech), exact_variation_parameters(mech.channel())
    assert (a.p, a.beta, a.q, a.point_masses) == pytest.approx((b.p, b.beta, b.q, b.point_masses), rel=1e-12)


@pytest.mark.slow
def test_amplify_reports_both_numbers_and_the_assumption():
    out = amplify(ldp.KRR(epsilon=4.0, d=64), 10**5, 1e-10)
    assert out["epsilon_lower"] <= out["epsilon"] <= min(out["epsilon_generic"], out["epsilon_specific"], out["epsilon_blanket"], 4.0)
    assert out["method"].startswith("privacy blanket")
    assert "trusted shuffler" in out["assumption"]
    assert amplify(ldp.OUE(epsilon=2.0, d=16), 10**4, 1e-6)["epsilon_lower"] is None  # no exact pair for unary encodings


@pytest.mark.slow
def test_opendp_profile_composes_with_fix_delta():
    import opendp.prelude as dp

    mech = ldp.KRR(epsilon=2.0, d=4)
    meas = make_shuffle_amplified(mech, 2000)
    fixed = dp.c.make_fix_delta(meas, 1e-6)
    eps, delta = fixed.map(2)
    assert delta == 1e-6 and eps == pytest.approx(amplify(mech, 2000, 1e-6)["epsilon"], rel=1e-6)
    assert dp.c.make_composition([fixed, fixed]).map(2) == pytest.approx((2 * eps, 2e-6))
    out = meas(list(range(4)) * 500)
    assert len(out) == 2000
    with pytest.raises(Exception):
        meas([0, 1])  # below the guaranteed batch size


def test_cli_amplify_json(cli):
    import json

    # the done-when: k-RR over 1,024 categories at eps0 = 4 among 10^6 users, delta = 1e-8
    out = cli("amplify", "--mechanism", "krr", "--d", "1024", "--epsilon", "4", "--n", "1000000", "--delta", "1e-8", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {"epsilon", "epsilon_lower", "beta", "method"} <= set(doc)
    assert doc["epsilon_lower"] <= doc["epsilon"] <= 0.0103
    assert np.isfinite(doc["seconds"])
