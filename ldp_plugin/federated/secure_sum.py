"""The secure-sum ClientApp (needs ``pip install 'ldp-plugin[flower]'``): an installed component,
``ldp_plugin.federated.secure_sum:client_app``, that a device owner's runtime (or plain Flower)
runs on a SuperNode.

It is Flower's SecAgg+ client (``secaggplus_mod``, unchanged: this project never copies or
re-implements its cryptography) around one train handler: at SecAgg+'s "collect masked vectors"
stage the handler opens the node's devices from the owner's device TOML (``node_config``
``device-config``), reads the query from the round's fit config and the parameters SecAgg+'s
setup stage gave this node, and returns :func:`~ldp_plugin.federated.secure_device.contribute`'s
integer vector with ``num_examples = 1`` (= the derived ``max_weight``, so SecAgg+ neither rescales
nor rounds it). The mod masks it; the server only ever sees the sum.

A refusal (the device's checks, or a node without a device TOML) raises: Flower returns an error
for this node, which SecAgg+ treats as a dropout before masking — the node is not summed and
nothing was spent. Messages other than SecAgg+'s TRAIN stages are not answered.
"""

from __future__ import annotations

import logging

import numpy as np
from flwr.app import Message
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_STATE
from flwr.compat.common import recorddict_compat as compat

from .._errors import LDPInputError, LDPParameterError
from .config import DeviceConfig, device_config_path
from .device import DeviceFleet, DeviceRefusal
from .secure_device import SecureSumRefusal, contribute

__all__ = ["client_app", "QUERY_KEY", "secure_answer", "train_reply"]

log = logging.getLogger("ldp_plugin.federated.secure_sum")

#: the fit-config key that carries the secure-sum query JSON
QUERY_KEY = "secure-sum-query"

client_app = ClientApp(mods=[secaggplus_mod])


def secure_answer(query_json: str, setup: dict, node_config) -> np.ndarray:
    """This node's contribution (opens and closes its fleet), or :class:`SecureSumRefusal`."""
    try:
        cfg = DeviceConfig.load(device_config_path(node_config), node_config)
        fleet = DeviceFleet.open(cfg)
    except (LDPParameterError, LDPInputError):
        raise SecureSumRefusal("device_misconfigured") from None
    except DeviceRefusal as e:
        raise SecureSumRefusal(e.reason) from None
    try:
        return contribute(fleet, query_json, setup)
    finally:
        fleet.close()


def train_reply(content, state, node_config):
    """The reply content of one SecAgg+ "collect masked vectors" message: ``content`` the message's
    (the legacy FitIns with the query), ``state`` the node's context state (where
    ``secaggplus_mod`` stored its setup). Raises :class:`SecureSumRefusal`."""
    fitins = compat.recorddict_to_fitins(content, keep_input=True)
    query_json = fitins.config.get(QUERY_KEY)
    if RECORD_KEY_STATE not in state.config_records or not isinstance(query_json, str):
        raise SecureSumRefusal("malformed_query")  # not a SecAgg+ round of a secure-sum query
    setup = dict(state.config_records[RECORD_KEY_STATE])
    try:
        vec = secure_answer(query_json, setup, node_config)
    except SecureSumRefusal as e:
        log.error("secure sum refused: %s", e.reason)
        raise
    res = FitRes(status=Status(Code.OK, ""), parameters=ndarrays_to_parameters([vec.astype(np.float64)]), num_examples=1, metrics={})
    return compat.fitres_to_recorddict(res, keep_input=False)


@client_app.train()
def _train(msg: Message, context) -> Message:  # pragma: no cover - runs inside Flower's engine (tested through the simulation)
    return Message(train_reply(msg.content, context.state, context.node_config), reply_to=msg)
