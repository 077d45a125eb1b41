"""The Polars ``ldp`` namespace: DataFrame and LazyFrame agree for fixed seeds (across chunk
boundaries), validation refuses bad frames without echoing values, generated frames round-trip."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldp_plugin as ldp
from ldp_plugin import LDPInputError, LDPParameterError
from ldp_plugin.adapters import polars_namespace as ns

APPS = ["maps", "mail", "chat", "news", "génial", "日本"]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(ns, "ROWS_PER_CHUNK", 7)


def _frame(n=50, seed=0):
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "uid": rng.permutation(n).astype(np.int64) * 1_000_003 - 2**62,
            "app": rng.choice(APPS, size=n).tolist(),
            "code": rng.integers(0, 6, size=n),
            "apps": [list(rng.choice(APPS, size=int(rng.integers(0, 4)), replace=False)) for _ in range(n)],
        }
    )


MECHS = [
    ("krr", "app", lambda: ldp.KRR(epsilon=1.0, categories=APPS), {}),
    ("oue", "code", lambda: ldp.OUE(epsilon=1.0, d=6), {}),
    ("ksubset", "code", lambda: ldp.KSubset(epsilon=1.0, d=6, k=2), {}),
    ("olh", "app", lambda: ldp.OLH(epsilon=1.0, categories=APPS), {}),
    ("hadamard", "code", lambda: ldp.HadamardResponse(epsilon=1.0, d=6), {}),
    ("warner", "flag", lambda: ldp.WarnerRR(epsilon=1.0), {}),
    ("orr-open", "app", lambda: ldp.ORR(epsilon=1.0, k=4, cohorts=5), {"cohorts": 3}),
    ("orappor-closed", "code", lambda: ldp.ORAPPOR(epsilon=1.0, k=8, cohorts=4, d=6), {}),
    ("sets-orr", "apps", lambda: ldp.SampleOne(mechanism=ldp.ORR(epsilon=1.0, k=4, cohorts=5), m=3), {"cohorts": 9}),
    ("sets-krr", "apps", lambda: ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, categories=APPS), m=3), {}),
]


@pytest.mark.parametrize("name,col,make,kw", MECHS, ids=[m[0] for m in MECHS])
def test_lazy_equals_eager_across_chunks(small_chunks, name, col, make, kw):
    df = _frame().with_columns(flag=pl.col("code") > 2)
    mech = make()
    a = df.ldp.privatize(col, mech, user_id="uid", seed=5, keep_user_id=True, **kw)
    b = df.lazy().ldp.privatize(col, mech, user_id="uid", seed=5, keep_user_id=True, **kw)
    assert a.equals(b) and a.height == df.height
    assert a["uid"].equals(df["uid"])  # order kept, ids only when asked
    c = df.ldp.privatize(col, mech, user_id="uid", seed=6, **kw)
    assert "uid" not in c.columns and not c.equals(a.drop("uid"))
    cands = APPS if mech.closed is False else None
    e1 = a.ldp.estimate(mech, candidates=cands)
    e2 = a.lazy().ldp.estimate(mech, candidates=cands)
    assert e1.equals(e2)
    assert e1.columns == ["item", "estimate", "std_error", "ci_lower", "ci_upper"]


def test_namespace_estimate_equals_direct_mechanism():
    df = _frame(2000)
    mech = ldp.KRR(epsilon=2.0, categories=APPS)
    reports = df.ldp.privatize("app", mech, seed=1)
    direct = mech.estimate(reports["report"].to_numpy())
    via = reports.ldp.estimate(mech)
    assert np.allclose(via["estimate"].to_numpy(), direct.estimate)
    assert via["item"].to_list() == APPS


def test_validation_errors_name_the_problem_not_the_value():
    df = _frame()
    mech = ldp.KRR(epsilon=1.0, categories=APPS)
    secret = "zz-secret-app"
    cases = [
        (lambda: df.ldp.privatize("nope", mech), "not in the frame"),
        (lambda: df.with_columns(app=pl.when(pl.col("code") == 1).then(None).otherwise(pl.col("app"))).ldp.privatize("app", mech), "null"),
        (lambda: df.with_columns(uid=pl.lit(1)).ldp.privatize("app", mech, user_id="uid"), "repeated id"),
        (lambda: df.with_columns(uid=pl.when(pl.col("code") == 1).then(None).otherwise(pl.col("uid"))).ldp.privatize("app", mech, user_id="uid"), "null"),
        (lambda: df.with_columns(app=pl.lit(secret)).ldp.privatize("app", mech), "not one of the declared categories"),
        (lambda: df.head(0).ldp.privatize("app", mech), "no rows"),
        (lambda: df.with_columns(x=pl.lit(1.5)).ldp.privatize("x", mech), "integers, strings"),
        (lambda: df.ldp.privatize("apps", mech), "SampleOne"),
        (lambda: df.ldp.privatize("apps", ldp.SampleOne(mechanism=mech, m=1)), "more than m=1"),
        (lambda: df.with_columns(apps=pl.lit([secret, None])).ldp.privatize("apps", ldp.SampleOne(mechanism=mech, m=3)), "null"),
    ]
    for fn, msg in cases:
        with pytest.raises(LDPInputError, match=msg) as e:
            fn()
        assert secret not in str(e.value)
    with pytest.raises(LDPParameterError, match="cohorts"):
        df.ldp.privatize("app", mech, cohorts=3, user_id="uid")
    with pytest.raises(LDPParameterError, match="user_id"):
        df.ldp.privatize("app", ldp.ORR(epsilon=1.0, k=4, cohorts=2), cohorts=3)
    with pytest.raises(LDPInputError, match="empty"):
        df.ldp.privatize("app", mech, seed=0).head(0).ldp.estimate(mech)
    with pytest.raises(LDPInputError, match="lacks"):
        df.ldp.estimate(mech)


def test_unknown_items_to_an_explicit_other_bucket():
    cats = ["maps", "mail", "other"]
    mech = ldp.KRR(epsilon=3.0, categories=cats)
    df = pl.DataFrame({"app": ["maps", "mail", "zzz", "yyy"] * 500})
    with pytest.raises(LDPInputError):
        df.ldp.privatize("app", mech)
    est = df.ldp.privatize("app", mech, unknown="other", seed=2).ldp.estimate(mech, postprocess="none")
    raw = dict(zip(est["item"].to_list(), est["estimate"].to_list()))
    se = dict(zip(est["item"].to_list(), est["std_error"].to_list()))
    assert abs(raw["other"] - 0.5) < 5 * se["other"]
    with pytest.raises(LDPParameterError, match="other"):
        df.ldp.privatize("app", ldp.KRR(epsilon=1.0, categories=["maps", "mail"]), unknown="other")
    sets = pl.DataFrame({"apps": [["maps", "zzz", "yyy"], ["mail"]] * 10})
    so = ldp.SampleOne(mechanism=mech, m=2)
    assert sets.ldp.privatize("apps", so, unknown="other", seed=1).height == 20  # two unknowns -> one "other"


def test_sink_writes_parquet_parts(tmp_path, small_chunks):
    df = _frame(30)
    mech = ldp.ORR(epsilon=1.0, k=4, cohorts=3, categories=APPS)
    scan = df.lazy().ldp.privatize("app", mech, sink=tmp_path / "r", seed=3)
    assert isinstance(scan, pl.LazyFrame) and len(list((tmp_path / "r").glob("part-*.parquet"))) == 5
    assert scan.collect().equals(df.ldp.privatize("app", mech, seed=3))
    with pytest.raises(LDPParameterError, match="already holds"):
        df.ldp.privatize("app", mech, sink=tmp_path / "r")


item = st.one_of(st.text(min_size=0, max_size=6), st.sampled_from(APPS))


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.lists(item, max_size=4, unique=True)),
        min_size=1,
        max_size=30,
        unique_by=lambda r: r[0],
    ),
    seed=st.integers(0, 2**32),
)
def test_generated_set_frames_round_trip(rows, seed):
    df = pl.DataFrame({"uid": [r[0] for r in rows], "items": [r[1] for r in rows]}, schema={"uid": pl.Int64, "items": pl.List(pl.String)})
    # 64 cohorts × k = 8 identify up to 121 candidates (a smaller design is refused as rank-deficient)
    mech = ldp.SampleOne(mechanism=ldp.ORR(epsilon=2.0, k=8, cohorts=64), m=4)
    rep = df.ldp.privatize("items", mech, user_id="uid", cohorts=seed, seed=seed, keep_user_id=True)
    assert rep.height == df.height and rep["uid"].equals(df["uid"])
    assert rep["cohort"].max() < 64 and rep["report"].max() < 8
    assert rep.equals(df.lazy().ldp.privatize("items", mech, user_id="uid", cohorts=seed, seed=seed, keep_user_id=True))
    cands = sorted({x for r in rows for x in r[1]}) or ["none"]
    est = rep.ldp.estimate(mech, candidates=cands)
    assert est["item"].to_list() == [*cands, "<other>"]
    e = est["estimate"].to_numpy()
    assert np.all((e >= 0) & (e <= 1)) and np.all(np.isfinite(est["std_error"].to_numpy()))
