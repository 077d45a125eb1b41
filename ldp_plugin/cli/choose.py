"""``ldp choose``: rank the applicable mechanisms (frequency oracles; ``--family mean|longitudinal``)."""

from __future__ import annotations

import json

from .._errors import LDPParameterError
from ._common import FINITE as _finite, PROBABILITY as _prob, float_in, refuse_unused
from .families import add_distribution_choose_arguments, cmd_choose_distribution
from ..choose import rank_mechanisms, rank_longitudinal_mechanisms, rank_mean_mechanisms


#: the options each family's ranking reads (another family's option is refused, not ignored)
FAMILY_OPTIONS = {
    "frequency": {"--d", "--epsilon", "--m", "--n", "--metric", "--delta", "--poison-fraction"},
    "mean": {"--epsilon", "--n", "--lower", "--upper"},
    "longitudinal": {"--d", "--epsilon-perm", "--epsilon-1", "--n", "--rounds", "--change-prob"},
    "distribution": {"--epsilon", "--n", "--lower", "--upper", "--buckets", "--shape", "--prior"},
}


def cmd_choose(args) -> int:
    """Rank the applicable mechanisms by predicted error and recommend one."""
    used = FAMILY_OPTIONS[args.family]
    refuse_unused(args, set().union(*FAMILY_OPTIONS.values()) - used, f"by ldp choose --family {args.family}")
    if args.family != "frequency":

        return cmd_choose_series(args)
    for opt, v in (("--d", args.d), ("--epsilon", args.epsilon)):
        if v is None:
            raise LDPParameterError(f"ldp choose needs {opt} (frequency oracles)")

    ranked = rank_mechanisms(args.d, args.epsilon, n=args.n, m=args.m, metric=args.metric, delta=args.delta,
                             poison_fraction=args.poison_fraction)
    rows = [c.to_dict() for c in ranked]
    out = {"d": args.d, "epsilon": args.epsilon, "m": args.m, "n": args.n, "metric": args.metric, "delta": args.delta,
           "recommended": rows[0], "ranking": rows}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"ldp choose: d={args.d}, epsilon={args.epsilon}, m={args.m}, n={args.n:,}, metric={args.metric}")
        for i, r in enumerate(rows):
            mark = "->" if i == 0 else "  "
            central = "" if r["central_epsilon"] is None else f"   shuffled: central eps {r['central_epsilon']:.4g}"
            central = ("   attacker n/a" if r["attacker_success"] is None else f"   attacker {r['attacker_success']:.2f}") + central
            central = ("" if r["worst_item_se"] is None else f"   worst item s.e. {r['worst_item_se']:.3g}") + central
            central = ("   poison gain n/a" if r["worst_case_gain"] is None else f"   poison gain {r['worst_case_gain']:.3g}") + central
            print(f"{mark} {r['mechanism']:<32} {str(r['params']):<28} predicted {args.metric} {r['predicted_error']:.4g}"
                  f"   report {r['report_bits']} bits, client {r['client_cost']}, server {r['server_cost']}{central}")
        print(f"   poison gain: the largest expected shift of one item's estimate when a fraction {args.poison_fraction:g} of the reports are fakes "
              "(maximal-gain attack, Cao-Jia-Gong 2021; ldp_plugin.robust)")
        if args.delta is not None:
            print(f"   central eps: {args.n:,} reports through a trusted shuffler, delta = {args.delta:g} (certified upper bound; `ldp amplify`)")
    return 0


def add_choose_arguments(ch, epsilon, int_in) -> None:
    """``ldp choose --family mean|longitudinal`` and their options."""
    ch.add_argument("--family", choices=["frequency", "mean", "longitudinal", "distribution"], default="frequency",
                    help="frequency oracles (default), numeric means, longitudinal protocols, or numeric distributions")
    ch.add_argument("--epsilon-perm", type=epsilon, default=None, help="longitudinal: epsilon of the memoized layer")
    ch.add_argument("--epsilon-1", type=epsilon, default=None, help="longitudinal: epsilon of one report")
    ch.add_argument("--rounds", type=int_in(1, 10_000, "an integer"), default=20, help="longitudinal: collections (lifetime cost), in [1, 10000]")
    ch.add_argument("--change-prob", type=_prob, default=0.2, help="longitudinal: probability a value is redrawn before a round")
    ch.add_argument("--poison-fraction", type=float_in(0, 1, lo_open=True, hi_open=True), default=0.01,
                    help="frequency: fraction of fake reports for the worst-case poisoning gain column (default 0.01)")
    ch.add_argument("--lower", type=_finite, default=0.0, help="mean: declared lower end")
    ch.add_argument("--upper", type=_finite, default=1.0, help="mean: declared upper end")
    add_distribution_choose_arguments(ch, int_in)


def cmd_choose_series(args) -> int:
    if args.family == "distribution":
        return cmd_choose_distribution(args)
    if args.family == "mean":
        if args.epsilon is None:
            raise LDPParameterError("ldp choose --family mean needs --epsilon")
        if not args.lower < args.upper:
            raise LDPParameterError(f"--lower must be below --upper (got {args.lower!r} and {args.upper!r})")
        ranked = rank_mean_mechanisms(args.epsilon, n=args.n, lower=args.lower, upper=args.upper)
        head = f"ldp choose: means, epsilon={args.epsilon}, n={args.n:,}, values in [{args.lower}, {args.upper}]"
    else:
        for opt, v in (("--d", args.d), ("--epsilon-perm", args.epsilon_perm), ("--epsilon-1", args.epsilon_1)):
            if v is None:
                raise LDPParameterError(f"ldp choose --family longitudinal needs {opt}")
        if args.d > 1 << 16:
            raise LDPParameterError(f"--d must be in [2, 2^16] for longitudinal protocols (got {args.d})")
        ranked = rank_longitudinal_mechanisms(args.d, args.epsilon_perm, args.epsilon_1, n=args.n, rounds=args.rounds, change_prob=args.change_prob)
        head = (f"ldp choose: longitudinal, d={args.d}, epsilon_perm={args.epsilon_perm}, epsilon_1={args.epsilon_1}, n={args.n:,}, "
                f"{args.rounds} rounds, change probability {args.change_prob}")
    rows = [c.to_dict() for c in ranked]
    if args.json:
        print(json.dumps({"family": args.family, "recommended": rows[0], "ranking": rows}, indent=1))
        return 0
    print(head)
    for i, r in enumerate(rows):
        if "lifetime_value_worst" not in r or r["lifetime_value_worst"] is None:
            life = ""
        else:
            user = "unbounded" if r["lifetime_worst"] is None else f"{r['lifetime_worst']:.3g}"
            life = (f"   lifetime eps: user level {user}; value level expected {r['lifetime_value_expected']:.3g}, "
                    f"worst {r['lifetime_value_worst']:.3g}")
        print(f"{'->' if i == 0 else '  '} {r['mechanism']:<13} {str(r['params']):<12} predicted error {r['predicted_error']:.4g} "
              f"(worst input {r['worst_error']:.4g}){life}")
    return 0
