"""The device's configuration, read only from the device's own side.

A SuperNode's owner starts it with ``--node-config 'device-config="/path/device.toml"'`` (Flower's
``node_config``, set on the command line of the SuperNode, never by the SuperLink or a ServerApp).
In Flower's simulation engine the nodes' ``node_config`` holds only ``partition-id`` /
``num-partitions``, so the simulation's owner names the TOML in the ``LDP_DEVICE_CONFIG``
environment variable of the process that runs the engine. ``{partition-id}`` (and any other
``{key}`` of ``node_config``) in the TOML's strings is replaced by the node's value, so one file
serves every simulated node. Paths are relative to the TOML's directory.

.. code-block:: toml

    [device]
    name = "edge-1"                   # the ledger's population name
    ledger = "state/ledger.sqlite"
    keystore = "state/keystore.json"
    # analyzer_key = "keys/analyzer.pub"  # seal every report to this analyzer (64 hex digits or a .pub path)

    [policy]                          # see DevicePolicy
    lifetime_cap = "8"
    max_epsilon_per_query = "2"
    allowed_mechanisms = ["oue", "krr", "loloha"]
    # period_cap = "2"; period = "day"

    [data]                            # one value per device hosted by this node
    source = "values.parquet"         # .parquet / .csv / .sqlite / .db, or "package.module:function"
    column = "value"
    # table = "readings"              # SQLite only
    # [data.args]                     # keyword arguments of a module:function source

    [strings]                         # optional: each device's string, for heavy-hitter discovery
    source = "words.csv"              # same keys as [data]; default: [data]'s values as text
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from .._boundary import read_small_file
from .._errors import LDPInputError, LDPParameterError
from ..accountant import Population
from .policy import DevicePolicy
from .sealed import public_key
from .trust import DeviceTrust

try:  # Python >= 3.11
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib

__all__ = ["DeviceConfig", "device_config_path", "ENV_DEVICE_CONFIG", "NODE_CONFIG_KEY"]

ENV_DEVICE_CONFIG = "LDP_DEVICE_CONFIG"
NODE_CONFIG_KEY = "device-config"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def device_config_path(node_config: Mapping[str, Any]) -> Path:
    """The device TOML named by the node's own ``node_config`` (or, in simulation, by the
    ``LDP_DEVICE_CONFIG`` environment variable of the engine's process)."""
    raw = node_config.get(NODE_CONFIG_KEY) if node_config is not None else None
    if raw is None:
        raw = os.environ.get(ENV_DEVICE_CONFIG)
    if not isinstance(raw, str) or not raw:
        raise LDPParameterError(f"the SuperNode has no device configuration: start it with --node-config '{NODE_CONFIG_KEY}=\"/path/device.toml\"'"
                                f" (in simulation, set {ENV_DEVICE_CONFIG})")
    return Path(raw)


def _fill(value: Any, node_config: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        for k, v in node_config.items():
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                value = value.replace("{" + str(k) + "}", str(v))
        return value
    if isinstance(value, list):
        return [_fill(v, node_config) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, node_config) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class DeviceConfig:
    name: str
    ledger: Path
    keystore: Path
    policy: DevicePolicy
    source: str
    column: Optional[str] = None
    table: Optional[str] = None
    args: Optional[dict] = None
    base: Path = Path(".")
    analyzer_key: Optional[str] = None  # the owner-pinned analyzer public key (hex): reports are sealed to it
    strings: Optional[dict] = None  # the [strings] section: heavy-hitter discovery's values
    trust: DeviceTrust = DeviceTrust()  # the [trust] section: pinned apps, answering components, member key

    @classmethod
    def load(cls, path: str | Path, node_config: Optional[Mapping[str, Any]] = None) -> "DeviceConfig":
        p = Path(path)
        text = read_small_file(p, "the device configuration")
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            raise LDPParameterError(f"the device configuration {p.name!r} is not readable TOML") from None
        doc = _fill(doc, dict(node_config or {}))
        left = sorted(set(re.findall(r"\{([A-Za-z0-9_-]+)\}", repr(doc))))
        if left:
            raise LDPParameterError(f"the device configuration uses {{{left[0]}}} but the node_config has no {left[0]!r} "
                                    f"(the SuperNode's --node-config, or `device init --node-config '{left[0]}=...'`)")
        extra = sorted(set(doc) - {"device", "policy", "data", "strings", "trust"})
        if extra:
            raise LDPParameterError(f"unknown section(s) {extra} in the device configuration; allowed: device, policy, data, strings, trust")
        strings = doc.get("strings")
        if strings is not None and (not isinstance(strings, dict) or not isinstance(strings.get("source"), str) or not strings["source"]
                                    or set(strings) - {"source", "column", "table", "args"}):
            raise LDPParameterError("[strings] needs a source (a file path or a module:function) and only column, table, args")
        dev, data = doc.get("device", {}), doc.get("data", {})
        for key in ("ledger", "keystore"):
            if not isinstance(dev.get(key), str) or not dev.get(key):
                raise LDPParameterError(f"[device] {key} must be a path")
        if not isinstance(data.get("source"), str) or not data.get("source"):
            raise LDPParameterError("[data] source must be a file path or a package.module:function entry point")
        base = p.resolve().parent
        args = data.get("args")
        if args is not None and not isinstance(args, dict):
            raise LDPParameterError("[data] args must be a table")
        akey = dev.get("analyzer_key")
        if akey is not None and (not isinstance(akey, str) or not akey):
            raise LDPParameterError("[device] analyzer_key must be 64 hex digits or the path of an analyzer.pub file")
        return cls(name=str(dev.get("name", "devices")), ledger=base / dev["ledger"], keystore=base / dev["keystore"],
                   policy=DevicePolicy.from_dict(doc.get("policy", {})), source=data["source"], column=data.get("column"),
                   table=data.get("table"), args=args, base=base, strings=strings,
                   analyzer_key=None if akey is None else bytes(public_key(akey, base)).hex(),
                   trust=DeviceTrust.from_dict(doc.get("trust"), base, ledger=base / dev["ledger"]))

    def population(self, n_devices: int):
        pol = self.policy
        return Population(name=self.name, lifetime_cap=pol.lifetime_cap, period_cap=pol.period_cap, period=pol.period, cohorts=n_devices)

    def load_strings(self) -> Optional[np.ndarray]:
        """The devices' strings from the ``[strings]`` section (``None`` if the TOML has none)."""
        if self.strings is None:
            return None
        st = self.strings
        if st.get("args") is not None and not isinstance(st["args"], dict):
            raise LDPParameterError("[strings] args must be a table")
        return dataclasses.replace(self, source=st["source"], column=st.get("column"), table=st.get("table"), args=st.get("args"),
                                   strings=None).load_values()

    def load_values(self) -> np.ndarray:
        """One value per device, read on the device (never sent)."""
        src = self.source
        if re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", src):
            mod, fn = src.split(":")
            try:
                func = getattr(importlib.import_module(mod), fn)
            except (ImportError, AttributeError):
                raise LDPParameterError(f"[data] source {src!r} is not an importable module:function") from None
            try:
                values = func(**(self.args or {}))
            except (TypeError, ValueError) as e:
                raise LDPParameterError(f"the data source {src!r} failed ({type(e).__name__}); check [data.args]") from None
        else:
            values = self._read_file(self.base / src)
        if isinstance(values, np.ndarray):
            arr = values
        else:
            arr = np.empty(len(values), dtype=object) if values and isinstance(values[0], (list, tuple, set, frozenset)) else np.asarray(values)
            if arr.dtype == object and arr.ndim == 1 and values and isinstance(values[0], (list, tuple, set, frozenset)):
                for i, v in enumerate(values):
                    arr[i] = v
        if arr.ndim != 1 or arr.shape[0] < 1:
            raise LDPInputError("the device data source must give one value per device (at least one)")
        return arr

    def _read_file(self, path: Path):
        if not path.is_file():
            raise LDPParameterError(f"the device data file {path.name!r} does not exist")
        suffix = path.suffix.lower()
        if suffix in (".sqlite", ".db", ".sqlite3"):
            if not (self.table and _IDENT.match(self.table) and self.column and _IDENT.match(self.column)):
                raise LDPParameterError("a SQLite data source needs [data] table and column (plain identifiers)")
            try:
                con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
                try:
                    rows = con.execute(f'SELECT "{self.column}" FROM "{self.table}"').fetchall()  # identifiers checked above
                finally:
                    con.close()
            except sqlite3.Error:
                raise LDPParameterError("the device's SQLite data source cannot be read (check [data] table and column)") from None
            return [r[0] for r in rows]
        import polars as pl

        try:
            frame = pl.read_parquet(path) if suffix == ".parquet" else pl.read_csv(path) if suffix == ".csv" else None
        except Exception:  # noqa: BLE001 - Polars' own errors are not shown to the user
            raise LDPParameterError(f"the device data file {path.name!r} cannot be read as {suffix[1:]}") from None
        if frame is None:
            raise LDPParameterError("[data] source must end in .parquet, .csv, .sqlite or .db, or be a module:function")
        col = self.column or frame.columns[0]
        if col not in frame.columns:
            raise LDPParameterError(f"[data] column {col!r} is not in the data file")
        s = frame[col]
        if s.null_count():
            raise LDPInputError(f"[data] column {col!r} has missing values")
        return s.to_list() if s.dtype == pl.List else s.to_numpy()
