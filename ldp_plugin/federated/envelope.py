"""The report envelope: ``nonce (16 bytes from the OS CSPRNG) || one wire report``.

The nonce is the report's id: the collector accepts each nonce once per query, so a replayed
envelope is a ``duplicate`` whatever id or framing it is resent under. Each envelope carries
exactly one report of the mechanism's wire format (:func:`~ldp_plugin.mechanisms.reports.to_wire_each`), so its length is fixed
by the query (:func:`envelope_size`) and a batch blob or a forged header count is rejected by its
length alone, before any decoding."""

from __future__ import annotations

import os
from typing import Any

from ..mechanisms.reports import wire_size

__all__ = ["NONCE_BYTES", "seal", "envelope_size"]

NONCE_BYTES = 16


def seal(blobs: list) -> list:
    """One envelope per one-report wire blob, each with a fresh CSPRNG nonce."""
    return [os.urandom(NONCE_BYTES) + bytes(b) for b in blobs]


def envelope_size(mechanism: Any, tag: bytes) -> int:
    """The exact byte length of every envelope of a query (nonce + a one-report wire blob)."""
    return NONCE_BYTES + int(wire_size(mechanism, 1, tag=tag))
