"""``ldp mechanisms``: the registered mechanisms, their privacy maps and verification status."""

from __future__ import annotations

import json

from .._errors import LDPParameterError
from ._common import registry
from ..registry import verify_exact
from ..verification import load_status


def cmd_mechanisms(args) -> int:
    last = load_status()
    rows = []
    for name, decl in registry(all_kinds=True).items():
        row = decl.to_dict()
        try:
            results = verify_exact(decl)
        except LDPParameterError as exc:  # e.g. the staircase LP without SciPy installed
            row["verification"] = {"status": f"not verified here: {exc}", "layer": "exact", "instances": []}
            rows.append(row)
            continue
        status = "verified (exact, %d instances)" % len(results) if all(r.passed for r in results) else "FAILED"
        row["verification"] = {"status": status, "layer": "exact", "instances": [r.to_dict() for r in results]}
        if name in last:
            lv = last[name]
            row["verification"]["last_full_verification"] = lv
            status += "; last `ldp verify`%s: %s (%s)" % (" --quick" if lv["quick"] else "", "passed" if lv["passed"] else "FAILED", lv["time"])
            row["verification"]["status"] = status
        rows.append(row)
    if args.json:
        print(json.dumps({"mechanisms": rows}, indent=2))
    else:
        for r in rows:
            params = ", ".join(f"{k}: {v['type']} in {v['range']}" for k, v in r["parameters"].items())
            print(f"{r['name']:<10} {r['summary']}")
            print(f"{'':<10} parameters: {params}")
            print(f"{'':<10} privacy map (per user): {r['privacy_map']}; population: {r['population_map']}")
            print(f"{'':<10} {r['verification']['status']}; {r['citation']}")
    return 0 if all(not r["verification"]["status"].startswith("FAILED") for r in rows) else 1
