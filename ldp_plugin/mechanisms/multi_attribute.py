"""Several categorical attributes per user, **one report per user**: SPL, SMP and RS+FD with k-RR.

A user holds a tuple ``x = (x_1, …, x_A)``, attribute ``j`` in ``[0, k_j)`` (``domains = (k_1, …,
k_A)``). The **neighbouring relation is the whole tuple** (one user's record replaced by any other
tuple: ``discrete_distance``); every mechanism here is ε-LDP under it — ``max_{x,x',y}
P(y|x)/P(y|x') <= e^ε`` (``max_divergence``) — with the realized ratio an exact rational checked at
construction and by ``ldp verify`` (the channel enumerated over all ``Π k_j`` tuples).

* :class:`SPL` — split the budget: every attribute reported with k-RR at ``ε/A`` (the product of
  the ``A`` realized ratios is checked ``<= e^ε`` exactly). Wang et al., *Collecting and
  Analyzing Multidimensional Data with Local Differential Privacy* (ICDE 2019), §III-A; k-RR
  estimator per attribute (Wang et al., USENIX Security 2017, eq. (2)).
* :class:`SMP` — sample one attribute ``j`` uniformly (an exact uniform integer, independent of
  the data) and report ``(j, k-RR_ε(x_j))``: the attribute index is in the report (ICDE 2019 §III-B,
  Alg. 1 with k-RR). Attribute ``j`` is estimated from the ``n_j`` users who sampled it; against
  the frequencies of **all** ``n`` users the variance adds the subsampling term
  ``θ(1−θ)(1/n_j − 1/n)``, which :meth:`SMP.estimate` includes.
* :class:`RSFD` — random sampling plus fake data (Arcolezi, Couchot, Al Bouna, Xiao, *Random
  Sampling Plus Fake Data: Multidimensional Frequency Estimates With Local Differential Privacy*,
  CIKM 2021, §3, RS+FD[GRR]): the sampled attribute is reported with k-RR at ``ε'``, every other
  attribute with a uniform fake value, and the report does **not** say which is real. Estimator
  (their eq. for RS+FD[GRR]): ``f̂_j(v) = (A·C_j(v)/n − (A − 1)/k_j − q_j)/(p_j − q_j)``, variance
  ``A²·P(1−P)/(n(p_j − q_j)²)`` with ``P = C_j(v)/n``.

  **The paper's privacy claim holds for a different neighbouring relation.** The paper sets
  ``ε' = ln(A(e^ε − 1) + 1)`` ("amplification by sampling"); the exact channel shows that this
  configuration's ratio is ``(e^{ε'} + A − 1)/A = e^ε`` only when **one attribute** changes, and
  ``Σ_j k_j p_j / Σ_j k_j q_j = e^{ε'}`` when the whole tuple changes (``y = x`` against an
  ``x'`` that differs everywhere); and with **unequal** domain sizes even one attribute's change
  exceeds ``e^ε`` (``domains = (2, 3)``, ``ε = 1``: ``e^{1.072}``; :attr:`RSFD.attribute_epsilon`
  computes it exactly). Here ``epsilon`` is always the whole-tuple guarantee, so
  ``RSFD(epsilon=ε)`` uses ``ε' = ε``; :meth:`RSFD.from_attribute_epsilon` builds the paper's
  configuration and says what it costs per user (``epsilon = ln(A(e^{ε_a} − 1) + 1)``) and per
  attribute (:attr:`RSFD.attribute_epsilon`, exact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from .. import pictures
from ..estimation import FrequencyEstimate, check_estimate_request, project_simplex, pure_variance
from ..exact import epsilon_of_ratio, ratio_within_exp
from ..sampling import RNGLike, as_source
from .channel import Channel
from .domain import check_epsilon
from .base import MechanismBase
from .mixins import MergeableCounts
from .reports import ReportField, checked_reports
from .randomized_response import KRR
from .protocol import InputKind, Verifiable

__all__ = ["SPL", "SMP", "RSFD", "SMPPairs", "MultiAttributeEstimate", "MultiAttributeAccumulator"]

MAX_ATTRIBUTES = 64


def _check_domains(domains: Any) -> tuple:
    if isinstance(domains, (str, bytes)) or not hasattr(domains, "__len__"):
        raise LDPParameterError(f"domains must be a sequence of attribute domain sizes (got {domains!r})")
    out = []
    for i, k in enumerate(domains):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 2 <= int(k) <= 1 << 16:
            raise LDPParameterError(f"domains[{i}] (attribute {i}'s domain size) must be an integer in [2, 65536] (got type {type(k).__name__})")
        out.append(int(k))
    if not 2 <= len(out) <= MAX_ATTRIBUTES:
        raise LDPParameterError(f"domains must list 2 to {MAX_ATTRIBUTES} attributes (got {len(out)})")
    return tuple(out)


@dataclass(frozen=True)
class MultiAttributeEstimate:
    """One :class:`ldp_plugin.FrequencyEstimate` per attribute (``attributes[j]``)."""

    attributes: tuple
    n: int
    mechanism: str

    def __repr__(self) -> str:
        """A notebook-sized summary: the mechanism, n and one line per attribute (to_polars() for all)."""
        rows = "\n".join(f"  attribute {j}: {len(a.items)} items, largest {a.items[int(np.argmax(a.estimate))]!r} "
                         f"{float(np.max(a.estimate)):.4f}" for j, a in enumerate(self.attributes[:8]))
        more = f"\n  ... {len(self.attributes) - 8} more attributes" if len(self.attributes) > 8 else ""
        return f"MultiAttributeEstimate(mechanism={self.mechanism!r}, n={self.n:,}, attributes={len(self.attributes)})\n{rows}{more}"

    def plot(self, *, names: Optional[Any] = None, title: Optional[str] = None, max_items: int = 40):
        """One panel per attribute (pairs: per pair of attributes), each frequency with its
        interval; ``names`` labels the panels. Returns the Figure (``plot`` extra)."""
        labels = [f"attribute {j}" for j in range(len(self.attributes))] if names is None else [str(x) for x in names]
        if len(labels) != len(self.attributes):
            raise LDPParameterError(f"names must give one name per attribute ({len(self.attributes)})")
        panels = [(name, [",".join(map(str, it)) if isinstance(it, tuple) else it for it in e.items], e.estimate, e.ci_lower, e.ci_upper)
                  for name, e in zip(labels, self.attributes)]
        conf = self.attributes[0].confidence if self.attributes else 0.95
        return pictures.marginals(panels, max_items=max_items, confidence=conf,
                                  title=title or f"estimated marginals ({self.mechanism}, n={self.n:,})")

    def to_polars(self):
        """A tidy frame ``attribute, item, estimate, std_error, ci_lower, ci_upper`` (pairs: the
        pair's index and ``item`` as ``"a,b"``)."""
        import polars as pl

        frames = []
        for j, e in enumerate(self.attributes):
            f = e.to_polars()
            if f["item"].dtype != pl.Int64:  # joint cells (a, b)
                f = f.with_columns(pl.Series("item", [",".join(map(str, it)) for it in e.items]))
            frames.append(f.with_columns(pl.lit(j, dtype=pl.Int64).alias("attribute")))
        return pl.concat(frames).select("attribute", "item", "estimate", "std_error", "ci_lower", "ci_upper")


class MultiAttributeAccumulator(MergeableCounts):
    """Per-attribute report counts (``counts[j]``, length ``k_j``), the number of users whose
    report covers each attribute (``covered[j]``) and of reports (``n``); mergeable."""

    _summed = ("flat", "covered", "n")

    def __init__(self, mechanism: Any):
        self.mechanism = mechanism
        sizes = mechanism.group_sizes()
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.flat = np.zeros(int(self.offsets[-1]), dtype=np.int64)
        self.covered = np.zeros(len(sizes), dtype=np.int64)
        self.n = 0

    def counts(self, j: int) -> np.ndarray:
        return self.flat[self.offsets[j]:self.offsets[j + 1]]

    def add(self, reports: Any) -> "MultiAttributeAccumulator":
        m = self.mechanism
        f, c, n = m._tally(checked_reports(m, reports))
        self.flat += f
        self.covered += c
        self.n += n
        return self

    def estimate(self, *, confidence: float = 0.95, target: str = "sample") -> MultiAttributeEstimate:
        z = check_estimate_request(self.n, confidence, target)
        m = self.mechanism
        out = []
        for j, k in enumerate(m.group_sizes()):
            raw, var = m._attribute_estimate(j, self.counts(j), int(self.covered[j]), self.n)
            th = np.clip(raw, 0.0, 1.0)
            if target == "population":
                var = var + th * (1 - th) / self.n
            se = np.sqrt(np.maximum(var, 0.0))
            out.append(FrequencyEstimate(project_simplex(raw), raw, se, np.clip(raw - z * se, 0, 1), np.clip(raw + z * se, 0, 1), self.n,
                                         "projection", confidence, m.group_items(j), target))
        return MultiAttributeEstimate(tuple(out), self.n, m.name)


@dataclass(frozen=True, kw_only=True)
class _MultiAttribute(MechanismBase):
    """Shared shape: validation, encoding of tuples, the exact channel over all tuples."""

    capabilities = frozenset({Verifiable})

    input_kind: ClassVar[InputKind] = InputKind.TUPLE
    epsilon: float
    domains: tuple
    oracles: tuple = field(init=False, repr=False, compare=False)
    #: the k-RR keep thresholds the client draws with (read by the sampling-path layer)
    oracle_thresholds: tuple = field(init=False, repr=False, compare=False)
    realized_ratio: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "domains", _check_domains(self.domains))
        oracles = self._oracles(eps)
        object.__setattr__(self, "oracles", oracles)
        object.__setattr__(self, "oracle_thresholds", tuple(o.keep_threshold for o in oracles))
        ratio = self._ratio()
        if not ratio_within_exp(ratio, eps):
            raise LDPParameterError(f"{self.name}: the realized likelihood ratio exceeds e^epsilon (epsilon={eps!r})")
        object.__setattr__(self, "realized_ratio", ratio)

    @property
    def attributes(self) -> int:
        return len(self.domains)

    def group_sizes(self) -> tuple:
        """What each estimate covers: one attribute each (pairs: :class:`SMPPairs`)."""
        return self.domains

    def group_items(self, j: int) -> tuple:
        return tuple(range(self.group_sizes()[j]))

    def group_labels(self, names: Any) -> list:
        """The label of each estimate, from the attribute names."""
        return list(names)

    def group_codes(self, values: Any, j: int) -> np.ndarray:
        """Each user's code in estimate ``j`` from the ``n × attributes`` codes (attribute ``j``)."""
        return np.asarray(values)[:, j].astype(np.int64)

    @property
    def realized_epsilon(self) -> float:
        return epsilon_of_ratio(self.realized_ratio)

    @property
    def domain_size(self) -> int:
        return int(np.prod(self.domains, dtype=object))

    def spec(self) -> dict:
        return {"name": self.name, "params": {"epsilon": self.epsilon, "domains": list(self.domains)}}

    # -- client ------------------------------------------------------------------------------------
    def encode(self, values: Any) -> np.ndarray:
        """An ``n × A`` int64 matrix of attribute codes (each column ``j`` in ``[0, k_j)``) from a
        2-d array, a list of tuples or a Polars frame of ``A`` integer columns."""
        if hasattr(values, "to_numpy") and hasattr(values, "columns"):
            values = values.to_numpy()
        if isinstance(values, (list, tuple)) and any(isinstance(a, (bool, np.bool_)) for t in values
                                                     for a in (t if isinstance(t, (list, tuple)) else (t,))):
            raise LDPInputError(f"{self.name}: attribute codes must be integers, not booleans")
        try:
            x = np.asarray(values)
        except (TypeError, ValueError):
            raise LDPInputError(f"{self.name} takes one tuple of {self.attributes} attribute codes per user") from None
        if x.ndim == 1 and x.dtype == object and x.size and all(isinstance(t, (tuple, list, np.ndarray)) for t in x):
            try:  # a 1-d object array of tuples (one per user), or of arrays, as a Polars Series of lists gives
                x = np.asarray(x.tolist())
            except (TypeError, ValueError):
                raise LDPInputError(f"{self.name} takes one tuple of {self.attributes} attribute codes per user") from None
        if x.ndim == 1 and x.size == self.attributes and x.dtype != object:
            x = x.reshape(1, -1)
        if x.ndim != 2 or x.shape[1] != self.attributes:
            raise LDPInputError(f"{self.name} takes one tuple of {self.attributes} attribute codes per user (an n × {self.attributes} array)")
        if x.size and x.dtype.kind == "f":
            if not np.isfinite(x).all() or (x != np.floor(x)).any():
                raise LDPInputError(f"{self.name}: attribute codes must be integers (a null or a fraction was found)")
        elif x.dtype.kind not in "iu":
            raise LDPInputError(f"{self.name}: attribute codes must be integers (got dtype {x.dtype})")
        x = x.astype(np.int64)
        bad = (x < 0) | (x >= np.asarray(self.domains))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise LDPInputError(f"{self.name}: attribute {int(c)} needs codes in [0, {self.domains[int(c)]}) ({int(bad.sum())} outside; "
                                f"first at user {int(r)})")
        return x

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None) -> Any:
        """One report per user (row), vectorized over the batch."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        self._check_no_cohorts(cohorts)
        return self._randomize_codes(self.encode(values), as_source(rng))

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> Any:
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        self._check_no_cohorts(cohorts)
        return self._randomize_codes(self.encode(codes), as_source(rng))

    def randomize_one(self, value: Any, *, rng: RNGLike = None, user_key: Any = None) -> Any:
        """One user's report for the tuple ``value``."""
        self._check_client_arguments(user_keys=None if user_key is None else [user_key])
        try:
            one = [tuple(value)]
        except TypeError:
            raise LDPInputError(f"{self.name} takes one tuple of {self.attributes} attribute codes per user") from None
        r = self.randomize(one, rng=rng)
        cols = self._to_columns(r)
        return tuple(int(v) for f in self.report_fields() for v in np.atleast_1d(cols[f.name][0]))

    # -- verification: the channel over all tuples ---------------------------------------------
    def _tuples(self) -> np.ndarray:
        grids = np.meshgrid(*[np.arange(k) for k in self.domains], indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)

    def verification_input_count(self) -> int:
        return self.domain_size

    def sample_verification_outputs(self, x: int, n: int, source: Any) -> np.ndarray:
        codes = np.repeat(self._tuples()[x:x + 1], n, axis=0)
        return self.output_index(self.randomize_encoded(codes, rng=source))

    def _verification_randomize(self, codes: Any, source: Any) -> Any:
        """The real client on a batch of verification input codes (indices into the tuples)."""
        return self.randomize_encoded(self._tuples()[np.asarray(codes, dtype=np.int64)], rng=source)

    def _check_channel_size(self) -> None:
        if self.domain_size * self.output_alphabet_size() > 1 << 16:
            raise LDPParameterError("channel enumeration is limited to 65536 entries (use a small instance)")

    def accumulator(self) -> MultiAttributeAccumulator:
        return MultiAttributeAccumulator(self)

    def estimate(self, reports: Any, *, confidence: float = 0.95, target: str = "sample", candidates: Any = None,  # type: ignore[override]
                 postprocess: Any = None) -> MultiAttributeEstimate:
        """Per-attribute frequencies with standard errors and intervals (one report per user)."""
        self._refuse_frequency_options(candidates, postprocess)
        return self.accumulator().add(reports).estimate(confidence=confidence, target=target)

    def estimate_from(self, acc: Any, *, confidence: float = 0.95, target: str = "sample", candidates: Any = None,  # type: ignore[override]
                      postprocess: Any = None) -> MultiAttributeEstimate:
        self._refuse_frequency_options(candidates, postprocess)
        return acc.estimate(confidence=confidence, target=target)


# ---------------------------------------------------------------------------------------------------
class _TupleReports:
    """Reports that carry one value per attribute (SPL, RS+FD): an ``n × A`` matrix."""

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", width=self.attributes, kind="int", bound=max(self.domains)),)

    def _to_columns(self, reports: Any) -> dict:
        return {"report": np.asarray(reports)}

    def _from_columns(self, cols: dict) -> Any:
        return np.asarray(cols["report"])

    def _row_problems(self, columns: dict) -> dict:
        """Each attribute's value within that attribute's own range ``[0, k_j)``."""
        return {"out_of_range": (np.asarray(columns["report"]) >= np.asarray(self.domains)).any(axis=1)}

    def output_alphabet_size(self) -> int:
        return self.domain_size

    def output_index(self, reports: Any) -> np.ndarray:
        r = np.asarray(reports, dtype=np.int64)
        return np.ravel_multi_index(tuple(r.T), self.domains)

    def _tally(self, reports: np.ndarray) -> tuple:
        r = np.asarray(reports, dtype=np.int64)
        flat = np.concatenate([np.bincount(r[:, j], minlength=k) for j, k in enumerate(self.domains)]).astype(np.int64)
        n = r.shape[0]
        return flat, np.full(self.attributes, n, dtype=np.int64), n


@dataclass(frozen=True, kw_only=True)
class SPL(_TupleReports, _MultiAttribute):
    """Split ε over the attributes: k-RR at ``ε/A`` on each (module docstring).

    Proof: docs/proofs/multi-attribute.md

    >>> import ldp_plugin as ldp, numpy as np
    >>> m = ldp.SPL(epsilon=2.0, domains=(3, 4))
    >>> m.randomize(np.array([[0, 1], [2, 3]]), rng=0).shape
    (2, 2)
    """

    name: ClassVar[str] = "spl"

    def _oracles(self, eps: float) -> tuple:
        share = eps / len(self.domains)
        while True:  # the A shares' product must stay within e^eps exactly
            oracles = tuple(KRR(epsilon=share, d=k) for k in self.domains)
            ratio = math.prod((o.realized_ratio for o in oracles), start=Fraction(1))
            if ratio_within_exp(ratio, eps):
                return oracles
            share = math.nextafter(share, 0.0)  # pragma: no cover - float rounding of eps/A

    def _ratio(self) -> Fraction:
        return math.prod((o.realized_ratio for o in self.oracles), start=Fraction(1))

    def _randomize_codes(self, x: np.ndarray, source: Any) -> np.ndarray:
        out = np.empty(x.shape, dtype=np.uint32)
        for j, o in enumerate(self.oracles):
            out[:, j] = o._randomize_codes(x[:, j], source)
        return out

    def channel(self) -> Channel:
        self._check_channel_size()
        T = self._tuples()
        rows = []
        for x in T:
            row = []
            for y in T:
                p = Fraction(1)
                for j, o in enumerate(self.oracles):
                    p *= o.p_star_exact if y[j] == x[j] else o.q_star_exact
                row.append(p)
            rows.append(tuple(row))
        return Channel(tuple(range(len(T))), tuple(rows))

    def _attribute_estimate(self, j: int, counts: np.ndarray, covered: int, n: int) -> tuple:
        o = self.oracles[j]
        p, q = o.p_star, o.q_star
        raw = (counts / n - q) / (p - q)
        return raw, pure_variance(np.clip(raw, 0, 1), n, p, q)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:  # type: ignore[override]
        """Per-attribute squared l2 error summed over items, averaged over attributes (fixed data)."""
        return float(np.mean([o.mse(n) for o in self.oracles]))


@dataclass(frozen=True, kw_only=True)
class RSFD(_TupleReports, _MultiAttribute):
    """Random sampling plus fake data with k-RR (RS+FD[GRR]); module docstring, including why
    ``epsilon`` is the whole-tuple guarantee and what :meth:`from_attribute_epsilon` means.

    Proof: docs/proofs/multi-attribute.md

    >>> import ldp_plugin as ldp
    >>> m = ldp.RSFD.from_attribute_epsilon(1.0, domains=(10,) * 5)
    >>> round(m.epsilon, 6), round(m.attribute_epsilon, 6)
    (2.260868, 1.0)
    """

    name: ClassVar[str] = "rsfd"

    @classmethod
    def from_attribute_epsilon(cls, epsilon_attribute: float, *, domains: Any) -> "RSFD":
        """The paper's configuration: k-RR at ``ε' = ln(A(e^{ε_a} − 1) + 1)``, which is
        ``ε_a``-LDP when one attribute changes (equal domain sizes; with unequal ones it exceeds
        ``ε_a``: :attr:`attribute_epsilon` is the exact figure) and ``ε'``-LDP for the whole tuple
        (the returned mechanism's ``epsilon``, rounded up)."""
        ea = check_epsilon(epsilon_attribute)
        A = len(_check_domains(domains))
        eps = math.log(A * math.expm1(ea) + 1)
        return cls(epsilon=math.nextafter(eps, math.inf), domains=domains)

    def _oracles(self, eps: float) -> tuple:
        return tuple(KRR(epsilon=eps, d=k) for k in self.domains)

    def _ratio(self) -> Fraction:
        num = sum((k * o.p_star_exact for k, o in zip(self.domains, self.oracles)), Fraction(0))
        den = sum((k * o.q_star_exact for k, o in zip(self.domains, self.oracles)), Fraction(0))
        return num / den

    @property
    def attribute_epsilon(self) -> float:
        """The exact ε when only one attribute may change: ``max_j ln((k_j p_j + S_j)/(k_j q_j + S_j))``
        with ``S_j = Σ_{i≠j} k_i q_i`` (the other attributes' smallest term)."""
        kq = [k * o.q_star_exact for k, o in zip(self.domains, self.oracles)]
        total = sum(kq, Fraction(0))
        best = Fraction(1)
        for j, (k, o) in enumerate(zip(self.domains, self.oracles)):
            s = total - kq[j]
            best = max(best, (k * o.p_star_exact + s) / (k * o.q_star_exact + s))
        return epsilon_of_ratio(best)

    def _randomize_codes(self, x: np.ndarray, source: Any) -> np.ndarray:
        n, A = x.shape
        att = source.uniform_int(A, n)
        out = np.empty(x.shape, dtype=np.uint32)
        for j, (k, o) in enumerate(zip(self.domains, self.oracles)):
            fake = source.uniform_int(k, n)
            real = att == j
            col = fake.astype(np.uint32)
            if real.any():
                col[real] = o._randomize_codes(x[real, j], source)
            out[:, j] = col
        return out

    def channel(self) -> Channel:
        self._check_channel_size()
        T = self._tuples()
        A = self.attributes
        inv = [Fraction(1, k) for k in self.domains]
        prod_inv = math.prod(inv, start=Fraction(1))
        rows = []
        for x in T:
            row = []
            for y in T:
                s = Fraction(0)
                for j, o in enumerate(self.oracles):
                    pj = o.p_star_exact if y[j] == x[j] else o.q_star_exact
                    s += pj * self.domains[j]
                row.append(prod_inv * s / A)
            rows.append(tuple(row))
        return Channel(tuple(range(len(T))), tuple(rows))

    def _attribute_estimate(self, j: int, counts: np.ndarray, covered: int, n: int) -> tuple:
        o, k, A = self.oracles[j], self.domains[j], self.attributes
        p, q = o.p_star, o.q_star
        P = counts / n
        raw = (A * P - (A - 1) / k - q) / (p - q)
        return raw, A * A * P * (1 - P) / (n * (p - q) ** 2)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:  # type: ignore[override]
        """Per-attribute squared l2 error (i.i.d. users, each attribute uniform: the paper's
        variance at ``P = 1/k``), averaged over attributes."""
        out = []
        for o, k in zip(self.oracles, self.domains):
            A = self.attributes
            P = 1.0 / k
            out.append(k * A * A * P * (1 - P) / (n * (o.p_star - o.q_star) ** 2))
        return float(np.mean(out))


@dataclass(frozen=True, kw_only=True)
class SMP(_MultiAttribute):
    """Sample one attribute, report it with k-RR at the full ε; the report carries the attribute
    index (module docstring).

    Proof: docs/proofs/multi-attribute.md

    >>> import ldp_plugin as ldp, numpy as np
    >>> m = ldp.SMP(epsilon=2.0, domains=(3, 4))
    >>> att, val = m.randomize(np.array([[0, 1], [2, 3]]), rng=0)
    >>> att.shape, val.shape
    ((2,), (2,))
    """

    name: ClassVar[str] = "smp"

    def _oracles(self, eps: float) -> tuple:
        return tuple(KRR(epsilon=eps, d=k) for k in self.domains)

    def _ratio(self) -> Fraction:
        return max(o.realized_ratio for o in self.oracles)

    def report_fields(self) -> tuple:
        return (ReportField("attribute", "uint8", kind="int", bound=self.attributes),
                ReportField("report", "uint32", kind="int", bound=max(self.domains)))

    def _to_columns(self, reports: Any) -> dict:
        att, val = reports
        return {"attribute": np.asarray(att), "report": np.asarray(val)}

    def _from_columns(self, cols: dict) -> Any:
        return (np.asarray(cols["attribute"]), np.asarray(cols["report"]))

    def _row_problems(self, columns: dict) -> dict:
        """The reported value within the sampled attribute's own range ``[0, k_j)``."""
        att, val = np.asarray(columns["attribute"]), np.asarray(columns["report"])
        k = np.asarray(self.domains + (0,))[np.minimum(att.astype(np.int64), self.attributes)]
        return {"out_of_range": val.astype(np.int64) >= k}

    def output_alphabet_size(self) -> int:
        return int(sum(self.domains))

    def output_index(self, reports: Any) -> np.ndarray:
        att, val = reports
        offsets = np.concatenate([[0], np.cumsum(self.domains)])
        return offsets[np.asarray(att, dtype=np.int64)] + np.asarray(val, dtype=np.int64)

    def _randomize_codes(self, x: np.ndarray, source: Any) -> tuple:
        n, A = x.shape
        att = source.uniform_int(A, n).astype(np.int64)
        val = np.empty(n, dtype=np.uint32)
        for j, o in enumerate(self.oracles):
            idx = np.flatnonzero(att == j)
            if idx.size:
                val[idx] = o._randomize_codes(x[idx, j], source)
        return att.astype(np.uint8), val

    def channel(self) -> Channel:
        self._check_channel_size()
        T = self._tuples()
        A = self.attributes
        rows = []
        for x in T:
            row = []
            for j, o in enumerate(self.oracles):
                for y in range(self.domains[j]):
                    row.append((o.p_star_exact if y == x[j] else o.q_star_exact) / A)
            rows.append(tuple(row))
        return Channel(tuple(range(self.output_alphabet_size())), tuple(rows))

    def _tally(self, reports: Any) -> tuple:
        att, val = (np.asarray(a, dtype=np.int64) for a in reports)
        offsets = np.concatenate([[0], np.cumsum(self.domains)])
        flat = np.bincount(offsets[att] + val, minlength=int(offsets[-1])).astype(np.int64)
        return flat, np.bincount(att, minlength=self.attributes).astype(np.int64), int(att.size)

    def _attribute_estimate(self, j: int, counts: np.ndarray, covered: int, n: int) -> tuple:
        o = self.oracles[j]
        p, q = o.p_star, o.q_star
        if covered == 0:
            k = self.domains[j]
            return np.full(k, 1.0 / k), np.full(k, 0.25)
        raw = (counts / covered - q) / (p - q)
        th = np.clip(raw, 0, 1)
        # the oracle's variance on the n_j sampled users, plus their sampling from all n users
        return raw, pure_variance(th, covered, p, q) + th * (1 - th) * (1 / covered - 1 / n)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:  # type: ignore[override]
        """Per-attribute squared l2 error against all ``n`` users' frequencies, averaged over
        attributes: k-RR's fixed-data error on ``n/A`` users plus the subsampling term
        ``Σθ(1−θ)(A − 1)/n`` (needs ``theta``: one distribution per attribute; uniform if None)."""
        A = self.attributes
        out = []
        for j, (o, k) in enumerate(zip(self.oracles, self.domains)):
            th = np.full(k, 1.0 / k) if theta is None else np.asarray(theta[j], dtype=np.float64)
            out.append(o.mse(max(n / A, 1.0)) + float(np.sum(th * (1 - th))) * (A - 1) / n)
        return float(np.mean(out))


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class SMPPairs(_MultiAttribute):
    """Two-way marginals: sample one **pair** of attributes ``(i, j)`` uniformly among the
    ``A(A − 1)/2`` (an exact uniform integer, independent of the data) and report
    ``(pair, k-RR_ε(x_i·k_j + x_j))`` over the pair's ``k_i·k_j`` joint values; the pair index is
    in the report (SMP applied to attribute pairs: Wang et al., ICDE 2019, §III-B, the sampling
    principle the paper uses for marginals; CALM, Zhang et al., CCS 2018, §4, collects marginals the
    same way). ε-LDP per user (whole tuple; the realized ratio is the largest pair oracle's).
    Each pair's joint distribution is estimated from the ``n_p`` users who sampled it, with the
    subsampling term ``θ(1−θ)(1/n_p − 1/n)`` in its standard errors (as :class:`SMP`).

    Proof: docs/proofs/multi-attribute.md

    >>> import ldp_plugin as ldp, numpy as np
    >>> m = ldp.SMPPairs(epsilon=2.0, domains=(2, 3, 2))
    >>> m.pairs
    ((0, 1), (0, 2), (1, 2))
    >>> est = m.estimate(m.randomize(np.random.default_rng(0).integers(0, [2, 3, 2], size=(3000, 3)), rng=1))
    >>> est.attributes[0].items[:3]
    ((0, 0), (0, 1), (0, 2))
    """

    name: ClassVar[str] = "smp-pairs"

    @property
    def pairs(self) -> tuple:
        A = len(self.domains)
        return tuple((i, j) for i in range(A) for j in range(i + 1, A))

    def group_sizes(self) -> tuple:
        return tuple(self.domains[i] * self.domains[j] for i, j in self.pairs)

    def group_items(self, g: int) -> tuple:
        i, j = self.pairs[g]
        return tuple((a, b) for a in range(self.domains[i]) for b in range(self.domains[j]))

    def group_labels(self, names: Any) -> list:
        return [f"{names[i]} x {names[j]}" for i, j in self.pairs]

    def group_codes(self, values: Any, g: int) -> np.ndarray:
        """Each user's joint code of pair ``g`` (``i, j``): ``x_i · d_j + x_j``."""
        i, j = self.pairs[g]
        x = np.asarray(values)
        return x[:, i].astype(np.int64) * self.domains[j] + x[:, j].astype(np.int64)

    def _oracles(self, eps: float) -> tuple:
        return tuple(KRR(epsilon=eps, d=self.domains[i] * self.domains[j]) for i, j in self.pairs)

    def _ratio(self) -> Fraction:
        return max(o.realized_ratio for o in self.oracles)

    def report_fields(self) -> tuple:
        return (ReportField("pair", "uint16", kind="int", bound=len(self.pairs)),
                ReportField("report", "uint32", kind="int", bound=max(self.group_sizes())))

    def _to_columns(self, reports: Any) -> dict:
        pair, val = reports
        return {"pair": np.asarray(pair), "report": np.asarray(val)}

    def _from_columns(self, cols: dict) -> Any:
        return (np.asarray(cols["pair"]), np.asarray(cols["report"]))

    def _row_problems(self, columns: dict) -> dict:
        """The reported value within the sampled pair's own range."""
        pair, val = np.asarray(columns["pair"]), np.asarray(columns["report"])
        sizes = np.asarray(self.group_sizes() + (0,))
        return {"out_of_range": val.astype(np.int64) >= sizes[np.minimum(pair.astype(np.int64), len(self.pairs))]}

    def output_alphabet_size(self) -> int:
        return int(sum(self.group_sizes()))

    def output_index(self, reports: Any) -> np.ndarray:
        pair, val = reports
        offsets = np.concatenate([[0], np.cumsum(self.group_sizes())])
        return offsets[np.asarray(pair, dtype=np.int64)] + np.asarray(val, dtype=np.int64)

    def _randomize_codes(self, x: np.ndarray, source: Any) -> tuple:
        n = x.shape[0]
        pair = source.uniform_int(len(self.pairs), n).astype(np.int64)
        val = np.empty(n, dtype=np.uint32)
        for g, ((i, j), o) in enumerate(zip(self.pairs, self.oracles)):
            idx = np.flatnonzero(pair == g)
            if idx.size:
                val[idx] = o._randomize_codes(x[idx, i] * self.domains[j] + x[idx, j], source)
        return pair.astype(np.uint16), val

    def channel(self) -> Channel:
        self._check_channel_size()
        T = self._tuples()
        P = len(self.pairs)
        rows = []
        for x in T:
            row = []
            for (i, j), o in zip(self.pairs, self.oracles):
                code = int(x[i]) * self.domains[j] + int(x[j])
                row.extend((o.p_star_exact if y == code else o.q_star_exact) / P for y in range(o.d))
            rows.append(tuple(row))
        return Channel(tuple(range(self.output_alphabet_size())), tuple(rows))

    def _tally(self, reports: Any) -> tuple:
        pair, val = (np.asarray(a, dtype=np.int64) for a in reports)
        offsets = np.concatenate([[0], np.cumsum(self.group_sizes())])
        flat = np.bincount(offsets[pair] + val, minlength=int(offsets[-1])).astype(np.int64)
        return flat, np.bincount(pair, minlength=len(self.pairs)).astype(np.int64), int(pair.size)

    def _attribute_estimate(self, g: int, counts: np.ndarray, covered: int, n: int) -> tuple:
        o = self.oracles[g]
        p, q = o.p_star, o.q_star
        if covered == 0:
            k = o.d
            return np.full(k, 1.0 / k), np.full(k, 0.25)
        raw = (counts / covered - q) / (p - q)
        th = np.clip(raw, 0, 1)
        return raw, pure_variance(th, covered, p, q) + th * (1 - th) * (1 / covered - 1 / n)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:  # type: ignore[override]
        """Per-pair squared l2 error of the joint distribution against all ``n`` users', averaged
        over pairs: k-RR's error on ``n/P`` users plus ``Σθ(1−θ)(P − 1)/n`` (``theta``: one joint
        distribution per pair, flattened; uniform if None)."""
        P = len(self.pairs)
        out = []
        for g, o in enumerate(self.oracles):
            th = np.full(o.d, 1.0 / o.d) if theta is None else np.asarray(theta[g], dtype=np.float64)
            out.append(o.mse(max(n / P, 1.0)) + float(np.sum(th * (1 - th))) * (P - 1) / n)
        return float(np.mean(out))
