"""Per-user sets through any categorical mechanism: padding-and-sampling ("sample one item").

(Wang et al., *Locally differentially private protocols for frequency estimation*, 2017 and
LDPMiner, Qin et al. CCS 2016.) A user's set ``X`` of at most ``m`` items is padded to ``m`` with
a dummy item ``PAD``; one of the ``m`` slots is drawn uniformly (an exact uniform integer) and the
item there (or ``PAD``) goes through the categorical mechanism, whose domain gains ``PAD``.

* Privacy: the sampled item is a randomized function of the user's whole set, and the mechanism
  is ε-LDP for *any* two items, so the chain is ε-LDP for any two sets (privacy unit: the whole
  set; the stability of "sample one" under ``discrete_distance`` is ``d_in ↦ d_in``).
* Estimation: ``P(sampled = v) = f_v / m`` where ``f_v`` is the fraction of users whose set holds
  ``v``, so ``f̂_v = m · θ̂_v`` (unbiased when ``θ̂`` is), standard errors times ``m``. Projection
  acts on the padded distribution (items and ``PAD`` sum to one) before scaling.
* Sets longer than ``m``: ``on_long="error"`` (default) refuses them; ``on_long="sample"`` samples
  one of the user's items uniformly (as if the set were first sampled down to ``m``). Privacy is
  unchanged (still one item per user), but then ``f̂`` estimates the frequencies *of the sampled-
  down sets* (an item of a long set counts with weight ``m/|X|``); the estimate records how many
  users were sampled down.
* Duplicates inside a set are an error (a set, not a multiset); empty sets report ``PAD``.
"""

from __future__ import annotations

import itertools

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import LDPInputError

__all__ = ["PAD", "SetBatch", "as_set_batch", "set_codes", "limit_sets", "subsets_up_to", "gather_sets", "is_item_batch"]

#: The dummy item (reserved: a user item equal to it is refused).
PAD = "\x00ldp-plugin:pad\x00"
ON_LONG = ("error", "sample")


@dataclass(frozen=True)
class SetBatch:
    """Per-user sets in CSR form: user ``i`` holds ``values[offsets[i]:offsets[i+1]]``
    (``values`` a numpy array, or a Polars Series for strings, read without Python objects)."""

    values: Any
    offsets: np.ndarray

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def as_set_batch(sets: Any) -> SetBatch:
    """A :class:`SetBatch` from a Polars ``List`` Series (zero-copy buffers), a
    ``(values, offsets)`` pair, or a sequence of sequences."""
    if isinstance(sets, SetBatch):
        return sets
    mod = type(sets).__module__
    if mod.startswith("polars") and type(sets).__name__ == "Series":
        import polars as pl

        if isinstance(sets.dtype, pl.Array):
            sets = sets.cast(pl.List(sets.dtype.inner))
        if not isinstance(sets.dtype, pl.List):
            raise LDPInputError(f"a set column must have a List dtype (got {sets.dtype})")
        if sets.null_count():
            raise LDPInputError("a set column must not contain null sets (use an empty list)")
        lengths = sets.list.len().cast(pl.Int64).to_numpy()
        flat = sets.explode()
        if flat.len() != int(lengths.sum()):  # an empty list explodes to one null: drop exactly those
            if flat.len() != int(np.maximum(lengths, 1).sum()):
                raise LDPInputError("could not read the set column's list buffers")
            flat = flat.filter(pl.Series(np.repeat(lengths > 0, np.maximum(lengths, 1))))
        if flat.null_count():
            raise LDPInputError("sets must not contain null items")
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return SetBatch(flat.to_numpy() if flat.dtype.is_integer() else flat, offsets)
    if isinstance(sets, tuple) and len(sets) == 2 and isinstance(sets[1], np.ndarray):
        values, offsets = np.asarray(sets[0]), np.asarray(sets[1], dtype=np.int64)
        if offsets.ndim != 1 or offsets.size == 0 or offsets[0] != 0 or (np.diff(offsets) < 0).any() or offsets[-1] != len(values):
            raise LDPInputError("offsets must start at 0, be non-decreasing and end at len(values)")
        return SetBatch(values, offsets)
    if sets is None or isinstance(sets, (str, bytes, dict)) or not hasattr(sets, "__iter__"):
        raise LDPInputError(f"sets must be a sequence with one set (a list of items) per user (got {type(sets).__name__})")
    rows = list(sets)
    bad = next((i for i, r in enumerate(rows) if r is None or isinstance(r, (str, bytes, dict)) or not hasattr(r, "__len__")), None)
    if bad is not None:
        raise LDPInputError(f"user {bad}'s set must be a list of items (an empty set is []); got {type(rows[bad]).__name__}")
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = [v for r in rows for v in r]
    arr = np.asarray(flat) if flat and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in flat) else np.asarray(flat, dtype=object)
    return SetBatch(arr, offsets)


def subsets_up_to(d: int, m: int) -> list:
    """All sets of 0..``m`` items of ``range(d)``, as sorted tuples (smallest first): the inputs
    of an enumerated set-valued channel."""
    return [c for k in range(m + 1) for c in itertools.combinations(range(d), k)]


def gather_sets(sets: list, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sets ``sets[codes[i]]`` as CSR ``(flat, offsets, lengths)`` (int64), vectorized over
    ``codes``: the candidate sets are laid out once and gathered by index."""
    lens = np.fromiter((len(c) for c in sets), dtype=np.int64, count=len(sets))
    starts = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    pool = np.fromiter((v for c in sets for v in c), dtype=np.int64, count=int(starts[-1]))
    codes = np.asarray(codes, dtype=np.int64)
    lengths = lens[codes]
    offsets = np.zeros(codes.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    idx = np.repeat(starts[codes] - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
    return pool[idx], offsets, lengths


def _pl():
    import polars as pl

    return pl


def _is_series(values: Any) -> bool:
    return type(values).__module__.startswith("polars") and type(values).__name__ == "Series"


def encode_items(values: Any, mechanism: Any) -> np.ndarray:
    """Codes of a closed-domain mechanism's items (numpy or Polars), errors by position only."""
    return mechanism.encode(values)


def _check_duplicates(batch: SetBatch, keys: np.ndarray) -> None:
    n = len(batch)
    if keys.size == 0:
        return
    lengths = batch.lengths
    width = int(lengths.max())
    if width <= 1:
        return
    if width <= 64 and n * width <= 1 << 26:
        # small sets: a padded (n, width) matrix sorted along rows; padding slots hold distinct
        # sentinels that cannot collide with each other (only with a real key, harmlessly rare:
        # then the lexsort path below decides)
        grid = np.empty((n, width), dtype=np.int64)
        grid[:] = np.iinfo(np.int64).min + np.arange(width)
        row = np.repeat(np.arange(n), lengths)
        col = np.arange(keys.size) - np.repeat(batch.offsets[:-1], lengths)
        grid[row, col] = keys
        grid.sort(axis=1)
        if not (grid[:, 1:] == grid[:, :-1]).any():
            return
    user = np.repeat(np.arange(n), batch.lengths)
    order = np.lexsort((keys, user))
    dup = (user[order][1:] == user[order][:-1]) & (keys[order][1:] == keys[order][:-1])
    if dup.any():
        raise LDPInputError(f"sets must not repeat an item (user at position {int(user[order][1:][dup][0])})")


def set_codes(sets: Any, mechanism: Any) -> tuple[np.ndarray, np.ndarray]:
    """Item codes and CSR offsets for a set mechanism: a batch of sets (lists, CSR, a Polars List
    column) or of single items (a 1-d array / Series of values: sets of one). Duplicates inside a
    set are an error."""
    scalar = is_item_batch(sets)
    if scalar:
        codes = encode_items(sets if _is_series(sets) else np.asarray(sets), mechanism)
        return codes, np.arange(codes.size + 1, dtype=np.int64)
    batch = as_set_batch([list(x) for x in sets] if isinstance(sets, (list, tuple)) and sets and isinstance(sets[0], (set, frozenset)) else sets)
    codes = encode_items(batch.values, mechanism) if len(batch.values) else np.empty(0, dtype=np.int64)
    _check_duplicates(batch, codes.astype(np.int64))
    return codes, batch.offsets


def limit_sets(codes: np.ndarray, offsets: np.ndarray, m: int, on_long: str, source) -> tuple:
    """Sets longer than ``m``: an error (``on_long="error"``) or a uniform sample of ``m`` of their
    items (``"sample"``, exact partial Fisher–Yates). Returns ``(codes, offsets, lengths)``."""
    lengths = np.diff(offsets)
    long = lengths > m
    if not long.any():
        return codes, offsets, lengths
    if on_long == "error":
        raise LDPInputError(
            f"{int(long.sum())} set(s) have more than m={m} items (first at position {int(np.flatnonzero(long)[0])}); "
            "raise m or pass on_long='sample'"
        )
    keep = np.ones(codes.size, dtype=bool)
    for L in np.unique(lengths[long]):  # per distinct long length, vectorized over its users
        users = np.flatnonzero(lengths == L)
        picks = source.partial_shuffle_prefix(users.size, int(L), m).astype(np.int64)
        drop = np.ones((users.size, int(L)), dtype=bool)
        drop[np.arange(users.size)[:, None], picks] = False
        keep[(offsets[users][:, None] + np.arange(int(L))[None, :])[drop]] = False
    new_len = np.minimum(lengths, m)
    new_off = np.zeros(new_len.size + 1, dtype=np.int64)
    np.cumsum(new_len, out=new_off[1:])
    return codes[keep], new_off, new_len


def is_item_batch(values: Any) -> bool:
    """True for a 1-d batch of single items (each user holds one item: a set of one), False for a
    batch of sets. A plain string is one item, never a set of characters."""
    if isinstance(values, SetBatch) or (isinstance(values, tuple) and len(values) == 2 and isinstance(values[1], np.ndarray)):
        return False
    if _is_series(values):
        return not isinstance(values.dtype, (_pl().List, _pl().Array))
    if isinstance(values, np.ndarray):
        return values.ndim == 1 and not (values.dtype == object and values.size and isinstance(values[0], (list, tuple, set, frozenset, np.ndarray)))
    if isinstance(values, (list, tuple)):
        return len(values) > 0 and not isinstance(values[0], (list, tuple, set, frozenset, np.ndarray))
    return False
