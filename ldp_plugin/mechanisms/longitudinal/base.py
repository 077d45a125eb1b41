"""Longitudinal frequency protocols: a memoized permanent layer (ε∞ = ``epsilon_perm``) and a fresh
instantaneous layer, for collections repeated over the same users.

* **L-GRR**, **L-OUE**, **L-OSUE**, **L-SUE** — Arcolezi et al., *Improving the Utility of Locally
  Differentially Private Protocols for Longitudinal and Multidimensional Frequency Estimates*
  (Digital Communications and Networks, 2022): permanent GRR / OUE / OUE / SUE, instantaneous
  GRR / OUE / SUE / SUE whose parameters are solved so that **one report** of the composed
  channel is ``epsilon_1``-LDP (L-SUE is basic RAPPOR);
* **LOLOHA** — Arcolezi, Pinzón, Palamidessi, Gambs, *Frequency Estimation of Evolving Data
  Under Local Differential Privacy* (EDBT 2023): a fixed per-user hash into ``g`` values, then
  L-GRR over ``g``; the memoized unit is the *hashed* value, so at the value level (same change
  pattern) a user's lifetime loss is at most ``g·ε∞`` (``g = 2``: BiLOLOHA; ``g = "optimal"``: the ``g``
  that minimizes the analytic variance at ``f → 0``, found by direct search);
* **dBitFlipPM** — Ding, Kulkarni, Yekhanin, *Collecting Telemetry Data Privately* (NeurIPS
  2017): ``d_bits`` buckets sampled once per user, one bit each flipped with ``e^{ε/2}``; the
  memoized unit is the *pattern* (which sampled bucket holds the value, or none), so the
  value-level lifetime loss is at most ``(d_bits + 1)·ε∞``; it has no instantaneous layer
  (``epsilon_1`` is not used), so at the user level a second report is refused.

**Memoization** is a keyed PRF of the user's **secret key** (never the user id): SHAKE-256 over
``key ‖ mechanism fingerprint ‖ tag ‖ memoized unit``, read as 64-bit words compared with the
integer thresholds (keep iff ``word < T``; uniform choices by rejection) — exactly the realized
channel for a uniformly random key, the same argument as :class:`ldp_plugin.Memoized`.

**Privacy of repeated collections** (:mod:`.lifetime`, theorem and proof there). One report is
``ε₁``-LDP (dBitFlipPM: ``ε∞``). Over ``T`` collections, at the **user level** (any two histories
of one user — the default, ``relation="user"``) the loss is at most

    user_bound(T) = min(ε₁ + (T − 1)·ε_inst, (N − 1)/N·(K·ε∞ + T·ε_inst), K·ε∞ + (K − 1)/K·T·ε_inst),

with ``ε_inst`` the instantaneous layer's own ε over its whole input (L-GRR / LOLOHA: ``ln(p₂/q₂)``;
L-*UE: ``d`` times the per-bit ε), ``N`` the unit domain, ``U`` the unit bound (``d``; LOLOHA
``g``) and ``K = min(T, U)``; dBitFlipPM has no instantaneous layer: unbounded from the second collection on. The
memoized reports hide *which* values a user holds, but the transcript shows *when* the value
changes and comes back. The papers' ``min(T, U)·ε∞`` ("lifetime loss at most ``g·ε∞`` however
often the value changes") holds only at the **value level** — between histories with the same
change pattern — and is charged only when a deployment names it (``relation="value"``; the spec
carries the relation, so a server sees what a series was charged under). The ledger and the device
charge collection ``t`` the increment ``collection_cost(t) = bound(t) − bound(t − 1)``, which
depends on ``t`` only (a device's refusal reveals nothing about its values).
:meth:`LongitudinalMechanism.lifetime_spend` is the value-level charge of a user who used
``distinct_units`` units (simulation only; never a user-level charge).

(L-OUE, L-OSUE, L-SUE and dBitFlipPM are in :mod:`.unary`; LOLOHA in :mod:`.hashed`.)

**Estimation** per round from the composed one-report channel with the shared estimator
(``estimate_pure``): L-GRR ``(p*, q*)``, L-*UE per bit ``(P(1|1), P(1|0))``, LOLOHA ``(p*, 1/g)``
over the users' hashes; dBitFlipPM per bucket over the users who sampled it. Analytic variance
for a fixed population from the true frequencies (``analytic_mse``).
"""

from __future__ import annotations

from abc import abstractmethod

import hashlib
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Sequence

import numpy as np

from ..._errors import LDPInputError, LDPParameterError
from ...estimation import FrequencyEstimate, estimate_pure, pure_variance, retarget
from ...exact import TWO64, epsilon_of_ratio, exp_lower_bound, float_up, ratio_within_exp
from ...sampling import RNGLike, as_source
from ..domain import check_epsilon
from ..domain import check_user_keys as _check_keys
from ..base import MechanismBase
from ..channel import Channel
from ..lifetime import TranscriptModel, bound, check_relation, increment
from ..mixins import MergeableCounts
from ..reports import ReportField, checked_reports, report_count
from ..protocol import Keyed, Verifiable

__all__ = ["LongitudinalMechanism", "LGRR", "LifetimeTracker"]

_M64 = (1 << 64) - 1


def _floor_t(p: Fraction) -> int:
    return min((p.numerator * TWO64) // p.denominator, TWO64 - 1)


def _prf(keys: list, fp: bytes, tag: bytes, units: Any, count: int) -> np.ndarray:
    """``(n, count)`` 64-bit words of SHAKE-256(len(key) ‖ key ‖ fp ‖ tag ‖ unit)."""
    shake, size, tail = hashlib.shake_256, 8 * count, fp + tag
    if units is None:
        words = b"".join([shake(bytes((len(k),)) + bytes(k) + tail).digest(size) for k in keys])
    else:  # each unit as 8 little-endian two's-complement bytes
        us = np.asarray(units).astype("<i8", casting="unsafe").tobytes()
        words = b"".join([shake(bytes((len(k),)) + bytes(k) + tail + us[8 * i:8 * i + 8]).digest(size) for i, k in enumerate(keys)])
    return np.frombuffer(words, dtype=np.uint64).reshape(len(keys), count).copy()


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

    capabilities = frozenset({Keyed, Verifiable})

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """The parameter choices ``ldp choose --family longitudinal`` ranks (the defaults here)."""
        return ({},)

    def unit_probabilities(self, theta: Any) -> np.ndarray:
        """The distribution of the memoized unit when a user's value is drawn from ``theta``
        (``ldp choose``'s expected lifetime): the value itself here."""
        return np.asarray(theta, dtype=np.float64)

    epsilon_perm: float
    epsilon_1: float
    d: int
    #: the neighbouring relation repeated collections are charged under (:mod:`.lifetime`):
    #: ``"user"`` (any two histories of one user, the default) or ``"value"`` (same change pattern)
    relation: str = "user"
    needs_user_keys = True

    def __post_init__(self) -> None:
        e_inf = check_epsilon(self.epsilon_perm, "epsilon_perm")
        e_one = check_epsilon(self.epsilon_1, "epsilon_1")
        if e_one >= e_inf and self.uses_epsilon_1:
            raise LDPParameterError(f"epsilon_1 must be below epsilon_perm (got epsilon_1={e_one!r}, epsilon_perm={e_inf!r})")
        if e_one > e_inf:  # no instantaneous layer (dBitFlipPM): epsilon_1 = epsilon_perm is the one report's ε, never more
            raise LDPParameterError(f"epsilon_1 must be in (0, epsilon_perm] (got epsilon_1={e_one!r}, epsilon_perm={e_inf!r})")
        if isinstance(self.d, bool) or not isinstance(self.d, (int, np.integer)) or not 2 <= int(self.d) <= 1 << 16:
            raise LDPParameterError(f"d must be an integer in [2, 2^16] (got {self.d!r})")
        object.__setattr__(self, "epsilon_perm", e_inf)
        object.__setattr__(self, "epsilon_1", e_one)
        object.__setattr__(self, "d", int(self.d))
        object.__setattr__(self, "relation", check_relation(self.relation))
        self._realize()
        inst = self._inst_ratio()
        object.__setattr__(self, "_lifetime", {
            "eps_one": Fraction(self.epsilon), "eps_perm": Fraction(self.epsilon_perm),
            "eps_inst": None if inst is None else Fraction(epsilon_of_ratio(inst[0])) * inst[1],
            "units": self.unit_domain(), "unit_bound": self.unit_bound()})

    uses_epsilon_1 = True

    @property
    def epsilon(self) -> float:
        """ε of one report (``epsilon_1``; dBitFlipPM: ``epsilon_perm``)."""
        return self.epsilon_1 if self.uses_epsilon_1 else self.epsilon_perm

    def spec(self) -> dict:
        """Name and parameters, the charging ``relation`` included (a server sees it)."""
        core = self._core_spec()
        return {"name": core["name"], "params": {**core["params"], "relation": self.relation}}

    def params(self) -> dict:
        """Public parameters as plain JSON-able values (the relation included)."""
        return {"mechanism": self.name, **self.spec()["params"]}

    def _core_spec(self) -> dict:
        return {"name": self.name, "params": {"epsilon_perm": self.epsilon_perm, "epsilon_1": self.epsilon_1, "d": self.d, **self._extra()}}

    def _extra(self) -> dict:
        return {}

    def _fp(self) -> bytes:
        # the PRF fingerprint: the channel's parameters only (the charging relation changes no report)
        return hashlib.sha256(repr(self._core_spec()).encode()).digest()[:16]

    def _codes(self, values: Any) -> np.ndarray:
        c = np.asarray(values)
        if c.ndim == 1 and c.size == 0:  # no user (``[]`` reads as float64)
            return np.empty(0, dtype=np.int64)
        if c.ndim != 1 or c.dtype.kind not in "iu" or (c.size and (c.min() < 0 or c.max() >= self.d)):
            raise LDPInputError(f"{self.name} takes a 1-d array of item codes in [0, {self.d})")
        return c.astype(np.int64)

    # -- lifetime accounting (:mod:`.lifetime`) --------------------------------------------------
    def unit_bound(self) -> int:
        """The most memoized units one user can ever use (the protocol's bound ``U``)."""
        return self.d

    def unit_domain(self) -> int:
        """``N``: the memoized units (values; LOLOHA hashed values; dBitFlipPM patterns)."""
        return self.d

    @abstractmethod
    def _inst_ratio(self) -> Optional[tuple]:
        """``(r, m)``: the instantaneous layer's worst ratio over any two inputs is ``r**m``
        (``None``: no instantaneous layer); every protocol declares it."""

    @property
    def epsilon_inst(self) -> Optional[Fraction]:
        """``ε_inst``: the instantaneous layer's own ε over its whole input, rounded up (exact);
        ``None`` without an instantaneous layer. One report conditioned on any past reports of
        the same key is ``ε_inst``-LDP (:mod:`.lifetime`, Lemma 2)."""
        return self._lifetime["eps_inst"]

    def lifetime_bound(self, t: int, *, relation: Optional[str] = None) -> Optional[Fraction]:
        """The exact lifetime bound after ``t`` collections under ``relation`` (default: the
        mechanism's own); ``None`` when unbounded (dBitFlipPM, user level, ``t >= 2``).
        User level: ``min(ε₁ + (t − 1)·ε_inst, (N − 1)/N·(K·ε∞ + t·ε_inst), K·ε∞ + (K − 1)/K·t·ε_inst)``
        with ``K = min(t, U)``; value
        level (same change pattern): ``min(min(t, U)·ε∞, user level)``."""
        return bound(self.relation if relation is None else check_relation(relation), t, **self._lifetime)

    def collection_cost(self, t: int) -> Fraction:
        """What collection number ``t`` (1-based) adds under the mechanism's ``relation``:
        ``lifetime_bound(t) − lifetime_bound(t − 1)`` — a function of ``t`` only, the same for
        every user (a device's refusal point reveals nothing about its values). The single
        entry point the server ledger (``Accountant.spend_collection``) and the device charge.
        Raises :class:`ldp_plugin.mechanisms.lifetime.UnboundedLossError` (a ``ValueError``)
        when the bound is unbounded (dBitFlipPM at the user level from ``t = 2``)."""
        return increment(self.relation, t, **self._lifetime)

    def lifetime_spend(self, distinct_units: int) -> Fraction:
        """The **value-level** (same change pattern) charge of a user who used ``distinct_units``
        memoized units: ``min(units, U)·ε∞``. Data-dependent and *not* a user-level guarantee:
        for simulations (:class:`LifetimeTracker`); a ledger charges :meth:`collection_cost`."""
        return min(int(distinct_units), self.unit_bound()) * Fraction(self.epsilon_perm)

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

    def estimate(self, reports: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95,  # type: ignore[override]
                 target: str = "sample") -> FrequencyEstimate:
        """One round's frequencies from its reports (the composed one-report channel)."""
        return self.estimate_from(self.accumulator().add(reports), candidates=candidates, postprocess=postprocess, confidence=confidence,
                                  target=target)

    def estimate_from(self, acc: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95,  # type: ignore[override]
                      target: str = "sample") -> FrequencyEstimate:
        self._refuse_frequency_options(candidates, None)
        return retarget(acc.estimate(postprocess=postprocess, confidence=confidence), target)

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
        raw = np.asarray(source.random_bytes(32 * codes.size), dtype=np.uint8).tobytes()
        return self.randomize(codes, [raw[i:i + 32] for i in range(0, len(raw), 32)], rng=source)

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
    """L-GRR: permanent GRR(ε∞) memoized per value, instantaneous GRR (one report ε1-LDP).

    Guarantee (module docstring; proof in :mod:`.lifetime`): one report ``ε₁``-LDP; ``T``
    collections at the **user level** (any two histories of one user)
    ``min(ε₁ + (T − 1)·ε_inst, (d − 1)/d·(K·ε∞ + T·ε_inst), K·ε∞ + (K − 1)/K·T·ε_inst)``
    (``K = min(T, d)``) with ``ε_inst = ln(p₂/q₂)`` of the instantaneous GRR; at the **value level** (same change
    pattern; the privacy analysis of L-GRR in Arcolezi et al. 2022) ``min(T, d)·ε∞`` — charged only with
    ``relation="value"``.

    Proof: docs/proofs/longitudinal.md
    """

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

    def _inst_ratio(self) -> tuple:
        p2, q2 = self.thresholds[4], self.thresholds[5]
        return max(p2 / q2, q2 / p2), 1

    def transcript_model(self) -> TranscriptModel:
        """The exact transcript law (:class:`.lifetime.TranscriptModel`): one column, the
        permanent GRR table over the ``k`` units and the instantaneous GRR."""
        k = self._k()
        p1, q1, p2, q2 = self.thresholds[2:6]
        perm = tuple(tuple(p1 if b == v else q1 for b in range(k)) for v in range(k))
        inst = tuple(tuple(p2 if y == b else q2 for y in range(k)) for b in range(k))
        return TranscriptModel(units=k, unit_bound=self.unit_bound(), perm=(perm,), inst=(inst,))

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
        return self._instantaneous(perm, source).astype(np.uint32)

    def _instantaneous(self, units: np.ndarray, source: Any) -> np.ndarray:
        """The instantaneous GRR over the ``k`` units (keep threshold ``T2``), from the source."""
        return _grr_sample(units, self._k(), self.thresholds[1], source)

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", kind="int", bound=self.d),)

    def _statistics(self, reports: Any) -> np.ndarray:
        return np.bincount(np.asarray(reports, dtype=np.int64), minlength=self.d)

    def _histogram_statistics(self, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """:meth:`_statistics` of the reports given as distinct values and their counts."""
        return np.bincount(values, weights=weights, minlength=self.d)


    def output_index(self, reports: Any) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)

    def channel(self):
        """Exact one-report channel (the permanent layer for a uniformly random key, composed)."""
        ps, qs = self.p_star_exact, self.q_star_exact
        return Channel(tuple(range(self.d)), tuple(tuple(ps if y == x else qs for y in range(self.d)) for x in range(self.d)))

    def verification_layers(self) -> tuple:
        """Each layer on its own, for the rates layer: ``(name, channel, sampler)`` of the
        permanent GRR(ε∞) over the ``k`` units (the real keyed PRF, a fresh random key per report)
        and of the instantaneous GRR over the ``k`` units (the real source sampler);
        ``sampler(x, n, source)`` gives ``n`` outputs (unit codes) on unit ``x``."""
        k = self._k()
        p1, q1, p2, q2 = self.thresholds[2:6]

        def grr(p: Fraction, q: Fraction) -> Channel:
            return Channel(tuple(range(k)), tuple(tuple(p if y == x else q for y in range(k)) for x in range(k)))

        def permanent(x: int, n: int, source: Any) -> np.ndarray:
            raw = np.asarray(source.random_bytes(32 * n), dtype=np.uint8).reshape(n, 32)
            return self._permanent(np.full(n, x, dtype=np.int64), [bytes(r) for r in raw])

        def instantaneous(x: int, n: int, source: Any) -> np.ndarray:
            return self._instantaneous(np.full(n, x, dtype=np.int64), source)

        return (("permanent", grr(p1, q1), permanent), ("instantaneous", grr(p2, q2), instantaneous))


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
        # the one row-check path first: a report out of range is refused, never counted (a bucket or
        # value code of 2**32 - 1 would otherwise size a count array of 32 GiB)
        reports = checked_reports(self.mechanism, reports)
        stats = np.asarray(self.mechanism._statistics(reports), dtype=np.float64)
        self.counts = stats if self.counts is None else self.counts + stats
        self.n += report_count(self.mechanism, reports)
        return self

    def add_histogram(self, columns: dict, weights: Any) -> "LongitudinalAccumulator":
        """Reports given as the distinct values of the mechanism's ``histogram_columns`` with their
        counts (a grouped Parquet scan, :mod:`ldp_plugin.executors`): counted as :meth:`add` counts
        the reports themselves (each distinct value through the one row-check path first)."""
        m = self.mechanism
        values = np.asarray(checked_reports(m, np.asarray(columns["report"]).astype(np.int64)), dtype=np.int64)
        w = np.asarray(weights, dtype=np.int64)
        if w.shape != values.shape or (w.size and int(w.min()) < 0):
            raise LDPInputError("histogram weights must be one non-negative count per distinct report")
        stats = np.asarray(m._histogram_statistics(values, w), dtype=np.float64)
        self.counts = stats if self.counts is None else self.counts + stats
        self.n += int(w.sum())
        return self

    def estimate(self, *, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        if self.n == 0:
            raise LDPParameterError("an estimate needs at least one report (n >= 1)")
        return self.mechanism._estimate_statistics(self.counts, self.n, postprocess, confidence)


class LifetimeTracker:
    """Collections and memoized units per user so far, and the lifetime charge (keep it where
    the key lives: on the device, or in the simulation).

    :meth:`spend` is the charge under the mechanism's ``relation``: at the user level the same
    ``lifetime_bound(t)`` for every user after ``t`` collections (data-independent); at the
    value level each user's ``min(units·ε∞, user-level bound)`` (same-change-pattern pairs of
    that user's history). :meth:`value_spend` is the value-level figure whatever the relation."""

    def __init__(self, mechanism: LongitudinalMechanism, n_users: int):
        self.mechanism = mechanism
        self.collections = 0
        self.seen = np.zeros((n_users, max(mechanism.unit_bound(), mechanism.d) + 1), dtype=bool)

    def observe(self, codes: Any, user_keys: Sequence[bytes]) -> None:
        units = self.mechanism.memo_units(codes, user_keys)
        self.seen[np.arange(units.size), units] = True
        self.collections += 1

    def user_bound(self) -> float:
        """The user-level bound after the observed collections, rounded up (``inf``: unbounded)."""
        b = self.mechanism.lifetime_bound(self.collections, relation="user")
        return math.inf if b is None else float_up(b)

    def value_spend(self) -> np.ndarray:
        """Each user's value-level charge so far, as floats (rounded up from the Fractions)."""
        m = self.mechanism
        cap = m.lifetime_bound(self.collections, relation="value")
        counts = np.minimum(self.seen.sum(axis=1), m.unit_bound())
        table = np.array([float_up(min(m.lifetime_spend(c), cap)) for c in range(m.unit_bound() + 1)])
        return table[counts]

    def spend(self) -> np.ndarray:
        """Each user's charge so far under the mechanism's relation (floats rounded up)."""
        if self.mechanism.relation == "value":
            return self.value_spend()
        return np.full(self.seen.shape[0], self.user_bound())
