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

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ._errors import LDPInputError, LDPParameterError
from .estimation import FrequencyEstimate, finalize_estimate, project_simplex
from .hashing import item_keys
from .sampling import RNGLike, as_source

__all__ = ["PAD", "SetBatch", "as_set_batch", "SampleOne", "set_codes", "limit_sets", "subsets_up_to", "gather_sets"]

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
    rows = list(sets)
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
    if not _is_series(values):
        return mechanism.encode(values)
    pl = _pl()
    if mechanism.categories is None:
        if not values.dtype.is_integer():
            raise LDPInputError(f"values must be integer codes in [0, {mechanism.d}) (got Polars dtype {values.dtype})")
        return mechanism.encode(values.to_numpy())
    cats = list(mechanism.categories)
    try:
        codes = values.replace_strict(cats, list(range(len(cats))), default=None, return_dtype=pl.Int64)
    except Exception:
        raise LDPInputError("values must have the dtype of the declared categories") from None
    if codes.null_count():
        pos = int(codes.is_null().arg_true()[0])
        raise LDPInputError(f"values contains an item that is not one of the declared categories (at position {pos})")
    return codes.to_numpy()


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


@dataclass(frozen=True, kw_only=True)
class SampleOne:
    """Padding-and-sampling in front of a categorical mechanism: ε-LDP per user for sets of at
    most ``m`` items (the privacy unit is the whole set).

    >>> import ldp_plugin as ldp
    >>> s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=2.0, categories=["a", "b", "c"]), m=2)
    >>> r = s.randomize([["a", "b"], ["c"], []], rng=0)
    >>> s.estimate(r).items
    ('a', 'b', 'c')
    """

    mechanism: Any
    m: int
    on_long: str = "error"
    padded: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        m = self.m
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= int(m) <= 1 << 20:
            raise LDPParameterError(f"m (the maximum set size) must be an integer in [1, 2**20] (got {m!r})")
        object.__setattr__(self, "m", int(m))
        if self.on_long not in ON_LONG:
            raise LDPParameterError(f"on_long must be one of {ON_LONG} (got {self.on_long!r})")
        mech = self.mechanism
        if getattr(mech, "closed", True) is False:
            padded = mech  # open alphabet: PAD is one more string
        elif mech.categories is not None:
            if PAD in mech.categories:
                raise LDPParameterError("the categories already contain the reserved PAD item")
            padded = dataclasses.replace(mech, categories=(*mech.categories, PAD), d=None)
        else:
            padded = dataclasses.replace(mech, d=mech.d + 1)  # code d is PAD
        object.__setattr__(self, "padded", padded)

    @property
    def epsilon(self) -> float:
        return self.padded.epsilon

    @property
    def name(self) -> str:
        return f"sample-one({self.padded.name}, m={self.m})"

    @property
    def closed(self) -> bool:
        return getattr(self.padded, "closed", True)

    @property
    def items(self) -> Optional[tuple]:
        if not self.closed:
            return None
        return self.padded.items[:-1]

    def params(self) -> dict:
        return {**self.padded.params(), "set_mechanism": "sample-one", "m": self.m, "on_long": self.on_long}

    # -- client ----------------------------------------------------------------------------------
    def _encode_flat(self, batch: SetBatch) -> tuple[np.ndarray, Any]:
        """Per-item codes (closed) or keys (open), and the encoding of PAD."""
        values = batch.values
        if len(values) == 0:
            enc = np.empty(0, dtype=np.int64 if self.closed else np.uint64)
        elif self.closed:
            enc = encode_items(values, self.mechanism)
        else:
            if _is_series(values):
                has_pad = values.dtype == _pl().String and bool((values == PAD).any())
            else:
                has_pad = values.dtype.kind in "OU" and any(isinstance(v, str) and v == PAD for v in values.tolist())
            if has_pad:
                raise LDPInputError("sets contain the reserved PAD item")
            enc = item_keys(values)
        pad = self.mechanism.d if self.closed else item_keys(np.array([PAD], dtype=object))[0]
        return enc, pad

    def sample(self, sets: Any, *, rng: RNGLike = None) -> tuple[np.ndarray, int]:
        """The sampled item encoding of each user, and how many users were sampled down."""
        source = as_source(rng)
        batch = as_set_batch(sets)
        n = len(batch)
        enc, pad = self._encode_flat(batch)
        _check_duplicates(batch, enc.astype(np.int64) if enc.dtype != np.uint64 else enc.view(np.int64))
        lengths = batch.lengths
        long = lengths > self.m
        if long.any() and self.on_long == "error":
            raise LDPInputError(
                f"{int(long.sum())} set(s) have more than m={self.m} items (first at position {int(np.flatnonzero(long)[0])}); "
                "raise m or pass on_long='sample'"
            )
        out = np.full(n, pad, dtype=enc.dtype)
        j = source.uniform_int(self.m, n).astype(np.int64)
        for L in np.unique(lengths[long]):  # long sets: a uniform item of the set (exact, per length)
            users = np.flatnonzero(lengths == L)
            j[users] = source.uniform_int(int(L), users.size)
        hit = j < lengths
        out[hit] = enc[batch.offsets[:-1][hit] + j[hit]]
        return out, int(long.sum())

    def sample_labels(self, sets: Any, *, rng: RNGLike = None) -> list:
        """The sampled *item* of each user (``PAD`` for an empty slot), for chaining in OpenDP."""
        batch = as_set_batch(sets)
        sampled, _ = self.sample(batch, rng=rng)
        if self.closed:
            items = self.padded.items
            return [items[int(c)] for c in sampled]
        # open alphabet: recover the item at the drawn slot (keys are not invertible)
        flat = batch.values.to_list() if _is_series(batch.values) else batch.values.tolist()
        keys = item_keys(batch.values) if len(flat) else np.empty(0, dtype=np.uint64)
        out = []
        for i, key in enumerate(sampled):
            lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
            hit = np.flatnonzero(keys[lo:hi] == key)
            out.append(flat[lo + int(hit[0])] if hit.size else PAD)
        return out

    def randomize(self, sets: Any, *, cohorts: Any = None, rng: RNGLike = None):
        """Reports of the padded mechanism, one per user."""
        source = as_source(rng)
        sampled, _ = self.sample(sets, rng=source)
        if hasattr(self.padded, "randomize_encoded"):
            return self.padded.randomize_encoded(sampled, cohorts=cohorts, rng=source)
        if cohorts is not None:
            raise LDPParameterError("cohorts apply only to cohort mechanisms (orr, orappor)")
        return self.padded._randomize_codes(sampled, source)

    def randomize_one(self, items: Any, *, rng: RNGLike = None):
        reports = self.randomize([list(items)], rng=rng)
        return self.padded._report_of_one(reports) if hasattr(self.padded, "_report_of_one") else reports

    # -- server ------------------------------------------------------------------------------------
    def accumulator(self):
        return self.padded.accumulator()

    def estimate(self, reports: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        return self.estimate_from(self.accumulator().add(reports), candidates=candidates, postprocess=postprocess, confidence=confidence)

    def estimate_from(self, acc, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        """Set-item frequencies ``f̂ = m·θ̂`` from an accumulator of the padded mechanism."""
        if postprocess == "em":
            raise LDPParameterError("postprocess='em' is not available for sets")
        if self.closed:
            inner = acc.estimate(postprocess="none", confidence=confidence)
        else:
            if candidates is None:
                raise LDPParameterError("an open-alphabet mechanism needs candidates= (the items to estimate)")
            cands = list(candidates.to_list() if hasattr(candidates, "to_list") else candidates)
            inner = acc.estimate(candidates=[*cands, PAD], postprocess="none", confidence=confidence)
        m = self.m
        raw_all = np.asarray(inner.raw)
        # PAD is decoded, never reported: the last code of a closed padded domain, or the PAD
        # candidate of an open one
        pad_at = len(inner.items) - 1 if self.closed else inner.items.index(PAD)
        keep = np.arange(len(inner.items)) != pad_at
        raw_padded = np.r_[raw_all[keep], raw_all[~keep]]  # PAD last, for the projection below
        raw = m * raw_all[keep]
        se = m * np.asarray(inner.std_error)[keep]
        items = tuple(it for i, it in enumerate(inner.items) if i != pad_at)
        est = finalize_estimate(raw, se, inner.n, postprocess="none", confidence=confidence, items=items, total=m)
        if postprocess == "none":
            return est
        if postprocess == "projection":
            post = m * project_simplex(raw_padded)[:-1]
        else:  # normalize
            clipped = np.clip(raw_padded, 0.0, None)
            post = m * clipped[:-1] / clipped.sum() if clipped.sum() > 0 else np.zeros(raw.size)
        post = np.minimum(post, 1.0)
        post.setflags(write=False)
        return dataclasses.replace(est, estimate=post, postprocess=postprocess)


def set_codes(sets: Any, mechanism: Any) -> tuple[np.ndarray, np.ndarray]:
    """Item codes and CSR offsets for a set mechanism: a batch of sets (lists, CSR, a Polars List
    column) or of single items (a 1-d array / Series of values: sets of one). Duplicates inside a
    set are an error."""
    scalar = False
    if isinstance(sets, SetBatch) or (isinstance(sets, tuple) and len(sets) == 2 and isinstance(sets[1], np.ndarray)):
        scalar = False
    elif _is_series(sets):
        scalar = not isinstance(sets.dtype, (_pl().List, _pl().Array))
    elif isinstance(sets, np.ndarray):
        scalar = sets.ndim == 1 and not (sets.dtype == object and sets.size and isinstance(sets[0], (list, tuple, set, np.ndarray)))
    elif isinstance(sets, (list, tuple)):
        scalar = len(sets) > 0 and not isinstance(sets[0], (list, tuple, set, frozenset, np.ndarray))
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
