"""Longitudinal protocols with unary reports: L-OUE, L-OSUE, L-SUE and dBitFlipPM (see
:mod:`.base` for the shared memoization, accounting and references)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ..._errors import LDPParameterError
from ...estimation import FrequencyEstimate, finalize_estimate
from ...exact import TWO64, exp_lower_bound, ratio_within_exp
from ..channel import Channel
from ..lifetime import TranscriptModel
from .base import LongitudinalMechanism, _floor_t, _prf, _prf_uniform, keys_rows
from ..domain import check_user_keys as _check_keys
from ..reports import ReportField

__all__ = ["LOUE", "LOSUE", "LSUE", "DBitFlipPM"]


# ---------------------------------------------------------------------------------------------------
def _unary_composed(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> tuple:
    return p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2


def _unary_ratio(P1: Fraction, P0: Fraction) -> Fraction:
    return (P1 * (1 - P0)) / (P0 * (1 - P1))


@dataclass(frozen=True, kw_only=True)
class _LUnary(LongitudinalMechanism):
    """Permanent unary encoding (OUE or SUE with ε∞), instantaneous per-bit flip (OUE or SUE
    form) solved so that one report is ε1-LDP: ``P(1 | 1)``, ``P(1 | 0)`` of the composition.

    Guarantee (proof in :mod:`.lifetime`): one report ``ε₁``-LDP; ``T`` collections at the
    **user level** (any two histories of one user) ``min(ε₁ + (T − 1)·ε_inst, (d − 1)/d·(K·ε∞ + T·ε_inst), K·ε∞ + (K − 1)/K·T·ε_inst)``
    (``K = min(T, d)``) where ``ε_inst = d·max(ln(p₂/q₂), ln((1 − q₂)/(1 − p₂)))`` is the
    instantaneous flip's ε over *any* two permanent bit vectors (a change of memoized unit
    swaps the whole permanent vector, every bit of which the transcript can have learned); at the
    **value level** (same change pattern; Arcolezi et al. 2022) ``min(T, d)·ε∞``, charged only
    with ``relation="value"``.
    """

    perm_form: str = field(init=False, default="oue", repr=False)
    inst_form: str = field(init=False, default="oue", repr=False)
    thresholds: tuple = field(init=False, repr=False, compare=False)

    def _realize(self) -> None:
        A = exp_lower_bound(self.epsilon_perm)
        if self.perm_form == "oue":
            T_p1, T_q1 = TWO64 // 2, _floor_t(1 / (A + 1)) + 1  # ratio (1/2·(1−q))/(q·1/2) = (1−q)/q <= e^ε∞
        else:
            h = exp_lower_bound(self.epsilon_perm / 2)
            T_p1 = _floor_t(h / (h + 1))
            T_q1 = TWO64 - T_p1
        p1, q1 = Fraction(T_p1, TWO64), Fraction(T_q1, TWO64)
        if not ratio_within_exp(_unary_ratio(p1, q1), self.epsilon_perm):
            raise LDPParameterError(f"{self.name}: the permanent layer's realized ratio exceeds e^epsilon_perm")

        def inst(q2f: float) -> tuple:
            T_q2 = int(q2f * 2.0**64)
            T_p2 = TWO64 // 2 if self.inst_form == "oue" else TWO64 - T_q2
            return T_p2, T_q2

        lo, hi = 1e-18, 0.5  # more noise as q2 → 1/2
        for _ in range(200):
            mid = (lo + hi) / 2
            T_p2, T_q2 = inst(mid)
            P1, P0 = _unary_composed(p1, q1, Fraction(T_p2, TWO64), Fraction(T_q2, TWO64))
            if ratio_within_exp(_unary_ratio(P1, P0), self.epsilon_1):
                hi = mid
            else:
                lo = mid
        T_p2, T_q2 = inst(hi)
        P1, P0 = _unary_composed(p1, q1, Fraction(T_p2, TWO64), Fraction(T_q2, TWO64))
        if not ratio_within_exp(_unary_ratio(P1, P0), self.epsilon_1):  # pragma: no cover (hi always fits)
            raise LDPParameterError(f"{self.name}: no instantaneous layer fits epsilon_1={self.epsilon_1!r}")
        object.__setattr__(self, "thresholds", (T_p1, T_q1, T_p2, T_q2, P1, P0))

    def _inst_ratio(self) -> tuple:
        p2, q2 = Fraction(self.thresholds[2], TWO64), Fraction(self.thresholds[3], TWO64)
        return max(p2 / q2, (1 - q2) / (1 - p2)), self.d  # per bit, any two vectors differ in <= d bits

    def transcript_model(self) -> TranscriptModel:
        """Exact transcript law: ``d`` independent bit columns; column ``j``'s permanent bit of
        unit ``v`` is 1 with ``P(1|1)`` of the permanent layer if ``v = j`` else ``P(1|0)``."""
        T_p1, T_q1, T_p2, T_q2 = self.thresholds[:4]
        p1, q1, p2, q2 = (Fraction(x, TWO64) for x in (T_p1, T_q1, T_p2, T_q2))
        inst = ((1 - q2, q2), (1 - p2, p2))
        perm = tuple(tuple((1 - p1, p1) if v == j else (1 - q1, q1) for v in range(self.d)) for j in range(self.d))
        return TranscriptModel(units=self.d, unit_bound=self.unit_bound(), perm=perm, inst=(inst,) * self.d)

    @property
    def p_star_exact(self) -> Fraction:
        return self.thresholds[4]

    @property
    def realized_ratio(self) -> Fraction:
        """The composed one-report channel's worst-case ratio (two bits differ)."""
        return _unary_ratio(self.thresholds[4], self.thresholds[5])

    @property
    def q_star_exact(self) -> Fraction:
        return self.thresholds[5]

    def _collect(self, codes: np.ndarray, keys: list, source: Any) -> np.ndarray:
        bits = self._instantaneous_bits(self._permanent_bits(codes, keys), source)
        return np.packbits(bits, axis=1, bitorder="little")

    def _permanent_bits(self, codes: np.ndarray, keys: list) -> np.ndarray:
        """The memoized permanent vectors: bit ``j`` is a PRF word of (key, value) below ``T_p1``
        (``j`` = the value) or ``T_q1``."""
        T_p1, T_q1 = self.thresholds[:2]
        n, d = codes.size, self.d
        words = _prf(keys, self._fp(), b"prr", codes, d)
        own = np.zeros((n, d), dtype=bool)
        own[np.arange(n), codes] = True
        return words < np.where(own, np.uint64(T_p1), np.uint64(T_q1))

    def _instantaneous_bits(self, perm: np.ndarray, source: Any) -> np.ndarray:
        """The instantaneous flip: each bit 1 with ``T_p2`` where the permanent bit is 1, else ``T_q2``."""
        T_p2, T_q2 = self.thresholds[2:4]
        return source.bernoulli_each(np.where(perm, np.uint64(T_p2), np.uint64(T_q2)).ravel()).reshape(perm.shape)

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint8", width=(self.d + 7) // 8, kind="bits", bound=self.d),)

    def _statistics(self, reports: Any) -> np.ndarray:
        return np.unpackbits(np.asarray(reports, dtype=np.uint8), axis=1, count=self.d, bitorder="little").sum(axis=0, dtype=np.int64)


    def output_index(self, reports: Any) -> np.ndarray:
        bits = np.unpackbits(np.asarray(reports, dtype=np.uint8), axis=1, count=self.d, bitorder="little").astype(np.int64)
        return bits @ (1 << np.arange(self.d, dtype=np.int64))

    def channel(self):
        """Exact one-report channel over the ``2^d`` bit vectors (``d <= 12``): independent bits,
        ``P(1) = P(1|1)`` at the own item, ``P(1|0)`` elsewhere (the permanent layer for a random key)."""
        if self.d > 12:
            raise LDPParameterError("the exact channel enumerates 2^d outputs: d <= 12")
        P1, P0 = self.p_star_exact, self.q_star_exact
        rows = []
        for x in range(self.d):
            row = []
            for y in range(1 << self.d):
                pr = Fraction(1)
                for j in range(self.d):
                    b = (y >> j) & 1
                    p = P1 if j == x else P0
                    pr *= p if b else 1 - p
                row.append(pr)
            rows.append(tuple(row))
        return Channel(tuple(range(1 << self.d)), tuple(rows))

    def verification_layers(self) -> tuple:
        """Each layer on its own, for the rates layer: ``(name, channel, sampler)`` of the permanent
        unary encoding (the real keyed PRF, a fresh random key per report) on value ``x`` and of
        the instantaneous flip on the one-hot vector of ``x`` (the real source sampler); outputs
        are bit vectors as integers (bit ``j`` = item ``j``), channels over the ``2^d`` vectors."""
        if self.d > 12:
            raise LDPParameterError("the layer channels enumerate 2^d outputs: d <= 12")
        d = self.d
        weights = 1 << np.arange(d, dtype=np.int64)
        p1, q1, p2, q2 = (Fraction(t, TWO64) for t in self.thresholds[:4])

        def bits_channel(P: Fraction, Q: Fraction) -> Channel:
            rows = []
            for x in range(d):
                rows.append(tuple(math.prod((P if j == x else Q) if (y >> j) & 1 else 1 - (P if j == x else Q) for j in range(d))
                                  for y in range(1 << d)))
            return Channel(tuple(range(1 << d)), tuple(rows))

        def permanent(x: int, n: int, source: Any) -> np.ndarray:
            raw = np.asarray(source.random_bytes(32 * n), dtype=np.uint8).reshape(n, 32)
            return self._permanent_bits(np.full(n, x, dtype=np.int64), [bytes(r) for r in raw]).astype(np.int64) @ weights

        def instantaneous(x: int, n: int, source: Any) -> np.ndarray:
            one_hot = np.zeros((n, d), dtype=bool)
            one_hot[:, x] = True
            return self._instantaneous_bits(one_hot, source).astype(np.int64) @ weights

        return (("permanent", bits_channel(p1, q1), permanent), ("instantaneous", bits_channel(p2, q2), instantaneous))


@dataclass(frozen=True, kw_only=True)
class LOUE(_LUnary):
    """L-OUE: permanent OUE(ε∞), instantaneous OUE-form flip.

    Proof: docs/proofs/longitudinal.md
    """

    name = "l-oue"


@dataclass(frozen=True, kw_only=True)
class LOSUE(_LUnary):
    """L-OSUE: permanent OUE(ε∞), instantaneous SUE-form flip (the paper's best).

    Proof: docs/proofs/longitudinal.md
    """

    name = "l-osue"
    inst_form: str = field(init=False, default="sue", repr=False)


@dataclass(frozen=True, kw_only=True)
class LSUE(_LUnary):
    """L-SUE: permanent and instantaneous SUE (basic RAPPOR).

    Proof: docs/proofs/longitudinal.md
    """

    name = "l-sue"
    perm_form: str = field(init=False, default="sue", repr=False)
    inst_form: str = field(init=False, default="sue", repr=False)


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class DBitFlipPM(LongitudinalMechanism):
    """dBitFlipPM: ``d_bits`` buckets sampled once per user (exact partial Fisher–Yates from the
    key's PRF), one memoized bit each with ``P(1) = e^{ε/2}/(e^{ε/2} + 1)`` if the value is that
    bucket, else ``1/(e^{ε/2} + 1)`` (``ε = epsilon_perm``); memoized per pattern.

    Guarantee (Ding, Kulkarni, Yekhanin 2017, the memoization analysis of dBitFlipPM; :mod:`.lifetime`): one report
    ``ε∞``-LDP; ``T`` collections at the **value level** (histories with the same change pattern
    of patterns) ``min(T, d_bits + 1)·ε∞`` — charged only with ``relation="value"``. There is no
    instantaneous layer, so at the **user level** (any two histories of one user) two reports of
    one key are identical unless the pattern changed: the loss of a second collection is
    **unbounded** and :meth:`collection_cost` refuses it (:class:`.lifetime.UnboundedLossError`).
    We do not add an instantaneous layer: the protocol as published has none, and an added one
    would be a different mechanism (a new registry name).

    Proof: docs/proofs/longitudinal.md
    """

    name = "dbitflip"
    d_bits: int = 1
    uses_epsilon_1 = False

    def unit_probabilities(self, theta: Any) -> np.ndarray:
        """The memoized patterns' law for a value drawn from ``theta``: pattern ``j < d_bits`` —
        the value's bucket is the ``j``-th smallest of the user's sampled buckets (sorted, see
        :meth:`buckets`) — and "none of them". A value ``v`` is sampled with probability
        ``d_bits/d`` and then has ``j`` smaller sampled buckets with probability
        ``C(v, j)·C(d − 1 − v, d_bits − 1 − j)/C(d − 1, d_bits − 1)`` (the other buckets: a uniform
        subset of the rest), so the law depends on ``theta`` (uniform ``1/d`` only at a uniform ``theta``)."""
        d, b = self.d, self.d_bits
        th = np.asarray(theta, dtype=np.float64)
        rank = np.array([[math.comb(v, j) * math.comb(d - 1 - v, b - 1 - j) for j in range(b)] for v in range(d)], dtype=np.float64)
        sampled = (b / d) * (th @ rank) / math.comb(d - 1, b - 1)
        return np.concatenate([sampled, [1 - b / d]])
    T: int = field(init=False, repr=False, compare=False)  # the bit threshold (compared with PRF words)

    def _realize(self) -> None:
        b = self.d_bits
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 1 <= int(b) <= self.d:
            raise LDPParameterError(f"d_bits must be an integer in [1, d] (got {b!r})")
        object.__setattr__(self, "d_bits", int(b))
        h = exp_lower_bound(self.epsilon_perm / 2)
        T = _floor_t(h / (h + 1))
        object.__setattr__(self, "T", T)
        ratio = (Fraction(T, TWO64) / Fraction(TWO64 - T, TWO64)) ** 2
        if not ratio_within_exp(ratio, self.epsilon_perm):
            raise LDPParameterError(f"dbitflip: the realized ratio exceeds e^epsilon_perm (epsilon_perm={self.epsilon_perm!r})")

    def _extra(self) -> dict:
        return {"d_bits": self.d_bits}

    @property
    def realized_ratio(self) -> Fraction:
        """Two values differ in at most two sampled buckets' bits (one when ``d_bits = 1``)."""
        r = Fraction(self.T, TWO64 - self.T)
        return r ** min(2, self.d_bits)

    def unit_bound(self) -> int:
        return self.d_bits + 1

    def unit_domain(self) -> int:
        return self.d_bits + 1

    def _inst_ratio(self) -> None:
        return None  # no instantaneous layer

    def transcript_model(self) -> TranscriptModel:
        """Exact transcript law given the (public, data-independent) buckets: ``d_bits`` bit
        columns over the ``d_bits + 1`` patterns (pattern ``d_bits`` = none); the identity as
        the instantaneous layer."""
        p = Fraction(self.T, TWO64)
        ident = ((Fraction(1), Fraction(0)), (Fraction(0), Fraction(1)))
        perm = tuple(tuple((1 - p, p) if v == i else (p, 1 - p) for v in range(self.d_bits + 1)) for i in range(self.d_bits))
        return TranscriptModel(units=self.d_bits + 1, unit_bound=self.unit_bound(), perm=perm, inst=(ident,) * self.d_bits)

    @property
    def p(self) -> float:
        return self.T / 2.0**64

    @property
    def q(self) -> float:
        return (TWO64 - self.T) / 2.0**64

    def buckets(self, keys: list) -> np.ndarray:
        """Each user's ``d_bits`` sampled buckets, sorted (fixed per key)."""
        n, d, fp = len(keys), self.d, self._fp()
        perm = np.tile(np.arange(d, dtype=np.int64), (n, 1))
        rows = np.arange(n)
        for i in range(self.d_bits):
            r = d - i
            words = _prf(keys, fp, b"bucket%d" % i, None, 4)
            j = i + _prf_uniform(words, r, lambda rr, i=i: _prf(keys_rows(keys, rr), fp, b"bucket%d+" % i, None, 4))
            perm[rows, i], perm[rows, j] = perm[rows, j], perm[rows, i].copy()
        return np.sort(perm[:, : self.d_bits], axis=1)

    def _patterns(self, codes: np.ndarray, J: np.ndarray) -> np.ndarray:
        hit = J == codes[:, None]
        return np.where(hit.any(axis=1), hit.argmax(axis=1), self.d_bits)

    def memo_units(self, codes: Any, user_keys: Sequence[bytes]) -> np.ndarray:
        keys = _check_keys(user_keys, np.asarray(codes).size)
        return self._patterns(self._codes(codes), self.buckets(keys))

    def _collect(self, codes: np.ndarray, keys: list, source: Any) -> tuple:
        J = self.buckets(keys)
        pat = self._patterns(codes, J)
        words = _prf(keys, self._fp(), b"bits", pat, self.d_bits)
        own = np.arange(self.d_bits)[None, :] == pat[:, None]
        bits = words < np.where(own, np.uint64(self.T), np.uint64(TWO64 - self.T))
        return J.astype(np.uint32), bits.astype(np.uint8)

    def report_fields(self) -> tuple:
        return (ReportField("bucket", "uint32", width=self.d_bits, kind="sorted", bound=self.d),
                ReportField("bit", "uint8", width=self.d_bits, kind="int", bound=2))

    def _to_columns(self, reports: Any) -> dict:
        return {"bucket": np.asarray(reports[0]), "bit": np.asarray(reports[1])}

    def _from_columns(self, cols: dict) -> Any:
        return np.asarray(cols["bucket"], dtype=np.uint32), np.asarray(cols["bit"], dtype=np.uint8)

    def _statistics(self, reports: Any) -> np.ndarray:
        """Ones per bucket, then reports per bucket (one vector of 2d additive counts)."""
        J, bits = np.asarray(reports[0], dtype=np.int64), np.asarray(reports[1], dtype=np.int64)
        n_j = np.bincount(J.ravel(), minlength=self.d).astype(np.float64)
        ones = np.bincount(J.ravel(), weights=bits.ravel(), minlength=self.d)
        return np.concatenate([ones, n_j])

    def _estimate_statistics(self, stats: np.ndarray, n: int, postprocess: str, confidence: float) -> FrequencyEstimate:
        ones, n_j = stats[: self.d], stats[self.d:]
        with np.errstate(invalid="ignore", divide="ignore"):
            raw = np.where(n_j > 0, (ones / n_j - self.q) / (self.p - self.q), 0.0)
        se = np.sqrt(self._variance(np.clip(raw, 0, 1), n, np.maximum(n_j, 1)))
        return finalize_estimate(raw, se, n, postprocess=postprocess, confidence=confidence, items=tuple(range(self.d)))

    def _variance(self, f: np.ndarray, n: int, n_j: Any) -> np.ndarray:
        p, q = self.p, self.q
        pi = np.asarray(n_j) / n
        return (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (np.asarray(n_j) * (p - q) ** 2) + f * (1 - f) * (1 - pi) / np.asarray(n_j)

    def analytic_mse(self, n: int, *, theta: Any = None, **_: Any) -> float:  # type: ignore[override]
        return float(self._variance(np.asarray(theta, dtype=np.float64), n, n * self.d_bits / self.d).sum())

    def _combos(self) -> dict:
        from itertools import combinations

        return {c: i for i, c in enumerate(combinations(range(self.d), self.d_bits))}

    def output_index(self, reports: Any) -> np.ndarray:
        combos = self._combos()
        J, bits = np.asarray(reports[0], dtype=np.int64), np.asarray(reports[1], dtype=np.int64)
        j_index = np.array([combos[tuple(r)] for r in J.tolist()], dtype=np.int64)
        return j_index * (1 << self.d_bits) + bits @ (1 << np.arange(self.d_bits, dtype=np.int64))

    def channel(self):
        """Exact one-report channel over (sampled buckets, bits) for a random key (small d)."""
        combos = list(self._combos())
        if len(combos) * (1 << self.d_bits) > 4096:
            raise LDPParameterError("the exact channel enumerates C(d, d_bits)·2^d_bits outputs: at most 4096")
        p = Fraction(self.T, TWO64)
        rows = []
        for x in range(self.d):
            row = []
            for J in combos:
                for b in range(1 << self.d_bits):
                    pr = Fraction(1, len(combos))
                    for i, j in enumerate(J):
                        one = p if j == x else 1 - p
                        pr *= one if (b >> i) & 1 else 1 - one
                    row.append(pr)
            rows.append(tuple(row))
        return Channel(tuple(range(len(rows[0]))), tuple(rows))
