"""The mechanism-paths system layer (:mod:`ldp_plugin.verification.system.mechanism_paths`) and the
bugs it found: bytes labels that could not be tagged, float labels of a hashed oracle accepted at
construction and refused at the first report."""

import json

import numpy as np
import pytest

from ldp_plugin._errors import LDPParameterError
from ldp_plugin.measurements import enable_ldp_features
from ldp_plugin.mechanisms import KRR, OLH, Wheel
from ldp_plugin.registry import from_spec
from ldp_plugin.verification.system import mechanism_paths as mp
from ldp_plugin.verification.system.run import SYSTEM_LAYERS
from ldp_plugin.verification.system.seeded_bugs import SYSTEM_BUGS

#: one name per input kind and path family (a hashed oracle, a cohort oracle, a series, a set, tuples, key-value sets)
SAMPLE = ("krr", "olh", "cms", "l-grr", "loloha", "wheel", "smp", "pckv", "sample-one", "memoized-krr", "staircase")


@pytest.fixture(scope="module")
def features():
    enable_ldp_features()  # the layer's measurement check, as ``ldp verify`` runs it


def test_the_layer_is_a_system_layer():
    assert SYSTEM_LAYERS["mechanism paths"].endswith("mechanism_paths:mechanism_paths_layer")


def test_the_layer_passes_on_the_library_and_checks_every_path(features):
    r = mp.mechanism_paths_layer(seed=0, quick=True, names=SAMPLE)
    assert r["passed"], r["failures"]
    assert set(r["checks"]) >= {"value forms", "set forms", "tuple forms", "key-value forms", "spec round trip", "server paths", "support paths",
                                "realized epsilon", "analytic error", "memoized series"}
    assert all(v > 0 for v in r["checks"].values())


def test_the_global_checks_pass(features):
    for check in (lambda: mp._choices(mp.load_registry(kinds=mp.KINDS)), lambda: mp._attack_paths(0), lambda: mp._measurement_paths(0), mp._face,
                  lambda: mp._attribute_level(mp.RSFD(epsilon=1.0, domains=(2, 3))), lambda: mp._range_variance(mp.HaarHRR(epsilon=1.0, buckets=4), 0, True)):
        cases, failures = check()
        assert cases > 0 and failures == []


@pytest.mark.parametrize("bug", [b for b, layer, _ in SYSTEM_BUGS if layer == "mechanism paths"])
def test_each_seeded_bug_is_caught_by_its_check(bug, features):
    kw = next(k for b, _, k in SYSTEM_BUGS if b == bug)
    r = mp.mechanism_paths_layer(seed=0, quick=True, **kw)
    want = {"categorical-physical-ids": "value forms", "histogram-ignores-counts": "server paths", "halved-analytic-mse": "analytic error"}[bug]
    assert not r["passed"] and all(f"krr: {want}:" in f for f in r["failures"]), r["failures"]


def test_the_face_check_catches_a_wrapped_name(monkeypatch, features):
    import ldp_plugin

    monkeypatch.setattr(ldp_plugin, "KRR", type("KRR", (KRR,), {}), raising=False)
    assert mp._face()[1]


def test_bytes_labels_randomize_and_round_trip_their_spec():
    m = KRR(epsilon=1.0, categories=[b"a", b"b\x00", b"c"])
    reports = m.randomize([b"a", b"c", b"b\x00"], rng=3)  # was: "parameter of type bytes cannot be stored as data"
    assert reports.shape == (3,)
    spec = m.spec()
    json.dumps(spec)
    assert from_spec(json.dumps(spec)) == m
    assert np.array_equal(from_spec(spec).randomize([b"a", b"c", b"b\x00"], rng=3), reports)


@pytest.mark.parametrize("make", [lambda c: OLH(epsilon=1.0, categories=c), lambda c: Wheel(epsilon=1.0, categories=c)])
def test_hashed_oracles_refuse_float_labels_when_built(make):
    with pytest.raises(LDPParameterError, match="categories"):
        make([0.5, 1.5, 2.5])  # was: built, then every randomize raised
    assert make(["x", "y", "z"]).randomize(["y"], rng=1).shape[0] == 1


def test_a_series_report_file_aggregates_through_its_grouped_scan(tmp_path):
    """l-grr declares histogram_columns, so the executors aggregate its report files by a grouped
    scan; its accumulator had no add_histogram (an AttributeError out of ``ldp collect``)."""
    import polars as pl

    from ldp_plugin import executors, persist
    from ldp_plugin.mechanisms.longitudinal import LGRR

    m = LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3)
    keys = [bytes([i]) * 32 for i in range(30)]
    r = m.randomize(np.arange(30) % 3, user_keys=keys, rng=1)
    path = persist.write_reports(pl.DataFrame({k: np.asarray(v) for k, v in m.to_columns(r).items()}), tmp_path / "r.parquet", m)
    spec, fp = persist.read_report_spec(str(path))
    state = executors.aggregate_file(str(path), spec=spec, fingerprint=fp)
    direct = m.accumulator().add(r)
    assert state.n == direct.n == 30
    assert np.array_equal(state.counts, direct.counts)


def test_several_attributes_from_a_polars_list_column():
    """The encoder's docstring takes a Polars Series of lists (one tuple per user); numpy reads it as
    an object array of arrays, which was refused."""
    import polars as pl

    from ldp_plugin.mechanisms.multi_attribute import SPL

    m = SPL(epsilon=1.0, domains=(2, 3))
    rows = [[0, 2], [1, 0], [1, 1]]
    want = m.randomize(np.array(rows), rng=4)
    got = m.randomize(pl.Series(rows, dtype=pl.List(pl.Int64)), rng=4)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(m.to_columns(got).values(), m.to_columns(want).values()))


def test_finite_channel_analytic_mse_is_the_fixed_population_variance():
    """``analytic_mse(sampling="fixed")`` of a finite channel used the multinomial covariance
    (``diag(μ) − μμᵀ``: the users' own spread included), 32% above the measured error for the
    canonical staircase; it is the sum over users of their own rows' covariances."""
    from ldp_plugin.mechanisms.extremal import StaircaseMechanism

    m = StaircaseMechanism(epsilon=1.0, utility="kl", p0=[0.6, 0.3, 0.1], p1=[0.1, 0.3, 0.6])
    Q = m.matrix()
    A = np.linalg.pinv(Q.T)
    users = [0, 0, 1, 2, 2, 2]  # a fixed population
    n = len(users)
    cov = sum(np.diag(Q[x]) - np.outer(Q[x], Q[x]) for x in users) / n**2
    theta = np.bincount(users, minlength=3) / n
    assert m.analytic_mse(n, theta=theta, sampling="fixed") == pytest.approx(float(np.trace(A @ cov @ A.T)), rel=1e-12)
    iid = m.analytic_mse(n, theta=theta, sampling="iid") - m.analytic_mse(n, theta=theta, sampling="fixed")
    assert iid == pytest.approx((1 - float(np.sum(theta**2))) / n, rel=1e-12)


def test_dbitflip_unit_law_follows_theta():
    """A user's sampled buckets are sorted, so the memoized pattern of a value depends on the value:
    ``unit_probabilities(theta)`` ignored ``theta`` (exact only at a uniform theta). Checked against
    the enumeration of every sampled subset."""
    from itertools import combinations

    from ldp_plugin.mechanisms.longitudinal import DBitFlipPM

    d, b = 5, 2
    m = DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=d, d_bits=b)
    theta = np.array([0.4, 0.3, 0.1, 0.15, 0.05])
    subsets = list(combinations(range(d), b))
    law = np.zeros(b + 1)
    for S in subsets:
        for v in range(d):
            law[S.index(v) if v in S else b] += theta[v] / len(subsets)
    assert np.allclose(m.unit_probabilities(theta), law, atol=1e-15)
    assert np.allclose(m.unit_probabilities(np.full(d, 1 / d)), [1 / d] * b + [1 - b / d])


def test_an_empty_list_is_an_empty_batch():
    """``[]`` reads as a float64 array in numpy: k-RR and the series clients refused it as 'not
    integer codes' (the empty numpy array was accepted)."""
    from ldp_plugin.mechanisms.longitudinal import LGRR

    assert KRR(epsilon=1.0, d=3).randomize([], rng=1).shape == (0,)
    assert LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3).randomize([], user_keys=[], rng=1).shape[0] == 0


def test_the_memoized_prf_extension_is_held_to_its_definition(monkeypatch):
    # the domain makes the extension likely (~1/729 a user): reached, and equal to the definition
    assert mp._prf_definition(0, 2_000) == []
    assert mp.mechanism_paths_layer(seed=0, quick=True, names=("memoized-krr",))["passed"]  # as the layer calls it
    monkeypatch.setattr(mp, "_PERSON", b"another-person")  # a reference of another PRF: every report differs
    assert mp._prf_definition(0, 2_000)[0].startswith("memoized permanent reports differ")
