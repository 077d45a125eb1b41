"""Deliberately broken mechanisms: the verification layers must catch every one of them.

Each is a small subclass of a correct mechanism with one realistic mistake. They are constructible
(``_construction_check_disabled``) so the *verification* — not the constructor — has to find the
flaw. :func:`seeded_bugs` returns canonical instances; ``ldp verify --self-test`` and the test
suite run the layers on them.

| bug | what is wrong | true ε | caught by |
|---|---|---|---|
| ``SwappedUE`` | a unary encoding with SUE's ``p`` and OUE's ``q`` | 1.5 ε | exact, audit |
| ``MissedHalfRAPPOR`` | per-bit budget ε instead of ε/2 | 2 ε | exact, audit |
| ``StickyRAPPOR`` | never clears the true bit (pure-ldp's RAPPOR defect) | ∞ | goodness of fit, audit |
| ``NoPredecessorSubset`` | k-subset that can never output ``x − 1`` | ∞ | goodness of fit, audit |
| ``Quantized32KRR`` | k-RR probabilities quantized to a 32-bit uniform, ε = 20 | > 20 | exact |
| ``UnderDeclaredKRR`` | declares ε 10% below the ε its thresholds realize | 1.1 ε | exact, audit |
| ``ThresholdDriftKRR`` | the client compares with a threshold other than the declared one, ε = 20 | 20.0004 | sampling path |
| ``RateLowOUE`` / ``RateHighOUE`` | the client's 0→1 bit rate is 2% below / above the declared q* | ≈ 1.02 ε | sampling path, rates |
| ``SharedNoisePairsRAPPOR`` | users 2i and 2i+1 share one randomization (each marginal exact) | ∞ jointly | joint |
| ``LastBitOUE`` | the last bit is never randomized (OpenDP's bit-vector RR before 0.15) | ∞ | sampling path, goodness of fit |
| ``ValueChargedAsUserLGRR`` | L-GRR whose ledger charge at ``relation="user"`` is the papers' value-level ``min(t, d)·ε∞`` (the value-level charge presented as user-level) | 5.38 > 4 at T = 8 | transcript |
| ``FittedChargeLGRR`` | L-GRR charging ``1.09·ε₁`` per collection: above the worst of every 2-unit history pair and of the named pairs, below the true worst pair (three units, T = 6) | 6.63 > 6.54 at T = 6 | transcript (every history) |
| ``HonestOneKRR`` | k-RR whose ``randomize_one`` reports the true item (the batch path is exact) | ∞ | entry points (``randomize_one`` against the batch path) |
| ``FloatBoundaryGeometric`` | the client's cumulative boundaries built by ``np.cumsum`` over Python ints (numpy goes through float64: boundaries >= 2**63 rounded), d = 3, ε = 16.42 | ε + 2.9e−10 | exact (reads the boundaries the client searches) |
| ``WindowRatePiecewise`` | Piecewise whose client compares its own words with an in-window threshold 0.5% above the declared one (invisible to the threshold-recording layer) | ≈ 1.005·e^ε ratio | rates |
| ``GridEpsilonKRR`` | k-RR whose thresholds come from ε rounded *up* to a 0.1 grid (a precomputed table): exact at every canonical ε, too weak elsewhere | up to ε + 0.1 | random draws (exact layer) |
| ``FixedKeyAESKRR`` | exact on the seeded source; on the secure source large requests reuse one AES key (the same keystream every request) | ∞ across requests | joint |
| ``KernelOnlyOUE`` | exact on the numpy kernels; when the compiled kernels run, q is 10% high | ≈ 1.1 ε | production path |
| ``HalfOffsetKRR`` | users ``i`` and ``i + n/2`` share their randomness (neighbours independent) | ∞ jointly | joint |
| ``ComplementedKRR`` | keeps the true item with ``1 − p`` (the complement of the declared threshold; ε = 0.02, a 1% shift) | ε, wrong channel | positions |
| ``SwappedBitsRAPPOR`` | draws the own bit with ``q`` and the other bits with ``p`` (both thresholds declared; ε = 0.05) | ε, wrong channel | positions |
| ``PermanentInInstantaneousLGRR`` | L-GRR whose instantaneous layer compares with the permanent layer's threshold | ≈ ε∞ per report | positions |
| ``BiasedRoundingDuchi`` | numbers in the middle grid cell round up 1/8 too often (public ``randomize`` only) | biased mean | entry points |
| ``SeedFromValueOLH`` | the public client derives the hash seed from the value (the verification hook is right) | ∞ (the seed names the value) | entry points |
| ``FirstItemsSampleOne`` | long sets (``on_long="sample"``) sample among their first ``m`` items only | wrong channel | entry points |
| ``KeylessMemoized`` | the permanent layer ignores the user's key (every holder of a value gets the same permanent report) | wrong channel | positions |
| ``ForkRepeatKRR`` | the secure source is replaced by a per-process stream seeded once: a forked child repeats its parent | ∞ across processes | joint |
| ``OffByOneQKRR`` | the server debiases with ``q* = 1/(e^ε + d)`` (``d`` for ``d − 1``); the client is exact | ε (a biased estimate) | estimators (bias) |
| ``SquareFreeOUE`` | the server's variance is divided by ``n(p* − q*)`` instead of ``n(p* − q*)²`` (intervals 2× too wide) | ε (a wrong variance) | estimators (stated variance) |
| ``ScaledTwiceDuchi`` | the mean's standard error multiplied by the scale ``(upper − lower)/2`` twice (half its size on ``[0, 1]``) | ε (a wrong variance) | estimators (stated variance, coverage) |
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from ..sampling.kernels import compiled
from ..estimation import estimate_pure, normal_quantile, retarget
from ..exact import TWO64, exp_lower_bound
from ..hashing import mix64
from ..mechanisms import KRR, OLH, OUE, RAPPOR, GeometricMechanism, KSubset, Piecewise, SampleOne
from ..mechanisms.channel import floor_threshold
from ..mechanisms.longitudinal.base import LGRR, _grr_sample
from ..mechanisms.numeric import Duchi
from ..mechanisms.unary import UnaryEncoding, randomize_bit_rows
from ..mechanisms.longitudinal import Memoized
from ..sampling import RandomSource, SeededRandomSource
from ..sampling.cipher import CIPHER_MIN, _cipher_module

__all__ = [
    "SwappedUE",
    "MissedHalfRAPPOR",
    "StickyRAPPOR",
    "NoPredecessorSubset",
    "Quantized32KRR",
    "UnderDeclaredKRR",
    "ThresholdDriftKRR",
    "RateLowOUE",
    "RateHighOUE",
    "SharedNoisePairsRAPPOR",
    "LastBitOUE",
    "ValueChargedAsUserLGRR",
    "FittedChargeLGRR",
    "HonestOneKRR",
    "FloatBoundaryGeometric",
    "WindowRatePiecewise",
    "GridEpsilonKRR",
    "FixedKeyAESKRR",
    "KernelOnlyOUE",
    "HalfOffsetKRR",
    "ForkRepeatKRR",
    "ComplementedKRR",
    "SwappedBitsRAPPOR",
    "PermanentInInstantaneousLGRR",
    "BiasedRoundingDuchi",
    "SeedFromValueOLH",
    "FirstItemsSampleOne",
    "KeylessMemoized",
    "OffByOneQKRR",
    "SquareFreeOUE",
    "ScaledTwiceDuchi",
    "seeded_bugs",
]


@dataclass(frozen=True, kw_only=True)
class SwappedUE(UnaryEncoding):
    name = "bug-swapped-ue"
    _construction_check_disabled: ClassVar[bool] = True

    def _thresholds(self):
        Lh = exp_lower_bound(self.epsilon / 2)
        L = exp_lower_bound(self.epsilon)
        return floor_threshold(Lh / (Lh + 1)), floor_threshold(1 / (L + 1))  # SUE's p, OUE's q


@dataclass(frozen=True, kw_only=True)
class MissedHalfRAPPOR(RAPPOR):
    name = "bug-missed-half-rappor"
    _construction_check_disabled: ClassVar[bool] = True

    def _thresholds(self):
        L = exp_lower_bound(self.epsilon)  # should be ε/2 per bit: two bits change
        tp = floor_threshold(L / (L + 1))
        return tp, TWO64 - tp


@dataclass(frozen=True, kw_only=True)
class StickyRAPPOR(RAPPOR):
    """Declares RAPPOR's channel but never clears the user's own bit."""

    name = "bug-sticky-rappor"

    def _randomize_codes(self, codes, source):
        out = super()._randomize_codes(codes, source)
        out[np.arange(codes.size), codes >> 3] |= (np.uint8(1) << (codes & 7).astype(np.uint8))
        return out


@dataclass(frozen=True, kw_only=True)
class NoPredecessorSubset(KSubset):
    """Declares the k-subset channel, but replaces ``x − 1`` (mod d) by another item."""

    name = "bug-no-predecessor-subset"

    def _randomize_codes(self, codes, source):
        out = super()._randomize_codes(codes, source).astype(np.int64)
        pred = (codes - 1) % self.d
        for i in np.flatnonzero((out == pred[:, None]).any(axis=1)):
            row = set(out[i].tolist())
            row.discard(int(pred[i]))
            row.add(next(v for v in range(self.d) if v not in row and v != pred[i]))
            out[i] = sorted(row)
        return out.astype(self._report_dtype())


@dataclass(frozen=True, kw_only=True)
class Quantized32KRR(KRR):
    """k-RR sampled by inverse CDF on a 32-bit uniform: each other item gets
    ``floor(q·2**32)/2**32`` and the true item the rest — q is rounded *down*."""

    name = "bug-quantized32-krr"
    _construction_check_disabled: ClassVar[bool] = True

    def _realize(self):
        L = exp_lower_bound(self.epsilon)
        q32 = floor_threshold(1 / (L + self.d - 1)) >> 32  # floor(q · 2**32)
        object.__setattr__(self, "_q32", q32)
        q = Fraction(q32, 1 << 32)
        p = 1 - (self.d - 1) * q
        object.__setattr__(self, "keep_threshold", floor_threshold(p))
        return p, q, p / q

    def _randomize_codes(self, codes, source):
        u = source.words(codes.size, bits=32).astype(np.int64)
        other = u // max(self._q32, 1)  # the j-th block of q32 values → the j-th other item
        keep = other >= self.d - 1
        other = np.minimum(other, self.d - 2)
        other += other >= codes
        return np.where(keep, codes, other).astype(np.uint16)


@dataclass(frozen=True, kw_only=True)
class UnderDeclaredKRR(KRR):
    """Thresholds for ``1.1 ε`` while declaring ``ε``."""

    name = "bug-under-declared-krr"
    _construction_check_disabled: ClassVar[bool] = True

    def _realize(self):
        L = exp_lower_bound(self.epsilon * 1.1)
        T = floor_threshold(L / (L + self.d - 1))
        object.__setattr__(self, "keep_threshold", T)
        p = Fraction(T, TWO64)
        q = (1 - p) / (self.d - 1)
        return p, q, Fraction(T * (self.d - 1), TWO64 - T)


@dataclass(frozen=True, kw_only=True)
class ThresholdDriftKRR(KRR):
    """Declares k-RR's threshold but keeps the true item with a slightly larger one (a constant
    that drifted from the derivation: at ε = 20 the realized ε is about 20.0004)."""

    name = "bug-threshold-drift-krr"

    def _randomize_codes(self, codes, source):
        n = codes.size
        keep = source.bernoulli(self.keep_threshold + (TWO64 - self.keep_threshold) // 2500, n)
        other = source.uniform_int(self.d - 1, n).astype(np.int64)
        other += other >= codes
        return np.where(keep, codes, other).astype(np.uint16)


def _unary_rows(mech, codes, source, q_threshold, n_bits):
    return randomize_bit_rows(codes[:, None], n_bits, mech.p_threshold, q_threshold, source)


@dataclass(frozen=True, kw_only=True)
class RateLowOUE(OUE):
    """OUE whose client draws the 0→1 bits with a rate 2% below the declared q*."""

    name = "bug-rate-2pct-low"

    def _randomize_codes(self, codes, source):
        return _unary_rows(self, codes, source, self.q_threshold * 98 // 100, self.d)


@dataclass(frozen=True, kw_only=True)
class RateHighOUE(OUE):
    """OUE whose client draws the 0→1 bits with a rate 2% above the declared q*."""

    name = "bug-rate-2pct-high"

    def _randomize_codes(self, codes, source):
        return _unary_rows(self, codes, source, self.q_threshold * 102 // 100, self.d)


@dataclass(frozen=True, kw_only=True)
class SharedNoisePairsRAPPOR(RAPPOR):
    """Users 2i and 2i+1 get the same noise: each report's marginal is exactly RAPPOR's, but two
    users' reports are not independent (joint privacy is broken)."""

    name = "bug-shared-noise-pairs"

    def _randomize_codes(self, codes, source):
        n = codes.size
        half = (n + 1) // 2
        noise = super()._randomize_codes(np.zeros(half, dtype=np.int64), source)  # noise of input 0
        rows = np.repeat(noise, 2, axis=0)[:n]
        # move each user's own bit to their item: swap bit 0 and bit x (same distribution per row)
        out = rows.copy()
        bit0 = (rows[:, 0] & 1).astype(np.uint8)
        idx = np.arange(n)
        bx = (rows[idx, codes >> 3] >> (codes & 7).astype(np.uint8)) & 1
        out[:, 0] = (out[:, 0] & ~np.uint8(1)) | bx.astype(np.uint8)
        out[idx, codes >> 3] = (out[idx, codes >> 3] & ~(np.uint8(1) << (codes & 7).astype(np.uint8))) | (bit0 << (codes & 7).astype(np.uint8))
        return out


@dataclass(frozen=True, kw_only=True)
class LastBitOUE(OUE):
    """OUE whose client randomizes only the first d − 1 bits: the last bit is the user's own."""

    name = "bug-last-bit-unrandomized"

    def _randomize_codes(self, codes, source):
        n = codes.size
        rows = _unary_rows(self, np.minimum(codes, self.d - 2), source, self.q_threshold, self.d - 1)
        own = rows.copy()
        # the first d − 1 bits as OUE for users not holding the last item; the last bit = [x == d−1]
        last = codes == self.d - 1
        if last.any():  # those users' own bit (the last) is set, their other bits are q-noise
            noise = _unary_rows(self, np.zeros(int(last.sum()), dtype=np.int64), source, self.q_threshold, self.d - 1)
            own[last] = noise
        out = np.zeros((n, self.n_bytes), dtype=np.uint8)
        out[:, : own.shape[1]] = own
        j = self.d - 1
        out[last, j >> 3] |= np.uint8(1 << (j & 7))
        out[:, j >> 3] &= np.uint8(0xFF >> (7 - (j & 7)))  # keep only bits < d (no padding set)
        return out


@dataclass(frozen=True, kw_only=True)
class ValueChargedAsUserLGRR(LGRR):
    """L-GRR whose :meth:`collection_cost` charges the papers' value-level bound
    ``min(t, d)·ε∞ − min(t − 1, d)·ε∞`` whatever relation it claims — a value-level charge
    presented as a user-level guarantee. Every one-report layer passes (the
    channel is L-GRR's); only the transcript layer sees that constant-vs-alternating histories
    lose 5.38 > 4 after 8 collections (``d = 2``, ``ε∞ = 2``, ``ε₁ = 1``)."""

    name = "bug-value-charged-as-user-lgrr"

    def collection_cost(self, t: int) -> Fraction:
        e, U = Fraction(self.epsilon_perm), self.unit_bound()
        return min(t, U) * e - min(t - 1, U) * e


class FittedChargeLGRR(LGRR):
    """L-GRR whose :meth:`collection_cost` is a per-collection charge *fitted* to the histories
    someone tried: ``1.09·ε₁`` per collection (``ε₁ = 1``). The worst losses of every pair of
    histories over two units and of the named pairs over three grow by about 1.09 per collection,
    so a check over those pairs passes at every ``T <= 8``; the true worst pair of six collections
    (three units each, ``d = 3``, ``ε∞ = 2``) loses 6.63 > 6.54. Only a worst case over every
    history catches it."""

    name = "bug-fitted-charge-lgrr"

    def collection_cost(self, t: int) -> Fraction:
        return Fraction(109, 100) * Fraction(self.epsilon_1)


class HonestOneKRR(KRR):
    """k-RR whose ``randomize_one`` (the one-user entry point a device calls) skips the
    randomization and reports the true item; the batch path every other layer drives is exact."""

    name = "bug-honest-one-krr"

    def randomize_one(self, value, *, rng=None, user_key=None):
        self._check_client_arguments(user_keys=None if user_key is None else [user_key])
        return self.encode(np.array([value]))[0].astype(np.uint32)


class FloatBoundaryGeometric(GeometricMechanism):
    """The truncated geometric mechanism with the boundaries the client searches built as before
    once: ``np.cumsum([0] + list(T), dtype=object)`` — numpy first converts the list of Python
    ints (some >= 2**63) to float64, so boundaries are rounded by up to 2,048/2**64 and one output
    of one row gains what its neighbour loses. At d = 3, ε = 16.42 the realized ratio exceeds
    e^ε by 2.9·10⁻¹⁰ (relative)."""

    name = "bug-float-boundary-geometric"
    _construction_check_disabled: ClassVar[bool] = True

    def _boundaries(self, T: list) -> np.ndarray:
        cum = np.array([np.cumsum([0] + list(r[:-1]), dtype=object) for r in T], dtype=object)
        return np.array([[int(c) for c in row] for row in cum], dtype=np.uint64)


@dataclass(frozen=True, kw_only=True)
class WindowRatePiecewise(Piecewise):
    """Piecewise whose client decides "inside the window" by comparing uniform words with its own
    threshold, 0.5% above the declared ``window_threshold`` (a hand-rolled comparison: the
    recording layer sees no Bernoulli threshold). Every other part is the real client."""

    name = "bug-window-rate-piecewise"

    def _sample(self, k, source):
        n = k.size
        inside = source.words(n) < np.uint64(self.window_threshold * 1005 // 1000)
        j_in = k + source.uniform_int(self.window, n)
        u = source.uniform_int(self.cells - self.window, n)
        j_out = np.where(u < k, u, u + self.window)
        return np.where(inside, j_in, j_out).astype(np.uint32)


@dataclass(frozen=True, kw_only=True)
class GridEpsilonKRR(KRR):
    """k-RR whose keep threshold is taken from a table precomputed on an ε grid of step 0.1, at the
    grid point at or *above* ε (the wrong direction): exact wherever ε is a multiple of 0.1 —
    every canonical instance — and up to 0.1 too weak everywhere else."""

    name = "bug-grid-epsilon-krr"
    _construction_check_disabled: ClassVar[bool] = True

    def _realize(self):
        grid_eps = math.ceil(round(self.epsilon * 10, 9)) / 10
        L = exp_lower_bound(grid_eps)
        T = floor_threshold(L / (L + self.d - 1))
        object.__setattr__(self, "keep_threshold", T)
        p = Fraction(T, TWO64)
        q = (1 - p) / (self.d - 1)
        return p, q, Fraction(T * (self.d - 1), TWO64 - T)


class _FixedKeyAES(RandomSource):
    """A broken "secure" source: requests of at least 64 KiB are the AES-256-CTR keystream under a
    *fixed* key from counter 0 (every large request returns the same bytes)."""

    secure = True

    def __init__(self, inner):
        self.inner = inner

    def random_bytes(self, n: int) -> np.ndarray:
        if n < CIPHER_MIN or _cipher_module() is None:
            return self.inner.random_bytes(n)
        Cipher, AES, CTR = _cipher_module()
        enc = Cipher(AES(bytes(range(32))), CTR(bytes(16))).encryptor()
        return np.frombuffer(enc.update(bytes(n)), dtype=np.uint8).copy()


@dataclass(frozen=True, kw_only=True)
class FixedKeyAESKRR(KRR):
    """k-RR whose client, on a secure source, expands large requests with a fixed AES key: every
    report's marginal is exact and a seeded run is exactly k-RR, but two requests repeat each
    other's keystream (the "uniform" draws of one request equal those of the next)."""

    name = "bug-fixed-key-aes"

    def _randomize_codes(self, codes, source):
        return super()._randomize_codes(codes, _FixedKeyAES(source) if source.secure else source)


@dataclass(frozen=True, kw_only=True)
class KernelOnlyOUE(OUE):
    """OUE whose compiled-kernel path differs from its numpy twin: when the batch kernels are
    compiled (numba loaded; in ``auto`` mode, batches above the kernel cut-off), the 0→1 rate is
    10% above q. Every run on the numpy kernels is exact."""

    name = "bug-kernel-only"

    def _randomize_codes(self, codes, source):
        q = self.q_threshold
        if compiled("decode_runs", work=max(codes.size, 1) * self.d) is not None:
            q = q * 110 // 100
        return _unary_rows(self, codes, source, q, self.d)


@dataclass(frozen=True, kw_only=True)
class HalfOffsetKRR(KRR):
    """k-RR where users ``i`` and ``i + ⌈n/2⌉`` of a batch share their random draws: neighbours
    are independent and every marginal is exact, but the two halves of a batch repeat each other."""

    name = "bug-half-offset"

    def _randomize_codes(self, codes, source):
        n = codes.size
        h = (n + 1) // 2
        keep = np.tile(source.bernoulli(self.keep_threshold, h), 2)[:n]
        other = np.tile(source.uniform_int(self.d - 1, h), 2)[:n]
        other += other >= codes
        return np.where(keep, codes, other).astype(np.uint16)


_PROCESS_STREAM: dict = {}


@dataclass(frozen=True, kw_only=True)
class ForkRepeatKRR(KRR):
    """k-RR whose client replaces the secure source by one per-process stream, seeded once from
    the OS: fresh between requests and batches, but a forked child continues from its parent's
    state and repeats the parent's next reports."""

    name = "bug-fork-repeat"

    def _randomize_codes(self, codes, source):
        if source.secure:
            if "stream" not in _PROCESS_STREAM:
                _PROCESS_STREAM["stream"] = SeededRandomSource(int.from_bytes(os.urandom(8), "little"))
            source = _PROCESS_STREAM["stream"]
        return super()._randomize_codes(codes, source)


@dataclass(frozen=True, kw_only=True)
class ComplementedKRR(KRR):
    """k-RR whose client keeps the true item with the *complement* of the declared threshold:
    every threshold it asks for is declared (complements are), the realized channel is still
    ε-LDP, but it is not the declared one (at ε = 0.02 the keep rate moves by 1%)."""

    name = "bug-complemented-krr"

    def _randomize_codes(self, codes, source):
        n = codes.size
        keep = source.bernoulli(TWO64 - self.keep_threshold, n)
        other = source.uniform_int(self.d - 1, n)
        other += other >= codes
        return np.where(keep, codes, other).astype(np.uint16)


@dataclass(frozen=True, kw_only=True)
class SwappedBitsRAPPOR(RAPPOR):
    """RAPPOR whose client draws the user's own bit with ``q`` and every other bit with ``p``:
    both thresholds are declared, each is used at the other's place."""

    name = "bug-swapped-bits-rappor"

    def _randomize_codes(self, codes, source):
        return randomize_bit_rows(np.asarray(codes, dtype=np.int64)[:, None], self.d, self.q_threshold, self.p_threshold, source)


@dataclass(frozen=True, kw_only=True)
class PermanentInInstantaneousLGRR(LGRR):
    """L-GRR whose instantaneous layer compares with the permanent layer's keep threshold ``T1``
    instead of ``T2`` (both declared)."""

    name = "bug-permanent-in-instantaneous"

    def _collect(self, codes, keys, source):
        perm = self._permanent(codes, keys)
        return _grr_sample(perm, self.d, self.thresholds[0], source).astype(np.uint32)


@dataclass(frozen=True, kw_only=True)
class BiasedRoundingDuchi(Duchi):
    """Duchi whose public client rounds numbers in the middle grid cell up with probability
    ``frac + 1/8`` instead of ``frac`` (grid inputs, i.e. the verification hook, are exact)."""

    name = "bug-biased-rounding"

    def _round(self, t, source, alpha=None):
        k, frac = self._split(t)
        frac = np.where(k == self.grid // 2, np.minimum(frac + 0.125, 1.0), frac)
        up = source.bernoulli_each(np.minimum(np.floor(frac * 2.0**64), 2.0**64 - 2048).astype(np.uint64))
        return k + up


@dataclass(frozen=True, kw_only=True)
class SeedFromValueOLH(OLH):
    """OLH whose public client derives each user's hash seed from the value instead of drawing
    it (the verification hook, which draws from the verification seeds, is exact)."""

    name = "bug-seed-from-value"

    def _randomize_codes(self, codes, source):
        seeds = mix64(np.asarray(codes, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        return self._randomize_with_seeds(codes, seeds, source)


@dataclass(frozen=True, kw_only=True)
class FirstItemsSampleOne(SampleOne):
    """Pad-and-sample whose long sets (``on_long="sample"``) draw the slot among their first
    ``m`` items only: the items after the ``m``-th are never reported."""

    name = "bug-first-items-sample-one"

    def _sample_codes(self, enc, offsets, pad, source):
        n = offsets.shape[0] - 1
        lengths = np.diff(offsets)
        out = np.full(n, pad, dtype=enc.dtype)
        j = source.uniform_int(self.m, n).astype(np.int64)
        hit = j < lengths
        out[hit] = enc[offsets[:-1][hit] + j[hit]]
        return out, int((lengths > self.m).sum())


@dataclass(frozen=True, kw_only=True)
class KeylessMemoized(Memoized):
    """Memoized k-RR whose permanent layer ignores the user's key: every holder of a value gets
    the same permanent report (each report's marginal over the fixed key is still k-RR-like)."""

    name = "bug-keyless-memo"

    def permanent(self, values, user_keys):
        return super().permanent(values, [bytes(32)] * len(user_keys))


@dataclass(frozen=True, kw_only=True)
class OffByOneQKRR(KRR):
    """k-RR whose server debiases with ``q* = 1/(e^ε + d)`` instead of ``1/(e^ε + d − 1)``: every
    frequency is pulled towards a constant (at ε = 1, d = 4, n = 1000: about 1.4 standard errors at
    θ = 1/4, 2 at θ = 0). The client and its channel are exact."""

    name = "bug-off-by-one-q"

    def estimate_from(self, acc, *, candidates=None, postprocess="projection", confidence=0.95, target="sample"):
        q = 1.0 / (math.exp(self.epsilon) + self.d)
        est = estimate_pure(acc.counts, acc.n, self.p_star, q, postprocess=postprocess, confidence=confidence, items=self.items)
        return retarget(est, target)


@dataclass(frozen=True, kw_only=True)
class SquareFreeOUE(OUE):
    """OUE whose server divides the variance by ``n(p* − q*)`` instead of ``n(p* − q*)²``: unbiased, and
    its intervals cover, but they are ``1/√(p* − q*)`` too wide (2.1× at ε = 1) — the stated variance is
    4.3× the true one."""

    name = "bug-square-free-variance"

    def estimate_from(self, acc, *, candidates=None, postprocess="projection", confidence=0.95, target="sample"):
        est = super().estimate_from(acc, candidates=candidates, postprocess=postprocess, confidence=confidence, target=target)
        se = np.asarray(est.std_error) / math.sqrt(self.p_star - self.q_star)
        z = normal_quantile(confidence)
        return dataclasses.replace(est, std_error=se, ci_lower=np.clip(est.raw - z * se, 0.0, 1.0), ci_upper=np.clip(est.raw + z * se, 0.0, 1.0))


@dataclass(frozen=True, kw_only=True)
class ScaledTwiceDuchi(Duchi):
    """Duchi whose mean's standard error is multiplied by the scale ``(upper − lower)/2`` a second time:
    on ``[0, 1]`` the interval is half as wide as it must be (coverage ≈ 0.68 for a 95% interval)."""

    name = "bug-scaled-twice"

    def estimate(self, reports, *, confidence=0.95, target="sample", candidates=None, postprocess=None):
        return self.estimate_from(self.accumulator().add(reports), confidence=confidence, target=target, candidates=candidates, postprocess=postprocess)

    def estimate_from(self, acc, *, confidence=0.95, target="sample", candidates=None, postprocess=None):
        est = super().estimate_from(acc, confidence=confidence, target=target, candidates=candidates, postprocess=postprocess)
        se = est.std_error * (self.upper - self.lower) / 2
        z = normal_quantile(confidence)
        return dataclasses.replace(est, std_error=se, ci_lower=est.mean - z * se, ci_upper=est.mean + z * se)


def seeded_bugs() -> list:
    """``(name, instance, layers expected to catch it)`` for the seeded-bug suite."""
    return [
        ("swapped-ue", SwappedUE(epsilon=1.0, d=4), ("exact", "audit")),
        ("missed-half-rappor", MissedHalfRAPPOR(epsilon=1.0, d=4), ("exact", "audit")),
        ("sticky-rappor", StickyRAPPOR(epsilon=1.0, d=4), ("goodness-of-fit", "audit")),
        ("no-predecessor-subset", NoPredecessorSubset(epsilon=1.0, d=5, k=2), ("goodness-of-fit", "audit")),
        ("quantized32-krr", Quantized32KRR(epsilon=20.0, d=2), ("exact",)),
        ("under-declared-krr", UnderDeclaredKRR(epsilon=1.0, d=4), ("exact", "audit")),
        ("client-threshold-drift", ThresholdDriftKRR(epsilon=20.0, d=2), ("sampling-path",)),
        ("rate-2pct-low", RateLowOUE(epsilon=1.0, d=4), ("sampling-path", "rates")),
        ("rate-2pct-high", RateHighOUE(epsilon=1.0, d=4), ("sampling-path", "rates")),
        ("shared-noise-pairs", SharedNoisePairsRAPPOR(epsilon=1.0, d=4), ("joint",)),
        ("last-bit-unrandomized", LastBitOUE(epsilon=1.0, d=4), ("sampling-path", "goodness-of-fit")),
        ("value-charged-as-user", ValueChargedAsUserLGRR(epsilon_perm=2.0, epsilon_1=1.0, d=2), ("transcript",)),
        ("fitted-charge", FittedChargeLGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3), ("transcript",)),
        ("honest-randomize-one", HonestOneKRR(epsilon=1.0, d=4), ("entry-points",)),
        ("float-boundary-geometric", FloatBoundaryGeometric(epsilon=16.42, d=3), ("exact",)),
        ("window-rate-0.5pct-piecewise", WindowRatePiecewise(epsilon=4.0, grid=16), ("rates",)),
        ("fixed-key-aes", FixedKeyAESKRR(epsilon=1.0, d=4), ("joint",)),
        ("kernel-only", KernelOnlyOUE(epsilon=1.0, d=4), ("production",)),
        ("half-offset-pairs", HalfOffsetKRR(epsilon=1.0, d=4), ("joint",)),
        ("fork-repeat", ForkRepeatKRR(epsilon=1.0, d=4), ("joint",)),
        ("biased-rounding", BiasedRoundingDuchi(epsilon=1.0, grid=8), ("entry-points",)),
        ("seed-from-value", SeedFromValueOLH(epsilon=2.0, d=6), ("entry-points",)),
        ("first-items-long-sets", FirstItemsSampleOne(mechanism=KRR(epsilon=1.0, d=4), m=2), ("entry-points",)),
        ("keyless-memo", KeylessMemoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2), ("positions",)),
        ("complemented-threshold", ComplementedKRR(epsilon=0.02, d=2), ("positions",)),
        ("swapped-bit-thresholds", SwappedBitsRAPPOR(epsilon=0.05, d=4), ("positions",)),
        ("permanent-in-instantaneous", PermanentInInstantaneousLGRR(epsilon_perm=4.0, epsilon_1=1.0, d=3), ("positions",)),
        ("off-by-one-q", OffByOneQKRR(epsilon=1.0, d=4), ("estimators",)),
        ("square-free-variance", SquareFreeOUE(epsilon=1.0, d=4), ("estimators",)),
        ("scaled-twice", ScaledTwiceDuchi(epsilon=1.0, grid=8), ("estimators",)),
    ]
