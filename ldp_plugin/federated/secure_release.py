"""The server side of a secure sum after SecAgg+ (no Flower import): from the exact integer sum
and the nodes that were summed to the released estimate and its central ``(ε, δ)``.

**Who was summed.** The summed nodes are those whose masked vectors SecAgg+ collected (a node
that dropped later is still in the sum; one that dropped before is not). The accounting is taken
for exactly that set:

* ``"noise"``: the noise present is Skellam(n_summed · μ_dev) (closed under sums); its ``(ε, δ)``
  (:meth:`SecureDerivation.noise_release`) is reported — never below what the devices charged,
  since a released sum holds at least ``t`` nodes. A sum over fewer than ``t`` nodes (impossible
  with an honest SecAgg+ run) is refused: no estimate.
* ``"local"``: the central ``(ε, δ)`` of the shuffle bound at the number of reports summed (the
  sum's last entry), beside each report's ε₀.

**Estimates.** ``"noise"``: frequency = noisy count / n, variance ``2 μ n_summed / n²`` (Skellam),
normal interval. ``"local"``: the k-RR unbiased estimator ``(c/n − q*)/(p* − q*)`` with its variance
``[θ p*(1 − p*) + (1 − θ) q*(1 − q*)] / (n (p* − q*)²)``.

**Small-count thresholding** (optional ``min_count``): bins whose released count is below the
threshold are reported as suppressed (estimate 0, no interval). It is a function of the released
sum only — post-processing — so it costs no privacy budget.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any, Optional, Sequence

import numpy as np

from .._errors import LDPParameterError
from ..amplification import amplify
from .secure_query import SecureSumQuery

__all__ = ["release_sum"]


def release_sum(q: SecureSumQuery, total: Sequence[int], summed_nodes: Sequence[int], *, min_count: Optional[int] = None,
                confidence: float = 0.95) -> dict:
    """The release of one secure sum (module docstring): ``status`` (``released``,
    ``below_minimum``, ``empty``), the summed node ids, the central ``(ε, δ)``, one row per bin."""
    dv = q.derive()
    total = np.asarray(total, dtype=np.int64)
    if total.shape != (q.d + 1,):
        raise LDPParameterError(f"the secure sum must have d + 1 = {q.d + 1} entries")
    nodes = sorted(int(n) for n in summed_nodes)
    row: dict = {"query_id": q.query_id, "option": q.option, "d": q.d, "nodes_sampled": q.nodes, "nodes_summed": len(nodes),
                 "summed_node_ids": nodes, "threshold": dv.threshold, "config": dv.config.to_dict(), "estimate": None, "central": None}
    if len(nodes) < dv.threshold:
        return {**row, "status": "below_minimum"}
    n = int(total[q.d])
    row["users_summed"] = n
    if n <= 0:
        return {**row, "status": "empty"}
    counts = total[: q.d].astype(np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    if q.option == "noise":
        rel = dv.noise_release(len(nodes), q.delta)
        row["central"] = {**rel.to_dict(), "n_summed": len(nodes), "mu_device": float(dv.mu_device)}
        est = counts / n
        se = np.full(q.d, np.sqrt(2 * rel.mu) / n)
    else:
        mech = dv.mechanism
        p, qs = float(mech.p_star_exact), float(mech.q_star_exact)
        est = (counts / n - qs) / (p - qs)
        th = np.clip(est, 0.0, 1.0)
        se = np.sqrt((th * p * (1 - p) + (1 - th) * qs * (1 - qs)) / (n * (p - qs) ** 2))
        amp = amplify(mech, n, q.delta) if n >= 2 else None
        row["central"] = {"epsilon_local": float(mech.epsilon), "epsilon": None if amp is None else amp["epsilon"], "delta": q.delta,
                          "n_reports": n, "method": None if amp is None else amp["method"],
                          "argument": "the sum of one-hot reports is a function of their multiset: a post-processing of the shuffled batch"}
    rows = []
    for i in range(q.d):
        suppressed = min_count is not None and counts[i] < min_count
        rows.append({"item": i, "count": int(counts[i]), "estimate": 0.0 if suppressed else float(est[i]),
                     "std_error": None if suppressed else float(se[i]), "ci_lower": None if suppressed else float(est[i] - z * se[i]),
                     "ci_upper": None if suppressed else float(est[i] + z * se[i]), "suppressed": bool(suppressed)})
    return {**row, "status": "released", "estimate": rows, "min_count": min_count}
