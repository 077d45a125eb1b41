"""O-RR and O-RAPPOR: k-RR and RAPPOR with hashing and cohorts (Kairouz, Bonawitz & Ramage (ICML 2016) §5).

Each user belongs to one of ``C`` cohorts, assigned **independently of the data** (a salted hash
of the user id, :func:`ldp_plugin.hashing.assign_cohorts`, or fresh uniform randomness). Cohort
``c`` maps items into ``k`` cells with its own function:

* **open alphabet** (no ``d``/``categories``): the seeded hash of :mod:`ldp_plugin.hashing` with
  the cohort's seed — any string or integer can be reported, and the server decodes over a
  candidate set it chooses later;
* **closed alphabet** (``d`` or ``categories`` given; Kairouz, Bonawitz & Ramage (ICML 2016) §5.4): a per-cohort permutation
  ``π_c`` of the ``S`` items (ranks of the seeded hash), then ``π_c(s) mod k`` — a perfect,
  balanced partition without collisions beyond the modulus.

**O-RR** (eq. 19): the report is ``(c, y)`` with ``y`` the k-RR (over ``k`` values) of the
user's cell. **O-RAPPOR** (§5.2): the user's Bloom filter of ``h`` cells (``h`` hash functions
per cohort) goes through per-bit randomized response with budget ``ε/(2h)`` per bit (changing the
input changes at most ``2h`` bits), the report is ``(c, k packed bits)``.

Privacy: the cohort is data-independent and, given the cohort, the report is k-RR (resp. per-bit
RR) of a function of the input; the realized worst-case ratio — ``p/q`` of k-RR, resp.
``(p/(1−p))^{2h}`` — is checked ``<= e^ε`` exactly at construction.

Decoding: weighted least squares over the ``kC × S`` cover matrix (eq. 20–22;
:func:`ldp_plugin.estimation.least_squares_decode`), then the usual post-processing (projection
onto the simplex by default), with plug-in standard errors and confidence intervals. The
accumulator (``C × k`` int64 counts and ``C`` cohort sizes) is mergeable and does not depend on
the candidate set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
import math
from typing import Any, Optional

import numpy as np

from ..protocol import MaxGainAttack, PoisonBounded
from ..reports import ReportField
from ...sampling import as_source
from ..._errors import LDPInputError, LDPParameterError
from ...theory import choose_orr
from ...exact import TWO64, exp_lower_bound, ratio_within_exp
from ..channel import floor_threshold
from ..randomized_response import KRR
from ..unary import bit_vector_outputs, bit_vector_row, packed_column_counts, randomize_bit_rows
from ..hadamard import fast_walsh_hadamard, parity
from .server import OTHER, CohortAccumulator
from .base import CohortReports, _CohortMechanism, _check_cohort_column

__all__ = ["CohortReports", "CohortAccumulator", "ORR", "ORAPPOR", "CMS", "HCMS", "CountSketch", "OTHER"]


def _integer_reports(m, reports: Any, bound: int, what: str) -> CohortReports:
    """Check a batch of ``(cohort, integer value in [0, bound))`` reports."""
    if not isinstance(reports, CohortReports):
        raise LDPInputError(f"{m.name} reports must be a CohortReports batch (cohort, value)")
    v = np.asarray(reports.value)
    if v.ndim != 1 or v.dtype.kind not in "iu":
        raise LDPInputError(f"{m.name} report values must be a 1-d integer array ({what})")
    c = _check_cohort_column(reports.cohort, v.shape[0], m.cohorts)
    if v.size and int(v.max()) >= bound:
        raise LDPInputError(f"{m.name} report values must be {what} in [0, {bound})")
    return CohortReports(c, v)


@dataclass(frozen=True, kw_only=True)
class ORR(_CohortMechanism):
    """O-RR: k-RR over ``k`` hashed cells with ``cohorts`` hash cohorts (Kairouz, Bonawitz & Ramage (ICML 2016) §5.1, eq. 19–22),
    ``epsilon``-LDP per user; closed-alphabet permutations when ``d``/``categories`` are given (§5.4).

    Privacy: ``max_divergence``, ``ε`` per user: given the data-independent cohort the report is
    k-RR of the user's cell (realized ratio checked ``<= e^ε`` exactly). Runtime: client O(1) per
    user; server O(n) counting plus an ``S × S`` least-squares solve over ``S`` candidates.
    Report: ``(cohort uint32, cell uint32)``. See :func:`ldp_plugin.theory.choose_orr` for
    ``k`` and ``C``.

    Proof: docs/proofs/cohort.md

    >>> from ldp_plugin import ORR
    >>> m = ORR(epsilon=2.0, k=8, cohorts=16)
    >>> r = m.randomize(["maps", "mail", "maps"], rng=0)
    >>> len(r), m.estimate(r, candidates=["maps", "mail", "chat"]).items
    (3, ('maps', 'mail', 'chat', '<other>'))
    """

    name = "orr"
    client_cost, server_cost = "O(1)", "O(n + d²·C)"

    @classmethod
    def default_cells(cls, epsilon: float) -> int:
        """``k ≈ e^ε + 1`` (the hash range that balances collisions against randomized-response noise)."""
        return max(2, round(math.exp(epsilon)) + 1)

    @classmethod
    def default_parameters(cls, given: dict, *, epsilon: float, d: Optional[int], n: int, closed: bool = True) -> dict:
        """Without ``k``: the (k, cohorts) of :func:`ldp_plugin.theory.choose_orr` for ``d`` items
        (an open alphabet, ``closed=False``: ``d`` candidates) and ``n`` users."""
        if "k" in given:
            return {}
        if d is None:
            raise LDPParameterError(
                "mechanism 'orr' needs k (int in [2, 2^24]) and cohorts, or the domain size d/categories to choose them "
                "(on the command line: --d D, or --param k=K --param cohorts=C)"
            )
        chosen = choose_orr(int(d), float(epsilon), int(n), closed=closed)
        return {"k": chosen["k"], "cohorts": chosen["cohorts"]}

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """The (k, cohorts) of :func:`ldp_plugin.theory.choose_orr` for ``d`` items and ``n`` users."""
        try:
            c = choose_orr(d, epsilon, n)
        except LDPParameterError:
            return ()
        return ({"k": c["k"], "cohorts": c["cohorts"]},)

    covariance = "multinomial"
    histogram_columns = ("cohort", "report")

    def report_fields(self) -> tuple:
        return (ReportField("cohort", "uint32", bound=self.cohorts), ReportField("report", "uint32", bound=self.k))
    _krr: KRR = field(init=False, repr=False, compare=False)

    def _realize(self):
        krr = KRR(epsilon=self.epsilon, d=self.k)
        object.__setattr__(self, "_krr", krr)
        return krr.p_star_exact, krr.q_star_exact, krr.realized_ratio

    def _randomize_positions(self, positions, source):
        return self._krr._randomize_codes(positions[:, 0], source).astype(np.uint32)

    def validate_reports(self, reports: Any) -> CohortReports:
        return _integer_reports(self, reports, self.k, "cells")

    def cell_counts(self, reports: CohortReports) -> np.ndarray:
        flat = reports.cohort.astype(np.int64) * self.k + reports.value.astype(np.int64)
        return np.bincount(flat, minlength=self.cohorts * self.k).reshape(self.cohorts, self.k)

    def histogram_cell_counts(self, cohort: np.ndarray, value: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``(C, k)`` cell counts from a histogram of distinct (cohort, value) pairs."""
        out = np.zeros(self.cohorts * self.k, dtype=np.int64)
        np.add.at(out, np.asarray(cohort, dtype=np.int64) * self.k + np.asarray(value, dtype=np.int64), np.asarray(weights, dtype=np.int64))
        return out.reshape(self.cohorts, self.k)

    def _value_index(self, value):
        return self.k, value.astype(np.int64)

    def _cell_channel(self, cells):
        (x,) = cells
        p, q = self.p_exact, self.q_exact
        return tuple(range(self.k)), tuple(p if y == x else q for y in range(self.k))


@dataclass(frozen=True, kw_only=True)
class ORAPPOR(_CohortMechanism):
    """O-RAPPOR: a per-cohort Bloom filter (``h`` hash functions into ``k`` bits) reported by
    per-bit randomized response with budget ``ε/(2h)`` per bit (Kairouz, Bonawitz & Ramage (ICML 2016) §5.2), ``epsilon``-LDP
    per user; closed-alphabet permutations when ``d``/``categories`` are given (§5.4).

    Privacy: ``max_divergence``, ``ε`` per user: two inputs' Bloom filters differ in at most
    ``2h`` bits, so the ratio is at most ``(p/(1−p))^{2h}``, checked ``<= e^ε`` exactly.
    Runtime: client O(k) per user; server O(n·k/8) plus the least-squares solve.
    Report: ``(cohort uint32, ceil(k/8) bytes)``.

    Proof: docs/proofs/cohort.md

    >>> from ldp_plugin import ORAPPOR
    >>> m = ORAPPOR(epsilon=2.0, k=64, h=2, cohorts=8)
    >>> m.randomize(["a", "b"], rng=1).value.shape
    (2, 8)
    """

    name = "orappor"
    covariance = "bernoulli"
    h: int = 1
    p_threshold: int = field(init=False, repr=False, compare=False)

    @property
    def hashes_per_item(self) -> int:  # type: ignore[override]
        return self.h

    def _validate_extra(self) -> None:
        h = self.h
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 1 <= int(h) <= 16:
            raise LDPParameterError(f"h (hash functions per cohort) must be an integer in [1, 16] (got {h!r})")
        object.__setattr__(self, "h", int(h))

    def _extra_params(self) -> dict:
        return {"h": self.h}

    def _realize(self):
        m = 2 * self.h
        L = exp_lower_bound(self.epsilon / m)
        tp = floor_threshold(L / (L + 1))
        while tp > TWO64 // 2 and not ratio_within_exp(Fraction(tp, TWO64 - tp) ** m, self.epsilon):
            tp -= max(1, tp >> 52)  # ε/(2h) rounded in floats: step down until the exact check holds
        object.__setattr__(self, "p_threshold", tp)
        p = Fraction(tp, TWO64)
        return p, 1 - p, (p / (1 - p)) ** m

    @property
    def n_bytes(self) -> int:
        return (self.k + 7) // 8

    def _randomize_positions(self, positions, source):
        return randomize_bit_rows(positions, self.k, self.p_threshold, TWO64 - self.p_threshold, source)

    def report_fields(self) -> tuple:
        return (ReportField("cohort", "uint32", bound=self.cohorts), ReportField("report", "uint8", self.n_bytes, "bits", self.k))

    def validate_reports(self, reports: Any) -> CohortReports:
        if not isinstance(reports, CohortReports):
            raise LDPInputError("orappor reports must be a CohortReports batch (cohort, value)")
        v = np.asarray(reports.value)
        if v.ndim != 2 or v.dtype != np.uint8 or v.shape[1] != self.n_bytes:
            raise LDPInputError(f"orappor report values must be an (n, {self.n_bytes}) uint8 array of packed bits")
        c = _check_cohort_column(reports.cohort, v.shape[0], self.cohorts)
        if self.k % 8 and v.size and (v[:, -1] >> (self.k % 8)).any():
            raise LDPInputError(f"orappor reports have padding bits set beyond k={self.k}")
        return CohortReports(c, v)

    def cell_counts(self, reports: CohortReports) -> np.ndarray:
        out = np.zeros((self.cohorts, self.k), dtype=np.int64)
        coh = reports.cohort.astype(np.int64)
        order = np.argsort(coh, kind="stable")
        sc = coh[order]
        bounds = np.searchsorted(sc, np.arange(self.cohorts + 1))
        for c in np.flatnonzero(np.diff(bounds)):
            out[c] = packed_column_counts(reports.value[order[bounds[c] : bounds[c + 1]]], self.k)
        return out

    def _value_index(self, value):
        if self.k > 20:
            raise LDPParameterError("output_index of orappor is limited to k <= 20 bits")
        bits = np.unpackbits(value, axis=1, count=self.k, bitorder="little").astype(np.int64)
        return 1 << self.k, bits @ (1 << np.arange(self.k - 1, -1, -1, dtype=np.int64))

    def _cell_channel(self, cells):
        outs = bit_vector_outputs(self.k)
        return outs, bit_vector_row(outs, set(cells), self.p_exact, 1 - self.p_exact)



@dataclass(frozen=True, kw_only=True)
class CMS(ORAPPOR):
    """Apple's count-mean sketch (Apple, "Learning with Privacy at Scale", 2017, client- and
    server-side CMS): O-RAPPOR with one hash per cohort — the cohorts are the sketch's hash
    functions (one drawn per user, data-independently), ``k`` its width in bits; the user's
    one-hot vector goes through per-bit randomized response with ``ε/2`` per bit (Apple's
    ``±1`` flip with probability ``1/(1 + e^{ε/2})``), ``epsilon``-LDP per user. Decoding, the
    collision correction and the error bars are O-RAPPOR's (least squares or the streamed sketch
    decoder). ``h`` is fixed to 1.

    Proof: docs/proofs/cohort.md

    >>> from ldp_plugin import CMS
    >>> m = CMS(epsilon=2.0, k=64, cohorts=8)
    >>> m.randomize(["maps", "mail"], rng=1).value.shape
    (2, 8)
    """

    name = "cms"

    def _validate_extra(self) -> None:
        if self.h != 1:
            raise LDPParameterError(f"cms uses one hash per cohort: h must be 1 (got {self.h!r}); use orappor for h > 1")
        super()._validate_extra()

@dataclass(frozen=True, kw_only=True)
class HCMS(_CohortMechanism):
    """HCMS: Apple's Hadamard count-mean sketch — one ±1 Hadamard coefficient of the user's
    hashed cell per report, by randomized response (Apple, "Learning with Privacy at Scale",
    2017, Alg. "Client-side HCMS"/"Server-side HCMS"), ``epsilon``-LDP per user. The ``cohorts``
    are the sketch's hash functions (one drawn per user, data-independently), ``k`` (a power of 2)
    its width; a closed alphabet (``d``/``categories``) uses the cohort permutations of §5.4 of
    Kairouz, Bonawitz & Ramage (ICML 2016) like O-RR.

    Client: cell ``x = h_c(v)``, a uniform row ``l ∈ [0, k)``, the bit ``t = popcount(x & l) mod 2``
    (``H[x, l] = (−1)^t``) kept with probability ``p = e^ε/(1 + e^ε)`` (exact threshold, Warner's
    randomized response), report ``(c, 2l + b)``: 1 + log2 k bits besides the cohort.
    Privacy: ``max_divergence``, ``ε`` per user: ``c`` and ``l`` do not depend on the data and ``b``
    is randomized response of one bit of it, realized ratio ``p/(1−p)`` checked ``<= e^ε``.
    Server: per cohort the signed sums ``S[l]`` (mergeable int64), then ``ẑ = H S/(2p − 1)``
    estimates the cohort's cell counts without bias (``E[H[x, l] H[j, l]] = [x = j]``; the
    all-ones row is replaced by the known total, :meth:`cell_statistic`), decoded
    by the shared candidate decoders (least squares or the streamed sketch decoder) with the
    exact per-cohort covariance of :func:`~ldp_plugin.estimation.least_squares_decode`.

    Proof: docs/proofs/cohort.md

    >>> from ldp_plugin import HCMS
    >>> m = HCMS(epsilon=2.0, k=16, cohorts=4)
    >>> r = m.randomize(["maps", "mail", "maps"], rng=0)
    >>> len(r), m.estimate(r, candidates=["maps", "mail"]).items
    (3, ('maps', 'mail', '<other>'))
    """

    capabilities = _CohortMechanism.capabilities | {MaxGainAttack, PoisonBounded}

    name = "hcms"
    covariance = "hadamard"
    _rr: KRR = field(init=False, repr=False, compare=False)

    def _validate_extra(self) -> None:
        if self.k & (self.k - 1):
            raise LDPParameterError(f"k (the sketch width) must be a power of 2 in [2, 2**24] (got {self.k})")

    def report_fields(self) -> tuple:
        return (ReportField("cohort", "uint32", bound=self.cohorts), ReportField("report", "uint32", bound=2 * self.k))

    def _realize(self):
        rr = KRR(epsilon=self.epsilon, d=2)  # Warner's randomized response on the coefficient's bit
        object.__setattr__(self, "_rr", rr)
        return rr.p_star_exact, rr.q_star_exact, rr.realized_ratio

    def _randomize_positions(self, positions, source):
        pos = positions[:, 0].astype(np.uint64)
        row = source.uniform_int(self.k, pos.size).astype(np.uint64)
        t = self._coefficient_bit(pos, row).astype(np.int64)
        b = self._rr._randomize_codes(t, source).astype(np.uint64)
        return (row * np.uint64(2) + b).astype(np.uint32)

    def _coefficient_bit(self, pos: np.ndarray, row: np.ndarray) -> np.ndarray:
        """``t`` with ``H[x, l] = (−1)^t`` for the users' cells ``x = pos`` at rows ``l``."""
        return parity(pos & row)

    def report_influence(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` per item: the exact range of one report's contribution to the raw estimate, for
        a closed alphabet with one cell per item in every cohort (``d == k``: each cohort's cover is a
        permutation, and the least-squares decoder is then exactly the read-out
        ``θ̂_s = (1/N) Σ_c ẑ_c[π_c(s)]``). A report ``(c, l, b)`` adds ``±H[x, l]/(2p − 1)`` to cell ``x``
        of ``ẑ_c`` and, through the known-total control variate, ``1/k − [l = 0](±1)/(2p − 1)``: so
        ``φ_s ∈ [1/k − 1/(2p − 1), 1/k + 1/(2p − 1)]`` (Apple, "Learning with Privacy at Scale",
        2017, server-side HCMS; the gain bound of Cao, Jia, Gong, USENIX Security 2021, Thm. 1–3 in
        the same form). Other designs (hash collisions, an open alphabet, signed cells) weight cells
        by the cohort sizes the attacker also controls: refused, no bound is claimed there."""
        if not self.closed or self.signed or self.hashes_per_item != 1 or self.d != self.k:
            raise LDPParameterError(
                f"{self.name}: a certified poisoning bound is available for a closed alphabet with d == k "
                f"(one cell per item per cohort; got d={self.d}, k={self.k}); with hash collisions the decoder's "
                "weights depend on cohort sizes that fake reports also set"
            )
        a = 1.0 / (2 * self.p - 1)
        return np.full(self.d, 1.0 / self.k - a), np.full(self.d, 1.0 / self.k + a)

    def max_gain_reports(self, targets: Any, m: int, *, rng: Any = None) -> CohortReports:
        """``m`` fake reports promoting ``targets`` (the maximal-gain attack of Cao, Jia, Gong, USENIX
        Security 2021, MGA, carried to HCMS): a uniform cohort and a uniform row ``l ≠ 0`` (row 0 is
        replaced by the known total), and the coefficient bit of the target's cell *kept* — the
        report an honest holder of the target sends when the coin keeps, so every fake adds
        ``+1/(2p − 1)`` to the target's cell. One target per fake, uniform among ``targets``."""
        src = as_source(rng)
        m = int(m)
        enc = self.encode(list(np.asarray(targets).ravel()) if not self.closed else np.asarray(targets).ravel())
        pick = src.uniform_int(enc.shape[0], m) if enc.shape[0] > 1 else np.zeros(m, dtype=np.int64)
        coh = src.uniform_int(self.cohorts, m).astype(np.int64)
        pos = self.positions(enc[pick], coh)[:, 0].astype(np.uint64)
        row = (src.uniform_int(self.k - 1, m) + 1).astype(np.uint64)
        b = self._coefficient_bit(pos, row).astype(np.uint64)
        return CohortReports(coh.astype(np.uint32), (row * np.uint64(2) + b).astype(np.uint32))

    def _cell_sign(self, pos: int) -> tuple:
        """``(cell, sign bit)`` of a position, in exact integers for :meth:`_cell_channel`."""
        return pos, 0

    def validate_reports(self, reports: Any) -> CohortReports:
        return _integer_reports(self, reports, 2 * self.k, "2·row + bit")

    def cell_counts(self, reports: CohortReports) -> np.ndarray:
        """``(C, k)`` signed sums: ``S[c, l]`` = (# bit 0) − (# bit 1) among cohort ``c``'s reports of row ``l``."""
        v = reports.value.astype(np.int64)
        flat = reports.cohort.astype(np.int64) * self.k + (v >> 1)
        sign = 1 - 2 * (v & 1)
        size = self.cohorts * self.k
        return (np.bincount(flat, minlength=size) - 2 * np.bincount(flat[sign < 0], minlength=size)).reshape(self.cohorts, self.k)

    def cell_variance(self) -> float:
        """``noise (1 − 1/k) − (1/k − 1/k²)`` per report at evenly filled cells (the diagonal of
        the decoders' covariance with ``c̄ = 1/k``)."""
        noise, k = self.decoder_model()[3], self.k
        return noise * (1 - 1 / k) - (1 / k - 1 / k**2)

    def decoder_model(self):
        scale = 2 * self.p - 1
        return 1.0, 0.0, "hadamard", 1.0 / (scale * scale)

    def cell_statistic(self, counts, n_c):
        """``ẑ = H S/(2p − 1)`` with the all-ones row's coefficient ``S[0]`` replaced by its known
        value: every user is in exactly one cell, so ``Σ_j ẑ_j = n_c`` (a control variate that
        removes the noise every cell would otherwise share)."""
        z = fast_walsh_hadamard(counts) / (2 * self.p - 1)
        z += (np.asarray(n_c, dtype=np.float64)[:, None] - z.sum(axis=1, keepdims=True)) / self.k
        return (z, *self.decoder_model())

    def _value_index(self, value):
        return 2 * self.k, value.astype(np.int64)

    def _cell_channel(self, cells):
        x, s = self._cell_sign(cells[0])
        p, k = self.p_exact, self.k
        probs = []
        for y in range(2 * k):
            t = (bin(x & (y >> 1)).count("1") & 1) ^ s  # the signed coefficient's bit
            probs.append((p if (y & 1) == t else 1 - p) / k)
        return tuple(range(2 * k)), tuple(probs)


@dataclass(frozen=True, kw_only=True)
class CountSketch(HCMS):
    """The private count sketch: Charikar, Chen and Farach-Colton's CountSketch (ICALP 2002) — a
    cell hash ``h_c`` and a sign hash ``g_c(v) ∈ {±1}`` per row — with one row (cohort) per user,
    data-independently, and the user's signed one-hot vector ``g_c(v)·e_{h_c(v)}`` reported by
    HCMS's local randomizer: one randomized-response ±1 Hadamard coefficient, ``epsilon``-LDP per
    user. (Pagh and Thorup's "private CountSketch" adds Gaussian noise to a sketch aggregated by a
    trusted curator — central DP; this is the local version.)

    Client: ``(x, s) = (h_c(v), [g_c(v) = −1])`` from one seeded hash into ``2k`` values (cell
    ``x = pos >> 1``, sign bit ``s = pos & 1``: independent and uniform), a uniform row ``l``, the bit
    ``t = popcount(x & l) mod 2 ⊕ s`` (``g·H[x, l] = (−1)^t``) kept with probability
    ``p = e^ε/(1 + e^ε)``; report ``(c, 2l + b)``. Privacy: ``max_divergence``, ``ε`` per user
    (``c``, ``l`` data-independent, ``b`` randomized response of one bit: ratio ``p/(1−p)``).

    Server: ``ẑ_c = H S_c/(2p − 1)`` estimates the signed cell sums ``Σ_u g_c(v_u)[h_c(v_u) = j]``
    without bias (the known total no longer fixes a coefficient). A candidate's read-out
    ``g_c(s)·ẑ_c[h_c(s)]/n_c`` is unbiased for its frequency over the hash (collisions enter with
    random signs: variance ``Σ_v θ_v²/k``, no ``R/k`` correction), so the streamed decoder needs no
    collision correction; least squares uses the signed covers ``B_c[j, s] = g_c(s)`` with the exact
    per-report covariance ``noise·I − diag m`` (``m``: the cells' unsigned mass). An open alphabet's
    ``<other>`` is ``1 − Σ θ̂`` (signed non-candidates average out instead of being modelled).

    Proof: docs/proofs/cohort.md

    >>> from ldp_plugin import CountSketch
    >>> closed = CountSketch(epsilon=2.0, k=4, cohorts=8, d=8)  # two items per cell, opposite signs
    >>> round(float(closed.estimate(closed.randomize([0, 1, 1, 7] * 50, rng=0)).raw.sum()), 9)
    1.0
    >>> CountSketch(epsilon=2.0, k=16).estimate(CountSketch(epsilon=2.0, k=16).randomize(["a"], rng=0), candidates=["a"]).items
    ('a', '<other>')
    """

    name = "count-sketch"
    covariance = "hadamard-signed"
    signed = True

    def _coefficient_bit(self, pos, row):
        """``t`` with ``g·H[x, l] = (−1)^t``: the cell ``x = pos >> 1``, the sign bit ``pos & 1``."""
        return parity((pos >> np.uint64(1)) & row) ^ (pos & np.uint64(1)).astype(np.uint8)

    def _cell_sign(self, pos):
        return pos >> 1, pos & 1

    def cell_variance(self) -> float:
        """``noise − 1/k`` per report at evenly filled cells (the diagonal ``noise − m_j`` of the
        per-report covariance with ``m_j = 1/k``)."""
        return self.decoder_model()[3] - 1 / self.k

    def decoder_model(self):
        scale = 2 * self.p - 1
        return 1.0, 0.0, "hadamard-signed", 1.0 / (scale * scale)

    def cell_statistic(self, counts, n_c):
        """``ẑ = H S/(2p − 1)``: the signed cell sums (no control variate: ``Σ_j ẑ_j`` estimates
        ``Σ_u g(v_u)``, which the server does not know)."""
        return (fast_walsh_hadamard(counts) / (2 * self.p - 1), *self.decoder_model())

