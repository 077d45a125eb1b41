"""The discovery query of a method name — one constructor shared by ``ldp heavy-hitters`` and the
Polars ``df.ldp.heavy_hitters`` adapter (so neither imports the other)."""

from __future__ import annotations

import dataclasses
from typing import Any

from .._errors import LDPArgumentError
from .protocol import PrefixDiscovery
from .sfp import SFP

__all__ = ["build_query"]


def build_query(method: str, **kw: Any):
    """The discovery query of ``method`` (``pem``, ``treehist``: :class:`PrefixDiscovery`; ``sfp``:
    :class:`SFP`, which takes no ``oracle``). An option the query does not take (a misspelt
    keyword) is an :class:`~ldp_plugin.LDPArgumentError` naming what it takes, never a bare
    ``TypeError``."""
    if method == "sfp":
        kw.pop("oracle", None)
    cls = SFP if method == "sfp" else PrefixDiscovery
    takes = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "method"]
    unknown = sorted(k for k in kw if k not in takes)
    if unknown:
        raise LDPArgumentError(f"the {method} discovery has no option(s) {unknown}; it takes {', '.join(takes)}")
    return SFP(**kw) if method == "sfp" else PrefixDiscovery(method=method, **kw)
