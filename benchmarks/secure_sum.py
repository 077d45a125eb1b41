"""Secure sum: accuracy side by side on the same data and (ε, δ), and the cost of a SecAgg+ round.

``accuracy``: n users with Zipf(1.1) values over d bins, one release at central (ε, δ):
local OUE and k-RR (ε-LDP, no trust), k-RR shuffled (ε₀ chosen so the shuffle bound gives ε at n),
summed local reports (the same ε₀ k-RR reports summed by the secure sum; the code path of
:func:`ldp_plugin.federated.secure_release.release_sum`), distributed noise (Skellam, the
:class:`~ldp_plugin.federated.secure_query.SecureSumQuery` derivation: cross-silo, 100 sites of
n/100 users with min_participants 90; cross-device, n devices with min_participants 0.9 n), and
OpenDP's own central histogram (its discrete Gaussian on the exact counts, replace-one ℓ₂
sensitivity √2, zCDP → (ε, δ) by OpenDP). MSE of the frequencies against the data's own
histogram, and the coverage of the 95% intervals, over ``--reps`` repetitions (seeded sources:
reproducible, not for releases). The devices' Skellam noise is drawn per site exactly; for the
cross-device row the n devices' noises are drawn as one Skellam(Σμ) per bin — the same law
exactly (Skellam is closed under sums).

``cost``: one round of 100 simulated SuperNodes (one device each) at d = 1024 through ``flwr
run`` on a simulation SuperLink: the secure sum (SecAgg+) against a plain OUE round; wall time of
the run and bytes per node (every message a node receives and sends, measured by a mod around
the ClientApp: array bytes + config values).

Usage: python benchmarks/secure_sum.py accuracy [--n 100000 --d 64 --reps 20]
       python benchmarks/secure_sum.py cost [--nodes 100 --d 1024] [--part both|secure|plain] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np
import opendp.prelude as dp

from ldp_plugin.amplification import amplify
from ldp_plugin.federated import cli as fcli
from ldp_plugin.federated.secure_simulate import run_secure_simulation, secure_device_toml, secure_plan_toml
from ldp_plugin.federated.secure_query import SecureSumQuery
from ldp_plugin.federated.secure_release import release_sum
from ldp_plugin.federated.synthetic import zipf_values
from ldp_plugin.registry import build
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.sampling.poisson import dyadic_rate, skellam_dyadic

Z = NormalDist().inv_cdf(0.975)


def _machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def shuffle_eps0(d: int, n: int, eps: float, delta: float) -> float:
    """The largest ε₀ (to 0.01) whose k-RR reports, shuffled in a batch of n, are (eps, delta)-DP."""
    lo, hi = eps, 12.0
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        if amplify(build("krr", d=d, epsilon=mid), n, delta)["epsilon"] <= eps:
            lo = mid
        else:
            hi = mid
    return lo


def opendp_central(d: int, eps: float, delta: float):
    """OpenDP's discrete Gaussian on a count vector, scale calibrated (to 0.1%) by OpenDP's own map."""
    dp.enable_features("contrib")  # the benchmark's own process: OpenDP's reference histogram

    def make(scale):
        m = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=float), scale)
        return m, dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(m), delta)

    lo, hi = 0.1, 1000.0
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        if make(mid)[1].map(math.sqrt(2))[0] <= eps:
            hi = mid
        else:
            lo = mid
    return make(hi)[0], hi


def _score(est, lo, hi, truth) -> tuple:
    est, lo, hi = (np.asarray(x, dtype=float) for x in (est, lo, hi))
    return float(np.mean((est - truth) ** 2)), float(np.mean((lo <= truth) & (truth <= hi)))


def accuracy(n: int, d: int, eps: float, delta: float, reps: int, seed: int) -> dict:
    codes = zipf_values(n, d, seed)
    counts = np.bincount(codes, minlength=d)
    truth = counts / n
    eps0 = shuffle_eps0(d, n, eps, delta)
    oue, krr, krr0 = build("oue", d=d, epsilon=eps), build("krr", d=d, epsilon=eps), build("krr", d=d, epsilon=eps0)
    local_q = SecureSumQuery(query_id="bench/local", option="local", d=d, epsilon=f"{eps0:.2f}", delta=delta, nodes=100, min_participants=90,
                             site_bound=n // 100)
    silo_q = SecureSumQuery(query_id="bench/silo", option="noise", d=d, epsilon=str(eps), delta=delta, nodes=100, min_participants=90,
                            site_bound=n // 100)
    dev_q = SecureSumQuery(query_id="bench/dev", option="noise", d=d, epsilon=str(eps), delta=delta, nodes=n, min_participants=int(0.9 * n))
    meas, scale = opendp_central(d, eps, delta)
    rows: dict = {k: [] for k in ("local OUE", "local k-RR", "shuffled k-RR", "summed local reports (k-RR)", "distributed noise, 100 sites",
                                  "distributed noise, cross-device", "OpenDP central (discrete Gaussian)")}
    per_site = np.array_split(codes, 100)
    t_silo = silo_q.derive()
    t_dev = dev_q.derive()
    for r in range(reps):
        src = SeededRandomSource(seed, stream=r)
        for name, mech in (("local OUE", oue), ("local k-RR", krr), ("shuffled k-RR", krr0)):
            acc = mech.accumulator()
            acc.add(mech.randomize_encoded(codes, rng=src))
            e = mech.estimate_from(acc)
            rows[name].append(_score(e.estimate, e.ci_lower, e.ci_upper, truth))
        y = np.asarray(krr0.randomize_encoded(codes, rng=src))
        row = release_sum(local_q, np.append(np.bincount(y, minlength=d), n), range(100))
        rows["summed local reports (k-RR)"].append(_score(*[[e[k] for e in row["estimate"]] for k in ("estimate", "ci_lower", "ci_upper")], truth))
        total = np.append(sum(np.bincount(s, minlength=d) + skellam_dyadic(src, t_silo.m, t_silo.T, d) for s in per_site), n)
        row = release_sum(silo_q, total, range(100))
        rows["distributed noise, 100 sites"].append(_score(*[[e[k] for e in row["estimate"]] for k in ("estimate", "ci_lower", "ci_upper")], truth))
        mu_sum = n * t_dev.mu_device  # n devices' Skellam(mu_dev) sum to Skellam(n mu_dev) exactly
        m, T = dyadic_rate(mu_sum)
        total = np.append(counts + skellam_dyadic(src, m, T, d), n)
        row = release_sum(dev_q, total, range(n))
        rows["distributed noise, cross-device"].append(_score(*[[e[k] for e in row["estimate"]] for k in ("estimate", "ci_lower", "ci_upper")], truth))
        noisy = np.asarray(meas(counts.tolist()), dtype=float) / n
        rows["OpenDP central (discrete Gaussian)"].append(_score(noisy, noisy - Z * scale / n, noisy + Z * scale / n, truth))
    central = float(np.mean([m for m, _ in rows["OpenDP central (discrete Gaussian)"]]))
    table = []
    for name, vals in rows.items():
        mse = float(np.mean([m for m, _ in vals]))
        table.append({"method": name, "mse": mse, "coverage": float(np.mean([c for _, c in vals])), "mse_vs_central": mse / central})
    return {"n": n, "d": d, "epsilon": eps, "delta": delta, "reps": reps, "eps0_shuffled": eps0, "opendp_scale": scale,
            "skellam_mu_silo": float(t_silo.mu_device) * 100, "skellam_mu_charged_silo": t_silo.charge.mu, "table": table}


#: a ClientApp module shipped in the benchmark's app bundle: the given handler behind a mod that
#: appends, per message, the bytes received and sent to $LDP_BENCH_BYTES/<pid>.jsonl
BYTES_APP = '''
import json, os
from flwr.clientapp import ClientApp


def _size(content):
    total = 0
    for rec in content.array_records.values():
        total += sum(len(a.data) for a in rec.values())
    for rec in content.config_records.values():
        for k, v in rec.items():
            vals = v if isinstance(v, list) else [v]
            total += len(k) + sum(len(x) if isinstance(x, (bytes, str)) else 8 for x in vals)
    return total


def _bytes(msg, ctxt, call_next):
    out = call_next(msg, ctxt)
    path = os.path.join(os.environ["LDP_BENCH_BYTES"], f"{ctxt.node_config.get('partition-id')}.jsonl")
    with open(path, "a") as f:
        f.write(json.dumps({"in": _size(msg.content), "out": _size(out.content) if out.has_content() else 0}) + "\\n")
    return out
'''


def _bytes_per_node(d: Path, nodes: int) -> dict:
    per = []
    for pid in range(nodes):
        p = d / f"{pid}.jsonl"
        rows = [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []
        per.append((sum(r["in"] for r in rows), sum(r["out"] for r in rows), len(rows)))
    return {"in": float(np.mean([a for a, _, _ in per])), "out": float(np.mean([b for _, b, _ in per])),
            "messages": float(np.mean([c for _, _, c in per]))}


def secure_cost(nodes: int, d: int, work: Path) -> dict:
    """One secure-sum round (distributed noise, one device per node) through ``flwr run`` in ``work``."""
    bytes_dir = work / "bytes"
    bytes_dir.mkdir(parents=True, exist_ok=True)
    os.environ["LDP_BENCH_BYTES"] = str(bytes_dir)
    app = BYTES_APP + ("from flwr.client.mod import secaggplus_mod\nfrom ldp_plugin.federated import secure_sum\n"
                       "client_app = ClientApp(mods=[_bytes, secaggplus_mod])\nclient_app.train()(secure_sum._train)\n")
    plan = secure_plan_toml(mechanism="skellam", epsilon="1", delta=1e-6, d=d, nodes=nodes, min_participants=2, users_per_node=1, timeout=3600)
    device = secure_device_toml(users_per_node=1, d=d, seed="1", device_cap="10", max_epsilon="4", min_participants=2)
    t0 = time.perf_counter()
    _, summaries, _ = run_secure_simulation(work, plan_toml=plan, device_toml=device, nodes=nodes, timeout=7200,
                                            components={"clientapp": "bytes_app:client_app"}, extra_files={"bytes_app.py": app})
    row = summaries[0]["queries"][0]
    return {"secure_seconds_run": round(time.perf_counter() - t0, 1), "secure_seconds_round": row["seconds"], "secure_status": row["status"],
            "secure_error": row.get("error"), "secure_nodes_summed": row.get("nodes_summed"), "secure_config": row.get("config"),
            "secure_bytes_per_node": _bytes_per_node(bytes_dir, nodes)}


def plain_cost(nodes: int, d: int, work: Path) -> dict:
    """One plain OUE round (``ldp federated simulate``'s own path) in ``work``, its ClientApp behind the same byte-counting mod."""
    bytes_dir = work / "bytes"
    bytes_dir.mkdir(parents=True, exist_ok=True)
    os.environ["LDP_BENCH_BYTES"] = str(bytes_dir)
    app = BYTES_APP + ("from ldp_plugin.federated import app as ldp_app\nclient_app = ClientApp(mods=[_bytes])\n"
                       "client_app.query()(ldp_app._query)\n")
    orig = fcli.new_project

    def new_project(directory, **kw):
        paths = orig(directory, **kw)
        Path(directory, "bytes_app.py").write_text(app)
        p = Path(directory, "pyproject.toml")
        p.write_text(p.read_text().replace('clientapp = "ldp_plugin.federated.app:client_app"', 'clientapp = "bytes_app:client_app"'))
        return paths

    fcli.new_project = new_project
    try:
        t0 = time.perf_counter()
        with open(os.devnull, "w") as null:
            old = sys.stdout
            sys.stdout = null
            try:
                fcli._simulate_run(fcli_args(nodes, d, work))
            finally:
                sys.stdout = old
        seconds = round(time.perf_counter() - t0, 1)
    finally:
        fcli.new_project = orig
    s = json.loads((work / "out" / "app" / "results" / "sim" / "round-0001.json").read_text())
    return {"plain_seconds_run": seconds, "plain_seconds_round": s["queries"][0]["seconds"], "plain_bytes_per_node": _bytes_per_node(bytes_dir, nodes)}


def cost(nodes: int, d: int, part: str, keep: str | None) -> dict:
    out: dict = {"nodes": nodes, "d": d}
    for name, f in (("secure", secure_cost), ("plain", plain_cost)):
        if part not in (name, "both"):
            continue
        if keep:
            work = Path(keep) / name
            work.mkdir(parents=True, exist_ok=True)
            out.update(f(nodes, d, work))
        else:
            with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
                out.update(f(nodes, d, Path(tmp)))
    return out


def fcli_args(nodes: int, d: int, work: Path):
    return argparse.Namespace(nodes=nodes, users_per_node=1, mechanism="oue", d=d, epsilon=1.0, rounds=1, device_cap="10", max_epsilon="4",
                              min_batch=1, param=[], seed=0, out=str(work / "out"), timeout=3600, shuffle=False, delta=None, json=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["accuracy", "cost"])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=None)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--part", choices=["both", "secure", "plain"], default="both")
    ap.add_argument("--keep", default=None, metavar="DIR", help="cost: keep each run's directory (logs, summaries) here")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    t0 = time.perf_counter()
    if a.what == "accuracy":
        res = accuracy(a.n, a.d or 64, a.epsilon, a.delta, a.reps, a.seed)
        print(f"n={res['n']:,} d={res['d']} eps={res['epsilon']} delta={res['delta']:g}, {res['reps']} reps; shuffled eps0={res['eps0_shuffled']:.2f}")
        print("| method | MSE | MSE / central | coverage (95%) |\n|---|---|---|---|")
        for r in res["table"]:
            print(f"| {r['method']} | {r['mse']:.3g} | {r['mse_vs_central']:.3g} | {r['coverage']:.3f} |")
    else:
        res = cost(a.nodes, a.d or 1024, a.part, a.keep)
        print(json.dumps(res, indent=1))
    res["machine"] = _machine()
    res["seconds"] = round(time.perf_counter() - t0, 1)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
