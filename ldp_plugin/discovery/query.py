"""The discovery query of a method name — one constructor shared by ``ldp heavy-hitters`` and the
Polars ``df.ldp.heavy_hitters`` adapter (so neither imports the other)."""

from __future__ import annotations

from typing import Any

from .protocol import PrefixDiscovery
from .sfp import SFP

__all__ = ["build_query"]


def build_query(method: str, **kw: Any):
    """The discovery query of ``method`` (``pem``, ``treehist``: :class:`PrefixDiscovery`; ``sfp``:
    :class:`SFP`, which takes no ``oracle``)."""
    if method == "sfp":
        kw.pop("oracle", None)
        return SFP(**kw)
    return PrefixDiscovery(method=method, **kw)
