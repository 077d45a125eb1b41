"""A deployed device for the system layers: the owner's TOML, keystore and SQLite ledger in a
temporary directory, initialized by the owner's path (:meth:`DeviceFleet.init`) and answered
through the node's reply path (:func:`ldp_plugin.federated.app.device_answer`), exactly as a
SuperNode runs it. The values come from :func:`held_values` (a ``[data] source`` entry point), so
two devices that differ only in what their users hold can be compared answer by answer."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ...accountant import Accountant
from ...federated.app import REPLY_WIRE, _record, device_answer
from ...federated.config import NODE_CONFIG_KEY, DeviceConfig
from ...federated.device import DeviceFleet

__all__ = ["held_values", "Device", "DEVICES", "wire_payloads", "normalized", "on_the_wire"]

#: devices the fixture hosts
DEVICES = 6

_IN_DOMAIN = [0, 1, [0, 1], 0.25, (0, 1), [(0, 0.5)]]
_OUT_OF_DOMAIN = [None, "zz", [7, 7, 99, -1, 0], float("nan"), (9, 9, 9), [(5, 2.0), ("k", None)]]


def held_values(variant: str = "in", devices: int = DEVICES) -> np.ndarray:
    """``devices`` values of every input kind: ``"in"`` mostly inside every canonical domain,
    ``"out"`` outside every domain (the device's rule replaces them: the answer must not tell);
    ``"codes-in"`` / ``"codes-out"``: integer category codes, all in ``[0, 4)`` / one of them not;
    ``"broken"``: a source that fails (the owner's configuration error)."""
    if variant == "broken":  # the owner's data source fails
        raise ValueError("the data source is unavailable")
    if variant.startswith("codes-"):
        codes = np.arange(devices, dtype=np.int64) % 4
        if variant == "codes-out":
            codes[-1] = 1 << 40
        return codes
    base = _IN_DOMAIN if variant == "in" else _OUT_OF_DOMAIN
    out = np.empty(devices, dtype=object)
    for i in range(devices):
        out[i] = base[i % len(base)]
    return out


class Device:
    """One node's devices, configured by their owner in ``directory`` (policy keys as TOML
    values), answering through ``answer`` (default: the node's real reply path)."""

    def __init__(self, directory: str | Path, *, policy: dict, variant: str = "in", analyzer_key: Optional[str] = None,
                 answer: Callable = device_answer, init: bool = True):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        lines = ["[device]", 'name = "system-layer"', 'ledger = "state/ledger.sqlite"', 'keystore = "state/keys.json"']
        if analyzer_key is not None:
            lines.append(f'analyzer_key = "{analyzer_key}"')
        lines += ["", "[policy]"] + [f"{k} = {json.dumps(v)}" for k, v in policy.items()]
        lines += ["", "[data]", f'source = "{__name__}:held_values"', "[data.args]", f'variant = "{variant}"', f"devices = {DEVICES}", ""]
        self.toml = self.dir / "device.toml"
        self.toml.write_text("\n".join(lines))
        self.node_config = {NODE_CONFIG_KEY: str(self.toml)}
        self.config = DeviceConfig.load(self.toml, self.node_config)
        if init:  # the owner's explicit initialization (keystore, ledger, anchor)
            DeviceFleet.init(self.config)
        self.answer_fn = answer

    def answer(self, query_json: str) -> dict:
        """The node's answer to one query. What the reply path logs for the node's operator (a
        refusal's reason) is kept out of the verification run's output while it answers."""
        quiet = logging.NullHandler()
        log = logging.getLogger("ldp_plugin.federated")
        log.addHandler(quiet)
        try:
            return self.answer_fn({"query": {"json": query_json}}, self.node_config)
        finally:
            log.removeHandler(quiet)

    def ledger_state(self) -> tuple:
        """``(remaining budget per device, ledger rows)`` read by the owner (``None`` without a
        ledger file)."""
        if not self.config.ledger.is_file():
            return None
        acc = Accountant(self.config.ledger)
        try:
            return acc.remaining_by_cohort(), acc.history()
        finally:
            acc.close()


def on_the_wire(reply: dict) -> dict:
    """A device reply as the server reads it: the node's reply record (wire version
    :data:`~ldp_plugin.federated.app.REPLY_WIRE`: the reports as one blob, the refusals as JSON
    text), mapped field by field as :func:`~ldp_plugin.federated.app.reply_to_raw` maps it."""
    rec = _record(reply)["reply"]
    if rec["wire"] != REPLY_WIRE:
        raise LookupError("the reply record is not of the current wire version")
    return {"devices": rec["devices"], "refused": rec["refused"], "retry": rec["retry"], "reports": rec["blob"] if "blob" in rec else b""}


def wire_payloads(reply: dict) -> list:
    """The reply's envelopes as bytes (whatever container the reply path used)."""
    return [bytes(r) for r in reply.get("reports", [])]


def normalized(reply: dict) -> dict:
    """What a reply tells apart from its random reports: refusal codes and counts, the retry
    flag, the devices, how many reports and their lengths."""
    return {"refused": dict(reply.get("refused", {})), "retry": bool(reply.get("retry")), "devices": int(reply.get("devices", -1)),
            "reports": len(reply.get("reports", [])), "lengths": sorted({len(r) for r in reply.get("reports", [])})}


