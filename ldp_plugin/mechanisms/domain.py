"""The domain of a closed-alphabet mechanism: parameter checks (ε, d, categories) and the one
vectorized encoding of user values into item codes (numpy arrays, lists, Polars Series:
dictionary encoding, errors by position, never by value)."""

from __future__ import annotations

import collections.abc
import functools
import math
from typing import Any, Optional, Sequence

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..sampling.row_lookup import fixed_width_codes, list_codes, text_kind

__all__ = ["MAX_D", "MIN_EPSILON", "MAX_EPSILON", "check_epsilon", "check_domain", "check_labels", "encode_values", "real_numbers",
           "check_codes", "check_offsets"]

MAX_D = 1 << 31
#: the usable range of a per-user ε: above ``MAX_EPSILON`` ``e**ε`` is not a finite float (and a
#: report is the value itself); below ``MIN_EPSILON`` the 64-bit thresholds of the exact samplers
#: cannot separate the probabilities (and no realistic population could see a signal)
MIN_EPSILON = 1e-6
MAX_EPSILON = 700.0


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """A finite float in ``[MIN_EPSILON, MAX_EPSILON]``, or :class:`LDPParameterError` naming the
    parameter and the usable range."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.integer, np.floating)):
        raise LDPParameterError(f"{name} must be a real number > 0 (got type {type(epsilon).__name__})")
    eps = float(epsilon)
    if not math.isfinite(eps) or eps <= 0:
        raise LDPParameterError(f"{name} must be a finite number > 0 (got {eps!r}); the usable range is [{MIN_EPSILON:g}, {MAX_EPSILON:g}]")
    if eps < MIN_EPSILON:
        raise LDPParameterError(
            f"{name}={eps!r} is too small: the smallest usable {name} is {MIN_EPSILON:g} (64-bit thresholds cannot "
            f"separate the report probabilities below it); the usable range is [{MIN_EPSILON:g}, {MAX_EPSILON:g}]"
        )
    if eps > MAX_EPSILON:
        raise LDPParameterError(
            f"{name}={eps!r} is too large: the largest usable {name} is {MAX_EPSILON:g} (e**{name} must be a finite "
            f"float; such a report is the value itself); the usable range is [{MIN_EPSILON:g}, {MAX_EPSILON:g}]"
        )
    return eps


def check_domain(d: Any, categories: Optional[Sequence]) -> tuple[int, Optional[tuple]]:
    """Validate the domain: ``d`` in ``[2, 2**31]`` and/or unique, hashable ``categories``."""
    if categories is not None:
        cats = check_labels(categories, "categories")
        if d is not None and (isinstance(d, bool) or not isinstance(d, (int, np.integer))):
            raise LDPParameterError(f"d must be an integer in [2, 2**31] (got type {type(d).__name__})")
        if d is not None and int(d) != len(cats):
            raise LDPParameterError(f"d must equal len(categories) (d={d}, len(categories)={len(cats)})")
        d = len(cats)
    else:
        cats = None
    if d is None:
        raise LDPParameterError("give the domain size d or the categories")
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise LDPParameterError(f"d must be an integer in [2, 2**31] (got type {type(d).__name__})")
    d = int(d)
    if not 2 <= d <= MAX_D:
        raise LDPParameterError(f"d must be an integer in [2, 2**31] (got {d})")
    return d, cats


def _label_kind(c: Any) -> str:
    if isinstance(c, (bool, np.bool_)):
        return "bool"
    if isinstance(c, (int, np.integer)):
        return "int"
    if isinstance(c, (float, np.floating)):
        return "float"
    if isinstance(c, str):
        return "str"
    return type(c).__name__


def check_labels(labels: Any, name: str = "categories") -> tuple:
    """An ordered tuple of unique labels of one type, or :class:`LDPParameterError` naming
    ``name`` and the position (never the label): a ``set``/``frozenset``/dict or dict view is
    refused (its order follows per-process string hashing, so a client process and a server
    process would decode different labels), and so are ``None``, NaN, mixed types (``1`` and
    ``"1"``, ``1`` and ``1.0``) and duplicates."""
    if isinstance(labels, (str, bytes)):
        raise LDPParameterError(f"{name} must be a sequence of labels, not a single string")
    if isinstance(labels, (collections.abc.Set, collections.abc.Mapping, collections.abc.MappingView)):
        raise LDPParameterError(
            f"{name} must be an ordered sequence (a list or tuple), not a {type(labels).__name__}: "
            "its order is not the same in every process; pass sorted(...) or a list"
        )
    if hasattr(labels, "to_list") and not isinstance(labels, np.ndarray):
        labels = labels.to_list()
    elif isinstance(labels, np.ndarray):
        if labels.ndim != 1:
            raise LDPParameterError(f"{name} must be a 1-d sequence of labels")
        labels = labels.tolist()
    try:
        cats = tuple(labels)
    except TypeError:
        raise LDPParameterError(f"{name} must be a sequence of labels (got type {type(labels).__name__})") from None
    if len(cats) == 0:
        raise LDPParameterError(f"{name} must not be empty")
    kinds = set()
    for i, c in enumerate(cats):
        if c is None:
            raise LDPParameterError(f"{name} must not contain None (at position {i})")
        if isinstance(c, (float, np.floating)) and not math.isfinite(float(c)):
            raise LDPParameterError(f"{name} must not contain NaN or infinite labels (at position {i})")
        kinds.add(_label_kind(c))
    if len(kinds) > 1:
        raise LDPParameterError(f"{name} must all have one type (got {', '.join(sorted(kinds))})")
    try:
        distinct = len(set(cats))
    except TypeError:
        raise LDPParameterError(f"{name} must be hashable labels") from None
    if distinct != len(cats):
        raise LDPParameterError(f"{name} must be unique ({len(cats) - distinct} duplicate(s) found)")
    return cats


def encode_values(values: Any, d: int, categories: Optional[tuple], index: Optional[dict]) -> np.ndarray:
    """Validate a batch of user values against a closed domain and return ``int64`` codes.

    Without ``categories`` values must be integer codes in ``[0, d)``; with them, labels. Errors
    give the position of the first bad value, never the value. Text labels (``str`` or ``bytes``
    categories) in a numpy ``U``/``S`` array, a list, tuple or object array take the exact hashed
    lookups of :mod:`~ldp_plugin.sampling.row_lookup` (no Python object per value for arrays);
    Polars Series their dictionary or Enum cast; other labels a sort of the distinct values.
    """
    if _is_polars_series(values):
        return _encode_series(values, d, categories)
    if categories is not None and index is not None:
        got = _text_codes(values, categories)
        if got is not None:
            codes, bad = got
            if bad >= 0:
                raise LDPInputError(f"values contains an item that is not one of the declared categories (at position {bad})")
            return codes
    arr = _as_array(values)
    if index is None:
        if arr.size == 0:  # no user: ``[]`` reads as float64 in numpy, and holds no value to check
            return np.empty(0, dtype=np.int64)
        if arr.dtype == object and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in arr.tolist()):
            arr = arr.astype(np.int64) if arr.size else np.empty(0, dtype=np.int64)
        if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
            raise LDPInputError(
                f"values must be integer codes in [0, {d}) (got dtype {arr.dtype}); "
                "pass categories= to randomize labels"
            )
        if arr.size:
            bad = (arr < 0) | (arr >= d)
            if bad.any():
                pos = int(np.flatnonzero(bad)[0])
                raise LDPInputError(f"values must be integer codes in [0, {d}): the value at position {pos} is out of range")
        return arr.astype(np.int64, copy=False)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    try:
        uniq, inv = np.unique(arr, return_inverse=True)
    except TypeError:
        raise LDPInputError("values must be labels of one comparable type") from None
    codes_u = np.empty(uniq.size, dtype=np.int64)
    for j, u in enumerate(uniq.tolist()):
        code = index.get(u)
        if code is None or (isinstance(u, bool) != isinstance(categories[code], bool)):
            pos = int(np.flatnonzero(inv == j)[0])
            raise LDPInputError(f"values contains an item that is not one of the declared categories (at position {pos})")
        codes_u[j] = code
    return codes_u[inv.reshape(-1)]


def _text_codes(values: Any, categories: tuple) -> Optional[tuple]:
    """``(codes, first bad position or -1)`` of text values against ``str`` or ``bytes``
    categories through the exact vectorized lookups of :mod:`~ldp_plugin.sampling.row_lookup`
    (a 1-d ``U``/``S`` array read in place; a list, tuple or object array in one compiled pass
    over the objects, else a dictionary pass; bytes values against ``str`` categories read as
    UTF-8), or None for values those lookups do not take (the general path below)."""
    kind = text_kind(categories)
    if kind is None:
        return None
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            return None
        if (values.dtype.kind == "S" or (values.dtype.kind == "U" and kind is str)) and values.dtype.itemsize:
            return fixed_width_codes(values, categories)
        if values.dtype == object:
            return list_codes(values, categories)
        return None
    if isinstance(values, (list, tuple)):
        return list_codes(values, categories)
    return None


def _is_polars_series(values: Any) -> bool:
    return type(values).__module__.startswith("polars") and type(values).__name__ == "Series"


@functools.lru_cache(maxsize=256)
def _all_str(categories: tuple) -> bool:
    return all(isinstance(c, str) for c in categories)


def _encode_series(values: Any, d: int, categories: Optional[tuple]) -> np.ndarray:
    """Vectorized dictionary encoding of a Polars Series (String, Categorical, Enum, integer)."""
    import polars as pl

    if values.null_count():
        pos = int(values.is_null().arg_true()[0])
        raise LDPInputError(f"values has a null at position {pos}")
    if categories is None:
        if not values.dtype.is_integer():
            raise LDPInputError(f"values must be integer codes in [0, {d}) (got Polars dtype {values.dtype}); pass categories= to randomize labels")
        return encode_values(values.to_numpy(), d, None, None)
    cats = list(categories)
    if isinstance(values.dtype, (pl.Categorical, pl.Enum)):
        return _encode_dictionary(values, categories)
    if values.dtype == pl.String and _all_str(categories):
        # one hashed cast in Polars (an Enum's index is the code; labels compared byte for byte);
        # an unknown label fails the cast, and the path below names its position
        try:
            return values.cast(_enum_of(categories)).to_physical().to_numpy().astype(np.int64)
        except Exception:
            pass
    try:
        codes = values.replace_strict(cats, list(range(len(cats))), default=None, return_dtype=pl.Int64)
    except Exception:
        raise LDPInputError("values must have the dtype of the declared categories") from None
    if codes.null_count():
        pos = int(codes.is_null().arg_true()[0])
        raise LDPInputError(f"values contains an item that is not one of the declared categories (at position {pos})")
    return codes.to_numpy()


@functools.lru_cache(maxsize=64)
def _enum_of(categories: tuple):
    """The Polars ``Enum`` of string ``categories`` (its physical index is the item code)."""
    import polars as pl

    return pl.Enum(list(categories))


def _encode_dictionary(values: Any, categories: tuple) -> np.ndarray:
    """Codes of a (null-free) Categorical or Enum Series through its physical codes: only its
    dictionary is matched against the mechanism's categories, and the rows are one array lookup,
    never a pass over strings.

    * Enum: its (few) categories are matched against the mechanism's labels.
    * Categorical with string labels: each of the mechanism's ``d`` labels is looked up in the
      column's category mapping (``dtype.categories[label]``: a label the mapping does not hold
      cannot occur in any row), giving a table from physical id to code in ``O(d)`` — however
      large the process-wide mapping is. Rows are gathered through the table (``np.take``, ids past
      its end clipped onto a ``-1`` sentinel); a ``-1`` is a label outside the categories.
    * Otherwise (labels that are not strings, a Polars without the mapping API): the distinct
      values present (``unique``, hashed on the physical codes) are matched.

    Exact: a row's code is the code of its label or the row is refused; labels are compared as
    strings by Polars (``"a\\x00"`` and ``"a"`` stay two labels)."""
    import polars as pl

    phys = values.to_physical().to_numpy()
    dtype = values.dtype
    table = None
    if isinstance(dtype, pl.Enum):
        labels = dtype.categories
        try:
            mapped = labels.replace_strict(list(categories), list(range(len(categories))), default=None, return_dtype=pl.Int64)
        except Exception:
            raise LDPInputError("values must have the dtype of the declared categories") from None
        table = mapped.fill_null(-1).to_numpy()
    elif _all_str(categories):
        table = _categorical_table(dtype, categories)
    if table is not None:
        lut = np.empty(table.size + 1, dtype=np.int64)
        lut[:-1] = table
        lut[-1] = -1
        codes = np.take(lut, phys, mode="clip")  # an id past the table is no category: the sentinel
        if codes.size and int(codes.min()) < 0:
            raise LDPInputError(f"values contains an item that is not one of the declared categories (at position {int(np.argmax(codes < 0))})")
        return codes
    distinct = values.unique()  # the ids present only (a global dictionary may be large)
    labels = distinct.cast(pl.String)
    ids = distinct.to_physical().to_numpy().astype(np.int64)
    try:
        mapped = labels.replace_strict(list(categories), list(range(len(categories))), default=None, return_dtype=pl.Int64)
    except Exception:
        raise LDPInputError("values must have the dtype of the declared categories") from None
    code_of = mapped.fill_null(-1).to_numpy()
    order = np.argsort(ids)
    codes = code_of[order][np.searchsorted(ids[order], phys)]
    if (code_of < 0).any():
        bad = np.flatnonzero(codes < 0)
        if bad.size:
            raise LDPInputError(f"values contains an item that is not one of the declared categories (at position {int(bad[0])})")
    return codes


#: a Categorical's physical ids index a mapping shared by the process; the table from id to code
#: is built when the mechanism's labels sit among the first ``_TABLE_IDS`` ids (else: ``unique``)
_TABLE_IDS = 1 << 24


def _categorical_table(dtype: Any, categories: tuple) -> Optional[np.ndarray]:
    """``table[id]`` = the code of the label with physical id ``id`` (``-1``: no category), from
    the column's category mapping, or None when the mapping cannot be read that way."""
    mapping = getattr(dtype, "categories", None)
    if mapping is None or not hasattr(mapping, "__getitem__"):
        return None
    ids = np.full(len(categories), -1, dtype=np.int64)
    try:
        for code, label in enumerate(categories):
            try:
                got = mapping[label]  # Polars ≥ 2: KeyError when absent; 1.3x: None
            except KeyError:
                got = None
            if got is not None:
                ids[code] = int(got)
    except Exception:  # an unexpected mapping API: the general path
        return None
    present = ids >= 0
    top = int(ids.max()) + 1 if present.any() else 0
    if top > _TABLE_IDS:
        return None
    table = np.full(top, -1, dtype=np.int64)
    table[ids[present]] = np.flatnonzero(present)
    return table


def _as_array(values: Any) -> np.ndarray:
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.dtype.kind in "US" and arr.ndim == 1 and isinstance(values, (list, tuple)):
        arr = np.empty(len(values), dtype=object)  # numpy's fixed-width strings drop trailing NULs: keep the labels as given
        arr[:] = values
    if arr.ndim != 1:
        raise LDPInputError(f"values must be a 1-d batch (got an array with {arr.ndim} dimensions)")
    return arr


@functools.lru_cache(maxsize=256)
def _category_index(categories: tuple) -> dict:
    return {c: i for i, c in enumerate(categories)}


def check_user_keys(user_keys: Sequence, n: int) -> list:
    """One secret key (16 to 64 bytes) per value, or :class:`LDPInputError` naming the position
    (never the key): the memoized clients (``Memoized``, the longitudinal protocols, 1BitMean)."""
    keys = list(user_keys)
    if len(keys) != n:
        raise LDPInputError(f"user_keys must have one key per value ({n})")
    if not keys or (set(map(type, keys)) <= {bytes, bytearray} and 16 <= min(map(len, keys)) and max(map(len, keys)) <= 64):
        return keys  # every key valid (checked without a Python loop); otherwise find the first invalid one
    for i, k in enumerate(keys):
        if not isinstance(k, (bytes, bytearray)) or not 16 <= len(k) <= 64:
            raise LDPInputError(f"user keys must be 16 to 64 secret bytes (the key at position {i} is not)")
    return keys


def real_numbers(values: Any) -> np.ndarray:
    """A 1-d float64 batch of real numbers, or :class:`LDPInputError` (strings — even numeric
    ones —, booleans and nested batches are refused, not converted; never echoes a value)."""
    try:
        arr = np.asarray(values, dtype=object) if isinstance(values, (list, tuple)) else np.asarray(values)
    except ValueError:
        raise LDPInputError("values must be a 1-d batch of real numbers (got a nested batch)") from None
    if arr.ndim > 1:
        raise LDPInputError(f"values must be a 1-d batch of real numbers (got an array with {arr.ndim} dimensions)")
    if arr.dtype == object:
        for i, v in enumerate(arr.reshape(-1).tolist()):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))):
                raise LDPInputError(f"values must be real numbers (the value at position {i} has type {type(v).__name__})")
        arr = np.array([np.nan if v is None else v for v in arr.reshape(-1).tolist()], dtype=np.float64)
    elif arr.dtype.kind not in "iuf":
        raise LDPInputError(f"values must be real numbers (got dtype {arr.dtype}); convert strings or booleans first")
    return arr.astype(np.float64, copy=False).ravel()


def check_codes(codes: Any, size: int, what: str = "item codes", *, ndim: int = 1) -> np.ndarray:
    """Already encoded values (``randomize_encoded``'s input): an integer array of ``ndim``
    dimensions with every entry in ``[0, size)``, as ``int64``; anything else is refused with
    :class:`LDPInputError` naming the position, never the value (a float is never truncated, a
    code past the domain never reaches a sampler)."""
    arr = np.asarray(codes)
    if arr.ndim != ndim:
        raise LDPInputError(f"encoded {what} must be a {ndim}-d integer array (got an array with {arr.ndim} dimensions)")
    if arr.size and (arr.dtype.kind not in "iu" or arr.dtype == np.bool_):
        raise LDPInputError(f"encoded {what} must be integers in [0, {size}) (got dtype {arr.dtype})")
    out = arr.astype(np.int64, copy=False)  # a uint64 past 2**63 wraps negative here: still refused below
    # one reduction, no temporary: read as unsigned, a negative code is past every size
    if out.size and int(out.view(np.uint64).max()) >= size:
        bad = (out < 0) | (out >= size)
        raise LDPInputError(f"encoded {what} must be integers in [0, {size}): the one at position {int(np.flatnonzero(bad.reshape(-1))[0])} is not")
    return out


def check_offsets(offsets: Any, n_codes: int) -> np.ndarray:
    """CSR offsets of a batch of sets over ``n_codes`` item codes: a 1-d integer array starting at 0,
    ending at ``n_codes``, never decreasing (else :class:`LDPInputError`)."""
    arr = np.asarray(offsets)
    if arr.ndim != 1 or arr.size == 0 or (arr.dtype.kind not in "iu" or arr.dtype == np.bool_):
        raise LDPInputError("offsets must be a non-empty 1-d integer array (CSR offsets of the sets)")
    arr = arr.astype(np.int64, copy=False)
    if int(arr[0]) != 0 or int(arr[-1]) != n_codes or (arr.size > 1 and bool((np.diff(arr) < 0).any())):
        raise LDPInputError(f"offsets must start at 0, never decrease and end at the number of item codes ({n_codes})")
    return arr
