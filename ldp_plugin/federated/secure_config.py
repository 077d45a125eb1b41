"""The SecAgg+ configuration of a secure sum, derived from the query so that the sum is exact
(no Flower import: the server derives it before the round, the device re-derives it and compares).

Flower's SecAgg+ (``SecAggPlusWorkflow`` + ``secaggplus_mod``, Flower 1.41) sums real vectors by
quantizing them; it sums integer vectors **exactly** only under conditions it does not check, and
otherwise clips, wraps or returns zeros without raising. Reading its code (``quantization.py``,
``secaggplus_mod._collect_masked_vectors``, ``SecAggPlusWorkflow.unmask_stage``), a node with
``num_examples = w`` and parameters ``x`` sends, with ``r = round(w / max_weight · Q)``::

    [r] ++ stochastic_round((clip(x · r/Q, −C, C) + C) · Q / (2C))  + masks   (mod M)

and the server, with ``n`` nodes summed, unmasks ``R = Σ r`` and each entry ``E = Σ (…)`` mod ``M``
and returns ``((E · 2C/Q − C) − (n − 1) C) · Q / R``. For integer entries ``x`` with
``|x| <= C`` this is the exact mean ``Σx / n`` up to one float rounding when:

1. ``w = max_weight`` for every node (``r = Q``, ``r/Q = 1.0`` exactly): the derived config uses
   ``max_weight = 1`` and the device sends ``num_examples = 1``;
2. ``|x| <= C`` for every entry (else :func:`numpy.clip` moves it: *clip*);
3. ``s = Q / (2C)`` is an integer, so ``(x + C) · s`` is an integer and the stochastic rounding
   (``ceil`` then subtract 1 if a uniform is below ``ceil − value = 0``) leaves it unchanged; we take
   ``C`` and ``Q`` powers of two, so ``E · 2C/Q`` (a multiplication by a power of two) is exact in
   floating point, and ``Q < 2**31`` (Flower casts the quantized values to ``int32``);
4. ``n · Q < M`` (the largest entry sum ``n · 2C · s = n · Q`` and the weight sum ``R = n · Q``
   stay below the modulus; else they wrap: *wrap*); ``M`` a power of two ``<= 2**32``;
5. the share count ``k`` is odd with ``3 <= k <= n`` (an even count makes every node fail and the
   workflow return zeros: *zero*), and the reconstruction threshold ``t`` satisfies
   ``k/2 < t < k`` (Flower needs ``t < k``; ``t > k/2`` keeps a server that tells neighbours
   different dropout lists from holding both secrets of one node).

**Recovering the integer sum.** The result is ``fl(S · fl(1/n))`` with ``S = Σx`` exact (steps
before the last are exact: integers below ``2**53`` and power-of-two scalings). Then
``fl(fl(S · fl(1/n)) · n) = S (1 + η)`` with ``|η| <= 3 · 2**-53 + O(2**-106)``, so rounding to the
nearest integer returns ``S`` whenever ``|S| < 2**50`` (error below ``3/8``): guaranteed here since
``|S| <= n · C < M <= 2**32``. :func:`exact_sum` does this and checks the distance to the integer.

**Dropouts.** A node that sent its masked vector and then dropped is still summed (its private
mask is rebuilt from ``t`` shares); a node that dropped before sending it is not (its pairwise
masks are rebuilt from ``t`` shares of its key). A sum is produced only if, for every sampled
node, at least ``t`` of its neighbours answered the unmask stage; each of them sent a masked
vector, so **a released sum has at least** ``t`` **nodes in it** — the bound the devices'
accounting relies on (:attr:`SecureSumConfig.threshold` is at least the query's minimum number
of participants).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .._errors import LDPParameterError

__all__ = ["SecureSumConfig", "SecureSumConfigError", "derive_config", "share_plan", "exact_sum", "MAX_MODULUS", "MAX_QUANTIZATION"]

#: Flower's largest supported modulus (its masks are drawn in ``[0, M)`` and summed in ``int64``)
MAX_MODULUS = 1 << 32
#: Flower casts quantized values to ``int32``: ``Q`` must stay below ``2**31``
MAX_QUANTIZATION = 1 << 30


class SecureSumConfigError(LDPParameterError):
    """A secure-sum configuration that would clip, wrap or zero the sum: refused before any round."""


def _pow2_at_least(x: int) -> int:
    return 1 << max(0, (int(x) - 1).bit_length())


def _is_pow2(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0 and x & (x - 1) == 0


@dataclass(frozen=True)
class SecureSumConfig:
    """A SecAgg+ configuration under which the sum of integer vectors with entries in
    ``[entry_low, entry_high]`` over ``nodes`` nodes is exact (see the module docstring for each
    condition); the constructor checks every condition and raises :class:`SecureSumConfigError`
    naming the parameter and its allowed range."""

    nodes: int
    shares: int
    threshold: int
    clipping_range: int
    quantization_range: int
    modulus: int
    entry_low: int
    entry_high: int
    max_weight: float = 1.0

    def __post_init__(self) -> None:
        for name in ("nodes", "shares", "threshold", "clipping_range", "quantization_range", "modulus", "entry_low", "entry_high"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SecureSumConfigError(f"{name} must be an integer")
        n, k, t, C, Q, M = self.nodes, self.shares, self.threshold, self.clipping_range, self.quantization_range, self.modulus
        if n < 3:
            raise SecureSumConfigError(f"nodes must be at least 3 for SecAgg+ (got {n}): with fewer, a node's sum partner learns its vector")
        if not (3 <= k <= n and k % 2 == 1):
            raise SecureSumConfigError(f"shares must be odd and in [3, nodes={n}] (got {k}): an even share count makes every node fail "
                                       "and Flower's workflow return zeros")
        if not k // 2 < t < k:
            raise SecureSumConfigError(f"threshold must be in [{k // 2 + 1}, {k - 1}] for shares={k} (got {t})")
        if self.max_weight != 1.0:
            raise SecureSumConfigError("max_weight must be 1 (every node sends num_examples = 1): other weights rescale and round the vectors")
        if self.entry_low > self.entry_high:
            raise SecureSumConfigError("entry_low must be at most entry_high")
        bound = max(abs(self.entry_low), abs(self.entry_high), 1)
        if not _is_pow2(C) or C < bound:
            raise SecureSumConfigError(f"clipping_range must be a power of two >= {bound}, the largest |entry| (got {C}): "
                                       "smaller clips every larger entry")
        if not _is_pow2(Q) or Q % (2 * C) or Q > MAX_QUANTIZATION:
            raise SecureSumConfigError(f"quantization_range must be a power of two, a multiple of 2 * clipping_range = {2 * C}, and at most "
                                       f"{MAX_QUANTIZATION} (got {Q}): otherwise integers are rounded stochastically or overflow int32")
        if not _is_pow2(M) or M > MAX_MODULUS:
            raise SecureSumConfigError(f"modulus must be a power of two <= 2**32 (got {M})")
        if n * Q >= M:
            raise SecureSumConfigError(f"nodes * quantization_range = {n * Q} must be below modulus = {M}: the sum would wrap")

    @property
    def dropouts_tolerated(self) -> int:
        """Nodes of one neighbourhood that may drop after sharing their keys: ``shares − threshold``."""
        return self.shares - self.threshold

    def workflow_kwargs(self) -> dict:
        """The keyword arguments of ``SecAggPlusWorkflow`` (an integer ``num_shares`` and
        ``reconstruction_threshold``: Flower then uses them as given)."""
        return {"num_shares": self.shares, "reconstruction_threshold": self.threshold, "max_weight": self.max_weight,
                "clipping_range": float(self.clipping_range), "quantization_range": self.quantization_range,
                "modulus_range": self.modulus}

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("nodes", "shares", "threshold", "clipping_range", "quantization_range", "modulus",
                                               "entry_low", "entry_high", "max_weight")}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SecureSumConfig":
        keys = {"nodes", "shares", "threshold", "clipping_range", "quantization_range", "modulus", "entry_low", "entry_high", "max_weight"}
        if not isinstance(d, Mapping) or set(d) != keys:
            raise SecureSumConfigError(f"a secure-sum config has exactly the keys {sorted(keys)}")
        return cls(**{k: (float(d[k]) if k == "max_weight" and isinstance(d[k], (int, float)) and not isinstance(d[k], bool) else d[k])
                      for k in keys})

    def matches_setup(self, setup: Mapping[str, Any]) -> bool:
        """Whether the parameters Flower's setup stage gave a node (``sample_num``, ``share_num``,
        ``threshold``, ``clipping_range``, ``target_range``, ``mod_range``, ``max_weight``) are this
        configuration's: a device contributes to nothing else."""
        want = {"sample_num": self.nodes, "share_num": self.shares, "threshold": self.threshold, "clipping_range": float(self.clipping_range),
                "target_range": self.quantization_range, "mod_range": self.modulus, "max_weight": self.max_weight}
        try:
            return all(k in setup and setup[k] == v and type(setup[k]) is not bool for k, v in want.items())
        except Exception:  # noqa: BLE001 - an unreadable setup matches nothing
            return False


def derive_config(*, nodes: int, entry_low: int, entry_high: int, min_participants: int = 0, shares: int | None = None) -> SecureSumConfig:
    """The smallest exact configuration for ``nodes`` nodes each sending integers in
    ``[entry_low, entry_high]``: ``C`` the smallest power of two ``>= max|entry|``, ``Q = 2C``,
    ``M`` the smallest power of two above ``n · Q``; ``k`` = ``shares`` (default: ``nodes`` if odd,
    else ``nodes − 1``: every node a neighbour of every other), ``t`` = the larger of
    ``floor(k/2) + 1`` and ``min_participants`` (a released sum holds at least ``t`` nodes).

    Raises :class:`SecureSumConfigError` (before anything is sent) when no exact configuration
    exists: fewer than 3 nodes, ``n · Q >= 2**32``, a minimum of participants ``>= k``, an even
    or out-of-range share count.
    """
    for name, v in (("nodes", nodes), ("entry_low", entry_low), ("entry_high", entry_high), ("min_participants", min_participants)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise SecureSumConfigError(f"{name} must be an integer")
    nodes, lo, hi = int(nodes), int(entry_low), int(entry_high)
    if nodes < 3:
        raise SecureSumConfigError(f"nodes must be at least 3 for SecAgg+ (got {nodes})")
    if lo > hi:
        raise SecureSumConfigError("entry_low must be at most entry_high")
    C = _pow2_at_least(max(abs(lo), abs(hi), 1))
    Q = 2 * C
    if Q > MAX_QUANTIZATION:
        raise SecureSumConfigError(f"entries up to {max(abs(lo), abs(hi))} need quantization_range {Q} > {MAX_QUANTIZATION} (Flower's int32)")
    M = _pow2_at_least(nodes * Q + 1)
    if M > MAX_MODULUS:
        raise SecureSumConfigError(f"nodes × quantization_range = {nodes} × {Q} = {nodes * Q} must be below 2**32, the largest modulus: "
                                   f"at most {(MAX_MODULUS - 1) // Q} nodes for entries up to {max(abs(lo), abs(hi))}")
    k, t = share_plan(nodes, min_participants, shares)
    return SecureSumConfig(nodes=nodes, shares=k, threshold=t, clipping_range=C, quantization_range=Q, modulus=M, entry_low=lo, entry_high=hi)


def share_plan(nodes: int, min_participants: int = 0, shares: int | None = None) -> tuple[int, int]:
    """``(k, t)``: the share count (``shares``, default ``nodes`` if odd else ``nodes − 1``) and the
    reconstruction threshold ``max(floor(k/2) + 1, min_participants)`` (see :func:`derive_config`);
    refuses an even or out-of-range ``k`` and a minimum of participants ``>= k``."""
    k = (nodes if nodes % 2 else nodes - 1) if shares is None else shares
    if isinstance(k, bool) or not isinstance(k, int):
        raise SecureSumConfigError("shares must be an integer")
    if not (3 <= k <= nodes and k % 2 == 1):
        raise SecureSumConfigError(f"shares must be odd and in [3, nodes={nodes}] (got {k})")
    t = max(k // 2 + 1, int(min_participants))
    if t >= k:
        raise SecureSumConfigError(f"min_participants must be below shares = {k} (got {min_participants}): SecAgg+ reconstructs a "
                                   f"node's secrets from at most {k - 1} of its neighbours")
    return k, t


def exact_sum(mean: Any, summed: int) -> np.ndarray:
    """The exact integer sum from the mean SecAgg+ returns for ``summed`` nodes (see the module
    docstring: exact when ``|sum| < 2**50``); raises if an entry is not within 1/4 of an integer,
    which an exact configuration never produces."""
    if isinstance(summed, bool) or not isinstance(summed, int) or summed < 1:
        raise SecureSumConfigError("summed must be a positive integer")
    v = np.asarray(mean, dtype=np.float64) * summed
    if not np.all(np.isfinite(v)) or np.any(np.abs(v) >= 2.0**50):
        raise SecureSumConfigError("the aggregated vector is outside the exact range (|sum| < 2**50)")
    r = np.rint(v)
    if np.any(np.abs(v - r) > 0.25):
        raise SecureSumConfigError("the aggregated vector is not an integer sum: the configuration was not exact")
    return r.astype(np.int64)

