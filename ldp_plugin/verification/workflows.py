"""The workflows layer: the command line's privatize and collect paths, run in-process as a user
runs them (``ldp_plugin.cli.main``), each held to the library path it claims to run.

It sits with the command line (above the adapters, the jobs and the executors), so it is run by
``ldp verify`` over the whole registry, not by the per-mechanism layers. One driver per kind of job
the registry offers (:data:`JOB_KINDS` of :mod:`ldp_plugin.collect`), generated from the registry's
declarations (its first canonical instance), plus the ledger, the partitioned path and the other
commands that randomize:

* **collect** (``ldp collect JOB.toml``, one per registered name a job can feed — closed labels,
  integer codes, sets through pad-and-sample, numbers): exit status 0; the kept report parts equal,
  row for row, the Polars namespace's ``privatize`` of the same column with the same seed by the
  mechanism the parts' metadata names (the path the surfaces layer holds to the batch path); the
  estimates file equals that mechanism's estimate of those reports;
* **ledger** (``[budget]``): the first run charges ε rounded up once, a retry of the same
  ``query_id`` charges nothing more, a query past the cap is refused (exit status 2) and writes no
  estimate;
* **namespace with an accountant**: a spend per cohort before any report, a retried query id free
  (its kept reports returned), past the period cap refused, misuses refused, the totals the same
  when the ledger is reopened from its file;
* **partitioned** (``--executor local``, then ``ldp aggregate``): each partition randomized on its own
  streams; the aggregate of the parts equals the estimate of all their reports;
* **simulate / demo / heavy-hitters / mean / longitudinal simulate**: exit status 0 and the same
  JSON for the same seed (reproducible, as documented), another one for another seed;
* **attack** (every registered name declaring maximal-gain reports): the fakes are well-formed
  reports the server accepts, and the gain they buy on the raw estimate stays within the certified
  poisoning bound (where the instance has one); **shuffle** (full run, every pure oracle): the
  shuffled batch as an OpenDP measurement gives well-formed reports, refuses a batch below its
  minimum and a change past ``d_in = 2``; **namespace heavy hitters**: reproducible, the 40% string first;
* **refusals**: a job with ε ≤ 0, an unknown mechanism, an unknown key, a missing column — exit
  status 2 with the library's message (no traceback), no output file.
"""

from __future__ import annotations

import contextlib
import io
from fractions import Fraction
import json
import math
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import polars as pl

from .._errors import LDPParameterError
from ..accountant import Accountant, BudgetExceededError, LedgerError, Population
from ..mechanisms import KRR
from ..amplification.measurement import make_shuffle_amplified
from ..mechanisms import reports as reports_mod
from ..mechanisms.protocol import MaxGainAttack, SupportRates, has
from ..robust.attack import measure_gain
from ..robust.bounds import poison_bound
from ..sampling import SeededRandomSource
from ..cli import main as cli_main
from ..collect import JOB_KINDS
from ..persist import mechanism_from_spec, read_report_spec
from ..registry import KINDS, load_registry

__all__ = ["workflow_rows", "collect_jobs"]


def _run(argv: list) -> tuple:
    """``(exit status, stdout, stderr)`` of the command line, in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main([str(a) for a in argv])
        except SystemExit as e:  # argparse refusals
            rc = int(e.code) if isinstance(e.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _write_job(path: Path, sections: dict) -> Path:
    lines = []
    for sec, body in sections.items():
        lines.append(f"[{sec}]")
        nested = {k: v for k, v in body.items() if isinstance(v, dict)}
        lines += [f"{k} = {_toml(v)}" for k, v in body.items() if not isinstance(v, dict)]
        for k, v in nested.items():
            lines.append(f"[{sec}.{k}]")
            lines += [f"{kk} = {_toml(vv)}" for kk, vv in v.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def collect_jobs(quick: bool = False) -> list:
    """``(label, input column values, [mechanism] table)``: one job per registered name a job can
    feed, from its first canonical instance (labels for a closed alphabet; numbers in range;
    a set column through pad-and-sample for a frequency oracle too)."""
    reg = load_registry(kinds=KINDS)
    jobs = []
    for name in sorted(reg):
        decl = reg[name]
        if decl.kind not in JOB_KINDS:
            continue
        inst = dict(decl.canonical[0])
        mech = decl.mechanism_class()(**inst)
        eps = inst.get("epsilon")
        if eps is None:
            continue
        params = {k: v for k, v in inst.items() if k not in ("epsilon", "d", "categories", "m", "on_long")}
        spec: dict = {"name": name, "epsilon": eps}
        if mech.input_kind == "number":
            lo, hi = float(mech.lower), float(mech.upper)
            values = [lo + (hi - lo) * k / 7 for k in range(8)] * 4
        elif mech.input_kind == "set":
            d = int(mech.domain_size)
            items = [f"i{j}" for j in range(d)]
            spec["categories"] = items
            values = [[items[j % d], items[(j + 1) % d]][: int(mech.m)] for j in range(24)]
            spec["on_long"] = "sample"
        elif mech.categories is not None and "categories" not in decl.parameters:  # fixed labels (booleans)
            values = [mech.categories[j % len(mech.categories)] for j in range(24)]
        elif "d" in decl.parameters and mech.domain_size is not None:
            d = int(mech.domain_size)
            items = [f"i{j}" for j in range(d)]
            if "categories" in decl.parameters:
                spec["categories"] = items
                values = [items[j % d] for j in range(24)]
            else:  # integer codes
                spec["d"] = d
                values = [j % d for j in range(24)]
            if not quick and not any("pad-and-sample" in j[0] for j in jobs):  # a set column through pad-and-sample (the first oracle)
                label = (lambda j: items[j % d]) if "categories" in spec else (lambda j: j % d)
                jobs.append((f"{name} sets (pad-and-sample, m=2)", [[label(j), label(j + 1), label(j + 2)] for j in range(24)],
                             {**spec, "m": 2, "on_long": "sample", "params": params} if params else {**spec, "m": 2, "on_long": "sample"}))
        else:
            continue
        if params:
            spec["params"] = params
        jobs.append((name, values, spec))
    return jobs


def _collect_case(tmp: Path, label: str, values: list, spec: dict, seed: int, collection: Optional[dict] = None) -> list:
    fails = []
    work = Path(tempfile.mkdtemp(dir=tmp))
    col = pl.Series("v", values)
    pl.DataFrame([pl.Series("user", np.arange(len(values), dtype=np.int64)), col]).write_parquet(work / "in.parquet")
    job = _write_job(work / "job.toml", {"input": {"path": "in.parquet", "column": "v", "user_id": "user"}, "mechanism": spec,
                                         "collection": {"seed": seed, **(collection or {})}, "output": {"estimates": "est.parquet", "reports": "reports"}})
    rc, out, err = _run(["collect", job, "--json"])
    if rc != 0:
        return [f"exit status {rc}: {err.strip()[-200:]}"]
    parts = sorted((work / "reports").glob("part-*.parquet"))
    spec_read, _fp = read_report_spec(parts[0])
    mech = mechanism_from_spec(spec_read)
    reports = pl.concat([pl.read_parquet(p) for p in parts])
    frame = pl.read_parquet(work / "in.parquet")
    again = frame.ldp.privatize("v", mech, seed=seed, user_id="user", cohorts=(collection or {}).get("cohort_salt"))
    if reports.columns != again.columns or any(reports[c].to_list() != again[c].to_list() for c in reports.columns):
        fails.append("the job's reports differ from the namespace's privatize of the same column, seed and mechanism")
    est = pl.read_parquet(work / "est.parquet")
    want = reports.ldp.estimate(mech, **{k: v for k, v in (collection or {}).items() if k in ("candidates", "postprocess")})
    shared = [c for c in want.columns if c in est.columns]
    labels = [c for c in shared if c in ("item", "interval_kind")]  # compared as they are; the numbers within tolerance
    if not shared or any(not np.allclose(np.asarray(est[c].to_list(), dtype=float), np.asarray(want[c].to_list(), dtype=float), equal_nan=True)
                         for c in shared if c not in labels) or any(est[c].to_list() != want[c].to_list() for c in labels if c != "item"):
        fails.append("the estimates file differs from the mechanism's estimate of the kept reports")
    return fails


def _ledger_case(tmp: Path, seed: int) -> list:
    fails = []
    work = Path(tempfile.mkdtemp(dir=tmp))
    items = ["a", "b", "c"]
    pl.DataFrame({"user": np.arange(30), "v": [items[j % 3] for j in range(30)]}).write_parquet(work / "in.parquet")
    ledger = work / "pop.ledger"
    Accountant.create(ledger, Population(name="verify", lifetime_cap="3")).close()
    eps = 1.3

    def job(query: str, out: str) -> Path:
        return _write_job(work / f"{query}.toml", {"input": {"path": "in.parquet", "column": "v", "user_id": "user"},
                                                   "mechanism": {"name": "krr", "epsilon": eps, "categories": items},
                                                   "collection": {"seed": seed}, "output": {"estimates": out},
                                                   "budget": {"ledger": "pop.ledger", "query_id": query}})
    rc1 = _run(["collect", job("q1", "e1.parquet")])[0]
    rc2 = _run(["collect", job("q1", "e1b.parquet")])[0]  # a retry of the same query id
    with Accountant(ledger) as acc:
        spent = acc.spent()
    if rc1 != 0 or float(spent) < eps or float(spent) > math.nextafter(eps, math.inf):
        fails.append(f"the first collection did not charge ε once (exit {rc1}, spent {float(spent)!r})")
    with Accountant(ledger) as acc:
        if acc.spent() != spent:
            fails.append("a retry of the same query id was charged again")
    rc3, _o, err = _run(["collect", job("q2", "e2.parquet")])
    rc4, _o, err4 = _run(["collect", job("q3", "e3.parquet")])  # 3 × 1.3 > 3: refused
    if rc3 != 0 or rc4 != 2 or (work / "e3.parquet").exists() or "Traceback" in err4:
        fails.append(f"a query past the cap was not refused cleanly (exits {rc2}, {rc3}, {rc4})")
    return fails


def _accountant_case(tmp: Path, seed: int) -> list:
    """The ledger through the namespace (``accountant=``): a spend per cohort before any report, a
    retried query id free and its kept reports returned, a query past a cap refused with nothing
    randomized, misuses refused, and the ledger reopened from its file with the same totals."""
    fails: list = []
    work = Path(tempfile.mkdtemp(dir=tmp))
    path = work / "pop.ledger"
    acc = Accountant.create(path, Population(name="verify", lifetime_cap="3", period_cap="2", period="day", cohorts=4))
    mech = KRR(epsilon=1.0, categories=["a", "b", "c"])
    df = pl.DataFrame({"user": np.arange(12), "v": ["a", "b", "c"] * 4})

    def spend(q: str, cohorts: list, keep: bool = False):
        return df.ldp.privatize("v", mech, seed=seed, user_id="user", accountant=acc, query_id=q, budget_cohorts=cohorts, keep_reports=keep)
    first = spend("q1", [0, 1], keep=True)
    again = spend("q1", [0, 1], keep=True)
    if not first.equals(again) or acc.remaining([0]) != Fraction(1) or acc.remaining([2]) != Fraction(2):
        fails.append("a spend or its retry was not charged exactly once per cohort (or the kept reports differ)")
    spend("q2", [0])
    try:
        spend("q3", [0])
        fails.append("a query past the period cap was not refused")
    except BudgetExceededError:
        pass
    for label, call in (("cohorts past the population", lambda: spend("q4", [9])), ("no cohort", lambda: spend("q5", [])),
                        ("an empty query id", lambda: spend("", [2])), ("a bad ledger path", lambda: Accountant(work)),
                        ("a missing ledger", lambda: Accountant(work / "none.ledger")),
                        ("a ledger created twice", lambda: Accountant.create(path, acc.population))):
        try:
            call()
            fails.append(f"{label} was accepted")
        except (LDPParameterError, LedgerError):
            pass
    totals = (acc.remaining_by_cohort(), len(acc.history()), acc.spent([0]))
    acc.close()
    with Accountant(path) as again_acc:
        if (again_acc.remaining_by_cohort(), len(again_acc.history()), again_acc.spent([0])) != totals or totals[1] != 2:
            fails.append("the reopened ledger holds other totals")
    return fails


def _partitioned_case(tmp: Path, seed: int) -> list:
    work = Path(tempfile.mkdtemp(dir=tmp))
    items = ["a", "b", "c", "d"]
    for p in range(2):
        pl.DataFrame({"user": np.arange(20 * p, 20 * p + 20), "v": [items[(j + p) % 4] for j in range(20)]}).write_parquet(work / f"in-{p}.parquet")
    job = _write_job(work / "job.toml", {"input": {"path": "in-*.parquet", "column": "v", "user_id": "user"},
                                         "mechanism": {"name": "oue", "epsilon": 1.5, "categories": items},
                                         "collection": {"seed": seed}, "output": {"estimates": "est.parquet", "reports": "reports"}})
    rc, _o, err = _run(["collect", job, "--executor", "local", "--json"])
    if rc != 0:
        return [f"partitioned collect: exit status {rc}: {err.strip()[-200:]}"]
    rc, out, err = _run(["aggregate", work / "reports", "--mechanism-from-metadata", "--json"])
    if rc != 0:
        return [f"aggregate: exit status {rc}: {err.strip()[-200:]}"]
    parts = sorted((work / "reports").rglob("part-*.parquet"))
    mech = mechanism_from_spec(read_report_spec(parts[0])[0])
    want = pl.concat([pl.read_parquet(p) for p in parts]).ldp.estimate(mech)
    got = json.loads(out)
    rows = got.get("estimates", got.get("rows", []))
    est = [r["estimate"] for r in rows] if rows and isinstance(rows, list) else None
    if est is None or not np.allclose(est, want["estimate"].to_list()):
        return ["the aggregate of the parts differs from the estimate of all their reports"]
    return []


def _untimed(text: str) -> Any:
    """A command's JSON without its timings (``*seconds*`` keys)."""
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "seconds" not in k}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return strip(json.loads(text))


def _reproducible(argv: list, seed_flag: str = "--seed", top: Optional[str] = None) -> list:
    """The same output for the same seed, another for another seed (and, for a discovery, the
    string held by 40% of the users found first)."""
    rc1, out1, err1 = _run(argv + [seed_flag, 3])
    rc2, out2, _ = _run(argv + [seed_flag, 3])
    rc3, out3, _ = _run(argv + [seed_flag, 4])
    if rc1 != 0:
        return [f"exit status {rc1}: {err1.strip()[-200:]}"]
    if _untimed(out1) != _untimed(out2):
        return ["the same seed gave another output"]
    if _untimed(out1) == _untimed(out3):
        return ["another seed gave the same output"]
    if top is not None and [r["item"] for r in json.loads(out1)["items"]][:1] != [top]:
        return [f"the string held by 40% of the users ({top!r}) was not found first"]
    return []


def _attack_case(mech: Any, seed: int) -> list:
    """The maximal-gain attack: its fakes are well-formed reports (the server accepts every one),
    and the gain they buy on the raw estimate stays within the certified poisoning bound."""
    values = np.arange(60, dtype=np.int64) % int(mech.domain_size)
    honest = mech.randomize(values, rng=SeededRandomSource(seed))
    res = measure_gain(mech, honest, [0], fraction=0.1, rng=SeededRandomSource(seed + 1))
    fakes = mech.max_gain_reports([0], res.m, rng=SeededRandomSource(seed + 1))
    _ok, rejected = reports_mod.check_reports(mech, fakes)
    fails = [f"{sum(rejected.values())} of the attack's fake reports are malformed"] if rejected else []
    try:
        bound = poison_bound(mech, res.before, poison_count=res.m)
    except LDPParameterError:  # no certified bound for this instance (hash collisions): the fakes are still checked
        return fails
    if float(res.gain[0]) > float(np.asarray(bound.poison_shift)[0]) * (1 + 1e-9) + 1e-12:
        fails.append(f"the attack's gain {float(res.gain[0]):.4g} exceeds the certified bound {float(np.asarray(bound.poison_shift)[0]):.4g}")
    return fails


def _shuffle_case(mech: Any) -> list:
    """The shuffled batch as an OpenDP measurement: every report well-formed, a batch below the
    guaranteed minimum refused before any report, the map 0 at d_in = 0 and refused past 2."""
    n = 40
    meas = make_shuffle_amplified(mech, n)
    values = np.arange(n, dtype=np.int64) % int(mech.domain_size)
    out = meas(values)
    _ok, rejected = reports_mod.check_reports(mech, out)
    fails = ["the shuffled batch holds malformed reports"] if rejected or reports_mod.report_count(mech, out) != n else []
    for label, call in (("a batch below the minimum", lambda: meas(values[: n - 1])), ("d_in = 3", lambda: meas.map(3))):
        try:
            call()
            fails.append(f"{label} was accepted")
        except Exception as e:  # noqa: BLE001 - the library's error, through OpenDP's boundary
            if "Traceback" in str(e)[:20]:
                fails.append(f"{label}: a raw traceback")
    return fails


def _refusals(tmp: Path) -> list:
    work = Path(tempfile.mkdtemp(dir=tmp))
    pl.DataFrame({"user": [1, 2, 3], "v": ["a", "b", "a"]}).write_parquet(work / "in.parquet")
    base = {"input": {"path": "in.parquet", "column": "v"}, "mechanism": {"name": "krr", "epsilon": 1.0, "categories": ["a", "b"]},
            "output": {"estimates": "est.parquet"}}
    bad = {
        "epsilon = 0": {**base, "mechanism": {**base["mechanism"], "epsilon": 0.0}},
        "an unknown mechanism": {**base, "mechanism": {**base["mechanism"], "name": "no-such-mechanism"}},
        "an unknown key": {**base, "collection": {"sede": 1}},
        "a missing column": {**base, "input": {"path": "in.parquet", "column": "w"}},
        "an item outside the categories": {**base, "mechanism": {**base["mechanism"], "categories": ["a", "c"]}},
    }
    fails = []
    for label, sections in bad.items():
        rc, _o, err = _run(["collect", _write_job(work / "bad.toml", sections)])
        if rc == 0 or "Traceback" in err or (work / "est.parquet").exists():
            fails.append(f"a job with {label} was not refused cleanly (exit {rc})")
    return fails


def _namespace_discovery(path: Path, seed: int) -> list:
    """``frame.ldp.heavy_hitters``: the same discoveries for the same seed, the 40% string first."""
    frame = pl.read_parquet(path)
    runs = [frame.ldp.heavy_hitters("w", epsilon=4.0, method=m, top_k=3, seed=seed, alphabet="ab", max_length=4) for m in ("pem", "sfp")]
    again = frame.ldp.heavy_hitters("w", epsilon=4.0, method="pem", top_k=3, seed=seed, alphabet="ab", max_length=4)
    fails = [] if runs[0].equals(again) else ["the same seed gave other discoveries"]
    fails += [f"{m}: the string held by 40% of the users was not found first" for m, r in zip(("pem", "sfp"), runs) if r["item"].to_list()[:1] != ["abba"]]
    return fails


def workflow_rows(*, seed: int = 0, quick: bool = False, progress: Optional[Callable] = None) -> list:
    """One row per workflow case (``name`` ``workflow …``, ``passed``, ``failures``)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="ldp-verify-") as t:
        tmp = Path(t)
        pl.DataFrame({"w": (["abba"] * 60 + ["ab"] * 40 + ["ba"] * 30 + ["b"] * 20)}).write_parquet(tmp / "words.parquet")
        cases: list = [(f"workflow collect {label}", (lambda v=values, s=spec, lb=label: _collect_case(tmp, lb, v, s, seed)))
                       for label, values, spec in collect_jobs(quick)]
        cases += [
            ("workflow collect open alphabet (orr, candidates, cohort salt)",
             lambda: _collect_case(tmp, "orr open", ["maps", "mail", "chat", "maps"] * 6, {"name": "orr", "epsilon": 2.0, "params": {"k": 4, "cohorts": 4}},
                                   seed, {"cohort_salt": 7, "candidates": ["maps", "mail", "chat"], "postprocess": "none"})),
            ("workflow collect with a ledger", lambda: _ledger_case(tmp, seed)),
            ("workflow namespace with an accountant", lambda: _accountant_case(tmp, seed)),
            ("workflow collect --executor local + aggregate", lambda: _partitioned_case(tmp, seed)),
            ("workflow collect refusals", lambda: _refusals(tmp)),
            ("workflow simulate", lambda: _reproducible(["simulate", "--mechanism", "krr", "--d", 4, "--epsilon", 1.5, "--n", 300, "--json"])),
            ("workflow simulate ibu", lambda: _reproducible(["simulate", "--mechanism", "oue", "--d", 4, "--epsilon", 1, "--n", 300, "--postprocess", "ibu", "--json"])),
            ("workflow simulate em zipf", lambda: _reproducible(["simulate", "--mechanism", "krr", "--d", 5, "--epsilon", 1, "--n", 300, "--postprocess", "em",
                                                                  "--distribution", "zipf", "--truth", "population", "--json"])),
            ("workflow simulate sets", lambda: _reproducible(["simulate", "--mechanism", "sample-oue", "--d", 5, "--m", 2, "--epsilon", 2, "--n", 200, "--json"])),
            ("workflow demo", lambda: _reproducible(["demo", "--mechanism", "krr", "--epsilon", 2, "--n", 200, "--json"])),
            ("workflow mean simulate", lambda: _reproducible(["mean", "simulate", "--mechanism", "duchi", "--epsilon", 1, "--n", 200, "--json"])),
            ("workflow longitudinal simulate", lambda: _reproducible(["longitudinal", "simulate", "--mechanism", "l-grr", "--d", 3, "--epsilon-perm", 2, "--epsilon-1", 1, "--rounds", 2, "--change-prob", 0.2, "--n", 100, "--json"])),
        ]
        reg = load_registry(kinds=KINDS)
        for name in sorted(reg):  # the attack and the shuffle, on every registered name that declares them
            mech = reg[name].mechanism_class()(**reg[name].canonical[0])
            if has(mech, MaxGainAttack) and mech.domain_size is not None and mech.input_kind == "value" and mech.categories is None:
                cases.append((f"workflow attack {name}", lambda m=mech: _attack_case(m, seed)))
            if has(mech, SupportRates) and mech.input_kind == "value" and mech.categories is None and not quick:
                cases.append((f"workflow shuffle {name}", lambda m=mech: _shuffle_case(m)))
        for kind in KINDS:  # ldp demo of one name of every other family
            first = next((n for n in sorted(reg) if reg[n].kind == kind and "epsilon" in reg[n].canonical[0]), None)
            if kind != "frequency" and first is not None:
                cases.append((f"workflow demo {first}", lambda n=first: _reproducible(["demo", "--mechanism", n, "--epsilon", 2, "--n", 200, "--json"])))
        cases.append(("workflow namespace heavy-hitters", lambda: _namespace_discovery(tmp / "words.parquet", seed)))
        for method in ("pem", "treehist", "sfp"):
            cases.append((f"workflow heavy-hitters {method}",
                          lambda m=method: _reproducible(["heavy-hitters", "simulate", "--input", tmp / "words.parquet", "--column", "w", "--epsilon", 4,
                                                          "--method", m, "--top-k", 3, "--alphabet", "ab", "--max-length", 4, "--json"],
                                                         top="abba")))
        for label, run in cases:
            if progress is not None:
                progress(label)
            try:
                fails = run()
            except Exception as e:  # noqa: BLE001 - a crash of a workflow is a failure, reported
                fails = [f"{type(e).__name__}: {str(e)[:200]}"]
            rows.append({"name": label, "instance": {}, "declared_epsilon": float("nan"), "realized_epsilon": float("nan"),
                         "workflow": True, "failures": fails, "passed": not fails})
    return rows
