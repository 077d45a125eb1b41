"""The numba kernels of the exact text lookup (:mod:`ldp_plugin.sampling.row_lookup`), at module
level so that numba's on-disk cache works. Imported only by that module's loader when the numba
backend is selected; ``LDP_PLUGIN_NUMBA_CACHE=0`` compiles in memory.

Each kernel reads a value as 64-bit words, hashes a few of them (``Σ_t x_t·K_t mod 2**64``, top
bits: vector multiply-shift), probes an open-addressing table of the categories and accepts a slot
only after comparing every word of the value with the category's: a code is returned iff the value
equals that category, byte for byte.

* :func:`lookup_fixed` — the elements of a numpy ``U``/``S`` array in its own buffer: element ``i``
  is the ``size`` bytes at ``i·size``, read as ``⌈size/8⌉`` unaligned words (the last one masked to
  the element's own bytes); the categories are rows of the same dtype, padded with NULs to whole
  words. It has a numpy twin in :mod:`~ldp_plugin.sampling.row_lookup` (on the dtype's own words).
* :func:`lookup_objects` — the items of a list or tuple: an exact ``str`` is read as its UTF-8
  bytes, an exact ``bytes`` as its bytes (CPython's C API, the GIL held: this kernel is not
  ``nogil``); the words are the text's length and :func:`~._numba_memory.text_word` of its bytes,
  the categories' rows the same words of their labels (:func:`label_words`). Any other item (a
  subclass, another type, a string without a UTF-8 form) stops the kernel with its position: the
  caller then takes the dictionary path, the reference both kernels are tested against."""

import os

import numba as nb
import numpy as np

from ._numba_memory import address_of, bytes_of, item_of, load_word, text_word, type_of, utf8_of

_CACHE = os.environ.get("LDP_PLUGIN_NUMBA_CACHE", "1") != "0"


@nb.njit(nogil=True, cache=_CACHE)
def lookup_fixed(buf, size, lo, hi, last_mask, cols, keys, shift, slots, rows, codes, out, out_at):  # pragma: no cover - compiled
    # out[out_at + i] = codes[r] for the category row r equal to element i of buf (i in [lo, hi));
    # the caller makes sure that the words of element hi - 1 lie inside buf. The hash reads the
    # words cols only, the comparison every word. Returns the first i whose element is no
    # category's (out is then partly written and discarded), or -1. Table indices are unsigned
    # (a signed index costs a wrap-around test per read: twice the time of the whole lookup).
    words = np.uint64(rows.shape[1])
    last = rows.shape[1] - 1
    flat = rows.ravel()
    c = cols.shape[0]
    mask = np.uint64(slots.shape[0] - 1)
    for i in range(lo, hi):
        at = i * size
        h = np.uint64(0)
        for t in range(c):
            k = cols[t]
            x = load_word(buf, at + 8 * k)
            if k == last:
                x &= last_mask
            h += x * keys[t]
        s = h >> shift
        r = slots[s]
        while r >= 0:
            row = np.uint64(r) * words
            diff = (load_word(buf, at + 8 * last) & last_mask) ^ flat[row + np.uint64(last)]
            for k in range(last):
                diff |= load_word(buf, at + 8 * k) ^ flat[row + np.uint64(k)]
            if diff == 0:
                break
            s = (s + np.uint64(1)) & mask
            r = slots[s]
        if r < 0:
            return i
        out[out_at + i] = codes[np.uint64(r)]
    return -1


@nb.njit(cache=_CACHE)
def label_words(buf, starts, lengths, rows):  # pragma: no cover - compiled
    # rows[j] = [length, text_word(label j, 0), …] (zeros past the label's own words) for the
    # labels at buf[starts[j]:starts[j] + lengths[j]]: the table rows lookup_objects compares with
    base = address_of(buf)
    for j in range(starts.shape[0]):
        n = lengths[j]
        rows[j, 0] = np.uint64(n)
        for k in range((n + 7) >> 3):
            rows[j, k + 1] = text_word(base + starts[j], n, k)


@nb.njit(cache=_CACHE)
def lookup_objects(seq, n, is_tuple, str_type, bytes_type, str_ok, longest, cols, keys, shift, slots, rows, codes, out):  # pragma: no cover - compiled
    # out[i] = the code of item i of the list (tuple) at address seq, i in [0, n). Returns
    # (-1, 0) when every item is a category; (i, 0) when item i is a str/bytes that is no
    # category; (i, 1) when item i is not read here (not an exact str or bytes, a str refused
    # by str_ok, a string without a UTF-8 form). longest: the longest label's length. Holds the
    # GIL (C API calls). Unsigned table indices, as in lookup_fixed.
    width = np.uint64(rows.shape[1])
    flat = rows.ravel()
    c = cols.shape[0]
    mask = np.uint64(slots.shape[0] - 1)
    for i in range(n):
        obj = item_of(seq, i, is_tuple)
        kind = type_of(obj)
        if kind == str_type and str_ok:
            p, size = utf8_of(obj)
        elif kind == bytes_type:
            p, size = bytes_of(obj)
        else:
            return i, 1
        if size < 0:
            return i, 1
        if size > longest:
            return i, 0
        own = (size + 7) >> 3  # the value's own words (after the length word)
        h = np.uint64(0)
        for t in range(c):
            k = cols[t]
            if k == 0:
                x = np.uint64(size)
            elif k <= own:
                x = text_word(p, size, k - 1)
            else:
                x = np.uint64(0)
            h += x * keys[t]
        s = h >> shift
        r = slots[s]
        while r >= 0:
            row = np.uint64(r) * width
            if flat[row] == np.uint64(size):
                diff = np.uint64(0)
                for k in range(own):
                    diff |= text_word(p, size, k) ^ flat[row + np.uint64(k + 1)]
                if diff == 0:
                    break
            s = (s + np.uint64(1)) & mask
            r = slots[s]
        if r < 0:
            return i, 0
        out[i] = codes[np.uint64(r)]
    return -1, 0


KERNELS = {"lookup_fixed": lookup_fixed, "label_words": label_words, "lookup_objects": lookup_objects}
