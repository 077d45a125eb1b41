"""Issue 39: every client and server row against the peers AND against the machine's limits, in
one run (ratios measured side by side; the machine is shared, so read ratios, not bare rates).

* Server rows (k-RR, RAPPOR, OUE, k-subset, Hadamard response, OLH; d ∈ {64, 1024}, ε ∈ {1, 4}):
  ours = accumulate + estimate (projection); the peers' own aggregation + estimate (pure-ldp
  1.2.0, multi-freq-ldpy 0.2.5). Limits on the SAME report array: ``np.copyto`` (memcpy) and a
  numpy sum; ``agg/memcpy`` = memcpy time ÷ our aggregation time (without the estimate).
* Client rows: ours with the default secure source (AES-256-CTR expansion of OS keys) beside the
  peers; limit = the keystream rate of the same source (``random_bytes``) and the bytes of the
  reports written: ``out/keystream`` = report bytes/s ÷ keystream bytes/s.
* Collector: validated envelopes/s through ``Collector.ingest_array`` (one buffer),
  ``Collector.ingest_reply`` (a Flower node's reply: a list of envelope bytes, validated whole) and
  ``Collector.ingest`` (a list; and a list with one odd element, which takes the per-element path),
  beside memcpy of the envelope buffer.
* Values users have: rate of ``randomize`` from a Polars Categorical and an Enum Series (numpy
  text and Python lists: ``benchmarks/user_paths.py``), and of ``df.ldp.privatize`` without / with a ``user_id`` column (int and str ids),
  each ÷ the code rate (``randomize_encoded`` on int codes, same seed kind) in the same run
  (interleaved: each round times the code path and every case once; best of the rounds).

Usage: python benchmarks/limits.py [--n 1000000] [--n-peer 10000] [--json OUT] [--sections server,client,collector,values]
Needs: pip install -e ".[benchmark]" (peers and numba).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    sys.path.pop(0)  # this directory's coverage.py would shadow the package numba imports

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.sampling.kernels import kernel_backend, preload  # noqa: E402
from ldp_plugin.federated import Collector, Query  # noqa: E402
from ldp_plugin.federated.envelope import seal  # noqa: E402
from ldp_plugin.mechanisms.reports import to_wire_each  # noqa: E402
from ldp_plugin.sampling import SecureRandomSource, SeededRandomSource  # noqa: E402

preload(1 << 40)  # numba (if installed) imported now, before this directory is on the path
sys.path.append(HERE)
import throughput as tp  # noqa: E402
from _common import best_of  # noqa: E402
import throughput_hashed as th  # noqa: E402


best = best_of  # (seconds of the fastest call, the last result)


def mechanisms(d, eps):
    return [("krr", ldp.KRR(epsilon=eps, d=d)), ("rappor", ldp.RAPPOR(epsilon=eps, d=d)), ("oue", ldp.OUE(epsilon=eps, d=d)),
            ("k-subset", ldp.KSubset(epsilon=eps, d=d)), ("hadamard", ldp.HadamardResponse(epsilon=eps, d=d)), ("olh", ldp.OLH(epsilon=eps, d=d))]


def peers(kind, d, eps, values, n_server):
    if kind in ("krr", "rappor", "oue", "k-subset"):
        out = [tp.peer_pure_ldp(kind, d, eps, values), tp.peer_mfl(kind, d, eps, values)]
    else:
        out = [th.peer_pure_ldp(kind, d, eps, values, n_server), th.peer_mfl(kind, d, eps, values, n_server)]
    return [p for p in out if p]


def keystream_rate(repeats):
    src = SecureRandomSource()
    nbytes = 1 << 26
    for _ in range(3):  # warm: the first 64 MiB requests pay the pages' first touch and the worker threads' start-up
        src.random_bytes(nbytes)
    t, _ = best(lambda: src.random_bytes(nbytes), max(repeats, 5))
    return nbytes / t


def rows_section(args, want_server, want_client):
    rows = []
    ks = keystream_rate(args.repeats)
    print(f"AES keystream (SecureRandomSource.random_bytes): {ks / 1e9:.2f} GB/s", flush=True)
    gen = np.random.default_rng(0)
    warmed: set = set()
    for d in (64, 1024):
        for eps in (1.0, 4.0):
            values = gen.integers(0, d, args.n)
            for kind, mech in mechanisms(d, eps):
                if args.mechanisms and kind not in args.mechanisms:
                    continue
                slow_peer = kind in ("rappor", "oue", "k-subset", "olh") and d == 1024
                n_peer = max(1000, args.n_peer // 5) if slow_peer else args.n_peer
                n_srv_peer = 1000 if kind == "olh" and d == 1024 else n_peer
                row = {"mechanism": kind, "d": d, "epsilon": eps, "n": args.n, "n_peer": n_peer}
                if kind == "k-subset":
                    row["k"] = mech.k
                t_sec, _ = best(lambda: mech.randomize_encoded(values, rng=SecureRandomSource()), args.repeats) if want_client else (None, None)
                reports = mech.randomize_encoded(values, rng=SeededRandomSource(1))
                arr = np.asarray(reports)
                if kind == "olh":  # O(n·d) checks: the server on a slice
                    arr = arr[: max(20_000, args.n // (5 if d == 64 else 50))]
                n_srv = arr.shape[0]
                if want_client:
                    row["client_secure"] = args.n / t_sec
                    row["report_bytes"] = np.asarray(reports).nbytes / args.n
                    row["out_vs_keystream"] = row["client_secure"] * row["report_bytes"] / ks
                if want_server:
                    t_agg, _ = best(lambda: mech.accumulator().add(arr), args.repeats)
                    t_srv, _ = best(lambda: mech.accumulator().add(arr).estimate(postprocess="projection"), args.repeats)
                    dst = np.empty_like(arr)
                    t_cp, _ = best(lambda: np.copyto(dst, arr), max(5, args.repeats))
                    t_sum, _ = best(lambda: arr.sum(), max(5, args.repeats))
                    row.update(server=n_srv / t_srv, aggregate=n_srv / t_agg, array_mb=arr.nbytes / 1e6,
                               agg_vs_memcpy=t_cp / t_agg, agg_vs_sum=t_sum / t_agg)
                if not args.no_peers and kind not in warmed:  # numba-jitted peers (multi-freq-ldpy) compile on first call
                    peers(kind, d, eps, values[:20], 20)
                    warmed.add(kind)
                ps = peers(kind, d, eps, values[:n_peer], n_srv_peer) if not args.no_peers else []
                if ps:
                    row["best_peer_client"] = max(p["client"] for p in ps)
                    row["best_peer_server"] = max(p["server"] for p in ps)
                    if want_client:
                        row["x_client"] = row["client_secure"] / row["best_peer_client"]
                    if want_server:
                        row["x_server"] = row["server"] / row["best_peer_server"]
                rows.append(row)
                print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    return rows, ks


def collector_section(args):
    out = []
    for mech in (ldp.KRR(epsilon=1.0, d=1024), ldp.OUE(epsilon=1.0, d=1024)):
        n = args.n
        q = Query.for_mechanism("bench", mech)
        reports = mech.randomize_encoded(np.random.default_rng(0).integers(0, mech.d, n), rng=SeededRandomSource(1))
        envs = seal(to_wire_each(mech, reports, tag=q.content_hash))
        buf = np.frombuffer(b"".join(envs), dtype=np.uint8).reshape(n, -1)

        def run_array():
            c = Collector(q)
            res = c.ingest_array(buf)
            assert res["accepted"] == n
            return c

        t_arr, col = best(run_array, args.repeats)
        assert np.array_equal(np.asarray(col.acc.counts), np.asarray(mech.accumulator().add(reports).counts))
        n_list = min(n, 200_000)
        t_list, _ = best(lambda: Collector(q).ingest(envs[:n_list]), 1)
        odd = envs[: n_list - 1] + [b"\x00"]  # one short element: the per-element list path
        t_odd, _ = best(lambda: Collector(q).ingest(odd), 1)
        # a Flower node's reply as the ServerApp receives it (a list of envelope bytes), validated whole
        raw = {"devices": n, "reports": envs, "refused": "{}", "retry": False}
        t_reply, res = best(lambda: Collector(q).ingest_reply(raw, quota=n, node=1), args.repeats)
        assert res["accepted"] == n
        dst = np.empty_like(buf)
        t_cp, _ = best(lambda: np.copyto(dst, buf), 5)
        row = {"mechanism": mech.name, "d": mech.d, "n": n, "envelope_bytes": buf.shape[1], "array_per_s": n / t_arr,
               "reply_per_s": n / t_reply, "list_per_s": n_list / t_list, "odd_list_per_s": n_list / t_odd, "array_vs_memcpy": t_cp / t_arr}
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def values_section(args):
    out = []
    n, d = args.n, 64
    cats = [f"item{i:03d}" for i in range(d)]
    rng = np.random.default_rng(0)
    codes = rng.integers(0, d, n)
    strs = [cats[c] for c in codes.tolist()]
    uid = rng.permutation(n).astype(np.int64)
    cat = pl.Series("v", strs, dtype=pl.Categorical)
    enum = pl.Series("v", strs, dtype=pl.Enum(cats))
    df = pl.DataFrame({"v": cat, "uid": uid, "sid": pl.Series(uid).cast(pl.String) + "-u"})
    for mech in (ldp.KRR(epsilon=1.0, d=d, categories=cats), ldp.OUE(epsilon=1.0, d=d, categories=cats)):
        cases = {
            "code": lambda: mech.randomize_encoded(codes, rng=SeededRandomSource(1)),
            "Categorical": lambda: mech.randomize(cat, rng=1),
            "Enum": lambda: mech.randomize(enum, rng=1),
            "privatize": lambda: df.ldp.privatize("v", mech, seed=1),
            "privatize user_id int": lambda: df.ldp.privatize("v", mech, user_id="uid", seed=1),
            "privatize user_id str": lambda: df.ldp.privatize("v", mech, user_id="sid", seed=1),
        }
        # interleaved: every round times the code path and each case once, so a load spike on a
        # shared machine hits them alike (best of the rounds for each)
        times = dict.fromkeys(cases, float("inf"))
        for _ in range(max(args.repeats, 5)):
            for name, f in cases.items():
                t, _ = best(f, 1)
                times[name] = min(times[name], t)
        base = times.pop("code")
        row = {"mechanism": mech.name, "d": d, "n": n, "code_rate": n / base}
        for name, t in times.items():
            row[name] = base / t
        out.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    return out


def render(path: str) -> None:
    """Markdown tables of a --json result (what BENCHMARKS.md quotes)."""
    with open(path) as f:
        res = json.load(f)
    meta = res["meta"]
    print(f"kernels {meta['kernels']}, {meta['cpus']} cpus, load average {meta['loadavg_start'][0]:.1f} at start, {meta['loadavg_end'][0]:.1f} at end; "
          f"AES keystream {res.get('keystream_bytes_per_s', 0) / 1e9:.2f} GB/s")
    if res.get("rows"):
        print("\n| mechanism | d | ε | client secure /s | × best peer | out ÷ keystream | server /s | × best peer | agg ÷ memcpy | agg ÷ numpy sum |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in res["rows"]:
            name = r["mechanism"] + (f" (k={r['k']})" if "k" in r else "")
            f = lambda k, fmt: (fmt.format(r[k]) if k in r else "—")  # noqa: E731
            print(f"| {name} | {r['d']} | {r['epsilon']:g} | {f('client_secure', '{:,.0f}')} | {f('x_client', '{:.1f}×')} | {f('out_vs_keystream', '{:.3f}')} "
                  f"| {f('server', '{:,.0f}')} | {f('x_server', '{:.1f}×')} | {f('agg_vs_memcpy', '{:.2f}')} | {f('agg_vs_sum', '{:.2f}')} |")
    if res.get("collector"):
        print("\n| collector | envelope bytes | ingest_array /s | ingest_reply (Flower reply) /s | ingest (list) /s | list with one odd element /s | array ÷ memcpy |")
        print("|---|---|---|---|---|---|---|")
        for r in res["collector"]:
            f = lambda k: (f"{r[k]:,.0f}" if k in r else "—")  # noqa: E731
            print(f"| {r['mechanism']} d={r['d']} | {r['envelope_bytes']} | {f('array_per_s')} | {f('reply_per_s')} | {f('list_per_s')} | {f('odd_list_per_s')} | {r['array_vs_memcpy']:.3f} |")
    if res.get("values"):
        keys = ["Categorical", "Enum", "privatize", "privatize user_id int", "privatize user_id str"]
        print("\n| ÷ code rate | code rate /s | " + " | ".join(keys) + " |")
        print("|---|---|" + "---|" * len(keys))
        for r in res["values"]:
            print(f"| {r['mechanism']} d={r['d']} | {r['code_rate']:,.0f} | " + " | ".join(f"{r[k]:.2f}" for k in keys) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--render", default=None, help="print the markdown tables of a --json result and exit")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--n-peer", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--sections", default="server,client,collector,values")
    ap.add_argument("--mechanisms", default="", help="comma-separated subset of the server/client rows")
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    if args.render:
        render(args.render)
        return
    args.mechanisms = set(filter(None, args.mechanisms.split(",")))
    sections = set(args.sections.split(","))
    load0 = os.getloadavg()
    res = {"meta": {"python": platform.python_version(), "numpy": np.__version__, "polars": pl.__version__, "cpus": os.cpu_count(),
                    "kernels": kernel_backend(), "loadavg_start": load0}}
    if "server" in sections or "client" in sections:
        res["rows"], res["keystream_bytes_per_s"] = rows_section(args, "server" in sections, "client" in sections)
    if "collector" in sections:
        res["collector"] = collector_section(args)
    if "values" in sections:
        res["values"] = values_section(args)
    res["meta"]["loadavg_end"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
