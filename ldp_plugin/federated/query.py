"""A federated query: what the server asks every device, as versioned, hashable JSON."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

from .._errors import LDPInputError, LDPParameterError
from ..accountant import as_fraction
from ..exact import charge_up
from ..registry import from_spec

__all__ = ["QUERY_VERSION", "Query"]

QUERY_VERSION = 1
COHORT_POLICIES = ("none", "random")
_FIELDS = frozenset({"version", "query_id", "spec", "epsilon", "cohort_policy", "period", "min_batch", "discovery"})


@dataclass(frozen=True)
class Query:
    """``query_id``, the mechanism ``spec`` (from the registry), the ε charged per device, the
    cohort policy, an optional budget ``period`` and the minimum batch the collector needs before
    it releases an estimate. :attr:`content_hash` (16 bytes) is carried by every report."""

    query_id: str
    spec: dict
    epsilon: str  # decimal text naming the mechanism's float ε (charged as that float's exact value)
    cohort_policy: str = "none"
    period: Optional[str] = None
    min_batch: int = 1
    version: int = QUERY_VERSION
    #: one group's query of a heavy-hitter discovery collection (``collection``, ``params``, ``level``;
    #: :mod:`ldp_plugin.federated.discovery`), or ``None``
    discovery: Optional[dict] = None
    _mechanism: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.query_id, str) or not self.query_id or len(self.query_id) > 200:
            raise LDPParameterError("query_id must be a non-empty string of at most 200 characters")
        if self.cohort_policy not in COHORT_POLICIES:
            raise LDPParameterError(f"cohort_policy must be one of {COHORT_POLICIES} (got {self.cohort_policy!r})")
        if isinstance(self.min_batch, bool) or not isinstance(self.min_batch, int) or self.min_batch < 1:
            raise LDPParameterError(f"min_batch must be an integer >= 1 (got {self.min_batch!r})")
        try:
            eps = as_fraction(str(self.epsilon), "epsilon")  # bounded text: a hostile '1e99999999' is refused, never expanded
        except LDPParameterError:
            raise LDPParameterError("epsilon must be exact decimal text in (0, 1e6]") from None
        if eps <= 0:
            raise LDPParameterError("epsilon must be > 0")
        if self.discovery is not None and not isinstance(self.discovery, dict):
            raise LDPParameterError("discovery must be an object (collection, params, level)")

    @classmethod
    def for_mechanism(cls, query_id: str, mechanism: Any, **kw) -> "Query":
        return cls(query_id=query_id, spec=mechanism.spec(), epsilon=repr(float(mechanism.epsilon)), **kw)

    @property
    def epsilon_exact(self) -> Fraction:
        """The exact binary value of the float the text names — the ε the mechanism is built with
        and realizes against (never the decimal text's value, which can lie below it); equal to
        :func:`ldp_plugin.mechanisms.charge.report_charge` of :meth:`mechanism`, which a device charges."""
        return charge_up(float(Fraction(str(self.epsilon))))

    def mechanism(self):
        """The mechanism, rebuilt from the spec by the registry (only registered constructors)."""
        if self._mechanism is None:
            mech = from_spec(self.spec)
            if charge_up(mech.epsilon) != self.epsilon_exact:
                raise LDPInputError("the query's epsilon differs from its mechanism's epsilon")
            object.__setattr__(self, "_mechanism", mech)
        return self._mechanism

    def to_dict(self) -> dict:
        out = {"version": self.version, "query_id": self.query_id, "spec": self.spec, "epsilon": self.epsilon,
               "cohort_policy": self.cohort_policy, "period": self.period, "min_batch": self.min_batch}
        if self.discovery is not None:  # absent otherwise: the content hash of every other query is unchanged
            out["discovery"] = self.discovery
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def content_hash(self) -> bytes:
        """16 bytes of SHA-256 over the canonical JSON: the tag every report of this query carries."""
        return hashlib.sha256(self.to_json().encode()).digest()[:16]

    @classmethod
    def from_json(cls, text: str) -> "Query":
        try:
            doc = json.loads(text)
        except (TypeError, ValueError):
            raise LDPInputError("the query is not valid JSON") from None
        if not isinstance(doc, dict) or doc.get("version") != QUERY_VERSION:
            raise LDPInputError(f"unsupported query version {doc.get('version') if isinstance(doc, dict) else None!r} (this device speaks {QUERY_VERSION})")
        extra = sorted(set(doc) - _FIELDS)
        if extra:  # a query carries no policy, path, cap or seed: anything else is refused, not ignored
            raise LDPParameterError(f"the query has unknown field(s) {extra[:5]}")
        if not isinstance(doc.get("spec"), dict) or not isinstance(doc.get("epsilon"), str):
            raise LDPParameterError("the query's spec must be an object and its epsilon exact decimal text")
        try:
            return cls(query_id=doc["query_id"], spec=doc["spec"], epsilon=doc["epsilon"], cohort_policy=doc.get("cohort_policy", "none"),
                       period=doc.get("period"), min_batch=doc.get("min_batch", 1), version=doc["version"],
                       discovery=doc.get("discovery"))
        except KeyError as e:
            raise LDPInputError(f"the query lacks {e.args[0]!r}") from None
