"""``ldp amplify``: the central (ε, δ) of n shuffled reports (a trusted shuffler)."""

from __future__ import annotations

import json

from ..simulate import parse_params
from ..registry import build
from ..amplification import amplify
from ..progress import status
from ._common import require_frequency


def cmd_amplify(args) -> int:
    """The central (ε, δ) of a shuffled batch of n reports (see :mod:`ldp_plugin.amplification`)."""
    import time



    require_frequency(args.mechanism, "amplify")
    mech = build(args.mechanism, epsilon=args.epsilon, d=args.d, **dict(parse_params(args.param)))
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
