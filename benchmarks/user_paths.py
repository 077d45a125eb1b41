"""The paths users call, against the machine's limits and the code rate, in one run (ratios measured
side by side; the machine is shared, so read ratios, not bare rates).

* **Server** (k-RR, OUE, RAPPOR, Hadamard response; d = 1024, ε = 1, n reports): through the public
  API on the tagged batch ``randomize_encoded`` returns — ``mech.accumulator().add(reports)`` and
  ``mech.accumulator().add(reports).estimate()`` (projection, the default) — against ``np.copyto``
  (memcpy) of the same report bytes: ``÷ memcpy`` = memcpy time ÷ the call's time (bar: ≥ 0.25).
* **Text in** (k-RR and OUE, 64 categories ``item000`` …, n values): ``randomize`` of a numpy
  unicode array, a numpy bytes array (read as UTF-8), a ``list[str]`` (one ``str`` object per
  value, as a reader builds it), a ``list[bytes]`` and an object array of ``str``, each ÷ the code rate (``randomize_encoded`` on int64 codes, the same
  seeded source) (bar: numpy arrays ≥ 0.6).
* **List routes** (``--list-routes``): the ways from a ``list[str]`` to item codes with known
  categories, each timed with the randomization after it (``randomize_encoded`` of its codes, the
  same seeded source) ÷ the code rate: one ``dict.get`` a value (the numpy backend's pass),
  ``operator.itemgetter(*values)(index)``, ``np.array(values)`` then the ``U`` lookup, numpy's
  ``StringDType`` with a ``searchsorted`` in the sorted categories, Polars ``Series(values,
  dtype=Enum)``, a String Series cast to the Enum, ``replace_strict``, and the library's
  compiled pass (``list_codes``). Each route's codes are checked against the dictionary's first.
* **Import**: CPU time of ``import ldp_plugin`` ÷ ``import opendp.prelude``, fresh processes,
  interleaved (``benchmarks/import_time.py``'s rows; bar: ≤ 1.3).

Every row interleaves its cases (each round times each case once; best of at least ``--rounds``
rounds, more while the row stays within 2 s), so a load spike hits them alike. Prints one table.

Usage: python benchmarks/user_paths.py [--n 1000000] [--rounds 7] [--import-rounds 9] [--json OUT]
       python benchmarks/user_paths.py --list-routes [--n 1000000] [--rounds 7]
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    sys.path.pop(0)  # this directory's coverage.py would shadow the package numba imports

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import operator  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.sampling import SeededRandomSource  # noqa: E402
from ldp_plugin.sampling.kernels import kernel_backend, preload  # noqa: E402
from ldp_plugin.sampling.row_lookup import fixed_width_codes, list_codes  # noqa: E402

preload(1 << 40)  # numba (if installed) imported now, before this directory is on the path
sys.path.append(HERE)
import import_time  # noqa: E402


def interleaved(cases: dict, rounds: int, budget_s: float = 2.0) -> dict:
    """Best wall time of each case over at least ``rounds`` rounds (more, up to 200, while a row
    stays within ``budget_s``: a best-of needs many draws on a shared machine), every round timing
    each case once."""
    best = dict.fromkeys(cases, float("inf"))
    t0 = time.perf_counter()
    for f in cases.values():  # warm: first touches, compiled kernels, cached tables
        f()
    per_round = time.perf_counter() - t0
    for _ in range(max(rounds, min(200, int(budget_s / max(per_round, 1e-9))))):
        for name, f in cases.items():
            t1 = time.perf_counter()
            f()
            best[name] = min(best[name], time.perf_counter() - t1)
    return best


def server_rows(n: int, rounds: int) -> list:
    out = []
    d = 1024
    values = np.random.default_rng(0).integers(0, d, n)
    for name, cls in (("krr", ldp.KRR), ("oue", ldp.OUE), ("rappor", ldp.RAPPOR), ("hadamard", ldp.HadamardResponse)):
        mech = cls(epsilon=1.0, d=d)
        reports = mech.randomize_encoded(values, rng=SeededRandomSource(1))  # the tagged batch users hold
        raw = np.asarray(reports)
        dst = np.empty_like(raw)
        t = interleaved({"memcpy": lambda: np.copyto(dst, raw),
                         "add": lambda: mech.accumulator().add(reports),
                         "add+estimate": lambda: mech.accumulator().add(reports).estimate()}, rounds)
        row = {"mechanism": name, "d": d, "n": n, "report_bytes": raw.nbytes, "add_per_s": n / t["add"],
               "add_vs_memcpy": t["memcpy"] / t["add"], "add_estimate_vs_memcpy": t["memcpy"] / t["add+estimate"]}
        out.append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    return out


def text_rows(n: int, rounds: int) -> list:
    out = []
    d = 64
    cats = [f"item{i:03d}" for i in range(d)]
    codes = np.random.default_rng(0).integers(0, d, n)
    strs = [cats[c].encode().decode() for c in codes.tolist()]  # as a reader builds it: one str object per value
    blist = [s.encode() for s in strs]
    u_arr, s_arr, o_arr = np.array(strs), np.array(blist), np.array(strs, dtype=object)
    for cls in (ldp.KRR, ldp.OUE):
        mech = cls(epsilon=1.0, d=d, categories=cats)
        t = interleaved({"code": lambda: mech.randomize_encoded(codes, rng=SeededRandomSource(1)),
                         "numpy U": lambda: mech.randomize(u_arr, rng=1),
                         "numpy S": lambda: mech.randomize(s_arr, rng=1),
                         "list[str]": lambda: mech.randomize(strs, rng=1),
                         "list[bytes]": lambda: mech.randomize(blist, rng=1),
                         "object array": lambda: mech.randomize(o_arr, rng=1)}, rounds)
        base = t.pop("code")
        row = {"mechanism": mech.name, "d": d, "n": n, "code_rate": n / base, **{k: base / v for k, v in t.items()}}
        out.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    return out


def list_routes(n: int, rounds: int) -> dict:
    """Each route from a list of ``str`` to codes, then k-RR's randomization of them, ÷ the code rate."""
    d = 64
    cats = [f"item{i:03d}" for i in range(d)]
    cat_t, index = tuple(cats), {c: i for i, c in enumerate(cats)}
    codes = np.random.default_rng(0).integers(0, d, n)
    strs = [cats[c].encode().decode() for c in codes.tolist()]  # as a reader builds it: one str object per value
    sorted_cats = np.array(sorted(cats), dtype=np.dtypes.StringDType())
    order = np.argsort(np.array(cats))
    enum = pl.Enum(cats)

    def string_dtype(values):
        a = np.array(values, dtype=np.dtypes.StringDType())
        pos = np.minimum(np.searchsorted(sorted_cats, a), d - 1)
        if not (sorted_cats[pos] == a).all():
            raise ValueError("a value is no category")
        return order[pos]

    def checked(codes_and_bad):
        codes_, bad = codes_and_bad
        if bad >= 0:
            raise ValueError("a value is no category")
        return codes_

    routes = {
        "dict.get map": lambda v: np.fromiter(map(index.get, v, itertools.repeat(-1)), dtype=np.int64, count=len(v)),
        "itemgetter": lambda v: np.fromiter(operator.itemgetter(*v)(index), dtype=np.int64, count=len(v)),
        "np.array U + lookup": lambda v: checked(fixed_width_codes(np.array(v), cat_t)),
        "StringDType searchsorted": string_dtype,
        "Polars Series(Enum)": lambda v: pl.Series(v, dtype=enum).to_physical().to_numpy(),
        "Polars String cast Enum": lambda v: pl.Series(v, dtype=pl.String).cast(enum).to_physical().to_numpy(),
        "Polars replace_strict": lambda v: pl.Series(v, dtype=pl.String).replace_strict(cats, list(range(d)), return_dtype=pl.Int64).to_numpy(),
        "compiled pass (list_codes)": lambda v: checked(list_codes(v, cat_t)),
    }
    for name, route in routes.items():
        if not np.array_equal(np.asarray(route(strs), dtype=np.int64), codes):
            raise SystemExit(f"route {name} gives other codes")
    mech = ldp.KRR(epsilon=1.0, d=d, categories=cats)
    cases = {"code": lambda: mech.randomize_encoded(codes, rng=SeededRandomSource(1))}
    cases.update({name: (lambda r=route: mech.randomize_encoded(r(strs), rng=SeededRandomSource(1))) for name, route in routes.items()})
    t = interleaved(cases, rounds)
    base = t.pop("code")
    row = {"n": n, "code_rate": n / base, **{k: base / v for k, v in t.items()}}
    print(f"\n| list[str] → codes → k-RR, ÷ code rate ({n / base / 1e6:.1f} M/s), n = {n:,} | ratio |\n|---|---|")
    for k, v in t.items():
        print(f"| {k} | {base / v:.2f} |")
    return row


def import_row(rounds: int) -> dict:
    names = ("import opendp.prelude", "import ldp_plugin")
    for name in names:  # warm the byte-code caches
        import_time.run_once(import_time.ROWS[name])
    cpu = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            cpu[name].append(import_time.run_once(import_time.ROWS[name])["cpu"])
    ref, face = cpu[names[0]], cpu[names[1]]
    row = {"opendp_cpu_median_s": statistics.median(ref), "ldp_cpu_median_s": statistics.median(face),
           "ratio_median": statistics.median(face) / statistics.median(ref), "ratio_min": min(face) / min(ref), "rounds": rounds}
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    return row


def table(res: dict) -> None:
    meta = res["meta"]
    print(f"\n{meta['cpus']} cpus, {meta['processor']}, Python {meta['python']}, numpy {meta['numpy']}, kernels {meta['kernels']}; "
          f"load average {meta['loadavg_start']:.1f} at start, {meta['loadavg_end']:.1f} at end; n = {meta['n']:,}, best of ≥ {meta['rounds']} rounds")
    print("\n| server, d = 1024, ε = 1 | report MB | add /s | add ÷ memcpy | add + estimate ÷ memcpy |")
    print("|---|---|---|---|---|")
    for r in res["server"]:
        print(f"| {r['mechanism']} | {r['report_bytes'] / 1e6:.1f} | {r['add_per_s']:,.0f} | {r['add_vs_memcpy']:.2f} | {r['add_estimate_vs_memcpy']:.2f} |")
    keys = ["numpy U", "numpy S", "list[str]", "list[bytes]", "object array"]
    print("\n| text in, 64 categories, ÷ code rate | code rate /s | " + " | ".join(keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    for r in res["text"]:
        print(f"| {r['mechanism']} | {r['code_rate']:,.0f} | " + " | ".join(f"{r[k]:.2f}" for k in keys) + " |")
    imp = res["import"]
    print(f"\n| start-up (CPU, fresh processes) | import opendp.prelude (ms) | import ldp_plugin (ms) | ratio (median) | ratio (min) |")
    print("|---|---|---|---|---|")
    print(f"| {imp['rounds']} rounds | {imp['opendp_cpu_median_s'] * 1e3:.0f} | {imp['ldp_cpu_median_s'] * 1e3:.0f} | "
          f"{imp['ratio_median']:.2f} | {imp['ratio_min']:.2f} |")
    server_low = min(min(r["add_vs_memcpy"], r["add_estimate_vs_memcpy"]) for r in res["server"])
    text_low = min(min(r["numpy U"], r["numpy S"]) for r in res["text"])
    list_low = min(r["list[str]"] for r in res["text"])
    print(f"\nbars: server ≥ 0.25 of memcpy (lowest {server_low:.2f}: {'met' if server_low >= 0.25 else 'MISSED'}); "
          f"numpy text ≥ 0.6 of the code rate (lowest {text_low:.2f}: {'met' if text_low >= 0.6 else 'MISSED'}); "
          f"list[str] ≥ 0.6 of the code rate (lowest {list_low:.2f}: {'met' if list_low >= 0.6 else 'MISSED'}); "
          f"import ≤ 1.3 × OpenDP ({max(imp['ratio_median'], imp['ratio_min']):.2f}: "
          f"{'met' if max(imp['ratio_median'], imp['ratio_min']) <= 1.3 else 'MISSED'}); wall time {meta['wall_s']:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--import-rounds", type=int, default=9)
    ap.add_argument("--json", default=None)
    ap.add_argument("--list-routes", action="store_true", help="compare the routes from a list[str] to codes (and nothing else)")
    args = ap.parse_args()
    if args.list_routes:
        res = list_routes(args.n, args.rounds)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    res = {"meta": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(), "kernels": kernel_backend(),
                    "processor": platform.processor() or platform.machine(), "n": args.n, "rounds": args.rounds, "loadavg_start": load0[0],
                    "command": "python benchmarks/user_paths.py " + " ".join(sys.argv[1:])}}
    res["server"] = server_rows(args.n, args.rounds)
    res["text"] = text_rows(args.n, args.rounds)
    res["import"] = import_row(args.import_rounds)
    res["meta"]["loadavg_end"] = os.getloadavg()[0]
    res["meta"]["wall_s"] = time.perf_counter() - t0
    table(res)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
