"""Heavy-hitter discovery over the wire: one query per level, each answered by a data-independent
group of devices, every device charged once per collection.

The protocol is :class:`~ldp_plugin.discovery.PrefixDiscovery` (PEM, Wang et al., TDSC 2019, §IV;
TreeHist, Bassily et al., NeurIPS 2017, §3): users are split, independently of the data, into one
group per level and a held-out group (relative sizes :attr:`PrefixDiscovery.shares`); a user of
level ``ℓ`` sends one report of level ``ℓ``'s hashed frequency oracle about its string's prefix of
length ``s_ℓ``, a held-out user one report about its whole string; the server decodes the levels
and selects the finished strings with FCR-adjusted intervals from the groups that played no part
in their selection. Its privacy unit is one user: ε-LDP per user and per collection
(``max_divergence``, neighbouring = one user's string changed), because each user is in exactly
one group and sends exactly one report.

Over the wire (:class:`DiscoveryLevel`), the server sends one :class:`~ldp_plugin.federated.query.Query`
per group; its ``discovery`` field names the collection (``collection``: the base query id), the
whole protocol (``params``: the :class:`PrefixDiscovery` keyword arguments, hash seed included) and
the group (``level``); its ``spec`` must be exactly that group's oracle. The **device** computes
its own group from a keyed PRF of its secret key (the keystore) and the collection
(:func:`device_groups`: HMAC-SHA256, exact uniform by rejection over the groups' shares), so the
assignment is independent of the data and the server cannot pick it; it answers only its group's
query, and it refuses a collection it has already been charged for under another group
(``already_answered``), so a server that forges group descriptions gets at most one report per
device per collection. Every device of the group is charged the protocol's ε once
(``epsilon_per_user``), through the same ledger release as any query (kept reply on a retry).
A device's string outside the query's domain is reported as its longest in-domain prefix (a
function of its own value: no refusal depends on the data).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from ..discovery import METHODS, DiscoveryAccumulator, PrefixDiscovery
from .query import Query

__all__ = ["DiscoveryLevel", "device_groups", "collection_key", "in_domain", "discovery_params", "level_queries", "decode", "DISCOVERY_FIELDS"]

DISCOVERY_FIELDS = frozenset({"collection", "params", "level"})
# the PrefixDiscovery keyword arguments a plan (and a query) may carry; anything else is refused
_PARAMS = frozenset({"method", "epsilon", "top_k", "alphabet", "max_length", "cohorts", "hash_seed", "alpha", "selection", "confidence",
                     "step", "beam", "oracle", "k", "final_share", "max_candidates", "finish_z", "screen_z", "pool_per_level"})
_GROUP_TAG = b"ldp-plugin/federated/discovery-group/v1"


def discovery_params(method: str, epsilon: float, params: dict, query_id: str) -> dict:
    """The protocol's keyword arguments for one collection: the plan's ``params`` plus the method and
    ε; the oracles' hash seed, unless the plan fixes it, is derived from the query id (so a rerun of
    the round asks the same queries and the devices answer from their kept replies)."""
    extra = sorted(set(params) - _PARAMS)
    if extra:
        raise LDPParameterError(f"unknown discovery parameter(s) {extra}; allowed: {sorted(_PARAMS - {'method', 'epsilon'})}")
    out = {**params, "method": method, "epsilon": float(epsilon)}
    if "hash_seed" not in out:
        out["hash_seed"] = int.from_bytes(hashlib.sha256(b"ldp-discovery-seed|" + query_id.encode()).digest()[:8], "little") >> 1
    return out


def collection_key(collection: str, params: dict) -> str:
    """The identity of one discovery collection (the level excluded): what ``already_answered`` compares."""
    text = json.dumps({"collection": collection, "params": params}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def device_groups(keys: Sequence[bytes], key: str, shares: Sequence[int]) -> np.ndarray:
    """Each device's group for the collection ``key``: slot ``u`` uniform in ``[0, sum(shares))`` from
    HMAC-SHA256(device key, tag ‖ key ‖ counter) by rejection (exact: words at or above the largest
    multiple of the slot count are redrawn), mapped to its group by the shares. A function of the
    device's secret and the public collection only: independent of the data, unpredictable to the server."""
    total = int(sum(shares))
    groups = np.repeat(np.arange(len(shares)), shares)
    limit = (1 << 64) // total * total
    out = np.empty(len(keys), dtype=np.int64)
    msg = _GROUP_TAG + b"|" + key.encode()
    for i, k in enumerate(keys):
        counter = 0
        while True:
            word = int.from_bytes(hmac.new(k, msg + counter.to_bytes(4, "little"), hashlib.sha256).digest()[:8], "little")
            if word < limit:
                break
            counter += 1  # probability < total / 2^64 per draw
        out[i] = groups[word % total]
    return out


def in_domain(values: Any, alphabet: str, max_length: int) -> pl.Series:
    """Each string cut to its longest prefix of at most ``max_length`` characters of the alphabet."""
    s = pl.Series("values", [str(v) for v in values], dtype=pl.String)
    allowed = "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):X}}}" for c in sorted(set(alphabet)))
    return s.str.extract(f"^([{allowed}]*)", 1).fill_null("").str.slice(0, max_length)


@dataclass(frozen=True)
class DiscoveryLevel:
    """One group's query of a discovery collection, as a device checks it."""

    collection: str
    params: dict
    level: int
    protocol: PrefixDiscovery

    @classmethod
    def from_field(cls, field: Any) -> "DiscoveryLevel":
        """From a query's ``discovery`` field; :class:`LDPParameterError` if it is not a valid protocol."""
        if not isinstance(field, dict) or set(field) != DISCOVERY_FIELDS:
            raise LDPParameterError(f"a discovery query names exactly {sorted(DISCOVERY_FIELDS)}")
        collection, params, level = field["collection"], field["params"], field["level"]
        if not isinstance(collection, str) or not collection or len(collection) > 200:
            raise LDPParameterError("the discovery collection must be a non-empty string of at most 200 characters")
        if not isinstance(params, dict) or set(params) - _PARAMS or params.get("method") not in METHODS:
            raise LDPParameterError(f"the discovery params must name a method in {METHODS} and only protocol parameters")
        try:
            protocol = PrefixDiscovery(**params)
        except TypeError:
            raise LDPParameterError("the discovery params are not PrefixDiscovery's") from None
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level < len(protocol.shares):
            raise LDPParameterError(f"the discovery level must be an integer in [0, {len(protocol.shares)})")
        return cls(collection, dict(params), level, protocol)

    @property
    def key(self) -> str:
        return collection_key(self.collection, self.params)

    @property
    def method(self) -> str:
        return self.protocol.method

    @property
    def prefix_length(self) -> int:
        return (*self.protocol.lengths, self.protocol.max_length)[self.level]

    def check_spec(self, spec: Any) -> Optional[str]:
        """``None`` if ``spec`` is exactly this group's oracle, else the refusal reason."""
        return None if spec == self.protocol.mechanisms[self.level].spec() else "malformed_query"

    def items(self, strings: Any) -> pl.Series:
        """The devices' level items (their strings' prefixes of this level's length, as a Polars String series)."""
        codec = self.protocol.codec
        series = codec.check(in_domain(strings, codec.alphabet, codec.max_length))
        return codec.level_items(series, self.prefix_length)  # a String series: a numpy array would strip the terminator


# -- the server's side ---------------------------------------------------------------------------------
def level_queries(method: str, epsilon: str, params: dict, query_id: str) -> tuple:
    """``(protocol, [one Query per group])`` of one collection: group ``ℓ``'s query carries the oracle
    of level ``ℓ`` (the held-out group last) and the collection's description; ids ``<query_id>/g<ℓ>``."""
    kwargs = discovery_params(method, float(epsilon), params, query_id)
    try:
        protocol = PrefixDiscovery(**kwargs)
    except TypeError:
        raise LDPParameterError("the discovery params are not PrefixDiscovery's") from None
    queries = [Query.for_mechanism(f"{query_id}/g{level}", mech, discovery={"collection": query_id, "params": kwargs, "level": level})
               for level, mech in enumerate(protocol.mechanisms)]
    return protocol, queries


def decode(protocol: PrefixDiscovery, accumulators: list, min_batch: int) -> tuple:
    """``(status, result dict or None, reason)``: the discovered strings with their intervals
    (:meth:`PrefixDiscovery.discover`) once every group has reports and the collection reached
    ``min_batch`` reports; otherwise ``incomplete`` with the reason (never a result from fewer)."""
    acc = DiscoveryAccumulator(protocol)
    acc.levels = list(accumulators)
    empty = [i for i, a in enumerate(acc.levels) if a.n == 0]
    if empty:
        return "incomplete", None, f"no reports in group(s) {empty}"
    if acc.n < min_batch:
        return "incomplete", None, f"{acc.n} reports, below min_batch={min_batch}"
    try:
        return "complete", protocol.discover(acc).to_dict(), None
    except (LDPParameterError, LDPInputError) as e:  # e.g. a design too small for a level's candidates: reported, never the run's end
        return "incomplete", None, str(e)
