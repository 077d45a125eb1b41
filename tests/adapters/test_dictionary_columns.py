"""Issue 39: Categorical / Enum values are encoded through their physical codes (a lookup of the
dictionary, never a pass over strings) and give exactly the codes — and, through
``df.ldp.privatize``, the same reports for the same seed — as the String column; the user-id
duplicate check on string ids is hash-based and still exact."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError

CATS = [f"c{i}" for i in range(20)]


def _values(n=5000, seed=0):
    return [CATS[i] for i in np.random.default_rng(seed).integers(0, len(CATS), n).tolist()]


def test_categorical_and_enum_codes_equal_the_string_codes():
    pl.Series("warm", ["zz", "yy", "c7"], dtype=pl.Categorical)  # other labels first: global ids do not start at 0
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    vals = _values()
    ref = m.encode(pl.Series("v", vals))
    assert np.array_equal(ref, [CATS.index(v) for v in vals])
    cat = pl.Series("v", vals, dtype=pl.Categorical)
    enum = pl.Series("v", vals, dtype=pl.Enum(CATS[::-1] + ["unused"]))  # another order, an extra category
    for s in (cat, enum, cat[1234:3000], enum[7:]):
        assert np.array_equal(m.encode(s), ref[: s.len()] if s.len() == len(vals) else m.encode(pl.Series("v", s.cast(pl.String))))


@pytest.mark.parametrize("dtype", ["categorical", "enum"])
def test_an_unknown_label_is_refused_at_its_position_without_echo(dtype):
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    vals = _values(300)
    vals[217] = "secret-zzz"
    s = pl.Series("v", vals, dtype=pl.Categorical if dtype == "categorical" else pl.Enum(CATS + ["secret-zzz"]))
    with pytest.raises(LDPInputError, match="position 217") as e:
        m.encode(s)
    assert "secret-zzz" not in str(e.value)


@pytest.mark.parametrize("make", [lambda: ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS), lambda: ldp.OUE(epsilon=2.0, d=len(CATS), categories=CATS)])
def test_privatize_gives_the_string_columns_reports_for_the_same_seed(make):
    m = make()
    vals = _values(4000, 3)
    base = pl.DataFrame({"v": vals, "uid": [f"user-{i}" for i in range(4000)]})
    ref = base.ldp.privatize("v", m, user_id="uid", seed=11)
    for dt in (pl.Categorical, pl.Enum(CATS)):
        got = base.with_columns(pl.col("v").cast(dt)).ldp.privatize("v", m, user_id="uid", seed=11)
        assert got.equals(ref)


@pytest.mark.parametrize("bad", [None, 640])
def test_dictionary_columns_are_checked_before_any_spend(tmp_path, bad):
    from ldp_plugin.accountant import Accountant, Population

    acc = Accountant.create(tmp_path / "ledger.sqlite", Population(name="users", lifetime_cap="4", cohorts=1))
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    vals = _values(1000, 4)
    if bad is not None:
        vals[bad] = "nope"
    for dt in (pl.Categorical, pl.Enum(CATS + ["nope"])):
        df = pl.DataFrame({"v": pl.Series(vals, dtype=dt)})
        if bad is None:
            assert df.ldp.privatize("v", m, seed=1, accountant=acc, query_id=f"q{dt}").height == 1000
            continue
        with pytest.raises(LDPInputError, match="at row 640; nothing was spent"):
            df.ldp.privatize("v", m, seed=1, accountant=acc, query_id="q")
    assert acc.spent() == (0 if bad is not None else 2)


def test_string_user_ids_duplicate_check_is_exact():
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    ids = [f"u{i}" for i in range(3000)]
    ok = pl.DataFrame({"v": _values(3000, 5), "uid": ids})
    assert ok.ldp.privatize("v", m, user_id="uid", seed=1).height == 3000
    ids[2999] = ids[17]
    with pytest.raises(LDPInputError, match="2 rows with a repeated id"):
        pl.DataFrame({"v": _values(3000, 5), "uid": ids}).ldp.privatize("v", m, user_id="uid", seed=1)


def _every_input(vals, cats):
    """The same labels as a list, a numpy object array, a String / Categorical / Enum Series, and
    a Categorical over its own named category mapping with a UInt8 physical type."""
    named = pl.Categorical(pl.Categories("perf3b-test", physical=pl.UInt8))
    pl.Series("warm", ["zz", "c3", "yy"], dtype=named)  # ids in the named mapping do not follow the categories
    return {
        "list": vals, "object array": np.array(vals, dtype=object), "String": pl.Series("v", vals),
        "Categorical": pl.Series("v", vals, dtype=pl.Categorical), "Enum": pl.Series("v", vals, dtype=pl.Enum(list(cats)[::-1] + sorted(set(vals) - set(cats)))),
        "named UInt8 Categorical": pl.Series("v", vals, dtype=named),
    }


@pytest.mark.parametrize("make", [lambda c: ldp.KRR(epsilon=1.0, d=len(c), categories=c), lambda c: ldp.OUE(epsilon=1.0, d=len(c), categories=c)])
def test_every_input_type_gives_the_code_paths_reports_under_a_seed(make):
    cats = CATS + ["t\x00", "t"]  # a label with a trailing NUL is its own item
    m = make(cats)
    rng = np.random.default_rng(9)
    codes = rng.integers(0, len(cats), 3000)
    vals = [cats[c] for c in codes.tolist()]
    ref = m.randomize_encoded(codes, rng=7)
    for name, x in _every_input(vals, cats).items():
        assert np.array_equal(m.encode(x), codes), name
        assert np.array_equal(np.asarray(m.randomize(x, rng=7)), np.asarray(ref)), name


def test_a_label_absent_from_the_whole_mapping_is_refused_by_position():
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    vals = _values(500, 8)
    vals[321] = "never-seen-label-perf3b"
    for name, x in _every_input(vals, CATS).items():
        with pytest.raises(LDPInputError, match="position 321") as e:
            m.encode(x)
        assert "never-seen" not in str(e.value), name
    only_unknown = pl.Series("v", ["never-seen-label-perf3b-2"], dtype=pl.Categorical)
    with pytest.raises(LDPInputError, match="position 0"):
        ldp.KRR(epsilon=1.0, d=2, categories=["never-a", "never-b"]).encode(only_unknown)
