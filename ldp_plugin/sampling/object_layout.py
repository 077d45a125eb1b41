"""Where the running interpreter keeps a list's items and a ``str``'s or ``bytes``' contents: the
one capability the compiled list lookup (:func:`~ldp_plugin.sampling.row_lookup.list_codes`)
reads, probed once per process and confirmed on live objects, never assumed.

CPython stores an exact ``str`` in canonical form (PEP 393): its characters in the narrowest of
1, 2 or 4 bytes each that holds the largest one, right after the object's header (the header is
shorter for ASCII text), and compares two strings equal iff they have the same length, the same
width and the same bytes (``unicode_compare_eq``). A ``bytes`` object keeps its bytes after its
header; a list points at an array of item pointers; a tuple holds that array itself. Reading
these fields directly gives the compiled lookup the value of every item without a call per item,
and the comparison it makes on them is CPython's own equality.

:func:`object_layout` returns the offsets (and the two type addresses) only after checking each
one on objects built here — the type word, the length, the state bits of every width with and
without ASCII, the text of each width, a ``bytes``' contents, a tuple's and then a list's item
pointers — reading no byte outside any of those objects (a list's item array is followed only
after every header field has been confirmed). On another interpreter, another
pointer size or byte order, or any field where it is not expected, it returns None and the
caller takes the dictionary pass (:mod:`~ldp_plugin.sampling.row_lookup`)."""

from __future__ import annotations

import ctypes
import functools
import struct
import sys
from typing import Optional

import numpy as np

__all__ = ["object_layout", "canonical_text", "LAYOUT_FIELDS"]

#: the fields of :func:`object_layout`'s array, in order
LAYOUT_FIELDS = ("type_offset", "size_offset", "list_items_offset", "tuple_items_offset", "state_offset",
                 "kind_shift", "compact_bit", "ascii_bit", "ascii_data_offset", "compact_data_offset",
                 "bytes_data_offset", "str_type", "bytes_type")

#: where CPython 3.x (64-bit, little-endian, the default build) keeps each field (3.12 dropped the
#: ``wstr`` pointer, so the data offsets are read from ``sys.getsizeof`` rather than fixed here)
_HEADER = {"type_offset": 8, "size_offset": 16, "list_items_offset": 24, "tuple_items_offset": 24,
           "state_offset": 32, "kind_shift": 2, "compact_bit": 5, "ascii_bit": 6}

#: probe texts: empty, ASCII, Latin-1, two-byte, four-byte (built at run time: no shared constant)
_PROBES = ("", "abc", "\xe9t\xe9", "\u0100b\u0101", "\U00010000x")


def canonical_text(s: str) -> tuple[int, bytes]:
    """``(width, bytes)`` of a string in canonical PEP 393 form: the narrowest width (1, 2 or 4
    bytes a character) that holds its largest character, and its characters in it (a lone
    surrogate as its own code unit), as CPython stores and compares an exact ``str``."""
    top = max(map(ord, s), default=0)
    if top < 0x100:
        return 1, s.encode("latin-1")
    if top < 0x10000:
        return 2, s.encode("utf-16-le", "surrogatepass")
    return 4, s.encode("utf-32-le", "surrogatepass")


def _word(address: int) -> int:
    return ctypes.c_uint64.from_address(address).value


@functools.lru_cache(maxsize=1)
def object_layout() -> Optional[np.ndarray]:
    """The fields of :data:`LAYOUT_FIELDS` as an ``int64`` array when every one is confirmed on
    this interpreter's objects, else None (the compiled list lookup is then not used)."""
    if sys.implementation.name != "cpython" or struct.calcsize("P") != 8 or sys.byteorder != "little":
        return None
    f = dict(_HEADER)
    f["ascii_data_offset"] = sys.getsizeof("") - 1
    f["compact_data_offset"] = sys.getsizeof("\xe9") - 2
    f["bytes_data_offset"] = sys.getsizeof(b"") - 1
    if (f["ascii_data_offset"] < f["state_offset"] + 4 or f["bytes_data_offset"] < f["size_offset"] + 8
            or f["compact_data_offset"] < f["ascii_data_offset"]):
        return None
    probes = [("".join(chr(ord(c)) for c in p)) for p in _PROBES]  # fresh objects
    for s in probes:
        width, data = canonical_text(s)
        ascii_ = s.isascii()
        start = f["ascii_data_offset"] if ascii_ else f["compact_data_offset"]
        if sys.getsizeof(s) != start + (len(s) + 1) * width:  # every read below is inside the object
            return None
        state = ctypes.c_uint32.from_address(id(s) + f["state_offset"]).value
        if (_word(id(s) + f["type_offset"]) != id(str) or _word(id(s) + f["size_offset"]) != len(s)
                or (state >> f["kind_shift"]) & 7 != width or not (state >> f["compact_bit"]) & 1
                or bool((state >> f["ascii_bit"]) & 1) != ascii_ or ctypes.string_at(id(s) + start, len(data)) != data):
            return None
    for b in (b"", bytes(bytearray(b"xyz\x00w"))):
        if (sys.getsizeof(b) != f["bytes_data_offset"] + len(b) + 1 or _word(id(b) + f["type_offset"]) != id(bytes)
                or _word(id(b) + f["size_offset"]) != len(b) or ctypes.string_at(id(b) + f["bytes_data_offset"], len(b)) != b):
            return None
    items = list(probes)
    block = tuple(probes)
    if (_word(id(items) + f["size_offset"]) != len(items) or _word(id(block) + f["size_offset"]) != len(block)
            or block.__sizeof__() < f["tuple_items_offset"] + 8 * len(block)):
        return None
    pointers = _word(id(items) + f["list_items_offset"])  # dereferenced only after every header field above held
    for i, s in enumerate(probes):
        if _word(pointers + 8 * i) != id(s) or _word(id(block) + f["tuple_items_offset"] + 8 * i) != id(s):
            return None
    f["str_type"], f["bytes_type"] = id(str), id(bytes)
    return np.array([f[k] for k in LAYOUT_FIELDS], dtype=np.int64)
