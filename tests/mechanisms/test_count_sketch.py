"""The private count sketch (CountSketch's cell and sign hashes, HCMS's local randomizer): its
signed positions, the signed least-squares decoder (known total, mass outside the candidates,
calibrated errors), the streamed read-out without collision correction, and the predicted MSE —
each with a power check against a deliberately wrong variant. The exact channel and the sampler's
goodness of fit are in tests/test_cohort.py (SMALL)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from ldp_plugin import CountSketch, LDPParameterError
from ldp_plugin.estimation import least_squares_decode
from ldp_plugin.estimation.sketch import sketch_decode
from ldp_plugin.hashing import item_keys
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.theory import mse_cohort

ALPHA = 1e-6


def _calibrated(est: np.ndarray, var: np.ndarray, truth: np.ndarray, R: int) -> tuple[bool, bool, bool]:
    """(mean within z-crit of the truth, sample variance within the χ² band of ``var``, and the
    same band rejecting ``1.4·var``)."""
    m = truth.size
    zcrit = stats.norm.isf(ALPHA / (2 * m))
    unbiased = bool(np.all(np.abs(est.mean(axis=0) - truth) / np.sqrt(var / R) < zcrit))
    s2 = est.var(axis=0, ddof=1)
    lo = stats.chi2.ppf(ALPHA / (2 * m), R - 1) / (R - 1)
    hi = stats.chi2.isf(ALPHA / (2 * m), R - 1) / (R - 1)
    ok = bool(np.all((s2 / var > lo) & (s2 / var < hi)))
    wrong = bool(np.all((s2 / (1.4 * var) > lo) & (s2 / (1.4 * var) < hi)))
    return unbiased, ok, wrong


def test_signed_positions_open_and_closed():
    """Open alphabet: one hash into 2k values gives a uniform cell and an independent uniform sign.
    Closed: cells balanced, signs alternating within a cell; d <= k gives every item its own cell,
    d = 2k two items of opposite signs per cell (so B_c·1 = 0: the cells cannot see the total)."""
    m = CountSketch(epsilon=1.0, k=8, cohorts=3, hash_seed=7)
    keys = item_keys(np.array([f"item-{i}" for i in range(160_000)], dtype=object))
    cells, signs = m.covers_of(keys, np.arange(keys.size))
    assert cells.shape == signs.shape == (3, 1, keys.size) and signs.dtype == np.int8
    joint = np.bincount((2 * cells + (signs < 0)).ravel(), minlength=16)
    assert stats.chisquare(joint).pvalue > ALPHA  # 16 (cell, sign) pairs equally likely
    assert stats.chisquare(joint[::2] + joint[1::2]).pvalue > ALPHA
    small = CountSketch(epsilon=1.0, k=8, cohorts=4, d=8)
    c, _ = small.covers_of(None, np.arange(8))
    assert all(len(set(c[j, 0])) == 8 for j in range(4))
    full = CountSketch(epsilon=1.0, k=8, cohorts=4, d=16)
    c, g = full.covers_of(None, np.arange(16))
    for j in range(4):
        B = np.zeros((8, 16))
        B[c[j, 0], np.arange(16)] = g[j, 0]
        assert np.array_equal(np.abs(B).sum(axis=1), np.full(8, 2)) and not B.sum(axis=1).any()


@pytest.mark.slow
def test_closed_alphabet_known_total_is_imposed():
    """At d = 2k the signed cells cancel the total: the decoder imposes Σθ = 1 and is unbiased with
    calibrated errors; the plain pseudo-inverse (no total) loses the total (power check)."""
    m = CountSketch(epsilon=2.0, k=4, cohorts=6, d=8)
    pos, sg = m.covers_of(None, np.arange(8))
    n_c = np.full(6, 100)
    assert least_squares_decode(np.zeros((6, 4)), n_c, 1.0, 0.0, pos, covariance="hadamard-signed", noise=1.0, signs=sg, total=1.0)[2] == 7
    counts = np.array([900, 500, 300, 200, 80, 20, 0, 0])
    values = np.repeat(np.arange(8), counts)
    theta = counts / values.size
    R = 1000
    src = SeededRandomSource(31)
    est, se2, plain = [], [], []
    for _ in range(R):
        acc = m.accumulator().add(m.randomize(values, rng=src))
        e = acc.estimate(postprocess="none")
        est.append(e.raw)
        se2.append(e.std_error**2)
        z, p, q, cov, noise = m.cell_statistic(acc.counts, acc.n_c)
        plain.append(least_squares_decode(z, acc.n_c, p, q, pos, covariance=cov, noise=noise, signs=sg)[0])
    est = np.array(est)
    assert np.allclose(est.sum(axis=1), 1.0)
    unbiased, ok, wrong = _calibrated(est, np.mean(se2, axis=0), theta, R)
    assert unbiased and ok and not wrong
    assert abs(np.mean(np.sum(plain, axis=1)) - 1.0) > 0.5  # without the total: its sum is lost


@pytest.mark.slow
def test_open_alphabet_outside_mass_and_errors():
    """40% of users hold items outside the candidates: signed collisions average out (no
    uniform-mass unknown), ``<other> = 1 − Σθ̂``; every entry unbiased with calibrated errors
    (including the non-candidates' spread over cells and signs), with a power check."""
    m = CountSketch(epsilon=2.0, k=16, cohorts=32, hash_seed=5)
    cands = ["a", "b", "c", "d"]
    counts = np.array([3000, 2000, 1000, 0])
    tail = np.array([f"tail-{i}" for i in range(4000)], dtype=object)
    values = np.r_[np.repeat(np.array(cands, dtype=object), counts), tail]
    theta = np.r_[counts, tail.size] / values.size
    R = 400
    src = SeededRandomSource(8)
    est, se2 = [], []
    for _ in range(R):
        e = m.estimate(m.randomize(values, rng=src), candidates=cands, postprocess="none")
        assert e.items == (*cands, "<other>")
        est.append(e.raw)
        se2.append(e.std_error**2)
    unbiased, ok, wrong = _calibrated(np.array(est), np.mean(se2, axis=0), theta, R)
    assert unbiased and ok and not wrong


@pytest.mark.slow
def test_streamed_read_out_needs_no_collision_correction():
    """The sketch decoder at 200 candidates, 128 cohorts and a heavy tail outside the candidates:
    the signed read-out is unbiased over the hash (a fresh ``hash_seed`` per run: collisions are part
    of the error the cohort spread measures) and its errors are calibrated; the same counts read
    without the signs (an unsigned read of signed cells) are biased (power check)."""
    S = 200
    cands = [f"w{i}" for i in range(S)]
    f = 1.0 / np.arange(1, S + 1) ** 1.1
    counts = np.floor(20_000 * f / f.sum()).astype(int)
    tail = np.array([f"t{i}" for i in range(5_000)], dtype=object)
    values = np.r_[np.repeat(np.array(cands, dtype=object), counts), tail]
    theta = np.r_[counts, tail.size] / values.size
    keys = item_keys(np.array(cands, dtype=object))
    R = 150
    src = SeededRandomSource(12)
    est, se2, unsigned = [], [], []
    for rep in range(R):
        m = CountSketch(epsilon=4.0, k=64, cohorts=128, hash_seed=rep)
        acc = m.accumulator().add(m.randomize(values, rng=src))
        e = acc.estimate(candidates=cands, postprocess="none", decoder="sketch")
        est.append(e.raw)
        se2.append(e.std_error**2)
        z = m.cell_statistic(acc.counts, acc.n_c)[0]
        unsigned.append(sketch_decode(m, z, acc.n_c, lambda idx: m.covers_of(keys, idx)[0], S, p=1.0, q=0.0)[0][:3])
    var = np.mean(se2, axis=0)
    unbiased, ok, _ = _calibrated(np.array(est), var, theta, R)
    assert unbiased and ok
    # pooled over the 201 entries (relative sd ≈ sqrt(2/(R·201)) = 0.008; the cohort spread is
    # conservative by at most θ(1−θ)/n): within 10%, and a 40% error in the variance is caught
    pooled = float(np.mean(((np.array(est) - theta) ** 2).mean(axis=0) / var))
    assert 0.9 < pooled < 1.1 and not 0.9 < pooled / 1.4 < 1.1
    se_top = np.sqrt(np.mean(se2, axis=0)[:3] / R)
    assert np.all(np.abs(np.mean(unsigned, axis=0) - theta[:3]) / se_top > stats.norm.isf(ALPHA))


@pytest.mark.slow
def test_predicted_mse_matches_simulation_with_power():
    """Closed alphabet: the exact trace on the instance's signed partitions (with the known total)
    matches simulation; the random-partition approximation stays within 12% of it."""
    S, n, R = 40, 40 * 100, 300
    vals = np.repeat(np.arange(S), n // S)
    tol = 4 * math.sqrt(2 / (S * R))  # relative sd of a mean of R squared-error sums over S items
    for k, C in ((8, 16), (64, 4)):
        m = CountSketch(epsilon=1.0, k=k, cohorts=C, d=S)
        src = SeededRandomSource(5)
        errs = [((m.estimate(m.randomize(vals, rng=src), postprocess="none").raw - 1 / S) ** 2).sum() for _ in range(R)]
        assert abs(np.mean(errs) / m.predicted_mse(n) - 1) < tol, (k, C)
        assert abs(np.mean(errs) / dataclasses.replace(m, epsilon=1.3).predicted_mse(n) - 1) > tol  # power
        p, q, cov, noise = m.decoder_model()
        approx = mse_cohort(S, n, k, C, p, q, covariance=cov, closed=True, noise=noise)
        assert abs(approx / m.predicted_mse(n) - 1) < 0.12, (k, C)
    assert m.cell_variance() == pytest.approx(m.decoder_model()[3] - 1 / m.k)


def test_parameters_and_measurement():
    with pytest.raises(LDPParameterError, match="power of 2"):
        CountSketch(epsilon=1.0, k=12)
    from ldp_plugin import make_count_sketch

    meas = make_count_sketch(epsilon=1.5, k=8, cohorts=4, rng=3)
    assert meas.map(1) == 1.5 and meas.map(0) == 0
    c, y = meas("x")
    assert 0 <= c < 4 and 0 <= y < 16
