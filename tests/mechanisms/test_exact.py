import math
from fractions import Fraction

import pytest

from ldp_plugin.exact import (
    epsilon_of_ratio,
    exp_lower_bound,
    exp_upper_bound,
    float_up,
    ratio_within_exp,
    scale_epsilon_up,
)


@pytest.mark.parametrize("x", [1e-9, 0.1, 0.5, 1.0, 2.0, 10.0, 40.0])
def test_exp_bounds_bracket_and_are_tight(x):
    lo, hi = exp_lower_bound(x), exp_upper_bound(x)
    assert lo < hi
    assert (hi - lo) / lo < Fraction(1, 10**55)
    # float exp is within 1 ulp of the truth, far outside this bracket's width
    assert abs(float(lo) - math.exp(x)) <= 4 * math.ulp(math.exp(x))


def test_exp_lower_bound_below_e():
    # e = 2.71828182845904523536028747135266249775724709369995...
    e_prefix = Fraction("2.718281828459045235360287471352662497757247093699")
    e_next = Fraction("2.718281828459045235360287471352662497757247093700")
    assert exp_lower_bound(1.0) < e_next
    assert exp_upper_bound(1.0) > e_prefix


def test_ratio_within_exp_is_exact_at_the_edge():
    assert ratio_within_exp(exp_lower_bound(1.0), 1.0)
    assert not ratio_within_exp(exp_upper_bound(1.0), 1.0)
    assert ratio_within_exp(Fraction(1), 1e-12)


@pytest.mark.parametrize("r", [Fraction(3, 2), Fraction(10**20 + 7, 10**19), Fraction(2)])
def test_epsilon_of_ratio_rounds_up(r):
    eps = epsilon_of_ratio(r)
    assert ratio_within_exp(r, eps)  # e**eps >= r
    below = math.nextafter(eps, 0)
    assert exp_upper_bound(below) >= r or not ratio_within_exp(r, below)
    assert abs(eps - math.log(float(r))) < 1e-12


def test_epsilon_of_ratio_one():
    assert epsilon_of_ratio(Fraction(1)) == 0.0
    with pytest.raises(ValueError):
        epsilon_of_ratio(Fraction(1, 2))


def test_float_up_and_scale():
    assert float_up(Fraction(1, 3)) >= Fraction(1, 3)
    assert Fraction(float_up(Fraction(1, 3))) - Fraction(1, 3) < Fraction(1, 2**52)
    # 3 * 0.1 rounds *down* in naive floats relative to the exact product? check never below
    for d_in in (1, 2, 3, 7, 10, 1000):
        for eps in (0.1, 0.3, 1 / 3, 0.7):
            assert Fraction(scale_epsilon_up(d_in, eps)) >= Fraction(eps) * d_in
    assert scale_epsilon_up(0, 0.5) == 0.0
