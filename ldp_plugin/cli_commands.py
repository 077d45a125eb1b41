"""``ldp federated simulate`` (run from the command table of :mod:`ldp_plugin.cli`). The federated
branch edits this command this round; it moves to ``ldp_plugin/cli/federated.py`` after the merge.
The other commands that lived here are in :mod:`ldp_plugin.cli` (compatibility re-exports below,
removed next round)."""

from __future__ import annotations

import json

from ._errors import LDPParameterError
from .cli.amplify import cmd_amplify  # noqa: F401  (compatibility re-exports)
from .cli.budget import cmd_budget  # noqa: F401
from .cli.collect import cmd_aggregate  # noqa: F401
from .cli.verify import cmd_verify  # noqa: F401
from .simulate import parse_params


def cmd_federated(args) -> int:
    """``ldp federated simulate``: the device and server apps on Flower's simulation engine."""
    import tempfile

    from ldp_plugin.registry import build

    try:
        from .federated.flower import simulate as fed_simulate
    except ImportError:
        raise LDPParameterError("the federated runtime needs Flower: pip install 'ldp-plugin[flower]'") from None
    mech = build(args.mechanism, epsilon=args.epsilon, d=args.d, **dict(parse_params(args.param)))
    if mech.domain_size is None:
        raise LDPParameterError("federated simulate needs a closed-alphabet mechanism (give --d)")
    if args.malformed_nodes > args.nodes:
        raise LDPParameterError(f"--malformed-nodes must be at most --nodes ({args.nodes})")

    def on_round(row):
        if not args.json:
            print(f"round {row['round']}: {row['nodes_asked']} nodes asked, {row['reports_accepted']:,} reports accepted, "
                  f"{row['reports_rejected']:,} rejected {row['rejected_by_reason']}, {row['devices_refused']:,} devices refused "
                  f"({row['seconds']} s)", flush=True)

    with tempfile.TemporaryDirectory(prefix="ldp-devices-") as ledgers:
        out = fed_simulate(nodes=args.nodes, users_per_node=args.users_per_node, mechanism=mech, rounds=args.rounds,
                           device_cap=args.device_cap, malformed_nodes=args.malformed_nodes, seed=args.seed, ledger_dir=ledgers,
                           max_epsilon=args.max_epsilon, min_batch=args.min_batch, on_round=on_round)
    out["mechanism"] = mech.params()
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for row in out["rounds"]:
            if row["estimate"]:
                covered = sum(e["ci_lower"] <= e["truth"] <= e["ci_upper"] for e in row["estimate"])
                print(f"round {row['round']}: {covered}/{len(row['estimate'])} true frequencies inside their 95% intervals")
        print(f"{out['seconds']} s in all (Flower simulation engine, {args.nodes} SuperNodes)")
    return 0
