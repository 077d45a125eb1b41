"""Issue 37's anchors, measured against the analytic (or predicted) error on the same data.

    python3 -P benchmarks/families.py [--quick] [--sections ...] [--range-setting B,N,RUNS_HH,RUNS_HAAR ...]
                                      [--json benchmarks/results/families.json]

* distributions: Square Wave + EMS vs the bucketed oracle (bucket rule), W1 on Beta(2, 5) and on a
  bimodal mixture, n = 10^5 (mean of 5 seeded runs), beside ``ldp choose``'s prediction;
* ranges: hierarchical histogram and HaarHRR, four ranges of width B/4 (one unaligned), B in
  {256, 4096}: measured variance over R runs of the same users vs the exact analytic one, the flat
  OUE sum's analytic variance, the bias; quantile interval coverage (p50, p95);
* several attributes: SMP / SPL / RS+FD, 5 attributes, k = 10, ε = 2, n = 20,000: per-attribute
  MSE vs analytic, interval coverage, SMP against its sampled users' own frequencies, and the
  analytic SPL/SMP ratio for each frequency oracle (k-RR, OUE);
* key-value: PCKV, d = 8, ℓ = 2, ε = 2: frequency and mean bias (z), MSE vs analytic, coverage;
* means: Piecewise / Hybrid / Duchi on a clipped log-normal at ε = 1, 2, 4, both targets (the
  population one on fresh users): coverage and mean standard error over the estimates' real spread.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.choose.distribution import predicted_w1, w1_distance, bucket_rule
from ldp_plugin.mechanisms.hierarchy import flat_range_variance


def fine_truth(x, cells=1024):
    return np.bincount(np.minimum((x * cells).astype(int), cells - 1), minlength=cells) / x.size


def distributions(runs):
    gen = np.random.default_rng(1)
    n = 100_000
    data = {"beta(2,5)": gen.beta(2, 5, n),
            "bimodal": np.clip(np.where(gen.random(n) < 0.5, gen.normal(0.25, 0.05, n), gen.normal(0.75, 0.05, n)), 0, 1)}
    shape = {"beta(2,5)": "smooth", "bimodal": "bimodal"}
    rows = []
    for name, x in data.items():
        truth = fine_truth(x)
        for eps in (0.5, 1.0, 2.0, 4.0):
            sw = ldp.SquareWave(epsilon=eps)
            B = bucket_rule(eps, n, reference=shape[name])
            bo = ldp.BucketedOracle(epsilon=eps, buckets=B)
            t0 = time.perf_counter()
            w_sw = np.mean([w1_distance(sw.estimate(sw.randomize(x, rng=s), replicates=0).theta, truth) for s in range(runs)])
            t1 = time.perf_counter()
            w_bo = np.mean([w1_distance(bo.estimate(bo.randomize(x, rng=s), replicates=0).theta, truth) for s in range(runs)])
            rows.append({"data": name, "epsilon": eps, "sw_w1": w_sw, "sw_predicted": predicted_w1(sw, n, reference=shape[name]),
                         "bucketed_B": B, "bucketed_w1": w_bo, "bucketed_predicted": predicted_w1(bo, n, reference=shape[name]),
                         "sw_seconds_per_run": (t1 - t0) / runs})
            r = rows[-1]
            print(f"  {name:<9} eps={eps:<4} SW+EMS W1 {r['sw_w1']:.5f} (predicted {r['sw_predicted']:.5f})   "
                  f"bucketed B={B:<3} W1 {r['bucketed_w1']:.5f} (predicted {r['bucketed_predicted']:.5f})", flush=True)
    return rows


RANGES = ((0.1234, 0.3734), (0.0, 0.25), (0.3, 0.55), (0.5, 0.75))  # width B/4: one unaligned, three others


def ranges(quick, settings=None):
    """Per (B, n, runs per mechanism): the same users randomized R times (seeds 0..R-1); each of
    the four ranges of width B/4 gives measured/analytic variance, with the sampling sd of a
    variance ratio, sqrt(2/(R - 1)); the pooled ratio is their mean (they are correlated, so its sd
    is between sd/2 and sd)."""
    rows = []
    if settings is None:
        settings = ((256, 20_000, 200, 1000), (4096, 100_000, 10 if quick else 30, 60 if quick else 200))
    for B, n, R_hh, R_haar in settings:
        x = np.random.default_rng(0).beta(2, 5, n)
        truth = np.quantile(x, [0.5, 0.95])
        k_true = np.minimum((x * B).astype(int), B - 1)
        th = np.bincount(k_true, minlength=B) / n
        for m, R in ((ldp.HierarchicalHistogram(epsilon=1.0, buckets=B), R_hh), (ldp.HaarHRR(epsilon=1.0, buckets=B), R_haar)):
            if R < 2:
                continue
            vals, cover = [], []
            t0 = time.perf_counter()
            for s in range(R):
                e = m.estimate(m.randomize(x, rng=s))
                vals.append([e.range_fraction(lo, hi).fraction for lo, hi in RANGES])
                if s < 200:
                    q = e.quantiles([0.5, 0.95])
                    cover.append([r["ci_lower"] <= t <= r["ci_upper"] for r, t in zip(q, truth)])
            sec = (time.perf_counter() - t0) / R
            vals = np.array(vals)
            per_range = []
            for i, (lo, hi) in enumerate(RANGES):
                analytic = m.analytic_range_variance(x, lo, hi)
                a = np.clip(np.minimum(np.arange(B) + 1, hi * B) - np.maximum(np.arange(B), lo * B), 0, 1)
                flat = flat_range_variance(1.0, n, int((a > 0).sum()), theta=th[a > 0])
                measured = float(np.var(vals[:, i], ddof=1))
                per_range.append({"lo": lo, "hi": hi, "measured_var": measured, "analytic_var": analytic, "ratio": measured / analytic,
                                  "flat_over_analytic": flat / analytic, "bias_z": float((vals[:, i].mean() - a @ th) / math.sqrt(measured / R))})
            ratio = float(np.mean([r["ratio"] for r in per_range]))
            rows.append({"mechanism": m.name, "B": B, "n": n, "runs": R, "ranges": per_range, "ratio": ratio,
                         "ratio_sd_one_range": math.sqrt(2 / (R - 1)), "flat_over_analytic": [r["flat_over_analytic"] for r in per_range],
                         "quantile_coverage": np.mean(cover, axis=0).tolist(), "quantile_runs": len(cover), "seconds_per_run": sec})
            r = rows[-1]
            print(f"  {m.name:<22} B={B:<5} n={n:<6} {R} runs: measured/analytic per range "
                  + " ".join(f"{p['ratio']:.3f}" for p in per_range) + f" (each ± {r['ratio_sd_one_range']:.3f}), pooled {ratio:.3f}; "
                  f"flat/ours {min(r['flat_over_analytic']):.1f}-{max(r['flat_over_analytic']):.1f}x; bias |z| max "
                  f"{max(abs(p['bias_z']) for p in per_range):.2f}; quantile coverage p50 {r['quantile_coverage'][0]:.3f} "
                  f"p95 {r['quantile_coverage'][1]:.3f} ({len(cover)} runs); {sec:.3f} s/run", flush=True)
    return rows


def attributes(runs):
    A, K, eps, n = 5, 10, 2.0, 20_000
    gen = np.random.default_rng(0)
    theta = [np.r_[0.3, np.full(K - 1, 0.7 / (K - 1))]] + [np.full(K, 1 / K)] * (A - 1)
    x = np.stack([gen.choice(K, n, p=theta[j]) for j in range(A)], 1)
    truth = [np.bincount(x[:, j], minlength=K) / n for j in range(A)]
    rows = []
    for m in (ldp.SMP(epsilon=eps, domains=(K,) * A), ldp.SPL(epsilon=eps, domains=(K,) * A), ldp.RSFD(epsilon=eps, domains=(K,) * A),
              ldp.RSFD.from_attribute_epsilon(eps, domains=(K,) * A)):
        mse, cov, own = [], [], []
        t0 = time.perf_counter()
        for s in range(runs):
            r = m.randomize(x, rng=s)
            e = m.estimate(r)
            mse.append(np.mean([np.sum((a.raw - truth[j]) ** 2) for j, a in enumerate(e.attributes)]))
            if m.name == "smp":  # against the sampled users' own frequencies (the oracle's error alone)
                att = np.asarray(r[0])
                own.append(np.mean([np.sum((a.raw - np.bincount(x[att == j, j], minlength=K) / (att == j).sum()) ** 2)
                                    for j, a in enumerate(e.attributes)]))
            cov.append(np.mean([np.mean((a.ci_lower <= truth[j]) & (truth[j] <= a.ci_upper)) for j, a in enumerate(e.attributes)]))
        sec = (time.perf_counter() - t0) / runs
        analytic = m.analytic_mse(n, theta=truth) if m.name == "smp" else m.analytic_mse(n)
        rows.append({"mechanism": m.name, "epsilon_user": m.epsilon, "mse": float(np.mean(mse)), "analytic": analytic,
                     "ratio": float(np.mean(mse)) / analytic, "coverage": float(np.mean(cov)), "seconds_per_run": sec,
                     "mse_own": float(np.mean(own)) if own else None})
        r = rows[-1]
        print(f"  {m.name:<5} user eps {m.epsilon:.3f}: per-attribute MSE {r['mse']:.3e} (analytic {analytic:.3e}, ratio {r['ratio']:.3f}) "
              f"coverage {r['coverage']:.3f}", flush=True)
    smp, spl = rows[0], rows[1]
    print(f"  measured SPL / SMP: {spl['mse'] / smp['mse']:.1f}x against all users, {spl['mse'] / smp['mse_own']:.1f}x against SMP's "
          f"sampled users' own frequencies (SMP own MSE {smp['mse_own']:.3e})", flush=True)
    rows.append(attribute_oracles(A, K, eps, n, truth))
    return rows


def attribute_oracles(A, K, eps, n, truth):
    """The analytic per-attribute MSE (summed over items, fixed data) of SPL and SMP with each
    frequency oracle, on the oracle-only basis (SMP against its sampled users' own frequencies)
    and against all users (SMP's subsampling term added), and the issue's low-frequency ratio."""
    def oracle_mse(o, users):
        return float(np.mean([o.analytic_mse(int(round(users)), theta=t) for t in truth]))

    sub = float(np.mean([np.sum(t * (1 - t)) * (A - 1) / n for t in truth]))  # SMP's subsampling term
    spl = {"krr": oracle_mse(ldp.KRR(epsilon=eps / A, d=K), n), "oue": oracle_mse(ldp.OUE(epsilon=eps / A, d=K), n)}
    smp = {"krr": oracle_mse(ldp.KRR(epsilon=eps, d=K), n / A), "oue": oracle_mse(ldp.OUE(epsilon=eps, d=K), n / A)}
    e1, e2 = math.exp(eps / A), math.exp(eps)
    low_freq = ((e1 + K - 2) / (e1 - 1) ** 2) / (A * (e2 + K - 2) / (e2 - 1) ** 2)
    out = {"spl": spl, "smp": smp, "smp_subsampling": sub, "issue_low_frequency_krr_ratio": low_freq}
    for a in ("krr", "oue"):
        for b in ("krr", "oue"):
            out[f"spl_{a}_over_smp_{b}"] = {"oracle_only": spl[a] / smp[b], "all_users": spl[a] / (smp[b] + sub)}
    print(f"  analytic per-attribute MSE x n: SPL k-RR@eps/A {spl['krr'] * n:.1f}, SPL OUE@eps/A {spl['oue'] * n:.1f}; "
          f"SMP k-RR@eps {smp['krr'] * n:.1f}, SMP OUE@eps {smp['oue'] * n:.1f} (+ subsampling {sub * n:.1f} against all users)", flush=True)
    for a in ("krr", "oue"):
        for b in ("krr", "oue"):
            r = out[f"spl_{a}_over_smp_{b}"]
            print(f"    SPL[{a}] / SMP[{b}]: {r['oracle_only']:.1f}x oracle-only, {r['all_users']:.1f}x against all users", flush=True)
    print(f"    the issue's low-frequency k-RR ratio (e^e'+k-2)/(e^e'-1)^2 / (A (e^e+k-2)/(e^e-1)^2): {low_freq:.1f}x", flush=True)
    return out


def key_values(runs):
    D, ELL, n, eps = 8, 2, 20_000, 2.0
    gen = np.random.default_rng(0)
    hold = gen.random((n, D)) < np.linspace(0.05, 0.35, D)
    mu = np.linspace(-0.6, 0.6, D)
    keys, vals, off = [], [], [0]
    for i in range(n):
        ks = np.flatnonzero(hold[i])[:ELL]
        keys += ks.tolist()
        vals += np.clip(mu[ks] + gen.normal(0, 0.3, ks.size), -1, 1).tolist()
        off.append(len(keys))
    k, v = np.array(keys), np.array(vals)
    batch = ldp.KeyValueBatch(k, v, np.array(off))
    f_true = np.bincount(k, minlength=D) / n
    m_true = np.bincount(k, weights=v, minlength=D) / np.bincount(k, minlength=D)
    m = ldp.PCKV(epsilon=eps, d=D, ell=ELL)
    F, M, cf, cm, sf = [], [], [], [], []
    for s in range(runs):
        e = m.estimate(m.randomize(batch, rng=s))
        F.append(e.frequency)
        M.append(e.mean)
        sf.append(e.frequency_se ** 2)
        cf.append((e.frequency_ci_lower <= f_true) & (f_true <= e.frequency_ci_upper))
        cm.append((e.mean_ci_lower <= m_true) & (m_true <= e.mean_ci_upper))
    F, M = np.array(F), np.array(M)
    out = {"frequency_mse": float(np.mean(np.sum((F - f_true) ** 2, axis=1))), "frequency_mse_plugin": float(np.mean(np.sum(sf, axis=1))),
           "mean_mse": float(np.mean(np.sum((M - m_true) ** 2, axis=1))),
           "max_abs_z_frequency": float(np.abs((F.mean(0) - f_true) / (F.std(0, ddof=1) / math.sqrt(runs))).max()),
           "max_abs_z_mean": float(np.abs((M.mean(0) - m_true) / (M.std(0, ddof=1) / math.sqrt(runs))).max()),
           "coverage_frequency": float(np.mean(cf)), "coverage_mean": float(np.mean(cm))}
    print(f"  pckv d={D} ell={ELL} eps={eps}: frequency MSE {out['frequency_mse']:.3e} (plug-in analytic {out['frequency_mse_plugin']:.3e}), "
          f"mean MSE {out['mean_mse']:.3e}; max |z| of the bias: frequency {out['max_abs_z_frequency']:.2f}, mean {out['max_abs_z_mean']:.2f}; "
          f"coverage frequency {out['coverage_frequency']:.3f}, mean {out['coverage_mean']:.3f}", flush=True)
    return out


def means(runs, epsilons=(1.0, 2.0, 4.0)):
    """A log-normal(0, 1) clipped to [0, 10], n = 10,000. ``target="sample"``: the same users
    randomized ``runs`` times, coverage of their own mean; ``target="population"``: fresh users
    each run, coverage of the population mean (exact: ``e^{1/2}Φ(ln 10 − 1) + 10(1 − Φ(ln 10))``).
    Width: the mean standard error over the estimates' real spread (sd over the runs)."""
    from statistics import NormalDist

    n, c = 10_000, 10.0
    Phi = NormalDist().cdf
    pop_mean = math.exp(0.5) * Phi(math.log(c) - 1) + c * (1 - Phi(math.log(c)))
    x = np.clip(np.random.default_rng(0).lognormal(0, 1, n), 0, c)
    rows = []
    for eps in epsilons:
        for cls in (ldp.Piecewise, ldp.Hybrid, ldp.Duchi):
            m = cls(epsilon=eps, lower=0, upper=c)
            for target in ("sample", "population"):
                est = []
                for s in range(runs):
                    xs = x if target == "sample" else np.clip(np.random.default_rng(10_000 + s).lognormal(0, 1, n), 0, c)
                    est.append(m.estimate(m.randomize(xs, rng=s), target=target))
                truth = x.mean() if target == "sample" else pop_mean
                means_ = np.array([e.mean for e in est])
                ses = np.array([e.std_error for e in est])
                cover = float(np.mean([e.ci_lower <= truth <= e.ci_upper for e in est]))
                rows.append({"mechanism": m.name, "epsilon": eps, "target": target, "coverage": cover,
                             "coverage_sd": math.sqrt(0.95 * 0.05 / runs), "se_over_real": float(ses.mean() / means_.std(ddof=1)),
                             "bias_z": float((means_.mean() - truth) / (means_.std(ddof=1) / math.sqrt(runs)))})
                r = rows[-1]
                print(f"  eps={eps:<4} {m.name:<10} target={target:<10} coverage {cover:.3f}  mean se / real spread "
                      f"{r['se_over_real']:.3f}  bias z {r['bias_z']:+.2f}", flush=True)
    return rows


SECTIONS = ("distributions", "ranges", "attributes", "key_value", "means")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--range-setting", action="append", default=None, metavar="B,N,RUNS_HIERARCHY,RUNS_HAAR",
                    help="a range setting (repeatable); default: 256,20000,200,1000 and 4096,100000,30,200")
    args = ap.parse_args()
    out = {}
    if "distributions" in args.sections:
        print("distributions (W1, mean of 5 runs):", flush=True)
        out["distributions"] = distributions(5)
    if "ranges" in args.sections:
        print("ranges (width B/4, eps = 1):", flush=True)
        settings = None if args.range_setting is None else [tuple(int(v) for v in r.split(",")) for r in args.range_setting]
        out["ranges"] = ranges(args.quick, settings)
    if "attributes" in args.sections:
        print("several attributes (5 x k=10, eps = 2, n = 20,000, 200 runs):", flush=True)
        out["attributes"] = attributes(200)
    if "key_value" in args.sections:
        print("key-value (200 runs):", flush=True)
        out["key_value"] = key_values(200)
    if "means" in args.sections:
        print("means on a clipped log-normal (eps = 1, 2, 4, n = 10,000, 1,000 runs):", flush=True)
        out["means"] = means(1000)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
