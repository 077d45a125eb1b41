"""Verification of the privacy guarantee: the exact, goodness-of-fit and black-box audit layers
(:mod:`.layers`), the code that samples (:mod:`.sampling_path`), the production path on the secure
source and both kernel backends (:mod:`.production`), the realized channel rebuilt from every
source call at its position (:mod:`.positions`), the public entry points (:mod:`.entry_points`),
the joint layer (:mod:`.joint`), the seeded-bug suite they must catch (:mod:`.seeded_bugs`), and
the record of the last verification run that ``ldp mechanisms`` shows."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from . import layers as _layers
from .layers import FAMILY_ALPHA, audit_layer, audit_sample_size, clopper_pearson, exact_layer, gof_layer, sample_outputs  # noqa: F401

__all__ = [*_layers.__all__, "self_test", "wrapper_instances", "status_path", "save_status", "load_status"]


def self_test(*, seed: int = 0, quick: bool = False) -> list[dict]:
    """Run every layer on every seeded bug: each row says whether it was caught, and by which
    layers (a bug counts as caught when at least one layer fails it)."""
    from ldp_plugin.registry import verify_instance

    from .seeded_bugs import seeded_bugs, seeded_declaration_bugs

    bugs = seeded_bugs()
    decl_bugs = seeded_declaration_bugs()
    n_bugs = len(bugs) + len(decl_bugs)
    rows = []
    for i, (name, mech, expected) in enumerate(bugs):
        instance = mech.params() if hasattr(mech, "params") else mech.spec()["params"]
        r = verify_instance(mech, name=name, instance=instance, seed=seed + 104729 * i, quick=quick, alpha=FAMILY_ALPHA / n_bugs)
        keys = (("exact", "exact"), ("sampling-path", "sampling_path"), ("goodness-of-fit", "goodness_of_fit"),
                ("rates", "rates"), ("joint", "joint"), ("audit", "audit"), ("transcript", "transcript"),
                ("production", "production"), ("positions", "positions"), ("entry-points", "entry_points"))
        caught_by = [layer for layer, key in keys if key in r and not r[key]["passed"]]
        r.update({"seeded_bug": True, "caught": bool(caught_by), "caught_by": caught_by, "expected_layers": list(expected)})
        rows.append(r)
    rows += _declaration_bug_rows(decl_bugs, seed=seed, quick=quick, alpha=FAMILY_ALPHA / n_bugs)
    return rows


def _declaration_bug_rows(decl_bugs: list, *, seed: int, quick: bool, alpha: float) -> list[dict]:
    """Bugs that only random parameter draws reveal: the declaration's canonical instances and its
    random draws (as many as ``ldp verify`` takes) go through the layers the draws get (exact,
    sampling path); the bug is caught by the random draws when a draw fails. The row shown is the first failing draw (else the
    first canonical instance), with ``canonical_passed`` saying whether the canonical instances
    alone would have missed it."""
    from ldp_plugin.registry import verify

    from .draws import DRAW_LAYERS, DRAWS_FULL, DRAWS_QUICK

    rows = []
    for j, (name, decl, expected) in enumerate(decl_bugs):
        got = verify(decl, seed=seed + 7_368_787 * (j + 1), quick=quick, alpha=alpha, layers=DRAW_LAYERS, draws=DRAWS_QUICK if quick else DRAWS_FULL)
        canonical = [r for r in got if not r.get("random_draw")]
        failed_draws = [r for r in got if r.get("random_draw") and not r["passed"]]
        r = dict(failed_draws[0] if failed_draws else canonical[0])
        caught_by = (["random-draws"] if failed_draws else []) + [
            "canonical-" + layer for layer, key in (("exact", "exact"), ("sampling-path", "sampling_path")) if any(key in c and not c[key]["passed"] for c in canonical)
        ]
        r.update({"name": name, "seeded_bug": True, "caught": bool(caught_by), "caught_by": caught_by, "expected_layers": list(expected),
                  "canonical_passed": all(c["passed"] for c in canonical), "draws_failed": len(failed_draws)})
        rows.append(r)
    return rows


def wrapper_instances() -> list:
    """Canonical instances of the wrappers that are not registry entries: pad-and-sample and the
    memoized (longitudinal) k-RR. ``ldp verify`` runs every layer on them."""
    from ldp_plugin import KRR, OUE, Memoized, SampleOne

    return [
        ("sample-one", SampleOne(mechanism=KRR(epsilon=1.0, d=4), m=2)),
        ("sample-one", SampleOne(mechanism=OUE(epsilon=2.0, d=3), m=2)),
        ("memoized-krr", Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2)),
        ("memoized-krr", Memoized(epsilon_permanent=8.0, epsilon_instantaneous=4.0, d=3, max_values=1)),
    ]


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
