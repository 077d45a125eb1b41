"""Padding-and-sampling as a mechanism (the class; helpers and the method's description are in
:mod:`ldp_plugin.sets`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from .._validation import check_choice
from ..estimation import FrequencyEstimate, check_postprocess, finalize_estimate, lower_bounds, project_simplex, retarget
from ..hashing import item_keys
from ..sampling import RNGLike, as_source
from .sets import ON_LONG, PAD, SetBatch, _check_duplicates, _is_series, _pl, as_set_batch, encode_items, is_item_batch, gather_sets, subsets_up_to
from .base import MechanismBase
from .channel import Channel
from .protocol import ClosedDomain, InputKind, Verifiable

__all__ = ["SampleOne"]


def _as_batch(sets: Any) -> SetBatch:
    if isinstance(sets, SetBatch):
        return sets
    if is_item_batch(sets):  # one item per user: sets of one (a string is one item)
        if _is_series(sets):
            vals = sets
        else:
            vals = np.asarray(sets) if isinstance(sets, np.ndarray) else np.asarray(list(sets), dtype=object)
            if vals.dtype == object and vals.size and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals.tolist()):
                vals = vals.astype(np.int64)
        return SetBatch(vals, np.arange(len(vals) + 1, dtype=np.int64))
    return as_set_batch(sets)


@dataclass(frozen=True, kw_only=True)
class SampleOne(MechanismBase):
    """Padding-and-sampling in front of a categorical mechanism: ε-LDP per user for sets of at
    most ``m`` items (the privacy unit is the whole set).

    Proof: docs/proofs/sets.md

    >>> import ldp_plugin as ldp
    >>> s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=2.0, categories=["a", "b", "c"]), m=2)
    >>> r = s.randomize([["a", "b"], ["c"], []], rng=0)
    >>> s.estimate(r).items
    ('a', 'b', 'c')
    """

    capabilities = frozenset({ClosedDomain, Verifiable})

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
        if not isinstance(mech, MechanismBase):
            raise LDPParameterError(
                f"mechanism must be a categorical mechanism object, e.g. KRR(epsilon=1.0, d=5) (got type {type(mech).__name__}); "
                "from a name use ldp_plugin.registry.build('sample-NAME', ...)"
            )
        if mech.input_kind != "value" or mech.needs_user_keys:
            what = {"set": "already takes sets (use it directly)", "number": "takes numbers, not items"}.get(mech.input_kind, "needs user keys")
            raise LDPParameterError(
                f"SampleOne wraps a mechanism of one item per user; {mech.name} {what}"
            )
        if getattr(mech, "closed", True) is False:
            padded = mech  # open alphabet: PAD is one more string
        elif mech.categories is not None:
            if PAD in mech.categories:
                raise LDPParameterError("the categories already contain the reserved PAD item")
            padded = dataclasses.replace(mech, categories=(*mech.categories, PAD), d=None)
        else:
            padded = dataclasses.replace(mech, d=mech.d + 1)  # code d is PAD
        object.__setattr__(self, "padded", padded)

    input_kind: ClassVar[InputKind] = InputKind.SET

    @property
    def epsilon(self) -> float:
        return self.padded.epsilon

    @property
    def base(self):
        """The padded mechanism: it produces the reports."""
        return self.padded

    @property
    def takes_cohorts(self) -> bool:  # type: ignore[override]
        return self.padded.takes_cohorts

    def spec(self) -> dict:
        return {"set": "sample-one", "m": self.m, "on_long": self.on_long, "mechanism": self.mechanism.spec()}

    @property
    def realized_ratio(self):
        return self.padded.realized_ratio

    @property
    def realized_epsilon(self) -> float:
        return self.padded.realized_epsilon

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

    @property
    def categories(self) -> Optional[tuple]:  # type: ignore[override]
        """The inner mechanism's categories (``PAD`` is internal)."""
        return self.mechanism.categories

    @property
    def domain_size(self) -> Optional[int]:
        return self.mechanism.d if self.closed else None

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        """``m² ·`` the padded mechanism's per-item variances (every user holds exactly ``m``
        items and the sampled slot is random: a holder of ``i`` supports it with probability
        ``π₁ = q* + (p*−q*)/m``); cohort mechanisms: their i.i.d. prediction."""
        f = np.asarray(f, dtype=np.float64)
        m, padded = self.m, self.padded
        if not padded.takes_cohorts:
            p, q = padded.p_star, padded.q_star
            pi1 = q + (p - q) / m
            var = (f * pi1 * (1 - pi1) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2)
            return float(m * m * var.sum())
        d = f.size + 1
        iid = padded.predicted_mse(n, S=d) + (1 - 1 / d) / n
        return float(m * m * iid * (d - 1) / d - float(np.sum(f * (1 - f))) / n)

    # -- verification: the exact channel over sets, driven through the real client --------------
    def verification_inputs(self) -> list:
        """Every set of at most ``m`` item codes (small closed domains)."""

        if not self.closed:
            raise LDPParameterError("verification needs a closed-alphabet SampleOne")
        return subsets_up_to(self.mechanism.d, self.m)

    def output_alphabet_size(self) -> int:
        return self.padded.output_alphabet_size()

    def channel(self):
        """Exact: the row of a set ``X`` is the average of the padded mechanism's rows over the
        ``m`` slots (``X``'s items, then ``PAD`` for the empty slots)."""

        inner = self.padded.channel()
        pad = self.mechanism.d
        rows = []
        for X in self.verification_inputs():
            slots = list(X) + [pad] * (self.m - len(X))
            rows.append(tuple(sum(inner.matrix[s][j] for s in slots) / self.m for j in range(len(inner.outputs))))
        return Channel(inner.outputs, tuple(rows))

    def output_index(self, reports):
        return self.padded.output_index(reports)

    def _verification_randomize(self, codes, source):
        flat, offsets, _lengths = gather_sets(self.verification_inputs(), np.asarray(codes, dtype=np.int64))
        return self.randomize_encoded(flat, offsets=offsets, rng=source)

    def with_categories(self, categories: Any) -> "SampleOne":
        return SampleOne(mechanism=self.mechanism.with_categories(categories), m=self.m, on_long=self.on_long)

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

    def encode(self, sets: Any) -> tuple[np.ndarray, np.ndarray]:
        """The users' sets as CSR item encodings ``(codes, offsets)`` of the padded mechanism, checked
        (unknown items, duplicates); :meth:`sample` draws one item per user from them."""
        batch = _as_batch(sets)
        enc, _pad = self._encode_flat(batch)
        _check_duplicates(batch, enc.astype(np.int64) if enc.dtype != np.uint64 else enc.view(np.int64))
        return enc, batch.offsets

    def sample(self, sets: Any, *, rng: RNGLike = None) -> tuple[np.ndarray, int]:
        """The sampled item encoding of each user, and how many users were sampled down."""
        source = as_source(rng)
        batch = _as_batch(sets)
        enc, pad = self._encode_flat(batch)
        _check_duplicates(batch, enc.astype(np.int64) if enc.dtype != np.uint64 else enc.view(np.int64))
        return self._sample_codes(enc, batch.offsets, pad, source)

    def _sample_codes(self, enc: np.ndarray, offsets: np.ndarray, pad: Any, source) -> tuple[np.ndarray, int]:
        """The exact pad-and-sample step on encoded CSR sets."""
        n = offsets.shape[0] - 1
        lengths = np.diff(offsets)
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
        out[hit] = enc[offsets[:-1][hit] + j[hit]]
        return out, int(long.sum())

    def sample_labels(self, sets: Any, *, rng: RNGLike = None) -> list:
        """The sampled *item* of each user (``PAD`` for an empty slot), for chaining in OpenDP."""
        batch = _as_batch(sets)
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

    def randomize(self, sets: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None):
        """Reports of the padded mechanism, one per user (a batch of single items is a batch of
        sets of one; a plain string is one item)."""
        self._check_client_arguments(user_keys=user_keys)
        source = as_source(rng)
        sampled, _ = self.sample(sets, rng=source)
        return self.padded.randomize_encoded(sampled, cohorts=cohorts, rng=source)

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None):
        """Sets given as CSR item codes (closed alphabet, ``offsets`` omitted: sets of one)."""
        self._check_client_arguments(user_keys=user_keys)
        if not self.closed:
            raise LDPParameterError("randomize_encoded of an open-alphabet SampleOne: pass the sets to randomize()")
        source = as_source(rng)
        codes = np.asarray(codes, dtype=np.int64)
        offsets = np.arange(codes.size + 1, dtype=np.int64) if offsets is None else np.asarray(offsets, dtype=np.int64)
        d = self.mechanism.d
        if codes.size and (codes.min() < 0 or codes.max() >= d):
            raise LDPInputError(f"encoded set items must be codes in [0, {d})")
        if offsets.ndim != 1 or offsets.size == 0 or offsets[0] != 0 or (np.diff(offsets) < 0).any() or offsets[-1] != codes.size:
            raise LDPInputError("offsets must start at 0, be non-decreasing and end at len(codes)")
        _check_duplicates(SetBatch(codes, offsets), codes)
        sampled, _ = self._sample_codes(codes, offsets, d, source)
        return self.padded.randomize_encoded(sampled, cohorts=cohorts, rng=source)

    def randomize_one(self, items: Any, *, rng: RNGLike = None, user_key: Any = None):
        one = list(items) if isinstance(items, (list, tuple, set, frozenset)) else [items]
        reports = self.randomize([one], rng=rng, user_keys=None if user_key is None else [user_key])
        return self.padded._report_of_one(reports)

    # -- server ------------------------------------------------------------------------------------
    def accumulator(self):
        return self.padded.accumulator()

    def estimate(self, reports: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95, target: str = "sample") -> FrequencyEstimate:
        return self.estimate_from(self.accumulator().add(reports), candidates=candidates, postprocess=postprocess, confidence=confidence, target=target)

    def estimate_from(self, acc, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95, target: str = "sample") -> FrequencyEstimate:
        """Set-item frequencies from an accumulator of the padded mechanism (:meth:`_set_estimate`);
        with ``on_long="sample"`` the intervals are lower bounds (:func:`~ldp_plugin.estimation.lower_bounds`):
        items of sets longer than ``m`` are under-counted."""
        est = self._set_estimate(acc, candidates=candidates, postprocess=postprocess, confidence=confidence, target=target)
        return lower_bounds(est) if self.on_long == "sample" else est

    def _set_estimate(self, acc, *, candidates: Any, postprocess: str, confidence: float, target: str) -> FrequencyEstimate:
        """Set-item frequencies ``f̂ = m·θ̂`` from an accumulator of the padded mechanism.

        Standard errors include the randomness of the sampled slot: a holder of ``i`` supports
        it with probability ``π₁ = q* + (p*−q*)/m`` (not ``p*`` for a fixed fraction ``1/m`` of
        the holders), which adds ``f(m−1)/n`` to the variance of ``f̂ᵢ`` for pure oracles
        (``Var = m²[f π₁(1−π₁) + (1−f) q*(1−q*)]/(n(p*−q*)²)``; the cohort decoders' multinomial
        plug-in already treats each report as a draw from the users' mixture)."""

        if postprocess in ("em", "ibu"):
            raise LDPParameterError(f"postprocess={postprocess!r} is not available for sets")
        check_postprocess(postprocess, confidence)  # an unknown name is refused, never decoded as 'normalize'
        check_choice("target", target, ("sample", "population"))
        if self.closed:
            if candidates is not None:  # never ignored: the inner oracle decodes its whole domain
                raise LDPParameterError(f"{self.name} decodes over its own domain; candidates= applies to open-alphabet mechanisms")
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
        if not self.padded.takes_cohorts:  # the sampled slot is random: + f(m−1)/n (see above)
            se = np.sqrt(se * se + np.clip(raw, 0.0, 1.0) * (m - 1) / inner.n)
        items = tuple(it for i, it in enumerate(inner.items) if i != pad_at)
        est = finalize_estimate(raw, se, inner.n, postprocess="none", confidence=confidence, items=items, total=m)
        if postprocess == "none":
            return retarget(est, target)
        if postprocess == "projection":
            post = m * project_simplex(raw_padded)[:-1]
        else:  # normalize
            clipped = np.clip(raw_padded, 0.0, None)
            post = m * clipped[:-1] / clipped.sum() if clipped.sum() > 0 else np.zeros(raw.size)
        post = np.minimum(post, 1.0)
        post.setflags(write=False)
        return retarget(dataclasses.replace(est, estimate=post, postprocess=postprocess), target)
