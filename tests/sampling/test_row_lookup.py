"""The exact text lookups (ldp_plugin.sampling.row_lookup) and the mechanisms' encode through them:
numpy ``U``/``S`` arrays, lists, tuples and object arrays of ``str``/``bytes`` get exactly the codes
of a dictionary lookup, on both backends, for category sets with shared prefixes, the empty string,
non-ASCII text, internal and trailing NULs; a value outside the categories is refused by the first
position, never echoed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError
from ldp_plugin.sampling import row_lookup as rl

from .test_aggregate_kernels import backend  # noqa: F401  (the fixture: both kernel backends)


_ALPHABET = st.sampled_from(["a", "b", "ab", "\x00", "é", "日", "\U0001f600", "\ud800", "\x1f", "\x1e", " "])
_TEXT = st.lists(_ALPHABET, max_size=5).map("".join)
_CATS = st.lists(_TEXT, min_size=2, max_size=12, unique=True)


def _reference(values: list, categories: list) -> tuple[list, int]:
    """Codes by dictionary lookup (against str categories a bytes value as its UTF-8 text), and the
    first position of a value that is no category (or -1)."""
    index = {c: i for i, c in enumerate(categories)}
    if all(isinstance(c, str) for c in categories):
        index.update({c.encode("utf-8", "surrogatepass"): i for i, c in enumerate(categories)})
    codes = [index.get(v, -1) if isinstance(v, (str, bytes)) else -1 for v in values]
    return codes, next((i for i, c in enumerate(codes) if c < 0), -1)


def _values(data, categories: list, kind: type) -> list:
    """Values mostly drawn from the categories, with near misses: a prefix, a trailing NUL, an extension."""
    pool = list(categories) + [c[:-1] for c in categories if c] + [c + "\x00" for c in categories] + [c + "a" for c in categories]
    picks = data.draw(st.lists(st.sampled_from(pool), max_size=40))
    if data.draw(st.booleans()):  # most batches: known values only, so the codes themselves are compared
        picks = [v for v in picks if v in categories]
    return [v.encode("utf-8", "surrogatepass") if kind is bytes else v for v in picks]


def _check(got: tuple, values: list, categories: list) -> None:
    codes, bad = got
    want, want_bad = _reference(values, categories)
    assert bad == want_bad
    if want_bad < 0:
        assert codes.dtype == np.int64 and codes.tolist() == want


@pytest.mark.parametrize("kind,value_kind", [(str, str), (bytes, bytes), (str, bytes)])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), cats=_CATS)
def test_lookups_equal_a_dictionary_lookup(backend, kind, value_kind, data, cats):
    categories = [c.encode("utf-8", "surrogatepass") for c in cats] if kind is bytes else cats
    values = _values(data, cats, value_kind)
    cat_t = tuple(categories)
    # a list and a tuple: the values as given (a trailing NUL is part of the value)
    _check(rl.list_codes(values, cat_t), values, categories)
    _check(rl.list_codes(tuple(values), cat_t), values, categories)
    # a fixed-width array: the values as numpy returns them (numpy drops trailing NULs)
    arr = np.array(values, dtype=("U" if value_kind is str else "S")) if values else np.array([], dtype="U1" if value_kind is str else "S1")
    if arr.dtype.itemsize:
        _check(rl.fixed_width_codes(arr, cat_t), arr.tolist(), categories)
        wide = arr.astype(arr.dtype.kind + str(arr.dtype.itemsize // (4 if value_kind is str else 1) + 3))  # padding past the longest value
        _check(rl.fixed_width_codes(wide, cat_t), wide.tolist(), categories)
        if arr.size > 1:
            _check(rl.fixed_width_codes(arr[::-2], cat_t), arr[::-2].tolist(), categories)  # a strided view


@pytest.mark.parametrize("dtype", ["<U5", ">U5", "S5", "<U8", "S8", "S3"])
def test_fixed_width_on_both_byte_orders_and_word_sizes(backend, dtype):
    kind = bytes if dtype.startswith("S") else str
    cats = ["", "a", "ab", "abc", "a\x00b", "b\x00", "xyz"]
    categories = tuple(c.encode() for c in cats) if kind is bytes else tuple(cats)
    values = [categories[i] for i in (0, 1, 2, 3, 4, 2, 1, 0, 6)]
    arr = np.array(values, dtype=dtype)
    got = rl.fixed_width_codes(arr, categories)
    _check(got, arr.tolist(), list(categories))
    # "b\x00" can never be an element: numpy reads it as "b", which is no category
    odd = np.array([categories[1], categories[5]], dtype=dtype)
    assert rl.fixed_width_codes(odd, categories)[1] == 1


def test_large_batches_split_over_threads_keep_codes_and_first_position(backend):
    # 600,000 rows: the compiled lookup runs on two threads
    cats = tuple(f"item{i:03d}" for i in range(300)) + ("", "é日", "item")
    rng = np.random.default_rng(1)
    codes = rng.integers(0, len(cats), 600_000)
    values = [cats[c] for c in codes.tolist()]
    got, bad = rl.list_codes(values, cats)
    assert bad == -1 and np.array_equal(got, codes)
    got, bad = rl.fixed_width_codes(np.array(values), cats)
    assert bad == -1 and np.array_equal(got, codes)
    for where in (599_999, 450_000, 3):  # in the second thread's share, then also in the first
        values[where] = "item9999"
        assert rl.list_codes(values, cats)[1] == where  # each is before the earlier ones
        assert rl.fixed_width_codes(np.array(values), cats)[1] == where


def test_lists_of_mixed_or_control_characters_stay_exact(backend):
    cats = ("a", "b\x1f", "c")
    for values in (["a", "b\x1f", "c"], ["a", "b\x1e", "c"], ["a\x1dc", "a"], ["a", 3, "c"], ["a", b"a"], ["c", None], [b"c", b"q"]):
        _check(rl.list_codes(values, cats), values, list(cats))
    assert rl.list_codes(["a", ["x"]], cats) is None  # unhashable: the caller's general path
    assert rl.list_codes(["a"], (1, 2)) is None  # not text categories


@pytest.mark.parametrize("make", [lambda v: v, tuple, lambda v: np.array(v), lambda v: np.array(v, dtype=object)])
def test_mechanism_encode_through_every_container(make):
    cats = ["x", "x\x00", "", "日本", "xy"]
    mech = ldp.KRR(epsilon=1.0, categories=cats)
    values = ["xy", "", "日本", "x", "x"]
    assert mech.encode(make(values)).tolist() == [4, 2, 3, 0, 0]
    if not isinstance(make(values), np.ndarray) or make(values).dtype == object:
        assert mech.encode(make(["x\x00", "x"])).tolist() == [1, 0]  # the NUL-ended category, kept as given
    with pytest.raises(LDPInputError, match=r"position 2") as e:
        mech.encode(make(["x", "xy", "secret-value", "nope"]))
    assert "secret" not in str(e.value)
    reports = mech.randomize(make(values), rng=3)
    assert np.array_equal(np.asarray(reports), np.asarray(mech.randomize_encoded(np.array([4, 2, 3, 0, 0]), rng=3)))


def test_bytes_categories_take_s_arrays_and_lists():
    cats = [b"ab", b"a", b"\xff\x00z", b""]
    mech = ldp.OUE(epsilon=1.0, categories=cats)
    assert mech.encode(np.array([b"a", b"", b"ab", b"\xff\x00z"])).tolist() == [1, 3, 0, 2]
    assert mech.encode([b"a", b"", b"ab", b"\xff\x00z"]).tolist() == [1, 3, 0, 2]
    with pytest.raises(LDPInputError, match=r"position 1"):
        mech.encode(np.array([b"a", b"abc"]))
    with pytest.raises(LDPInputError, match=r"position 0"):
        mech.encode(np.array(["a", "ab"]))  # str values, bytes categories: no category


def test_bytes_values_against_str_categories_are_read_as_utf8():
    cats = ["ab", "é", "日本", ""]
    mech = ldp.KRR(epsilon=1.0, categories=cats)
    want = [1, 2, 0, 3]
    raw = [c.encode() for c in ("é", "日本", "ab", "")]
    for values in (np.array(raw), raw, tuple(raw), np.array(raw, dtype=object)):
        assert mech.encode(values).tolist() == want
    assert np.array_equal(np.asarray(mech.randomize(np.array(raw), rng=5)), np.asarray(mech.randomize(["é", "日本", "ab", ""], rng=5)))
    with pytest.raises(LDPInputError, match=r"position 1"):
        mech.encode(np.array([b"ab", "é".encode("latin-1")]))  # not the UTF-8 form of a category
