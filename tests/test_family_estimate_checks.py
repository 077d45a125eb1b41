"""The checks every issue-37 accumulator makes before it estimates (one implementation:
``estimation.check_estimate_request``): no reports, a confidence outside (0, 1) and an unknown
target are refused with the same clear errors, naming the parameter and never a value of a user."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError

X = np.random.default_rng(0).beta(2, 5, 400)
CASES = [
    (ldp.SquareWave(epsilon=1.0, grid=16), X, True),
    (ldp.BucketedOracle(epsilon=1.0, buckets=8), X, True),
    (ldp.HaarHRR(epsilon=1.0, buckets=8), X, True),
    (ldp.HierarchicalHistogram(epsilon=1.0, buckets=16), X, True),
    (ldp.Piecewise(epsilon=1.0, lower=0, upper=1), X, True),
    (ldp.SMP(epsilon=1.0, domains=(3, 4)), np.random.default_rng(1).integers(0, [3, 4], size=(400, 2)), True),
    (ldp.PCKV(epsilon=1.0, d=3, ell=1), ldp.KeyValueBatch(np.array([0, 1] * 200), np.full(400, 0.5), np.arange(401)), False),
]


@pytest.mark.parametrize("m,x,has_target", CASES, ids=[c[0].name for c in CASES])
def test_estimate_request_is_checked_the_same_way(m, x, has_target):
    with pytest.raises(LDPParameterError, match=r"at least one report \(n >= 1\)"):
        m.accumulator().estimate()
    acc = m.accumulator().add(m.randomize(x, rng=0))
    with pytest.raises(LDPParameterError, match=r"confidence must be a float in \(0, 1\) \(got 1.5\)"):
        acc.estimate(confidence=1.5)
    if has_target:
        with pytest.raises(LDPParameterError, match="target must be 'sample' or 'population'"):
            acc.estimate(target="everyone")
        assert acc.estimate(target="population") is not None
    assert acc.estimate(confidence=0.9) is not None
