"""Bad inputs: errors name the parameter and the allowed range, never echo user values."""

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin import KRR, OUE, RAPPOR, KSubset, LDPInputError, LDPParameterError, WarnerRR

FAMILIES = [KRR, RAPPOR, OUE, KSubset]


@pytest.mark.parametrize("cls", FAMILIES)
@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), "1.0", None, True])
def test_bad_epsilon(cls, eps):
    with pytest.raises(LDPParameterError, match="epsilon"):
        cls(epsilon=eps, d=4)


@pytest.mark.parametrize("cls", FAMILIES)
def test_bad_domains(cls):
    with pytest.raises(LDPParameterError, match="categories must not be empty"):
        cls(epsilon=1.0, categories=[])
    with pytest.raises(LDPParameterError, match="unique"):
        cls(epsilon=1.0, categories=["a", "b", "a"])
    with pytest.raises(LDPParameterError, match=r"d must be an integer in \[2"):
        cls(epsilon=1.0, d=1)
    with pytest.raises(LDPParameterError, match="d must"):
        cls(epsilon=1.0, d=4.0)
    with pytest.raises(LDPParameterError, match="d or the categories"):
        cls(epsilon=1.0)
    with pytest.raises(LDPParameterError, match="len"):
        cls(epsilon=1.0, d=3, categories=["a", "b"])
    with pytest.raises(LDPParameterError, match="single string"):
        cls(epsilon=1.0, categories="abc")


@pytest.mark.parametrize("cls", FAMILIES)
def test_unknown_category_and_wrong_type_do_not_echo(cls):
    m = cls(epsilon=1.0, categories=["alpha", "beta", "gamma"])
    secret = "user-secret-8271"
    with pytest.raises(LDPInputError) as exc:
        m.randomize(["alpha", secret, "beta"], rng=1)
    assert secret not in str(exc.value) and "position 1" in str(exc.value)
    m2 = cls(epsilon=1.0, d=3)
    with pytest.raises(LDPInputError, match="dtype") as exc:
        m2.randomize(np.array([0.5, 1.0]), rng=1)
    with pytest.raises(LDPInputError, match="out of range") as exc:
        m2.randomize([0, 1, 98765], rng=1)
    assert "98765" not in str(exc.value)
    with pytest.raises(LDPInputError, match="1-d"):
        m2.randomize(np.zeros((2, 2), dtype=int), rng=1)


@pytest.mark.parametrize("k", [0, 6, -1, 2.5, "big", True])
def test_k_outside_range(k):
    with pytest.raises(LDPParameterError, match="k must be"):
        KSubset(epsilon=1.0, d=6, k=k)


def test_warner_needs_booleans():
    with pytest.raises(LDPInputError, match="boolean"):
        WarnerRR(epsilon=1.0).randomize([0, 1], rng=1)
    assert WarnerRR(epsilon=1.0).randomize([True, False], rng=1).dtype == np.bool_


def test_extreme_epsilons():
    # huge ε: thresholds saturate at 2**64 − 1, never at 1; the realized ε is then below the
    # declared one (still exact, still private), and is reported
    m = KRR(epsilon=60.0, d=2)
    assert 0 < m.q_star_exact and m.p_star_exact < 1
    assert 44 < m.realized_epsilon < 45
    assert OUE(epsilon=50.0, d=4).realized_epsilon <= 50.0
    # ε so small that 64-bit thresholds cannot separate p* from q*: refused, not silently ε = 0
    for cls in FAMILIES:
        with pytest.raises(LDPParameterError, match="too small"):
            cls(epsilon=1e-25, d=4)


def test_bad_reports_are_refused():
    m = KRR(epsilon=1.0, d=4)
    with pytest.raises(LDPInputError):
        m.accumulator().add(np.array([0, 7]))
    r = RAPPOR(epsilon=1.0, d=4)
    with pytest.raises(LDPInputError, match="padding"):
        r.accumulator().add(np.array([[0xFF]], dtype=np.uint8))
    s = KSubset(epsilon=1.0, d=6, k=2)
    with pytest.raises(LDPInputError, match="increasing"):
        s.accumulator().add(np.array([[3, 1]], dtype=np.uint16))


def test_estimate_arguments():
    m = KRR(epsilon=1.0, d=3)
    acc = m.accumulator()
    with pytest.raises(LDPParameterError, match="at least one report"):
        acc.estimate()
    acc.add(m.randomize([0, 1, 2], rng=1))
    with pytest.raises(LDPParameterError, match="postprocess"):
        acc.estimate(postprocess="magic")
    with pytest.raises(LDPParameterError, match="confidence"):
        acc.estimate(confidence=1.5)
    with pytest.raises(LDPParameterError, match="em"):
        RAPPOR(epsilon=1.0, d=3).estimate(RAPPOR(epsilon=1.0, d=3).randomize([0], rng=1), postprocess="em")


def test_frozen_parameters():
    m = KRR(epsilon=1.0, d=3)
    with pytest.raises(Exception):
        m.epsilon = 5.0
    with pytest.raises(TypeError):
        KRR(1.0, 3)  # keyword-only
    assert ldp.KRR(epsilon=1, d=3).epsilon == 1.0
