"""Wang et al. (arXiv 2016) Table 1 at d <= 6: the independent-count model.

For k-RR (MRR) and the k-subset mechanism the report of a user supports a *set* of items whose
counts are jointly distributed (k-RR: they sum to n exactly). A simulation that instead draws
each item's count independently, c_i ~ Bin(n_i, p*) + Bin(n − n_i, q*), has the same per-item
variances but loses that constraint, and after projection onto the simplex its error is about
(d−1)/d of the real mechanism's. This script runs both (n = 10,000, 100 repeats, Dirichlet(1)
data, projection, errors against the users' empirical distribution) and prints, per cell,
ours / paper and independent-model / paper.

Usage: python benchmarks/table1_independent.py [--repeats 100]
"""

from __future__ import annotations

import argparse

import numpy as np

from ldp_plugin.estimation import debias, project_simplex
from ldp_plugin.registry import build
from ldp_plugin.simulate import simulate

from table1 import TABLE1


def independent_model(mech, d, n, repeats, gen):
    p, q = mech.p_star, mech.q_star
    l2 = l1 = 0.0
    for _ in range(repeats):
        theta = gen.dirichlet(np.ones(d))
        counts = np.bincount(gen.choice(d, size=n, p=theta), minlength=d)
        emp = counts / n
        c = gen.binomial(counts, p) + gen.binomial(n - counts, q)
        est = project_simplex(debias(c, n, p, q))
        l2 += float(((est - emp) ** 2).sum())
        l1 += float(np.abs(est - emp).sum())
    return l2 / repeats, l1 / repeats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=100)
    a = ap.parse_args()
    gen = np.random.default_rng(1)
    print(f"{'d':>2} {'eps':>5} {'mech':<6} {'ours/paper l2':>14} {'indep/paper l2':>15} {'ours/paper l1':>14} {'indep/paper l1':>15}")
    within = {"ours": 0, "indep": 0}
    total = 0
    for (d, eps), row in TABLE1.items():
        if d > 6:
            continue
        for label, name, kw, col in (("MRR", "krr", {}, 1), ("k*SS", "k-subset", {"k": row[8]}, 2)):
            mech = build(name, epsilon=eps, d=d, **kw)
            r = simulate(mech, n=10_000, repeats=a.repeats, seed=d * 100 + int(eps * 100), postprocess="projection")
            i2, i1 = independent_model(mech, d, 10_000, a.repeats, gen)
            p2, p1 = row[col], row[col + 4]
            o2, o1 = r.mean_l2_squared / p2, r.mean_l1 / p1
            print(f"{d:>2} {eps:>5} {label:<6} {o2:>14.3f} {i2 / p2:>15.3f} {o1:>14.3f} {i1 / p1:>15.3f}", flush=True)
            total += 2
            within["ours"] += (abs(o2 - 1) <= 0.1) + (abs(o1 - 1) <= 0.1)
            within["indep"] += (abs(i2 / p2 - 1) <= 0.1) + (abs(i1 / p1 - 1) <= 0.1)
    print(f"cells within 10% of the paper: ours {within['ours']}/{total}, independent-count model {within['indep']}/{total}")


if __name__ == "__main__":
    main()
