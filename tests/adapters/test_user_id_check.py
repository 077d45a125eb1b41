"""Issue 39: the one-report-per-user check (``adapters/polars_user_ids.py``) is exact on every
path — integer ids by a byte mask or a sort, other ids by a 64-bit hash whose shared values are
re-checked on the ids themselves — including when every hash collides."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError
from ldp_plugin.adapters import polars_user_ids as U
from ldp_plugin.adapters import polars_namespace as NS

CATS = [f"c{i}" for i in range(8)]


def _truth(ids: list) -> int:
    """Rows whose id another row repeats, by a Python dict (the reference)."""
    seen: dict = {}
    for v in ids:
        seen[v] = seen.get(v, 0) + 1
    return sum(c for c in seen.values() if c > 1)


def _int_cases():
    rng = np.random.default_rng(5)
    perm = rng.permutation(5000)
    sparse = rng.choice(10**15, 3000, replace=False) - 10**14  # span ≫ 8n: the sort path
    yield "dense permutation", pl.Series(perm, dtype=pl.Int64)
    yield "dense, one repeat", pl.Series(np.r_[perm, perm[1234]], dtype=pl.Int64)
    yield "offset and negative", pl.Series(perm - 2500, dtype=pl.Int64)
    yield "sparse (sort path)", pl.Series(sparse, dtype=pl.Int64)
    yield "sparse, repeats", pl.Series(np.r_[sparse, sparse[:3], sparse[7]], dtype=pl.Int64)
    yield "pigeonhole", pl.Series([3, 4, 3, 4, 5], dtype=pl.Int64)
    yield "int8 full range", pl.Series(np.arange(-128, 128), dtype=pl.Int8)
    yield "int8, repeat at the ends", pl.Series(np.r_[np.arange(-128, 128), -128, 127], dtype=pl.Int8)
    yield "uint64 near the top", pl.Series([2**64 - 1, 0, 2**63, 2**63 - 1], dtype=pl.UInt64)
    yield "uint64 repeat near the top", pl.Series([2**64 - 1, 5, 2**64 - 1, 2**63], dtype=pl.UInt64)
    yield "uint32 dense, repeat", pl.Series(np.r_[np.arange(1000), 999], dtype=pl.UInt32)
    yield "one row", pl.Series([7], dtype=pl.Int64)


@pytest.mark.parametrize("name,ids", list(_int_cases()), ids=[c[0] for c in _int_cases()])
@pytest.mark.parametrize("lazy", [False, True])
def test_integer_ids_exact_on_every_path(name, ids, lazy):
    frame = pl.DataFrame({"uid": ids})
    assert U.id_problems(frame.lazy() if lazy else frame, "uid") == (0, _truth(ids.to_list()))


def _string_ids(n=3000):
    return [f"user-{i}" for i in range(n)]


def test_string_and_other_ids_exact():
    ids = _string_ids()
    assert U.id_problems(pl.DataFrame({"uid": ids}), "uid") == (0, 0)
    bad = ids + [ids[17], ids[17], ids[2999]]
    assert U.id_problems(pl.DataFrame({"uid": bad}), "uid") == (0, _truth(bad)) == (0, 5)
    assert U.id_problems(pl.DataFrame({"uid": bad}).lazy(), "uid") == (0, 5)
    assert U.id_problems(pl.DataFrame({"uid": pl.Series(bad, dtype=pl.Categorical)}), "uid") == (0, 5)
    assert U.id_problems(pl.DataFrame({"uid": ["a\x00", "a", "b"]}), "uid") == (0, 0)  # trailing NULs stay distinct
    assert U.id_problems(pl.DataFrame({"uid": [None, "a", None]}), "uid") == (2, 0)


@pytest.mark.parametrize("lazy", [False, True])
def test_forced_hash_collisions_fall_back_to_an_exact_comparison(monkeypatch, lazy):
    """Every id of the same length gets the same 64-bit key: the shared keys must be re-checked
    on the ids — no silent pass (a real repeat is found) and no false refusal (a collision alone
    is accepted)."""
    monkeypatch.setattr(U, "_id_keys", lambda c: pl.col(c).str.len_bytes().cast(pl.UInt64))
    ids = [f"u{i:04d}" for i in range(2000)] + ["x", "yy"]  # 2000 ids share one key
    wrap = (lambda f: f.lazy()) if lazy else (lambda f: f)
    assert U.id_problems(wrap(pl.DataFrame({"uid": ids})), "uid") == (0, 0)
    bad = ids + ["u0042", "x"]
    assert U.id_problems(wrap(pl.DataFrame({"uid": bad})), "uid") == (0, 4)
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    vals = [CATS[i % len(CATS)] for i in range(len(bad))]
    with pytest.raises(LDPInputError, match="4 rows with a repeated id"):
        wrap(pl.DataFrame({"v": vals, "uid": bad})).ldp.privatize("v", m, user_id="uid", seed=1)
    ok = wrap(pl.DataFrame({"v": vals[: len(ids)], "uid": ids})).ldp.privatize("v", m, user_id="uid", seed=1)
    assert ok.height == len(ids)


def test_the_check_is_a_real_comparison(monkeypatch):
    """Power check: with the exact re-check removed (a shared key taken as distinct ids), the
    forced collisions above would pass a real repeat — the test would catch it."""
    monkeypatch.setattr(U, "_id_keys", lambda c: pl.col(c).str.len_bytes().cast(pl.UInt64))
    monkeypatch.setattr(U, "_repeated_by_keys", lambda lf, column, keys: 0)
    bad = [f"u{i:04d}" for i in range(100)] + ["u0042"]
    assert U.id_problems(pl.DataFrame({"uid": bad}), "uid") != (0, _truth(bad))


def test_privatize_refuses_repeats_and_nulls_before_returning_any_report():
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    n = 3 * NS.ROWS_PER_CHUNK // 2  # two chunks: the check runs alongside the randomization
    vals = [CATS[i % len(CATS)] for i in range(n)]
    uid = np.arange(n)
    uid[-1] = 0
    with pytest.raises(LDPInputError, match="2 rows with a repeated id"):
        pl.DataFrame({"v": vals, "uid": uid}).ldp.privatize("v", m, user_id="uid", seed=1)
    sid = pl.Series(np.arange(n)).cast(pl.String)
    with pytest.raises(LDPInputError, match="2 rows with a repeated id"):
        pl.DataFrame({"v": vals, "uid": sid.scatter(5, "0")}).ldp.privatize("v", m, user_id="uid", seed=1)
    with pytest.raises(LDPInputError, match="1 null"):
        pl.DataFrame({"v": vals, "uid": sid.scatter(n - 1, None)}).lazy().ldp.privatize("v", m, user_id="uid", seed=1)
    # a value error in the first chunk and a repeated id: the id error comes first, as before
    bad_vals = ["nope"] + vals[1:]
    with pytest.raises(LDPInputError, match="repeated id"):
        pl.DataFrame({"v": bad_vals, "uid": uid}).ldp.privatize("v", m, user_id="uid", seed=1)
    good = pl.DataFrame({"v": vals, "uid": np.arange(n)})
    assert good.ldp.privatize("v", m, user_id="uid", seed=1).equals(good.ldp.privatize("v", m, seed=1))


def test_privatize_with_a_sink_checks_ids_before_writing(tmp_path):
    m = ldp.KRR(epsilon=1.0, d=len(CATS), categories=CATS)
    df = pl.DataFrame({"v": CATS * 10, "uid": [1] + list(range(1, 80))})
    with pytest.raises(LDPInputError, match="2 rows with a repeated id"):
        df.ldp.privatize("v", m, user_id="uid", seed=1, sink=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_privatize_attributes_uses_the_same_exact_check():
    m = ldp.SPL(epsilon=2.0, domains=(3, 4))
    df = pl.DataFrame({"a": [0, 1, 2, 0], "b": [0, 1, 2, 3], "uid": ["x", "y", "x", "z"]})
    with pytest.raises(LDPInputError, match="2 rows with a repeated id"):
        df.ldp.privatize_attributes(["a", "b"], m, user_id="uid", seed=0)
    assert df.with_columns(uid=pl.Series(["x", "y", "w", "z"])).ldp.privatize_attributes(["a", "b"], m, user_id="uid", seed=0).height == 4


def test_keys_not_reproduced_on_the_re_check_fall_back_to_every_id(monkeypatch):
    """If the second evaluation of the keys differed from the first (it never should), the re-check
    would find fewer rows than the sorted keys promised: then every id is compared."""
    calls = []

    def keys(c):
        calls.append(c)
        first = len(calls) == 1  # the collision pass; the re-check gets different keys
        return pl.col(c).str.len_bytes().cast(pl.UInt64) + (0 if first else 1000)

    monkeypatch.setattr(U, "_id_keys", keys)
    bad = [f"u{i:04d}" for i in range(50)] + ["u0007"]
    assert U.id_problems(pl.DataFrame({"uid": bad}), "uid") == (0, 2)
