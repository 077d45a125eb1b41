"""Exact, vectorized lookup of text values in a table of categories: the item codes of a numpy
unicode (``U``) or bytes (``S``) array read in its own buffer (no Python object per value), or of
a Python list, tuple or object array of ``str``/``bytes``.

* :func:`fixed_width_codes` — a 1-d ``U``/``S`` array is read as an ``(n, w)`` matrix of words
  (its own buffer, no copy when contiguous; the compiled kernel reads 64-bit words, the last one
  masked to the element's own bytes). A category is looked up as its row in the same dtype,
  padded with NULs. numpy reads an element without its trailing NULs, so the row of a value equals
  the row of category ``c`` iff the value (as numpy returns it) equals ``c``, provided ``c`` fits
  the width and does not itself end in NUL; categories that do not fit, or end in NUL, can never be
  an element of the array and are left out of the table (``"a\\x00"`` never matches ``"a"``).
* :func:`list_codes` — a list, tuple or object array: one compiled pass that reads each exact
  ``str`` (its canonical text) or ``bytes`` in place, at the offsets
  :func:`~.object_layout.object_layout` confirmed on this interpreter, and looks it up in a table
  of the categories' texts and UTF-8 bytes (numba), else one dictionary lookup per value in a
  single C-level pass (``map`` into ``np.fromiter``), the reference.

Against ``str`` categories a bytes value (an ``S`` array's element, ``bytes`` in a list) is read
as UTF-8 text: it matches the category whose UTF-8 encoding it is.

Every lookup is exact: a value gets the code of the category it equals (compared word for word
after the hash probe), or is reported by position — the first value that is no category's —
and never by content. Both backends of each (the numba kernels in :mod:`._numba_lookup`, the
numpy twin or the dictionary pass here) return the same codes and the same position (tested
against a dictionary lookup)."""

from __future__ import annotations

import functools
import itertools
import time
from typing import Any, Optional

import numpy as np

from .aggregate_kernels import _splits, _workers, split_run
from .runner import _thread_pool
from .kernels import select_table
from .object_layout import canonical_text, object_layout

__all__ = ["text_kind", "fixed_width_codes", "list_codes", "lookup_backend"]

_MASK64 = (1 << 64) - 1
#: a table is rebuilt with other multipliers if a probe run would exceed this many slots
_MAX_RUN = 32
#: rows per step of the numpy twin (bounds its working memory)
_STEP = 1 << 16
#: values per thread share of the compiled lookups (the list lookup runs on two threads from
#: twice this many items, as the array lookup does)
_SPLIT = 1 << 18
#: items a chunk of the two-thread list lookup takes (the threads take chunks from one counter)
_CHUNK = 1 << 14
#: seconds the list lookup waits for its pool thread to start before it runs on one thread
_HELPER_WAIT = 0.002


def _kernels(work: int, backend: Optional[str] = None) -> dict | None:
    """The compiled lookup kernels when the numba backend runs a call of ``work`` steps (``backend``:
    None, the ``LDP_PLUGIN_KERNELS`` rule; ``"numpy"`` or ``"numba"``: that one)."""
    return select_table("_numba_lookup", work, backend)


def lookup_backend(work: int = 1 << 62) -> str:
    """``"numba"`` or ``"numpy"``: which implementation a lookup of ``work`` steps uses."""
    return "numba" if _kernels(work) is not None else "numpy"


@functools.lru_cache(maxsize=256)
def text_kind(categories: tuple) -> Optional[type]:
    """``str`` or ``bytes`` if every category is one of them (numpy's ``str_``/``bytes_``
    included: the lookups here apply), else None."""
    for kind in (str, bytes):
        if all(isinstance(c, kind) for c in categories):
            return kind
    return None


def _multipliers(count: int, seed: int) -> np.ndarray:
    """``count`` odd 64-bit multipliers (splitmix64 of ``seed``): fixed, so a table is the same in
    every process; a table whose probe runs come out long is rebuilt with the next seed."""
    out = np.empty(count, dtype=np.uint64)
    x = (0x9E3779B97F4A7C15 * (seed + 1)) & _MASK64
    for j in range(count):
        x = (x + 0x9E3779B97F4A7C15) & _MASK64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out[j] = (z ^ (z >> 31)) | 1
    return out


def _row_hashes(words: np.ndarray, keys: np.ndarray, cols: Optional[np.ndarray] = None) -> np.ndarray:
    """``Σ_t words[:, cols[t]]·keys[t] mod 2**64`` per row (uint64; ``cols``: every column)."""
    h = np.zeros(words.shape[0], dtype=np.uint64)
    for t, j in enumerate(range(words.shape[1]) if cols is None else cols.tolist()):
        h += words[:, j].astype(np.uint64) * keys[t]
    return h


def _hash_columns(rows: np.ndarray) -> np.ndarray:
    """Word columns that tell the categories apart (greedy: each step adds the column that leaves
    the most rows distinct, at most 3, constant columns never): the compiled lookup hashes only
    these and compares every word afterwards, so the choice affects speed, never the result."""
    m, w = rows.shape
    varying = [j for j in range(w) if m and (rows[:, j] != rows[0, j]).any()]
    if m * len(varying) > 1 << 18:
        return np.array(varying or [0] * min(w, 1), dtype=np.int64)
    chosen: list = []
    best = 1
    while len(chosen) < 3 and best < m:
        scores = [(np.unique(rows[:, chosen + [j]], axis=0).shape[0], j) for j in varying if j not in chosen]
        if not scores:
            break
        score, j = max(scores)
        if score <= best and chosen:
            break
        chosen.append(j)
        best = score
    return np.array(chosen or [0] * min(w, 1), dtype=np.int64)


class _Table:
    """The categories that can occur, as rows of words, with an open-addressing slot table
    (linear probing) over a hash of a few columns: of 8 multiplier seeds (a few columns first,
    every column if their probe runs come out long), the one whose rows sit closest to their home
    slots (a lookup of a row walks one slot per row it passes). The table has 16 slots a row up to
    256 rows (most rows at home), 4 beyond."""

    def __init__(self, rows: np.ndarray, codes: np.ndarray):
        self.rows, self.codes = rows, codes
        m, w = rows.shape
        bits = max(4, ((16 if m <= 256 else 4) * max(m, 1) - 1).bit_length())
        self.shift = np.uint64(64 - bits)
        best = None
        for cols in (_hash_columns(rows), np.arange(w, dtype=np.int64)):
            for seed in range(8):
                keys = _multipliers(cols.size, seed)
                slots, longest, walked = self._slots(_row_hashes(rows, keys, cols), bits)
                if longest <= _MAX_RUN and (best is None or walked < best[0]):
                    best = (walked, cols, keys, slots)
                if best is not None and best[0] == 0:
                    break
            if best is not None:
                break
        _, self.cols, self.keys, self.slots = best if best is not None else (0, cols, keys, slots)

    def _slots(self, hashes: np.ndarray, bits: int) -> tuple:
        """``(slots, longest probe run, slots walked past by all rows)``: linear probing, inserted in rounds (each row still
        unplaced moves one slot on when its slot is taken; of several rows arriving at one free
        slot the lowest takes it). Every slot a row passes stays occupied, so a lookup that walks
        from the home slot to the first empty one meets every row with that home."""
        mask = (1 << bits) - 1
        slots = np.full(1 << bits, -1, dtype=np.int64)
        pending = np.arange(hashes.size, dtype=np.int64)
        pos = (hashes >> self.shift).astype(np.int64)
        run = walked = 0
        while pending.size:
            free = slots[pos] < 0
            where, first = np.unique(pos[free], return_index=True)
            slots[where] = pending[free][first]
            left = slots[pos] != pending
            pending, pos = pending[left], (pos[left] + 1) & mask
            run += int(pending.size > 0)
            walked += int(pending.size)
        return slots, run, walked


def _word_dtype(itemsize: int) -> np.dtype:
    for size in (8, 4, 2):
        if itemsize % size == 0:
            return np.dtype(f"u{size}")
    return np.dtype(np.uint8)


def _utf8(c: Any) -> bytes:
    """A label's bytes: a ``str`` as UTF-8 (``surrogatepass``: injective on every Python string)."""
    return c.encode("utf-8", "surrogatepass") if isinstance(c, str) else c


@functools.lru_cache(maxsize=64)
def _fixed_table(categories: tuple, dtype: np.dtype) -> _Table:
    labels = [_utf8(c) for c in categories] if dtype.kind == "S" else list(categories)
    nul = "\x00" if dtype.kind == "U" else b"\x00"
    width = dtype.itemsize // (4 if dtype.kind == "U" else 1)
    fits = [(code, c) for code, c in enumerate(labels) if len(c) <= width and not c.endswith(nul)]
    words = _word_dtype(dtype.itemsize)
    rows = np.array([c for _, c in fits], dtype=dtype).reshape(len(fits))
    rows = np.ascontiguousarray(rows).view(words).reshape(len(fits), dtype.itemsize // words.itemsize)
    codes = np.array([code for code, _ in fits], dtype=np.int64)
    return _Table(rows, codes)


@functools.lru_cache(maxsize=64)
def _wide_table(categories: tuple, dtype: np.dtype) -> tuple:
    """``(table, last_mask)`` of the compiled lookup: the categories of :func:`_fixed_table` as
    rows of native 64-bit words (each padded with NULs to whole words), and the word mask that
    keeps an element's own bytes of its last word (the bytes past it belong to the next element)."""
    words = -(-dtype.itemsize // 8)
    narrow = _fixed_table(categories, dtype)
    raw = np.zeros((narrow.rows.shape[0], 8 * words), dtype=np.uint8)
    raw[:, :dtype.itemsize] = np.ascontiguousarray(narrow.rows).view(np.uint8).reshape(narrow.rows.shape[0], dtype.itemsize)
    own = dtype.itemsize - 8 * (words - 1)
    last_mask = np.frombuffer(b"\xff" * own + b"\x00" * (8 - own), dtype=np.uint64)[0]
    return _Table(raw.view(np.uint64), narrow.codes), last_mask


def fixed_width_codes(values: np.ndarray, categories: tuple, *, backend: Optional[str] = None) -> tuple[np.ndarray, int]:
    """``(codes, bad)`` of a 1-d ``U`` (``str`` categories) or ``S`` array (``bytes`` categories,
    or ``str`` categories compared as UTF-8):
    ``codes[i]`` (int64) is the code of the category equal to element ``i``; ``bad`` is the first
    position whose element is no category (the codes are then meaningless) or −1. ``backend``:
    the lookup's implementation (None: the ``LDP_PLUGIN_KERNELS`` rule; ``"numpy"``, ``"numba"``)."""
    n = values.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int64), -1
    a = np.ascontiguousarray(values)
    out = np.empty(n, dtype=np.int64)
    run = _kernels(n * a.dtype.itemsize // 8, backend)
    if run is not None:
        return out, _compiled_fixed(run["lookup_fixed"], a, categories, out)
    table = _fixed_table(categories, a.dtype)
    words = a.view(table.rows.dtype).reshape(n, table.rows.shape[1])
    if table.rows.shape[0] == 0:  # no category fits this dtype: the first value is none
        return out, 0
    mask = table.slots.size - 1
    cols = [np.ascontiguousarray(table.rows[:, j]) for j in range(table.rows.shape[1])]
    for lo in range(0, n, _STEP):  # the numpy twin: the same probes, vectorized
        w = words[lo:lo + _STEP]
        slot = (_row_hashes(w, table.keys, table.cols) >> table.shift).astype(np.int64)
        r = table.slots[slot]
        same = r >= 0  # the first probe, over every row: each word against the slot's category
        r0 = np.where(same, r, 0)
        for j, col in enumerate(cols):
            same &= w[:, j] == col.take(r0)
        codes = np.where(same, table.codes.take(r0), -1)
        todo = np.flatnonzero(~same & (r >= 0))  # the rest walk their probe runs (rare)
        slot = (slot[todo] + 1) & mask
        while todo.size:
            r = table.slots[slot]
            todo, slot, r = todo[r >= 0], slot[r >= 0], r[r >= 0]  # an empty slot: no category
            hit = _rows_equal(w[todo], table.rows[r])
            codes[todo[hit]] = table.codes[r[hit]]
            todo, slot = todo[~hit], (slot[~hit] + 1) & mask
        if (codes < 0).any():
            return out, lo + int(np.argmax(codes < 0))
        out[lo:lo + w.shape[0]] = codes
    return out, -1


def _compiled_fixed(kernel, a: np.ndarray, categories: tuple, out: np.ndarray) -> int:
    """The compiled lookup of the contiguous array ``a`` into ``out`` (both threads); returns the
    first position that is no category, or −1. Elements whose last word would reach past the
    buffer (the final few) are read from a zero-padded copy of their bytes."""
    n, size = a.shape[0], a.dtype.itemsize
    table, last_mask = _wide_table(categories, a.dtype)
    reach = 8 * table.rows.shape[1]  # bytes read from an element's start
    buf = a.view(np.uint8).reshape(n * size)
    inside = min(n, (n * size - reach) // size + 1) if n * size >= reach else 0
    args = (last_mask, table.cols, table.keys, table.shift, table.slots, table.rows, table.codes, out)
    parts = _splits(inside, _workers(inside, _SPLIT))
    bads = split_run(lambda j: kernel(buf, size, parts[j][0], parts[j][1], *args, 0), len(parts))
    bad = min((int(b) for b in bads if b >= 0), default=-1)
    if bad < 0 and inside < n:
        tail = np.zeros((n - inside) * size + reach, dtype=np.uint8)
        tail[:(n - inside) * size] = buf[inside * size:]
        b = kernel(tail, size, 0, n - inside, *args, inside)
        bad = inside + int(b) if b >= 0 else -1
    return bad


def _rows_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise equality of two ``(k, w)`` arrays (column by column: no ``(k, w)`` temporary)."""
    same = np.ones(a.shape[0], dtype=bool)
    for j in range(a.shape[1]):
        same &= a[:, j] == b[:, j]
    return same


@functools.lru_cache(maxsize=64)
def _text_index(categories: tuple) -> dict:
    """Label → code, with each ``str`` label's UTF-8 bytes as a second key (a ``str`` and a
    ``bytes`` key never compare equal, so the two forms cannot collide)."""
    index = {c: i for i, c in enumerate(categories)}
    if text_kind(categories) is str:
        index.update({_utf8(c): i for i, c in enumerate(categories)})
    return index


@functools.lru_cache(maxsize=64)
def _object_table(categories: tuple, words_of) -> tuple:
    """``(table, longest)`` of the compiled list lookup: a row ``[key, word 0, …]`` (zeros past its
    own words) for each form a category's value takes in memory — a ``str`` label's canonical
    text (key ``nbytes·8 + width``, :func:`~.object_layout.canonical_text`) and its UTF-8 bytes
    (key ``nbytes·8``: a ``bytes`` value read as UTF-8), a ``bytes`` label's bytes (key
    ``nbytes·8``) — each with the label's code; ``longest`` the most bytes of any row.
    ``words_of`` is the compiled :func:`~._numba_lookup.label_words`, which reads them as the
    lookup reads a value."""
    forms = []
    for code, c in enumerate(categories):
        if isinstance(c, str):
            forms.append((code, *canonical_text(c)))
        forms.append((code, 0, _utf8(c)))
    lengths = np.array([len(b) for _, _, b in forms], dtype=np.int64)
    longest = int(lengths.max())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    buf = np.frombuffer(b"".join(b for _, _, b in forms) + b"\x00", dtype=np.uint8)
    key_words = np.array([8 * len(b) + w for _, w, b in forms], dtype=np.uint64)
    rows = np.zeros((len(forms), 1 + max(1, -(-longest // 8))), dtype=np.uint64)
    words_of(buf, starts, lengths, key_words, rows)
    return _Table(rows, np.array([code for code, _, _ in forms], dtype=np.int64)), longest


def _object_source(values: Any) -> Optional[tuple]:
    """``(address, kind)`` of the items the compiled list pass reads: a list (0) or tuple (1) by
    its own address (the kernel reads its length and item pointers itself), a 1-d contiguous
    object array (2) by its buffer of object pointers (the array holds a reference to each); None
    for anything else (subclasses may read their items otherwise)."""
    if type(values) is list or type(values) is tuple:
        return id(values), int(type(values) is tuple)
    if (type(values) is np.ndarray and values.dtype == object and values.ndim == 1 and values.flags.c_contiguous
            and values.dtype.itemsize == 8):
        return values.ctypes.data, 2
    return None


def _two_thread_objects(run: dict, source: tuple, n: int, args: tuple) -> int:
    """The compiled list lookup on the calling thread and one pool thread, the GIL held by the
    caller throughout every read of the sequence (the protocol in :mod:`._numba_lookup`): the pool
    thread announces itself inside its ``nogil`` kernel, then the caller's kernel (which never
    releases the GIL) publishes the item pointers, both take chunks, and the caller's kernel
    returns only after the pool thread has acknowledged that it reads nothing more. A pool thread
    that has not announced itself within :data:`_HELPER_WAIT` seconds (a busy pool, a loaded
    machine) is cancelled and the caller runs the one-thread kernel: the same codes, the same
    first position; a caller interrupted before its kernel sends the pool thread away. Returns the
    first position that is not a category's, or −1."""
    chunks = -(-n // _CHUNK)
    bads, stops = np.full(chunks, -1, dtype=np.int64), np.zeros(chunks, dtype=np.int64)
    flags = np.zeros(5, dtype=np.int64)
    _thread_pool(1).submit(run["lookup_objects_helper"], flags, *args, bads, stops)
    led = False
    try:
        deadline = time.monotonic() + _HELPER_WAIT
        while flags[0] == 0 and time.monotonic() < deadline:
            time.sleep(0)  # hands the GIL over: the pool thread needs it to enter its kernel
        if run["lookup_objects_cancel"](flags, False):
            return int(run["lookup_objects"](source[0], n, source[1], *args)[0])
        led = True
        return int(run["lookup_objects_led"](flags, source[0], n, source[1], *args, bads, stops)[0])
    finally:
        if not led:  # interrupted (or alone): a helper waiting for the items leaves, one not started never runs
            run["lookup_objects_cancel"](flags, True)


def list_codes(values: Any, categories: tuple, *, backend: Optional[str] = None) -> Optional[tuple[np.ndarray, int]]:
    """``(codes, bad)`` of a list, tuple or 1-d object array of values against ``str`` or ``bytes``
    categories, as
    :func:`fixed_width_codes` (against ``str`` categories a ``bytes`` value is compared as UTF-8);
    None when the categories are not text or a value is not hashable: the caller's general path
    then names the problem.

    Compiled (numba backend, on an interpreter whose object layout :func:`~.object_layout.object_layout`
    confirms): one pass over the items in place — each exact ``str`` read as its canonical text
    (width and characters: it matches a label iff ``==`` says so), each exact ``bytes`` as its
    bytes (a label's UTF-8 form), no call and no Python object per item, the next items' objects
    prefetched (the GIL held, so nothing changes the list or its items meanwhile). A batch that is
    not all categories, or holds any other item (a subclass, another type, a legacy non-compact
    string), is decided by the dictionary pass instead, so every refusal and every ``None`` is that
    pass's. The dictionary pass (the numpy backend, another interpreter, and the reference):
    ``dict.get`` mapped over the list into ``np.fromiter``. Measured against joining the list into
    one buffer and splitting it in a compiled pass: the join alone costs about as much as the
    dictionary pass. ``backend``: as :func:`fixed_width_codes`."""
    kind = text_kind(categories)
    if kind is None:  # labels of other types: bool and int are told apart by the caller's general path
        return None
    n = len(values)
    layout = object_layout()
    run = _kernels(n, backend) if layout is not None else None
    source = _object_source(values) if run is not None else None
    if source is not None and n:
        table, longest = _object_table(categories, run["label_words"])
        out = np.empty(n, dtype=np.int64)
        args = (layout, longest, table.cols, table.keys, table.shift, table.slots, table.rows, table.codes, out)
        if _workers(n, _SPLIT) > 1:
            bad = _two_thread_objects(run, source, n, args)
        else:
            bad, _ = run["lookup_objects"](source[0], n, source[1], *args)
        if bad < 0:
            return out, -1
    get = _text_index(categories).get
    try:
        try:
            codes = np.fromiter(map(get, values, itertools.repeat(-1)), dtype=np.int64, count=n)
        except ValueError:  # shorter than counted: another thread changed it; read it as it is now
            codes = np.fromiter(map(get, values, itertools.repeat(-1)), dtype=np.int64)
    except TypeError:  # an unhashable value
        return None
    bad = np.flatnonzero(codes < 0)
    return codes, (int(bad[0]) if bad.size else -1)
