"""Which production paths the sampling layer took (read by the verification's production-path
layer, :mod:`ldp_plugin.verification.production`).

The samplers call :func:`note` at the few places where a path is chosen: the secure source's byte
generator (AES-256-CTR expansion or ``os.urandom``, and the bytes each produced), a request split
across worker threads, the segment runner (how many segments, drawn by the workers themselves or
in order) and the kernel backend each batch sampler ran (``numba`` or ``numpy``). Nothing is
recorded unless a :class:`PathTrace` is active (one list check per call otherwise), and recording
never changes what is sampled.
"""

from __future__ import annotations

import threading
from collections import Counter

__all__ = ["PathTrace", "note"]

_ACTIVE: list = []
_LOCK = threading.Lock()


class PathTrace:
    """Context manager: ``with PathTrace() as t: ...`` then ``t.counts`` (event → total)."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()

    def __enter__(self) -> "PathTrace":
        with _LOCK:
            _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        with _LOCK:
            _ACTIVE.remove(self)

    def ran(self, event: str) -> bool:
        return self.counts.get(event, 0) > 0


def note(event: str, amount: int = 1) -> None:
    """Add ``amount`` to ``event`` in every active trace (from any thread)."""
    if _ACTIVE:
        with _LOCK:
            for t in _ACTIVE:
                t.counts[event] += amount
