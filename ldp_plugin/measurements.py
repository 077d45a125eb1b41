"""OpenDP measurements for every mechanism: per user and per population (a batch).

* **Per user** (``unit="user"``): input one user's value in :func:`category_domain`, metric
  ``discrete_distance()``, measure ``max_divergence()``, privacy map ``0 if d_in == 0 else ε``.
* **Population** (``unit="population"``): input a batch (output ``i`` is user ``i``'s report) in
  :func:`batch_domain`, metric ``hamming_distance()``, map ``d_in · ε`` rounded up. The whole batch
  is randomized inside one measurement call (vectorized).

OpenDP never calls a user domain's ``member`` function, so the measurement validates its input
itself (errors name the problem, never the value). The randomness source is the OS CSPRNG unless
a seed is given (then the measurement is reproducible and *not* suitable for a release).

Requires ``dp.enable_features("contrib", "honest-but-curious")``, which :func:`make_ldp` turns on:
user-defined measurements are trusted code in OpenDP's model, and the trust here rests on the
exact realized-channel check each mechanism performs at construction.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import opendp.prelude as dp
# OpenDP's own then_* functions return this class; it is what `transformation >> partial` expects.
from opendp.mod import _PartialConstructor as PartialConstructor

from ._errors import LDPParameterError
from ._opendp_boundary import argument_check, checked
from .exact import scale_epsilon_up
from .mechanisms import KRR, OLH, OUE, RAPPOR, THE, PrivSet, RapporSet, Wheel, BinaryMechanism, GeometricMechanism, StaircaseMechanism, FrequencyOracle, HadamardMechanism, HadamardResponse, KSubset, WarnerRR
from .mechanisms import SampleOne
from .sampling import RNGLike, as_source

__all__ = [
    "enable_ldp_features",
    "category_domain",
    "batch_domain",
    "make_ldp",
    "then_ldp",
    "make_krr",
    "then_krr",
    "make_randomized_response_warner",
    "then_randomized_response_warner",
    "make_rappor",
    "then_rappor",
    "make_oue",
    "then_oue",
    "make_k_subset",
    "then_k_subset",
    "make_olh",
    "then_olh",
    "make_hadamard",
    "then_hadamard",
    "make_orr",
    "then_orr",
    "make_orappor",
    "then_orappor",
    "make_hcms",
    "then_hcms",
    "make_count_sketch",
    "then_count_sketch",
    "make_cms",
    "then_cms",
    "set_domain",
    "make_sample_one",
    "make_set_ldp",
    "make_the",
    "then_the",
    "make_hadamard_mechanism",
    "then_hadamard_mechanism",
    "make_binary",
    "then_binary",
    "make_staircase",
    "then_staircase",
    "make_geometric",
    "then_geometric",
    "make_wheel",
    "then_wheel",
    "make_rappor_set",
    "then_rappor_set",
    "make_privset",
    "then_privset",
]

UNITS = ("user", "population")


def enable_ldp_features() -> None:
    """Enable the OpenDP features user-defined LDP measurements need."""
    dp.enable_features("contrib", "honest-but-curious")


def _domain_id(mechanism: FrequencyOracle) -> str:
    if mechanism.input_kind == "number":
        return f"numbers in [{mechanism.lower!r}, {mechanism.upper!r}], {mechanism.name}"
    kind = "sets of at most m={}, ".format(mechanism.m) if mechanism.input_kind == "set" else ""
    if not mechanism.closed:
        return f"{kind}open alphabet, {mechanism.name}"
    if mechanism.categories is None:
        return f"{kind}d={mechanism.domain_size}"
    return f"{kind}categories={list(mechanism.categories)!r}"


def category_domain(mechanism: FrequencyOracle) -> dp.Domain:
    """The OpenDP domain of one user's value for ``mechanism`` (a category of its domain)."""
    enable_ldp_features()
    return dp.user_domain(f"LDPCategory({_domain_id(mechanism)})", lambda _x: True)


def batch_domain(mechanism: FrequencyOracle) -> dp.Domain:
    """The OpenDP domain of a batch of users' values for ``mechanism``."""
    enable_ldp_features()
    return dp.user_domain(f"LDPCategoryBatch({_domain_id(mechanism)})", lambda _x: True)


def _check_d_in(d_in: Any) -> int:
    if isinstance(d_in, bool) or not isinstance(d_in, int) or d_in < 0:
        raise LDPParameterError("d_in must be a non-negative Python int")
    return d_in


def _unit_of_metric(metric: Any) -> str:
    if metric == dp.discrete_distance():
        return "user"
    if metric == dp.hamming_distance():
        return "population"
    raise LDPParameterError(
        f"input_metric must be discrete_distance() (one user's value) or hamming_distance() (a batch of users); got {metric}"
    )


def make_ldp(*args: Any, unit: Optional[str] = None, rng: RNGLike = None, input_domain: Optional[dp.Domain] = None, input_metric: Optional[dp.Metric] = None) -> dp.Measurement:
    """Wrap a mechanism as an OpenDP ``Measurement``.

    OpenDP's parameter order: ``make_ldp(input_domain, input_metric, mechanism, rng=None)`` — the
    unit follows from the metric (``discrete_distance()``: one user; ``hamming_distance()``: a
    batch). The mechanism-first form ``make_ldp(mechanism, unit="user")`` keeps working.

    >>> import opendp.prelude as dp, ldp_plugin as ldp
    >>> mech = ldp.KRR(epsilon=1.0, d=4)
    >>> m = ldp.make_ldp(ldp.category_domain(mech), dp.discrete_distance(), mech)
    >>> m.map(1), m.check(1, 1.0)
    (1.0, True)
    """
    if len(args) == 3:
        input_domain, input_metric, mechanism = args
        inferred = _unit_of_metric(input_metric)
        if unit is not None and unit != inferred:
            raise LDPParameterError(f"unit={unit!r} contradicts input_metric {input_metric} (unit {inferred!r})")
        unit = inferred
    elif len(args) == 1:
        (mechanism,) = args
        if unit is None:
            unit = _unit_of_metric(input_metric) if input_metric is not None else "user"
    else:
        raise LDPParameterError("make_ldp takes (input_domain, input_metric, mechanism) or (mechanism)")
    return _make_ldp(mechanism, unit=unit, rng=rng, input_domain=input_domain, input_metric=input_metric)


def _make_ldp(
    mechanism: FrequencyOracle,
    *,
    unit: str = "user",
    rng: RNGLike = None,
    input_domain: Optional[dp.Domain] = None,
    input_metric: Optional[dp.Metric] = None,
) -> dp.Measurement:
    """The measurement (see :func:`make_ldp`).

    :param mechanism: a validated mechanism object (its constructor verified the realized ratio).
    :param unit: ``"user"`` (one value; ``discrete_distance``; map ``0 if d_in == 0 else ε``) or
        ``"population"`` (a batch; ``hamming_distance``; map ``d_in · ε`` rounded up).
    :param rng: ``None`` for the OS CSPRNG (fresh for every call), or an int seed / source for
        reproducible simulations.
    :param input_domain: to chain after a transformation (see :func:`then_ldp`); defaults to
        :func:`category_domain` / :func:`batch_domain`.
    """
    enable_ldp_features()
    if unit not in UNITS:
        raise LDPParameterError(f"unit must be one of {UNITS} (got {unit!r})")
    source = None if rng is None else as_source(rng)
    eps = mechanism.epsilon

    def _source():
        return as_source(None) if source is None else source

    if unit == "user":
        metric = dp.discrete_distance()
        if input_metric is not None and input_metric != metric:
            raise LDPParameterError("a per-user LDP measurement needs input_metric discrete_distance()")
        domain = input_domain if input_domain is not None else category_domain(mechanism)

        def function(value):
            return mechanism.randomize_one(value, rng=_source())

        def privacy_map(d_in):
            return 0.0 if _check_d_in(d_in) == 0 else eps

    else:
        metric = dp.hamming_distance()
        if input_metric is not None and input_metric != metric:
            raise LDPParameterError("a population LDP measurement needs input_metric hamming_distance()")
        domain = input_domain if input_domain is not None else batch_domain(mechanism)

        def function(values):
            return mechanism.randomize(values, rng=_source())

        def privacy_map(d_in):
            return scale_epsilon_up(_check_d_in(d_in), eps)

    # checked before the FFI call: the argument (LDPInputError, never OpenDP's stack) and d_in
    return checked(dp.m.make_user_measurement(domain, metric, dp.max_divergence(), function, privacy_map), argument_check(mechanism, unit))


def then_ldp(mechanism: FrequencyOracle, *, unit: Optional[str] = None, rng: RNGLike = None) -> PartialConstructor:
    """Partial of :func:`make_ldp` for chaining (as OpenDP's ``then_*``): the input domain and
    metric come from the transformation before it, ``transformation >> then_ldp(mech)``; the unit
    follows from that metric."""
    return PartialConstructor(lambda input_domain, input_metric: make_ldp(input_domain, input_metric, mechanism, unit=unit, rng=rng))


def make_krr(
    *, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """k-RR as an OpenDP measurement (paper 002 eq. 6). ``ε``-LDP per user.

    >>> import ldp_plugin as ldp
    >>> m = ldp.make_krr(epsilon=1.0, categories=["a", "b", "c"])
    >>> m("b") in ("a", "b", "c"), m.map(1)
    (True, 1.0)
    """
    mech = KRR(epsilon=epsilon, d=d, categories=categories)
    return make_ldp(mech, unit=unit, rng=rng)


def then_krr(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(KRR(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def make_randomized_response_warner(*, epsilon: float, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """Warner's randomized response on a boolean (paper 002 eq. 3). ``ε``-LDP per user."""
    return make_ldp(WarnerRR(epsilon=epsilon), unit=unit, rng=rng)


def then_randomized_response_warner(*, epsilon: float, unit: str = "user", rng: RNGLike = None):
    return then_ldp(WarnerRR(epsilon=epsilon), unit=unit, rng=rng)


def make_rappor(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """k-RAPPOR / basic one-time RAPPOR (paper 002 eq. 14–15). ``ε``-LDP per user."""
    return make_ldp(RAPPOR(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def then_rappor(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(RAPPOR(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def make_oue(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """Optimized unary encoding (p = 1/2, q = 1/(e^ε+1)). ``ε``-LDP per user."""
    return make_ldp(OUE(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def then_oue(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(OUE(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def make_k_subset(
    *, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, k: Any = "l2", unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """k-subset mechanism (paper 001 eq. 5, Alg. 1). ``ε``-LDP per user; ``k`` = ``"l2"`` (k#),
    ``"mi"`` (k*) or an integer in [1, d − 1]."""
    return make_ldp(KSubset(epsilon=epsilon, d=d, categories=categories, k=k), unit=unit, rng=rng)


def then_k_subset(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, k: Any = "l2", unit: str = "user", rng: RNGLike = None):
    return then_ldp(KSubset(epsilon=epsilon, d=d, categories=categories, k=k), unit=unit, rng=rng)


def make_olh(
    *, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, g: Any = "auto", unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """Optimized local hashing (Wang et al. 2017; ``g = round(e^ε + 1)``, ``g=2`` for BLH).
    ``ε``-LDP per user; the report is ``(seed, hashed value)``."""
    return make_ldp(OLH(epsilon=epsilon, d=d, categories=categories, g=g), unit=unit, rng=rng)


def then_olh(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, g: Any = "auto", unit: str = "user", rng: RNGLike = None):
    return then_ldp(OLH(epsilon=epsilon, d=d, categories=categories, g=g), unit=unit, rng=rng)


def make_hadamard(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """Hadamard response (Acharya, Sun, Zhang 2019). ``ε``-LDP per user; the report is one
    integer in ``[0, K)``, ``K`` the smallest power of two above ``d``."""
    return make_ldp(HadamardResponse(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def then_hadamard(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(HadamardResponse(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def set_domain(set_mechanism: SampleOne, *, unit: str = "user") -> dp.Domain:
    """The OpenDP domain of one user's set (``unit="user"``) or a batch of sets."""
    enable_ldp_features()
    kind = "LDPSet" if unit == "user" else "LDPSetBatch"
    return dp.user_domain(f"{kind}(m={set_mechanism.m}, {_domain_id(set_mechanism.mechanism)})", lambda _x: True)


def make_sample_one(set_mechanism: SampleOne, *, unit: str = "user", rng: RNGLike = None) -> dp.Transformation:
    """The "sample one item" user transformation (padding-and-sampling, :mod:`ldp_plugin.sets`):
    a set of at most ``m`` items ↦ one item of the padded domain (``PAD`` when the drawn slot is
    empty). Stability: ``d_in ↦ d_in`` under ``discrete_distance`` (per user) or
    ``hamming_distance`` (a batch, item ``i`` from set ``i``). Chain it with
    ``>> then_ldp(set_mechanism.padded)``; estimates scale by ``m`` (:meth:`SampleOne.estimate`).

    >>> import ldp_plugin as ldp
    >>> s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, categories=["a", "b", "c"]), m=2)
    >>> chain = ldp.make_sample_one(s) >> ldp.then_ldp(s.padded)
    >>> chain.map(1), chain(["a", "c"]) in ("a", "b", "c", ldp.PAD)
    (1.0, True)
    """
    enable_ldp_features()
    if unit not in UNITS:
        raise LDPParameterError(f"unit must be one of {UNITS} (got {unit!r})")
    source = None if rng is None else as_source(rng)
    padded = set_mechanism.padded
    out_domain = category_domain(padded) if unit == "user" else batch_domain(padded)
    metric = dp.discrete_distance() if unit == "user" else dp.hamming_distance()

    def function(x):
        src = as_source(None) if source is None else source
        labels = set_mechanism.sample_labels([x] if unit == "user" else x, rng=src)
        return labels[0] if unit == "user" else labels

    return dp.t.make_user_transformation(set_domain(set_mechanism, unit=unit), metric, out_domain, metric, function, lambda d_in: _check_d_in(d_in))


def make_set_ldp(set_mechanism: SampleOne, *, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """``make_sample_one(...) >> then_ldp(set_mechanism.padded)``: ε-LDP per user for sets."""
    return make_sample_one(set_mechanism, unit=unit, rng=rng) >> then_ldp(set_mechanism.padded, unit=unit, rng=rng)


def make_the(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, threshold: Optional[float] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """Thresholded histogram encoding (Wang et al. 2017 §4.3). ``ε``-LDP per user."""
    return make_ldp(THE(epsilon=epsilon, d=d, categories=categories, threshold=threshold), unit=unit, rng=rng)


def then_the(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, threshold: Optional[float] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(THE(epsilon=epsilon, d=d, categories=categories, threshold=threshold), unit=unit, rng=rng)


def make_hadamard_mechanism(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """Hadamard mechanism (one randomized Hadamard coefficient). ``ε``-LDP per user."""
    return make_ldp(HadamardMechanism(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def then_hadamard_mechanism(*, epsilon: float, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(HadamardMechanism(epsilon=epsilon, d=d, categories=categories), unit=unit, rng=rng)


def make_binary(*, epsilon: float, d: Optional[int] = None, subset: Any = None, p0: Any = None, p1: Any = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """The binary mechanism (paper 003 eq. 14) for ``T = subset`` or ``T = {x: P₀(x) >= P₁(x)}``. ``ε``-LDP per user."""
    return make_ldp(BinaryMechanism(epsilon=epsilon, d=d, subset=subset, p0=p0, p1=p1, categories=categories), unit=unit, rng=rng)


def then_binary(*, epsilon: float, d: Optional[int] = None, subset: Any = None, p0: Any = None, p1: Any = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(BinaryMechanism(epsilon=epsilon, d=d, subset=subset, p0=p0, p1=p1, categories=categories), unit=unit, rng=rng)


def make_staircase(*, epsilon: float, utility: str = "mutual_information", d: Optional[int] = None, prior: Any = None, p0: Any = None, p1: Any = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """The optimal staircase mechanism for ``utility`` (paper 003 Thm 4, LP with HiGHS). ``ε``-LDP per user."""
    return make_ldp(StaircaseMechanism(epsilon=epsilon, utility=utility, d=d, prior=prior, p0=p0, p1=p1, categories=categories), unit=unit, rng=rng)


def then_staircase(*, epsilon: float, utility: str = "mutual_information", d: Optional[int] = None, prior: Any = None, p0: Any = None, p1: Any = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(StaircaseMechanism(epsilon=epsilon, utility=utility, d=d, prior=prior, p0=p0, p1=p1, categories=categories), unit=unit, rng=rng)


def make_geometric(*, epsilon: float, d: int, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """The truncated geometric mechanism on ``0..d−1`` (paper 003 §3.4). ``ε``-LDP per user."""
    return make_ldp(GeometricMechanism(epsilon=epsilon, d=d), unit=unit, rng=rng)


def then_geometric(*, epsilon: float, d: int, unit: str = "user", rng: RNGLike = None):
    return then_ldp(GeometricMechanism(epsilon=epsilon, d=d), unit=unit, rng=rng)


def make_wheel(*, epsilon: float, m: int = 1, d: Optional[int] = None, categories: Optional[Sequence] = None, p: Any = "optimal", unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """The wheel mechanism (paper 004) for a set of at most ``m`` items (``m = 1``: one item),
    on an exact grid. ``ε``-LDP per user (the whole set); the report is ``(seed, cell)``."""
    return make_ldp(Wheel(epsilon=epsilon, m=m, d=d, categories=categories, p=p), unit=unit, rng=rng)


def then_wheel(*, epsilon: float, m: int = 1, d: Optional[int] = None, categories: Optional[Sequence] = None, p: Any = "optimal", unit: str = "user", rng: RNGLike = None):
    return then_ldp(Wheel(epsilon=epsilon, m=m, d=d, categories=categories, p=p), unit=unit, rng=rng)


def make_rappor_set(*, epsilon: float, m: int, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """RAPPOR for sets of at most ``m`` items (per-bit ε/(2m)). ``ε``-LDP per user (the whole set)."""
    return make_ldp(RapporSet(epsilon=epsilon, m=m, d=d, categories=categories), unit=unit, rng=rng)


def make_privset(*, epsilon: float, m: int, d: Optional[int] = None, categories: Optional[Sequence] = None, k: Any = "optimal", unit: str = "user", rng: RNGLike = None) -> dp.Measurement:
    """PrivSet for sets of at most ``m`` items. ``ε``-LDP per user (the whole set)."""
    return make_ldp(PrivSet(epsilon=epsilon, m=m, d=d, categories=categories, k=k), unit=unit, rng=rng)


def then_rappor_set(*, epsilon: float, m: int, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    """Partial of :func:`make_rappor_set` for chaining after a transformation. ``ε``-LDP per user."""
    return then_ldp(RapporSet(epsilon=epsilon, m=m, d=d, categories=categories), unit=unit, rng=rng)


def then_privset(*, epsilon: float, m: int, d: Optional[int] = None, categories: Optional[Sequence] = None, k: Any = "optimal", unit: str = "user", rng: RNGLike = None):
    """Partial of :func:`make_privset` for chaining after a transformation. ``ε``-LDP per user."""
    return then_ldp(PrivSet(epsilon=epsilon, m=m, d=d, categories=categories, k=k), unit=unit, rng=rng)


# the cohort oracles' constructors (O-RR, O-RAPPOR, CMS, HCMS) live in their own module; imported
# last (they build on make_ldp/then_ldp above) and re-exported here, where the registry names them
from .measurements_cohort import make_cms, make_count_sketch, make_hcms, make_orappor, make_orr, then_cms, then_count_sketch, then_hcms, then_orappor, then_orr  # noqa: E402
