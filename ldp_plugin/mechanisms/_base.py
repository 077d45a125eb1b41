"""The shape every frequency-oracle mechanism shares.

A mechanism is a frozen, validated parameter object that provides

1. a vectorized client randomizer (:meth:`FrequencyOracle.randomize` over a batch,
   :meth:`FrequencyOracle.randomize_one` for one user);
2. its **realized channel**: the exact rational probabilities the sampler uses (thresholds over
   ``2**64``), its worst-case likelihood ratio (checked ``<= e**ε`` at construction, exactly) and,
   for small domains, the full channel matrix (:meth:`FrequencyOracle.channel`);
3. a server side: support counting, a mergeable :class:`FrequencyAccumulator`, and the shared
   estimator of :mod:`ldp_plugin.estimation`;
4. theory: the analytic variance / MSE of its estimator.

The OpenDP measurements are built from these in :mod:`ldp_plugin.measurements`.
"""

from __future__ import annotations

import abc
import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Optional

import numpy as np

from .._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from ..estimation import FrequencyEstimate, estimate_pure, pure_variance
from ..exact import epsilon_of_ratio, ratio_within_exp
from ..theory import mse_pure
from ..sampling import RNGLike, as_source
from .channel import Channel
from .base import MechanismBase
from .protocol import Analytic, ClosedDomain, PoisonBounded, SupportRates, Verifiable
from .mixins import MergeableCounts
from .reports import ReportField

__all__ = ["RealizedChannel", "RealizedRates", "FrequencyOracle", "FrequencyAccumulator"]


@functools.lru_cache(maxsize=64)
def _code_items(d: int) -> tuple:
    """``(0, 1, …, d − 1)``: the items of a mechanism without categories (built once per d; an
    estimate at d = 1024 otherwise spends a fifth of its time building it)."""
    return tuple(range(d))

from .usable_range import too_large, too_small
from .domain import _category_index, check_domain, check_epsilon, encode_values


class RealizedChannel(MechanismBase):
    """Shared by every closed-domain mechanism: the realized ε (rounded up) of its exact
    worst-case ratio, the item labels, the encoding of values to codes and the public
    parameters (``params``; a mechanism adds its own in ``_extra_params``)."""

    capabilities = frozenset({ClosedDomain, Verifiable})

    @property
    def realized_epsilon(self) -> float:
        """``ln`` of the realized worst-case likelihood ratio, rounded up (always ``<= epsilon``)."""
        return epsilon_of_ratio(self.realized_ratio)

    @property
    def items(self) -> tuple:
        return self.categories if self.categories is not None else _code_items(self.d)

    def params(self) -> dict:
        """Public parameters as plain JSON-able values."""
        return {"mechanism": self.name, "epsilon": self.epsilon, "d": self.d, **self._extra_params()}

    def _extra_params(self) -> dict:
        return {}

    def encode(self, values: Any) -> np.ndarray:
        """Validate a batch of user values and return their integer codes (see :func:`encode_values`)."""
        index = None if self.categories is None else _category_index(self.categories)
        return encode_values(values, self.d, self.categories, index)


class RealizedRates(RealizedChannel):
    """A realized channel with exact support rates ``p*``, ``q*`` (the pure frequency oracles)."""

    capabilities = RealizedChannel.capabilities | {SupportRates}
    #: ``q*`` holds per report (True: only on average over a per-report hash seed, OLH)
    q_star_over_hash: ClassVar[bool] = False

    @property
    def p_star(self) -> float:
        return float(self.p_star_exact)

    @property
    def q_star(self) -> float:
        return float(self.q_star_exact)


@dataclass(frozen=True, kw_only=True)
class FrequencyOracle(RealizedRates, abc.ABC):
    """Base of every pure frequency oracle (frozen, validated, keyword-only parameters)."""

    capabilities = RealizedRates.capabilities | {Analytic, PoisonBounded}

    name: ClassVar[str] = "abstract"
    supports_em: ClassVar[bool] = False
    #: the realized worst-case ratio is e^ε up to rounding (False: slack by design, THE)
    uses_full_budget: ClassVar[bool] = True
    # report columns a grouped (histogram) aggregation may use; None: aggregate batch by batch
    histogram_columns: ClassVar[Optional[tuple]] = None
    channel_max_outputs: ClassVar[int] = 4096
    # only the deliberately broken mechanisms of ldp_plugin.verification.seeded_bugs set this:
    # they must be constructible so that the verification layers can be shown to catch them
    _construction_check_disabled: ClassVar[bool] = False

    epsilon: float
    d: Optional[int] = None
    categories: tuple | list | None = None  # a list or tuple of labels; stored as a tuple
    # realized exact quantities, derived in __post_init__
    p_star_exact: Fraction = field(init=False, repr=False, compare=False)
    q_star_exact: Fraction = field(init=False, repr=False, compare=False)
    realized_ratio: Fraction = field(init=False, repr=False, compare=False)
    _index: Optional[dict] = field(init=False, repr=False, compare=False)

    @abc.abstractmethod
    def supports(self, output: Any, item: int) -> bool:
        """Whether the channel output ``output`` (an element of ``channel().outputs``) supports
        ``item``: the event of probability ``p*`` for the user's own item and ``q*`` for any other
        (for a hashed oracle, ``q*`` on average over the seed)."""

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """Every pure frequency oracle is an ``ldp choose`` candidate with its default parameters."""
        return ({},)

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        d, cats = check_domain(self.d, self.categories)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "_index", None if cats is None else {c: i for i, c in enumerate(cats)})
        self._validate_extra()
        p, q, ratio = self._realize()
        if not (0 < q < 1 and 0 < p < 1) and not self._allows_degenerate():
            raise LDPParameterError(too_large(self, eps, "its probabilities round to 0 or 1 in 64-bit thresholds"))
        if p <= q:
            raise LDPParameterError(too_small(self, eps, "64-bit thresholds cannot separate p* from q*"))
        if not ratio_within_exp(ratio, eps) and not self._construction_check_disabled:
            raise PrivacyVerificationError(
                f"{self.name}: the realized likelihood ratio exceeds e**epsilon for epsilon={eps}"
            )
        object.__setattr__(self, "p_star_exact", p)
        object.__setattr__(self, "q_star_exact", q)
        object.__setattr__(self, "realized_ratio", ratio)

    # -- to be provided by each family -----------------------------------------------------------
    def _validate_extra(self) -> None:
        """Validate family-specific parameters (and set thresholds) before realization."""

    def _allows_degenerate(self) -> bool:
        return False

    @abc.abstractmethod
    def _realize(self) -> tuple[Fraction, Fraction, Fraction]:
        """Set thresholds; return exact (p*, q*, worst-case likelihood ratio)."""

    @abc.abstractmethod
    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        """Vectorized client on validated integer codes."""

    @abc.abstractmethod
    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """``int64`` vector of length d: how many reports support each item."""

    @abc.abstractmethod
    def n_reports(self, reports: np.ndarray) -> int:
        """Number of users in a report batch."""

    @abc.abstractmethod
    def _enumerate_channel(self) -> Channel:
        """Exact channel matrix (only called for small output alphabets)."""

    @abc.abstractmethod
    def output_index(self, reports: np.ndarray) -> np.ndarray:
        """Column index in :meth:`channel` of each report (for goodness-of-fit tests)."""

    @abc.abstractmethod
    def validate_reports(self, reports: Any) -> np.ndarray:
        """Check a report batch has this mechanism's format (shape, dtype, range)."""

    # -- shared behaviour -----------------------------------------------------------------------
    def encode(self, values: Any) -> np.ndarray:
        """Validate a batch of user values and return their integer codes (``int64``).

        Without ``categories``, values must be integers in ``[0, d)``. With ``categories`` every
        value must be one of them. Errors give the position, never the value.
        """
        return encode_values(values, self.d, self.categories, self._index)

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None) -> np.ndarray:
        """Randomize a batch: element ``i`` of the result is user ``i``'s report.

        ``rng=None`` (default) uses the OS CSPRNG; an integer seeds a reproducible, *non-secure*
        generator for simulations and tests.
        """
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        return self._randomize_codes(self.encode(values), as_source(rng))

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", kind="int", bound=self.output_alphabet_size()),)

    def randomize_one(self, value: Any, *, rng: RNGLike = None, user_key: Any = None):
        """Randomize one user's value (the same exact sampler, batch of one).

        The report names items by label when the mechanism has ``categories`` (batches from
        :meth:`randomize` always use compact integer codes; see :meth:`decode`)."""
        return super().randomize_one(value, rng=rng, user_key=user_key)

    def decode(self, codes: Any) -> list:
        """Item codes (as found in reports) → item labels."""
        return [self.items[int(c)] for c in np.asarray(codes).ravel()]

    def channel(self) -> Channel:
        """The exact realized channel matrix (small domains only)."""
        if self.output_alphabet_size() > self.channel_max_outputs:
            raise LDPParameterError(
                f"channel enumeration is limited to {self.channel_max_outputs} outputs "
                f"(this instance has {self.output_alphabet_size()})"
            )
        return self._enumerate_channel()

    @abc.abstractmethod
    def output_alphabet_size(self) -> int:
        """Number of distinct reports."""

    # -- server side ------------------------------------------------------------------------------
    def accumulator(self) -> "FrequencyAccumulator":
        return FrequencyAccumulator(self)

    def count_reports(self, reports: Any) -> tuple:
        """``(support counts, number of reports)`` of a batch, validated first (an invalid batch
        raises and counts nothing). Mechanisms whose check and count fit in one pass override
        this (k-RR, Hadamard response: :func:`~ldp_plugin.sampling.aggregate_kernels.bounded_histogram`)."""
        reports = self.validate_reports(reports)
        return self.support_counts(reports), self.n_reports(reports)

    def report_influence(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``: the exact range, per item, of one report's contribution to the raw estimate.

        The debiasing estimator is ``θ̂_i = (1/N) Σ_r φ_i(y_r)`` with ``φ_i(y) = (s_i(y) − q*)/(p* − q*)``
        and ``s_i(y) ∈ {0, 1}`` whether report ``y`` supports item ``i``. Every item is supported by
        some well-formed report and unsupported by another, so ``lo = −q*/(p* − q*)`` and
        ``hi = (1 − q*)/(p* − q*)`` — the per-report gain in Cao, Jia and Gong, "Data Poisoning
        Attacks to Local Differential Privacy Protocols" (USENIX Security 2021), Theorems 1–3
        (MGA: ``G = β(hi − f_t)`` for k-RR, OUE and OLH)."""
        p, q = self.p_star, self.q_star
        d = int(self.d)
        return np.full(d, -q / (p - q)), np.full(d, (1 - q) / (p - q))

    # -- theory ---------------------------------------------------------------------------------
    def variance(self, theta: Any, n: int) -> np.ndarray:
        """Per-item variance of the raw estimator (empirical distribution ``theta`` of n users)."""
        return pure_variance(np.asarray(theta, dtype=np.float64), n, self.p_star, self.q_star)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        return self.mse(n, theta, sampling=sampling)

    def mse(self, n: int, theta: Any = None, *, sampling: str = "fixed") -> float:
        """Expected squared l2 error of the raw estimator, ``E||θ̂ − θ||²``.

        ``sampling="fixed"``: θ is the empirical distribution of the n users; the sum of variances
        is ``[p*(1−p*) + (d−1) q*(1−q*)] / (n (p*−q*)²)``, independent of θ (Wang et al. (arXiv 2016) §3.3).
        ``sampling="iid"``: users are drawn i.i.d. from θ and the error is measured against θ;
        this adds ``(1 − Σθ²)/n`` (Kairouz, Bonawitz & Ramage (ICML 2016) Prop. 3–4) and needs ``theta``.
        """
        p, q = self.p_star, self.q_star
        base = mse_pure(self.d, n, p, q)
        if sampling == "fixed":
            return float(base)
        if sampling == "iid":
            if theta is None:
                raise LDPParameterError("sampling='iid' needs theta")
            th = np.asarray(theta, dtype=np.float64)
            return float(base + (1 - np.sum(th**2)) / n)
        raise LDPParameterError("sampling must be 'fixed' or 'iid'")


class FrequencyAccumulator(MergeableCounts):
    """Mergeable server-side state: support counts (``int64``) and the number of reports.

    ``add`` a batch at a time, ``merge`` accumulators of the *same* mechanism (partitions,
    shards, days), then ``estimate``. Post-processing never touches the privacy budget.
    """

    def __init__(self, mechanism: FrequencyOracle):
        self.mechanism = mechanism
        self.counts = np.zeros(mechanism.d, dtype=np.int64)
        self.n = 0

    def add(self, reports: Any) -> "FrequencyAccumulator":
        m = self.mechanism
        fused = getattr(m, "count_reports", None)  # one-pass check + count where declared
        if fused is None:
            reports = m.validate_reports(reports)
            counts, n = m.support_counts(reports), m.n_reports(reports)
        else:
            counts, n = fused(reports)
        self.counts += counts
        self.n += n
        return self

    def add_histogram(self, columns: dict, weights: Any) -> "FrequencyAccumulator":
        """Add reports given as distinct values of the mechanism's ``histogram_columns`` with
        their counts (a grouped Parquet scan); only for mechanisms that declare them."""
        values = np.asarray(columns["report"]).astype(np.int64)
        w = np.asarray(weights, dtype=np.int64)
        if values.size and (values.min() < 0 or values.max() >= self.mechanism.output_alphabet_size()):
            raise LDPInputError("reports outside the mechanism's output range")
        self.counts += self.mechanism.histogram_support_counts(values, w)
        self.n += int(w.sum())
        return self

    def _total(self) -> float:
        """What post-processed estimates sum to (1: a distribution)."""
        return 1.0

    def estimate(self, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        m = self.mechanism
        if candidates is not None:
            raise LDPParameterError(f"{m.name} decodes over its own domain; candidates= applies to open-alphabet mechanisms")
        if self.n == 0:
            raise LDPParameterError("an estimate needs at least one report (n >= 1)")
        return estimate_pure(
            self.counts,
            self.n,
            m.p_star,
            m.q_star,
            total=self._total(),
            postprocess=postprocess,
            confidence=confidence,
            items=m.items,
            em_allowed=getattr(m, "supports_em", False),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.mechanism.name}, d={self.mechanism.d}, n={self.n})"
