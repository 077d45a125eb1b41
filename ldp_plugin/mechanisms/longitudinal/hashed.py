"""LOLOHA (see :mod:`.base` for the shared memoization, accounting and references): a
fixed per-user hash into ``g`` values, then L-GRR over ``g`` memoized per hashed value."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..._errors import LDPParameterError
from ...hashing import item_keys, seeded_hash
from ..channel import Channel
from ..local_hashing import VERIFICATION_SEEDS, olh_support_counts
from .base import LGRR, _grr_layers, _prf
from ..domain import check_user_keys as _check_keys
from ..reports import ReportField

__all__ = ["LOLOHA", "loloha_optimal_g"]


def loloha_optimal_g(epsilon_perm: float, epsilon_1: float, *, g_max: int = 1 << 12) -> int:
    """The ``g`` minimizing LOLOHA's analytic variance at ``f → 0``:
    ``(1/g)(1 − 1/g)/(p* − 1/g)²`` with the composed ``p*`` of the realized layers."""
    best, best_v = 2, math.inf
    g = 2
    while g <= g_max:
        layers = _grr_layers(g, epsilon_perm, epsilon_1)
        ps = float(layers[6])
        v = (1 / g) * (1 - 1 / g) / (ps - 1 / g) ** 2 if ps > 1 / g else math.inf
        if v < best_v:
            best, best_v = g, v
        elif g > 4 * best:
            break
        g += 1
    return best


@dataclass(frozen=True, kw_only=True)
class LOLOHA(LGRR):
    """LOLOHA: a fixed per-user hash into ``g`` values (seed from the user's key), then L-GRR over
    ``g`` memoized per *hashed* value.

    Guarantee (proof in :mod:`.lifetime`, the units being the ``g`` hashed values, conditioned on
    the public seed): one report ``ε₁``-LDP; ``T`` collections at the **user level** (any two
    histories of one user) ``min(ε₁ + (T − 1)·ε_inst, (g − 1)/g·(K·ε∞ + T·ε_inst), K·ε∞ + (K − 1)/K·T·ε_inst)``
    (``K = min(T, g)``);
    the paper's "``g·ε∞`` however often the value changes" (Arcolezi et al., EDBT 2023, its privacy analysis of LOLOHA)
    holds only at the **value level** (histories with the same change pattern of hashed values)
    and is charged only with ``relation="value"``.

    Proof: docs/proofs/longitudinal.md
    """

    name = "loloha"
    g: Any = 2
    histogram_columns = None

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """The utility-optimal ``g`` and ``g = 2`` (the fewest memoized units)."""
        return ({"g": "optimal"}, {"g": 2})

    def unit_probabilities(self, theta: Any) -> np.ndarray:
        """The ``g`` hashed values, uniform over the public seed."""
        return np.full(self.g, 1.0 / self.g)

    def _realize(self) -> None:
        g = self.g
        if g == "optimal":
            g = loloha_optimal_g(self.epsilon_perm, self.epsilon_1)
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 2 <= int(g) <= 1 << 16:
            raise LDPParameterError(f"g must be 'optimal' or an integer in [2, 2^16] (got {self.g!r})")
        object.__setattr__(self, "g", int(g))
        super()._realize()

    def _k(self) -> int:
        return self.g

    def _extra(self) -> dict:
        return {"g": self.g}

    def unit_bound(self) -> int:
        return self.g

    def unit_domain(self) -> int:
        return self.g

    def _seeds(self, keys: list) -> np.ndarray:
        return _prf(keys, self._fp(), b"hash-seed", None, 1)[:, 0]

    def _hashed(self, codes: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return seeded_hash(item_keys(codes), seeds, self.g).astype(np.int64)

    def memo_units(self, codes: Any, user_keys: Sequence[bytes]) -> np.ndarray:
        keys = _check_keys(user_keys, np.asarray(codes).size)
        return self._hashed(self._codes(codes), self._seeds(keys))

    def _collect(self, codes: np.ndarray, keys: list, source: Any) -> np.ndarray:
        return self._collect_with_seeds(codes, keys, self._seeds(keys), source)

    def _collect_with_seeds(self, codes: np.ndarray, keys: list, seeds: np.ndarray, source: Any) -> np.ndarray:
        hashed = self._hashed(codes, seeds)
        perm = self._permanent(hashed, keys)
        out = np.empty((codes.size, 2), dtype=np.uint64)
        out[:, 0] = seeds
        out[:, 1] = self._instantaneous(perm, source)
        return out

    def report_fields(self) -> tuple:
        return (ReportField("seed", "uint64"), ReportField("report", "uint32", kind="int", bound=self.g))

    def _to_columns(self, reports: Any) -> dict:
        r = np.asarray(reports, dtype=np.uint64)
        return {"seed": r[:, 0], "report": r[:, 1].astype(np.uint32)}

    def _from_columns(self, cols: dict) -> Any:
        return np.stack([np.asarray(cols["seed"], dtype=np.uint64), np.asarray(cols["report"], dtype=np.uint64)], axis=1)

    def _statistics(self, reports: Any) -> np.ndarray:
        r = np.asarray(reports, dtype=np.uint64)
        return olh_support_counts(r[:, 0], r[:, 1], self.g, item_keys(np.arange(self.d)))

    @property
    def support_rates(self) -> tuple:
        """A report supports the own item with ``p*`` and any other with ``1/g`` (a random hash)."""
        return float(self.p_star_exact), 1.0 / self.g

    # -- verification: as OLH, conditional on the seed being one of the verification seeds ------
    channel_is_client = False

    def _verification_randomize(self, codes: Any, source: Any) -> Any:
        codes = np.asarray(codes, dtype=np.int64)
        raw = np.asarray(source.random_bytes(32 * codes.size), dtype=np.uint8).reshape(codes.size, 32)
        seeds = np.asarray(VERIFICATION_SEEDS, dtype=np.uint64)[source.uniform_int(len(VERIFICATION_SEEDS), codes.size)]
        return self._collect_with_seeds(codes, [bytes(r) for r in raw], seeds, source)

    def channel(self):
        """The exact one-report channel conditional on the hash seed being one of OLH's
        verification seeds (uniformly): outputs ``(seed index, y)``; the permanent layer for a
        random key, composed with the instantaneous one (L-GRR over ``g`` of the hashed value)."""

        S, ps, qs = len(VERIFICATION_SEEDS), self.p_star_exact, self.q_star_exact
        hashed = [seeded_hash(item_keys(np.arange(self.d)), np.uint64(s), self.g) for s in VERIFICATION_SEEDS]
        rows = tuple(tuple((ps if hashed[si][x] == y else qs) / S for si in range(S) for y in range(self.g)) for x in range(self.d))
        return Channel(tuple((si, y) for si in range(S) for y in range(self.g)), rows)

    def output_index(self, reports: Any) -> np.ndarray:
        r = np.asarray(reports, dtype=np.uint64)
        index = {s: i for i, s in enumerate(VERIFICATION_SEEDS)}
        si = np.array([index[int(s)] for s in r[:, 0].tolist()], dtype=np.int64)
        return si * self.g + r[:, 1].astype(np.int64)
