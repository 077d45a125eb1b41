"""``ldp verify``: exact, goodness-of-fit and black-box audit verification of registered mechanisms."""

from __future__ import annotations

import functools
import json
import os

from .._extras import require_extra
from .._errors import LDPParameterError
from ._common import registry as _registry_of
from ..registry import self_test, verify_instance, verify_name, wrapper_instances
from ..verification import FAMILY_ALPHA, save_status
from ..verification.privacy_paths import COVERAGE_MIN, measure
from ..measurements import enable_ldp_features
from ..verification.user_paths import user_path_rows, user_path_self_test
from ..verification.workflows import workflow_rows
from ..verification.parallel import default_processes, job_pool, run_jobs
from ..verification.system.run import system_jobs, system_self_test
from ..verification.typescript_client import typescript_self_test, verify_typescript


def _edge_text(param: str, values: list) -> str:
    """``d: 2…8`` (numbers: the range drawn) or ``oracle: auto, krr, oue`` (choices, lists)."""
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    other = sorted({str(v) for v in values if v not in nums})
    parts = ([f"{min(nums):g}…{max(nums):g}"] if nums else []) + other
    return f"{param}: {', '.join(parts)}"


def _coverage_lines(coverage: dict) -> list:
    """The coverage section: the total, the threshold, and every module's uncovered lines."""
    need = coverage.get("threshold")
    lines = ["", "## Branch coverage of the privacy-path modules", "",
             f"Measured with coverage.py (statements and branches) on this run, in a fresh interpreter started under coverage (module-level",
             f"lines count; every process the run starts is traced and combined): **{coverage['percent']:.1f}%** of {len(coverage['modules'])} modules selected by what they do",
             "(they import the sampling layer, or call or define a client entry point: `ldp_plugin.verification.privacy_paths`)"
             + (f"; required {need:g}%: **{'met' if coverage['passed'] else 'NOT met'}**." if need is not None else "; no threshold (quick run)."),
             *([f"Compiled by numba, listed and not measured (their numpy twins are, and the kernels layer holds each kernel to its twin): "
                f"{', '.join(coverage['compiled'])}."] if coverage.get("compiled") else []), "",
             "| module | coverage | uncovered lines |", "|---|---|---|"]
    for mod, r in sorted(coverage["modules"].items(), key=lambda kv: kv[1]["percent"]):
        missing = r["missing_lines"]
        missing = missing if len(missing) <= 160 else missing[:157] + "..."
        lines.append(f"| {mod} | {r['percent']:.1f}% | {missing or '-'} |")
    return lines


def _system_lines(system: list) -> list:
    """The system layers (``ldp_plugin.verification.system``) and their seeded bugs."""
    lines = ["", "## System layers", "",
             "What a deployment runs: a device with its keystore and ledger answering every query kind and every refusal (two devices",
             "that differ only in their values: same answers; exact charges vs the realized channels and the series' exact worst loss",
             "over histories), the shuffler's exact output law over arrival orders and nodes, the analyzer's recorded (ε, δ) against",
             "the batch it opened, every registered name through the device's reply path and the collector, every numba kernel",
             "against its numpy twin (bit for bit, the same randomness consumed), the partitioned executors against the serial path,",
             "and every name's refusals (arguments and inputs just outside their declared domains, through every door; a refused",
             "release spends nothing).", "",
             "| layer | row | seconds | result |", "|---|---|---|---|"]
    for r in system:
        res = r["result"]
        verdict = (("CAUGHT" if r["caught"] else "MISSED") + " (seeded bug)") if r.get("seeded_bug") else ("passed" if r["passed"] else "FAILED")
        detail = "; ".join(res.get("failures", [])[:2]) if not r.get("seeded_bug") else ""
        lines.append(f"| {r['system_layer']} | {r['name']} | {res.get('seconds', 0):.1f} | {verdict}{(': ' + detail) if detail else ''} |")
    return lines


def _estimator_line(r: dict) -> str:
    """One line per instance of the estimator layer: its cells, the refusal, the failures."""
    es = r["estimators"]
    cells = ", ".join(f"{c['shape']} R={c['R']}" for c in es["cells"])
    verdict = "ok" if es["passed"] else "FAIL: " + "; ".join(es["failed"][:4]) + (" …" if len(es["failed"]) > 4 else "")
    return f"    estimators ({cells}; spec refusal {'ok' if es['spec_refusal']['passed'] else 'FAIL'}): {verdict}"


def _estimator_lines(rows: list) -> list:
    """The estimator layer's section: per instance and data shape, R, the worst coverage, the largest
    bias in standard errors and the range of MSE / reported variance over the statistics."""
    lines = ["", "## Estimator layer (the server: bias, stated variance, coverage, spec refusal)", "",
             "Per data shape: R independent collections of the same users through the real client and server; every statistic",
             "tested for bias, MSE / reported variance (χ² bounds) and coverage of its 95% interval (not significantly below 0.93),",
             "plus a pooled variance test; Bonferroni inside each cell. `labelled` statistics (bound, variance-only, none) are",
             "tested for what their label claims. Power: the bias (in standard errors) each test detects with probability 0.99.", "",
             "| name | instance | shape | R | statistics | worst coverage | max abs bias (se) | MSE/var (min–max) | detects bias | passed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "estimators" not in r:
            continue
        inst = ", ".join(f"{k}={v}" for k, v in r["instance"].items() if not isinstance(v, dict))
        for c in r["estimators"]["cells"]:
            st = c["statistics"]
            cov = [s["coverage"] for s in st if s["kind"] in ("interval", "bound")]
            bias = [abs(s["bias_sd"]) for s in st if "bias_sd" in s]
            ratio = [s["mse_over_variance"] for s in st if "mse_over_variance" in s]
            fmt = lambda v, f: format(v, f) if v is not None else "-"  # noqa: E731
            lines.append(f"| {r['name']} | {inst} | {c['shape']} | {c['R']} | {len(st)} | {fmt(min(cov, default=None), '.3f')} | "
                         f"{fmt(max(bias, default=None), '.2f')} | {fmt(min(ratio, default=None), '.2f')}–{fmt(max(ratio, default=None), '.2f')} | "
                         f"{c.get('power', {}).get('bias_sd', float('nan')):.2f} | {'yes' if c['passed'] else 'NO'} |")
    return lines


def _markdown_report(rows: list, *, quick: bool, seed: int, seconds: float, coverage: dict | None = None) -> str:
    lines = [
        "# ldp-plugin verification report",
        "",
        f"`ldp verify{' --quick' if quick else ''} --seed {seed}` — {len(rows)} instance(s), {seconds:.1f} s; "
        "family-wise false-alarm rate 1e-6 (Bonferroni over instances and input pairs).",
        "",
        "Layers: exact (the declared channel), sampling path (every threshold and bit width the real client asks of an",
        "instrumented source is declared; the channel rebuilt by replaying the client over every outcome of its sampler",
        "calls equals the declared one), goodness of fit, rates (binomial tests of p*, q* and of every rate class of every",
        "family; the relative error the run can detect with power 0.99), joint (pairs of users independent; fresh entropy",
        "per batch), black-box audit;",
        "production path (the secure source on AES-CTR, split across workers, on the numba and numpy kernels: the paths",
        "that ran), positions (the realized channel rebuilt from every source call at its position), entry points (the",
        "public randomize on labels, numbers, sets, tuples, key-value sets and user keys, one driver per input kind;",
        "randomize_one against the batch path; every report through the wire and back), transcript (keyed mechanisms: the",
        "exact worst case over every pair of histories vs the ledger's charge).",
        "Rows marked (random draw) are seeded random parameter draws beyond the canonical instances (exact and sampling-path layers);",
        "the edges of every declared parameter domain are drawn first (summarized per name below the table).",
        "",
        "| name | instance | declared ε | realized ε (exact) | sampling path | GOF min p | rates (detects) | joint min p | audit ε lower bound | audit samples | production paths ran | positions / entry points | passed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    edges = [r for r in rows if "edge" in r]
    system = [r for r in rows if "system_layer" in r]
    for r in rows:
        if "edge" in r or "system_layer" in r:  # summarized per name / per layer below
            continue
        a = r.get("audit", {})
        g = r.get("goodness_of_fit", {})
        inst = ", ".join(f"{k}={v}" for k, v in r["instance"].items()) + (" (random draw)" if r.get("random_draw") else "")
        sp, rt, jt = r.get("sampling_path", {}), r.get("rates", {}), r.get("joint", {})
        sp_txt = ("ok" if sp.get("passed") else "UNDECLARED") + f" ({sp.get('requests', 0)} requests)" if sp else "-"
        rt_txt = (("ok" if rt.get("passed") else "FAIL") + f" ({100 * rt['detects_relative_error']:.1f}%)") if rt.get("applicable") else "n/a"
        jt_txt = f"{jt.get('min_pvalue', float('nan')):.3g}" if jt else "-"
        status = ("CAUGHT by " + ", ".join(r["caught_by"])) if r.get("seeded_bug") else ("yes" if r["passed"] else "NO")
        pr, po, ep = r.get("production", {}), r.get("positions", {}), r.get("entry_points", {})
        pr_txt = (", ".join(pr.get("paths_ran", [])) + ("" if pr.get("passed") else " (NOT RUN: " + ", ".join(pr.get("requested_not_run", [])) + ")")) if pr else "-"
        po_txt = ((po.get("mode", "not enumerable") if po.get("enumerated") else "not enumerable") + (" ok" if po.get("passed") else " MISMATCH")) if po else "-"
        ep_txt = (f"{ep.get('cases', 0)} cases " + ("ok" if ep.get("passed") else "FAIL")) if ep else "-"
        lines.append(
            f"| {r['name']} | {inst} | {r['declared_epsilon']:g} | {r.get('realized_epsilon', float('nan')):.6g} | {sp_txt} | "
            f"{g.get('min_p_value', float('nan')):.3g} | {rt_txt} | {jt_txt} | {a.get('audit_epsilon_lower_bound', float('nan')):.4g} | "
            f"{a.get('audit_samples', 0):,} | {pr_txt} | {po_txt} / {ep_txt} | {status} |"
        )
    if edges:  # the edges of every declared parameter domain: exact layer inside, refusal just outside
        lines += ["", "Edges of each declared parameter domain (registry `domain`): the instances at the low and high end that the",
                  "exact layer enumerates (sizes: up to the enumerable cap), every choice, the shortest/longest list and smallest/largest",
                  "subset (exact layer), and the values just outside each end, which the constructor must refuse.", "",
                  "| name | parameters drawn at their edges | inside (exact ok) | outside (refused) | passed |", "|---|---|---|---|---|"]
        for name in sorted({r["name"] for r in edges}):
            mine = [r for r in edges if r["name"] == name]
            by: dict = {}
            for r in mine:
                if "refusal" not in r:
                    by.setdefault(r["edge"]["parameter"], []).append(r["edge"]["value"])
            drawn = "; ".join(_edge_text(p, v) for p, v in by.items())
            inside = [r for r in mine if "refusal" not in r]
            outside = [r for r in mine if "refusal" in r]
            lines.append(f"| {name} | {drawn} | {sum(r['passed'] for r in inside)}/{len(inside)} | "
                         f"{sum(r['passed'] for r in outside)}/{len(outside)} | {'yes' if all(r['passed'] for r in mine) else 'NO'} |")
    keyed = [r for r in rows if "transcript" in r]
    if keyed:  # repeated collections of the keyed mechanisms: exact transcript loss vs the ledger's charge
        lines += ["", "Transcript layer (keyed mechanisms): exact worst loss over every pair of histories and every transcript of T",
                  "collections vs what the ledger charges, user level (any two histories of one user) and value level (same change pattern).", "",
                  "| name | instance | T | user: exact / charged | value: exact / charged | passed |", "|---|---|---|---|---|---|"]
        for r in keyed:
            tr = r["transcript"]
            top = {x["relation"]: x for x in tr["rows"] if x["T"] == tr["T_max"]}
            cell = lambda x: f"{x['exact_loss']:.4g} / {'refused' if x['charged'] is None else format(x['charged'], '.4g')}"  # noqa: E731
            inst = ", ".join(f"{k}={v}" for k, v in r["instance"].items())
            lines.append(f"| {r['name']} | {inst} | {tr['T_max']} | {cell(top['user'])} | {cell(top['value'])} | {'yes' if tr['passed'] else 'NO'} |")
    if system:
        lines += _system_lines(system)
    lines += _estimator_lines(rows)
    if coverage is not None:
        lines += _coverage_lines(coverage)
    return "\n".join(lines) + "\n"


def _wrapper_rows(j: int, *, seed: int, quick: bool, alpha: float) -> list:
    """The ``j``-th wrapper instance (:func:`wrapper_instances`), verified through its own exact
    channel and real client (one job of :func:`verification_rows`)."""
    wname, mech = wrapper_instances()[j]
    return [verify_instance(mech, name=wname, instance=mech.params(), seed=seed + 7_000_001 * (j + 1), quick=quick, alpha=alpha,
                            estimator_shapes=1 if quick or j % 2 else None)]


def verification_rows(names: list, *, seed: int, quick: bool, wrappers: bool) -> list:
    """The rows of one ``ldp verify`` run: every layer on every canonical instance (and the draws)
    of each name, then (``wrappers``: a run over the whole registry) the wrappers and the system
    layers (:mod:`ldp_plugin.verification.system`: rows with ``system_layer``). A module-level
    function, so ``--coverage`` can run it in a fresh interpreter started under coverage. The
    surfaces layer builds OpenDP measurements: the caller has opted in to OpenDP's features
    (``ldp.enable_ldp_features()``; the ``ldp verify`` command does, :func:`command_rows`).

    Each name, wrapper, the workflows and each system layer is one job of
    :func:`~ldp_plugin.verification.parallel.run_jobs` (its seed and false-alarm share fixed by
    its place in the list): on the caller's open
    :func:`~ldp_plugin.verification.parallel.job_pool` they run on its workers, with the same rows
    in the same order."""
    reg = _registry_of(True)
    share = FAMILY_ALPHA / len(names)
    jobs = [functools.partial(verify_name, reg[n], seed=seed + 1_000_003 * i, quick=quick, alpha=share) for i, n in enumerate(names)]
    costs = [float(len(reg[n].canonical)) * (3.0 if reg[n].kind == "longitudinal" else 1.0) for n in names]  # keyed clients: a PRF per report
    if wrappers:  # the wrappers, the command line's privatize and collect paths, the deployment (device, shuffler, analyzer, wire)
        jobs += [functools.partial(_wrapper_rows, j, seed=seed, quick=quick, alpha=share) for j in range(len(wrapper_instances()))]
        jobs += [functools.partial(workflow_rows, seed=seed, quick=quick)]
        jobs += [functools.partial(user_path_rows, seed=seed, quick=quick)]  # the namespaces, jobs, simulations and ledger paths the other layers leave shut
        jobs += system_jobs(seed=seed, quick=quick)
        costs += [1.0] * (len(jobs) - len(costs))
    done = run_jobs(jobs, costs=costs, desc="ldp verify")
    return [r for rows in done for r in rows]


def command_rows(names: list, *, seed: int, quick: bool, wrappers: bool) -> list:
    """:func:`verification_rows` as the ``ldp verify`` command runs it, in its own process (or the
    fresh interpreter ``--coverage`` starts): the command is the caller that opts in to OpenDP's
    features, in the process that builds the measurements and in each worker of its
    :func:`~ldp_plugin.verification.parallel.job_pool` (opened here unless the command has one
    open)."""
    enable_ldp_features()
    with job_pool(default_processes(), initializer=enable_ldp_features):
        return verification_rows(names, seed=seed, quick=quick, wrappers=wrappers)


def cmd_verify(args) -> int:
    """All three verification layers on the registered mechanisms (and the seeded bugs)."""
    import time

    require_extra("scipy", "verify", "ldp verify needs SciPy")  # goodness of fit, rates, joint, audit

    if getattr(args, "client", "python") == "typescript":
        return _verify_typescript(args)
    enable_ldp_features()  # this command is the caller that opts in: the surfaces layer builds the OpenDP measurements
    reg = _registry_of(True)
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
    coverage = None
    measured = getattr(args, "coverage", False)
    if measured:  # branch coverage of every privacy-path module, measured on this run (its own interpreter and workers)
        rows, coverage = measure(functools.partial(command_rows, names, seed=args.seed, quick=args.quick, wrappers=not args.names))
        least = args.coverage_min if args.coverage_min is not None else (None if args.quick else COVERAGE_MIN)
        coverage.update({"threshold": least, "passed": least is None or coverage["percent"] >= least})
    # the rows' and the seeded bugs' jobs share the workers (none to open for a measured run without the self-test)
    with job_pool(default_processes() if args.self_test or not measured else 1, initializer=enable_ldp_features):
        if not measured:
            rows = command_rows(names, seed=args.seed, quick=args.quick, wrappers=not args.names)
        bugs = self_test(seed=args.seed, quick=args.quick) if args.self_test else []
        if args.self_test and not args.names:  # the system layers' seeded bugs
            bugs += system_self_test(seed=args.seed, quick=args.quick)
            bugs += user_path_self_test(seed=args.seed, quick=args.quick)  # the user-paths layer's defective doors
    save_status([r for r in rows if "system_layer" not in r and not r.get("workflow")], quick=args.quick, seed=args.seed)
    seconds = time.perf_counter() - t0
    ok = all(r["passed"] for r in rows) and all(b["caught"] for b in bugs) and (coverage is None or coverage["passed"])
    if args.report:
        from pathlib import Path

        Path(args.report).write_text(_markdown_report(rows + bugs, quick=args.quick, seed=args.seed, seconds=seconds, coverage=coverage))
    if args.json:
        out = {"passed": ok, "seconds": round(seconds, 2), "quick": args.quick, "seed": args.seed, "results": rows}
        if coverage is not None:
            out["coverage"] = coverage
        if bugs:
            out["seeded_bugs"] = bugs
        print(json.dumps(out, indent=1, default=str))
    else:
        for r in rows + bugs:
            a = r.get("audit", {})
            if "system_layer" in r:  # a system layer (or one of its seeded bugs)
                verdict = ("CAUGHT" if r["caught"] else "MISSED") if r.get("seeded_bug") else ("PASS" if r["passed"] else "FAIL")
                fails = r["result"].get("failures", [])
                print(f"{'system ' + r['system_layer']:<22} {r['name'] if r.get('seeded_bug') else '':<26} {r['result'].get('seconds', 0):>7.1f} s "
                      f"{verdict}" + (f"  ({fails[0]}{' …' if len(fails) > 1 else ''})" if fails and not r.get("seeded_bug") else ""))
                continue
            if "edge" in r and not r.get("seeded_bug"):  # an end of a declared domain (or just past it)
                e = r["edge"]
                print(f"{r['name']:<22} edge {e['parameter']}={e['value']!r} ({e['at']}) "
                      f"{'refused' if r.get('refusal', {}).get('refused') else 'exact' if 'refusal' not in r else 'NOT REFUSED'} {'PASS' if r['passed'] else 'FAIL'}")
                continue
            if r.get("workflow"):  # a command run in-process, held to the library path it claims to run
                print(f"{r['name']:<48} {'PASS' if r['passed'] else 'FAIL: ' + '; '.join(r['failures'])}")
                continue
            if r.get("random_draw") and not r.get("seeded_bug"):  # exact and sampling-path layers only
                print(f"{r['name']:<22} {str(r['instance']):<48} eps={r['declared_epsilon']:<6g} realized={r['realized_epsilon']:<10.6g} "
                      f"(random draw: exact, sampling path{', estimators' if 'estimators' in r else ''}) {'PASS' if r['passed'] else 'FAIL'}")
                if "estimators" in r:
                    print(_estimator_line(r))
                continue
            tag = f"  seeded bug, caught by {r['caught_by']}" if r.get("seeded_bug") else ("  random draw" if r.get("random_draw") else "")
            print(
                f"{r['name']:<22} {str(r['instance']):<48} eps={r['declared_epsilon']:<6g} realized={r['realized_epsilon']:<10.6g} "
                f"audit>={r.get('audit_epsilon_lower_bound', float('nan')):<8.4g} n={r.get('audit_samples', 0):>11,} (needs {a.get('samples_required_per_input', 0):,}/input) "
                f"paths={'+'.join(r.get('production', {}).get('paths_ran', [])) or '-'} "
                f"{('CAUGHT' if r['caught'] else 'MISSED') if r.get('seeded_bug') else ('PASS' if r['passed'] else 'FAIL')}{tag}"
            )
            if "transcript" in r:  # keyed mechanisms: exact loss of repeated collections vs the ledger's charge
                tr = {(x["relation"], x["T"]): x for x in r["transcript"]["rows"]}
                top = r["transcript"]["T_max"]
                txt = "; ".join(f"{rel} level T={top}: exact {x['exact_loss']:.4g} vs charged "
                                f"{'refused' if x['charged'] is None else format(x['charged'], '.4g')}"
                                for rel in ("user", "value") for x in [tr[(rel, top)]])
                print(f"    transcript {'ok' if r['transcript']['passed'] else 'FAIL'} (T <= {top}, every history): {txt}")
            if "estimators" in r:
                print(_estimator_line(r))
        if coverage is not None:
            print(f"branch coverage of {len(coverage['modules'])} privacy-path modules: {coverage['percent']:.1f}%"
                  + (f" (required {coverage['threshold']:g}%: {'ok' if coverage['passed'] else 'BELOW'})" if coverage["threshold"] is not None else ""))
        print(f"{'all passed' if ok else 'FAILURES'} in {seconds:.1f} s")
    return 0 if ok else 1


def _verify_typescript(args) -> int:
    """``ldp verify --client typescript``: the exact-channel and goodness-of-fit layers on the
    TypeScript client through Node (and, with ``--self-test``, its seeded bugs)."""
    import time

    if args.names or args.report:
        raise LDPParameterError("--client typescript verifies the TypeScript client's canonical instances: give no names and no --report")
    t0 = time.perf_counter()
    rows = verify_typescript(seed=args.seed, quick=args.quick)
    bugs = typescript_self_test(seed=args.seed, quick=args.quick) if args.self_test else []
    seconds = time.perf_counter() - t0
    ok = all(r["passed"] for r in rows) and all(b["caught"] for b in bugs)
    if args.json:
        print(json.dumps({"client": "typescript", "passed": ok, "seconds": round(seconds, 2), "quick": args.quick, "seed": args.seed,
                          "results": rows, **({"seeded_bugs": bugs} if bugs else {})}, indent=1, default=str))
        return 0 if ok else 1
    for r in rows + bugs:
        ex, gof = r["exact_channel"], r["goodness_of_fit"]
        ex_txt = ("equal" if ex.get("equal_to_declared") else "DIFFERS") if ex["enumerated"] else "not enumerable"
        gof_txt = f"min p={gof['min_p_value']:.3g}" if "min_p_value" in gof else "n/a"
        verdict = (("CAUGHT by " + ", ".join(r["caught_by"])) if r["caught"] else "MISSED") if r.get("seeded_bug") else ("PASS" if r["passed"] else "FAIL")
        print(f"typescript {r['name']:<22} {str(r['instance']):<56} exact channel: {ex_txt:<15} goodness of fit: {gof_txt:<12} {verdict}")
    print(f"{'all passed' if ok else 'FAILURES'} in {seconds:.1f} s")
    return 0 if ok else 1
