"""``ldp heavy-hitters simulate``: discover the frequent strings of a column (PEM, TreeHist, SFP)."""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import polars as pl

from .._errors import LDPInputError
from .._boundary import reading
from ..discovery import METHODS, ORACLES
from ..discovery.prefix import INFERRED, infer_domain
from ..discovery.query import build_query


def add_parsers(sub, parser_class, int_in, epsilon, seed) -> None:
    hh = sub.add_parser("heavy-hitters", help="discover frequent strings without a dictionary (PEM, TreeHist, SFP)")
    hsub = hh.add_subparsers(dest="heavy_hitters_command", required=True, parser_class=parser_class)
    s = hsub.add_parser("simulate", help="randomize a column of strings (one per user) and discover its heavy hitters")
    s.add_argument("--input", required=True, help="a .csv or .parquet file")
    s.add_argument("--column", required=True, help="the column of strings (one per user)")
    s.add_argument("--epsilon", type=epsilon, required=True, help="epsilon per user (> 0)")
    s.add_argument("--method", choices=METHODS + ("sfp",), default="pem", help="discovery protocol (default pem; sfp is demoted: docs/strings.md)")
    s.add_argument("--top-k", type=int_in(1, 10_000, "an integer"), default=20, help="strings to return, in [1, 10000]")
    s.add_argument("--alphabet", default=None, help="the characters strings are made of (default: read from the data, reported)")
    s.add_argument("--max-length", type=int_in(1, 64, "an integer"), default=None,
                   help="longest string, in [1, 64] (default: read from the data, capped at 64, reported)")
    s.add_argument("--oracle", choices=ORACLES, default="orr",
                   help="per-level frequency oracle (pem, treehist); orr by default: cms, hcms and count-sketch send 1-bit "
                        "reports but lose as discovery oracles (recall 0.26-0.30 on English words where orr reached 0.87; BENCHMARKS.md)")
    s.add_argument("--unselected", action="store_true", help="also list the top-k strings that are not selected (marked)")
    s.add_argument("--seed", type=seed, default=0, help="seed of the randomization (simulation only: not secure)")
    s.add_argument("--json", action="store_true", help="one JSON document on stdout")
    hh.set_defaults(func=cmd_heavy_hitters)


def read_column(path: str, column: str):
    """The column of a CSV/Parquet file as a Polars Series (errors name the file and the column)."""
    src = Path(path)
    if not src.exists():
        raise LDPInputError(f"input file {str(src)!r} does not exist")
    suffix = src.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise LDPInputError(f"--input must be a .parquet or .csv file (got {suffix!r})")
    with reading(src, "--input"):  # Polars' messages quote values and lines: named by file only
        lf = pl.scan_parquet(src) if suffix == ".parquet" else pl.scan_csv(src, infer_schema=False)
        if column not in lf.collect_schema().names():
            raise LDPInputError(f"--column {column!r} is not a column of {src.name}")
        return lf.select(pl.col(column)).collect().to_series()


def cmd_heavy_hitters(args) -> int:
    values = read_column(args.input, args.column)
    alphabet, max_length = infer_domain(values, alphabet=args.alphabet, max_length=args.max_length)
    source = "given" if args.alphabet is not None and args.max_length is not None else INFERRED
    with warnings.catch_warnings(record=True) as caught:  # the demoted sfp's warning, as one clean line
        warnings.simplefilter("always", UserWarning)
        q = build_query(args.method, epsilon=args.epsilon, top_k=args.top_k, alphabet=alphabet, max_length=max_length,
                        oracle=args.oracle, unselected=args.unselected, domain_source=source)
    for w in caught:
        print(f"ldp heavy-hitters: warning: {w.message}", file=sys.stderr)
    t0 = time.perf_counter()
    reports = q.privatize(values, rng=args.seed)
    t1 = time.perf_counter()
    result = q.discover(reports)
    t2 = time.perf_counter()
    out = result.to_dict()
    out["client_seconds"] = round(t1 - t0, 3)
    out["server_seconds"] = round(t2 - t1, 3)
    out["minimum_detectable_frequency_announced"] = out["min_detectable_frequency"]  # None: the demoted sfp announces none
    if args.json:
        keep = ("item", "estimate", "ci_lower", "ci_upper", "std_error", "p_value", "significant")
        out["items"] = [{k: r[k] for k in keep} for r in out["items"]]
        print(json.dumps(out, indent=1))
        return 0
    print(f"ldp heavy-hitters simulate: {args.method}, epsilon={args.epsilon} per user, n={values.len():,}, at most {args.top_k} strings")
    print(f"  privacy unit: {out['privacy_unit']}")
    print(f"  alphabet ({len(alphabet)} characters) {alphabet!r}, max_length {max_length}: {source}")
    mdf = out["min_detectable_frequency"]
    mdf_text = "none announced (sfp is demoted: docs/strings.md)" if mdf is None else f"{mdf:.4%}"
    print(f"  minimum detectable frequency {mdf_text}; {out['discoveries']} significant "
          f"({out['selection']} at alpha={out['alpha']}), allocated mass {out['allocated_mass']:.3f}")
    print(f"  intervals: {out['interval_method']}")
    print(f"  {'item':<20} {'estimate':>9} {'ci_lower':>9} {'ci_upper':>9}  significant")
    for r in out["items"]:
        print(f"  {r['item'][:20]:<20} {r['estimate']:>9.5f} {r['ci_lower']:>9.5f} {r['ci_upper']:>9.5f}  {'yes' if r['significant'] else 'no'}")
    print(f"  client {out['client_seconds']:.2f} s, server {out['server_seconds']:.2f} s")
    return 0
