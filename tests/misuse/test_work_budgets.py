"""Nothing hangs or answers meaninglessly inside a documented range: Square Wave at its largest
grid refuses (with the predicted time) instead of running EMS for hours, a range whose width
overflows is refused at construction, ``replicates=0`` gives no interval (NaN, labelled) rather
than a one-cell one, and ``ldp amplify`` at the largest batch refuses with the prediction."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError

from .harness import assert_clear_cli


def test_square_wave_largest_grid_refuses_fast():
    sw = ldp.SquareWave(epsilon=1.0, grid=1 << 16)
    r = sw.randomize(np.random.default_rng(0).random(200), rng=0)
    t0 = time.perf_counter()
    with pytest.raises(LDPParameterError, match=r"would take an estimated .* use a smaller grid or replicates"):
        sw.estimate(r)
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("cls", [ldp.SquareWave, ldp.BucketedOracle, ldp.HaarHRR, ldp.HierarchicalHistogram, ldp.Piecewise])
def test_overflowing_range_is_refused(cls):
    with pytest.raises(LDPParameterError, match="upper - lower must be a finite"):
        cls(epsilon=1.0, lower=-1e308, upper=1e308)


def test_no_replicates_means_no_interval():
    sw = ldp.SquareWave(epsilon=1.0, grid=32)
    est = sw.estimate(sw.randomize(np.random.default_rng(0).random(500), rng=0), replicates=0)
    assert est.interval_kind == "none" and "no intervals" in est.bounds
    q = est.quantiles([0.5])[0]
    assert math.isnan(q["ci_lower"]) and math.isnan(q["ci_upper"]) and 0 <= q["estimate"] <= 1
    rc = est.range_count(0.1, 0.5)
    assert math.isnan(rc.ci_lower) and math.isnan(rc.std_error) and rc.interval_kind == "none"


def test_amplify_largest_batch_refuses_with_prediction():
    argv = ["amplify", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "1000000000", "--delta", "1e-9"]
    assert_clear_cli(argv, ["--n"], seconds=10)
