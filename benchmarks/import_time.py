"""Start-up cost: CPU time of ``import ldp_plugin`` against ``import opendp.prelude``, each in a fresh
process, interleaved in the same run (the machine is shared: read the ratios, measured side by side).

Rows (each the CPU time, ``time.process_time``, of the statements only — the interpreter's own
start-up is the same for every row and not counted):

* ``import opendp.prelude`` — the reference;
* ``import ldp_plugin`` — the face (bar: at most 1.3 x the reference);
* ``import ldp_plugin`` + a first measurement (``make_krr``) — what a script that uses the library pays;
* ``import ldp_plugin.cli`` + the parser of one command — what every ``ldp`` command pays before it runs.

Each row also lists the modules of the library it loaded.

Usage: python benchmarks/import_time.py [--rounds 15] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

ROWS = {
    "import opendp.prelude": "import opendp.prelude",
    "import ldp_plugin": "import ldp_plugin",
    "import ldp_plugin; first make_krr": "import ldp_plugin as ldp\nldp.enable_ldp_features()\nldp.make_krr(epsilon=1.0, d=4)",
    "ldp CLI start-up (ldp mechanisms parser)": "from ldp_plugin import cli\ncli.build_parser('mechanisms')",
}
REFERENCE = "import opendp.prelude"
BAR = 1.3

CHILD = """
import sys, time, json
t0 = time.process_time()
{stmt}
cpu = time.process_time() - t0
mods = [m for m in sys.modules if m == "ldp_plugin" or m.startswith("ldp_plugin.")]
print(json.dumps({{"cpu": cpu, "modules": len(mods),
                  "cli_or_federated": sorted(m for m in mods if m.startswith(("ldp_plugin.cli", "ldp_plugin.federated")))}}))
"""


def run_once(stmt: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD.format(stmt=stmt)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="fresh processes per row (interleaved)")
    ap.add_argument("--json", default=None, help="also write the result as JSON")
    args = ap.parse_args(argv)
    for stmt in ROWS.values():  # warm the byte-code caches, so every row reads compiled modules
        run_once(stmt)
    samples = {name: [] for name in ROWS}
    last = {}
    load_start = os.getloadavg()
    for _ in range(args.rounds):
        for name, stmt in ROWS.items():
            got = run_once(stmt)
            samples[name].append(got["cpu"])
            last[name] = got
    load_end = os.getloadavg()
    ref_min, ref_med = min(samples[REFERENCE]), statistics.median(samples[REFERENCE])
    rows = []
    for name in ROWS:
        lo, med = min(samples[name]), statistics.median(samples[name])
        rows.append({"row": name, "cpu_min_s": lo, "cpu_median_s": med, "ratio_min": lo / ref_min, "ratio_median": med / ref_med,
                     "ldp_modules": last[name]["modules"], "cli_or_federated": last[name]["cli_or_federated"]})
    meta = {"python": platform.python_version(), "machine": platform.machine(), "processor": platform.processor() or "?",
            "cpus": os.cpu_count(), "rounds": args.rounds, "loadavg_start": load_start[0], "loadavg_end": load_end[0],
            "command": f"python benchmarks/import_time.py --rounds {args.rounds}"}
    print(f"{meta['cpus']} cpus, Python {meta['python']}, {args.rounds} fresh processes per row (interleaved), "
          f"load average {meta['loadavg_start']:.1f} at start, {meta['loadavg_end']:.1f} at end")
    print(f"| row | CPU min (ms) | CPU median (ms) | x reference (min) | x reference (median) | library modules loaded |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['row']} | {r['cpu_min_s'] * 1e3:.0f} | {r['cpu_median_s'] * 1e3:.0f} | {r['ratio_min']:.2f} | "
              f"{r['ratio_median']:.2f} | {r['ldp_modules']}{' (CLI/federated: ' + str(len(r['cli_or_federated'])) + ')' if r['cli_or_federated'] else ''} |")
    face = next(r for r in rows if r["row"] == "import ldp_plugin")
    verdict = "met" if max(face["ratio_min"], face["ratio_median"]) <= BAR else "MISSED"
    print(f"import ldp_plugin / import opendp.prelude: {face['ratio_median']:.2f} (median), {face['ratio_min']:.2f} (min); bar {BAR}: {verdict}")
    result = {"meta": meta, "rows": rows, "bar": BAR, "verdict": verdict}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
