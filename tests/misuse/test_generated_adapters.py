"""The generated adapter misuse table: every Polars release path (``privatize`` for a value, a set
and a number mechanism, ``privatize_attributes``, ``privatize_key_values``) × hostile frames and
keywords, each through the function and the ``ldp`` namespace (DataFrame and LazyFrame), with an
accountant: the call raises the library's error naming the column or parameter, never a raw Polars
message, never the planted value, and the ledger is unchanged (nothing spent before a check that
fails); and every estimation path × hostile report frames."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin.adapters import estimate, privatize
from ldp_plugin.adapters.polars_discovery import heavy_hitters
from ldp_plugin.adapters.polars_distribution import quantiles, range_count
from ldp_plugin.adapters.polars_key_value import privatize_key_values
from ldp_plugin.adapters.polars_multi import privatize_attributes


class A:  # the adapter functions, by the names of the namespace methods
    privatize, estimate, heavy_hitters, quantiles, range_count = (staticmethod(privatize), staticmethod(estimate), staticmethod(heavy_hitters),
                                                                  staticmethod(quantiles), staticmethod(range_count))
    privatize_key_values, privatize_attributes = staticmethod(privatize_key_values), staticmethod(privatize_attributes)

from .harness import SENTINEL, SENTINEL_NUMBER, assert_clear_api

KRR = ldp.KRR(epsilon=1.0, categories=["a", "b", "c"])
WHEEL = ldp.Wheel(epsilon=1.0, categories=["a", "b", "c", "d"], m=2)
SW = ldp.SquareWave(epsilon=1.0, grid=32)
SMP = ldp.SMP(epsilon=1.0, domains=(3, 4))
PCKV = ldp.PCKV(epsilon=1.0, d=3, ell=2)


def _frames():
    """``(id, call(frame_kind, accountant), names)``: one hostile input each."""
    value = {"user": [1, 2, 3], "x": ["a", "b", "c"]}
    cases = []

    def priv(mech, data, column="x", names=("x",), **kw):
        def call(kind, acc):
            df = pl.DataFrame(data) if isinstance(data, dict) else data
            frame = df.lazy() if kind == "lazy" else df
            if kind == "namespace":
                return df.ldp.privatize(column, mech, accountant=acc, query_id="q", **kw)
            out = A.privatize(frame, column, mech, accountant=acc, query_id="q", **kw)
            return out.collect() if isinstance(out, pl.LazyFrame) else out
        return call, list(names)

    for label, mech, data, column, names, kw in [
        ("value-unknown-canary", KRR, {"x": ["a", SENTINEL, "b"]}, "x", ["position", "categories", "unknown"], {}),
        ("value-null", KRR, {"x": ["a", None, "b"]}, "x", ["null", "x"], {}),
        ("value-empty", KRR, pl.DataFrame({"x": pl.Series([], dtype=pl.Utf8)}), "x", ["empty", "no users", "rows", "x"], {}),
        ("value-missing-column", KRR, value, "nope", ["nope"], {}),
        ("value-int-column-name", KRR, value, 3, ["column"], {}),
        ("value-binary", KRR, pl.DataFrame({"x": pl.Series([b"\xff\xfe", b"a"], dtype=pl.Binary)}), "x", ["x", "dtype", "type"], {}),
        ("value-struct", KRR, pl.DataFrame({"x": [{"a": SENTINEL}, {"a": "b"}]}), "x", ["x", "dtype", "type"], {}),
        ("value-list-for-scalar", KRR, {"x": [["a"], ["b"]]}, "x", ["x", "list", "set", "dtype"], {}),
        ("value-dup-users", KRR, {"user": [1, 1, 2], "x": ["a", "b", "c"]}, "x", ["user", "duplicate"], {"user_id": "user"}),
        ("value-null-users", KRR, {"user": [1, None, 2], "x": ["a", "b", "c"]}, "x", ["user", "null"], {"user_id": "user"}),
        ("value-bad-unknown", KRR, value, "x", ["unknown"], {"unknown": "bogus"}),
        ("value-bool-seed", KRR, value, "x", ["seed", "rng"], {"seed": True}),
        ("value-misspelt", KRR, value, "x", ["sed", "keyword", "argument"], {"sed": 1}),
        ("set-canary", WHEEL, {"x": [["a", SENTINEL], ["b"]]}, "x", ["position", "categories", "unknown", "item"], {}),
        ("set-null-item", WHEEL, {"x": [["a", None], ["b"]]}, "x", ["null"], {}),
        ("set-too-long", WHEEL, {"x": [["a", "b", "c"], ["b"]]}, "x", ["m=2", "more than", "items", "on_long"], {}),
        ("number-canary", SW, {"x": [0.5, SENTINEL_NUMBER]}, "x", ["outside", "range", "lower", "upper", "position"], {}),
        ("number-nan", SW, {"x": [0.5, math.nan]}, "x", ["nan", "finite", "position", "missing value"], {}),
        ("number-null", SW, {"x": [0.5, None]}, "x", ["null", "x"], {}),
        ("number-string", SW, {"x": ["0.5", SENTINEL]}, "x", ["x", "dtype", "number", "type"], {}),
    ]:
        call, _ = priv(mech, data, column, names, **kw)
        cases.append((label, call, names))

    def attrs(data, columns, names, **kw):
        def call(kind, acc):
            df = pl.DataFrame(data)
            if kind == "namespace":
                return df.ldp.privatize_attributes(columns, SMP, accountant=acc, query_id="q", **kw)
            return A.privatize_attributes(df.lazy() if kind == "lazy" else df, columns, SMP, accountant=acc, query_id="q", **kw)
        return call, names

    for label, data, columns, names, kw in [
        ("attrs-canary", {"a": [0, 1], "b": [0, int(SENTINEL_NUMBER)]}, ["a", "b"], ["outside", "b", "position"], {}),
        ("attrs-null", {"a": [0, None], "b": [0, 1]}, ["a", "b"], ["null", "a"], {}),
        ("attrs-string", {"a": [0, 1], "b": ["x", SENTINEL]}, ["a", "b"], ["b", "dtype", "integer", "type"], {}),
        ("attrs-count", {"a": [0, 1], "b": [0, 1]}, ["a"], ["columns", "attributes", "2"], {}),
        ("attrs-missing", {"a": [0, 1], "b": [0, 1]}, ["a", "nope"], ["nope"], {}),
        ("attrs-bare-string", {"a": [0, 1], "b": [0, 1]}, "ab", ["columns"], {}),
        ("attrs-misspelt", {"a": [0, 1], "b": [0, 1]}, ["a", "b"], ["sed", "keyword", "argument"], {"sed": 1}),
    ]:
        call, _ = attrs(data, columns, names, **kw)
        cases.append((label, call, names))

    def kv(df, keys, values, names, **kw):
        def call(kind, acc):
            if kind == "namespace":
                return df.ldp.privatize_key_values(keys, PCKV, values=values, accountant=acc, query_id="q", **kw)
            return A.privatize_key_values(df.lazy() if kind == "lazy" else df, keys, PCKV, values=values, accountant=acc, query_id="q", **kw)
        return call, names

    for label, df, keys, values, names, kw in [
        ("kv-canary-value", pl.DataFrame({"k": [[0, 1], [2]], "v": [[0.5, SENTINEL_NUMBER], [0.1]]}), "k", "v", ["value", "outside", "[-1, 1]"], {}),
        ("kv-canary-key", pl.DataFrame({"k": [[0, int(SENTINEL_NUMBER)], [2]], "v": [[0.5, 0.1], [0.1]]}), "k", "v", ["key", "outside"], {}),
        ("kv-string-values", pl.DataFrame({"k": [[0, 1], [2]], "v": [["0.5", SENTINEL], ["0.1"]]}), "k", "v", ["v", "values", "dtype", "number"], {}),
        ("kv-lengths", pl.DataFrame({"k": [[0, 1], [2]], "v": [[0.5], [0.1]]}), "k", "v", ["length", "same", "values"], {}),
        ("kv-null", pl.DataFrame({"k": [[0, None], [2]], "v": [[0.5, 0.1], [0.1]]}), "k", "v", ["null"], {}),
        ("kv-missing", pl.DataFrame({"k": [[0, 1], [2]], "v": [[0.5, 0.1], [0.1]]}), "k", "nope", ["nope"], {}),
        ("kv-dup-key", pl.DataFrame({"k": [[0, 0], [2]], "v": [[0.5, 0.1], [0.1]]}), "k", "v", ["twice", "duplicate", "key"], {}),
    ]:
        call, _ = kv(df, keys, values, names, **kw)
        cases.append((label, call, names))
    return cases


CASES = _frames()


@pytest.mark.parametrize("kind", ["frame", "lazy", "namespace"])
@pytest.mark.parametrize("label,call,names", CASES, ids=[c[0] for c in CASES])
def test_release_refuses_before_spending(tmp_path, label, call, names, kind):
    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="10"))
    before = (tmp_path / "l.sqlite").read_bytes()
    assert_clear_api(lambda: call(kind, acc), names + ["sed"], seconds=10)
    assert acc.remaining() == 10 and not acc.history(), "spent before a check that failed"
    del before


def _report_frames():
    krr_reports = A.privatize(pl.DataFrame({"x": ["a", "b", "c"] * 20}), "x", KRR, seed=1)
    return [
        ("estimate-wrong-columns", lambda: A.estimate(pl.DataFrame({"nope": [1, 2]}), KRR), ["column", "report"]),
        ("estimate-confidence-nan", lambda: A.estimate(krr_reports, KRR, confidence=math.nan), ["confidence"]),
        ("estimate-confidence-str", lambda: A.estimate(krr_reports, KRR, confidence="0.9"), ["confidence"]),
        ("estimate-misspelt", lambda: A.estimate(krr_reports, KRR, confidance=0.9), ["confidance"]),
        ("estimate-negative-codes", lambda: A.estimate(krr_reports.with_columns(pl.lit(-1).alias(krr_reports.columns[-1])), KRR),
         ["report", "outside", "range", "invalid", "code", "made by"]),
        ("estimate-null-reports", lambda: A.estimate(krr_reports.with_columns(pl.lit(None).alias(krr_reports.columns[-1])), KRR),
         ["null", "report", "made by", "dtype"]),
        ("estimate-not-a-frame", lambda: A.estimate({"a": [1]}, KRR), ["frame", "reports"]),
        ("quantiles-q-out", lambda: A.quantiles(A.privatize(pl.DataFrame({"x": np.linspace(0, 1, 60)}), "x", SW, seed=1), SW, [1.5]),
         ["q", "quantile"]),
        ("quantiles-q-nan", lambda: A.quantiles(A.privatize(pl.DataFrame({"x": np.linspace(0, 1, 60)}), "x", SW, seed=1), SW, [math.nan]),
         ["q", "quantile"]),
        ("range-reversed", lambda: A.range_count(A.privatize(pl.DataFrame({"x": np.linspace(0, 1, 60)}), "x", SW, seed=1), SW, 0.8, 0.2),
         ["lo", "hi", "range"]),
        ("range-nan", lambda: A.range_count(A.privatize(pl.DataFrame({"x": np.linspace(0, 1, 60)}), "x", SW, seed=1), SW, math.nan, 0.2),
         ["lo", "hi", "range", "finite"]),
        ("heavy-hitters-eps", lambda: A.heavy_hitters(pl.DataFrame({"s": ["ab", "cd"] * 10}), "s", epsilon=math.nan), ["epsilon"]),
        ("heavy-hitters-top-k", lambda: A.heavy_hitters(pl.DataFrame({"s": ["ab", "cd"] * 10}), "s", epsilon=1.0, top_k=0), ["top_k"]),
        ("heavy-hitters-column", lambda: A.heavy_hitters(pl.DataFrame({"s": ["ab", "cd"] * 10}), "nope", epsilon=1.0), ["nope"]),
        ("heavy-hitters-ints", lambda: A.heavy_hitters(pl.DataFrame({"s": [1, 2] * 10}), "s", epsilon=1.0), ["s", "string", "dtype"]),
    ]


REPORT_CASES = _report_frames()


@pytest.mark.parametrize("fn,names", [c[1:] for c in REPORT_CASES], ids=[c[0] for c in REPORT_CASES])
def test_estimation_refuses_hostile_reports(fn, names):
    assert_clear_api(fn, names, seconds=20)
