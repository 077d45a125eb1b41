"""Verification of the privacy guarantee: the exact, goodness-of-fit and black-box audit layers
(:mod:`.layers`), the code that samples (:mod:`.sampling_path`), the production path on the secure
source and both kernel backends (:mod:`.production`), the realized channel rebuilt from every
source call at its position (:mod:`.positions`), the public entry points (:mod:`.entry_points`),
the joint layer (:mod:`.joint`), the seeded-bug suite they must catch (:mod:`.seeded_bugs`), and
the record of the last verification run that ``ldp mechanisms`` shows. The registry drives these
layers (``ldp_plugin.registry``: ``verify``, ``verify_instance``, and the self-test over the seeded
bugs, ``self_test`` / ``wrapper_instances``); nothing here imports the registry."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from . import layers as _layers
from .layers import FAMILY_ALPHA, audit_layer, audit_sample_size, clopper_pearson, exact_layer, gof_layer, sample_outputs  # noqa: F401

__all__ = [*_layers.__all__, "status_path", "save_status", "load_status"]


def status_path() -> Path:
    """Where ``ldp verify`` records its last run (``$LDP_PLUGIN_STATE`` or ``~/.cache/ldp-plugin``)."""
    base = os.environ.get("LDP_PLUGIN_STATE") or os.path.join(os.path.expanduser("~"), ".cache", "ldp-plugin")
    return Path(base) / "verification.json"


def save_status(rows: list[dict], *, quick: bool, seed: int) -> Optional[Path]:
    path = status_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        old = load_status()
        for r in rows:
            old[r["name"]] = {
                "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "quick": quick,
                "seed": seed,
                "passed": all(x["passed"] for x in rows if x["name"] == r["name"]),
                "instances": sum(1 for x in rows if x["name"] == r["name"]),
            }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(old, indent=1))
        os.replace(tmp, path)
        return path
    except OSError:  # a read-only home: the run itself is still reported
        return None


def load_status() -> dict:
    try:
        return json.loads(status_path().read_text())
    except (OSError, ValueError):
        return {}
