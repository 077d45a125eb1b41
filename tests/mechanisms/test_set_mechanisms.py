"""Set-valued mechanisms (Wang et al., PVLDB 2020): the wheel on an exact grid, RAPPOR for sets and PrivSet —
exact channels over every verification seed, goodness of fit with power, unbiasedness and the
analytic variance (with power), the arc-union merge against a brute-force grid count, bad inputs."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import ldp_plugin as ldp
from ldp_plugin import LDPInputError, LDPParameterError, PrivSet, RapporSet, Wheel
from ldp_plugin.exact import ratio_within_exp
from ldp_plugin.mechanisms.wheel import arc_union, wheel_optimal_p
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.verification import gof_layer

ALPHA = 1e-6

TINY = [
    ("wheel-m1", lambda e: Wheel(epsilon=e, d=3, grid_bits=5)),
    ("wheel-m2", lambda e: Wheel(epsilon=e, d=3, m=2, grid_bits=6)),
    ("rappor-set", lambda e: RapporSet(epsilon=e, d=4, m=2)),
    ("privset", lambda e: PrivSet(epsilon=e, d=4, m=2)),
    ("privset-k2", lambda e: PrivSet(epsilon=e, d=4, m=2, k=2)),
]


@pytest.fixture(params=TINY, ids=[t[0] for t in TINY])
def tiny(request):
    return request.param[1]


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_exact_channel(tiny, eps):
    m = tiny(eps)
    ch = m.channel()
    assert ch.rows_sum_to_one() and ch.equal_supports()
    r = ch.max_ratio()
    assert r <= m.realized_ratio and ratio_within_exp(r, eps) and ratio_within_exp(m.realized_ratio, eps)
    assert len(ch.matrix) == len(m.verification_inputs())


@pytest.mark.parametrize("eps", [0.7, 2.0])
def test_sampler_follows_channel_with_power(tiny, eps):
    m = tiny(eps)
    g = gof_layer(m, n_per_input=40_000, seed=5)
    assert g["passed"]
    if not (isinstance(m, RapporSet) and eps < 1):  # at ε/(2m) per bit, 1.3ε is too close for 40k samples
        assert g["power_check_rejects_1.3eps"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "make",
    [lambda: Wheel(epsilon=1.5, d=8, m=2), lambda: RapporSet(epsilon=1.5, d=8, m=2), lambda: PrivSet(epsilon=1.5, d=8, m=2)],
    ids=["wheel", "rappor-set", "privset"],
)
def test_unbiased_and_variance_match_analytic(make):
    m = make()
    base = [[0, 1], [0], [2, 5], [], [0, 7], [3, 4]]
    sets = ldp.as_set_batch(base * 300)
    f = np.array([sum(i in b for b in base) / len(base) for i in range(8)])
    n, R = len(base) * 300, 1000
    src = SeededRandomSource(21)
    est = np.array([m.estimate(m.randomize(sets, rng=src), postprocess="none").raw for _ in range(R)])
    var = m.variance(f, n)
    zcrit = stats.norm.isf(ALPHA / 16)
    assert np.all(np.abs(est.mean(axis=0) - f) / np.sqrt(var / R) < zcrit)
    s2 = est.var(axis=0, ddof=1)
    lo = stats.chi2.ppf(ALPHA / 16, R - 1) / (R - 1)
    hi = stats.chi2.isf(ALPHA / 16, R - 1) / (R - 1)
    assert np.all((s2 / var > lo) & (s2 / var < hi))
    assert not np.all((s2 / (1.4 * var) > lo) & (s2 / (1.4 * var) < hi))  # power
    assert abs(m.mse(n, f) - var.sum()) < 1e-12


@settings(max_examples=200, deadline=None)
@given(
    N=st.sampled_from([16, 64, 1024]),
    L=st.integers(1, 12),
    rows=st.lists(st.lists(st.integers(0, 1023), max_size=5), min_size=1, max_size=8),
)
def test_arc_union_equals_brute_force(N, L, rows):
    width = max(1, max(len(r) for r in rows))
    pos = np.full((len(rows), width), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        pos[i, : len(r)] = [v % N for v in r]
    _, _, _, u = arc_union(pos, L, N)
    for i, r in enumerate(rows):
        cells = {(v % N + j) % N for v in r for j in range(L)}
        assert u[i] == len(cells)


def test_wheel_coverage_choices_and_grid():
    e = np.exp(1.0)
    assert Wheel(epsilon=1.0, d=10, p="paper").p == pytest.approx(1 / (e + 1))
    assert Wheel(epsilon=1.0, d=10, m=3, p="paper").p == pytest.approx(1 / (5 + 3 * e))
    opt = wheel_optimal_p(1.0, 3)
    w = Wheel(epsilon=1.0, d=10, m=3)
    assert w.p == pytest.approx(opt) and w.L >= 256 and abs(w.L / w.N - opt) / opt < 0.005
    # the optimum is a minimum of the rare-item variance q(1−q)/(P_t − q)²
    def rare(p):
        return Wheel(epsilon=1.0, d=10, m=3, p=p).variance(np.zeros(10), 1000)[0]
    assert rare(opt) <= min(rare(opt * 0.8), rare(opt * 1.2))


def test_polars_lists_and_bad_inputs():
    w = Wheel(epsilon=1.0, d=5, m=2, categories=list("abcde"))
    r = w.randomize(pl.Series([["a", "b"], ["e"], []]), rng=1)
    assert r.shape == (3, 2) and int(r[:, 1].max()) < w.N
    with pytest.raises(LDPInputError, match="more than m=2"):
        w.randomize([["a", "b", "c"]])
    assert Wheel(epsilon=1.0, d=5, m=2, categories=list("abcde"), on_long="sample").randomize([["a", "b", "c"]], rng=0).shape == (1, 2)
    with pytest.raises(LDPInputError, match="repeat"):
        w.randomize([["a", "a"]])
    with pytest.raises(LDPInputError, match="not one of the declared categories") as e:
        w.randomize([["a", "secret-zzz"]])
    assert "secret-zzz" not in str(e.value)
    for bad in (dict(m=0), dict(p=1.5), dict(m=2, p=0.6), dict(p="best"), dict(grid_bits=2), dict(on_long="drop"), dict(epsilon=0.0)):
        with pytest.raises(LDPParameterError):
            Wheel(**{**dict(epsilon=1.0, d=5), **bad})
    with pytest.raises(LDPParameterError, match="coarse"):
        Wheel(epsilon=1.0, d=50, m=8, grid_bits=3)
    with pytest.raises(LDPInputError):
        w.estimate(np.zeros((2, 3), dtype=np.uint64))
    with pytest.raises(LDPParameterError, match="m must be below d"):
        RapporSet(epsilon=1.0, d=3, m=3)
    acc = w.accumulator().add(r)
    with pytest.raises(LDPParameterError, match="same mechanism"):
        acc.merge(Wheel(epsilon=1.1, d=5, m=2, categories=list("abcde")).accumulator())


def test_opendp_measurements_for_sets():
    m = ldp.make_wheel(epsilon=1.0, m=3, d=20, rng=1)
    seed, cell = m([1, 2, 5])
    assert m.map(1) == 1.0 and 0 <= cell
    p = ldp.make_privset(epsilon=1.0, m=2, d=20, rng=1)
    assert len(p([1, 2])) == PrivSet(epsilon=1.0, m=2, d=20).k
    assert ldp.make_rappor_set(epsilon=1.0, m=2, d=20, rng=1)([3]).shape == (3,)


@pytest.mark.parametrize("make", [lambda: Wheel(epsilon=2.0, m=2, categories=list("abcd")),
                                  lambda: RapporSet(epsilon=2.0, m=2, categories=list("abcd")),
                                  lambda: PrivSet(epsilon=2.0, m=2, categories=list("abcd"))], ids=["wheel", "rappor-set", "privset"])
def test_polars_namespace_with_native_set_mechanisms(make):
    mech = make()
    df = pl.DataFrame({"uid": range(6000), "apps": [["a", "b"], ["c"], []] * 2000})
    r = df.ldp.privatize("apps", mech, user_id="uid", seed=1)
    assert r.equals(df.lazy().ldp.privatize("apps", mech, user_id="uid", seed=1))
    e = r.ldp.estimate(mech, postprocess="none")
    truth = np.array([1 / 3, 1 / 3, 1 / 3, 0.0])
    assert np.all(np.abs(e["estimate"].to_numpy() - truth) < 5 * e["std_error"].to_numpy())
    proj = r.ldp.estimate(mech)["estimate"].to_numpy()
    assert abs(proj.sum() - 1.0) < 0.15  # scaled to the estimated average set size (1), not to m = 2


def test_limit_sets_samples_down_uniformly_and_keeps_short_sets():
    from ldp_plugin.sets import limit_sets

    n = 30_000
    codes = np.tile(np.array([0, 1, 2, 7]), n)
    codes = np.r_[codes, [5]]  # plus one short set, untouched
    offsets = np.r_[np.arange(0, 4 * n + 1, 4), 4 * n + 1]
    kept, off, lengths = limit_sets(codes, offsets, 2, "sample", SeededRandomSource(3))
    assert lengths.tolist()[-1] == 1 and kept[-1] == 5 and (lengths[:-1] == 2).all()
    pairs = kept[:-1].reshape(n, 2)
    assert (pairs[:, 0] < pairs[:, 1]).all()  # the set's order is kept
    idx = {(a, b): i for i, (a, b) in enumerate([(0, 1), (0, 2), (0, 7), (1, 2), (1, 7), (2, 7)])}
    counts = np.bincount([idx[(a, b)] for a, b in pairs.tolist()], minlength=6)
    assert stats.chisquare(counts).pvalue > ALPHA  # each 2-subset equally likely
    with pytest.raises(LDPInputError, match="more than m=2"):
        limit_sets(codes, offsets, 2, "error", SeededRandomSource(3))
