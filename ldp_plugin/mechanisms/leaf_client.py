"""The client shared by the tree mechanisms over a fine grid of ``buckets`` leaves on
``[lower, upper]`` (:class:`~ldp_plugin.mechanisms.hierarchy.HierarchicalHistogram`,
:class:`~ldp_plugin.mechanisms.haar.HaarHRR`): a number's leaf, and the one client signature
around the family's own ``_randomize_codes(leaves, source)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import LDPInputError
from ..sampling import RNGLike, as_source


class LeafClient:
    """Mixin: ``encode`` (numbers → leaves) and ``randomize`` / ``randomize_encoded`` /
    ``randomize_one``; the class supplies ``lower``, ``upper``, ``buckets`` and
    ``_randomize_codes``, and inherits ``_check_client_arguments`` from the mechanism base."""

    def encode(self, values: Any) -> np.ndarray:
        """Each number's leaf in ``[0, buckets)`` (errors give the position, never the value)."""
        x = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values, dtype=np.float64).ravel()
        bad = ~np.isfinite(x) | (x < self.lower) | (x > self.upper)
        if bad.any():
            raise LDPInputError(f"{int(bad.sum())} value(s) are missing or outside [lower, upper] = [{self.lower!r}, {self.upper!r}] "
                                f"(first at position {int(np.flatnonzero(bad)[0])}); clip or drop them before randomizing")
        return np.clip(np.floor((x - self.lower) / (self.upper - self.lower) * self.buckets).astype(np.int64), 0, self.buckets - 1)

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None) -> dict:
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        return self._randomize_codes(self.encode(values), as_source(rng))

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> dict:
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        k = np.asarray(codes, dtype=np.int64).ravel()
        if k.size and (k.min() < 0 or k.max() >= self.buckets):
            raise LDPInputError(f"leaves must be in [0, {self.buckets})")
        return self._randomize_codes(k, as_source(rng))

    def randomize_one(self, value: Any, *, rng: RNGLike = None, user_key: Any = None) -> dict:
        self._check_client_arguments(user_keys=None if user_key is None else [user_key])
        return self.randomize(np.array([value], dtype=np.float64), rng=rng)
