"""Seeded bugs of the system layers: deployment components with a defect each layer must catch
(``ldp verify --self-test`` runs every layer on its bugs; a bug is caught when its layer fails).

| bug | defect | breaks | caught by |
|---|---|---|---|
| ``series-charged-once`` | a device charges a memoized series' first collection and nothing after it | the ledger under-counts repeated collections | device (exact charge; worst loss over histories) |
| ``value-dependent-refusal`` | a device refuses (``device_error``) when one of its users holds a value outside the query's domain | a refusal reveals what a user holds | device (answers compared across held values) |
| ``naive-shuffle`` | the shuffler permutes by swapping each position with any position (``n^n`` draws) | the output order is not uniform: it tells the ciphertexts' byte order | shuffler (exact output law) |
| ``loose-delta-analyzer`` | the analyzer records the batch at a δ 1000 times the one asked | the recorded central ε is below the one earned at δ | analyzer (record vs amplify at n, δ) |
| ``replay-blind-analyzer`` | the analyzer gives each envelope a fresh nonce before checking replays | a replayed report counts twice: n, and the amplification, inflated | analyzer (the batch opened vs the devices' kept envelopes) |
| ``shared-nonce-reply`` | the reply path seals every envelope of a reply with the first envelope's nonce | the collector keeps one report per reply | wire (every report accepted) |
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..._errors import LDPInputError, LDPParameterError
from ...federated.analyzer import analyze_batch
from ...federated.app import device_answer
from ...federated.batch import iter_ciphertexts, read_batch, write_batch
from ...federated.config import DeviceConfig, device_config_path
from ...federated.device import DeviceFleet, DeviceRefusal
from ...federated.envelope import NONCE_BYTES
from ...federated.sealed import open_reports, private_key, seal_reply, seal_reports
from ...federated.shuffler import Shuffler
from .runtime_bugs import RUNTIME_BUGS

__all__ = ["SYSTEM_BUGS"]


def _answer_with(fleet_class: type) -> Callable:
    """The node's reply path (:func:`~ldp_plugin.federated.app.device_answer`) with another fleet class."""

    def answer(content: Any, node_config: Any) -> dict:
        cfg = DeviceConfig.load(device_config_path(node_config), node_config)
        try:
            fleet = fleet_class.open(cfg)
        except DeviceRefusal as e:  # as the node's reply path answers it
            try:
                n = int(cfg.load_values().shape[0])
            except (LDPParameterError, LDPInputError):
                n = 1
            return {"devices": n, "reports": [], "refused": {e.reason: n}, "retry": False}
        except (LDPParameterError, LDPInputError):
            return {"devices": 1, "reports": [], "refused": {"device_misconfigured": 1}, "retry": False}
        try:
            return seal_reply(fleet.respond(str(content["query"]["json"])), cfg.analyzer_key)
        finally:
            fleet.close()

    return answer


class SeriesChargedOnce(DeviceFleet):
    """Charges a series' first collection only (the permanent report "already paid for")."""

    def _series_charge(self, query: Any, mech: Any) -> Fraction:
        full = super()._series_charge(query, mech)
        return full if full == Fraction(mech.collection_cost(1)) else Fraction(0)


class ValueDependentRefusal(DeviceFleet):
    """Refuses the whole query when a user's value is missing (a value-dependent answer)."""

    def respond(self, query_json: str) -> dict:
        if any(v is None for v in self.values):
            return {"reports": [], "refused": {"device_error": self.n_devices}, "retry": False, "devices": self.n_devices}
        return super().respond(query_json)


class NaiveShuffler(Shuffler):
    """Swaps each position with any position: ``n^n`` equally likely draws, not a multiple of ``n!``."""

    def shuffled(self, rng: Any = None) -> list:
        canonical = sorted(self._held)
        n = len(canonical)
        if n < 2:
            return canonical
        from_rng = rng.uniform_int_each(np.full(n - 1, n, dtype=np.int64)).tolist()
        a = list(range(n))
        for i, j in zip(range(n - 1, 0, -1), from_rng):
            a[i], a[j] = a[j], a[i]
        return [canonical[i] for i in a]


def loose_delta_analyze(batch: Any, *, delta: float, **kw) -> dict:
    """The analyzer, recording the batch at a δ 1000 times the one asked."""
    return analyze_batch(batch, delta=min(0.5, delta * 1000), **kw)


def replay_blind_analyze(batch: Any, *, key: Any, **kw) -> dict:
    """The analyzer, with every opened envelope given a fresh nonce before the replay check (a
    replayed report is counted again)."""
    header, body = read_batch(batch)
    sk = private_key(key)
    opened, _ = open_reports(list(iter_ciphertexts(header, body)), sk)
    fresh = [os.urandom(NONCE_BYTES) + e[NONCE_BYTES:] for e in opened]
    resealed = seal_reports(fresh, sk.public_key)
    out = Path(batch).with_suffix(".renonced")
    write_batch(out, query_json=header["query"], batch_id=header["batch_id"], ciphertexts=resealed, ciphertext_size=header["ciphertext_size"])
    return analyze_batch(out, key=key, **kw)


def shared_nonce_answer(content: Any, node_config: Any) -> dict:
    """The node's reply path, sealing every envelope with the reply's first nonce."""
    reply = device_answer(content, node_config)
    reports = reply.get("reports") or []
    if reports:
        nonce = bytes(reports[0][:NONCE_BYTES])
        reply = {**reply, "reports": [nonce + bytes(r[NONCE_BYTES:]) for r in reports]}
    return reply


#: ``(bug name, system layer, keyword arguments that plant it in the layer)``
SYSTEM_BUGS = (
    ("series-charged-once", "device", {"answer": _answer_with(SeriesChargedOnce)}),
    ("value-dependent-refusal", "device", {"answer": _answer_with(ValueDependentRefusal)}),
    ("naive-shuffle", "shuffler", {"shuffler": NaiveShuffler}),
    ("loose-delta-analyzer", "analyzer", {"analyze": loose_delta_analyze}),
    ("replay-blind-analyzer", "analyzer", {"analyze": replay_blind_analyze}),
    ("shared-nonce-reply", "wire", {"answer": shared_nonce_answer, "names": ("krr", "l-grr", "wheel")}),
    *RUNTIME_BUGS,
)
