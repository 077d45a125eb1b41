"""The ``ldp`` command line: one module per command, one renderer (:func:`._common.emit`), and
these tables. ``main`` builds the parser (each command's arguments), then imports the one command
module it runs (:data:`COMMANDS`). A command whose arguments are declared beside its runtime
(:data:`PARSERS`: ``ldp federated``) has its parser module imported only when that command runs;
other commands list it with its help line and never load it. Every command takes ``--json`` (one
JSON document on stdout); every error is exit 2 with a message naming the option or parameter,
never a traceback."""

from __future__ import annotations

import argparse
import json
import importlib
import os
import sqlite3
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Callable, Optional, Sequence

from .._boundary import translate
from .._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from .discovery import add_parsers as _discovery_parsers
from ..estimation import POSTPROCESS_CHOICES
from ..progress import enable
from ..simulate import DISTRIBUTIONS, TRUTHS
from ._common import float_in, given_options, DOMAIN, EPSILON as _epsilon, JSON_ERRORS, POSITIVE, SEED, UNIT_OPEN as _unit_open, _int_in, _mechanism_help, _Parser
from .choose import add_choose_arguments
from .series import add_parsers as _series_parsers

__all__ = ["main", "build_parser", "COMMANDS", "PARSERS", "command"]

#: command -> (module, function): the one lazy import per command (heavy dependencies load only for
#: the command that runs). ``federated``'s logic lives in ``ldp_plugin.federated.cli``.
COMMANDS = {
    "mechanisms": ("ldp_plugin.cli.mechanisms", "cmd_mechanisms"),
    "simulate": ("ldp_plugin.cli.simulate", "cmd_simulate"),
    "demo": ("ldp_plugin.cli.simulate", "cmd_demo"),
    "collect": ("ldp_plugin.cli.collect", "cmd_collect"),
    "aggregate": ("ldp_plugin.cli.collect", "cmd_aggregate"),
    "choose": ("ldp_plugin.cli.choose", "cmd_choose"),
    "amplify": ("ldp_plugin.cli.amplify", "cmd_amplify"),
    "budget": ("ldp_plugin.cli.budget", "cmd_budget"),
    "verify": ("ldp_plugin.cli.verify", "cmd_verify"),
    "federated": ("ldp_plugin.federated.cli", "cmd_federated"),
    "serve": ("ldp_plugin.cli.serve", "cmd_serve"),
    "report": ("ldp_plugin.cli.report", "cmd_report"),
}

#: command -> (module, function, help): the commands whose argument parsers live with their runtime;
#: ``function(sub, parser_class, int_in, epsilon, seed, domain, positive, mechanism_help)`` adds them,
#: imported only when the command runs (or for the full parser), else the command is listed by its help
PARSERS = {
    "federated": ("ldp_plugin.federated.cli", "add_parsers",
                  "federated analytics on Flower: devices randomize and enforce their own budget"),
}


def command(name: str) -> Callable:
    """The runner of command ``name``: imports its module when it runs (see :data:`COMMANDS`)."""
    module, function = COMMANDS[name]

    def run(args) -> int:
        return getattr(importlib.import_module(module), function)(args)

    run.__name__ = function
    return run


def _add_lazy_parsers(sub, command_name: Optional[str]) -> None:
    """The :data:`PARSERS` commands: the full parser of the one that runs (all of them when
    ``command_name`` is None), a listed-only entry for the others."""
    for name, (module, function, help_line) in PARSERS.items():
        if command_name in (None, name):
            add = getattr(importlib.import_module(module), function)
            add(sub, _Parser, _int_in, _epsilon, SEED, DOMAIN, POSITIVE, _mechanism_help)
        else:
            sub.add_parser(name, help=help_line)


def _command_of(argv: Sequence[str]) -> Optional[str]:
    """The command ``argv`` runs (its first positional word), or None (``--help``, ``--version``)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command_name: Optional[str] = None) -> argparse.ArgumentParser:
    """The ``ldp`` parser; with ``command_name``, the :data:`PARSERS` modules of other commands are
    not imported (they are listed by their help line)."""
    try:
        ver = version("ldp-plugin")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        ver = "unknown"
    p = _Parser(prog="ldp", description="Local differential privacy for OpenDP: verified LDP mechanisms, estimates with error bars, a budget ledger.")
    p.add_argument("--version", action="version", version=f"ldp-plugin {ver}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    m = sub.add_parser("mechanisms", help="list registered mechanisms, their privacy maps and verification status")
    m.add_argument("--json", action="store_true", help="one JSON document on stdout")
    m.set_defaults(func=command("mechanisms"))

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
    s.set_defaults(func=command("simulate"))

    c = sub.add_parser("collect", help="privatize a Parquet/CSV file and estimate frequencies, as described in a TOML job")
    c.add_argument("job", help="the job file (see `python -m pydoc ldp_plugin.collect`)")
    c.add_argument("--executor", choices=["local", "dask"], default=None, help="partitioned job: input glob = partitions")
    c.add_argument("--address", default=None, help="Dask scheduler address (default: $DASK_SCHEDULER_ADDRESS or a local cluster)")
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")
    c.set_defaults(func=command("collect"))

    ch = sub.add_parser("choose", help="rank the applicable mechanisms by predicted error; recommend one")
    ch.add_argument("--d", type=_int_in(2, 2**20, "an integer domain size"), default=None, help="domain size, in [2, 2^20] (predictions hold per-item arrays)")
    ch.add_argument("--epsilon", type=_epsilon, default=None, help="epsilon per user (> 0)")
    ch.add_argument("--m", type=POSITIVE, default=1, help="items per user (sets: pad-and-sample or native set mechanisms), >= 1")
    ch.add_argument("--n", type=POSITIVE, default=100_000, help="users (the prediction scales as 1/n)")
    ch.add_argument("--metric", choices=["l2", "l1", "linf"], default="l2", help="error to rank by")
    ch.add_argument("--delta", type=_unit_open, default=None,
                    help="with a trusted shuffler of the n reports: show each candidate's central epsilon at this delta, in (0, 1)")
    ch.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_choose_arguments(ch, _epsilon, _int_in)
    ch.set_defaults(func=command("choose"))

    am = sub.add_parser("amplify", help="central (epsilon, delta) of n shuffled reports (a trusted shuffler; certified upper bound and exact lower bound)")
    am.add_argument("--mechanism", required=True, help=_mechanism_help())
    am.add_argument("--d", type=DOMAIN, default=None, help="domain size, in [2, 2^31]")
    am.add_argument("--epsilon", type=_epsilon, required=True, help="the local epsilon per report (> 0)")
    am.add_argument("--n", type=_int_in(2, 10**9, "an integer batch size"), required=True, help="guaranteed minimum batch after dropouts, in [2, 10^9]")
    am.add_argument("--delta", type=_unit_open, required=True, help="delta of the central guarantee, in (0, 1)")
    am.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a mechanism parameter (repeatable)")
    am.add_argument("--json", action="store_true", help="one JSON document on stdout")
    am.set_defaults(func=command("amplify"))

    _add_lazy_parsers(sub, command_name)  # ldp federated (ldp_plugin/federated/cli.py)

    _series_parsers(sub, _Parser, _int_in, _epsilon, SEED)
    _discovery_parsers(sub, _Parser, _int_in, _epsilon, SEED)
    v = sub.add_parser("verify", help="exact, goodness-of-fit and black-box audit verification of registered mechanisms")
    v.add_argument("names", nargs="*", help="mechanism names (default: all registered)")
    v.add_argument("--quick", action="store_true", help="fewer samples (no power guarantee): a smoke test in seconds")
    v.add_argument("--seed", type=SEED, default=0, help="seed of the verification samples (reproducible runs)")
    v.add_argument("--self-test", action="store_true", help="also run the seeded-bug suite: every bug must be caught")
    v.add_argument("--report", default=None, metavar="PATH", help="write a markdown audit report")
    v.add_argument("--json", action="store_true", help="one JSON document on stdout (no progress bar)")
    v.add_argument("--client", choices=("python", "typescript"), default="python",
                   help="which client to verify: the Python client (default) or the TypeScript client under Node (exact channel and goodness of fit)")
    v.add_argument("--coverage", action="store_true", help="measure branch coverage of every privacy-path module during the run (coverage.py)")
    v.add_argument("--coverage-min", type=float_in(0, 100), default=None, metavar="PCT",
                   help="with --coverage: fail below this branch coverage (default 95 for a full run; a quick run only reports)")
    v.set_defaults(func=command("verify"))

    sv = sub.add_parser("serve", help="HTTPS ingestion endpoint: serve a plan's queries to devices (browsers, phones) and collect their reports")
    sv.add_argument("--plan", default=None, metavar="PLAN.toml", help="the collection plan (its [[query]] tables; frequency queries)")
    sv.add_argument("--tokens", required=True, metavar="TOKENS.json", help="the clients' token hashes, roles and per-query quotas")
    sv.add_argument("--tls-dir", default=None, metavar="DIR", help="server.pem/server.key there (made with a CA, ca.pem, if absent)")
    sv.add_argument("--cert", default=None, help="TLS certificate (PEM), instead of --tls-dir")
    sv.add_argument("--key", default=None, help="TLS private key (PEM), instead of --tls-dir")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sv.add_argument("--port", type=_int_in(1, 65535), default=8443, help="port (default 8443)")
    sv.add_argument("--static", default=None, metavar="DIR", help="serve this directory under /app (a web page and the client bundle)")
    sv.add_argument("--max-post", type=_int_in(1, 1 << 20), default=10_000, help="most envelopes in one post (default 10000)")
    sv.add_argument("--insecure", action="store_true", help="plain HTTP on a loopback address (tests only)")
    sv.add_argument("--add-client", default=None, metavar="NAME", help="add a client to --tokens and print its token (then exit)")
    sv.add_argument("--role", choices=("device", "analyst"), default="device", help="the added client's role (default device)")
    sv.add_argument("--quota", type=_int_in(1, 1 << 30), default=10_000, help="the added client's accepted reports per query (default 10000)")
    sv.add_argument("--json", action="store_true", help="errors (and --add-client's token) as one JSON document on stdout")
    sv.set_defaults(func=command("serve"))

    a = sub.add_parser("aggregate", help="aggregate Parquet report files (mechanism from their metadata), locally or on Dask")
    a.add_argument("reports", help="a glob, a directory, or a file of reports")
    a.add_argument("--mechanism-from-metadata", action="store_true", help="read the mechanism and its parameters from the files (required)")
    a.add_argument("--executor", choices=["local", "dask"], default="local", help="where the map-reduce runs")
    a.add_argument("--address", default=None, help="Dask scheduler address (default: $DASK_SCHEDULER_ADDRESS or a local cluster)")
    a.add_argument("--state", default=None, metavar="PATH", help="accumulator state: read if present, new files merged in, saved back")
    a.add_argument("--candidates", default=None, help="comma-separated candidates (open-alphabet mechanisms)")
    a.add_argument("--postprocess", choices=POSTPROCESS_CHOICES, default=None,
                   help="post-processing of a frequency estimate (default projection; other families refuse it)")
    a.add_argument("--allow-partial", action="store_true", help="also aggregate reports of a release that did not complete")
    a.add_argument("--json", action="store_true", help="one JSON document on stdout")
    a.set_defaults(func=command("aggregate"))

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
    bi.add_argument("--parents", action="store_true", help="create the ledger's missing parent directories (else refused: a typo must not start a new budget)")
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
    bp = bsub.add_parser("plot", help="the spend over time per population and cohort group (PNG, SVG or PDF; needs the plot extra)")
    bp.add_argument("ledger", nargs="+", help="ledger files (one panel per population)")
    bp.add_argument("--out", required=True, help="the picture to write (.png, .svg or .pdf)")
    bp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    b.set_defaults(func=command("budget"))

    r = sub.add_parser("report", help="a self-contained HTML report of a collection or a federated run (needs the plot extra)")
    r.add_argument("source", help="an `ldp collect` job file, a federated round summary (round-NNNN.json), a results directory of them, or a ledger")
    r.add_argument("--out", required=True, help="the HTML file to write")
    r.add_argument("--ledger", action="append", default=[], help="also show this ledger's state and spend (repeatable)")
    r.add_argument("--json", action="store_true", help="one JSON document on stdout")
    r.set_defaults(func=command("report"))

    d = sub.add_parser("demo", help="a simulated collection with an estimate table (standard errors, CIs, truth)")
    d.add_argument("--mechanism", default="k-subset", help=_mechanism_help())
    d.add_argument("--epsilon", type=_epsilon, default=1.0, help="epsilon per user (> 0)")
    d.add_argument("--n", type=POSITIVE, default=100_000, help="simulated users (>= 1)")
    d.add_argument("--seed", type=SEED, default=None, help="reproducible (not secure) data and randomization")
    d.add_argument("--json", action="store_true", help="one JSON document on stdout")
    d.set_defaults(func=command("demo"))
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    JSON_ERRORS[0] = "--json" in argv
    try:
        args = build_parser(_command_of(argv) or "").parse_args(argv)
    except SystemExit as e:  # usage errors (exit 2, message printed) and --help/--version (exit 0)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    args.given = given_options(argv)  # what the user typed (an option a command would not use is refused, not ignored)
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
