"""The mechanism protocol: a small core every mechanism and wrapper has, and declared capabilities.

:class:`Mechanism` is the core (14 members) that every layer above ``mechanisms/`` may use:

* description: ``name``, ``input_kind`` (an :class:`InputKind`), ``epsilon`` (of
  one report), ``base`` (the mechanism that produces the reports: a wrapper's inner one), ``spec()``
  (the JSON-able ``{"name", "params"}`` the registry rebuilds with ``from_spec``);
* the client, ONE signature everywhere: ``encode``, ``randomize(values, *, rng=None, cohorts=None,
  user_keys=None)``, ``randomize_encoded(codes, *, rng=None, cohorts=None, user_keys=None,
  offsets=None)``, ``randomize_one(value, *, rng=None, user_key=None)``;
* reports: ``report_fields()`` and the column hooks ``to_columns`` / ``from_columns``, from which
  every codec of :mod:`.reports` (Polars frames, wire, row checks) is derived;
* the server: ``accumulator()`` and ``estimate_from(acc, *, candidates=None, postprocess=...,
  confidence=..., target=...)``.

A **capability** is a protocol a class *declares* in its ``capabilities`` (a class-level frozenset of
the protocols below, extended by subclasses: ``capabilities = FrequencyOracle.capabilities |
{MaxGainAttack}``) and a named consumer asks for, once, at its edge, through ONE function:
:func:`has` (``has(m, Keyed)``; :func:`capabilities` lists them) — the scikit-learn tags shape. The
protocols are not ``runtime_checkable``: ``isinstance`` cannot answer by attribute shape, so a
mechanism offers exactly what it declares (``tests/test_capabilities.py`` holds every registered
name's declaration to the members it has and the contracts it passes). What a user gives the client
is the declared :class:`InputKind` (``m.input_kind``).

=================  ===========================================================  ==================================
capability         members                                                      read by
=================  ===========================================================  ==================================
:class:`ClosedDomain`  ``domain_size``, ``categories``, ``closed``, ``items``, ``with_categories``  adapters, measurements, choose, simulate
:class:`Cohorted`  ``takes_cohorts``, ``cohorts``, ``hash_seed``, ``check_cohorts``  adapters (cohort assignment), device
:class:`Keyed`     ``needs_user_keys``, ``epsilon_inst``, ``collection_cost``, ``lifetime_bound``, ``transcript_model``  make_longitudinal, device, edges (:func:`refuse_keyed`), verification (transcript)
:class:`Numeric`   ``lower``, ``upper``, ``grid``                                measurements (domains), simulate
:class:`SupportRates`  ``d``, ``p_star_exact``, ``q_star_exact``, ``realized_ratio``, ``channel_shape``, ``q_star_over_hash``, ``support_counts``  amplification, choose (closed forms), verification (rates)
:class:`Verifiable`    ``channel``, ``output_index``, ``verification_input_count``, ``sample_verification_outputs``, ``channel_is_client``  verification, amplification, choose (exact forms)
:class:`Analytic`  ``analytic_mse``, ``variance``                                choose, simulate, theory tables
:class:`PoisonBounded`  ``report_influence``                                      robust (poisoning bounds), choose
:class:`MaxGainAttack`  ``max_gain_reports``                                      robust (the attack: tests, benchmarks)
:class:`SupportTestable`  ``support_law``, ``support_matrix``, ``support_sizes``   robust (detection)
:class:`Distribution`  ``lower``, ``upper``, ``estimate_from`` → a distribution      the Polars distribution / quantiles / range_count
=================  ===========================================================  ==================================

The defaults live in ONE base class, :class:`ldp_plugin.mechanisms.base.MechanismBase`; a new
mechanism subclasses it (or a family base) — subclassing :class:`Mechanism` itself is refused with
a message saying so. The report codecs, the wire format and the one row-check path are in :mod:`.reports`.
"""

from __future__ import annotations

from abc import abstractmethod
from enum import Enum
from typing import Any, ClassVar, FrozenSet, Optional, Protocol, runtime_checkable

from .._errors import LDPParameterError

__all__ = ["Mechanism", "ClosedDomain", "Cohorted", "Keyed", "Numeric", "SupportRates", "Verifiable", "Analytic",
           "PoisonBounded", "MaxGainAttack", "SupportTestable", "Distribution", "CAPABILITIES", "capabilities", "has", "InputKind",
           "refuse_keyed"]


@runtime_checkable
class Mechanism(Protocol):
    """The core every mechanism and wrapper has (14 members; see the module docstring)."""

    name: ClassVar[str]
    input_kind: ClassVar["InputKind"]
    epsilon: float

    @property
    @abstractmethod
    def base(self) -> "Mechanism":
        ...

    @abstractmethod
    def spec(self) -> dict:
        ...

    @abstractmethod
    def encode(self, values: Any) -> Any:
        ...

    @abstractmethod
    def randomize(self, values: Any, *, rng: Any = None, cohorts: Any = None, user_keys: Any = None) -> Any:
        ...

    @abstractmethod
    def randomize_encoded(self, codes: Any, *, rng: Any = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> Any:
        ...

    @abstractmethod
    def randomize_one(self, value: Any, *, rng: Any = None, user_key: Any = None) -> Any:
        ...

    @abstractmethod
    def report_fields(self) -> tuple:
        ...

    @abstractmethod
    def to_columns(self, reports: Any) -> dict:
        ...

    @abstractmethod
    def from_columns(self, cols: dict) -> Any:
        ...

    @abstractmethod
    def accumulator(self) -> Any:
        ...

    @abstractmethod
    def estimate_from(self, acc: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95, target: str = "sample") -> Any:
        ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("_is_protocol", False) and not getattr(cls, "_mechanism_defaults", False):
            raise TypeError(
                f"{cls.__name__}: a mechanism subclasses ldp_plugin.mechanisms.base.MechanismBase (the defaults) "
                "or a family base, not the Mechanism protocol"
            )


class ClosedDomain(Protocol):
    """A closed alphabet of ``domain_size`` items (codes ``0..d-1`` or declared labels)."""

    categories: Optional[tuple]

    @property
    @abstractmethod
    def domain_size(self) -> Optional[int]:
        ...

    @property
    @abstractmethod
    def closed(self) -> bool:
        ...

    @property
    @abstractmethod
    def items(self) -> tuple:
        ...

    @abstractmethod
    def with_categories(self, categories: Any) -> Any:
        ...


class Cohorted(Protocol):
    """Users fall into data-independent cohorts (``randomize(..., cohorts=)``)."""

    takes_cohorts: ClassVar[bool]
    cohorts: int
    hash_seed: int

    @abstractmethod
    def check_cohorts(self, cohorts: Any, n: int) -> Any:
        ...


class Keyed(Protocol):
    """Memoized reports: the client needs each user's secret key (``user_keys=``) and a series of
    collections is charged by ``collection_cost(t)`` (the lifetime bound), not ε per report;
    ``epsilon_inst`` (one call's charge once the memoized layer is known; None: no instantaneous
    layer), ``lifetime_bound(t, relation=)`` and the exact ``transcript_model()`` of a series."""

    needs_user_keys: ClassVar[bool]

    @property
    @abstractmethod
    def epsilon_inst(self) -> Any:
        ...

    @abstractmethod
    def collection_cost(self, t: int) -> Any:
        ...

    @abstractmethod
    def lifetime_bound(self, t: int, *, relation: Optional[str] = None) -> Any:
        ...

    @abstractmethod
    def transcript_model(self) -> Any:
        ...


class Numeric(Protocol):
    """Numbers in ``[lower, upper]`` (mean estimation) on a ``grid``."""

    lower: float
    upper: float
    grid: int


class SupportRates(Protocol):
    """A pure frequency oracle: exact support rates ``p* > q*`` over ``d`` items, the realized
    worst-case ratio, and ``channel_shape`` (``"randomized-response"``, ``"unary"``, ``"subset"`` or
    None): the closed forms of :mod:`ldp_plugin.amplification` and :mod:`ldp_plugin.choose` key on it."""

    d: int
    p_star_exact: Any
    q_star_exact: Any
    realized_ratio: Any
    channel_shape: ClassVar[Optional[str]]
    #: ``q*`` holds on average over the per-report hash seed only (OLH), not per report
    q_star_over_hash: ClassVar[bool]

    @abstractmethod
    def support_counts(self, reports: Any) -> Any:
        ...


class Verifiable(Protocol):
    """The exact realized channel (small domains) and the real client driven on chosen inputs."""

    channel_is_client: ClassVar[bool]

    @abstractmethod
    def channel(self) -> Any:
        ...

    @abstractmethod
    def output_index(self, reports: Any) -> Any:
        ...

    @abstractmethod
    def verification_input_count(self) -> int:
        ...

    @abstractmethod
    def sample_verification_outputs(self, x: int, n: int, source: Any) -> Any:
        ...


class Analytic(Protocol):
    """Closed-form error of the raw estimator."""

    @abstractmethod
    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        ...

    @abstractmethod
    def variance(self, *args: Any, **kwargs: Any) -> Any:
        ...


class PoisonBounded(Protocol):
    """A linear estimator ``raw_i = (1/N) Σ_r φ_i(y_r)`` over the ``N`` reports, with the exact range
    ``[lo_i, hi_i]`` of one well-formed report's contribution ``φ_i`` (:meth:`report_influence`).
    Read by :mod:`ldp_plugin.robust.bounds` (certified poisoning bounds) and choose."""

    @abstractmethod
    def report_influence(self) -> Any:
        ...


class MaxGainAttack(Protocol):
    """Well-formed reports that reach the largest contribution ``hi`` on chosen targets — the
    maximal-gain attack of Cao, Jia and Gong, "Data Poisoning Attacks to Local Differential Privacy
    Protocols", USENIX Security 2021 (MGA). Read by :mod:`ldp_plugin.robust.attack` (tests, benchmarks)."""

    @abstractmethod
    def max_gain_reports(self, targets: Any, m: int, *, rng: Any = None) -> Any:
        ...


class SupportTestable(Protocol):
    """Reports support items independently given the user's item: the own item with ``p*``, every
    other with ``q*`` (:meth:`support_law`, exact), and the support of any item set can be read from
    a report (:meth:`support_matrix`; the number over the whole domain: :meth:`support_sizes`). Read by :mod:`ldp_plugin.robust.detection` (per-report tests)."""

    @abstractmethod
    def support_law(self) -> Any:
        ...

    @abstractmethod
    def support_matrix(self, reports: Any, items: Any) -> Any:
        ...

    @abstractmethod
    def support_sizes(self, reports: Any) -> Any:
        ...


class Distribution(Protocol):
    """The estimate is a numeric distribution on ``[lower, upper]`` (a ``DistributionEstimate``:
    histogram, quantiles, range counts). Read by the Polars ``distribution`` / ``quantiles`` /
    ``range_count``."""

    lower: float
    upper: float

    @abstractmethod
    def estimate_from(self, acc: Any, **kwargs: Any) -> Any:
        ...


#: every capability, by the name ``ldp mechanisms`` and the registry tests use
CAPABILITIES = {"closed_domain": ClosedDomain, "cohorted": Cohorted, "keyed": Keyed, "numeric": Numeric,
                "support_rates": SupportRates, "verifiable": Verifiable, "analytic": Analytic, "poison_bounded": PoisonBounded,
                "max_gain_attack": MaxGainAttack, "support_testable": SupportTestable, "distribution": Distribution}


def capabilities(mechanism: Any) -> FrozenSet[type]:
    """The capabilities ``mechanism`` declares: its class's ``capabilities`` (a frozenset of the
    protocols above), nothing else — never its attribute shape. Anything that is not a mechanism
    declares none."""
    declared = getattr(type(mechanism), "capabilities", frozenset())
    return declared if isinstance(declared, frozenset) else frozenset()


def has(mechanism: Any, capability: type) -> bool:
    """Whether ``mechanism`` declares ``capability`` (one of :data:`CAPABILITIES`): the ONE question a
    consumer asks of a mechanism, at its edge (the scikit-learn tags shape)."""
    if capability not in _CAPABILITY_SET:
        raise TypeError(f"{capability!r} is not a capability of ldp_plugin.mechanisms.protocol")
    return capability in capabilities(mechanism)


_CAPABILITY_SET = frozenset(CAPABILITIES.values())


class InputKind(str, Enum):
    """What one user gives the client (a mechanism's declared ``input_kind``): a category
    (``value``), a set of at most ``m`` categories (``set``), a number on ``[lower, upper]``
    (``number``), one category per attribute (``tuple``) or a set of (key, value) pairs
    (``key-value``). Compares equal to its text."""

    VALUE = "value"
    SET = "set"
    NUMBER = "number"
    TUPLE = "tuple"
    KEY_VALUE = "key-value"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


def refuse_keyed(mechanism: Any, entry: str) -> None:
    """The edge check of an entry point that cannot hold users' secret keys (``make_ldp``,
    ``privatize``): a keyed (memoized) mechanism is refused with the entry points that serve it."""
    if has(mechanism, Keyed):
        raise LDPParameterError(
            f"{mechanism.name} is a keyed (memoized) mechanism, which {entry} cannot serve (it never holds users' "
            "secret keys): use make_longitudinal(...) for its OpenDP measurement, or randomize(values, user_keys=...) "
            "on the devices that hold the keys (the federated device does)"
        )
