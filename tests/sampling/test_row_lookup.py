"""The exact text lookups (ldp_plugin.sampling.row_lookup) and the mechanisms' encode through them:
numpy ``U``/``S`` arrays, lists, tuples and object arrays of ``str``/``bytes`` get exactly the codes
of a dictionary lookup, on both backends, for category sets with shared prefixes, the empty string,
non-ASCII text, internal and trailing NULs; a value outside the categories is refused by the first
position, never echoed."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError
from ldp_plugin.sampling import row_lookup as rl
from ldp_plugin.sampling.object_layout import object_layout
from ldp_plugin.sampling.runner import _thread_pool

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


def _compiled():
    """The compiled lookup kernels (numba installed), loaded now; else the test is skipped."""
    pytest.importorskip("numba")
    run = rl._kernels(1 << 62)
    if run is None:
        pytest.skip("numba cannot compile here")
    return run


# lengths 0..40 in UTF-8 bytes: one- to three-byte texts, the 4..7-byte word of two reads, whole
# words, a last word overlapping the one before; non-ASCII and a NUL inside
_LONG_CATS = ["", "a", "ab", "abc", "abcd", "abcdefg", "abcdefgh", "abcdefghi", "é", "日本", "a\x00b",
              "item000", "item001", "x" * 15, "x" * 16, "x" * 17, "x" * 39 + "y", "x" * 40]


@pytest.mark.parametrize("kind", [str, bytes])
def test_compiled_list_pass_equals_the_dictionary_pass(monkeypatch, kind):
    run = _compiled()
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    cats = tuple(c.encode() for c in _LONG_CATS) if kind is bytes else tuple(_LONG_CATS)
    table, longest = rl._object_table(cats, run["label_words"])
    rng = np.random.default_rng(7)
    near = [c[:-1] for c in cats if c] + [c + c[-1:] for c in cats if c] + [c[:-1] + (b"z" if kind is bytes else "z") for c in cats if c]
    near = [v for v in near if v not in cats]  # one byte short, one long, the last byte changed
    for values in ([cats[i] for i in rng.integers(0, len(cats), 5000).tolist()], list(cats), [c.encode() if kind is str else c for c in cats]):
        for container in (list, tuple):
            seq = container(values)
            out = np.empty(len(seq), dtype=np.int64)
            got = run["lookup_objects"](id(seq), len(seq), int(container is tuple), object_layout(), longest,
                                        table.cols, table.keys, table.shift, table.slots, table.rows, table.codes, out)
            assert got == (-1, 0)  # every item read in the compiled pass, every one a category
            _check((out, -1), list(seq), list(cats))
            _check(rl.list_codes(seq, cats), list(seq), list(cats))
            arr = np.empty(len(seq), dtype=object)
            arr[:] = list(seq)
            assert rl._object_source(arr)[1] == 2
            _check(rl.list_codes(arr, cats), list(seq), list(cats))  # an object array, read through its pointers
            _check(rl.list_codes(arr[::-1], cats), list(seq)[::-1], list(cats))  # strided: the dictionary pass
    for miss in near:  # a near miss is no category, at its own position, whatever is around it
        values = [cats[1], cats[-1], miss, cats[0]]
        out = np.empty(4, dtype=np.int64)
        got = run["lookup_objects"](id(values), 4, 0, object_layout(), longest,
                                    table.cols, table.keys, table.shift, table.slots, table.rows, table.codes, out)
        assert got == (2, 0)
        _check(rl.list_codes(values, cats), values, list(cats))


def test_compiled_list_pass_hands_other_items_to_the_dictionary_pass(monkeypatch):
    run = _compiled()
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")

    class Text(str):  # a subclass may compare otherwise: the dictionary pass decides
        pass

    class Raw(bytes):
        pass

    cats = ("a", "\ud800", "日本", "b")
    table, longest = rl._object_table(cats, run["label_words"])
    for values, where in ((["a", Text("b"), "a"], 1), (["a", 3, "b"], 1), ([None], 0), ([b"a", Raw(b"a")], 1)):
        out = np.empty(len(values), dtype=np.int64)
        got = run["lookup_objects"](id(values), len(values), 0, object_layout(), longest,
                                    table.cols, table.keys, table.shift, table.slots, table.rows, table.codes, out)
        assert got == (where, 1)
        _check(rl.list_codes(values, cats), values, list(cats))
    # a lone surrogate is read in place (its two-byte canonical text), and so is its UTF-8 form
    # (surrogatepass) as bytes
    values = ["b", "\ud800", b"\xed\xa0\x80"]
    out = np.empty(3, dtype=np.int64)
    assert run["lookup_objects"](id(values), 3, 0, object_layout(), longest, table.cols, table.keys, table.shift,
                                 table.slots, table.rows, table.codes, out) == (-1, 0)
    assert out.tolist() == [3, 1, 1]
    assert rl.list_codes(["a", ["x"]], cats) is None  # unhashable, after the compiled pass stopped there
    assert rl.list_codes(["zz", ["x"]], cats) is None  # an unknown value first: still the dictionary pass's answer
    # bytes categories: a str item is no category (the dictionary pass says where)
    bcats = (b"a", b"b")
    assert rl.list_codes([b"a", "a"], bcats)[1] == 1


@pytest.mark.parametrize("kind", ["S", "U"])
def test_compiled_fixed_width_reads_only_each_elements_own_bytes(monkeypatch, kind):
    _compiled()
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    base = ["", "a", "ab", "abc", "abcdefg", "abcdefgh", "abcdefghi", "x" * 17, "\x7f" * 3]
    for width in range(1, 19):
        cats = tuple(c for c in base if len(c) <= width)
        categories = tuple(c.encode() for c in cats) if kind == "S" else cats
        rng = np.random.default_rng(width)
        for n in (1, 2, 3, 7, 8, 9, 17, 40):  # the last elements come from the zero-padded tail
            picks = [cats[i] for i in rng.integers(0, len(cats), n).tolist()]
            arr = np.array([c.encode() for c in picks] if kind == "S" else picks, dtype=f"{kind}{width}")
            _check(rl.fixed_width_codes(arr, categories), arr.tolist(), list(categories))
            for where in sorted({0, n // 2, n - 1}):  # an element one byte off its neighbours' category
                bad = arr.copy()
                v = picks[where]
                miss = (v[:-1] + "q") if v else "q"
                if miss in cats or len(miss) > width:
                    continue
                bad[where] = miss.encode() if kind == "S" else miss
                assert rl.fixed_width_codes(bad, categories)[1] == where


@pytest.mark.parametrize("make", ["numpy U", "numpy S", "list[str]", "list[bytes]", "tuple[str]", "object array"])
@pytest.mark.parametrize("cls", [ldp.KRR, ldp.OUE])
def test_every_text_path_gives_the_reports_of_the_codes(monkeypatch, make, cls):
    # 600,001 values: the two-thread split of the array lookup and its zero-padded tail (compiled
    # lookups when numba is installed; the numpy twins are held to the dictionary pass above)
    try:
        _compiled()
        monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    except pytest.skip.Exception:
        pass
    cats = [f"item{i:03d}" for i in range(64)]
    codes = np.random.default_rng(3).integers(0, 64, 600_001)
    strs = [cats[c].encode().decode() for c in codes.tolist()]  # one str object per value
    values = {"numpy U": lambda: np.array(strs), "numpy S": lambda: np.array([s.encode() for s in strs]),
              "list[str]": lambda: strs, "list[bytes]": lambda: [s.encode() for s in strs],
              "tuple[str]": lambda: tuple(strs), "object array": lambda: np.array(strs, dtype=object)}[make]()
    mech = cls(epsilon=1.0, d=64, categories=cats)
    got = np.asarray(mech.randomize(values, rng=11))
    assert np.array_equal(got, np.asarray(mech.randomize_encoded(codes, rng=11)))


def test_compiled_list_pass_counts_the_items_itself(monkeypatch):
    # a list that no longer has the length its caller counted (another thread changed it) is not
    # read: the dictionary pass takes it as it is now
    run = _compiled()
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    cats = ("a", "b")
    table, longest = rl._object_table(cats, run["label_words"])
    values = ["a", "b", "a"]
    for n in (4, 2):
        out = np.empty(4, dtype=np.int64)
        got = run["lookup_objects"](id(values), n, 0, object_layout(), longest,
                                    table.cols, table.keys, table.shift, table.slots, table.rows, table.codes, out)
        assert got == (0, 1)


def test_the_object_layout_is_confirmed_field_by_field(monkeypatch):
    # this interpreter (CPython, 64-bit, little-endian) is read in place; a layout with any one
    # header field somewhere else is not confirmed, and the list lookup then takes the dictionary pass
    from ldp_plugin.sampling import object_layout as ol
    layout = ol.object_layout()
    assert layout is not None and dict(zip(ol.LAYOUT_FIELDS, layout.tolist()))["str_type"] == id(str)
    for field, value in ol._HEADER.items():
        if field == "list_items_offset":
            continue  # followed as a pointer: the probe reaches it only with every other field confirmed
        for wrong in (value - 1, value + 1, value + 8):
            monkeypatch.setitem(ol._HEADER, field, wrong)
            ol.object_layout.cache_clear()
            try:
                assert ol.object_layout() is None, (field, wrong)
                if field == "kind_shift":
                    monkeypatch.setattr(rl, "object_layout", ol.object_layout)
                    _check(rl.list_codes(["b", "a"], ("a", "b"), backend="numba"), ["b", "a"], ["a", "b"])
            finally:
                monkeypatch.setitem(ol._HEADER, field, value)
                ol.object_layout.cache_clear()
    assert ol.object_layout() is not None


# texts of every canonical width, ASCII and not: Latin-1 (one byte, not ASCII), two bytes (CJK,
# Arabic, a lone surrogate), four bytes (emoji, astral CJK), and the same characters in other widths
_WIDE_CATS = ["", "a", "é", "été", "ÿ", "Ā", "日本", "日本語のテキスト", "مرحبا", "\ud800", "\udfff", "a\ud800",
              "😀", "😀x", "a😀", "𠀀𠀁", "Ω", "x" * 9, "é" * 9, "日" * 9, "😀" * 9, "a\x00b"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, len(_WIDE_CATS) - 1), max_size=40),
       extra=st.lists(st.text(max_size=6), max_size=4), container=st.sampled_from([list, tuple, "object array"]))
def test_compiled_list_pass_is_python_equality_in_every_width(monkeypatch, picks, extra, container):
    # the compiled pass compares each string's width and canonical bytes: it agrees with the
    # dictionary pass (Python's hash and ==) on texts of every width, and on drawn texts that may
    # or may not be categories (a near miss in another width is none)
    _compiled()
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    cats = tuple(_WIDE_CATS)
    values = [cats[i] for i in picks] + extra + [cats[i].encode("utf-8", "surrogatepass") for i in picks[:3]]
    values = ["".join(chr(ord(ch)) for ch in v) if isinstance(v, str) else v for v in values]  # fresh objects
    if container == "object array":
        seq = np.empty(len(values), dtype=object)
        seq[:] = values
    else:
        seq = container(values)
    table, longest = rl._object_table(cats, rl._kernels(1, "numba")["label_words"])
    out = np.empty(len(values), dtype=np.int64)
    address, source = rl._object_source(seq)
    got = rl._kernels(1, "numba")["lookup_objects"](address, len(values), source, object_layout(), longest, table.cols,
                                                    table.keys, table.shift, table.slots, table.rows, table.codes, out)
    want, want_bad = _reference(values, list(cats))
    assert got == (want_bad, 0)  # every item read in place: the first that is no category, or none
    if want_bad < 0:
        assert out.tolist() == want
    _check(rl.list_codes(seq, cats, backend="numba"), values, list(cats))
    _check(rl.list_codes(seq, cats, backend="numpy"), values, list(cats))


def _two_threads(monkeypatch, helper_wait: float) -> dict:
    """The compiled kernels (else skip), chosen for every call, with the pool thread's start-up wait."""
    run = _compiled()
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    monkeypatch.setattr(rl, "_HELPER_WAIT", helper_wait)
    return run


def _big_list(n: int, seed: int) -> tuple:
    cats = tuple(f"item{i:03d}" for i in range(64)) + ("é", "日本", "😀")
    codes = np.random.default_rng(seed).integers(0, len(cats), n)
    return cats, codes, ["".join(chr(ord(ch)) for ch in cats[c]) for c in codes.tolist()]


def test_two_thread_list_lookup_equals_one_thread(monkeypatch):
    # past 2·_SPLIT items the lookup runs on the caller's thread and a pool thread, chunk by
    # chunk: the same codes and the same first position as one thread, wherever the misses fall
    run = _two_threads(monkeypatch, 5.0)  # the pool thread always joins (the test is about the split)
    n = 2 * rl._SPLIT + 5 * rl._CHUNK + 3
    cats, codes, values = _big_list(n, 1)
    got = rl.list_codes(values, cats)
    assert got[1] == -1 and np.array_equal(got[0], codes)
    arr = np.empty(n, dtype=object)
    arr[:] = values
    for seq in (tuple(values), arr):
        assert np.array_equal(rl.list_codes(seq, cats)[0], codes)
    for misses in ([n - 1], [rl._CHUNK * 7 + 5, rl._CHUNK * 2 + 1], [0, n // 2], [rl._CHUNK - 1, rl._CHUNK]):
        bad = list(values)
        for pos in misses:
            bad[pos] = "zz" if pos % 2 else 3.5  # an unknown text, or an item of another type
        assert rl.list_codes(bad, cats)[1] == min(misses)
    table, longest = rl._object_table(cats, run["label_words"])
    out = np.empty(n, dtype=np.int64)
    assert run["lookup_objects"](id(values), n, 0, object_layout(), longest, table.cols, table.keys, table.shift,
                                 table.slots, table.rows, table.codes, out) == (-1, 0)
    assert np.array_equal(out, codes)


def test_two_thread_list_lookup_runs_alone_when_the_pool_thread_is_busy(monkeypatch):
    # the pool thread is held by another task: the caller cancels its helper after _HELPER_WAIT and
    # runs alone (same codes); the helper, when it starts later, runs nothing and returns
    _two_threads(monkeypatch, 0.01)
    cats, codes, values = _big_list(2 * rl._SPLIT + 1, 2)
    release = threading.Event()
    blocker = _thread_pool(1).submit(release.wait, 30)
    try:
        got = rl.list_codes(values, cats)
        assert got[1] == -1 and np.array_equal(got[0], codes)
    finally:
        release.set()
    blocker.result(timeout=30)
    ran = _thread_pool(1).submit(lambda: None)
    ran.result(timeout=30)  # the cancelled helper has left the pool thread: it takes new work
    monkeypatch.setattr(rl, "_HELPER_WAIT", 5.0)
    assert np.array_equal(rl.list_codes(values, cats)[0], codes)


def test_list_lookup_under_a_thread_that_mutates_the_list(monkeypatch):
    # another Python thread appends to and pops from the list while it is looked up: the compiled
    # passes hold the GIL across every read, so each lookup sees one state of the list (its codes
    # are the dictionary's for some length the list had), a length that changed since it was
    # counted sends the batch to the dictionary pass (which reads the list as it is then), and
    # nothing crashes
    _two_threads(monkeypatch, 5.0)
    cats, codes, values = _big_list(2 * rl._SPLIT + 10, 3)
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            values.append("".join(chr(ord(ch)) for ch in "item001"))
            values.pop()

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(20):
            got = rl.list_codes(values, cats)
            assert got is not None and got[1] == -1
            m = got[0].size
            assert np.array_equal(got[0][: min(m, codes.size)], codes[: min(m, codes.size)])
            assert m <= codes.size or (got[0][codes.size:] == 1).all()
    finally:
        stop.set()
        worker.join()


def test_dictionary_pass_reads_a_sequence_shorter_than_counted():
    # the length a caller counted can be gone by the time the dictionary pass reads the list
    # (another thread popped): it reads the list as it is then, never raises numpy's ValueError
    class Shrinking(list):
        def __len__(self):
            return super().__len__() + 1

    got = rl.list_codes(Shrinking(["b", "a"]), ("a", "b"))
    assert got[1] == -1 and got[0].tolist() == [1, 0]
