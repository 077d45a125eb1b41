"""Coverage and MSE / reported variance of the intervals changed for honest answers: the bucketed
oracle's range counts (ranges inside buckets and on bucket edges) on five data shapes, PCKV's
frequencies for the reporting users (``target="sample"``) at several (ε, ℓ), and Square Wave's
intervals (the unbiased decoder's) on the same shapes at ε ∈ {0.5, 1, 2, 4}: ranges on cell edges
and inside cells (the README's [100, 300) of Beta(2,5)·1000 among them), the 8 histogram buckets
and three quantiles, with the MSE of the EMS centre (before) and the unbiased one (after).

Each cell: ``runs`` seeded repetitions over the mechanism's randomness with the users fixed;
coverage of the 95% intervals and ``MSE / mean(reported variance)``.

Usage: python benchmarks/honest_intervals.py [--runs 200] [--sw-runs 100] [--json OUT] [--only square-wave]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.choose.distribution import bucket_rule, rank_distribution_mechanisms
from ldp_plugin.estimation import normal_quantile
from ldp_plugin.mechanisms.distribution_server import square_wave_decoder
from ldp_plugin.verification.shapes import NUMBER_SHAPES, number_shape

Z = normal_quantile(0.95)
SHAPES = list(NUMBER_SHAPES)
shape = number_shape  # the five number shapes of the estimator layer


def range_cell(mech, x, lo, hi, runs, **kw) -> dict:
    truth = float(np.mean((x >= lo) & (x < hi)))
    rows = [mech.estimate(mech.randomize(x, rng=s), **kw).range_fraction(lo, hi) for s in range(runs)]
    err = np.array([r.fraction - truth for r in rows])
    var = float(np.mean([r.std_error ** 2 for r in rows]))
    cover = float(np.mean([r.ci_lower <= truth <= r.ci_upper for r in rows]))
    return {"coverage": cover, "mse_over_var": float(np.mean(err ** 2) / var) if var > 0 else None, "kind": rows[0].interval_kind}


def pckv_cell(eps: float, ell: int, runs: int, d: int = 4, n: int = 3000) -> dict:
    gen = np.random.default_rng(int(eps * 10 + ell))
    m = ldp.PCKV(epsilon=eps, d=d, ell=ell)
    sizes = gen.integers(0, ell + 1, n)
    users = [[(int(k), float(gen.uniform(-1, 1))) for k in gen.choice(d, size=int(sz), replace=False)] for sz in sizes]
    truth = np.array([sum(any(k == j for k, _ in u) for u in users) for j in range(d)]) / n
    batch = m.encode(users)
    est = [m.estimate(m.randomize(batch, rng=s)) for s in range(runs)]
    f = np.array([e.frequency for e in est])
    se = np.array([e.frequency_se for e in est])
    pop = np.array([m.estimate(m.randomize(batch, rng=s), target="population").frequency_se for s in range(min(runs, 50))])
    return {"coverage": float(np.mean((f - Z * se <= truth) & (truth <= f + Z * se))),
            "mse_over_var": float(np.mean((f - truth) ** 2) / np.mean(se ** 2)),
            "old_population_var_over_mse": float(np.mean(pop ** 2) / np.mean((f - truth) ** 2))}


def square_wave_cell(x: np.ndarray, eps: float, runs: int, grid: int = 64) -> dict:
    """Square Wave on ``x`` in [0, 1]: coverage and MSE / mean reported variance of two ranges
    (cell edges; inside cells = the README's [100, 300) on [0, 1000]), the 8 buckets (worst
    bucket's coverage, mean MSE/var), three quantiles (worst coverage), and the MSE of the
    range's EMS centre (before) against the unbiased one (after)."""
    sw = ldp.SquareWave(epsilon=eps, grid=grid)
    ranges = {"edges [0.25,0.75)": (0.25, 0.75), "inside [0.1,0.3)": (0.1, 0.3)}
    truth = {k: float(np.mean((x >= lo) & (x < hi))) for k, (lo, hi) in ranges.items()}
    edges = np.linspace(0, 1, 9)
    tb = np.array([np.mean((x >= edges[i]) & (x < edges[i + 1])) for i in range(8)])
    tb[-1] += np.mean(x == 1.0)
    levels = (0.1, 0.5, 0.9)
    tq = [float(np.quantile(x, q)) for q in levels]
    rec: dict = {k: {"hit": 0, "err": [], "var": [], "ems_err": []} for k in ranges}
    bh, berr, bvar, qh = np.zeros(8), [], [], np.zeros(3)
    for s in range(runs):
        est = sw.estimate(sw.randomize(x, rng=s))
        for k, (lo, hi) in ranges.items():
            r = est.range_fraction(lo, hi)
            rec[k]["hit"] += r.ci_lower <= truth[k] <= r.ci_upper
            rec[k]["err"].append(r.fraction - truth[k])
            rec[k]["var"].append(r.std_error ** 2)
            rec[k]["ems_err"].append(float(est._weights(lo, hi) @ est.theta) - truth[k])
        h = est.histogram(8)
        bh += (h["ci_lower"] <= tb) & (tb <= h["ci_upper"])
        berr.append(h["estimate"] - tb)
        bvar.append(h["std_error"] ** 2)
        for i, q in enumerate(est.quantiles(list(levels))):
            qh[i] += q["ci_lower"] <= tq[i] <= q["ci_upper"]
    out = {}
    for k, v in rec.items():
        mse = float(np.mean(np.square(v["err"])))
        out[k] = {"coverage": v["hit"] / runs, "mse_over_var": mse / float(np.mean(v["var"])),
                  "mse_before_ems": float(np.mean(np.square(v["ems_err"]))), "mse_after": mse}
    out["buckets"] = {"coverage_min": float(bh.min() / runs), "coverage_mean": float(bh.mean() / runs),
                      "mse_over_var": float(np.mean(np.mean(np.square(berr), axis=0) / np.mean(bvar, axis=0)))}
    out["quantiles"] = {"coverage_min": float(qh.min() / runs)}
    return out


def square_wave_exact_channel(x: np.ndarray, eps: float, runs: int, grid: int = 64) -> dict:
    """The same intervals over ``runs`` report-count vectors drawn from the exact channel given the
    users (``Mult(n_k, A[:, k])`` per input cell — the randomizer's distribution, which the
    verification layers check), so thousands of runs take seconds: coverage and MSE / mean
    reported variance of the range on cell edges and of each of the 8 buckets."""
    sw = ldp.SquareWave(epsilon=eps, grid=grid)
    cells = np.minimum((x * grid).astype(np.int64), grid - 1)
    nx = np.bincount(cells, minlength=grid)
    n = x.size
    A, L = sw.channel_matrix(), square_wave_decoder(sw)
    gen = np.random.default_rng(int(eps * 100))
    C = np.zeros((runs, sw.cells))
    for k in np.flatnonzero(nx):
        C += gen.multinomial(int(nx[k]), A[:, k] / A[:, k].sum(), size=runs)
    P = C / n
    raw = P @ L.T
    th = nx / n
    rows = {"edges [0.25,0.75)": (np.arange(grid) >= grid // 4) & (np.arange(grid) < 3 * grid // 4)}
    rows.update({f"bucket {i}": np.arange(grid) // (grid // 8) == i for i in range(8)})
    res = {}
    for name, a in rows.items():
        a = a.astype(np.float64)
        w = L.T @ a
        est, truth = raw @ a, float(a @ th)
        var = ((P * (w * w)).sum(axis=1) - raw @ (a * a)) / n
        res[name] = {"coverage": float(np.mean(np.abs(est - truth) <= Z * np.sqrt(np.maximum(var, 0.0)))),
                     "mse_over_var": float(np.mean((est - truth) ** 2) / np.mean(var))}
    return res


def square_wave_exact_table(runs: int, out: dict) -> None:
    print(f"{f'square-wave, exact channel ({runs} runs)':<34} {'range cov':>10} {'MSE/var':>8} {'buckets cov min-max':>20} {'MSE/var min-max':>16}")
    for i, name in enumerate(SHAPES):
        x = shape(name, 20_000, np.random.default_rng(i))
        for eps in (0.5, 1.0, 2.0, 4.0):
            c = square_wave_exact_channel(x, eps, runs)
            out["square_wave_exact"].append({"shape": name, "epsilon": eps, **c})
            e = c["edges [0.25,0.75)"]
            bc = [v["coverage"] for k, v in c.items() if k.startswith("bucket")]
            bm = [v["mse_over_var"] for k, v in c.items() if k.startswith("bucket")]
            print(f"{name + f' eps={eps}':<34} {e['coverage']:>10.3f} {e['mse_over_var']:>8.2f} {min(bc):>10.3f}-{max(bc):.3f} "
                  f"{min(bm):>10.2f}-{max(bm):.2f}")


def square_wave_table(runs: int, out: dict) -> None:
    print(f"{'square-wave (grid 64, n=20,000)':<34} {'range edges':>16} {'range inside':>16} {'buckets':>14} {'quantiles':>9} "
          f"{'MSE EMS/unbiased':>17}")
    for i, name in enumerate(SHAPES):
        x = shape(name, 20_000, np.random.default_rng(i))
        for eps in (0.5, 1.0, 2.0, 4.0):
            c = square_wave_cell(x, eps, runs)
            out["square_wave"].append({"shape": name, "epsilon": eps, **c})
            e, n_, b = c["edges [0.25,0.75)"], c["inside [0.1,0.3)"], c["buckets"]
            print(f"{name + f' eps={eps}':<34} {e['coverage']:>7.2f} {e['mse_over_var']:>8.2f} {n_['coverage']:>7.2f} "
                  f"{n_['mse_over_var']:>8.2f} {b['coverage_min']:>5.2f} {b['mse_over_var']:>8.2f} {c['quantiles']['coverage_min']:>9.2f} "
                  f"{n_['mse_before_ems'] / n_['mse_after']:>17.2f}")


def bucketed_rule_table(runs: int, out: dict) -> None:
    """The bucketed oracle at the library's bucket rule (bimodal reference, ε = 0.5, n = 10⁶: the
    configuration ``ldp choose`` recommends for bimodal data at ε <= 1) on ranges ending inside
    buckets: coverage and the mean interval width, at the histogram rule and the ranges rule."""
    n, eps = 1_000_000, 0.5
    x = shape("bimodal", n, np.random.default_rng(11))
    b_hist = bucket_rule(eps, n, reference="bimodal")
    b_rng = rank_distribution_mechanisms(eps, n=n, reference="bimodal", goal="ranges")[0].params.get("buckets", b_hist)
    print(f"{'bucketed at the bucket rule, eps=0.5, n=1e6':<46} {'coverage':>9} {'MSE/var':>8} {'width':>8}")
    for rule, B in (("histogram rule", b_hist), ("ranges rule", b_rng)):
        m = ldp.BucketedOracle(epsilon=eps, buckets=B)
        for lo, hi in ((0.3, 0.7), (0.1, 0.22), (0.5, 0.8)):
            truth = float(np.mean((x >= lo) & (x < hi)))
            rows = [m.estimate(m.randomize(x, rng=s)).range_fraction(lo, hi) for s in range(runs)]
            cov = float(np.mean([r.ci_lower <= truth <= r.ci_upper for r in rows]))
            mse = float(np.mean([(r.fraction - truth) ** 2 for r in rows])) / float(np.mean([r.std_error ** 2 for r in rows]))
            width = float(np.mean([r.ci_upper - r.ci_lower for r in rows]))
            out["bucketed_rule"].append({"rule": rule, "buckets": B, "range": [lo, hi], "coverage": cov, "interpolated_mse_over_var": mse, "width": width})
            print(f"{f'{rule} B={B} [{lo},{hi})':<46} {cov:>9.3f} {mse:>8.2f} {width:>8.4f}")


def one_bit_table(runs: int, out: dict) -> None:
    """Duchi and 1BitMean: their sample-target interval is labelled a bound (one bit cannot
    estimate the users' mean(t²); the plug-in ``C² − v̄²`` from the report mean is the tightest
    identifiable upper bound), so its coverage must be >= 0.95; ``sd ratio`` is the reported
    standard error over the real spread (how much wider than needed)."""
    print(f"{'one-bit means (n=20,000, target=sample)':<46} {'coverage':>9} {'MSE/var':>8} {'sd ratio':>9}  kind")
    for i, name in enumerate(SHAPES):
        x = shape(name, 20_000, np.random.default_rng(50 + i))
        truth = float(np.mean(x))
        for cls in (ldp.Duchi, ldp.OneBitMean):
            for eps in (0.5, 2.0, 8.0):
                m = cls(epsilon=eps)
                est = [m.estimate(m.randomize(x, rng=s)) for s in range(runs)]
                mu, se = np.array([e.mean for e in est]), np.array([e.std_error for e in est])
                cov = float(np.mean(np.abs(mu - truth) <= Z * se))
                mse_var = float(np.mean((mu - truth) ** 2) / np.mean(se ** 2))
                out["one_bit"].append({"shape": name, "mechanism": cls.name, "epsilon": eps, "coverage": cov, "mse_over_var": mse_var,
                                       "kind": est[0].interval_kind})
                print(f"{f'{cls.name} {name} eps={eps}':<46} {cov:>9.3f} {mse_var:>8.2f} {1 / np.sqrt(mse_var):>9.2f}  {est[0].interval_kind}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--sw-runs", type=int, default=100)
    ap.add_argument("--only", choices=["square-wave", "square-wave-exact", "bucketed-rule", "one-bit"])
    ap.add_argument("--exact-runs", type=int, default=4000)
    ap.add_argument("--json")
    a = ap.parse_args()
    t0 = time.time()
    out: dict = {"machine": platform.processor() or platform.machine(), "runs": a.runs, "bucketed": [], "pckv": [], "square_wave": [],
                 "bucketed_rule": [], "one_bit": [], "square_wave_exact": []}
    if a.only is None:
        old_tables(a, out)
    if a.only in (None, "bucketed-rule"):
        bucketed_rule_table(min(a.runs, 100), out)
    if a.only in (None, "one-bit"):
        one_bit_table(a.runs, out)
    if a.only in (None, "square-wave-exact"):
        square_wave_exact_table(a.exact_runs, out)
    if a.only in (None, "square-wave"):
        square_wave_table(a.sw_runs, out)
    out["seconds"] = round(time.time() - t0, 1)
    print(f"{out['seconds']} s")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


def old_tables(a, out: dict) -> None:
    """The bucketed oracle's ranges and PCKV's frequencies."""
    print(f"{'cell':<46} {'coverage':>9} {'MSE/var':>8}  kind")
    for i, name in enumerate(SHAPES):
        gen = np.random.default_rng(i)
        x = shape(name, 20_000, gen)
        for eps in (0.5, 2.0):
            b = ldp.BucketedOracle(epsilon=eps, buckets=8)
            for lo, hi, what in ((0.3, 0.7, "inside buckets"), (0.25, 0.75, "bucket edges")):
                c = range_cell(b, x, lo, hi, a.runs)
                out["bucketed"].append({"shape": name, "epsilon": eps, "range": [lo, hi], **c})
                mv = "-" if c["mse_over_var"] is None else f"{c['mse_over_var']:.2f}"
                print(f"{'bucketed ' + name + f' eps={eps} [{lo},{hi}) ' + what:<46} {c['coverage']:>9.3f} {mv:>8}  {c['kind']}")
    for eps, ell in ((6.0, 1), (2.0, 2), (1.0, 3)):
        c = pckv_cell(eps, ell, a.runs)
        out["pckv"].append({"epsilon": eps, "ell": ell, **c})
        print(f"{f'pckv eps={eps} ell={ell} frequencies (sample)':<46} {c['coverage']:>9.3f} {c['mse_over_var']:>8.2f}  "
              f"interval (old population variance / MSE: {c['old_population_var_over_mse']:.2f})")


if __name__ == "__main__":
    main()
