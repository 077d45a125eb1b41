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
* :func:`lookup_objects` — the items of a list, tuple or object array, read in place through the
  offsets :func:`~ldp_plugin.sampling.object_layout.object_layout` confirmed on this interpreter
  (no call per item, the GIL held: this kernel is not ``nogil``, so nothing changes the sequence
  or its items while it reads them): an exact ``str`` as its canonical PEP 393 text (its width
  and its 1-, 2- or 4-byte characters), an exact ``bytes`` as its bytes. The key word of a value
  is ``nbytes·8 + width`` (width 0 for ``bytes``), its other words :func:`text_word` of its bytes;
  the categories' rows hold the same words of each label's canonical text and of its UTF-8 bytes
  (:func:`label_words`), so a ``str`` matches iff CPython's ``==`` says so and a ``bytes`` value
  iff it is a label's UTF-8 encoding. Any other item (a subclass, another type, a non-compact
  legacy string) stops the kernel with its position: the caller then takes the dictionary path,
  the reference both kernels are tested against."""

import os

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_CACHE = os.environ.get("LDP_PLUGIN_NUMBA_CACHE", "1") != "0"

# -- memory reads (here, not in a module of their own: numba's disk cache keys a kernel on its own
# file only, so a change to an imported helper would leave stale compiled kernels) --------------
# load_word / load_at read 8 (4, 1) bytes at a byte offset of an array (an address) as one native
# word, with no alignment requirement; the caller keeps every read inside the buffer.

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
def label_words(buf, starts, lengths, key_words, rows):  # pragma: no cover - compiled
    # rows[j] = [key_words[j], text_word(label j, 0), …] (zeros past the label's own words) for the
    # label bytes at buf[starts[j]:starts[j] + lengths[j]]: the table rows lookup_objects compares with
    base = address_of(buf)
    for j in range(starts.shape[0]):
        n = lengths[j]
        rows[j, 0] = np.uint64(key_words[j])
        for k in range((n + 7) >> 3):
            rows[j, k + 1] = text_word(base + starts[j], n, k)


#: items ahead of the one being read whose object lookup_objects asks the cache for (measured on
#: 10^6 strings: 8 items ahead 0.96 of no prefetch's time, 64 ahead 0.6, 512 ahead no gain)
PREFETCH_ITEMS = 64

# the fields of object_layout's array (LAYOUT_FIELDS, in that order)
_TYPE, _SIZE, _LIST_ITEMS, _TUPLE_ITEMS, _STATE, _KIND_SHIFT, _COMPACT_BIT, _ASCII_BIT, _ASCII_DATA, _COMPACT_DATA, _BYTES_DATA, _STR_TYPE, _BYTES_TYPE = range(13)


@nb.njit(inline="always")
def _items_of(seq, n, source, layout):  # pragma: no cover - compiled
    # the address of the item pointers of the list (source 0) or tuple (1) at seq, or seq itself
    # (2: an object array's buffer); -1 when a list or tuple no longer has n items
    if source == 2:
        return seq
    if np.int64(load_at(seq + layout[_SIZE])) != n:
        return -1
    return np.int64(load_at(seq + layout[_LIST_ITEMS])) if source == 0 else seq + layout[_TUPLE_ITEMS]


@nb.njit(inline="always")
def _lookup_range(items, lo, hi, layout, longest, cols, keys, shift, slots, rows, codes, out):  # pragma: no cover - compiled
    # out[i] = the code of the object at items[i] for i in [lo, hi), read at layout's offsets;
    # (-1, 0) when each is a category, (i, 0) at the first str/bytes that is no category, (i, 1) at
    # the first item not read here (not an exact str or bytes, a non-compact string)
    width = np.uint64(rows.shape[1])
    flat = rows.ravel()
    c = cols.shape[0]
    mask = np.uint64(slots.shape[0] - 1)
    type_at, size_at, state_at = layout[_TYPE], layout[_SIZE], layout[_STATE]
    kind_shift, compact_bit, ascii_bit = np.uint64(layout[_KIND_SHIFT]), np.uint64(layout[_COMPACT_BIT]), np.uint64(layout[_ASCII_BIT])
    ascii_data, compact_data, bytes_data = layout[_ASCII_DATA], layout[_COMPACT_DATA], layout[_BYTES_DATA]
    str_type, bytes_type = layout[_STR_TYPE], layout[_BYTES_TYPE]
    for i in range(lo, hi):
        if i + PREFETCH_ITEMS < hi:
            prefetch(np.int64(load_at(items + 8 * (i + PREFETCH_ITEMS))))
        obj = np.int64(load_at(items + 8 * i))
        kind = np.int64(load_at(obj + type_at))
        if kind == str_type:
            state = load4_at(obj + state_at)
            if not (state >> compact_bit) & np.uint64(1):
                return i, 1
            w = np.int64((state >> kind_shift) & np.uint64(7))
            size = np.int64(load_at(obj + size_at)) * w
            p = obj + (ascii_data if (state >> ascii_bit) & np.uint64(1) else compact_data)
        elif kind == bytes_type:
            w = 0
            size = np.int64(load_at(obj + size_at))
            p = obj + bytes_data
        else:
            return i, 1
        if size > longest:
            return i, 0
        key = np.uint64(size * 8 + w)
        own = (size + 7) >> 3  # the value's own words (after the key word)
        h = np.uint64(0)
        for t in range(c):
            k = cols[t]
            if k == 0:
                x = key
            elif k <= own:
                x = text_word(p, size, k - 1)
            else:
                x = np.uint64(0)
            h += x * keys[t]
        s = h >> shift
        r = slots[s]
        while r >= 0:
            row = np.uint64(r) * width
            if flat[row] == key:
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


@nb.njit(cache=_CACHE)
def lookup_objects(seq, n, source, layout, longest, cols, keys, shift, slots, rows, codes, out):  # pragma: no cover - compiled
    # out[i] = the code of item i, i in [0, n), of the list (source 0) or tuple (1) at address
    # seq, or of the n object pointers at address seq (2: a 1-d object array's buffer), each read
    # at the offsets of layout (object_layout). Returns (-1, 0) when every item is a category;
    # (i, 0) when item i is a str/bytes that is no category; (i, 1) when item i is not read here
    # (not an exact str or bytes, a non-compact string); (0, 1) when the sequence no longer has n
    # items (another thread changed it since the caller counted). longest: the longest row's byte
    # count. Holds the GIL (not nogil): nothing changes the sequence or its items while it runs.
    # Unsigned table indices, as in lookup_fixed.
    items = _items_of(seq, n, source, layout)
    if items < 0:
        return 0, 1
    return _lookup_range(items, 0, n, layout, longest, cols, keys, shift, slots, rows, codes, out)


# -- the same lookup on two threads, the GIL held throughout ----------------------------------------
# The calling thread runs lookup_objects_led (GIL held, not nogil): nothing can change the sequence
# or free an item while it runs. A pool thread runs lookup_objects_helper (nogil) on the same
# control words, a fresh int64 array per call: it announces itself (STATE 0 -> 1, compare-and-swap)
# and waits; the caller's Python code waits for that announcement before it calls the led kernel
# (a helper that has not announced itself by then is cancelled: STATE 0 -> 3, and runs nothing
# when it starts; a caller interrupted before its led kernel sends an announced helper away:
# STATE 1 -> 3). The led kernel reads the sequence's item pointers, publishes them (ITEMS, N),
# sets STATE 2 (release), and both threads take chunks of ``chunk`` items from one counter (atomic
# add) until none is left; the helper then acknowledges (DONE 1, release) and reads nothing more,
# and the led kernel returns only after that acknowledgement — so every read of the sequence
# happens while the caller holds the GIL. Each chunk's first bad position goes to bads[chunk].
_STATE_AT, _NEXT_AT, _DONE_AT, _ITEMS_AT, _N_AT = 0, 1, 2, 3, 4
@intrinsic
def atomic_load(typingctx, words, k):
    """Word ``k`` of an int64 array, read with acquire ordering."""
    def codegen(context, builder, signature, args):
        return builder.load_atomic(builder.gep(context.make_array(signature.args[0])(context, builder, args[0]).data, [args[1]]), "acquire", 8)

    return types.int64(words, types.int64), codegen


@intrinsic
def atomic_store(typingctx, words, k, value):
    """Word ``k`` of an int64 array set to ``value`` with release ordering."""
    def codegen(context, builder, signature, args):
        builder.store_atomic(args[2], builder.gep(context.make_array(signature.args[0])(context, builder, args[0]).data, [args[1]]), "release", 8)
        return context.get_dummy_value()

    return types.void(words, types.int64, types.int64), codegen


@intrinsic
def atomic_add(typingctx, words, k, value):
    """Word ``k`` of an int64 array increased by ``value`` atomically (sequentially consistent);
    returns the value before."""
    def codegen(context, builder, signature, args):
        return builder.atomic_rmw("add", builder.gep(context.make_array(signature.args[0])(context, builder, args[0]).data, [args[1]]), args[2], "seq_cst")

    return types.int64(words, types.int64, types.int64), codegen


@intrinsic
def atomic_cas(typingctx, words, k, expected, value):
    """Word ``k`` of an int64 array set to ``value`` iff it holds ``expected``, atomically
    (sequentially consistent); returns whether it did."""
    def codegen(context, builder, signature, args):
        pair = builder.cmpxchg(builder.gep(context.make_array(signature.args[0])(context, builder, args[0]).data, [args[1]]), args[2], args[3], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)

    return types.boolean(words, types.int64, types.int64, types.int64), codegen


@intrinsic
def yield_cpu(typingctx):
    """Give the core to another runnable thread (``sched_yield``; nothing where there is none):
    a thread waiting for its partner on a machine with more runnable threads than cores lets the
    partner run instead of spinning against it."""
    def codegen(context, builder, signature, args):
        if os.name == "posix":
            fn = builder.module.globals.get("sched_yield") or ir.Function(builder.module, ir.FunctionType(ir.IntType(32), []), "sched_yield")
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


#: spins on a partner's word before each yield of the core
_SPINS = 64


@nb.njit(inline="always")
def _wait_while(flags, k, value):  # pragma: no cover - compiled
    # the first value of word k that is not value (acquire), spinning, then yielding the core
    spins = 0
    state = atomic_load(flags, k)
    while state == value:
        spins += 1
        if spins >= _SPINS:
            yield_cpu()
            spins = 0
        state = atomic_load(flags, k)
    return state


@nb.njit(inline="always")
def _take_chunks(flags, items, n, layout, longest, cols, keys, shift, slots, rows, codes, out, bads, stops):  # pragma: no cover - compiled
    # chunk j is [j·chunk, (j + 1)·chunk) with chunk = ⌈n / bads.size⌉
    chunks = bads.shape[0]
    chunk = (n + chunks - 1) // chunks
    while True:
        j = atomic_add(flags, _NEXT_AT, 1)
        if j >= chunks:
            return
        lo = j * chunk
        bad, stop = _lookup_range(items, lo, min(n, lo + chunk), layout, longest, cols, keys, shift, slots, rows, codes, out)
        bads[j] = bad
        stops[j] = stop


@nb.njit(cache=_CACHE)
def lookup_objects_led(flags, seq, n, source, layout, longest, cols, keys, shift, slots, rows, codes, out, bads, stops):  # pragma: no cover - compiled
    # lookup_objects on two threads (the protocol above): the caller's part, GIL held. The helper
    # has announced itself (STATE 1). Returns as lookup_objects, after the helper's acknowledgement.
    items = _items_of(seq, n, source, layout)
    if items < 0:
        atomic_store(flags, _STATE_AT, 3)  # nothing to read: the helper leaves
    else:
        atomic_store(flags, _ITEMS_AT, items)
        atomic_store(flags, _N_AT, n)
        atomic_store(flags, _STATE_AT, 2)
        _take_chunks(flags, items, n, layout, longest, cols, keys, shift, slots, rows, codes, out, bads, stops)
    _wait_while(flags, _DONE_AT, 0)
    if items < 0:
        return 0, 1
    for j in range(bads.shape[0]):  # chunks in order: the first bad chunk holds the first bad item
        if bads[j] >= 0:
            return bads[j], stops[j]
    return -1, 0


@nb.njit(cache=_CACHE)
def lookup_objects_cancel(flags, started):  # pragma: no cover - compiled
    # the caller's cancellation of its helper: True iff the helper had not announced itself
    # (STATE 0 -> 3: it runs nothing when it starts) or, with started, was still waiting for the
    # items (STATE 1 -> 3: it leaves); False when it announced itself first (without started)
    if atomic_cas(flags, _STATE_AT, 0, 3):
        return True
    return started and atomic_cas(flags, _STATE_AT, 1, 3)


@nb.njit(nogil=True, cache=_CACHE)
def lookup_objects_helper(flags, layout, longest, cols, keys, shift, slots, rows, codes, out, bads, stops):  # pragma: no cover - compiled
    # the pool thread's part of the two-thread lookup (the protocol above); returns whether it ran
    if not atomic_cas(flags, _STATE_AT, 0, 1):  # cancelled before it started
        atomic_store(flags, _DONE_AT, 1)
        return False
    state = _wait_while(flags, _STATE_AT, 1)
    if state == 2:
        _take_chunks(flags, atomic_load(flags, _ITEMS_AT), atomic_load(flags, _N_AT), layout, longest, cols, keys, shift,
                     slots, rows, codes, out, bads, stops)
    atomic_store(flags, _DONE_AT, 1)
    return state == 2


KERNELS = {"lookup_fixed": lookup_fixed, "label_words": label_words, "lookup_objects": lookup_objects,
           "lookup_objects_led": lookup_objects_led, "lookup_objects_helper": lookup_objects_helper,
           "lookup_objects_cancel": lookup_objects_cancel}
