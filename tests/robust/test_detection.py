"""Detection of fake reports (exact support-count tests), the correction for the honest reports
the tests remove, node consistency and duplicate nonces."""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest

from ldp_plugin import KRR, OLH, OUE
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.estimation import debias
from ldp_plugin.robust import fake_count
from ldp_plugin.robust.detection import IMPOSSIBLE_REASON, count_thresholds, detect, duplicate_nonces, node_consistency

Z = NormalDist().inv_cdf(1 - 1e-6)


def _tails(K, p, q):
    """Brute force over all 2^K supports (small K): the two exact laws of the count."""
    out = [Fraction(0)] * (K + 1)
    inside = [Fraction(0)] * (K + 1)
    for mask in range(1 << K):
        k = bin(mask).count("1")
        out[k] += q**k * (1 - q) ** (K - k)
        own = mask & 1
        rest = k - own
        inside[k] += (p if own else 1 - p) * q**rest * (1 - q) ** (K - 1 - rest)
    return out, inside


@pytest.mark.parametrize("K", [3, 6])
def test_thresholds_are_exact_at_their_edge(K):
    m = OUE(epsilon=1.0, d=8)
    p, q = m.p_star_exact, m.q_star_exact
    out, inside = _tails(K, p, q)
    for alpha in (0.3, 0.05, 0.01):
        lo, hi = count_thresholds(K, p, q, alpha)
        assert lo == 0
        up = lambda t: max(sum(out[t:]), sum(inside[t:]))  # noqa: E731
        assert up(hi) <= Fraction(alpha)
        assert hi == 0 or up(hi - 1) > Fraction(alpha)      # the edge: one lower would exceed alpha
        lo2, hi2 = count_thresholds(K, p, q, alpha, two_sided=True)
        low = lambda t: max(sum(out[:t]), sum(inside[:t]))  # noqa: E731
        assert low(lo2) <= Fraction(alpha) / 2 and (lo2 > K or low(lo2 + 1) > Fraction(alpha) / 2)


def test_support_size_false_alarm_rate_and_power():
    """Honest OUE reports are flagged at most at the stated rate; all-ones and target-only reports always."""
    d, n, a = 256, 20_000, 0.01
    m = OUE(epsilon=1.0, d=d)
    x = np.random.default_rng(3).integers(0, d, n)
    det = detect(m, m.randomize(x, rng=4), alpha_size=a)
    k = det.flagged["support_size"]
    assert k <= a * n + Z * math.sqrt(a * n)
    assert k >= 0.2 * a * n  # the test is not vacuous: the exact tails sit close to alpha
    naive = np.zeros((50, d // 8), dtype=np.uint8)
    naive[:, 0] = 1  # only one target bit
    full = np.full((50, d // 8), 255, dtype=np.uint8)
    det = detect(m, np.concatenate([m.randomize(x[:2000], rng=5), naive, full]), alpha_size=a)
    assert not det.mask[-100:].any()


def test_correction_is_unbiased_when_honest_reports_are_removed():
    """A suspect set and a large alpha remove many honest reports, more of those whose item is in
    the set; the corrected estimate stays unbiased (mean over runs within its error), while the
    plain estimate of the accepted reports is visibly biased (power)."""
    d, n, R = 16, 3000, 120
    m = OUE(epsilon=1.0, d=d)
    theta = np.array([0.3, 0.2, 0.1] + [0.4 / 13] * 13)
    x = np.repeat(np.arange(d), np.round(theta * n).astype(int))
    theta = np.bincount(x, minlength=d) / x.size
    fixed, naive = [], []
    for r in range(R):
        det = detect(m, m.randomize(x, rng=100 + r), suspects=[0, 1, 2], alpha=0.3, alpha_size=0.05)
        fixed.append(det.estimate(postprocess="none").raw)
        naive.append(debias(det.counts_accepted, det.n_accepted, m.p_star, m.q_star))
    fixed, naive = np.array(fixed), np.array(naive)
    se = fixed.std(axis=0, ddof=1) / math.sqrt(R)
    assert np.all(np.abs(fixed.mean(axis=0) - theta) <= 5.0 * se)
    assert np.any(np.abs(naive.mean(axis=0) - theta) > 5.0 * se)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["oue", "olh"])
def test_multi_target_attack_is_held_to_two_points(family):
    """Cao et al.'s multi-target MGA (r = 10, β = 5%, ε = 1, d = 1024): without detection each
    target gains ≈ 12–16 points; with detection each moves by at most 2 points from the estimate of
    the honest reports alone."""
    d, n = 1024, 30_000
    m = {"oue": OUE, "olh": OLH}[family](epsilon=1.0, d=d)
    x = np.minimum(np.random.default_rng(1).zipf(1.3, n) - 1, d - 1)
    targets = np.random.default_rng(9).choice(np.arange(100, d), 10, replace=False)
    honest = m.randomize(x, rng=2)
    fakes = m.max_gain_reports(targets, fake_count(n, 0.05), rng=3)
    plain = m.estimate(honest, postprocess="none").raw
    poisoned = m.estimate(np.concatenate([honest, fakes]), postprocess="none").raw
    assert np.all(poisoned[targets] - plain[targets] > 0.10)  # the attack works without detection
    det = detect(m, np.concatenate([honest, fakes]))
    assert set(targets.tolist()) <= set(det.suspects)
    est = det.estimate(postprocess="none").raw
    assert np.all(np.abs(est[targets] - plain[targets]) <= 0.02)


def test_krr_detection_is_impossible_and_says_so():
    m = KRR(epsilon=1.0, d=32)
    det = detect(m, m.randomize(np.arange(32).repeat(10), rng=0))
    assert det.possible is False and det.reason == IMPOSSIBLE_REASON and det.to_dict()["possible"] is False
    assert "k-RR" in det.reason and "poison_shift" in det.reason and det.to_dict()["blind_spot"] == IMPOSSIBLE_REASON
    with pytest.raises(LDPParameterError, match="impossible"):
        det.estimate()


def test_node_consistency_flags_the_hostile_node_only():
    d, per = 64, 4000
    m = OUE(epsilon=2.0, d=d)
    rng = np.random.default_rng(5)
    ests = {}
    for k in range(10):
        x = rng.integers(0, d, per)
        reps = m.randomize(x, rng=10 + k)
        if k == 3:  # a hostile node: 10% of its reports promote item 7
            reps = np.concatenate([reps[: int(0.9 * per)], m.max_gain_reports([7], per - int(0.9 * per), rng=1)])
        e = m.estimate(reps, postprocess="none", target="population")
        ests[f"node{k}"] = (e.raw, e.std_error, e.n)
    t = node_consistency(ests, alpha=1e-3)
    assert t.flagged == ("node3",)


def test_duplicate_nonces():
    envs = [b"a" * 16 + b"x", b"b" * 16 + b"y", b"a" * 16 + b"z"]
    assert duplicate_nonces(envs).tolist() == [False, False, True]


def test_single_mimicking_target_is_not_seen_and_the_certified_shift_covers_it():
    """One target, fakes shaped like honest reports of it: the tests flag them no more often than
    honest reports, and the certified poison_shift of the released estimate bounds their gain."""
    from ldp_plugin.robust import poison_bound

    d, n = 256, 20_000
    m = OUE(epsilon=1.0, d=d)
    x = np.random.default_rng(7).integers(0, d, n)
    honest = m.randomize(x, rng=8)
    fakes = m.max_gain_reports([17], fake_count(n, 0.05), rng=9)
    det = detect(m, np.concatenate([honest, fakes]))
    assert det.suspects == () and det.blind_spot.startswith("not seen")
    assert (~det.mask[n:]).mean() <= 0.01  # fakes flagged at most like honest reports
    plain = m.estimate(honest, postprocess="none").raw
    released = m.estimate(np.concatenate([honest, fakes]), postprocess="none")
    b = poison_bound(m, released, poison_fraction=fakes.shape[0] / (n + fakes.shape[0]))
    gain = released.raw[17] - plain[17]
    assert gain > 0.1 and gain <= b.poison_shift[17] * (1 + 1e-9)
