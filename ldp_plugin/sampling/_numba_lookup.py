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
* :func:`lookup_objects` — the items of a list, tuple or object array: an exact ``str`` is read as
  its UTF-8 bytes (a non-ASCII string keeps that UTF-8 copy, as CPython caches it), an exact
  ``bytes`` as its bytes (CPython's C API, the GIL held: this kernel is not ``nogil``); the words
  are the text's length and :func:`text_word` of its bytes, the categories' rows the same words of
  their labels (:func:`label_words`). Any other item (a
  subclass, another type, a string without a UTF-8 form) stops the kernel with its position: the
  caller then takes the dictionary path, the reference both kernels are tested against."""

import os

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_CACHE = os.environ.get("LDP_PLUGIN_NUMBA_CACHE", "1") != "0"

# -- memory reads (here, not in a module of their own: numba's disk cache keys a kernel on its own
# file only, so a change to an imported helper would leave stale compiled kernels) --------------
# load_word / load_at read 8 (4, 1) bytes at a byte offset of an array (an address) as one native
# word, with no alignment requirement; the caller keeps every read inside the buffer. item_of,
# size_of, type_of, utf8_of, bytes_of are PyList_GetItem / PyTuple_GetItem, PyList_Size /
# PyTuple_Size, Py_TYPE, PyUnicode_AsUTF8AndSize and PyBytes_AsStringAndSize called from compiled
# code that holds the GIL (a kernel using them must not be nogil): they borrow references and run
# no Python code, so nothing can change the sequence while they read it. A failed conversion (a string with a lone
# surrogate has no strict UTF-8 form) clears its error and returns a negative length.

_I64 = ir.IntType(64)


def _raw_loader(bits: int):
    """An intrinsic ``f(address) -> uint64``: the ``bits``-bit native word at ``address``
    (alignment 1), zero-extended."""

    @intrinsic
    def load(typingctx, address):
        def codegen(context, builder, signature, args):
            value = builder.load(builder.inttoptr(args[0], ir.IntType(bits).as_pointer()), align=1)
            return builder.zext(value, _I64) if bits < 64 else value

        return types.uint64(types.int64), codegen

    return load


load_at = _raw_loader(64)
load4_at = _raw_loader(32)
load1_at = _raw_loader(8)


@intrinsic
def prefetch(typingctx, address):
    """A hint to bring the cache line at ``address`` in for reading (``llvm.prefetch``): no effect
    on what a kernel computes, at any address."""

    def codegen(context, builder, signature, args):
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        builder.call(fn, [builder.inttoptr(args[0], i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(types.int64), codegen


#: bytes ahead of the element being read that lookup_fixed asks the cache for (measured: the plain
#: loop waited on memory for most of its time on 10^6 28-byte elements)
PREFETCH_BYTES = 4096


@intrinsic
def address_of(typingctx, array):
    """The address of a 1-d array's first byte (int64)."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.ptrtoint(data, _I64)

    return types.int64(array), codegen


@nb.njit(inline="always")
def load_word(buf, offset):  # pragma: no cover - compiled
    """The native 64-bit word at byte ``offset`` of the byte array ``buf`` (unaligned)."""
    return load_at(address_of(buf) + offset)


@nb.njit(inline="always")
def text_word(address, length, k):  # pragma: no cover - compiled
    """Word ``k`` (``0 ≤ k < max(1, ⌈length/8⌉)``) of the ``length`` bytes at ``address``, read
    without touching a byte outside them: 8-byte words, the last one overlapping its predecessor
    (``length ≥ 8``); below 8 bytes one word of two overlapping 4-byte reads, or of the bytes one
    by one. For a fixed ``length`` the words determine the bytes (every byte is read into some word
    at a fixed place), so two texts of one length are equal iff their words are."""
    if length >= 8:
        offset = 8 * k
        if offset > length - 8:
            offset = length - 8
        return load_at(address + offset)
    if length >= 4:
        return load4_at(address) | (load4_at(address + length - 4) << np.uint64(32))
    word = np.uint64(0)
    for j in range(length):
        word |= load1_at(address + j) << np.uint64(8 * j)
    return word


@intrinsic
def item_of(typingctx, sequence, i, is_tuple):
    """Item ``i`` of the list (tuple) at address ``sequence``: a borrowed reference's address."""

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        seq = builder.inttoptr(args[0], pyapi.pyobj)
        fnty = ir.FunctionType(pyapi.pyobj, [pyapi.pyobj, pyapi.py_ssize_t])
        from_list = pyapi._get_function(fnty, name="PyList_GetItem")
        from_tuple = pyapi._get_function(fnty, name="PyTuple_GetItem")
        with builder.if_else(args[2]) as (tup, lst):
            with tup:
                a = builder.call(from_tuple, [seq, args[1]])
                block_a = builder.block
            with lst:
                b = builder.call(from_list, [seq, args[1]])
                block_b = builder.block
        item = builder.phi(pyapi.pyobj)
        item.add_incoming(a, block_a)
        item.add_incoming(b, block_b)
        return builder.ptrtoint(item, _I64)

    return types.int64(types.int64, types.int64, types.boolean), codegen


@intrinsic
def size_of(typingctx, sequence, is_tuple):
    """The length of the list (tuple) at address ``sequence`` (``PyList_Size`` / ``PyTuple_Size``)."""

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        seq = builder.inttoptr(args[0], pyapi.pyobj)
        fnty = ir.FunctionType(pyapi.py_ssize_t, [pyapi.pyobj])
        with builder.if_else(args[1]) as (tup, lst):
            with tup:
                a = builder.call(pyapi._get_function(fnty, name="PyTuple_Size"), [seq])
                block_a = builder.block
            with lst:
                b = builder.call(pyapi._get_function(fnty, name="PyList_Size"), [seq])
                block_b = builder.block
        size = builder.phi(pyapi.py_ssize_t)
        size.add_incoming(a, block_a)
        size.add_incoming(b, block_b)
        return size

    return types.int64(types.int64, types.boolean), codegen


@intrinsic
def type_of(typingctx, obj):
    """The address of the type of the object at address ``obj`` (``Py_TYPE``)."""

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        return builder.ptrtoint(pyapi.get_type(builder.inttoptr(args[0], pyapi.pyobj)), _I64)

    return types.int64(types.int64), codegen


_SPAN = types.UniTuple(types.int64, 2)


@intrinsic
def utf8_of(typingctx, obj):
    """``(address, length)`` of the UTF-8 form of the ``str`` at address ``obj``
    (``PyUnicode_AsUTF8AndSize``: the string's own bytes for ASCII, else the UTF-8 copy CPython
    keeps with the string); length −1 (error cleared) if it has none."""

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        ok, buf, size = pyapi.string_as_string_and_size(builder.inttoptr(args[0], pyapi.pyobj))
        with builder.if_then(builder.not_(ok), likely=False):
            pyapi.err_clear()
        size = builder.select(ok, size, ir.Constant(size.type, -1))
        return context.make_tuple(builder, signature.return_type, [builder.ptrtoint(buf, _I64), size])

    return _SPAN(types.int64), codegen


@intrinsic
def bytes_of(typingctx, obj):
    """``(address, length)`` of the bytes of the ``bytes`` object at address ``obj``
    (``PyBytes_AsStringAndSize``); length −1 (error cleared) if it is not one."""

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        p_buf = cgutils.alloca_once_value(builder, ir.Constant(pyapi.cstring, None))
        p_len = cgutils.alloca_once(builder, pyapi.py_ssize_t)
        ok = pyapi.bytes_as_string_and_size(builder.inttoptr(args[0], pyapi.pyobj), p_buf, p_len)
        with builder.if_then(builder.not_(ok), likely=False):
            pyapi.err_clear()
        size = builder.select(ok, builder.load(p_len), ir.Constant(pyapi.py_ssize_t, -1))
        return context.make_tuple(builder, signature.return_type, [builder.ptrtoint(builder.load(p_buf), _I64), size])

    return _SPAN(types.int64), codegen


# -- the kernels -----------------------------------------------------------------------------------



@nb.njit(nogil=True, cache=_CACHE)
def lookup_fixed(buf, size, lo, hi, last_mask, cols, keys, shift, slots, rows, codes, out, out_at):  # pragma: no cover - compiled
    # out[out_at + i] = codes[r] for the category row r equal to element i of buf (i in [lo, hi));
    # the caller makes sure that the words of element hi - 1 lie inside buf. The hash reads the
    # words cols only, the comparison every word. Returns the first i whose element is no
    # category's (out is then partly written and discarded), or -1. Table indices are unsigned
    # (a signed index costs a wrap-around test per read: twice the time of the whole lookup); the
    # bytes PREFETCH_BYTES ahead are asked for while this element is looked up.
    words = np.uint64(rows.shape[1])
    last = rows.shape[1] - 1
    flat = rows.ravel()
    c = cols.shape[0]
    mask = np.uint64(slots.shape[0] - 1)
    base = address_of(buf)
    end = base + buf.shape[0]
    for i in range(lo, hi):
        at = i * size
        if base + at + PREFETCH_BYTES < end:
            prefetch(base + at + PREFETCH_BYTES)
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
def lookup_objects(seq, n, source, str_type, bytes_type, str_ok, longest, cols, keys, shift, slots, rows, codes, out):  # pragma: no cover - compiled
    # out[i] = the code of item i, i in [0, n), of the list (source 0) or tuple (1) at address
    # seq, or of the n object pointers at address seq (2: a 1-d object array's buffer). Returns
    # (-1, 0) when every item is a category; (i, 0) when item i is a str/bytes that is no
    # category; (i, 1) when item i is not read here (not an exact str or bytes, a str refused
    # by str_ok, a string without a UTF-8 form), (0, 1) when the sequence no longer has n items
    # (another thread changed it since the caller counted). longest: the longest label's length.
    # Holds the GIL (C API calls): nothing changes the sequence while it runs. Unsigned table
    # indices, as in lookup_fixed.
    width = np.uint64(rows.shape[1])
    flat = rows.ravel()
    c = cols.shape[0]
    mask = np.uint64(slots.shape[0] - 1)
    if source < 2 and size_of(seq, source == 1) != n:
        return 0, 1
    for i in range(n):
        if source == 2:
            obj = np.int64(load_at(seq + 8 * i))
        else:
            obj = item_of(seq, i, source == 1)
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
