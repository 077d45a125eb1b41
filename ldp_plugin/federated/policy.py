"""What a device enforces, set by its owner only (the device TOML a SuperNode's ``node_config``
names), never by a server message: the mechanisms it allows, a maximum (and optionally a minimum)
ε per query, optionally a maximum number of charged queries per UTC day, the most memory one query
may plan, and the lifetime / per-period caps of every device's budget (kept in the device's own
ledger, a :class:`ldp_plugin.Population` with one cohort per device, so each device's caps are
separate; the neighbouring relation of every charge is the one the query's mechanism declares).

Every check here reads the query, the policy and the ledger's counts — never a value — and runs
before the spend, so a refusal is the same for every device whatever it holds.

The memory and time a query plans (``max_query_bytes``, ``max_query_seconds``) are checked from
sizes and a dry run on inputs that are not the devices' values (:mod:`~ldp_plugin.federated.work`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

from .._errors import LDPParameterError
from ..accountant import as_fraction
from .._boundary.workload import MAX_SECONDS

__all__ = ["DevicePolicy", "DEFAULT_QUERY_BYTES", "DEFAULT_QUERY_SECONDS"]

#: the default memory one query may plan on a node (all its devices): 1 GiB
DEFAULT_QUERY_BYTES = 1 << 30
#: the default time one query may plan on a node: the library's work budget (15 min)
DEFAULT_QUERY_SECONDS = int(MAX_SECONDS)


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LDPParameterError(f"{name} must be an integer >= 1 (got {value!r})")
    return value


def _frac(value: Any, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int, Fraction)):
        raise LDPParameterError(f"{name} must be exact decimal text such as \"2\" or \"0.5\" (floats are not exact)")
    try:
        f = as_fraction(str(value), name)  # bounded text: '1e99999999' is refused, never expanded
    except LDPParameterError:
        raise LDPParameterError(f"{name} must be exact decimal text such as \"2\" or \"0.5\", at most 1e6") from None
    if f <= 0:
        raise LDPParameterError(f"{name} must be > 0")
    return f


@dataclass(frozen=True)
class DevicePolicy:
    """A maximum ε per query, the mechanisms allowed (registry names; ``None``: any registered
    one), and — when the policy comes from a device TOML — the caps the device's ledger holds."""

    max_epsilon_per_query: Fraction = Fraction(4)
    allowed_mechanisms: Optional[tuple] = None
    lifetime_cap: Optional[Fraction] = None
    period_cap: Optional[Fraction] = None
    period: Optional[str] = None
    #: the neighbouring relations a repeated (keyed) series may be charged under: ``"user"`` (any two
    #: histories of one user) by default; ``"value"`` (the papers' same-change-pattern relation) only if
    #: the device's owner lists it — a server's query cannot lower the charge on its own
    allowed_relations: tuple = ("user",)
    #: the smallest ε a query may charge (``None``: no minimum): many tiny probes are refused
    min_epsilon_per_query: Optional[Fraction] = None
    #: the most charged queries per UTC day (``None``: no limit); kept replies and refused queries do not count
    max_queries_per_day: Optional[int] = None
    #: the most memory one query may plan on this node (:func:`ldp_plugin.federated.work.query_bytes`)
    max_query_bytes: int = DEFAULT_QUERY_BYTES
    #: the most time one query may plan on this node (a timed dry run, :mod:`ldp_plugin.federated.work`)
    max_query_seconds: int = DEFAULT_QUERY_SECONDS

    #: a secure sum (:mod:`~ldp_plugin.federated.secure_device`): the fewest participants a released
    #: sum may hold (the device refuses a SecAgg+ round whose reconstruction threshold is lower) and
    #: the most bins it contributes to
    secure_sum_min_participants: int = 10
    secure_sum_max_bins: int = 4096

    def __post_init__(self) -> None:
        for name in ("max_epsilon_per_query", "min_epsilon_per_query"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, Fraction):
                object.__setattr__(self, name, _frac(v, name))
        if self.max_queries_per_day is not None:
            _count(self.max_queries_per_day, "max_queries_per_day")
        _count(self.max_query_bytes, "max_query_bytes")
        _count(self.max_query_seconds, "max_query_seconds")

    @classmethod
    def from_dict(cls, doc: dict) -> "DevicePolicy":
        known = {"max_epsilon_per_query", "allowed_mechanisms", "lifetime_cap", "period_cap", "period", "allowed_relations",
                 "min_epsilon_per_query", "max_queries_per_day", "max_query_bytes", "max_query_seconds",
                 "secure_sum_min_participants", "secure_sum_max_bins"}
        extra = sorted(set(doc) - known)
        if extra:
            raise LDPParameterError(f"unknown [policy] key(s) {extra}; allowed: {sorted(known)}")
        if "lifetime_cap" not in doc or "max_epsilon_per_query" not in doc:
            raise LDPParameterError("[policy] needs lifetime_cap and max_epsilon_per_query (exact decimal text)")
        allowed = doc.get("allowed_mechanisms")
        if allowed is not None:
            if not isinstance(allowed, list) or not allowed or not all(isinstance(a, str) and a for a in allowed):
                raise LDPParameterError("[policy] allowed_mechanisms must be a non-empty list of mechanism names")
            allowed = tuple(a.lower() for a in allowed)
        period = doc.get("period")
        pcap = doc.get("period_cap")
        if (period is None) != (pcap is None):
            raise LDPParameterError("[policy] needs both period_cap and period (or neither)")
        relations = doc.get("allowed_relations", ["user"])
        if not isinstance(relations, list) or not relations or not set(relations) <= {"user", "value"}:
            raise LDPParameterError('[policy] allowed_relations must be a non-empty list of "user" and/or "value"')
        emax = _frac(doc["max_epsilon_per_query"], "max_epsilon_per_query")
        emin = None if doc.get("min_epsilon_per_query") is None else _frac(doc["min_epsilon_per_query"], "min_epsilon_per_query")
        if emin is not None and emin > emax:
            raise LDPParameterError("[policy] min_epsilon_per_query must be at most max_epsilon_per_query")
        per_day = None if doc.get("max_queries_per_day") is None else _count(doc["max_queries_per_day"], "[policy] max_queries_per_day")
        qbytes = _count(doc.get("max_query_bytes", DEFAULT_QUERY_BYTES), "[policy] max_query_bytes")
        qsecs = _count(doc.get("max_query_seconds", DEFAULT_QUERY_SECONDS), "[policy] max_query_seconds")
        secure = {}
        for key, lo, hi in (("secure_sum_min_participants", 2, 10**6), ("secure_sum_max_bins", 1, 1 << 20)):
            if key in doc:
                v = doc[key]
                if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                    raise LDPParameterError(f"[policy] {key} must be an integer in [{lo}, {hi}]")
                secure[key] = v
        return cls(max_epsilon_per_query=emax, allowed_mechanisms=allowed,
                   lifetime_cap=_frac(doc["lifetime_cap"], "lifetime_cap"), period_cap=None if pcap is None else _frac(pcap, "period_cap"),
                   period=period, allowed_relations=tuple(relations), min_epsilon_per_query=emin, max_queries_per_day=per_day,
                   max_query_bytes=qbytes, max_query_seconds=qsecs, **secure)

    def refusal(self, mechanism_name: Optional[str], epsilon: Fraction, relation: Optional[str] = None) -> Optional[str]:
        """The reason this policy refuses a query, or ``None`` (``relation``: the charging relation a
        keyed series names in its spec)."""
        if self.allowed_mechanisms is not None and str(mechanism_name or "").lower() not in self.allowed_mechanisms:
            return "mechanism_not_allowed"
        if relation is not None and relation not in self.allowed_relations:
            return "relation_not_allowed"
        if epsilon > self.max_epsilon_per_query:
            return "epsilon_above_policy"
        if self.min_epsilon_per_query is not None and epsilon < self.min_epsilon_per_query:
            return "epsilon_below_policy"
        return None

    def daily_refusal(self, charged_today: int) -> Optional[str]:
        """``"daily_query_limit"`` once ``max_queries_per_day`` queries were charged today."""
        if self.max_queries_per_day is not None and charged_today >= self.max_queries_per_day:
            return "daily_query_limit"
        return None
