"""A secure-sum query (the wire both sides share) and everything derived from it: the SecAgg+
configuration, the devices' noise and the charge — computed the same way by the server (before
the round) and by each device (before it contributes), so a device never takes a server's word
for a parameter.

Two privacy options:

* ``"noise"`` — **distributed noise**: each device contributes its users' one-hot counts plus
  Skellam(μ_dev) noise per bin (:mod:`ldp_plugin.sampling.poisson`, exact); ``μ_dev = μ / t`` where
  ``μ`` is calibrated to the query's central ``(ε, δ)`` and ``t`` is the SecAgg+ reconstruction
  threshold — the fewest devices a released sum can hold — so any released sum carries at least
  Skellam(μ) (:mod:`ldp_plugin.accountant.skellam`).
* ``"local"`` — **summed local reports**: each user's contribution is its ε₀-LDP k-RR report,
  one-hot. The server learns ``Σᵢ onehot(yᵢ)``, a symmetric function of the reports, i.e. a
  function of their multiset — exactly what a shuffler releases (the reports without identities
  or order). So the released sum is a post-processing of the shuffled batch of the same reports
  and is at least as private: its central ``(ε, δ)`` is the shuffle bound of
  :func:`ldp_plugin.amplification.amplify` at the number of reports summed (at least ``t``). No
  shuffler is trusted, and each report stays ε₀-LDP even if the aggregation fails. (The argument
  holds for any family whose report is a vector summed coordinate-wise; k-RR's one-hot is the one
  this query builds.)

Every vector has ``d + 1`` entries: the ``d`` bins and the number of users the node summed (public
under the replace-one relation the accounting uses; a node hosts at most ``site_bound`` users:
1 for cross-device, a site's declared bound for cross-silo).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

from .._errors import LDPInputError, LDPParameterError
from ..accountant.budget import as_fraction
from ..accountant.skellam import TAIL_SHARE, SkellamRelease, calibrate_skellam, skellam_release, skellam_tail_bound, tail_beta
from ..exact import TWO64
from ..registry import build
from ..sampling.poisson import dyadic_rate
from .secure_config import SecureSumConfig, derive_config, share_plan

__all__ = ["SecureSumQuery", "SecureDerivation", "OPTIONS", "SECURE_QUERY_VERSION", "NOISE_MECHANISM", "planned_secure_query", "SECURE_KEYS"]

OPTIONS = ("noise", "local")
SECURE_QUERY_VERSION = 1
#: the name a device's policy (``allowed_mechanisms``) lists to allow the distributed-noise option
NOISE_MECHANISM = "secure-sum-skellam"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./-]{0,200}$")
_FIELDS = ("query_id", "option", "d", "epsilon", "delta", "nodes", "min_participants", "site_bound", "shares", "version")


def _int(v: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise LDPParameterError(f"{name} must be an integer in [{lo}, {hi}]")
    return v


@dataclass(frozen=True)
class SecureDerivation:
    """What a query implies: ``config`` (SecAgg+), ``threshold`` ``t``; for ``"noise"`` the
    device's Skellam rate ``m · T / 2**64`` (``mu_device``), its tail bound ``tau``, the failure
    budget ``beta`` and the charge at ``t`` devices; for ``"local"`` the k-RR mechanism."""

    config: SecureSumConfig
    threshold: int
    mu_device: Optional[Fraction] = None
    m: Optional[int] = None
    T: Optional[int] = None
    tau: Optional[int] = None
    beta: Optional[float] = None
    charge: Optional[SkellamRelease] = None
    mechanism: Any = None

    def noise_release(self, summed: int, delta: float) -> SkellamRelease:
        """The ``(ε, δ)`` of the noise present when ``summed`` devices were summed."""
        return skellam_release(float(summed * self.mu_device), delta, self.beta)


@dataclass(frozen=True)
class SecureSumQuery:
    """A secure-sum query (module docstring). ``epsilon`` is exact decimal text: the central ε for
    ``"noise"``, each report's ε₀ for ``"local"``; ``delta`` the central δ; ``nodes`` the SecAgg+
    nodes sampled; ``min_participants`` the fewest nodes a released sum may hold."""

    query_id: str
    option: str
    d: int
    epsilon: str
    delta: float
    nodes: int
    min_participants: int
    site_bound: int = 1
    shares: Optional[int] = None
    version: int = SECURE_QUERY_VERSION
    _derived: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.query_id, str) or not _ID.match(self.query_id):
            raise LDPParameterError("query_id must be 1-201 letters, digits, '_', '.', '/' or '-'")
        if self.option not in OPTIONS:
            raise LDPParameterError(f"option must be one of {list(OPTIONS)}")
        _int(self.d, "d", 2, 1 << 20)
        if not isinstance(self.epsilon, str):
            raise LDPParameterError("epsilon must be exact decimal text such as \"1\"")
        e = as_fraction(self.epsilon)
        if not 0 < e <= 50:
            raise LDPParameterError("epsilon must be in (0, 50]")
        if isinstance(self.delta, bool) or not isinstance(self.delta, (int, float)) or not 0 < self.delta < 1 or not math.isfinite(self.delta):
            raise LDPParameterError("delta must be in (0, 1)")
        _int(self.nodes, "nodes", 3, 100_000)
        _int(self.min_participants, "min_participants", 2, 100_000)
        _int(self.site_bound, "site_bound", 1, 1 << 24)
        if self.shares is not None:
            _int(self.shares, "shares", 3, self.nodes)
        if self.version != SECURE_QUERY_VERSION:
            raise LDPInputError(f"unsupported secure-sum query version {self.version!r}")

    @property
    def epsilon_exact(self) -> Fraction:
        return as_fraction(self.epsilon)

    def derive(self) -> SecureDerivation:
        """Everything the query implies (cached); raises :class:`LDPParameterError` /
        :class:`~ldp_plugin.federated.secure_config.SecureSumConfigError` when no exact,
        accountable configuration exists — before anything is sent or spent."""
        if self._derived is not None:
            return self._derived
        k, t = share_plan(self.nodes, self.min_participants, self.shares)
        if self.option == "local":
            mech = build("krr", d=self.d, epsilon=float(self.epsilon_exact))
            cfg = derive_config(nodes=self.nodes, entry_low=0, entry_high=self.site_bound, min_participants=self.min_participants, shares=k)
            out = SecureDerivation(config=cfg, threshold=t, mechanism=mech)
        else:
            eps = float(self.epsilon_exact)
            beta = tail_beta(self.delta, eps * 1.001 + 1e-6)
            mu_total = calibrate_skellam(eps, float(self.delta) * float(1 - TAIL_SHARE))
            m, T = dyadic_rate(Fraction(mu_total) / t)
            mu_dev = Fraction(m * T, TWO64)
            tau = skellam_tail_bound(float(mu_dev), beta, self.nodes * self.d)
            cfg = derive_config(nodes=self.nodes, entry_low=-tau, entry_high=self.site_bound + tau, min_participants=self.min_participants,
                                shares=k)
            charge = skellam_release(float(t * mu_dev), self.delta, beta)
            out = SecureDerivation(config=cfg, threshold=t, mu_device=mu_dev, m=m, T=T, tau=tau, beta=beta, charge=charge)
        object.__setattr__(self, "_derived", out)
        return out

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in _FIELDS}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def content_hash(self) -> bytes:
        return hashlib.sha256(self.to_json().encode()).digest()

    @classmethod
    def from_json(cls, text: str) -> "SecureSumQuery":
        try:
            doc = json.loads(text)
        except (TypeError, ValueError):
            raise LDPInputError("a secure-sum query must be JSON") from None
        if not isinstance(doc, dict) or set(doc) != set(_FIELDS):
            raise LDPInputError(f"a secure-sum query has exactly the fields {list(_FIELDS)}")
        if doc["version"] != SECURE_QUERY_VERSION:
            raise LDPInputError(f"unsupported secure-sum query version {doc['version']!r}")
        return cls(**doc)


#: a plan query's ``secure`` table (``mode = "secure-sum"``)
SECURE_KEYS = {"delta", "min_participants", "site_bound", "shares", "min_count"}
#: ``mechanism`` of a secure-sum plan query → option
PLAN_MECHANISMS = {"skellam": "noise", "krr": "local"}


def planned_secure_query(query_id: str, mechanism: str, epsilon: Optional[str], params: dict, secure: Any, nodes: int) -> SecureSumQuery:
    """The :class:`SecureSumQuery` of a plan query in ``mode = "secure-sum"``: ``mechanism``
    ``"skellam"`` (distributed noise; ``epsilon`` the central ε) or ``"krr"`` (summed local
    reports; ``epsilon`` each report's ε₀), ``params = {d = …}``, and the ``secure`` table
    (``delta``, ``min_participants``, optional ``site_bound``, ``shares``, ``min_count``), for
    ``nodes`` SecAgg+ nodes. Derived at once, so a plan that cannot be summed exactly is refused
    when it is read."""
    if mechanism not in PLAN_MECHANISMS:
        raise LDPParameterError(f"a secure-sum query's mechanism must be one of {sorted(PLAN_MECHANISMS)} (got {mechanism!r})")
    if not isinstance(secure, dict) or set(secure) - SECURE_KEYS or not {"delta", "min_participants"} <= set(secure):
        raise LDPParameterError(f"a secure-sum query needs a secure table with delta and min_participants (allowed keys: {sorted(SECURE_KEYS)})")
    if set(params) != {"d"}:
        raise LDPParameterError("a secure-sum query's params must be exactly {d = <bins>}")
    if epsilon is None:
        raise LDPParameterError("a secure-sum query needs an epsilon")
    mc = secure.get("min_count")
    if mc is not None and (isinstance(mc, bool) or not isinstance(mc, int) or mc < 1):
        raise LDPParameterError("secure.min_count must be a positive integer")
    q = SecureSumQuery(query_id=query_id, option=PLAN_MECHANISMS[mechanism], d=params["d"], epsilon=str(epsilon), delta=secure["delta"],
                       nodes=nodes, min_participants=secure["min_participants"], site_bound=secure.get("site_bound", 1), shares=secure.get("shares"))
    q.derive()
    return q
