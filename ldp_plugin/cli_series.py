"""``ldp longitudinal simulate`` and ``ldp mean simulate`` (see :mod:`ldp_plugin.series`)."""

from __future__ import annotations

import json

from ._errors import LDPParameterError


from .cli_types import FINITE as _finite, PROBABILITY as _prob  # noqa: E402


def add_parsers(sub, parser_class, int_in, epsilon, seed) -> None:
    from .series import LONGITUDINAL_NAMES, MEAN_NAMES

    lg = sub.add_parser("longitudinal", help="repeated collections from the same users (memoized protocols, lifetime spend)")
    lsub = lg.add_subparsers(dest="longitudinal_command", required=True, parser_class=parser_class)
    ls = lsub.add_parser("simulate", help="simulate T rounds with changing values: per-round MSE vs analytic, per-user lifetime spend")
    ls.add_argument("--mechanism", required=True, choices=LONGITUDINAL_NAMES, help="the longitudinal protocol")
    ls.add_argument("--d", type=int_in(2, 1 << 16, "an integer domain size"), required=True, help="domain size, in [2, 2^16]")
    ls.add_argument("--epsilon-perm", type=epsilon, required=True, help="epsilon of the memoized permanent layer (> 0)")
    ls.add_argument("--epsilon-1", type=epsilon, required=True, help="epsilon of one report (below --epsilon-perm; dbitflip ignores it)")
    ls.add_argument("--rounds", type=int_in(1, 10_000, "an integer"), required=True, help="collections, in [1, 10000]")
    ls.add_argument("--change-prob", type=_prob, required=True, help="probability a user's value is redrawn before a round, in [0, 1]")
    ls.add_argument("--n", type=int_in(2, 10**7, "an integer"), required=True, help="users, in [2, 10^7]")
    ls.add_argument("--repeats", type=int_in(1, 1000, "an integer"), default=1, help="independent populations averaged, in [1, 1000]")
    ls.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="g=2|optimal (loloha), d_bits=K (dbitflip)")
    ls.add_argument("--seed", type=seed, default=0, help="seed of the data, keys and randomization (simulation only)")
    ls.add_argument("--json", action="store_true", help="one JSON document on stdout")
    lg.set_defaults(func=cmd_longitudinal)

    mn = sub.add_parser("mean", help="numeric means under LDP (Duchi, Piecewise, Hybrid, 1BitMean)")
    msub = mn.add_subparsers(dest="mean_command", required=True, parser_class=parser_class)
    ms = msub.add_parser("simulate", help="repeated randomizations of one population: MSE vs analytic, interval coverage")
    ms.add_argument("--mechanism", required=True, choices=MEAN_NAMES, help="the mean mechanism")
    ms.add_argument("--epsilon", type=epsilon, required=True, help="epsilon per user (> 0)")
    ms.add_argument("--n", type=int_in(2, 10**8, "an integer"), required=True, help="users, in [2, 10^8]")
    ms.add_argument("--repeats", type=int_in(1, 10**5, "an integer"), default=200, help="randomizations of the population, in [1, 10^5]")
    ms.add_argument("--lower", type=_finite, default=0.0, help="declared lower end of the values")
    ms.add_argument("--upper", type=_finite, default=1.0, help="declared upper end of the values")
    ms.add_argument("--seed", type=seed, default=0, help="seed of the data and randomization (simulation only)")
    ms.add_argument("--json", action="store_true", help="one JSON document on stdout")
    mn.set_defaults(func=cmd_mean)


def cmd_longitudinal(args) -> int:
    from .cli_commands import parse_params
    from .series import build_longitudinal, simulate_longitudinal

    params = dict(parse_params(args.param))
    mech = build_longitudinal(args.mechanism, d=args.d, epsilon_perm=args.epsilon_perm, epsilon_1=args.epsilon_1, **params)
    out = simulate_longitudinal(mech, rounds=args.rounds, change_prob=args.change_prob, n=args.n, seed=args.seed,
                                repeats=args.repeats, progress=False)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"ldp longitudinal simulate: {args.mechanism}, d={args.d}, epsilon_perm={args.epsilon_perm}, epsilon_1={args.epsilon_1}, "
          f"{args.rounds} rounds, change probability {args.change_prob}, n={args.n:,} x {args.repeats} population(s)")
    for r in out["rounds"]:
        print(f"  round {r['round']:>4}: mse {r['mse']:.4e}   analytic {r['analytic_mse']:.4e}")
    print(f"  mean mse {out['mse']:.4e} = {out['mse_ratio']:.3f} x analytic")
    print(f"  lifetime spend per user: max {out['max_user_spend']:g}, mean {out['mean_user_spend']:.3g} (protocol bound {out['spend_bound']:g})")
    return 0


def cmd_mean(args) -> int:
    from .series import build_mean, simulate_mean

    if not args.lower < args.upper:
        raise LDPParameterError(f"--lower must be below --upper (got {args.lower!r} and {args.upper!r})")
    mech = build_mean(args.mechanism, epsilon=args.epsilon, lower=args.lower, upper=args.upper)
    out = simulate_mean(mech, n=args.n, repeats=args.repeats, seed=args.seed)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"ldp mean simulate: {args.mechanism}, epsilon={args.epsilon}, n={args.n:,}, {args.repeats} repeats on [{args.lower}, {args.upper}]")
    print(f"  mse {out['mse']:.4e} (analytic {out['analytic_mse']:.4e}, ratio {out['mse'] / out['analytic_mse']:.3f})")
    print(f"  {out['confidence']:.0%} interval covered the true mean {out['true_mean']:.6g} in {out['coverage']:.1%} of repeats")
    return 0


def add_choose_arguments(ch, epsilon, int_in) -> None:
    """``ldp choose --family mean|longitudinal`` and their options."""
    ch.add_argument("--family", choices=["frequency", "mean", "longitudinal", "distribution"], default="frequency",
                    help="frequency oracles (default), numeric means, longitudinal protocols, or numeric distributions")
    ch.add_argument("--epsilon-perm", type=epsilon, default=None, help="longitudinal: epsilon of the memoized layer")
    ch.add_argument("--epsilon-1", type=epsilon, default=None, help="longitudinal: epsilon of one report")
    ch.add_argument("--rounds", type=int_in(1, 10_000, "an integer"), default=20, help="longitudinal: collections (lifetime cost), in [1, 10000]")
    ch.add_argument("--change-prob", type=_prob, default=0.2, help="longitudinal: probability a value is redrawn before a round")
    ch.add_argument("--lower", type=_finite, default=0.0, help="mean: declared lower end")
    ch.add_argument("--upper", type=_finite, default=1.0, help="mean: declared upper end")
    from .cli_families import add_distribution_choose_arguments

    add_distribution_choose_arguments(ch, int_in)


def cmd_choose_series(args) -> int:
    from .choose_series import rank_longitudinal_mechanisms, rank_mean_mechanisms

    if args.family == "distribution":
        from .cli_families import cmd_choose_distribution

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
        life = "" if r["lifetime_expected"] is None else f"   lifetime eps: expected {r['lifetime_expected']:.3g}, worst {r['lifetime_worst']:.3g}"
        print(f"{'->' if i == 0 else '  '} {r['mechanism']:<13} {str(r['params']):<12} predicted error {r['predicted_error']:.4g} "
              f"(worst input {r['worst_error']:.4g}){life}")
    return 0
