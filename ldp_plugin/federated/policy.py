"""What a device enforces, set by its owner only (the device TOML a SuperNode's ``node_config``
names), never by a server message: the mechanisms it allows, a maximum (and optionally a minimum)
ε per query, optionally a maximum number of charged queries per UTC day, the most memory one query
may plan, and the lifetime / per-period caps of every device's budget (kept in the device's own
ledger, a :class:`ldp_plugin.Population` with one cohort per device, so each device's caps are
separate; the neighbouring relation of every charge is the one the query's mechanism declares).

Every check here reads the query, the policy and the ledger's counts — never a value — and runs
before the spend, so a refusal is the same for every device whatever it holds.

**Memory.** :func:`query_bytes` plans a query's memory from sizes alone (after the mechanism is
built from its spec, which allocates nothing of the domain's size): the reports of every device,
their sealed envelopes, and the samplers' working arrays — up to :data:`WORK_PER_REPORT_BYTE` bytes
per byte of the packed report (a unary encoding draws one 64-bit word per reported bit: 64; the
largest measured ratio over the registry at large domains is 70, THE). A query whose plan exceeds
``max_query_bytes`` is refused (``query_too_large``) before anything is spent."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

from .._errors import LDPParameterError
from ..mechanisms.reports import wire_size

__all__ = ["DevicePolicy", "query_bytes", "WORK_PER_REPORT_BYTE", "DEFAULT_QUERY_BYTES"]

#: working bytes a sampler may hold per byte of packed report (measured: at most 70, THE; 64 for the unary encodings)
WORK_PER_REPORT_BYTE = 96
#: the default memory one query may plan on a node (all its devices): 1 GiB
DEFAULT_QUERY_BYTES = 1 << 30
#: the fixed working set of any query (the mechanism, the sealed-box buffers, the reply)
_BASE_BYTES = 16 << 20


def query_bytes(mech: Any, devices: int) -> int:
    """The memory a query of ``mech`` plans for ``devices`` devices, from sizes only: each
    device's wire report (:func:`ldp_plugin.mechanisms.reports.wire_size`), kept twice (the
    reports and their envelopes), plus the samplers' working arrays
    (:data:`WORK_PER_REPORT_BYTE` per report byte), plus a fixed working set."""
    per = int(wire_size(mech, 1))
    return _BASE_BYTES + int(devices) * per * (2 + WORK_PER_REPORT_BYTE)


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LDPParameterError(f"{name} must be an integer >= 1 (got {value!r})")
    return value


def _frac(value: Any, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int, Fraction)):
        raise LDPParameterError(f"{name} must be exact decimal text such as \"2\" or \"0.5\" (floats are not exact)")
    try:
        f = Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise LDPParameterError(f"{name} must be exact decimal text such as \"2\" or \"0.5\"") from None
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
    #: the most memory one query may plan on this node (:func:`query_bytes`)
    max_query_bytes: int = DEFAULT_QUERY_BYTES

    def __post_init__(self) -> None:
        for name in ("max_epsilon_per_query", "min_epsilon_per_query"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, Fraction):
                object.__setattr__(self, name, _frac(v, name))
        if self.max_queries_per_day is not None:
            _count(self.max_queries_per_day, "max_queries_per_day")
        _count(self.max_query_bytes, "max_query_bytes")

    @classmethod
    def from_dict(cls, doc: dict) -> "DevicePolicy":
        known = {"max_epsilon_per_query", "allowed_mechanisms", "lifetime_cap", "period_cap", "period", "allowed_relations",
                 "min_epsilon_per_query", "max_queries_per_day", "max_query_bytes"}
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
        return cls(max_epsilon_per_query=emax, allowed_mechanisms=allowed,
                   lifetime_cap=_frac(doc["lifetime_cap"], "lifetime_cap"), period_cap=None if pcap is None else _frac(pcap, "period_cap"),
                   period=period, allowed_relations=tuple(relations), min_epsilon_per_query=emin, max_queries_per_day=per_day,
                   max_query_bytes=qbytes)

    def refusal(self, mechanism_name: Optional[str], epsilon: Fraction, relation: Optional[str] = None) -> Optional[str]:
        """The reason this policy refuses a query, or ``None`` (``relation``: the charging relation a
        keyed series names in its spec)."""
        if self.allowed_mechanisms is not None and (mechanism_name or "").lower() not in self.allowed_mechanisms:
            return "mechanism_not_allowed"
        if relation is not None and relation not in self.allowed_relations:
            return "relation_not_allowed"
        if epsilon > self.max_epsilon_per_query:
            return "epsilon_above_policy"
        if self.min_epsilon_per_query is not None and epsilon < self.min_epsilon_per_query:
            return "epsilon_below_policy"
        return None

    def size_refusal(self, mech: Any, devices: int) -> Optional[str]:
        """``"query_too_large"`` if the query's planned memory (:func:`query_bytes`) exceeds
        ``max_query_bytes``, else ``None`` (sizes only: asked before the spend)."""
        try:
            planned = query_bytes(mech, devices)
        except Exception:  # noqa: BLE001 - a report format that cannot be sized is not planned
            return "query_too_large"
        return "query_too_large" if planned > self.max_query_bytes else None

    def daily_refusal(self, charged_today: int) -> Optional[str]:
        """``"daily_query_limit"`` once ``max_queries_per_day`` queries were charged today."""
        if self.max_queries_per_day is not None and charged_today >= self.max_queries_per_day:
            return "daily_query_limit"
        return None
