"""The work a query plans on a node, checked before the spend: memory from sizes, time from a dry
run on inputs that are not the devices' values.

A query fixes every size that sets a node's memory and time: the report format (``d`` bits of a
unary encoding, ``m`` of a set, the buckets, grid, attribute domains and padding, all through
:func:`~ldp_plugin.mechanisms.reports.wire_size`) times the devices that answer. A device that
spent its budget and then ran out of memory or time would lose the budget and answer nothing
(a retry is refused as ``interrupted``), so :func:`refusal` asks, before the spend and in this
order:

1. **memory** (:func:`query_bytes`): each device's packed wire report, kept twice (the reports and
   their envelopes), plus the samplers' working arrays — at most :data:`WORK_PER_REPORT_BYTE` bytes
   per byte of packed report (a unary encoding draws one 64-bit word per reported bit, 64; the
   largest ratio measured over the registry at large domains is 70, THE) — plus a fixed working
   set, against the owner's ``max_query_bytes``;
2. **time**: a dry run of the whole produce step (the domain rule's fallback inputs — never a
   device's value —, the randomizer, the wire format and the envelopes) on
   ``min(devices, 16)`` devices with fresh keys, timed and scaled to every device, against the
   owner's ``max_query_seconds``. The dry run's reports are discarded; they are reports of random
   inputs under random keys, independent of every value, key and ledger.

Both read sizes, the policy and the clock — never a value — so a refusal (``query_too_large``) is
the same for every device whatever it holds.
"""

from __future__ import annotations

import os
import time
from typing import Any, Optional

import numpy as np

from ..mechanisms.reports import to_wire_each, wire_size
from .domain_rule import in_domain
from .envelope import seal

__all__ = ["query_bytes", "refusal", "WORK_PER_REPORT_BYTE", "DRY_RUN_DEVICES"]

#: working bytes a sampler may hold per byte of packed report (measured: at most 70, THE; 64 for the unary encodings)
WORK_PER_REPORT_BYTE = 96
#: the fixed working set of any query (the mechanism, the sealed-box buffers, the reply)
_BASE_BYTES = 16 << 20
#: devices in the timed dry run
DRY_RUN_DEVICES = 16


def query_bytes(mech: Any, devices: int) -> int:
    """The memory a query of ``mech`` plans for ``devices`` devices, from sizes only (module docstring)."""
    per = int(wire_size(mech, 1))
    return _BASE_BYTES + int(devices) * per * (2 + WORK_PER_REPORT_BYTE)


def _dry_run_seconds(mech: Any, k: int) -> float:
    """Seconds of the produce step on ``k`` devices holding no value (the domain rule's fallbacks)."""
    held = np.empty(k, dtype=object)  # None: outside every domain, so every input is the rule's random one
    keys = [os.urandom(32) for _ in range(k)] if mech.needs_user_keys else None
    t0 = time.perf_counter()
    reports = in_domain(mech, held).randomize(mech, user_keys=keys)
    seal(to_wire_each(mech, reports, tag=bytes(16)))
    return time.perf_counter() - t0


def refusal(mech: Any, devices: int, policy: Any) -> Optional[str]:
    """``"query_too_large"`` if the query's planned memory or time exceeds the owner's limits
    (``policy.max_query_bytes``, ``policy.max_query_seconds``), else ``None``."""
    try:
        if query_bytes(mech, devices) > policy.max_query_bytes:
            return "query_too_large"
        k = min(int(devices), DRY_RUN_DEVICES)
        if _dry_run_seconds(mech, k) * devices / k > policy.max_query_seconds:
            return "query_too_large"
    except MemoryError:
        return "query_too_large"
    return None
