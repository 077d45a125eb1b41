"""``ldp collect JOB.toml``: privatize a file of per-user values or sets and estimate frequencies.

A job file (paths are relative to the job file)::

    [input]
    path = "apps.parquet"        # .parquet or .csv
    column = "apps"              # one value per user, or a list of items per user
    user_id = "user"             # optional: checked for nulls and duplicates
    list_separator = ";"         # CSV only: split this string column into per-user sets

    [mechanism]
    name = "orr"                 # any registered mechanism (`ldp mechanisms`)
    epsilon = 2.0                # per user (max-divergence)
    categories = ["maps", "mail"]   # closed alphabet labels (or `d = 1024` for integer codes);
                                    # omit both for an open alphabet (orr/orappor) + candidates
    m = 4                        # per-user sets: pad-and-sample to m (omit for scalar columns)
    on_long = "error"            # or "sample": sets longer than m are sampled down
    [mechanism.params]           # mechanism parameters; O-RR without k/cohorts: choose_orr
    k = 8
    cohorts = 64

    [collection]
    cohort_salt = 7              # cohort = salted hash of the user id (else fresh randomness)
    seed = 1                     # reproducible and NOT secure; omit for the OS CSPRNG
    unknown = "error"            # or "other" (a declared category)
    candidates = ["maps", "mail", "chat"]   # open alphabets: the items to estimate
    postprocess = "projection"
    confidence = 0.95

    [output]
    estimates = "out/estimates.parquet"     # .parquet or .csv
    plot = "out/estimates.png"              # optional (needs ldp-plugin[plot])
    reports = "out/reports"                 # optional: keep the reports as Parquet parts

    [budget]                     # optional: spend from a ledger (`ldp budget init`) first
    ledger = "app-users.ledger"
    query_id = "apps-2026-11-22" # a retry of the same id is not charged twice
    cohorts = [0, 1]             # the population cohorts this file covers (default: all)

The reports are released once (streamed from the input); the estimates, plot and summary are
post-processing and cost no privacy. ``ldp collect JOB.toml --executor local|dask [--address A]``
treats ``[input] path`` as a glob of Parquet partitions: each is randomized with its own streams
into ``[output] reports`` and the parts are aggregated by the executor (:mod:`ldp_plugin.executors`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ._extras import extra_module, require_extra
from ._errors import LDPInputError, LDPParameterError
from ._boundary import can_write_under, read_small_file, reading
from .registry import KINDS, build, load_registry

#: the registry kinds a job's one input column can feed (a value or set per user, a number per user)
JOB_KINDS = ("frequency", "distribution", "mean")
from .adapters import estimate as estimate_reports, privatize
from .adapters.polars_namespace import check_input
from .accountant import Accountant
from .executors import aggregate, make_executor, privatize_files, resolve_paths

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Job", "load_job", "run_job"]

_SECTIONS = {
    "input": {"path", "column", "user_id", "list_separator"},
    "mechanism": {"name", "epsilon", "categories", "d", "m", "on_long", "params"},
    "collection": {"cohort_salt", "seed", "unknown", "candidates", "postprocess", "confidence"},
    "output": {"estimates", "plot", "reports"},
    "budget": {"ledger", "query_id", "cohorts"},
}


@dataclass(frozen=True)
class Job:
    base: Path
    input: dict
    mechanism: dict
    collection: dict
    output: dict
    budget: Optional[dict] = None

    def path(self, rel: str) -> Path:
        p = Path(rel)
        return p if p.is_absolute() else self.base / p


def load_job(path: str | Path) -> Job:
    """Read and validate a job file (unknown sections or keys are errors, not ignored)."""
    path = Path(path)
    text = read_small_file(path, "job file")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LDPParameterError(f"job file {path.name} is not valid TOML: {e}") from None
    unknown = set(raw) - set(_SECTIONS)
    if unknown:
        raise LDPParameterError(f"job file has unknown section(s) {sorted(unknown)}; allowed: {sorted(_SECTIONS)}")
    for sec, keys in _SECTIONS.items():
        bad = set(raw.get(sec, {})) - keys
        if bad:
            raise LDPParameterError(f"[{sec}] has unknown key(s) {sorted(bad)}; allowed: {sorted(keys)}")
    for sec, req in (("input", ("path", "column")), ("mechanism", ("name", "epsilon")), ("output", ("estimates",))):
        for key in req:
            if key not in raw.get(sec, {}):
                raise LDPParameterError(f"job file needs [{sec}] {key}")
    return Job(path.resolve().parent, raw["input"], raw["mechanism"], raw.get("collection", {}), raw["output"], raw.get("budget"))


def build_mechanism(spec: dict, n_hint: int) -> Any:
    """The mechanism of a job's ``[mechanism]`` section (wrapped in SampleOne if ``m`` is set),
    built by the registry (the one builder; missing parameters are named there)."""

    name = spec["name"]
    every = load_registry(kinds=KINDS)
    if name in every and every[name].kind not in JOB_KINDS:
        raise LDPParameterError(f"[mechanism] name = {name!r} is a {every[name].kind} mechanism: a job reads one column per user "
                                f"(kinds {', '.join(JOB_KINDS)}); use the Polars adapters (privatize_key_values, privatize_attributes)")
    reg = {k: v for k, v in every.items() if v.kind in JOB_KINDS}
    if not isinstance(spec.get("params", {}), dict):  # before reading it: dict(3) would be a bare TypeError
        raise LDPParameterError("[mechanism] params must be a table, e.g. params = {k = 8, cohorts = 16}")
    params = dict(spec.get("params", {}))
    for key in ("epsilon", "d", "m", "on_long", "n"):
        if key in params:
            raise LDPParameterError(f"[mechanism] params.{key} duplicates [mechanism] {key}; give it once, in [mechanism]")
    cats, d = params.pop("categories", spec.get("categories")), spec.get("d")
    if name in reg and cats is None and d is None and spec.get("_candidates"):  # open alphabet: size for the candidates
        derived = reg[name].mechanism_class().default_parameters(
            params, epsilon=float(spec["epsilon"]), d=len(spec["_candidates"]) + (1 if spec.get("m") else 0), n=n_hint, closed=False)
        for key, value in derived.items():
            params.setdefault(key, value)
    return build(name, epsilon=spec["epsilon"], d=d, categories=cats, m=spec.get("m"), on_long=spec.get("on_long", "error"), n=n_hint, registry=reg, **params)


def _read_input(job: Job):
    import polars as pl

    src = job.path(job.input["path"])
    if not src.exists():
        raise LDPInputError(f"input file {str(src)!r} does not exist")
    if src.is_dir():
        raise LDPInputError(f"[input] path {str(src)!r} is a directory; give a .parquet or .csv file (a glob needs --executor)")
    column = job.input["column"]
    if src.suffix.lower() == ".parquet":
        lf = pl.scan_parquet(src)
    elif src.suffix.lower() == ".csv":
        lf = pl.scan_csv(src)
        sep = job.input.get("list_separator")
        if sep is not None:
            lf = lf.with_columns(pl.col(column).fill_null("").str.split(sep).list.eval(pl.element().filter(pl.element() != "")))
    else:
        raise LDPInputError(f"input must be a .parquet or .csv file (got {src.suffix!r})")
    return lf


def _write_table(df, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".parquet":
        df.write_parquet(path)
    elif path.suffix.lower() == ".csv":
        df.write_csv(path)
    else:
        raise LDPParameterError(f"estimates must be written as .parquet or .csv (got {path.suffix!r})")


#: what the plot's missing-extra error adds: the plot is optional in a job
_PLOT_HINT = " (or drop [output] plot)"


def plot_estimates(frame, path: Path, *, title: str, max_items: int = 40) -> None:
    """A PNG of the estimates (largest first) with their confidence intervals."""
    extra_module("matplotlib", "plot", "the plot needs matplotlib", hint=_PLOT_HINT).use("Agg")
    plt = extra_module("matplotlib.pyplot", "plot", "the plot needs matplotlib", hint=_PLOT_HINT)
    top = frame.sort("estimate", descending=True).head(max_items)
    labels = [str(v) for v in top["item"].to_list()]
    est = top["estimate"].to_numpy()
    lo = top["ci_lower"].to_numpy()
    hi = top["ci_upper"].to_numpy()
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(labels) + 1.5))
    y = list(range(len(labels)))[::-1]
    ax.barh(y, est, color="#4c72b0", alpha=0.8, label="estimate")
    ax.errorbar((lo + hi) / 2, y, xerr=(hi - lo) / 2, fmt="none", ecolor="black", capsize=2, label="confidence interval")
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("frequency")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: what ``[output] plot`` may be (matplotlib picks the format from the extension)
PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg")


def _check_outputs(job: Job) -> None:
    """Every output path must be of the right kind, creatable and writable, and the plot's
    matplotlib importable — all checked before the spend (a failure after it would cost ε)."""
    import os

    for key in ("estimates", "plot", "reports"):
        if key not in job.output:
            continue
        if not isinstance(job.output[key], str) or not job.output[key].strip():
            raise LDPParameterError(f"[output] {key} must be a path (a non-empty string)")
        p = job.path(job.output[key])
        shown = f"[output] {key} = {str(job.output[key])!r}"
        if key == "reports":
            if p.exists() and not p.is_dir():
                raise LDPParameterError(f"{shown} is a file; reports are written into a directory (give a new or existing directory)")
        elif p.is_dir():
            raise LDPParameterError(f"{shown} is a directory; give a file path")
        if key == "estimates" and p.suffix.lower() not in (".parquet", ".csv"):
            raise LDPParameterError(f"{shown}: estimates are written as .parquet or .csv (got {p.suffix or 'no extension'!r})")
        if key == "plot":
            if p.suffix.lower() not in PLOT_SUFFIXES:
                raise LDPParameterError(f"{shown}: the plot is written as one of {', '.join(PLOT_SUFFIXES)} (got {p.suffix or 'no extension'!r})")
            require_extra("matplotlib", "plot", "[output] plot needs matplotlib", hint=_PLOT_HINT)
        parent = p if key == "reports" else p.parent
        probe = parent
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if (not probe.is_dir() or not os.access(probe, os.W_OK) or not can_write_under(probe)
                or (p.exists() and key != "reports" and not os.access(p, os.W_OK))):
            raise LDPParameterError(f"[output] {key} = {str(job.output[key])!r} is not writable")


def run_job(job: Job, *, executor: Optional[str] = None, address: Optional[str] = None) -> dict:
    """Run a job: stream the input, privatize once, estimate, write outputs; return a summary.

    With ``executor`` (``"local"`` or ``"dask"``) the input may be a glob of files: each file is a
    partition randomized by the executor into ``[output] reports`` (required), then aggregated by
    the same executor (:mod:`ldp_plugin.executors`)."""
    import polars as pl


    if executor is not None:
        return _run_partitioned(job, executor, address)
    lf = _read_input(job)
    src = job.path(job.input["path"])
    with reading(src, "[input] path"):  # before any spend: the file parses and has the column(s)
        names = lf.collect_schema().names()
        for key in ("column", "user_id"):
            if job.input.get(key) is not None and job.input[key] not in names:
                raise LDPInputError(f"[input] {key} = {job.input[key]!r} is not a column of {src.name}")
        used = [pl.col(job.input[k]).null_count() for k in ("column", "user_id") if job.input.get(k) is not None]
        n_hint = int(lf.select(pl.len(), *used).collect(engine="streaming").item(0, 0))
    if n_hint == 0:
        raise LDPInputError(f"[input] path {str(src)!r} has no rows (no users): nothing to collect")
    coll = job.collection
    spec = dict(job.mechanism, _candidates=coll.get("candidates"))
    mech = build_mechanism(spec, max(n_hint, 1))
    accountant = None
    budget = getattr(job, "budget", None) or {}
    if budget:

        if "ledger" not in budget or "query_id" not in budget:
            raise LDPParameterError("[budget] needs ledger and query_id")
        accountant = Accountant(job.path(budget["ledger"]))
    _check_outputs(job)  # before any spend: an unwritable output must not cost budget
    prior = None if accountant is None else accountant.release_status(budget["query_id"])
    t0 = time.perf_counter()
    reports_dir = job.output.get("reports")
    with reading(src, "[input] path"):
        reports = _privatize(lf, job, mech, coll, reports_dir, accountant, budget)
    t1 = time.perf_counter()
    est = estimate_reports(
        reports,
        mech,
        candidates=coll.get("candidates"),
        postprocess=coll.get("postprocess", "projection" if _is_frequency(mech) else None),
        confidence=float(coll.get("confidence", 0.95)),
    )
    return _finish(job, mech, est, n_hint, coll, reports_dir, accountant, budget, prior, t0, t1)


def _described(mech: Any) -> dict:
    """The mechanism as the summary shows it (``mechanism`` + its parameters), for every family."""
    described = mech.params()  # every mechanism has it (MechanismBase's default: its spec's parameters)
    return described if "mechanism" in described else {"mechanism": mech.name, **described}


def _is_frequency(mech: Any) -> bool:
    """A frequency oracle (items or sets): the one family with post-processing options."""
    return mech.input_kind in ("value", "set")


def _privatize(lf, job: Job, mech: Any, coll: dict, reports_dir: Any, accountant: Any, budget: dict):
    return privatize(
        lf,
        job.input["column"],
        mech,
        user_id=job.input.get("user_id"),
        cohorts=coll.get("cohort_salt"),
        seed=coll.get("seed"),
        unknown=coll.get("unknown", "error"),
        sink=None if reports_dir is None else job.path(reports_dir),
        accountant=accountant,
        query_id=budget.get("query_id"),
        budget_cohorts=budget.get("cohorts"),
        keep_reports=accountant is not None and reports_dir is None,
    )


def _finish(job: Job, mech: Any, est: Any, n_hint: int, coll: dict, reports_dir: Any, accountant: Any, budget: dict, prior: Any, t0: float, t1: float) -> dict:
    t2 = time.perf_counter()
    out_path = job.path(job.output["estimates"])
    _write_table(est, out_path)
    plot_path: Optional[Path] = None
    if "plot" in job.output:
        plot_path = job.path(job.output["plot"])
        plot_estimates(est, plot_path, title=f"{mech.name}, epsilon={mech.epsilon}, n={n_hint:,}")
    return {
        "mechanism": _described(mech),
        "epsilon": mech.epsilon,
        "users": n_hint,
        "secure_randomness": coll.get("seed") is None,
        "estimates": str(out_path),
        "plot": None if plot_path is None else str(plot_path),
        "reports": None if reports_dir is None else str(job.path(reports_dir)),
        "budget": None if accountant is None else {
            "ledger": str(accountant.path), "query_id": budget["query_id"], "remaining": float(accountant.remaining(budget.get("cohorts"))),
            "charged": prior is None,
            "note": (
                f"retry: query id {budget['query_id']!r} was already released; these estimates are from the reports kept by that "
                "earlier run, not from the input file as it is now; no new spend (use a new query id for a new collection)"
            ) if prior is not None else f"charged epsilon={mech.epsilon}",
        },
        "privatize_seconds": round(t1 - t0, 3),
        "estimate_seconds": round(t2 - t1, 3),
        "intervals": (
            f"{float(coll.get('confidence', 0.95)):.0%} confidence intervals around the unbiased estimate, covering the frequencies "
            f"of the users in the input; estimates post-processed by {coll.get('postprocess', 'projection')!r}"
        ) if _is_frequency(mech) else (
            f"{float(coll.get('confidence', 0.95)):.0%} intervals for the users in the input"
            + ("; " + str(est["interval_kind"][0]) if "interval_kind" in est.columns else "")
        ),
        "top": (est.sort("estimate", descending=True) if "item" in est.columns else est).head(10).to_dicts(),
    }


def _run_partitioned(job: Job, kind: str, address: Optional[str]) -> dict:
    import polars as pl


    if "reports" not in job.output:
        raise LDPParameterError("a partitioned job (--executor) writes its reports: set [output] reports = DIR")
    if job.input.get("list_separator") is not None:
        raise LDPParameterError("--executor reads Parquet partitions; list_separator applies to single CSV inputs")
    paths = resolve_paths(str(job.path(job.input["path"])))
    with reading(job.input["path"], "[input] path"):
        n_hint = int(pl.scan_parquet(paths).select(pl.len()).collect(engine="streaming").item())
    coll = job.collection
    mech = build_mechanism(dict(job.mechanism, _candidates=coll.get("candidates")), max(n_hint, 1))
    budget = job.budget or {}
    _check_outputs(job)
    ex = make_executor(kind, address)
    t0 = time.perf_counter()
    try:
        def produce():
            return privatize_files(
                paths, job.input["column"], mech, job.path(job.output["reports"]), executor=ex, seed=coll.get("seed"),
                user_id=job.input.get("user_id"), cohorts=coll.get("cohort_salt"), unknown=coll.get("unknown", "error"),
            )

        if budget:
            for path in paths:  # every partition checked before the spend (the executor randomizes after it)
                with reading(path, "[input] path"):
                    check_input(pl.scan_parquet(path), job.input["column"], mech, user_id=job.input.get("user_id"),
                                cohorts=coll.get("cohort_salt"), unknown=coll.get("unknown", "error"))
            acc = Accountant(job.path(budget["ledger"]))
            if acc.release_status(budget["query_id"]) is not None:
                raise LDPParameterError(acc.retry_refusal(budget["query_id"]) + " (a partitioned job keeps no reports)")
            files = acc.release(budget["query_id"], mech, produce, cohorts=budget.get("cohorts"))
        else:
            files = produce()
        t1 = time.perf_counter()
        state = aggregate(files, executor=ex)
    finally:
        if hasattr(ex, "close"):
            ex.close()
    kw = dict(confidence=float(coll.get("confidence", 0.95)))
    if _is_frequency(mech) or "postprocess" in coll:  # the other families refuse post-processing options
        kw["postprocess"] = coll.get("postprocess", "projection")
    if coll.get("candidates") is not None:
        kw["candidates"] = coll["candidates"]
    est = state.estimate(**kw).to_polars()
    t2 = time.perf_counter()
    out_path = job.path(job.output["estimates"])
    _write_table(est, out_path)
    plot_path = None
    if "plot" in job.output:
        plot_path = job.path(job.output["plot"])
        plot_estimates(est, plot_path, title=f"{mech.name}, epsilon={mech.epsilon}, n={n_hint:,}")
    return {
        "mechanism": _described(mech), "epsilon": mech.epsilon, "users": n_hint, "executor": kind, "partitions": len(files),
        "secure_randomness": coll.get("seed") is None, "estimates": str(out_path), "plot": None if plot_path is None else str(plot_path),
        "reports": str(job.path(job.output["reports"])), "privatize_seconds": round(t1 - t0, 3), "estimate_seconds": round(t2 - t1, 3),
        "budget": None if not budget else {"ledger": str(job.path(budget["ledger"])), "query_id": budget["query_id"]},
        "top": est.sort("estimate", descending=True).head(10).to_dicts(),
    }
