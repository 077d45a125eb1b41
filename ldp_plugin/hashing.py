"""A specified, version-stable hash family for items, cohorts and per-user seeds (vectorized).

Everything here is a pure function of its inputs, fixed by this specification (never
``pl.Expr.hash`` or Python's ``hash``, whose values change between versions and processes):

* ``mix64(z)``: the splitmix64 finalizer (Steele, Lea, Flood 2014), a bijection of 64-bit words::

      z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31

* **item key** (64 bits) of an item:
  integer ``i`` (signed 64-bit, two's complement) → ``mix64(i XOR 0x6C64702D696E7420)``;
  string ``s`` → the 8-byte BLAKE2b digest (``person=b"ldp-plugin-item"``) of ``s`` in UTF-8, read
  little-endian; ``bytes`` → the same digest of the bytes with ``person=b"ldp-plugin-byte"``.
  Integer keys are distinct for distinct integers (``mix64`` is a bijection); strings are hashed
  once per *distinct* value, so a column of 10^7 items costs one vectorized pass.
* **seeded hash** into ``[0, k)`` (``1 <= k <= 2**32``) with a 64-bit seed ``s``:
  ``a = mix64(s XOR A) | 1``, ``b = mix64(s XOR B)``, ``z = (a·key + b) mod 2**64`` (multiply-add-
  shift, Dietzfelbinger 1996), ``h = ((z >> 32) · k) >> 32`` (Lemire's range reduction). For two
  distinct keys the collision probability over the seed is ``1/k`` up to ``O(k/2**32)``; this is
  what the hashed mechanisms' ``q* = 1/k`` assumes (their *privacy* never depends on it).
  Membership ``h = y`` is the interval test ``(z − L_y·2**32) mod 2**64 < (L_{y+1} − L_y)·2**32``
  with ``L_y = ceil(y·2**32/k)``: three word operations per (report, item) on the server.
* **cohort seeds**: cohort ``c`` of a mechanism with public ``hash_seed`` uses
  ``mix64(hash_seed + (c + 1)·0x9E3779B97F4A7C15)``.
* **cohort assignment** of a user id with a salt: ``seeded_hash(key(user_id), mix64(salt), C)``,
  independent of the user's data.

>>> import numpy as np
>>> item_keys(np.array([1, 2, 3])).dtype
dtype('uint64')
>>> int(seeded_hash(item_keys(["apple"]), 42, 10)[0]) in range(10)
True
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np

from ._errors import LDPInputError, LDPParameterError

__all__ = [
    "mix64",
    "item_keys",
    "seed_multipliers",
    "seeded_hash",
    "seeded_hash_z",
    "hash_interval",
    "cohort_seed",
    "cohort_seeds",
    "assign_cohorts",
    "seeded_permutation",
]

M64 = (1 << 64) - 1
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_INT_TAG = np.uint64(0x6C64702D696E7420)  # "ldp-int "
_A_TAG = np.uint64(0x5D588B656C078965)
_B_TAG = np.uint64(0x269EC3A2C5A1C3B1)
_GOLDEN = 0x9E3779B97F4A7C15
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)


def mix64(z: Any) -> np.ndarray:
    """splitmix64 finalizer on ``uint64`` words (vectorized; a bijection)."""
    z = np.array(z, dtype=np.uint64, copy=True)
    z ^= z >> _S30
    z *= _C1
    z ^= z >> _S27
    z *= _C2
    z ^= z >> _S31
    return z


def _digest_key(data: bytes, person: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8, person=person).digest(), "little")


def _int_keys(arr: np.ndarray) -> np.ndarray:
    return mix64(arr.astype(np.int64, copy=False).view(np.uint64) ^ _INT_TAG)


def item_keys(values: Any) -> np.ndarray:
    """64-bit item keys (see the module docstring) of a batch of integers, strings or bytes."""
    if _is_polars_series(values):
        return _polars_item_keys(values)
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.dtype.kind in "US" and isinstance(values, (list, tuple)):
        # numpy's fixed-width strings drop trailing NULs ("a\x00" would become "a", another item):
        # keep the Python objects themselves
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype == np.bool_:
        raise LDPInputError("items must be integers, strings or bytes (got booleans)")
    if arr.dtype.kind in "iu":
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise LDPInputError("integer items must fit in a signed 64-bit integer")
        return _int_keys(arr)
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    if arr.dtype.kind not in "OUS":
        raise LDPInputError(f"items must be integers, strings or bytes (got dtype {arr.dtype})")
    if arr.dtype.kind == "U" or (arr.dtype == object and arr.size > 4096 and isinstance(arr[0], str)):
        import polars as pl

        try:
            series = pl.Series(arr, dtype=pl.String, strict=True)
        except Exception:  # mixed types: fall through to the generic path
            series = None
        if series is not None:
            return _polars_item_keys(series)
    try:
        uniq, inv = np.unique(arr, return_inverse=True)
        uniq = uniq.tolist()
    except TypeError:  # mixed item types (e.g. strings and integers): dictionary-encode in Python
        first: dict = {}
        inv = np.fromiter((first.setdefault((type(v) is str, v), len(first)) for v in arr.tolist()), dtype=np.int64, count=arr.size)
        uniq = [v for _, v in first]
    keys = np.empty(len(uniq), dtype=np.uint64)
    for j, u in enumerate(uniq):
        if isinstance(u, str):
            keys[j] = _digest_key(u.encode("utf-8"), b"ldp-plugin-item")
        elif isinstance(u, bytes):
            keys[j] = _digest_key(u, b"ldp-plugin-byte")
        elif isinstance(u, (int, np.integer)) and not isinstance(u, bool):
            if not -(1 << 63) <= int(u) < (1 << 63):
                raise LDPInputError("integer items must fit in a signed 64-bit integer")
            keys[j] = _int_keys(np.array([int(u)], dtype=np.int64))[0]
        else:
            raise LDPInputError(f"items must be integers, strings or bytes (found a {type(u).__name__})")
    return keys[inv.reshape(-1)]


def _is_polars_series(values: Any) -> bool:
    mod = type(values).__module__
    return mod.startswith("polars") and type(values).__name__ == "Series"


def _polars_item_keys(series) -> np.ndarray:
    """Item keys of a Polars Series: integers vectorized, strings/binary once per distinct value."""
    import polars as pl

    dtype = series.dtype
    if series.null_count():
        raise LDPInputError("items must not be null")
    if dtype.is_integer():
        if dtype == pl.UInt64 and series.len() and series.max() > np.iinfo(np.int64).max:
            raise LDPInputError("integer items must fit in a signed 64-bit integer")
        return _int_keys(series.cast(pl.Int64).to_numpy())
    if dtype in (pl.String, pl.Categorical, pl.Enum):
        # dictionary-encode (one hash pass in Rust), then digest each distinct string once
        cat = series.cast(pl.String).cast(pl.Categorical)
        codes = cat.to_physical().to_numpy()
        distinct = cat.unique()
        dcodes = distinct.to_physical().to_numpy()
        labels = distinct.cast(pl.String).to_list()
        lut = np.zeros(int(dcodes.max()) + 1 if dcodes.size else 1, dtype=np.uint64)
        lut[dcodes] = [_digest_key(v.encode("utf-8"), b"ldp-plugin-item") for v in labels]
        return lut[codes]
    if dtype == pl.Binary:
        uniq = series.unique()
        ukeys = np.array([_digest_key(v, b"ldp-plugin-byte") for v in uniq.to_list()], dtype=np.uint64)
        return series.replace_strict(uniq, pl.Series(ukeys, dtype=pl.UInt64), return_dtype=pl.UInt64).to_numpy()
    raise LDPInputError(f"items must be integers, strings or bytes (got Polars dtype {dtype})")


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= 1 << 32:
        raise LDPParameterError(f"hash range k must be an integer in [1, 2**32] (got {k!r})")
    return int(k)


def seed_multipliers(seeds: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` of the multiply-add-shift hash for each 64-bit seed (``a`` odd)."""
    s = np.asarray(seeds, dtype=np.uint64)
    return mix64(s ^ _A_TAG) | np.uint64(1), mix64(s ^ _B_TAG)


def seeded_hash_z(keys: Any, seeds: Any) -> np.ndarray:
    """``z = (a·key + b) mod 2**64`` (broadcasting keys against seeds)."""
    a, b = seed_multipliers(seeds)
    z = np.multiply(np.asarray(keys, dtype=np.uint64), a)
    z += b
    return z


def seeded_hash(keys: Any, seeds: Any, k: int) -> np.ndarray:
    """Hash item keys into ``[0, k)`` with 64-bit seeds (scalar or one per key)."""
    k = _check_k(k)
    z = seeded_hash_z(keys, seeds)
    z >>= _S32
    z *= np.uint64(k)
    z >>= _S32
    return z.view(np.int64)


def hash_interval(y: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, width)`` in 64-bit ``z`` space such that ``seeded_hash == y`` iff ``(z − lo) mod 2**64 < width``."""
    k = _check_k(k)
    if k < 2:
        raise LDPParameterError("hash_interval needs a hash range k >= 2")
    y = np.asarray(y, dtype=np.uint64)
    kk = np.uint64(k)
    # L_y = ceil(y·2**32 / k), computed without overflow: y < k <= 2**32
    lo32 = ((y << _S32) + kk - np.uint64(1)) // kk
    yk = y + np.uint64(1)
    hi32 = np.where(yk >= kk, np.uint64(1 << 32), ((yk << _S32) + kk - np.uint64(1)) // kk)
    return lo32 << _S32, (hi32 - lo32) << _S32


def cohort_seed(hash_seed: int, cohort: int) -> int:
    """The 64-bit hash seed of one cohort."""
    return int(mix64(np.uint64((int(hash_seed) + (int(cohort) + 1) * _GOLDEN) & M64)))


def cohort_seeds(hash_seed: int, n_cohorts: int) -> np.ndarray:
    c = np.arange(1, n_cohorts + 1, dtype=np.uint64)
    return mix64(np.uint64(int(hash_seed) & M64) + c * np.uint64(_GOLDEN))


def assign_cohorts(user_ids: Any, n_cohorts: int, salt: int) -> np.ndarray:
    """Data-independent cohort in ``[0, n_cohorts)`` of each user id (a salted hash of the id)."""
    keys = item_keys(user_ids)
    return seeded_hash(keys, mix64(np.uint64(int(salt) & M64)), n_cohorts)


def seeded_permutation(keys: Any, seed: int) -> np.ndarray:
    """Rank of each key under the seeded hash ``z`` (a permutation of ``range(len(keys))``)."""
    z = seeded_hash_z(keys, np.uint64(int(seed) & M64))
    order = np.argsort(z, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank


def check_seed(seed: Any, name: str = "hash_seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) <= M64:
        raise LDPParameterError(f"{name} must be an integer in [0, 2**64)")
    return int(seed)


def keys_of_items(items: Sequence) -> np.ndarray:
    """Item keys of a closed domain's labels (``range(d)`` codes when there are no labels); a label
    that has no key (a float, a boolean) is refused as a parameter: :class:`LDPParameterError`
    naming ``categories`` (a hashed mechanism checks its labels when it is built)."""
    if isinstance(items, range):
        return item_keys(np.arange(items.start, items.stop))
    try:
        return item_keys(np.asarray(list(items), dtype=object))
    except LDPInputError:
        raise LDPParameterError("categories of a hashed mechanism must be integers, strings or bytes (its items are hashed)") from None
