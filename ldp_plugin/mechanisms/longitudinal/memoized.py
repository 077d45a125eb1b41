"""Memoized (longitudinal) reports in the style of RAPPOR's permanent randomized response.

A user who reports the same value every day would, with fresh randomness each day, leak ε per
report: the noise averages out. Memoization fixes a **permanent report** per (user, value):

* permanent: k-RR with ``ε∞`` whose randomness is a keyed PRF of the user's **secret key** and the
  value — ``BLAKE2b(key = user_key, person = "ldp-memo-v1", data = mechanism fingerprint ‖ value)``
  (never the user id + value as a seed: the id is known to the server, the key is not) — so
  re-reporting an unchanged value reuses it;
* instantaneous: a fresh k-RR with ``ε₁`` on the permanent report, every collection (it hides the
  permanent report itself, which would otherwise be a stable fingerprint).

Privacy of a series (proof in :mod:`ldp_plugin.mechanisms.lifetime`; ``ε₁`` below is the
instantaneous k-RR's ε, ``E = ε∞``). The neighbouring relation is named:

* **user level** (the default, ``relation="user"``): any two histories of one user over ``T``
  collections, whatever values they hold:
  ``min(ε₁* + (T − 1)·ε₁, (d − 1)/d·(K·ε∞ + T·ε₁), K·ε∞ + (K − 1)/K·T·ε₁)``, ``K = min(T, d)``,
  with ``ε₁*`` the one-report composed channel's ε. The memoized reports hide *which* values a user holds, not *when* the value changes
  and comes back: the transcript shows that, and only the instantaneous layer hides it.
* **value level** (``relation="value"``, named by the deployment): histories with the same change
  pattern (the same collections share a value), differing in the values held:
  ``min(min(T, d)·ε∞, user level)`` — RAPPOR-style memoization's ``ε∞`` per distinct value.

**The charge assumes nothing it does not enforce.** ``max_values`` (``V``) is a client-side limit
(:class:`DistinctValueGuard` refuses a ``V + 1``-th distinct value where the key lives), not an
assumption of the charge: nothing on the charging path — a device's ledger or a server's
:meth:`ldp_plugin.Accountant.spend_collection` — sees the values, so a history with more distinct
values than ``V`` is charged like any other (``K = min(T, d)``, :attr:`TranscriptModel.unit_bound`
``= d``). An exact enumeration of the user-level loss with ``V·ε∞`` assumed found 4.16 after 12
collections of 8 values against a charge of 2.0.

The earlier claim ``Σ_v min(T_v ε₁, ε∞) <= min(T ε₁, V ε∞)`` for *any* history is false at the
user level (an exact enumeration finds 4.75 at ``T = 10`` for ``V·ε∞ = 4``). The accountant charges
collection ``t`` the increment ``lifetime_bound(t) − lifetime_bound(t − 1)``
(:meth:`Memoized.collection_cost`), a function of ``t`` only.

What memoization does **not** protect: (1) changes of value — each new value costs up to ``ε∞``
again, and the *times* of changes are visible through the reports' statistics; (2) linkability —
the permanent report is stable, so an adversary seeing many reports of one user learns more about
it (the instantaneous layer limits this to ``ε₁`` per report) and can use it to link reports; (3)
correlated values (a value that cycles A, B, A reuses A's permanent report: good); (4) the key:
a lost or reset key starts a fresh ``ε∞``; a leaked key removes the permanent noise.

Estimation: the composed channel is k-RR-shaped with ``p* = p∞ p₁ + (1 − p∞) q₁`` and
``q* = q∞ p₁ + (1 − q∞) q₁`` (exact rationals); the shared estimator applies per collection.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Sequence

import numpy as np

from ..._errors import LDPInputError, LDPParameterError
from ...estimation import FrequencyEstimate, estimate_pure
from ..randomized_response import KRR
from .._base import FrequencyAccumulator
from ..base import MechanismBase, json_value
from ...exact import epsilon_of_ratio
from ..domain import check_user_keys as _check_keys  # shared with the longitudinal clients
from ..domain import check_codes, check_epsilon
from ..lifetime import TranscriptModel, check_relation, increment
from ..lifetime import bound as lifetime_bound_of
from ...sampling import RNGLike
from ...theory import mse_pure
from ..channel import Channel
from ..protocol import ClosedDomain, Keyed, Verifiable

__all__ = ["Memoized", "DistinctValueGuard", "new_user_key"]

_PERSON = b"ldp-memo-v1"


def new_user_key() -> bytes:
    """A fresh 32-byte secret key for one user (OS CSPRNG). Keep it on the user's device."""
    import os

    return os.urandom(32)



@dataclass(frozen=True, kw_only=True)
class Memoized(MechanismBase):
    """Permanent k-RR (``epsilon_permanent``, memoized by a keyed PRF) + instantaneous k-RR
    (``epsilon_instantaneous``, fresh) over ``d`` categories; ``max_values`` is the
    :class:`DistinctValueGuard`'s client-side limit (the charge does not assume it).

    Proof: docs/proofs/longitudinal.md

    >>> import ldp_plugin as ldp
    >>> m = ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, categories=["a", "b", "c"], max_values=2)
    >>> key = bytes(range(32))
    >>> m.permanent(["b"], [key]).tolist() == m.permanent(["b"], [key]).tolist()
    True
    >>> [round(float(m.collection_cost(t)), 3) for t in (1, 2, 3, 4, 5)]
    [0.687, 1.0, 1.0, 1.0, 1.0]
    >>> [round(float(m.lifetime_bound(t, relation="value")), 3) for t in (1, 2, 3, 4, 5)]
    [0.687, 1.687, 2.687, 3.687, 4.687]
    """

    capabilities = frozenset({ClosedDomain, Keyed, Verifiable})

    epsilon_permanent: float
    epsilon_instantaneous: float
    max_values: int = 1
    d: Optional[int] = None
    categories: Optional[tuple] = None
    #: the neighbouring relation the series is charged under: ``"user"`` (default) or ``"value"``
    relation: str = "user"
    permanent_mechanism: KRR = field(init=False, repr=False, compare=False)
    instantaneous_mechanism: KRR = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        e_inf = check_epsilon(self.epsilon_permanent, "epsilon_permanent")
        e_one = check_epsilon(self.epsilon_instantaneous, "epsilon_instantaneous")
        if e_one > e_inf:
            raise LDPParameterError("epsilon_instantaneous must be at most epsilon_permanent (it randomizes the permanent report)")
        mv = self.max_values
        if isinstance(mv, bool) or not isinstance(mv, (int, np.integer)) or not 1 <= int(mv) <= 1 << 20:
            raise LDPParameterError(f"max_values must be an integer in [1, 2**20] (got {mv!r})")
        object.__setattr__(self, "max_values", int(mv))
        perm = KRR(epsilon=e_inf, d=self.d, categories=self.categories)
        inst = KRR(epsilon=e_one, d=perm.d)
        object.__setattr__(self, "epsilon_permanent", e_inf)
        object.__setattr__(self, "epsilon_instantaneous", e_one)
        object.__setattr__(self, "d", perm.d)
        object.__setattr__(self, "categories", perm.categories)
        object.__setattr__(self, "permanent_mechanism", perm)
        object.__setattr__(self, "instantaneous_mechanism", inst)
        object.__setattr__(self, "relation", check_relation(self.relation))
        object.__setattr__(self, "_lifetime", {
            "eps_one": Fraction(epsilon_of_ratio(self.p_star_exact / self.q_star_exact)), "eps_perm": Fraction(e_inf),
            "eps_inst": Fraction(inst.epsilon), "units": perm.d, "unit_bound": perm.d})  # no assumption on distinct values

    name = "memoized-krr"
    needs_user_keys = True

    @property
    def base(self):
        """Reports are the instantaneous k-RR's item codes."""
        return self.instantaneous_mechanism

    @property
    def realized_ratio(self):
        return self.instantaneous_mechanism.realized_ratio

    def spec(self) -> dict:
        return {"name": self.name, "params": {
            "epsilon_permanent": self.epsilon_permanent, "epsilon_instantaneous": self.epsilon_instantaneous,
            "max_values": self.max_values, "d": self.d,
            "categories": json_value(self.categories), "relation": self.relation}}

    def encode(self, values: Any) -> np.ndarray:
        return self.permanent_mechanism.encode(values)

    @property
    def epsilon(self) -> float:
        """ε of one report (``ε₁``); see :meth:`collection_cost` for a series."""
        return self.epsilon_instantaneous

    @property
    def items(self) -> tuple:
        return self.permanent_mechanism.items

    def params(self) -> dict:
        return {
            "mechanism": self.name,
            "epsilon_permanent": self.epsilon_permanent,
            "epsilon_instantaneous": self.epsilon_instantaneous,
            "max_values": self.max_values,
            "d": self.d,
            "relation": self.relation,
        }

    def fingerprint(self) -> bytes:
        """The PRF fingerprint: the channel's parameters (not the charging relation)."""
        cats = repr(self.categories).encode() if self.categories is not None else b""
        core = {k: v for k, v in self.params().items() if k != "relation"}
        return hashlib.sha256(repr(core).encode() + cats).digest()

    # -- privacy accounting ----------------------------------------------------------------------------
    @property
    def epsilon_inst(self) -> Fraction:
        """The instantaneous k-RR's ε (exact): one report conditioned on past reports of the key."""
        return self._lifetime["eps_inst"]

    def lifetime_bound(self, t: int, *, relation: Optional[str] = None) -> Fraction:
        """Worst-case ε of a user after ``t`` collections under ``relation`` (default: the
        series' own): user level ``min(ε₁* + (t − 1)ε₁, (d − 1)/d·(Kε∞ + tε₁), Kε∞ + (K − 1)/K·tε₁)``
        with ``K = min(t, d)``, value
        level ``min(min(t, d)ε∞, user level)`` (module docstring; exact; no assumption on ``max_values``)."""
        return lifetime_bound_of(self.relation if relation is None else check_relation(relation), t, **self._lifetime)

    def series_bound(self, t: int) -> Fraction:
        """:meth:`lifetime_bound` under the series' relation (kept name)."""
        return self.lifetime_bound(t)

    def collection_cost(self, t: int) -> Fraction:
        """What collection number ``t`` (1-based) adds under the series' relation (exact):
        ``lifetime_bound(t) − lifetime_bound(t − 1)``, the same for every user."""
        return increment(self.relation, t, **self._lifetime)

    def transcript_model(self):
        """The exact transcript law (:class:`ldp_plugin.mechanisms.lifetime.TranscriptModel`):
        the permanent k-RR table over the ``d`` values and the instantaneous k-RR."""
        A, B = self.permanent_mechanism.channel().matrix, self.instantaneous_mechanism.channel().matrix
        return TranscriptModel(units=self.d, unit_bound=self.d, perm=(tuple(map(tuple, A)),), inst=(tuple(map(tuple, B)),))

    # -- client ------------------------------------------------------------------------------------------
    def permanent(self, values: Any, user_keys: Sequence[bytes]) -> np.ndarray:
        """The memoized permanent reports (item codes): a deterministic function of each user's
        secret key and value. Exact: the PRF output supplies the 64-bit words of the k-RR sampler
        (keep iff word < threshold; the other item by Lemire's method, 32-bit halves, rejection)."""
        codes = self.permanent_mechanism.encode(values)
        keys = _check_keys(user_keys, codes.size)
        fp = self.fingerprint()
        perm = self.permanent_mechanism
        d = self.d
        out = np.empty(codes.size, dtype=np.int64)
        digests = [hashlib.blake2b(fp + c.to_bytes(8, "little"), key=bytes(k), person=_PERSON, digest_size=32).digest() for k, c in zip(keys, codes.tolist())]
        words = np.frombuffer(b"".join(digests), dtype=np.uint64).reshape(codes.size, 4)
        keep = words[:, 0] < np.uint64(perm.keep_threshold)  # exact: P = T/2**64 for a random PRF
        r = d - 1
        halves = words[:, 1:].view(np.uint32).astype(np.uint64)  # six 32-bit candidates per user
        thresh = np.uint64(((1 << 32) - r) % r) if r > 1 else np.uint64(0)
        other = np.full(codes.size, -1, dtype=np.int64)
        for j in range(halves.shape[1]):
            m = halves[:, j] * np.uint64(r)
            ok = ((m & np.uint64(0xFFFFFFFF)) >= thresh) & (other < 0)
            other[ok] = (m[ok] >> np.uint64(32)).astype(np.int64)
        for i in np.flatnonzero(other < 0):  # all six rejected (probability < (r/2**32)**6): extend the PRF
            block = 1
            while other[i] < 0:
                extra = hashlib.blake2b(fp + int(codes[i]).to_bytes(8, "little") + block.to_bytes(4, "little"), key=bytes(keys[i]), person=_PERSON, digest_size=32).digest()
                for h in np.frombuffer(extra, dtype=np.uint32).astype(np.uint64):
                    m = int(h) * r
                    if (m & 0xFFFFFFFF) >= int(thresh):
                        other[i] = m >> 32
                        break
                block += 1
        other += other >= codes
        out[:] = np.where(keep, codes, other)
        return out

    def randomize(self, values: Any, user_keys: Sequence[bytes] = None, *, rng: RNGLike = None, cohorts: Any = None, guard: Optional["DistinctValueGuard"] = None) -> np.ndarray:
        """One collection: the instantaneous k-RR (fresh randomness) of each permanent report.
        With a ``guard`` the series' ``max_values`` is enforced per user."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        if guard is not None:
            guard.observe(values if self.categories is None else self.permanent_mechanism.encode(values), user_keys, self.max_values)
        perm = self.permanent(values, user_keys)
        return self.instantaneous_mechanism.randomize_encoded(perm, rng=rng)

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Optional[Sequence[bytes]] = None, offsets: Any = None) -> np.ndarray:
        """One collection on item codes; ``user_keys`` (one secret per user) is required."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        codes = check_codes(codes, self.d)
        return self.randomize(codes if self.categories is None else np.array([self.categories[c] for c in codes.tolist()], dtype=object), user_keys, rng=rng)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        extra = 0.0 if sampling == "fixed" else (1 - float(np.sum(np.asarray(theta) ** 2))) / n
        return float(mse_pure(self.d, n, float(self.p_star_exact), float(self.q_star_exact))) + extra

    # -- verification: one report's exact channel, driven through the real client --------------
    def output_alphabet_size(self) -> int:
        return self.d

    def channel(self):
        """Exact channel of one report: the permanent k-RR (a keyed PRF of a random user key:
        exactly k-RR for a uniformly random key) followed by the instantaneous k-RR."""
        A, B = self.permanent_mechanism.channel().matrix, self.instantaneous_mechanism.channel().matrix
        d = self.d
        rows = tuple(tuple(sum(A[x][z] * B[z][y] for z in range(d)) for y in range(d)) for x in range(d))
        return Channel(tuple(range(d)), rows)

    def output_index(self, reports) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)

    def _verification_randomize(self, codes, source):
        """Fresh random user keys (from the source) per report, then the real client."""
        codes = np.asarray(codes, dtype=np.int64)
        raw = np.asarray(source.random_bytes(32 * codes.size), dtype=np.uint8).reshape(codes.size, 32)
        keys = [bytes(r) for r in raw]
        return self.randomize_encoded(codes, rng=source, user_keys=keys)

    def accumulator(self) -> "MemoAccumulator":
        return MemoAccumulator(self)

    # -- server ------------------------------------------------------------------------------------------
    @property
    def p_star_exact(self) -> Fraction:
        a, b = self.permanent_mechanism, self.instantaneous_mechanism
        return a.p_star_exact * b.p_star_exact + (1 - a.p_star_exact) * b.q_star_exact

    @property
    def q_star_exact(self) -> Fraction:
        a, b = self.permanent_mechanism, self.instantaneous_mechanism
        return a.q_star_exact * b.p_star_exact + (1 - a.q_star_exact) * b.q_star_exact


class MemoAccumulator(FrequencyAccumulator):
    """Counts of the instantaneous reports; estimated with the composed rates ``p*``, ``q*``."""

    def __init__(self, memo: "Memoized"):
        super().__init__(memo.instantaneous_mechanism)
        self.memo = memo

    def _identity(self):
        return self.memo

    def estimate(self, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        if candidates is not None:
            raise LDPParameterError("memoized-krr decodes over its own domain; candidates= applies to open-alphabet mechanisms")
        if self.n == 0:
            raise LDPParameterError("an estimate needs at least one report (n >= 1)")
        memo = self.memo
        return estimate_pure(
            self.counts, self.n, float(memo.p_star_exact), float(memo.q_star_exact),
            postprocess=postprocess, confidence=confidence, items=memo.items,
        )


class DistinctValueGuard:
    """Client-side enforcement of a series' ``max_values``: remembers which distinct values each
    user key has reported (a salted hash of the key, never the key) and refuses a new one beyond
    the limit. Keep it where the key lives (on the device)."""

    def __init__(self) -> None:
        self._seen: dict[bytes, set] = {}

    def observe(self, codes: Any, user_keys: Sequence[bytes], max_values: int) -> None:
        codes = np.asarray(codes).tolist()
        keys = _check_keys(user_keys, len(codes))
        pending: dict[bytes, set] = {}
        for i, (k, c) in enumerate(zip(keys, codes)):
            tag = hashlib.blake2b(bytes(k), person=b"ldp-memo-guard", digest_size=16).digest()
            seen = pending.setdefault(tag, set(self._seen.get(tag, ())))
            seen.add(c)
            if len(seen) > max_values:
                raise LDPInputError(f"the user at position {i} would report more than max_values={max_values} distinct values in this series")
        for tag, s in pending.items():
            self._seen[tag] = s
