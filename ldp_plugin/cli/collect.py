"""``ldp collect`` (a TOML job: privatize a file, estimate) and ``ldp aggregate`` (report files, locally or on Dask)."""

from __future__ import annotations

import json
import os

from .._boundary import writable_directory
from .._errors import LDPParameterError
from ._common import refuse_unused
from ..collect import load_job, run_job
from ..executors import aggregate, make_executor
from ..persist import AccumulatorState


def cmd_collect(args) -> int:
    """Run a collection job described in TOML (see :mod:`ldp_plugin.collect`)."""
    if args.executor != "dask":
        refuse_unused(args, {"--address"}, "without --executor dask (it is the Dask scheduler's address)")
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
            print("  " + _row_text(row))
    return 0


def _row_text(r: dict) -> str:
    """One estimate row as text, whatever the family (items, attributes, buckets, keys, a mean)."""
    if "key" in r:  # key-value
        return (f"key {str(r['key']):<8} frequency {r['frequency']:.4f} [{r['frequency_ci_lower']:.4f}, {r['frequency_ci_upper']:.4f}]  "
                f"mean {r['mean']:+.4f} [{r['mean_ci_lower']:+.4f}, {r['mean_ci_upper']:+.4f}]")
    if "lo" in r:  # a histogram bucket
        return f"[{r['lo']:.6g}, {r['hi']:.6g})  {r['estimate']:.4f}  ± {r['std_error']:.4f}  ({r['ci_lower']:.4f}, {r['ci_upper']:.4f})"
    if "item" in r:
        head = f"attribute {r['attribute']}  " if "attribute" in r else ""
        return f"{head}{str(r['item']):<20} {r['estimate']:.4f}  ± {r['std_error']:.4f}"
    return f"mean {r['mean']:.6g}  ± {r['std_error']:.4g}  ({r['ci_lower']:.6g}, {r['ci_upper']:.6g})"


def cmd_aggregate(args) -> int:
    """Aggregate Parquet report files (mechanism from their metadata), incrementally with --state."""

    if not args.mechanism_from_metadata:
        raise LDPParameterError("pass --mechanism-from-metadata: the mechanism and its parameters are read from the report files")
    if args.executor != "dask":
        refuse_unused(args, {"--address"}, "without --executor dask (it is the Dask scheduler's address)")
    if args.state and not os.path.exists(args.state):
        writable_directory(os.path.dirname(os.path.abspath(args.state)), "--state: the directory of the state file")
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
    # only the options given: a family without candidates= / postprocess= refuses them, never ignores them
    options = {k: v for k, v in (("candidates", cands or None), ("postprocess", args.postprocess)) if v is not None}
    est = result.estimate(**options)
    rows = est.to_polars().to_dicts()
    out = {"mechanism": result.spec, "fingerprint": result.fingerprint, "n": result.n, "files": len(result.ingested),
           "files_added": len(result.ingested) - before, "executor": args.executor, "estimates": rows}
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    else:
        mech = result.mechanism()
        print(f"ldp aggregate: {result.n:,} reports from {len(result.ingested)} file(s) ({out['files_added']} new); mechanism {mech.name}, epsilon={mech.epsilon}")
        for r in rows:
            print("  " + _row_text(r))
        note = getattr(est, "bounds", "")
        if note:
            print(f"NOTE: {note}")
    return 0
