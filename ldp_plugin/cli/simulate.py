"""``ldp simulate`` and ``ldp demo``: simulated collections (error against the truth; an estimate table)."""

from __future__ import annotations

import json

import numpy as np

from ..sampling import as_source
from ..simulate import draw_users, simulate, true_distribution
from ._common import _build, emit, registry, require_frequency
from .demo_families import demo_family

#: the demo's parameters for each non-frequency kind it shows (numbers on [0, 1], 4 keys, 3 attributes)
FAMILY_DEMO_PARAMS = {"distribution": {}, "mean": {}, "key-value": {"d": 4, "ell": 2}, "multi-attribute": {"domains": [4, 3, 2]}}
from ..adapters import estimate_frame
from ..registry import build


def cmd_simulate(args) -> int:
    mech = _build(args)
    res = simulate(
        mech,
        n=args.n,
        repeats=args.repeats,
        distribution=args.distribution,
        postprocess=args.postprocess,
        truth=args.truth,
        seed=args.seed,
    )
    emit(args, res.to_dict())
    return 0


def cmd_demo(args) -> int:
    """A simulated collection on generated per-user data: estimates with standard errors and
    confidence intervals next to the truth."""

    decl = registry(all_kinds=True).get(args.mechanism) if isinstance(args.mechanism, str) else None
    if decl is not None and decl.kind in FAMILY_DEMO_PARAMS:
        return demo_family(build(args.mechanism, epsilon=args.epsilon, registry=registry(all_kinds=True), **FAMILY_DEMO_PARAMS[decl.kind]), args)
    if decl is not None and decl.kind != "frequency":
        require_frequency(args.mechanism, "demo")
    categories = ["search", "mail", "maps", "video", "news", "music", "photos", "shopping"]
    mech = build(args.mechanism, epsilon=args.epsilon, d=len(categories), n=args.n, registry=registry())
    gen = np.random.default_rng(args.seed)
    theta = true_distribution("zipf", len(categories), gen)
    codes, counts = draw_users(theta, args.n, gen)
    reports = mech.randomize_encoded(codes, rng=as_source(args.seed))
    est = mech.accumulator().add(reports).estimate(postprocess="projection", confidence=0.95)
    truth = counts / args.n
    frame = estimate_frame(est, truth=truth).with_columns(item=np.array(categories))
    covered = int(frame["covered"].sum())
    small = args.n < 100
    warning = (
        f"only {args.n} users: the normal-approximation intervals are not meaningful below about 100 users" if small else None
    )
    params = {k: v for k, v in mech.spec()["params"].items() if k not in ("epsilon", "d", "categories")}
    if args.json:
        doc = {"mechanism": mech.params(), "n": args.n, "confidence": 0.95, "truth": "the simulated users' own (empirical) frequencies",
               "intervals": "around the unbiased (raw) estimate; the estimate column is projected onto the simplex",
               "rows": frame.to_dicts(), "covered": covered}
        if warning:
            doc["warning"] = warning
        print(json.dumps(doc, indent=2))
        return 0
    import polars as pl

    extra = ", ".join(f"{k}={v}" for k, v in params.items())
    print(f"ldp demo: {args.n:,} simulated users, {mech.name}{f' ({extra})' if extra else ''} with epsilon={mech.epsilon} per user (max-divergence).")
    print(f"randomness: {'OS CSPRNG' if args.seed is None else 'seeded (not secure; reproducible demo)'}.")
    print("estimate: projected onto the simplex; std_error and the 95% intervals are those of the unbiased (raw) estimate;")
    print("truth: the simulated users' own frequencies (what the intervals cover).")
    with pl.Config(tbl_rows=50, float_precision=4, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        print(frame)
    print(f"{covered}/{len(categories)} true frequencies inside their 95% confidence intervals.")
    if warning:
        print(f"warning: {warning}")
    return 0
