"""What a device enforces, set by its owner only (the device TOML a SuperNode's ``node_config``
names), never by a server message: the mechanisms it allows, a maximum ε per query, and the
lifetime / per-period caps of every device's budget (kept in the device's own ledger, a
:class:`ldp_plugin.Population` with one cohort per device, so each device's caps are separate;
the neighbouring relation of every charge is the one the query's mechanism declares)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

from .._errors import LDPParameterError

__all__ = ["DevicePolicy"]


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
    #: a secure sum (:mod:`~ldp_plugin.federated.secure_device`): the fewest participants a released
    #: sum may hold (the device refuses a SecAgg+ round whose reconstruction threshold is lower) and
    #: the most bins it contributes to
    secure_sum_min_participants: int = 10
    secure_sum_max_bins: int = 4096

    @classmethod
    def from_dict(cls, doc: dict) -> "DevicePolicy":
        known = {"max_epsilon_per_query", "allowed_mechanisms", "lifetime_cap", "period_cap", "period", "allowed_relations",
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
        secure = {}
        for key, lo, hi in (("secure_sum_min_participants", 2, 10**6), ("secure_sum_max_bins", 1, 1 << 20)):
            if key in doc:
                v = doc[key]
                if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                    raise LDPParameterError(f"[policy] {key} must be an integer in [{lo}, {hi}]")
                secure[key] = v
        return cls(max_epsilon_per_query=_frac(doc["max_epsilon_per_query"], "max_epsilon_per_query"), allowed_mechanisms=allowed,
                   lifetime_cap=_frac(doc["lifetime_cap"], "lifetime_cap"), period_cap=None if pcap is None else _frac(pcap, "period_cap"),
                   period=period, allowed_relations=tuple(relations), **secure)

    def refusal(self, mechanism_name: Optional[str], epsilon: Fraction, relation: Optional[str] = None) -> Optional[str]:
        """The reason this policy refuses a query, or ``None`` (``relation``: the charging relation a
        keyed series names in its spec)."""
        if self.allowed_mechanisms is not None and (mechanism_name or "").lower() not in self.allowed_mechanisms:
            return "mechanism_not_allowed"
        if relation is not None and relation not in self.allowed_relations:
            return "relation_not_allowed"
        if epsilon > self.max_epsilon_per_query:
            return "epsilon_above_policy"
        return None
