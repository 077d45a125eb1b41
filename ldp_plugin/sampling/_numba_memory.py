"""Memory reads for the compiled text lookup (:mod:`ldp_plugin.sampling._numba_lookup`): unaligned
word loads from a byte array or an address, and the text of a Python ``str``/``bytes`` object
through CPython's own C API. numba only (imported by that module, never by the numpy path).

* :func:`load_word` / :func:`load_at` read 8 (4, 1) bytes at a byte offset of an array (an
  address) as one native word, with no alignment requirement; the caller keeps every read inside
  the buffer.
* :func:`item_of`, :func:`type_of`, :func:`utf8_of`, :func:`bytes_of` are ``PyList_GetItem`` /
  ``PyTuple_GetItem``, ``Py_TYPE``, ``PyUnicode_AsUTF8AndSize`` and ``PyBytes_AsStringAndSize``
  called from compiled code that holds the GIL (a kernel using them must not be ``nogil``): they
  borrow references and run no Python code, so nothing can change the sequence while they read
  it. A failed conversion (a string with a lone surrogate has no strict UTF-8 form) clears its
  error and returns a negative length."""

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

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
