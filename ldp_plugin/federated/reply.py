"""Validation of one node's reply, whole, before any of its reports is looked at.

A reply is ``{"devices": int, "reports": [bytes, ...] or one bytes blob (the reports of one size,
concatenated: the Flower wire), "refused": JSON text {reason: int}, "retry": bool}``. It is rejected whole — the node's error, counted by reason, never the end of
the run and never part of a count — when: it is not a mapping or lacks a field (``malformed``);
a field has the wrong type, a count is negative, not an integer, NaN or infinite
(``bad_field``); the node claims more devices, sends more reports, or reports more reports plus
refusals than its quota — the devices it registered for the query, capped by the operator
(``over_quota``); or its bytes exceed ``quota × envelope size`` (``oversize``: the maximum
message size). Refusal reasons are kept only as short identifiers (at most 32 of them).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Optional

__all__ = ["validate_reply", "NODE_ERRORS"]

NODE_ERRORS = ("malformed", "bad_field", "over_quota", "oversize", "no_reply", "flower_error", "not_registered", "unsupported_version")
_REASON = re.compile(r"^[a-z_]{1,40}$")


def _count(v: Any) -> Optional[int]:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            v = int(v)
        else:
            return None
    return v if v >= 0 else None


def validate_reply(raw: Any, *, quota: int, envelope_size: int) -> tuple[Optional[dict], Optional[str]]:
    """``(reply, None)`` or ``(None, node error reason)``."""
    if not isinstance(raw, Mapping):
        return None, "malformed"
    if set(raw) != {"devices", "reports", "refused", "retry"}:
        return None, "malformed"
    reports = raw["reports"]
    if isinstance(reports, (bytes, bytearray)):  # one blob: whole reports of the envelope size, nothing else
        if len(reports) % envelope_size:
            return None, "bad_field"
        count = len(reports) // envelope_size
        if count > quota:
            return None, "over_quota"
    else:
        if not isinstance(reports, (list, tuple)):
            return None, "bad_field"
        count = len(reports)
        if count > quota:
            return None, "over_quota"
        if not set(map(type, reports)) <= {bytes, bytearray}:  # C-level passes in the usual case
            for b in reports:
                if not isinstance(b, (bytes, bytearray)):
                    return None, "bad_field"
        if sum(map(len, reports)) > quota * envelope_size:
            return None, "oversize"
        reports = list(reports)
    devices = _count(raw["devices"])
    retry = raw["retry"]
    if devices is None or not isinstance(retry, bool):
        return None, "bad_field"
    if devices > quota:
        return None, "over_quota"
    text = raw["refused"]
    if not isinstance(text, str) or len(text) > 4096:
        return None, "bad_field"
    try:
        refused = json.loads(text, parse_constant=lambda c: float("nan"))
    except ValueError:
        return None, "bad_field"
    if not isinstance(refused, dict) or len(refused) > 32:
        return None, "bad_field"
    clean = {}
    for k, v in refused.items():
        c = _count(v)
        if not isinstance(k, str) or not _REASON.match(k) or c is None:
            return None, "bad_field"
        clean[k] = c
    if count + sum(clean.values()) > devices:
        return None, "over_quota"
    return {"devices": devices, "reports": reports, "refused": clean, "retry": retry}, None
