"""The device's rule for a value outside a query's domain, fixed before any value is read.

A query names its domain (categories or ``d``, a range, ``m``, attribute domains); the device's
values were collected without it. So that a device's answer depends on its value only through the
mechanism, :func:`in_domain` maps every device's value into the query's domain by one rule — the
same for every device and every query, written here, never an error and never a refusal:

* **a category** (``input_kind == "value"``) the mechanism cannot encode (not one of the query's
  categories, a code outside ``[0, d)``, NaN, None, a value of another type or script) becomes a
  uniformly random item of the domain (``[0, d)``, exact: Lemire's method on the OS CSPRNG; an
  open alphabet: a uniformly random 64-bit item key);
* **a number** (``"number"``) is clipped to ``[lower, upper]`` (±∞ and integers too large for a
  float included); NaN, None, a boolean or a non-number becomes a uniformly random point of
  ``[lower, upper]``;
* **a set** (``"set"``) keeps the items the mechanism can encode, once each (the first
  occurrence); a value that is not a list, tuple, set or array is the empty set; a set still
  longer than ``m`` becomes a uniform sample of ``m`` of its items (exact partial Fisher–Yates,
  :func:`ldp_plugin.mechanisms.sets.limit_sets`);
* **a tuple of attributes** (``"tuple"``): an attribute that is not an integer code of its domain
  becomes a uniformly random code of it; a value that is not a sequence of the right length
  becomes a tuple of random codes;
* **key–value pairs** (``"key-value"``): a pair whose key is not an integer of ``[0, d)``, or whose
  key already appeared, is dropped; a value is clipped to ``[−1, 1]``, and NaN or a non-number
  becomes a uniformly random point of ``[−1, 1]``; a value that is not a list of pairs is the
  empty set.

**Privacy.** The rule replaces the device's input ``x`` by a random input ``Z ~ R(· | x)`` drawn
independently of the mechanism's own randomness, with ``R(· | x) = δ_x`` for every in-domain
``x``. A report's law is then ``P(y | x) = Σ_z R(z | x) Q(y | z)``, a mixture of rows of the
mechanism's channel ``Q``, so for any two values ``P(y | x) / P(y | x') <= max_{z, z'} Q(y | z) /
Q(y | z') <= e^ε``: the answer is ε-LDP with the same charge, and its law is a mixture of the
mechanism's ε-LDP channels whatever the device holds. For a keyed series the transcript's law is
a mixture, over unit sequences, of the per-sequence laws, each within the lifetime bound (which
assumes nothing about the units a history uses; :mod:`ldp_plugin.mechanisms.lifetime`).

The rule reads the values only to apply itself: how many values it replaced is never counted,
logged or sent. The call never raises on a value; the arrays it returns are in the domain, so
:meth:`DomainInputs.randomize` hands the mechanism only inputs it accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..mechanisms.key_value import KeyValueBatch
from ..mechanisms.sets import limit_sets
from ..sampling import as_source

__all__ = ["DomainInputs", "in_domain"]

_CONTAINERS = (list, tuple, set, frozenset, np.ndarray)


@dataclass(frozen=True)
class DomainInputs:
    """In-domain inputs of a batch of devices, ready for the mechanism (see the module docstring)."""

    kind: str
    data: Any

    def randomize(self, mech: Any, *, user_keys: Optional[Sequence[bytes]] = None, rng: Any = None) -> Any:
        """The reports (OS CSPRNG unless ``rng``); ``user_keys`` for a keyed mechanism."""
        if self.kind == "value":
            if user_keys is not None:
                return mech.randomize_encoded(self.data, user_keys=user_keys, rng=rng)
            return mech.randomize_encoded(self.data, rng=rng)
        return mech.randomize(self.data, rng=rng)


def _encodes(mech: Any, value: Any) -> Any:
    """The code of one value (``None`` if the mechanism refuses it, whatever it raises)."""
    try:
        enc = mech.encode(np.asarray([value], dtype=object))
        if isinstance(enc, tuple):  # a set wrapper: (codes, offsets) of a batch of one set of one
            enc = enc[0]
        arr = np.asarray(enc).reshape(-1)
        return arr[0] if arr.size == 1 else None
    except Exception:  # noqa: BLE001 - any refusal of one value is "outside the domain"
        return None


def _uniform_codes(mech: Any, size: int, source: Any, dtype: Any) -> np.ndarray:
    if size == 0:
        return np.empty(0, dtype=dtype)
    if not mech.closed:  # an open alphabet: a uniformly random 64-bit item key
        return source.words(size).astype(np.uint64)
    return source.uniform_int(int(mech.domain_size), size).astype(dtype)


def _uniform_points(lower: float, upper: float, size: int, source: Any) -> np.ndarray:
    u = source.words(size).astype(np.float64) / 2.0**64
    return np.clip(lower + (upper - lower) * u, lower, upper)


def _number(v: Any) -> float:
    """A value as a float (clipping happens later); NaN for anything that is not a number."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return math.nan
    try:
        return float(v)
    except OverflowError:  # an integer beyond the float range
        return math.inf if v > 0 else -math.inf


def _values(mech: Any, values: Any, source: Any) -> np.ndarray:
    n = len(values)
    try:
        codes = np.asarray(mech.encode(values))
        if codes.shape == (n,) and codes.dtype.kind in "iu":
            return codes
    except Exception:  # noqa: BLE001 - some value is outside the domain: the per-value rule below
        pass
    found = [_encodes(mech, v) for v in values]
    dtype = np.int64 if mech.closed else np.uint64  # an open alphabet's items are 64-bit keys
    out = np.empty(n, dtype=dtype)
    bad = np.array([c is None for c in found], dtype=bool)
    for i, c in enumerate(found):
        if c is not None:
            out[i] = c
    out[bad] = _uniform_codes(mech, int(bad.sum()), source, dtype)
    return out


def _numbers(lower: float, upper: float, values: Any, source: Any) -> np.ndarray:
    arr = np.asarray(values) if isinstance(values, np.ndarray) else None
    if arr is not None and arr.ndim == 1 and arr.dtype.kind in "iuf" and arr.dtype != np.bool_:
        x = arr.astype(np.float64)
    else:
        x = np.array([_number(v) for v in values], dtype=np.float64)
    nan = np.isnan(x)
    x[nan] = _uniform_points(lower, upper, int(nan.sum()), source)
    return np.clip(x, lower, upper)


def _sets(mech: Any, values: Any, source: Any) -> list:
    cache: dict = {}
    kept: list = []
    for v in values:
        items: list = []
        seen: set = set()
        if isinstance(v, _CONTAINERS) and not (isinstance(v, np.ndarray) and v.ndim != 1):
            for item in (v.tolist() if isinstance(v, np.ndarray) else v):
                try:
                    code = cache[item] if item in cache else cache.setdefault(item, _encodes(mech, item))
                except TypeError:  # unhashable: not an item
                    code = None
                if code is not None and int(code) not in seen:
                    seen.add(int(code))
                    items.append(item)
        kept.append(items)
    lengths = np.array([len(s) for s in kept], dtype=np.int64)
    offsets = np.zeros(len(kept) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    m = int(mech.m)
    if (lengths > m).any():
        flat = np.arange(int(offsets[-1]), dtype=np.int64)
        picked, new_off, _ = limit_sets(flat, offsets, m, "sample", source)
        items = [x for s in kept for x in s]
        kept = [[items[j] for j in picked[new_off[i]:new_off[i + 1]].tolist()] for i in range(len(kept))]
    return kept


def _tuples(domains: tuple, values: Any, source: Any) -> np.ndarray:
    A = len(domains)
    out = np.empty((len(values), A), dtype=np.int64)
    bad = np.zeros((len(values), A), dtype=bool)
    for i, v in enumerate(values):
        seq = v.tolist() if isinstance(v, np.ndarray) and v.ndim == 1 else v
        if not isinstance(seq, (list, tuple)) or len(seq) != A:
            bad[i] = True
            continue
        for j, c in enumerate(seq):
            ok = isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) and 0 <= int(c) < domains[j]
            if ok:
                out[i, j] = int(c)
            else:
                bad[i, j] = True
    for j, k in enumerate(domains):
        out[bad[:, j], j] = source.uniform_int(int(k), int(bad[:, j].sum()))
    return out


def _pairs(d: int, values: Any, source: Any) -> KeyValueBatch:
    keys: list = []
    vals: list = []
    offsets = [0]
    for v in values:
        seen: set = set()
        if isinstance(v, (list, tuple)):
            for pair in v:
                if not isinstance(pair, (list, tuple, np.ndarray)) or len(pair) != 2:
                    continue
                k, x = pair[0], pair[1]
                if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or not 0 <= int(k) < d or int(k) in seen:
                    continue
                seen.add(int(k))
                keys.append(int(k))
                vals.append(_number(x))
        offsets.append(len(keys))
    x = np.array(vals, dtype=np.float64)
    nan = np.isnan(x)
    x[nan] = _uniform_points(-1.0, 1.0, int(nan.sum()), source)
    return KeyValueBatch(np.array(keys, dtype=np.int64), np.clip(x, -1.0, 1.0), np.array(offsets, dtype=np.int64))


def in_domain(mech: Any, values: Any, *, rng: Any = None) -> DomainInputs:
    """The devices' ``values`` mapped into ``mech``'s domain by the module's rule (never raises on
    a value; fallbacks drawn from the OS CSPRNG unless ``rng``)."""
    source = as_source(rng)
    values = list(values) if not isinstance(values, np.ndarray) else values
    kind = mech.input_kind
    if kind == "value":
        return DomainInputs(kind, _values(mech, values, source))
    if kind == "number":
        return DomainInputs(kind, _numbers(float(mech.lower), float(mech.upper), values, source))
    if kind == "set":
        return DomainInputs(kind, _sets(mech, values, source))
    if kind == "tuple":
        return DomainInputs(kind, _tuples(tuple(int(k) for k in mech.domains), values, source))
    if kind == "key-value":
        return DomainInputs(kind, _pairs(int(mech.d), values, source))
    raise ValueError("unknown input kind")  # every registered kind is handled above
