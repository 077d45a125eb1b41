"""Every formula we rely on, checked against the exact channel or the paper."""

import math

import numpy as np
import pytest

from ldp_plugin import KRR, OUE, RAPPOR, KSubset
from ldp_plugin import theory

# Wang et al. (arXiv 2016) Table 1: (d, eps) -> (k*, k#)
TABLE1_K = {
    (2, 0.1): (1, 1), (2, 1.0): (1, 1), (4, 0.01): (2, 2), (4, 0.1): (2, 2), (4, 0.5): (2, 2), (4, 1.0): (1, 1),
    (6, 0.01): (3, 3), (6, 0.1): (3, 3), (6, 0.5): (3, 2), (6, 1.0): (2, 2), (8, 0.01): (4, 4), (8, 0.1): (4, 4),
    (8, 0.5): (3, 3), (8, 1.0): (3, 2), (8, 2.0): (2, 1), (16, 0.01): (8, 8), (16, 0.1): (8, 8), (16, 0.5): (7, 6),
    (16, 1.0): (5, 4), (16, 2.0): (3, 2), (16, 3.0): (2, 1), (32, 0.01): (16, 16), (32, 0.1): (15, 15),
    (32, 1.0): (11, 9), (32, 1.5): (9, 6), (32, 2.0): (7, 4), (32, 3.0): (4, 2), (64, 0.1): (31, 30),
    (64, 0.5): (27, 24), (64, 1.0): (22, 17), (64, 1.5): (17, 12), (64, 2.0): (13, 8), (64, 3.0): (7, 3),
    (64, 5.0): (2, 1), (128, 0.1): (62, 61), (128, 1.0): (43, 34), (128, 3.0): (14, 6), (128, 5.0): (4, 1),
    (256, 1.0): (87, 69), (256, 3.0): (29, 12), (256, 5.0): (7, 2),
}


@pytest.mark.parametrize("d,eps", sorted(TABLE1_K))
def test_k_star_and_k_sharp_reproduce_table1(d, eps):
    assert (theory.k_star(d, eps), theory.k_sharp(d, eps)) == TABLE1_K[(d, eps)]


@pytest.mark.parametrize("d,eps", [(5, 0.3), (6, 1.0), (6, 2.0), (8, 0.7), (12, 1.5)])
def test_k_sharp_and_k_star_are_optimal_over_all_k(d, eps):
    l2 = {k: theory.mse_k_subset(d, k, eps, 1) for k in range(1, d)}
    mi = {k: theory.mutual_information_k_subset(d, k, eps) for k in range(1, d)}
    assert l2[theory.k_sharp(d, eps)] == min(l2.values())
    assert mi[theory.k_star(d, eps)] == max(mi.values())


@pytest.mark.parametrize("d,k,eps", [(4, 1, 1.0), (5, 2, 0.5), (6, 3, 2.0), (6, 2, 0.1)])
def test_I_k_equals_mutual_information_of_the_exact_channel(d, k, eps):
    ch = KSubset(epsilon=eps, d=d, k=k).channel().as_float_array()
    mi = theory.mutual_information(ch, np.full(d, 1 / d))
    assert math.isclose(mi, theory.mutual_information_k_subset(d, k, eps), rel_tol=1e-9)


def test_beta_is_the_real_maximiser():
    d, eps = 40, 1.3
    b = theory.beta_mi(d, eps)
    f = lambda k: theory.mutual_information_k_subset(d, k, eps)
    assert f(b) > f(b - 1e-3) and f(b) > f(b + 1e-3)


@pytest.mark.parametrize("d,eps", [(4, 0.5), (16, 1.0), (64, 3.0), (1024, 4.0)])
def test_closed_form_mse_equal_the_mechanisms_realized_mse(d, eps):
    n = 1000
    assert math.isclose(KRR(epsilon=eps, d=d).mse(n), theory.mse_krr(d, eps, n), rel_tol=1e-12)
    assert math.isclose(RAPPOR(epsilon=eps, d=d).mse(n), theory.mse_rappor(d, eps, n), rel_tol=1e-12)
    assert math.isclose(OUE(epsilon=eps, d=d).mse(n), theory.mse_oue(d, eps, n), rel_tol=1e-12)
    m = KSubset(epsilon=eps, d=d)
    assert math.isclose(m.mse(n), theory.mse_k_subset(d, m.k, eps, n), rel_tol=1e-12)


def test_krr_mse_equals_paper002_prop3_with_sampling_term():
    d, eps, n = 10, 1.2, 5000
    p = np.linspace(1, 2, d)
    p /= p.sum()
    prop3 = (1 - np.sum(p**2)) / n + (d - 1) / n * (d + 2 * math.expm1(eps)) / math.expm1(eps) ** 2
    assert math.isclose(KRR(epsilon=eps, d=d).mse(n, p, sampling="iid"), prop3, rel_tol=1e-12)


def test_rappor_mse_equals_paper002_prop4():
    d, eps, n = 10, 1.2, 5000
    p = np.full(d, 1 / d)
    e = math.exp(eps / 2)
    prop4 = (1 - np.sum(p**2)) / n + d * e / (n * (e - 1) ** 2)
    assert math.isclose(RAPPOR(epsilon=eps, d=d).mse(n, p, sampling="iid"), prop4, rel_tol=1e-12)


def test_k_subset_k1_is_krr():
    a, b = KSubset(epsilon=1.0, d=7, k=1), KRR(epsilon=1.0, d=7)
    assert a.p_star_exact == b.p_star_exact and a.q_star_exact == b.q_star_exact
