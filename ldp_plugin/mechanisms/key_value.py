"""Key–value data under ε-LDP: **PCKV-GRR** (Gu, Li, Cheng, Xiong, Cao, *PCKV: Locally Differentially
Private Correlated Key-Value Data Collection with Optimized Utility*, USENIX Security 2020, §4,
Alg. 1 padding-and-sampling, Alg. 2 / eq. (9) PCKV-GRR, estimators §4.4 eq. (13)–(14)).

A user holds a set of key–value pairs (keys in ``[0, d)``, values in ``[−1, 1]``, at most one value
per key). Client, one report per user:

1. **padding and sampling**: the set is padded with dummy keys ``d, …, d + ℓ − 1`` up to ``ℓ``
   pairs (a dummy key's value is 0) and one pair is drawn uniformly (an exact uniform integer). A
   set larger than ``ℓ`` has no unbiased estimate: ``on_long="error"`` (default) refuses the batch
   (the count of such users, never a value); ``on_long="sample"`` reports one of its own pairs
   uniformly, as in the paper — a key held by such a user is then counted with weight
   ``ℓ/|S| < 1``, and the estimate says so (:attr:`KeyValueEstimate.interval_kind` ``"bound"``);
2. **discretization**: the value becomes ``s = +1`` with probability ``(1 + v)/2``, else ``−1``
   (unbiased: ``E[s] = v``);
3. **perturbation**: the code ``2·key + [s = +1]`` over ``2d' = 2(d + ℓ)`` codes is reported with
   k-RR: kept with ``p = e^ε/(e^ε + 2d' − 1)``, else any other code with ``q = 1/(e^ε + 2d' − 1)``
   — PCKV-GRR's key-keep probability ``a = p + q = (e^ε + 1)/(e^ε + 2d' − 1)`` and value-keep
   probability ``b = p/(p + q) = e^ε/(e^ε + 1)``, the paper's optimal budget allocation, realized
   by the library's exact k-RR (integer thresholds).

**Guarantee**: ε-LDP per user — ``max_{S,S',y} P(y|S)/P(y|S') <= e^ε`` (``max_divergence``),
neighbouring relation: one user's whole key–value set replaced by any other (``discrete_distance``).
Steps 1–2 draw the code from a distribution that depends on the set; step 3 is ε-LDP for every
pair of codes, so the mixture is ε-LDP (the exact channel verified by ``ldp verify`` is step 3's,
over the ``2d'`` codes; steps 1–2 use no privacy threshold).

**Estimators** (unbiased for the frequency and for ``f·m``; the mean is their ratio, consistent
with an ``O(1/n)`` bias), with ``n₊(k), n₋(k)`` the reports of key ``k`` with each sign:

* frequency ``f̂_k = ℓ·((n₊ + n₋)/n − 2q)/(p − q)``; its variance for the users who reported
  (``target="sample"``, default) is ``ℓ²[f π₁(1−π₁) + (1−f) π₀(1−π₀)]/(n(p−q)²)`` with
  ``π₁ = (p+q)/ℓ + 2q(1 − 1/ℓ)`` (a holder's pair is sampled with probability ``1/ℓ``) and
  ``π₀ = 2q``; for an i.i.d. population (``"population"``) the multinomial ``ℓ²P(1−P)/(n(p−q)²)``,
  ``P = (n₊ + n₋)/n`` (larger by exactly ``f(1−f)/n``);
* value sum ``Ŝ_k = ℓ·(n₊ − n₋)/(n (p − q))`` (``E = f_k·m_k``);
* mean ``m̂_k = Ŝ_k / f̂_k`` clipped to ``[−1, 1]``; its standard error by the delta method from the
  multinomial covariance of ``(n₊, n₋)`` (plug-in rates) — exact for an i.i.d. population; for the
  users who reported it bounds the variance from above (a user's sign variance ``π − μ²`` averages
  to at most ``P − μ̄²``, and the holders' ``mean(v²)`` that would close the gap is not identifiable
  from one sign), so with ``target="sample"`` the means' intervals are labelled
  (:attr:`KeyValueEstimate.mean_interval_kind` ``"bound"``: they cover at least their confidence,
  up to ~2.5× wide at ε = 6, ℓ = 1 with values near ±1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Optional

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from .. import pictures
from ..exact import TWO64, epsilon_of_ratio
from ..sampling import RNGLike, as_source
from .channel import Channel
from .domain import check_codes, check_epsilon
from .base import MechanismBase
from .mixins import OutputCounts
from .reports import ReportField
from ..estimation import check_estimate_request
from .randomized_response import KRR
from .protocol import InputKind, Verifiable
from .sets import ON_LONG

__all__ = ["PCKV", "KeyValueEstimate", "KeyValueAccumulator", "KeyValueBatch"]


@dataclass(frozen=True)
class KeyValueBatch:
    """Users' key–value sets in CSR form: ``keys``/``values`` flat, user ``i``'s pairs at
    ``offsets[i]:offsets[i+1]``."""

    keys: np.ndarray
    values: np.ndarray
    offsets: np.ndarray

    @property
    def n(self) -> int:
        return int(self.offsets.size - 1)


@dataclass(frozen=True, kw_only=True)
class PCKV(MechanismBase):
    """PCKV-GRR over ``d`` keys with padding length ``ell`` (module docstring).

    Proof: docs/proofs/key-value.md

    >>> import ldp_plugin as ldp
    >>> m = ldp.PCKV(epsilon=2.0, d=4, ell=2)
    >>> r = m.randomize([[(0, 0.5), (3, -1.0)], [], [(1, 1.0)]], rng=0)
    >>> r.shape, int(r.max()) < 2 * (4 + 2)
    ((3,), True)
    """

    capabilities = frozenset({Verifiable})

    name: ClassVar[str] = "pckv"
    input_kind: ClassVar[InputKind] = InputKind.KEY_VALUE

    epsilon: float
    d: int
    ell: int = 1
    on_long: str = "error"
    inner: KRR = field(init=False, repr=False, compare=False)
    #: the fair coin of a dummy key's sign (read by the sampling-path layer)
    dummy_sign_threshold: int = field(init=False, repr=False, compare=False, default=TWO64 // 2)

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        if isinstance(self.d, bool) or not isinstance(self.d, (int, np.integer)) or not 1 <= int(self.d) <= 1 << 20:
            raise LDPParameterError(f"d (the number of keys) must be an integer in [1, 2^20] (got {self.d!r})")
        if isinstance(self.ell, bool) or not isinstance(self.ell, (int, np.integer)) or not 1 <= int(self.ell) <= 1 << 10:
            raise LDPParameterError(f"ell (the padding length) must be an integer in [1, 1024] (got {self.ell!r})")
        if self.on_long not in ON_LONG:
            raise LDPParameterError(f"on_long must be one of {ON_LONG} (got {self.on_long!r})")
        object.__setattr__(self, "d", int(self.d))
        object.__setattr__(self, "ell", int(self.ell))
        object.__setattr__(self, "inner", KRR(epsilon=eps, d=2 * (self.d + self.ell)))

    @property
    def codes(self) -> int:
        return 2 * (self.d + self.ell)

    @property
    def realized_ratio(self) -> Fraction:
        return self.inner.realized_ratio

    @property
    def realized_epsilon(self) -> float:
        return epsilon_of_ratio(self.realized_ratio)

    @property
    def domain_size(self) -> int:
        return self.codes

    def spec(self) -> dict:
        params = {"epsilon": self.epsilon, "d": self.d, "ell": self.ell}
        if self.on_long != "error":  # the default is left out: specs written before it still rebuild the same mechanism
            params["on_long"] = self.on_long
        return {"name": self.name, "params": params}

    # -- client -----------------------------------------------------------------------------------
    def encode_pairs(self, data: Any) -> KeyValueBatch:
        """A :class:`KeyValueBatch` from a batch, or from a list with one list of ``(key, value)``
        pairs per user (keys integers in ``[0, d)``, values in ``[−1, 1]``, no key twice)."""
        if isinstance(data, KeyValueBatch):
            b = data
        else:
            if data is None or isinstance(data, (str, bytes, dict)) or not hasattr(data, "__iter__"):
                raise LDPInputError(f"key-value data must be a sequence with one list of (key, value) pairs per user (got {type(data).__name__})")
            keys, values, offsets = [], [], [0]
            for pairs in data:
                if pairs is None:
                    raise LDPInputError(f"user {len(offsets) - 1} has a null key-value set (an empty set is [])")
                if not isinstance(pairs, (list, tuple)):
                    raise LDPInputError(f"user {len(offsets) - 1}: a key-value set is a list of (key, value) pairs")
                for pair in pairs:
                    try:
                        k, v = pair
                    except (TypeError, ValueError):
                        raise LDPInputError(f"user {len(offsets) - 1}: every item must be a (key, value) pair") from None
                    if isinstance(k, (bool, np.bool_)) or isinstance(v, (bool, np.bool_)):
                        raise LDPInputError(f"user {len(offsets) - 1}: keys must be integers and values numbers, not booleans")
                    keys.append(k)
                    values.append(v)
                offsets.append(len(keys))
            try:
                b = KeyValueBatch(np.asarray(keys, dtype=np.float64), np.asarray(values, dtype=np.float64), np.asarray(offsets, dtype=np.int64))
            except (TypeError, ValueError):
                raise LDPInputError("keys must be integers and values numbers") from None
        k = np.asarray(b.keys, dtype=np.float64)
        v = np.asarray(b.values, dtype=np.float64)
        off = np.asarray(b.offsets, dtype=np.int64)
        if off.ndim != 1 or off.size < 1 or off[0] != 0 or (np.diff(off) < 0).any() or off[-1] != k.size or k.size != v.size:
            raise LDPInputError("a key-value batch needs offsets 0 = o_0 <= ... <= o_n = len(keys) = len(values)")
        bad_k = ~np.isfinite(k) | (k != np.floor(k)) | (k < 0) | (k >= self.d)
        if bad_k.any():
            raise LDPInputError(f"keys must be integers in [0, {self.d}) ({int(bad_k.sum())} outside; first at pair {int(np.flatnonzero(bad_k)[0])})")
        bad_v = ~np.isfinite(v) | (v < -1) | (v > 1)
        if bad_v.any():
            raise LDPInputError(f"values must be in [-1, 1] ({int(bad_v.sum())} outside or missing; first at pair {int(np.flatnonzero(bad_v)[0])})")
        ki = k.astype(np.int64)
        user = np.repeat(np.arange(off.size - 1), np.diff(off))
        if ki.size and np.unique(user * (self.d + 1) + ki).size != ki.size:
            raise LDPInputError("a user's set holds a key twice: one value per key")
        long = np.diff(off) > self.ell
        if long.any() and self.on_long == "error":
            raise LDPInputError(f"{int(long.sum())} user(s) hold more than ell={self.ell} keys (first at user {int(np.flatnonzero(long)[0])}): "
                                "raise ell, or pass on_long='sample' (their keys are then under-counted and the estimate is a bound)")
        return KeyValueBatch(ki, v, off)

    def encode(self, values: Any) -> KeyValueBatch:
        """The users' key–value sets as a checked :class:`KeyValueBatch` (:meth:`encode_pairs`)."""
        return self.encode_pairs(values)

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None) -> np.ndarray:
        """One report (a code in ``[0, 2(d + ell))``, ``uint32``) per user."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        self._check_no_cohorts(cohorts)
        b = self.encode_pairs(values)
        source = as_source(rng)
        return self._randomize_codes(self._sample_codes(b, source), source)

    def _sample_codes(self, b: KeyValueBatch, source: Any) -> np.ndarray:
        """Padding and sampling, then discretization: each user's code ``2·key + [s = +1]``."""
        sizes = np.diff(b.offsets)
        slot = source.uniform_int_each(np.maximum(sizes, self.ell))
        real = slot < sizes
        n = sizes.size
        key = np.empty(n, dtype=np.int64)
        plus = np.empty(n, dtype=bool)
        idx = b.offsets[:-1][real] + slot[real]
        key[real] = b.keys[idx]
        # s = +1 with probability (1 + v)/2: randomized rounding of the value (not a privacy decision)
        thr = np.minimum(np.floor((1 + b.values[idx]) / 2 * 2.0**64), 2.0**64 - 2048).astype(np.uint64)
        plus[real] = source.bernoulli_each(thr) if idx.size else np.zeros(0, dtype=bool)
        dummy = ~real
        key[dummy] = self.d + (slot[dummy] - sizes[dummy])
        plus[dummy] = source.bernoulli(self.dummy_sign_threshold, int(dummy.sum()))
        return 2 * key + plus

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> np.ndarray:
        """Reports for already sampled and discretized codes in ``[0, 2(d + ell))``."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        self._check_no_cohorts(cohorts)
        return self._randomize_codes(check_codes(codes, self.codes, "codes"), as_source(rng))  # a float is never truncated

    def _randomize_codes(self, codes: np.ndarray, source: Any) -> np.ndarray:
        return self.inner._randomize_codes(codes, source).astype(np.uint32)

    def randomize_one(self, value: Any, *, rng: RNGLike = None, user_key: Any = None) -> int:
        self._check_client_arguments(user_keys=None if user_key is None else [user_key])
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise LDPInputError(f"randomize_one takes one user's list of (key, value) pairs (got type {type(value).__name__})")
        return int(self.randomize([list(value)], rng=rng)[0])

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", kind="int", bound=self.codes),)

    # -- verification: the ε-channel over codes ---------------------------------------------------
    def channel(self) -> Channel:
        return self.inner.channel()

    def verification_input_count(self) -> int:
        return self.codes

    def output_index(self, reports: Any) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)

    # -- server -----------------------------------------------------------------------------------
    def accumulator(self) -> "KeyValueAccumulator":
        return KeyValueAccumulator(self)

    def estimate(self, reports: Any, *, confidence: float = 0.95, target: str = "sample", candidates: Any = None,  # type: ignore[override]
                 postprocess: Any = None) -> "KeyValueEstimate":
        """Each key's frequency and mean with intervals for ``target`` (module docstring)."""
        self._refuse_frequency_options(candidates, postprocess)
        return self.accumulator().add(reports).estimate(confidence=confidence, target=target)

    def estimate_from(self, acc: Any, *, confidence: float = 0.95, target: str = "sample", candidates: Any = None,  # type: ignore[override]
                      postprocess: Any = None) -> "KeyValueEstimate":
        self._refuse_frequency_options(candidates, postprocess)
        return acc.estimate(confidence=confidence, target=target)


class KeyValueAccumulator(OutputCounts):
    """Counts of each code and the number of reports (mergeable)."""

    def __init__(self, mechanism: PCKV):
        super().__init__(mechanism, mechanism.codes)

    def estimate(self, *, confidence: float = 0.95, target: str = "sample") -> "KeyValueEstimate":
        m = self.mechanism
        z = check_estimate_request(self.n, confidence, target)
        n, ell = self.n, m.ell
        p, q = m.inner.p_star, m.inner.q_star
        c = self.counts[: 2 * m.d].reshape(m.d, 2)
        P_minus, P_plus = c[:, 0] / n, c[:, 1] / n
        scale = ell / (p - q)
        f = scale * (P_plus + P_minus - 2 * q)
        S = scale * (P_plus - P_minus)
        var_f = scale**2 * (P_plus + P_minus) * (1 - P_plus - P_minus) / n  # i.i.d. population
        if target == "sample":  # the reporting users' own frequencies: each holder's pair sampled w.p. 1/ell
            fc = np.clip(f, 0.0, 1.0)
            pi1, pi0 = (p + q) / ell + 2 * q * (1 - 1 / ell), 2 * q
            var_f = scale**2 * (fc * pi1 * (1 - pi1) + (1 - fc) * pi0 * (1 - pi0)) / n
        var_S = scale**2 * (P_plus + P_minus - (P_plus - P_minus) ** 2) / n
        cov = scale**2 * (P_plus * (1 - P_plus) - P_minus * (1 - P_minus)) / n  # Cov(n₊ + n₋, n₊ − n₋)/n²
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_raw = np.where(f > 0, S / f, 0.0)
            mean = np.clip(mean_raw, -1.0, 1.0)
            var_m = np.where(f > 0, (var_S - 2 * mean_raw * cov + mean_raw**2 * var_f) / (f * f), np.inf)
        se_f, se_m = np.sqrt(var_f), np.sqrt(np.maximum(var_m, 0.0))
        f_lo, f_hi = f - z * se_f, f + z * se_f
        kind, what = "interval", ""
        mean_kind = "bound" if target == "sample" else "interval"
        if m.on_long == "sample":  # keys of users above ell are under-counted: only the lower limit holds
            f_hi = np.ones_like(f_hi)
            kind = "bound"
            what = ("on_long='sample': users holding more than ell keys were sampled, so frequencies are lower bounds "
                    "(frequency_ci_lower bounds each key's frequency from below, frequency_ci_upper is 1) and means are "
                    "weighted by min(1, ell/|S|) (their intervals cover that weighted mean)")
        if mean_kind == "bound":
            what = (what + "; " if what else "") + ("target='sample': the means' standard errors are the population's, an upper bound "
                                                    "for the reporting users (their mean(v^2) is not identifiable from one sign)")
        else:
            mean_kind = kind
        return KeyValueEstimate(f, se_f, f_lo, f_hi, mean, se_m, np.clip(mean - z * se_m, -1, 1), np.clip(mean + z * se_m, -1, 1),
                                S, np.sqrt(var_S), n, confidence, target, kind, what, mean_kind)


@dataclass(frozen=True, eq=False)
class KeyValueEstimate:
    """Per key: frequency (share of users holding it) and mean value, each with a standard error
    and a two-sided normal interval; ``value_sum`` is the unbiased ``f·m`` (module docstring)."""

    frequency: np.ndarray
    frequency_se: np.ndarray
    frequency_ci_lower: np.ndarray
    frequency_ci_upper: np.ndarray
    mean: np.ndarray
    mean_se: np.ndarray
    mean_ci_lower: np.ndarray
    mean_ci_upper: np.ndarray
    value_sum: np.ndarray
    value_sum_se: np.ndarray
    n: int
    confidence: float
    target: str = "sample"
    #: "interval" (each interval covers its quantity at ``confidence``) or "bound" (``bounds`` says what holds)
    interval_kind: str = "interval"
    bounds: str = ""
    #: the means' own kind: "bound" for ``target="sample"`` (a conservative standard error; ``bounds``)
    mean_interval_kind: str = "interval"

    def __repr__(self) -> str:
        """A notebook-sized summary: n, and each key's frequency and mean with intervals (up to 8)."""
        k = int(np.asarray(self.frequency).size)
        rows = "\n".join(f"  key {j:<6} frequency {self.frequency[j]:.4f} [{self.frequency_ci_lower[j]:.4f}, {self.frequency_ci_upper[j]:.4f}]"
                         f"  mean {self.mean[j]:+.4f} [{self.mean_ci_lower[j]:+.4f}, {self.mean_ci_upper[j]:+.4f}]" for j in range(min(k, 8)))
        more = f"\n  ... {k - 8} more keys (to_polars() for all)" if k > 8 else ""
        kind = "" if self.interval_kind == "interval" else f" ({self.interval_kind}s: see .bounds)"
        if self.mean_interval_kind != self.interval_kind:
            kind += f" (means: {self.mean_interval_kind}s, see .bounds)"
        return f"KeyValueEstimate(n={self.n:,}, keys={k}, {self.confidence:.0%} intervals{kind} for the {self.target})\n{rows}{more}"

    def plot(self, *, keys: Optional[Any] = None, title: Optional[str] = None):
        """Each key's frequency and mean value with their intervals (two panels); ``keys``
        labels them. Returns the Figure (``plot`` extra)."""
        labels = list(range(self.frequency.size)) if keys is None else list(keys)
        if len(labels) != self.frequency.size:
            raise LDPParameterError(f"keys must give one label per key ({self.frequency.size})")
        return pictures.key_values(labels, (self.frequency, self.frequency_ci_lower, self.frequency_ci_upper),
                                   (self.mean, self.mean_ci_lower, self.mean_ci_upper), confidence=self.confidence,
                                   title=title or f"estimated key–value statistics (n={self.n:,})")

    def to_polars(self, keys: Optional[Any] = None):
        import polars as pl

        return pl.DataFrame({
            "key": list(range(self.frequency.size)) if keys is None else list(keys),
            "frequency": self.frequency, "frequency_se": self.frequency_se,
            "frequency_ci_lower": self.frequency_ci_lower, "frequency_ci_upper": self.frequency_ci_upper,
            "mean": self.mean, "mean_se": self.mean_se, "mean_ci_lower": self.mean_ci_lower, "mean_ci_upper": self.mean_ci_upper,
        })
