"""``ldp amplify``: the central (ε, δ) of n shuffled reports (a trusted shuffler)."""

from __future__ import annotations

import json
import math
import time

from ..simulate import parse_params
from ..registry import build
from ..amplification import amplify
from ..progress import status
from ._common import require_frequency
from .._boundary.workload import check_seconds
from ..progress import status

#: the prediction of an amplify run (seconds = base + per_sqrt_n · √n) and the interactive limit
AMPLIFY_BASE_SECONDS, AMPLIFY_SQRT_SECONDS, AMPLIFY_LIMIT_SECONDS = 10.0, 0.06, 300.0


def cmd_amplify(args) -> int:
    """The central (ε, δ) of a shuffled batch of n reports (see :mod:`ldp_plugin.amplification`)."""
    require_frequency(args.mechanism, "amplify")
    mech = build(args.mechanism, epsilon=args.epsilon, d=args.d, **dict(parse_params(args.param)))
    # the binomial sums of the four bisections grow with sqrt(n) (measured: ~10 s at n = 10^4, ~60 s at 10^6 on a loaded core)
    seconds = check_seconds(AMPLIFY_BASE_SECONDS + AMPLIFY_SQRT_SECONDS * math.sqrt(args.n), what=f"ldp amplify at n={args.n:,}",
                            options="--n (the bound at a smaller batch is valid for any larger one)", limit=AMPLIFY_LIMIT_SECONDS)
    if seconds > 10:
        status(f"ldp amplify: about {seconds:.0f} s for n = {args.n:,} ...")
    t0 = time.perf_counter()
    status(f"ldp amplify: computing the certified bounds for n={args.n:,} (seconds to minutes for large n)")
    out = amplify(mech, args.n, args.delta)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    out["mechanism"] = mech.params()
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        low = "n/a" if out["epsilon_lower"] is None else f"{out['epsilon_lower']:.6g}"
        print(f"ldp amplify: {mech.name}, local epsilon {mech.epsilon}, n = {args.n:,} shuffled reports, delta = {args.delta:g}")
        blanket = "" if out["epsilon_blanket"] is None else f", privacy blanket {out['epsilon_blanket']:.6g}"
        print(f"  central epsilon <= {out['epsilon']:.6g} (upper bound: {out['method']})")
        print(f"  by analysis: variation-ratio {out['epsilon_specific']:.6g}, generic {out['epsilon_generic']:.6g}{blanket}")
        print(f"  exact lower bound for a neighbouring pair: {low}")
        print(f"  parameters p={out['p']:.6g}, beta={out['beta']:.6g}, q={out['q']:.6g}" + ("" if out["gamma"] is None else f", blanket gamma={out['gamma']:.6g}"))
        print(f"  assumption: {out['assumption']}")
    return 0
