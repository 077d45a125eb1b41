"""The longer ``ldp`` commands (budget, verify, aggregate, amplify, federated); the parser, the
error path and the short commands are in :mod:`ldp_plugin.cli`."""

from __future__ import annotations

import json
import os

from ._errors import LDPParameterError
from .simulate import parse_params


def _registry():
    from ldp_plugin.registry import KINDS, load_registry

    return load_registry(kinds=KINDS)


def cmd_budget(args) -> int:
    """``ldp budget init|show|history|spend-check|central|backup``: the persistent ledger of a population."""
    from .accountant import Accountant, BudgetExceededError, Population, as_fraction

    def frac(f):
        return {"value": float(f), "exact": f"{f.numerator}/{f.denominator}"}

    if args.budget_command == "init":
        pop = Population(
            name=args.population, lifetime_cap=args.lifetime_cap, period_cap=args.period_cap, period=args.period, cohorts=args.cohorts
        )
        acc = Accountant.create(args.ledger, pop, exist_ok=args.exist_ok)
        out = {"ledger": str(acc.path), "population": pop.definition(), "fingerprint": pop.fingerprint()}
    else:
        acc = Accountant(args.ledger)
        cohorts = None
        if getattr(args, "cohorts", None) is not None and not str(args.cohorts).strip():
            raise LDPParameterError("--cohorts is empty; give comma-separated cohorts (or omit --cohorts for all)")
        if getattr(args, "cohorts", None):
            try:
                cohorts = [int(c) for c in args.cohorts.split(",")]
            except ValueError:
                raise LDPParameterError(f"--cohorts takes comma-separated integers in [0, {acc.population.cohorts})") from None
        if args.budget_command == "backup":
            out = {"ledger": str(acc.path), "backup": str(acc.backup(args.destination))}
        elif args.budget_command == "show":
            C = acc.population.cohorts
            per = [{"cohort": c, "spent": frac(acc.spent([c])), "remaining": frac(acc.remaining([c]))} for c in range(min(C, 64))]
            out = {
                "ledger": str(acc.path),
                "population": acc.population.definition(),
                "queries": len(acc.history()),
                "spent_max": frac(acc.spent()),
                "remaining": frac(acc.remaining()),
                "cohorts": per,
            }
        elif args.budget_command == "central":
            c = acc.central_epsilon(args.delta, cohorts=cohorts)
            out = {"ledger": str(acc.path), "central_epsilon": c["epsilon"], "delta": c["delta"], "local_epsilon": c["local_epsilon"],
                   "shuffled_batches": [r.to_dict() for r in acc.shuffle_records()], "method": c["method"]}
        elif args.budget_command == "history":
            out = {"ledger": str(acc.path), "history": [r.to_dict() for r in acc.history()]}
        else:  # spend-check
            eps = as_fraction(args.epsilon, "--epsilon")  # decimal text, exactly
            try:
                after = acc.check(eps, cohorts=cohorts)
                out = {"fits": True, "requested": frac(eps), "remaining_after": frac(after)}
            except BudgetExceededError as e:
                out = {"fits": False, "requested": frac(eps), "remaining": frac(e.remaining), "cap": e.cap}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            if k == "history":
                for r in v:
                    print(f"{r['seq']:>5} {r['time']} {r['query_id']:<24} {r['mechanism']:<20} eps={r['epsilon']:<10g} cohorts={r['cohorts']}")
            elif k == "shuffled_batches":
                for r in v:
                    print(f"  batch {r['batch_id']}: query {r['query_id']}, cohorts {r['cohorts']}, n_min {r['n_min']:,}, "
                          f"central eps {r['epsilon_central']:.6g} at delta {r['delta']:g}")
            elif k == "cohorts":
                for r in v:
                    print(f"  cohort {r['cohort']:>3}: spent {r['spent']['value']:.6g}, remaining {r['remaining']['value']:.6g}")
            else:
                print(f"{k}: {v}")
    if args.budget_command == "spend-check" and not out["fits"]:
        return 1
    return 0


def _markdown_report(rows: list, *, quick: bool, seed: int, seconds: float) -> str:
    lines = [
        "# ldp-plugin verification report",
        "",
        f"`ldp verify{' --quick' if quick else ''} --seed {seed}` — {len(rows)} instance(s), {seconds:.1f} s; "
        "family-wise false-alarm rate 1e-6 (Bonferroni over instances and input pairs).",
        "",
        "Layers: exact (the declared channel), sampling path (every threshold and bit width the real client asks of an",
        "instrumented source is declared), goodness of fit, rates (binomial tests of p*, q*; the relative error the run",
        "can detect with power 0.99), joint (pairs of users independent; fresh entropy per batch), black-box audit.",
        "",
        "| name | instance | declared ε | realized ε (exact) | sampling path | GOF min p | rates (detects) | joint min p | audit ε lower bound | audit samples | passed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a = r.get("audit", {})
        g = r.get("goodness_of_fit", {})
        inst = ", ".join(f"{k}={v}" for k, v in r["instance"].items())
        sp, rt, jt = r.get("sampling_path", {}), r.get("rates", {}), r.get("joint", {})
        sp_txt = ("ok" if sp.get("passed") else "UNDECLARED") + f" ({sp.get('requests', 0)} requests)" if sp else "-"
        rt_txt = (("ok" if rt.get("passed") else "FAIL") + f" ({100 * rt['detects_relative_error']:.1f}%)") if rt.get("applicable") else "n/a"
        jt_txt = f"{jt.get('min_pvalue', float('nan')):.3g}" if jt else "-"
        status = ("CAUGHT by " + ", ".join(r["caught_by"])) if r.get("seeded_bug") else ("yes" if r["passed"] else "NO")
        lines.append(
            f"| {r['name']} | {inst} | {r['declared_epsilon']:g} | {r.get('realized_epsilon', float('nan')):.6g} | {sp_txt} | "
            f"{g.get('min_p_value', float('nan')):.3g} | {rt_txt} | {jt_txt} | {a.get('audit_epsilon_lower_bound', float('nan')):.4g} | "
            f"{a.get('audit_samples', 0):,} | {status} |"
        )
    return "\n".join(lines) + "\n"


def cmd_verify(args) -> int:
    """All three verification layers on the registered mechanisms (and the seeded bugs)."""
    import time

    from ldp_plugin.registry import verify
    from ldp_plugin.verification import FAMILY_ALPHA, save_status, self_test

    import importlib.util

    if importlib.util.find_spec("scipy") is None:  # goodness of fit, rates, joint, audit
        raise LDPParameterError("ldp verify needs SciPy: pip install 'ldp-plugin[verify]'")

    reg = _registry()
    names = args.names or sorted(reg)
    unknown = [n for n in names if n not in reg]
    if unknown:
        raise LDPParameterError(f"unknown mechanism(s) {unknown}; registered: {sorted(reg)}")
    if args.report:  # before the run, not after it: the report's directory must exist and be writable
        from pathlib import Path

        parent = Path(args.report).resolve().parent
        if Path(args.report).is_dir():
            raise LDPParameterError(f"--report {args.report!r} is a directory; give a file path (e.g. audit.md)")
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise LDPParameterError(f"--report {args.report!r}: the directory {str(parent)!r} does not exist or is not writable")
    t0 = time.perf_counter()
    share = FAMILY_ALPHA / len(names)
    from .progress import progress

    rows = [r for i, n in enumerate(progress(names, total=len(names), desc="ldp verify", unit="mechanism"))
            for r in verify(reg[n], seed=args.seed + 1_000_003 * i, quick=args.quick, alpha=share)]
    if not args.names:  # the wrappers, verified through their own exact channels and real clients
        from ldp_plugin.registry import verify_instance

        from .verification import wrapper_instances

        for j, (wname, mech) in enumerate(wrapper_instances()):
            rows.append(verify_instance(mech, name=wname, instance=mech.params(), seed=args.seed + 7_000_001 * (j + 1), quick=args.quick, alpha=share))
    save_status(rows, quick=args.quick, seed=args.seed)
    bugs = self_test(seed=args.seed, quick=args.quick) if args.self_test else []
    seconds = time.perf_counter() - t0
    ok = all(r["passed"] for r in rows) and all(b["caught"] for b in bugs)
    if args.report:
        from pathlib import Path

        Path(args.report).write_text(_markdown_report(rows + bugs, quick=args.quick, seed=args.seed, seconds=seconds))
    if args.json:
        out = {"passed": ok, "seconds": round(seconds, 2), "quick": args.quick, "seed": args.seed, "results": rows}
        if bugs:
            out["seeded_bugs"] = bugs
        print(json.dumps(out, indent=1, default=str))
    else:
        for r in rows + bugs:
            a = r.get("audit", {})
            tag = f"  seeded bug, caught by {r['caught_by']}" if r.get("seeded_bug") else ""
            print(
                f"{r['name']:<22} {str(r['instance']):<48} eps={r['declared_epsilon']:<6g} realized={r['realized_epsilon']:<10.6g} "
                f"audit>={r['audit_epsilon_lower_bound']:<8.4g} n={r['audit_samples']:>11,} (needs {a.get('samples_required_per_input', 0):,}/input) "
                f"{('CAUGHT' if r['caught'] else 'MISSED') if r.get('seeded_bug') else ('PASS' if r['passed'] else 'FAIL')}{tag}"
            )
        print(f"{'all passed' if ok else 'FAILURES'} in {seconds:.1f} s")
    return 0 if ok else 1


def cmd_aggregate(args) -> int:
    """Aggregate Parquet report files (mechanism from their metadata), incrementally with --state."""
    import os

    from .executors import aggregate, make_executor
    from .persist import AccumulatorState

    if not args.mechanism_from_metadata:
        raise LDPParameterError("pass --mechanism-from-metadata: the mechanism and its parameters are read from the report files")
    state = AccumulatorState.load(args.state) if args.state and os.path.exists(args.state) else None
    before = 0 if state is None else len(state.ingested)
    executor = make_executor(args.executor, args.address)
    try:
        result = aggregate(args.reports, executor=executor, state=state, allow_partial=args.allow_partial)
    finally:
        if hasattr(executor, "close"):
            executor.close()
    if args.state:
        result.save(args.state)
    cands = None if args.candidates is None else [c for c in args.candidates.split(",") if c]
    est = result.estimate(candidates=cands, postprocess=args.postprocess) if cands else result.estimate(postprocess=args.postprocess)
    rows = est.to_polars().to_dicts()
    out = {"mechanism": result.spec, "fingerprint": result.fingerprint, "n": result.n, "files": len(result.ingested),
           "files_added": len(result.ingested) - before, "executor": args.executor, "estimates": rows}
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    else:
        mech = result.mechanism()
        print(f"ldp aggregate: {result.n:,} reports from {len(result.ingested)} file(s) ({out['files_added']} new); mechanism {mech.name}, epsilon={mech.epsilon}")
        for r in rows:
            if "item" in r:
                print(f"  {str(r['item']):<20} {r['estimate']:.4f}  ± {r['std_error']:.4f}")
            else:  # a numeric mechanism: one row with the mean
                print(f"  mean {r['mean']:.6g}  ± {r['std_error']:.4g}  ({r['ci_lower']:.6g}, {r['ci_upper']:.6g})")
    return 0


def cmd_amplify(args) -> int:
    """The central (ε, δ) of a shuffled batch of n reports (see :mod:`ldp_plugin.amplification`)."""
    import time

    from ldp_plugin.registry import build

    from .amplification import amplify

    mech = build(args.mechanism, epsilon=args.epsilon, d=args.d, **dict(parse_params(args.param)))
    t0 = time.perf_counter()
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
