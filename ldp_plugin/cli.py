"""The ``ldp`` command line: ``mechanisms``, ``verify``, ``simulate``, ``collect``, ``aggregate``, ``budget``, ``demo``. Every command takes ``--json``
(one JSON document on stdout)."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from typing import Optional, Sequence

import numpy as np

from ._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from ._boundary import translate
from .estimation import POSTPROCESS_CHOICES
from .sampling import as_source
from .simulate import DISTRIBUTIONS, TRUTHS, draw_users, parse_params, simulate, true_distribution


def _registry(all_kinds: bool = False):
    from ldp_plugin.registry import KINDS, load_registry

    if all_kinds:
        return load_registry(kinds=KINDS)

    return load_registry()


def cmd_mechanisms(args) -> int:
    from ldp_plugin.registry import verify_exact
    from ldp_plugin.verification import load_status

    last = load_status()
    rows = []
    for name, decl in _registry(all_kinds=True).items():
        row = decl.to_dict()
        try:
            results = verify_exact(decl)
        except LDPParameterError as exc:  # e.g. the staircase LP without SciPy installed
            row["verification"] = {"status": f"not verified here: {exc}", "layer": "exact", "instances": []}
            rows.append(row)
            continue
        status = "verified (exact, %d instances)" % len(results) if all(r.passed for r in results) else "FAILED"
        row["verification"] = {"status": status, "layer": "exact", "instances": [r.to_dict() for r in results]}
        if name in last:
            lv = last[name]
            row["verification"]["last_full_verification"] = lv
            status += "; last `ldp verify`%s: %s (%s)" % (" --quick" if lv["quick"] else "", "passed" if lv["passed"] else "FAILED", lv["time"])
            row["verification"]["status"] = status
        rows.append(row)
    if args.json:
        print(json.dumps({"mechanisms": rows}, indent=2))
    else:
        for r in rows:
            params = ", ".join(f"{k}: {v['type']} in {v['range']}" for k, v in r["parameters"].items())
            print(f"{r['name']:<10} {r['summary']}")
            print(f"{'':<10} parameters: {params}")
            print(f"{'':<10} privacy map (per user): {r['privacy_map']}; population: {r['population_map']}")
            print(f"{'':<10} {r['verification']['status']}; {r['citation']}")
    return 0 if all(not r["verification"]["status"].startswith("FAILED") for r in rows) else 1


def _build(args):
    """The mechanism of ``--mechanism`` / ``--d`` / ``--epsilon`` / ``--m`` / ``--param`` (the
    registry is the only builder: missing parameters are named there)."""
    from ldp_plugin.registry import build

    params = dict(parse_params(args.param))
    return build(args.mechanism, epsilon=args.epsilon, d=args.d, m=getattr(args, "m", None), n=getattr(args, "n", None), **params)


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
    out = res.to_dict()
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:>22}: {v}")
    return 0


def cmd_demo(args) -> int:
    """A simulated collection on generated per-user data: estimates with standard errors and
    confidence intervals next to the truth."""
    from ldp_plugin.adapters import estimate_frame
    from ldp_plugin.registry import build

    categories = ["search", "mail", "maps", "video", "news", "music", "photos", "shopping"]
    mech = build(args.mechanism, epsilon=args.epsilon, d=len(categories), n=args.n, registry=_registry())
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


def cmd_collect(args) -> int:
    """Run a collection job described in TOML (see :mod:`ldp_plugin.collect`)."""
    from .collect import load_job, run_job

    summary = run_job(load_job(args.job), executor=args.executor, address=args.address)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(f"ldp collect: {summary['users']:,} users, {summary['mechanism']['mechanism']} with epsilon={summary['epsilon']} per user")
        print(f"estimates: {summary['estimates']}" + (f"; plot: {summary['plot']}" if summary["plot"] else ""))
        if summary.get("intervals"):
            print(f"intervals: {summary['intervals']}")
        if summary.get("budget"):  # a retry says so in text too, never only in --json
            print(("NOTE: " if not summary["budget"].get("charged", True) else "budget: ") + str(summary["budget"]["note"]))
        for row in summary["top"]:
            print(f"  {str(row['item']):<20} {row['estimate']:.4f}  [{row['ci_lower']:.4f}, {row['ci_upper']:.4f}]")
    return 0


from .cli_commands import cmd_aggregate, cmd_amplify, cmd_budget, cmd_federated, cmd_verify  # noqa: E402  (the longer commands)


def cmd_choose(args) -> int:
    """Rank the applicable mechanisms by predicted error and recommend one."""
    from .choose import rank_mechanisms

    if args.family != "frequency":
        from .cli_series import cmd_choose_series

        return cmd_choose_series(args)
    for opt, v in (("--d", args.d), ("--epsilon", args.epsilon)):
        if v is None:
            raise LDPParameterError(f"ldp choose needs {opt} (frequency oracles)")

    ranked = rank_mechanisms(args.d, args.epsilon, n=args.n, m=args.m, metric=args.metric, delta=args.delta)
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
            print(f"{mark} {r['mechanism']:<32} {str(r['params']):<28} predicted {args.metric} {r['predicted_error']:.4g}"
                  f"   report {r['report_bits']} bits, client {r['client_cost']}, server {r['server_cost']}{central}")
        if args.delta is not None:
            print(f"   central eps: {args.n:,} reports through a trusted shuffler, delta = {args.delta:g} (certified upper bound; `ldp amplify`)")
    return 0


_JSON_ERRORS = False  # set by main(): argparse errors as JSON when --json was given


class _Parser(argparse.ArgumentParser):
    """argparse with one error path: exit 2 and a message naming the option (JSON under --json)."""

    def error(self, message: str):  # type: ignore[override]
        if _JSON_ERRORS:
            print(json.dumps({"error": "UsageError", "message": f"{self.prog}: {message}"}))
        else:
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _int_in(lo: int, hi: Optional[int] = None, what: str = "an integer"):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})") from None
        if v < lo or (hi is not None and v > hi):
            rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
            raise argparse.ArgumentTypeError(f"must be {what} {rng} (got {v})")
        return v

    return parse


from .cli_types import EPSILON as _epsilon, UNIT_OPEN as _unit_open  # noqa: E402  (shared argument types)


def _mechanism_help() -> str:
    try:
        from ldp_plugin.registry import load_registry, required_parameters

        reg = load_registry()
        parts = []
        for name, decl in sorted(reg.items()):
            req = required_parameters(decl)
            parts.append(name + (" (needs " + ", ".join(f"--param {r}=..." for r in req) + ")" if req else ""))
        return "a registered mechanism: " + "; ".join(parts) + "; sample-NAME wraps NAME in pad-and-sample for sets (with --m)"
    except Exception:  # pragma: no cover - help text only
        return "a registered mechanism (see `ldp mechanisms`)"


SEED = _int_in(0, 2**63 - 1, "an integer seed")
POSITIVE = _int_in(1, None, "an integer")
DOMAIN = _int_in(2, 2**31, "an integer domain size")


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("ldp-plugin")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        ver = "unknown"
    p = _Parser(prog="ldp", description="Local differential privacy for OpenDP: verified LDP mechanisms, estimates with error bars, a budget ledger.")
    p.add_argument("--version", action="version", version=f"ldp-plugin {ver}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    m = sub.add_parser("mechanisms", help="list registered mechanisms, their privacy maps and verification status")
    m.add_argument("--json", action="store_true", help="one JSON document on stdout")
    m.set_defaults(func=cmd_mechanisms)

    s = sub.add_parser("simulate", help="simulated collections: error of the estimate against the truth")
    s.add_argument("--mechanism", required=True, help=_mechanism_help())
    s.add_argument("--d", type=DOMAIN, default=None, help="domain size (number of items), in [2, 2^31]")
    s.add_argument("--epsilon", type=_epsilon, required=True, help="epsilon per user (> 0)")
    s.add_argument("--n", type=POSITIVE, required=True, help="simulated users per collection (>= 1)")
    s.add_argument("--repeats", type=POSITIVE, default=1, help="collections to average over (>= 1)")
    s.add_argument("--distribution", choices=DISTRIBUTIONS, default="dirichlet", help="how the users' values are generated")
    s.add_argument("--postprocess", choices=POSTPROCESS_CHOICES, default="projection", help="post-processing of the estimate (free: no budget)")
    s.add_argument("--truth", choices=TRUTHS, default="empirical", help="error against the users' empirical distribution (default) or the generating one")
    s.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a mechanism parameter (repeatable); lists as JSON, e.g. p0=[0.6,0.3,0.1]")
    s.add_argument("--m", type=POSITIVE, default=None, help="per-user sets of M >= 1 items (native set mechanisms, or pad-and-sample)")
    s.add_argument("--seed", type=SEED, default=None, help="seed data and randomization (reproducible; not secure), in [0, 2^63)")
    s.add_argument("--json", action="store_true", help="one JSON document on stdout")
    s.set_defaults(func=cmd_simulate)

    c = sub.add_parser("collect", help="privatize a Parquet/CSV file and estimate frequencies, as described in a TOML job")
    c.add_argument("job", help="the job file (see `python -m pydoc ldp_plugin.collect`)")
    c.add_argument("--executor", choices=["local", "dask"], default=None, help="partitioned job: input glob = partitions")
    c.add_argument("--address", default=None, help="Dask scheduler address (default: $DASK_SCHEDULER_ADDRESS or a local cluster)")
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")
    c.set_defaults(func=cmd_collect)

    ch = sub.add_parser("choose", help="rank the applicable mechanisms by predicted error; recommend one")
    ch.add_argument("--d", type=_int_in(2, 2**20, "an integer domain size"), default=None, help="domain size, in [2, 2^20] (predictions hold per-item arrays)")
    ch.add_argument("--epsilon", type=_epsilon, default=None, help="epsilon per user (> 0)")
    ch.add_argument("--m", type=POSITIVE, default=1, help="items per user (sets: pad-and-sample or native set mechanisms), >= 1")
    ch.add_argument("--n", type=POSITIVE, default=100_000, help="users (the prediction scales as 1/n)")
    ch.add_argument("--metric", choices=["l2", "l1", "linf"], default="l2", help="error to rank by")
    ch.add_argument("--delta", type=_unit_open, default=None,
                    help="with a trusted shuffler of the n reports: show each candidate's central epsilon at this delta, in (0, 1)")
    ch.add_argument("--json", action="store_true", help="one JSON document on stdout")
    from .cli_series import add_choose_arguments

    add_choose_arguments(ch, _epsilon, _int_in)
    ch.set_defaults(func=cmd_choose)

    am = sub.add_parser("amplify", help="central (epsilon, delta) of n shuffled reports (a trusted shuffler; certified upper bound and exact lower bound)")
    am.add_argument("--mechanism", required=True, help=_mechanism_help())
    am.add_argument("--d", type=DOMAIN, default=None, help="domain size, in [2, 2^31]")
    am.add_argument("--epsilon", type=_epsilon, required=True, help="the local epsilon per report (> 0)")
    am.add_argument("--n", type=_int_in(2, 10**9, "an integer batch size"), required=True, help="guaranteed minimum batch after dropouts, in [2, 10^9]")
    am.add_argument("--delta", type=_unit_open, required=True, help="delta of the central guarantee, in (0, 1)")
    am.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a mechanism parameter (repeatable)")
    am.add_argument("--json", action="store_true", help="one JSON document on stdout")
    am.set_defaults(func=cmd_amplify)

    fd = sub.add_parser("federated", help="federated analytics on Flower: devices randomize and enforce their own budget")
    fsub = fd.add_subparsers(dest="federated_command", required=True, parser_class=_Parser)
    fs = fsub.add_parser("simulate", help="run the device and server apps on Flower's simulation engine on generated data")
    fs.add_argument("--nodes", type=_int_in(1, 1000, "an integer"), required=True, help="simulated SuperNodes, in [1, 1000]")
    fs.add_argument("--users-per-node", type=_int_in(1, 10**6, "an integer"), required=True, help="devices hosted by each node")
    fs.add_argument("--mechanism", required=True, help=_mechanism_help())
    fs.add_argument("--d", type=DOMAIN, default=None, help="domain size")
    fs.add_argument("--epsilon", type=_epsilon, required=True, help="epsilon charged per device per round")
    fs.add_argument("--rounds", type=_int_in(1, 1000, "an integer"), default=1, help="queries (one per round)")
    fs.add_argument("--device-cap", required=True, help="each device's lifetime epsilon cap (exact decimal text)")
    fs.add_argument("--max-epsilon", default="8", help="each device's largest epsilon per query (policy)")
    fs.add_argument("--malformed-nodes", type=_int_in(0, 1000, "an integer"), default=0, help="nodes that forward malformed reports")
    fs.add_argument("--min-batch", type=POSITIVE, default=1, help="reports the collector needs before it releases an estimate")
    fs.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a mechanism parameter (repeatable)")
    fs.add_argument("--seed", type=SEED, default=0, help="seed of the generated data (the randomization uses the OS CSPRNG)")
    fs.add_argument("--json", action="store_true", help="one JSON document on stdout")
    fd.set_defaults(func=cmd_federated)

    from .cli_series import add_parsers as _series_parsers

    _series_parsers(sub, _Parser, _int_in, _epsilon, SEED)
    from .cli_discovery import add_parsers as _discovery_parsers

    _discovery_parsers(sub, _Parser, _int_in, _epsilon, SEED)
    v = sub.add_parser("verify", help="exact, goodness-of-fit and black-box audit verification of registered mechanisms")
    v.add_argument("names", nargs="*", help="mechanism names (default: all registered)")
    v.add_argument("--quick", action="store_true", help="fewer samples (no power guarantee): a smoke test in seconds")
    v.add_argument("--seed", type=SEED, default=0, help="seed of the verification samples (reproducible runs)")
    v.add_argument("--self-test", action="store_true", help="also run the seeded-bug suite: every bug must be caught")
    v.add_argument("--report", default=None, metavar="PATH", help="write a markdown audit report")
    v.add_argument("--json", action="store_true", help="one JSON document on stdout (no progress bar)")
    v.set_defaults(func=cmd_verify)

    a = sub.add_parser("aggregate", help="aggregate Parquet report files (mechanism from their metadata), locally or on Dask")
    a.add_argument("reports", help="a glob, a directory, or a file of reports")
    a.add_argument("--mechanism-from-metadata", action="store_true", help="read the mechanism and its parameters from the files (required)")
    a.add_argument("--executor", choices=["local", "dask"], default="local", help="where the map-reduce runs")
    a.add_argument("--address", default=None, help="Dask scheduler address (default: $DASK_SCHEDULER_ADDRESS or a local cluster)")
    a.add_argument("--state", default=None, metavar="PATH", help="accumulator state: read if present, new files merged in, saved back")
    a.add_argument("--candidates", default=None, help="comma-separated candidates (open-alphabet mechanisms)")
    a.add_argument("--postprocess", choices=POSTPROCESS_CHOICES, default="projection", help="post-processing of the estimate")
    a.add_argument("--allow-partial", action="store_true", help="also aggregate reports of a release that did not complete")
    a.add_argument("--json", action="store_true", help="one JSON document on stdout")
    a.set_defaults(func=cmd_aggregate)

    b = sub.add_parser("budget", help="the privacy budget ledger of a population (SQLite)")
    bsub = b.add_subparsers(dest="budget_command", required=True)
    bi = bsub.add_parser("init", help="create a ledger for a population")
    bi.add_argument("ledger", help="the ledger file (SQLite) to create")
    bi.add_argument("--population", required=True, help="the population's name")
    bi.add_argument("--lifetime-cap", required=True, help="lifetime epsilon cap (exact: '1', '0.5', '1/3')")
    bi.add_argument("--period-cap", default=None, help="optional per-period cap (never above the lifetime cap)")
    bi.add_argument("--period", default=None, choices=["day", "hour", "week"], help="the period of --period-cap (UTC)")
    bi.add_argument("--cohorts", type=_int_in(1, 1 << 20, "an integer"), default=1, help="data-independent cohorts (parallel composition), in [1, 2^20]")
    bi.add_argument("--exist-ok", action="store_true", help="open an existing ledger with the same definition")
    bi.add_argument("--json", action="store_true", help="one JSON document on stdout")
    bs = bsub.add_parser("show", help="spent and remaining budget per cohort")
    bs.add_argument("ledger", help="the ledger file")
    bs.add_argument("--json", action="store_true", help="one JSON document on stdout")
    bh = bsub.add_parser("history", help="every spend, in order (the audit trail)")
    bh.add_argument("ledger", help="the ledger file")
    bh.add_argument("--json", action="store_true", help="one JSON document on stdout")
    bc = bsub.add_parser("spend-check", help="would a query of EPSILON fit? (spends nothing; exit 1 if not)")
    bc.add_argument("ledger", help="the ledger file")
    bc.add_argument("--epsilon", required=True, help="epsilon as exact decimal text ('0.1' is 1/10) or a fraction ('1/3')")
    bc.add_argument("--cohorts", default=None, help="comma-separated cohorts (default: all)")
    bc.add_argument("--json", action="store_true", help="one JSON document on stdout")
    bx = bsub.add_parser("central", help="central epsilon at DELTA of everything charged, with recorded shuffled batches (dp_accounting PLD)")
    bx.add_argument("ledger", help="the ledger file")
    bx.add_argument("--delta", type=_unit_open, required=True, help="delta of the composed central guarantee, in (0, 1)")
    bx.add_argument("--cohorts", default=None, help="comma-separated cohorts (default: all)")
    bx.add_argument("--json", action="store_true", help="one JSON document on stdout")
    bb = bsub.add_parser("backup", help="a consistent copy of a ledger (SQLite's backup API; safe while in use)")
    bb.add_argument("ledger", help="the ledger file")
    bb.add_argument("destination", help="the copy to write (must not exist)")
    bb.add_argument("--json", action="store_true", help="one JSON document on stdout")
    b.set_defaults(func=cmd_budget)

    d = sub.add_parser("demo", help="a simulated collection with an estimate table (standard errors, CIs, truth)")
    d.add_argument("--mechanism", default="k-subset", help=_mechanism_help())
    d.add_argument("--epsilon", type=_epsilon, default=1.0, help="epsilon per user (> 0)")
    d.add_argument("--n", type=POSITIVE, default=100_000, help="simulated users (>= 1)")
    d.add_argument("--seed", type=SEED, default=None, help="reproducible (not secure) data and randomization")
    d.add_argument("--json", action="store_true", help="one JSON document on stdout")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    global _JSON_ERRORS
    argv = list(sys.argv[1:] if argv is None else argv)
    _JSON_ERRORS = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # usage errors (exit 2, message printed) and --help/--version (exit 0)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    from .progress import enable

    enable(not getattr(args, "json", False))  # bars on a terminal, never under --json
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `ldp ... | head`: the reader went away; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("ldp: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one error path: every library error is exit 2 and a message, never a traceback
        if os.environ.get("LDP_PLUGIN_DEBUG"):
            raise
        exc = translate(exc) or exc  # engines' raw messages (Polars, SQLite, OpenDP, OS) -> ours, naming the file
        known = isinstance(exc, (LDPParameterError, LDPInputError, PrivacyVerificationError, ValueError))
        msg = str(exc) if known else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, (OSError, sqlite3.Error)):
            msg = f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}" + (f" ({exc.filename})" if getattr(exc, "filename", None) else "")
        if getattr(args, "json", False):
            print(json.dumps({"error": type(exc).__name__, "message": msg}))
        else:
            print(f"ldp: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
