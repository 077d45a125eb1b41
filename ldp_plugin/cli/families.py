"""CLI pieces of the distribution, multi-attribute and key-value families: ``ldp choose --family distribution`` (the options and the
command; wired in :mod:`ldp_plugin.cli.choose`)."""

from __future__ import annotations

import json

from .._errors import LDPParameterError
from ..choose.distribution import rank_distribution_mechanisms


def add_distribution_choose_arguments(ch, int_in) -> None:
    ch.add_argument("--buckets", type=int_in(2, 4096, "a power of two"), default=None,
                    help="distribution: histogram buckets wanted (a power of two in [2, 4096]); default: the bucket rule")
    ch.add_argument("--shape", choices=["smooth", "bimodal", "uniform"], default="smooth",
                    help="distribution: the reference shape the error is predicted on (default smooth)")
    ch.add_argument("--prior", default=None, metavar="W1,W2,...",
                    help="distribution: a prior histogram (comma-separated weights over equal buckets) instead of --shape")
    ch.add_argument("--goal", choices=["histogram", "ranges"], default="histogram",
                    help="distribution: rank by the histogram's predicted W1 (default) or by the width of range-count intervals")


def cmd_choose_distribution(args) -> int:
    if args.epsilon is None:
        raise LDPParameterError("ldp choose --family distribution needs --epsilon")
    if not args.lower < args.upper:  # the declared range is shared with the means family's options
        raise LDPParameterError(f"--lower must be below --upper (got {args.lower!r} and {args.upper!r})")
    if args.buckets is not None and args.buckets & (args.buckets - 1):
        raise LDPParameterError(f"--buckets must be a power of two in [2, 4096] (got {args.buckets})")
    reference = args.shape
    if args.prior is not None:
        try:
            reference = [float(w) for w in args.prior.split(",")]
        except ValueError:
            raise LDPParameterError("--prior takes comma-separated nonnegative numbers") from None
    ranked = rank_distribution_mechanisms(args.epsilon, n=args.n, buckets=args.buckets, reference=reference, goal=args.goal)
    rows = [c.to_dict() for c in ranked]
    ref = "prior histogram" if args.prior is not None else f"{args.shape} shape"
    if args.json:
        print(json.dumps({"family": "distribution", "reference": ref, "goal": args.goal, "recommended": rows[0], "ranking": rows}, indent=1))
        return 0
    print(f"ldp choose: numeric distribution, epsilon={args.epsilon}, n={args.n:,}, buckets={args.buckets or 'rule'}, "
          f"ranked by {'predicted W1' if args.goal == 'histogram' else 'the width of range intervals'} on the {ref} "
          "(simulated report counts of the exact channel; seeded runs)")
    for i, r in enumerate(rows):
        print(f"{'->' if i == 0 else '  '} {r['mechanism']:<12} {str(r['params']):<34} predicted W1 {r['predicted_w1']:.4g}, "
              f"95% interval of a decile range {r['predicted_range_width']:.3g} wide")
        print(f"   intervals: {r['intervals']}")
    if args.goal == "histogram" and min(rows, key=lambda r: r["predicted_range_width"]) is not rows[0]:
        print("   note: the recommended mechanism's range intervals are wider than the other's; for range counts use --goal ranges")
    return 0
