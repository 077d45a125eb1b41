"""Issue 6 bar: over 20 full verification runs with different seeds (`ldp verify --self-test
--seed S`), 100% of the seeded bugs are caught and 0 correct mechanisms are flagged.

Usage: python benchmarks/verify_runs.py [--runs 20] [--quick] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    summary = []
    for seed in range(args.runs):
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "ldp_plugin.cli", "verify", "--self-test", "--seed", str(seed * 1009), "--json"]
        if args.quick:
            cmd.append("--quick")
        out = subprocess.run(cmd, capture_output=True, text=True)
        res = json.loads(out.stdout)
        flagged = [f"{r['name']} {r['instance']}" for r in res["results"] if not r["passed"]]
        missed = [b["name"] for b in res["seeded_bugs"] if not b["caught"]]
        caught_by = {b["name"]: b["caught_by"] for b in res["seeded_bugs"]}
        row = {"seed": seed * 1009, "instances": len(res["results"]), "flagged_correct": flagged, "missed_bugs": missed,
               "caught_by": caught_by, "seconds": round(time.perf_counter() - t0, 1)}
        summary.append(row)
        print(json.dumps(row), flush=True)
    total = {"runs": len(summary), "correct_instances_checked": sum(r["instances"] for r in summary),
             "correct_flagged": sum(len(r["flagged_correct"]) for r in summary),
             "bugs_checked": sum(len(r["caught_by"]) for r in summary), "bugs_missed": sum(len(r["missed_bugs"]) for r in summary),
             "mean_seconds_per_run": round(sum(r["seconds"] for r in summary) / len(summary), 1)}
    print(json.dumps(total))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": summary, "total": total}, f, indent=1)


if __name__ == "__main__":
    main()
