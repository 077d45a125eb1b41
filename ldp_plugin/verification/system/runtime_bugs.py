"""Seeded bugs of the flower layer (:mod:`.flower`: the Flower apps) and the federated-state layer
(:mod:`.federated_state`: the runtime's state), one defect each, planted through the layers'
keyword arguments (``ldp verify --self-test`` runs the layer on each — a flower bug the group of
checks its defect is in; a bug is caught when the layer fails).

| bug | defect | breaks | caught by |
|---|---|---|---|
| ``uncapped-registration`` | the ServerApp takes each node's registered device count as its quota (``max_devices_per_node`` ignored) | a node claiming a million devices floods the round with its own reports | flower (accepted reports = the honest devices', estimate = the library's on them) |
| ``echoing-client-app`` | the ClientApp refuses a failure under the failure's text instead of a fixed reason | a refusal carries text about the device (paths, values) to the server | flower (fixed refusals to hostile server messages; node errors by reason) |
| ``unshuffled-batch`` | the shuffler app forwards its batch without a random permutation (every swap drawn as "stay") | the batch order is a function of the ciphertexts alone: no shuffle | flower (the batch vs the Shuffler's permutation under the same draws) |
| ``first-word-replay-guard`` | the replay guard's numpy twin compares the nonces' first 64-bit word only | a forged nonce sharing a first word drops an honest report (a server can censor chosen reports) | federated-state (answers vs a set of nonces) |
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from flwr.app import Message
from flwr.clientapp import ClientApp

from ...federated.app import _record, run_plan
from ...federated.config import DeviceConfig, device_config_path
from ...federated.device import DeviceFleet
from ...federated.nonces import NonceSet
from ...federated.sealed import seal_reply
from ...federated.shuffler_app import run_shuffled_plan
from ...sampling import RandomSource

__all__ = ["RUNTIME_BUGS"]


def uncapped_run_plan(grid: Any, plan: Any, *, run_id: int = 0) -> list:
    """The collecting ServerApp with no cap on a node's registered devices."""
    return run_plan(grid, dataclasses.replace(plan, max_devices_per_node=1 << 40), run_id=run_id)


echoing_client_app = ClientApp()


@echoing_client_app.query()
def _echoing(msg: Message, context: Any) -> Message:
    """The node's reply path, except that a failure is refused under its own text."""
    try:
        cfg = DeviceConfig.load(device_config_path(context.node_config), context.node_config)
        fleet = DeviceFleet.open(cfg)
    except Exception as e:  # noqa: BLE001 - the defect: the failure's text is the refusal
        return Message(content=_record({"devices": 1, "reports": [], "refused": {str(e): 1}, "retry": False}), reply_to=msg)
    try:
        if "query" in msg.content:
            reply = seal_reply(fleet.respond(str(msg.content["query"]["json"])), cfg.analyzer_key)
        else:
            reply = {"devices": fleet.n_devices, "reports": [], "refused": {}, "retry": False}
    except Exception as e:  # noqa: BLE001 - the defect
        reply = {"devices": fleet.n_devices, "reports": [], "refused": {f"device_error {e!r}": fleet.n_devices}, "retry": False}
    finally:
        fleet.close()
    return Message(content=_record(reply), reply_to=msg)


class _Stay(RandomSource):
    """Every Fisher–Yates draw is ``j = i`` (no swap): the identity permutation."""

    def random_bytes(self, n):
        return bytes(n)

    def uniform_int_each(self, bounds):
        return np.asarray(bounds, dtype=np.int64) - 1


def unshuffled_plan(grid: Any, plan: Any, *, rng: Any = None, run_id: int = 0) -> list:
    """The shuffler ServerApp, forwarding each batch in its canonical (byte-sorted) order."""
    return run_shuffled_plan(grid, plan, rng=_Stay(), run_id=run_id)


class FirstWordNonceSet(NonceSet):
    """The replay guard whose numpy twin takes two nonces with the same first word for one."""

    def _admit_sorted(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        return super()._admit_sorted(k1, np.zeros_like(k2))


#: ``(bug name, system layer, keyword arguments that plant it in the layer)``
RUNTIME_BUGS = (
    ("uncapped-registration", "flower", {"run_plan_fn": uncapped_run_plan, "only": "collect"}),
    ("echoing-client-app", "flower", {"app": echoing_client_app, "only": "collect"}),
    ("unshuffled-batch", "flower", {"shuffled_fn": unshuffled_plan, "only": "shuffle"}),
    ("first-word-replay-guard", "federated-state", {"nonce_set": FirstWordNonceSet}),
)
