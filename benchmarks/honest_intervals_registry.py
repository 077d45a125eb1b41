"""Coverage and MSE / reported variance of every interval the library returns.

**The registry table**: every registered name (every kind) and the wrappers, at its first
canonical instance and at one random parameter draw (``ldp_plugin.verification.draws``, seed 0), on every
data shape of its input kind (five number shapes, three category shapes: ``ldp_plugin.verification.shapes``):
``--runs`` collections of the same ``--users`` users through the real client and server
(``ldp_plugin.verification.estimators.estimator_cell``, the estimator layer's cell), and, for the pure
frequency oracles, the IBU estimate's own intervals on one shape (fewer runs: its bootstrap is slow). Per
statistic group (frequencies, marginals, pairs, key frequencies / means, the mean, ranges, quantiles) and
shape: the worst coverage of the 95% intervals over the group's statistics, and the range of MSE / mean
reported variance; a group that fails the estimator layer's tests is marked ✗ and named below the table.
Intervals labelled otherwise (``bound``, ``variance-only``) say so.

The focused cells (Square Wave, the bucketed rule, PCKV, one-bit means) are ``benchmarks/honest_intervals.py``.

Usage: python benchmarks/honest_intervals_registry.py [--runs 300] [--users 2000] [--markdown OUT.md] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from ldp_plugin.estimation import normal_quantile
from ldp_plugin.mechanisms.protocol import InputKind, SupportRates, has
from ldp_plugin.registry import KINDS, load_registry, wrapper_instances
from ldp_plugin.verification.draws import random_instances
from ldp_plugin.verification.estimators import estimator_cell, shapes_for
from ldp_plugin.verification.layers import FAMILY_ALPHA
from ldp_plugin.verification.shapes import NUMBER_SHAPES, number_shape

Z = normal_quantile(0.95)
SHAPES = list(NUMBER_SHAPES)
shape = number_shape  # the five number shapes of the estimator layer


def _group(label: str) -> str:
    """The statistic group of a claim's label."""
    for prefix, group in (("item", "frequencies"), ("attribute", "marginals"), ("pair", "pairs"), ("range", "ranges"),
                          ("quantile", "quantiles"), ("mean", "mean")):
        if label.startswith(prefix):
            return group
    return "key means" if label.endswith("mean") else "key frequencies"


def _instances() -> list:
    """``(name, instance text, mechanism)``: each registered name's first canonical instance and one
    random draw, and the wrappers."""
    out = []
    for name, decl in sorted(load_registry(kinds=KINDS).items()):
        inst = dict(decl.canonical[0])
        out.append((name, inst, decl.mechanism_class()(**inst)))
        for inst, mech in random_instances(decl, seed=0, count=1):
            out.append((name, inst, mech))
    seen = set()
    for name, mech in wrapper_instances():
        if name not in seen:
            seen.add(name)
            out.append((name, mech.params(), mech))
    return out


def _cell_text(stats: list) -> tuple:
    """``(text, passed)`` of one group in one cell: worst coverage · MSE/var range (✗: a failed test)."""
    cov = [s["coverage"] for s in stats]
    ratio = [s["mse_over_variance"] for s in stats if "mse_over_variance" in s and np.isfinite(s["mse_over_variance"])]
    ok = all(s["passed"] for s in stats)
    kinds = {s["kind"] for s in stats} - {"interval"}
    r = "" if not ratio else (f" · {min(ratio):.2f}" if max(ratio) - min(ratio) < 0.005 else f" · {min(ratio):.2f}–{max(ratio):.2f}")
    return f"{'' if ok else '✗ '}{min(cov):.2f}{r}{' (' + ', '.join(sorted(kinds)) + ')' if kinds else ''}", ok


def registry_table(runs: int, users: int, seconds: float) -> dict:
    """The registry table (module docstring): rows ``{name, instance, group, cells: {shape: text}}``."""
    rows, failures = [], []
    items = _instances()
    alpha = FAMILY_ALPHA / len(items)
    for i, (name, inst, mech) in enumerate(items):
        per_shape: dict = {}
        for j, shape in enumerate(shapes_for(mech)):
            cell = estimator_cell(mech, shape, R=runs, n=users, seed=1000 * i + j, alpha=alpha, seconds=seconds)
            for s in cell["statistics"]:
                per_shape.setdefault(_group(s["label"]), {}).setdefault(shape, []).append({**s, "R": cell["R"]})
        if has(mech, SupportRates) and mech.input_kind == InputKind.VALUE:  # IBU's own intervals, one shape (the set oracles refuse IBU)
            cell = estimator_cell(mech, "zipf", R=runs, n=users, seed=1000 * i + 99, alpha=alpha, seconds=seconds, postprocess="ibu")
            for s in cell["statistics"]:
                per_shape.setdefault("frequencies (IBU)", {}).setdefault("zipf", []).append({**s, "R": cell["R"]})
        for group, by_shape in per_shape.items():
            cells = {}
            for shape, stats in by_shape.items():
                text, ok = _cell_text(stats)
                cells[shape] = text + ("" if stats[0]["R"] == runs else f" (R={stats[0]['R']})")
                if not ok:
                    failures.append({"name": name, "instance": inst, "group": group, "shape": shape,
                                     "failed": [s["label"] for s in stats if not s["passed"]]})
            rows.append({"name": name, "instance": inst, "group": group, "cells": cells})
        print(f"{name:<24} {str(inst)[:60]:<60} done", flush=True)
    return {"rows": rows, "failures": failures}


def _markdown(table: dict, runs: int, users: int, seconds: float, machine: str) -> str:
    shapes = ["uniform", "zipf", "point-mass", "smooth", "bimodal", "spiky", "heavy-tailed", "point-masses"]
    lines = [f"# Honest intervals: coverage and MSE / reported variance of every statistic", "",
             f"`python benchmarks/honest_intervals_registry.py --runs {runs} --users {users} --seconds {seconds:g} --markdown benchmarks/honest_intervals.md` "
             f"({table['seconds']:.0f} s wall, {table['cpu_seconds']:.0f} s CPU on {machine}).", "",
             f"Each cell: {runs} collections of the same {users:,} users (fewer where an estimate is slow: R shown), real client and",
             "server; **worst coverage** of the 95% intervals over the group's statistics · **MSE / mean reported variance** (range",
             "over the statistics); ✗ = the estimator layer's tests fail (bias, stated variance, coverage not significantly",
             "below 0.93; family-wise 1e-6). Category shapes: uniform, Zipf(1.1), one point mass; number shapes: smooth Beta(2, 5),",
             "bimodal, spiky (40% at one value), heavy-tailed (Pareto), point masses. First row of a name: its first canonical",
             "instance; second: a random draw of its declared parameters.", "",
             "| name | instance | statistic | " + " | ".join(shapes) + " |", "|---|---|---|" + "---|" * len(shapes)]
    for r in table["rows"]:
        inst = ", ".join(f"{k}={v}" for k, v in r["instance"].items() if not isinstance(v, (dict, list)) and v is not None)
        lines.append(f"| {r['name']} | {inst} | {r['group']} | " + " | ".join(r["cells"].get(s, "") for s in shapes) + " |")
    lines += ["", f"**Failing** ({len(table['failures'])} cells):", ""]
    for f in table["failures"]:
        inst = ", ".join(f"{k}={v}" for k, v in f["instance"].items() if not isinstance(v, (dict, list)) and v is not None)
        lines.append(f"* {f['name']} ({inst}), {f['group']}, {f['shape']}: {', '.join(f['failed'][:6])}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--users", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=20.0, help="CPU seconds per cell before an estimator runs fewer collections")
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    a = ap.parse_args()
    machine = platform.processor() or platform.machine()
    runs = a.runs or 300
    t0, c0 = time.time(), time.process_time()
    table = registry_table(runs, a.users, a.seconds)
    table["seconds"], table["cpu_seconds"] = time.time() - t0, time.process_time() - c0
    text = _markdown(table, runs, a.users, a.seconds, machine)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as fh:
            fh.write(text)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"machine": machine, "runs": runs, "users": a.users, **table}, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
