"""Longitudinal frequency protocols: a memoized permanent layer (ε∞ = ``epsilon_perm``) and a fresh
instantaneous layer, for collections repeated over the same users.

* **L-GRR**, **L-OUE**, **L-OSUE**, **L-SUE** — Arcolezi et al., *Improving the Utility of Locally
  Differentially Private Protocols for Longitudinal and Multidimensional Frequency Estimates*
  (Digital Communications and Networks, 2022): permanent GRR / OUE / OUE / SUE, instantaneous
  GRR / OUE / SUE / SUE whose parameters are solved so that **one report** of the composed
  channel is ``epsilon_1``-LDP (L-SUE is basic RAPPOR);
* **LOLOHA** — Arcolezi, Pinzón, Palamidessi, Gambs, *Frequency Estimation of Evolving Data
  Under Local Differential Privacy* (EDBT 2023): a fixed per-user hash into ``g`` values, then
  L-GRR over ``g``; the memoized unit is the *hashed* value, so a user's lifetime loss is at most
  ``g·ε∞`` however often the value changes (``g = 2``: BiLOLOHA; ``g = "optimal"``: the ``g``
  that minimizes the analytic variance at ``f → 0``, found by direct search);
* **dBitFlipPM** — Ding, Kulkarni, Yekhanin, *Collecting Telemetry Data Privately* (NeurIPS
  2017): ``d_bits`` buckets sampled once per user, one bit each flipped with ``e^{ε/2}``; the
  memoized unit is the *pattern* (which sampled bucket holds the value, or none), so the
  lifetime loss is at most ``(d_bits + 1)·ε∞``; it has no instantaneous layer (``epsilon_1`` is
  not used).

**Memoization** is a keyed PRF of the user's **secret key** (never the user id): SHAKE-256 over
``key ‖ mechanism fingerprint ‖ tag ‖ memoized unit``, read as 64-bit words compared with the
integer thresholds (keep iff ``word < T``; uniform choices by rejection) — exactly the realized
channel for a uniformly random key, the same argument as :class:`ldp_plugin.Memoized`.

**Lifetime spend** (what the ledger and a device charge): ``min(#distinct memoized units,
bound)·ε∞`` with ``bound`` = ``d`` (L-GRR, L-*UE), ``g`` (LOLOHA), ``d_bits + 1`` (dBitFlipPM):
each memoized unit's permanent report is an independent ε∞-LDP release of the value, and every
instantaneous report is a post-processing of those. :class:`LifetimeTracker` counts units per
user; :meth:`LongitudinalMechanism.lifetime_spend` is the exact charge.

(L-OUE, L-OSUE, L-SUE and dBitFlipPM are in :mod:`.longitudinal_unary`.)

**Estimation** per round from the composed one-report channel with the shared estimator
(``estimate_pure``): L-GRR ``(p*, q*)``, L-*UE per bit ``(P(1|1), P(1|0))``, LOLOHA ``(p*, 1/g)``
over the users' hashes; dBitFlipPM per bucket over the users who sampled it. Analytic variance
for a fixed population from the true frequencies (``analytic_mse``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..estimation import FrequencyEstimate, estimate_pure, pure_variance
from ..exact import TWO64, exp_lower_bound, ratio_within_exp
from ..sampling import RNGLike, as_source
from .domain import check_epsilon
from .domain import check_user_keys as _check_keys
from .base import MechanismBase
from .protocol import MergeableCounts, ReportField

__all__ = ["LongitudinalMechanism", "LGRR", "LOLOHA", "LifetimeTracker", "loloha_optimal_g"]

_M64 = (1 << 64) - 1


def _floor_t(p: Fraction) -> int:
    return min((p.numerator * TWO64) // p.denominator, TWO64 - 1)


def _prf(keys: list, fp: bytes, tag: bytes, units: Any, count: int) -> np.ndarray:
    """``(n, count)`` 64-bit words of SHAKE-256(len(key) ‖ key ‖ fp ‖ tag ‖ unit)."""
    out = np.empty((len(keys), count), dtype=np.uint64)
    us = [None] * len(keys) if units is None else np.asarray(units).tolist()
    for i, (k, u) in enumerate(zip(keys, us)):
        data = bytes([len(k)]) + bytes(k) + fp + tag + (b"" if u is None else int(u).to_bytes(8, "little", signed=True))
        out[i] = np.frombuffer(hashlib.shake_256(data).digest(8 * count), dtype=np.uint64)
    return out


def _prf_uniform(words: np.ndarray, r: int, again) -> np.ndarray:
    """Exactly uniform integers in ``[0, r)`` from PRF words by rejection (``again(rows)`` gives
    fresh words for the rare rows whose every word was rejected)."""
    if r == 1:
        return np.zeros(words.shape[0], dtype=np.int64)
    top = np.uint64((TWO64 // r) * r - 1)  # accept w <= top: w mod r is then exactly uniform
    out = np.full(words.shape[0], -1, dtype=np.int64)
    for j in range(words.shape[1]):
        w = words[:, j]
        ok = (w <= top) & (out < 0)
        out[ok] = (w[ok] % np.uint64(r)).astype(np.int64)
    rows = np.flatnonzero(out < 0)
    if rows.size:
        out[rows] = _prf_uniform(again(rows), r, again)
    return out


@dataclass(frozen=True, kw_only=True)
class LongitudinalMechanism(MechanismBase):
    """Shared shape (module docstring): ``randomize(codes, user_keys, rng=)`` is one collection."""

    epsilon_perm: float
    epsilon_1: float
    d: int
    needs_user_keys = True

    def __post_init__(self) -> None:
        e_inf = check_epsilon(self.epsilon_perm, "epsilon_perm")
        e_one = check_epsilon(self.epsilon_1, "epsilon_1")
        if e_one >= e_inf and self.uses_epsilon_1:
            raise LDPParameterError(f"epsilon_1 must be below epsilon_perm (got epsilon_1={e_one!r}, epsilon_perm={e_inf!r})")
        if isinstance(self.d, bool) or not isinstance(self.d, (int, np.integer)) or not 2 <= int(self.d) <= 1 << 16:
            raise LDPParameterError(f"d must be an integer in [2, 2^16] (got {self.d!r})")
        object.__setattr__(self, "epsilon_perm", e_inf)
        object.__setattr__(self, "epsilon_1", e_one)
        object.__setattr__(self, "d", int(self.d))
        self._realize()

    uses_epsilon_1 = True

    @property
    def epsilon(self) -> float:
        """ε of one report (``epsilon_1``; dBitFlipPM: ``epsilon_perm``)."""
        return self.epsilon_1 if self.uses_epsilon_1 else self.epsilon_perm

    def spec(self) -> dict:
        return {"name": self.name, "params": {"epsilon_perm": self.epsilon_perm, "epsilon_1": self.epsilon_1, "d": self.d, **self._extra()}}

    def _extra(self) -> dict:
        return {}

    def _fp(self) -> bytes:
        return hashlib.sha256(repr(self.spec()).encode()).digest()[:16]

    def _codes(self, values: Any) -> np.ndarray:
        c = np.asarray(values)
        if c.ndim != 1 or c.dtype.kind not in "iu" or (c.size and (c.min() < 0 or c.max() >= self.d)):
            raise LDPInputError(f"{self.name} takes a 1-d array of item codes in [0, {self.d})")
        return c.astype(np.int64)

    # -- lifetime accounting -------------------------------------------------------------------
    def unit_bound(self) -> int:
        """The most memoized units one user can ever use (the protocol's bound)."""
        return self.d

    def lifetime_spend(self, distinct_units: int) -> Fraction:
        """Exact lifetime charge of a user who has used ``distinct_units`` memoized units."""
        return min(int(distinct_units), self.unit_bound()) * Fraction(self.epsilon_perm)

    def collection_cost(self, t: int) -> Fraction:
        """What collection number ``t`` (1-based) adds to the worst case over all users, for a
        server ledger that cannot see the units: ``min(t, bound)·ε∞ − min(t − 1, bound)·ε∞``
        (every collection may bring a new unit until the protocol's bound is reached, then none
        can). ``Accountant.spend(query_id, mech.collection_cost(t))`` charges it; a device that
        tracks its own units (:class:`LifetimeTracker`) charges ``lifetime_spend`` instead."""
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise LDPParameterError(f"t must be an int >= 1 (got {t!r})")
        return self.lifetime_spend(t) - self.lifetime_spend(t - 1)

    def memo_units(self, codes: Any, user_keys: Sequence[bytes]) -> np.ndarray:
        """The memoized unit each user's value uses (the value itself, by default)."""
        return self._codes(codes)

    # -- client ----------------------------------------------------------------------------------
    def randomize(self, values: Any, user_keys: Sequence[bytes] = None, *, rng: RNGLike = None, cohorts: Any = None) -> Any:
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        codes = self._codes(values)
        keys = _check_keys(user_keys, codes.size)
        return self._collect(codes, keys, as_source(rng))

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> Any:
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        return self.randomize(codes, user_keys, rng=rng)

    def encode(self, values: Any) -> np.ndarray:
        """Validated item codes (``int64``) in ``[0, d)``."""
        return self._codes(values)

    # -- server: additive statistics per family (``_statistics``), merged across batches ---------------
    def accumulator(self) -> "LongitudinalAccumulator":
        return LongitudinalAccumulator(self)

    def estimate(self, reports: Any, *, postprocess: str = "projection", confidence: float = 0.95, **_: Any) -> FrequencyEstimate:  # type: ignore[override]
        """One round's frequencies from its reports (the composed one-report channel)."""
        return self.accumulator().add(reports).estimate(postprocess=postprocess, confidence=confidence)

    def estimate_from(self, acc: Any, *, postprocess: str = "projection", confidence: float = 0.95, **_: Any) -> FrequencyEstimate:  # type: ignore[override]
        return acc.estimate(postprocess=postprocess, confidence=confidence)

    @property
    def support_rates(self) -> tuple:
        """``(p*, q*)`` of the composed one-report channel's support counts: the shared pure-oracle
        estimator and variance apply (dBitFlipPM, which is not a pure oracle, overrides both)."""
        return float(self.p_star_exact), float(self.q_star_exact)

    def _estimate_statistics(self, stats: np.ndarray, n: int, postprocess: str, confidence: float) -> FrequencyEstimate:
        p, q = self.support_rates
        return estimate_pure(stats, n, p, q, postprocess=postprocess, confidence=confidence, items=tuple(range(self.d)))

    def analytic_mse(self, n: int, *, theta: Any = None, **_: Any) -> float:  # type: ignore[override]
        p, q = self.support_rates
        return float(pure_variance(np.asarray(theta, dtype=np.float64), n, p, q).sum())

    # -- verification: one report's channel, the real client with fresh random keys ----------------
    def _verification_randomize(self, codes: Any, source: Any) -> Any:
        codes = np.asarray(codes, dtype=np.int64)
        raw = np.asarray(source.random_bytes(32 * codes.size), dtype=np.uint8).reshape(codes.size, 32)
        return self.randomize(codes, [bytes(r) for r in raw], rng=source)

    def verification_input_count(self) -> int:
        return self.d


# ---------------------------------------------------------------------------------------------------
def _grr_layers(k: int, e_inf: float, e_one: float) -> tuple:
    """Thresholds of permanent GRR(ε∞) and an instantaneous GRR over ``k`` values such that the
    composed one-report channel is ε1-LDP exactly: ``(T1, T2, p1, q1, p2, q2, p*, q*)``."""
    A = exp_lower_bound(e_inf)
    T1 = _floor_t(A / (A + k - 1))
    p1 = Fraction(T1, TWO64)
    q1 = (1 - p1) / (k - 1)
    b = math.exp(e_one)
    f1, g1 = float(p1), float(q1)
    # p1 p2 + (1 − p1) q2 = b (q1 p2 + (1 − q1) q2) with q2 = (1 − p2)/(k − 1), solved for p2
    p2f = (b * (1 - g1) - (1 - f1)) / (f1 * (k - 1) - (1 - f1) - b * g1 * (k - 1) + b * (1 - g1))
    T2 = _floor_t(Fraction(min(max(p2f, 1.0 / k), 1.0)))
    while True:
        p2 = Fraction(T2, TWO64)
        q2 = (1 - p2) / (k - 1)
        ps, qs = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
        if ratio_within_exp(ps / qs, e_one):
            return T1, T2, p1, q1, p2, q2, ps, qs
        T2 -= max(1, T2 >> 40)  # toward more noise until the exact ratio fits


def _grr_sample(codes: np.ndarray, k: int, T: int, source: Any) -> np.ndarray:
    keep = source.bernoulli(T, codes.size)
    other = source.uniform_int(k - 1, codes.size)
    other += other >= codes
    return np.where(keep, codes, other)


@dataclass(frozen=True, kw_only=True)
class LGRR(LongitudinalMechanism):
    """L-GRR: permanent GRR(ε∞) memoized per value, instantaneous GRR (one report ε1-LDP)."""

    name = "l-grr"
    #: ``(T1, T2, p1, q1, p2, q2, p*, q*)`` of :func:`_grr_layers`: the permanent keep threshold
    #: (compared with PRF words), the instantaneous one (the source; both read by the sampling-path
    #: layer, which takes the integers of an attribute named ``thresholds``) and the exact rates
    thresholds: tuple = field(init=False, repr=False, compare=False)
    histogram_columns = ("report",)

    def _k(self) -> int:
        return self.d

    def _realize(self) -> None:
        object.__setattr__(self, "thresholds", _grr_layers(self._k(), self.epsilon_perm, self.epsilon_1))

    @property
    def p_star_exact(self) -> Fraction:
        return self.thresholds[6]

    @property
    def realized_ratio(self) -> Fraction:
        """The composed one-report channel's worst-case ratio (checked <= e^ε1 exactly)."""
        return self.thresholds[6] / self.thresholds[7]

    @property
    def q_star_exact(self) -> Fraction:
        return self.thresholds[7]

    def _permanent(self, units: np.ndarray, keys: list) -> np.ndarray:
        k, T1 = self._k(), self.thresholds[0]
        fp = self._fp()
        words = _prf(keys, fp, b"prr", units, 4)
        keep = words[:, 0] < np.uint64(T1)
        other = _prf_uniform(words[:, 1:], k - 1, lambda rows: _prf(keys_rows(keys, rows), fp, b"prr+", units[rows], 4))
        other += other >= units
        return np.where(keep, units, other)

    def _collect(self, codes: np.ndarray, keys: list, source: Any) -> np.ndarray:
        perm = self._permanent(codes, keys)
        return _grr_sample(perm, self.d, self.thresholds[1], source).astype(np.uint32)

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", kind="int", bound=self.d),)

    def _statistics(self, reports: Any) -> np.ndarray:
        return np.bincount(np.asarray(reports, dtype=np.int64), minlength=self.d)


    def output_index(self, reports: Any) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)

    def channel(self):
        """Exact one-report channel (the permanent layer for a uniformly random key, composed)."""
        from ._base import Channel

        ps, qs = self.p_star_exact, self.q_star_exact
        return Channel(tuple(range(self.d)), tuple(tuple(ps if y == x else qs for y in range(self.d)) for x in range(self.d)))


def keys_rows(keys: list, rows: np.ndarray) -> list:
    return [keys[i] for i in rows.tolist()]


class LongitudinalAccumulator(MergeableCounts):
    """Additive statistics of one round's reports (counts, or dBitFlipPM's ones and samples per
    bucket) and their number: batches, devices and partitions merge."""

    def __init__(self, mechanism: LongitudinalMechanism):
        self.mechanism = mechanism
        self.counts = None
        self.n = 0

    def add(self, reports: Any) -> "LongitudinalAccumulator":
        stats = np.asarray(self.mechanism._statistics(reports), dtype=np.float64)
        self.counts = stats if self.counts is None else self.counts + stats
        self.n += self.mechanism.report_count(reports)
        return self

    def estimate(self, *, postprocess: str = "projection", confidence: float = 0.95, **_: Any) -> FrequencyEstimate:
        if self.n == 0:
            raise LDPParameterError("an estimate needs at least one report (n >= 1)")
        return self.mechanism._estimate_statistics(self.counts, self.n, postprocess, confidence)


class LifetimeTracker:
    """Per-user memoized units seen so far and the exact lifetime charge (keep it where the key
    lives: on the device, or in the simulation)."""

    def __init__(self, mechanism: LongitudinalMechanism, n_users: int):
        self.mechanism = mechanism
        self.seen = np.zeros((n_users, max(mechanism.unit_bound(), mechanism.d) + 1), dtype=bool)

    def observe(self, codes: Any, user_keys: Sequence[bytes]) -> None:
        units = self.mechanism.memo_units(codes, user_keys)
        self.seen[np.arange(units.size), units] = True

    def spend(self) -> np.ndarray:
        """Each user's exact lifetime charge so far, as floats (rounded up from the Fractions)."""
        from ..exact import float_up

        counts = np.minimum(self.seen.sum(axis=1), self.mechanism.unit_bound())
        table = np.array([float_up(self.mechanism.lifetime_spend(c)) for c in range(self.mechanism.unit_bound() + 1)])
        return table[counts]


from .longitudinal_hashed import LOLOHA, loloha_optimal_g  # noqa: E402,F401  (re-exported; it builds on LGRR)
