"""``ldp report SOURCE --out REPORT.html``: one self-contained HTML page of what was estimated.

``SOURCE`` is an ``ldp collect`` job file (its estimates file, mechanism, ε and, if it names one,
its ledger), a federated round summary (``round-NNNN.json``), a directory of them (every
``round-*.json`` below it, in order) or a ledger. Each estimate is drawn with its intervals and listed in a
table beside its mechanism, ε, reports and status; each ledger (the job's, and every
``--ledger``) shows its population, cap, remaining budget, history (cohorts as ranges) and its
spend over time. Pictures are inline PNGs; the page has no script and loads nothing.
Post-processing only: nothing is charged."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import polars as pl

from .._boundary import read_small_file, reading
from .._errors import LDPParameterError
from ..accountant import Accountant, cohort_ranges
from ..collect import load_job
from ..pictures import figure_data_uri, frequencies, html_report
from ..progress import progress
from ._common import emit
from .budget import budget_picture

#: rows drawn and listed per estimate (the largest first); the table says how many were left out
MAX_ROWS = 40


def _num(v: Any) -> Optional[float]:
    return None if v is None else float(v)


def _estimate_section(heading: str, facts: list, rows: list, confidence_note: str) -> dict:
    """A section for one estimate: ``rows`` of ``{item, estimate, ci_lower, ci_upper[, std_error]}``."""
    rows = sorted(rows, key=lambda r: -(r.get("estimate") or 0.0))
    shown = rows[:MAX_ROWS]
    sec: dict = {"heading": heading, "facts": facts, "notes": [confidence_note]}
    if len(rows) > MAX_ROWS:
        sec["notes"].append(f"the {MAX_ROWS} largest of {len(rows)} estimates are shown")
    drawable = [r for r in shown if None not in (r.get("estimate"), r.get("ci_lower"), r.get("ci_upper"))]
    if drawable:
        ax = frequencies([r["item"] for r in drawable], [r["estimate"] for r in drawable], [r["ci_lower"] for r in drawable],
                         [r["ci_upper"] for r in drawable], title=heading)
        sec["image"] = figure_data_uri(ax.figure)
        sec["alt"] = f"{heading}: estimates with their intervals"
    has_se = any("std_error" in r for r in shown)
    cols = ["item", "estimate", *(["std_error"] if has_se else []), "ci_lower", "ci_upper"]
    sec["table"] = (cols, [[("—" if r.get(c) is None else r.get(c)) for c in cols] for r in shown])
    return sec


def _job_sections(path: Path) -> tuple:
    job = load_job(path)
    est_path = job.path(job.output["estimates"])
    if not est_path.is_file():
        raise LDPParameterError(f"the job's estimates file {est_path.name!r} does not exist: run `ldp collect {path.name}` first")
    with reading(est_path):
        frame = pl.read_parquet(est_path) if est_path.suffix == ".parquet" else pl.read_csv(est_path)
    missing = {"item", "estimate", "ci_lower", "ci_upper"} - set(frame.columns)
    if missing:
        raise LDPParameterError(f"{est_path.name} is not an estimates table (no {sorted(missing)} columns)")
    mech = job.mechanism
    coll = job.collection
    facts = [("mechanism", mech["name"]), ("epsilon per user", mech["epsilon"]),
             ("categories", len(mech["categories"]) if "categories" in mech else mech.get("d", "open alphabet")),
             ("items per user (m)", mech.get("m", 1)), ("post-processing", coll.get("postprocess", "projection")),
             ("randomness", "seeded (reproducible, not secure)" if "seed" in coll else "OS CSPRNG"),
             ("input", f"{job.input['path']} (column {job.input['column']})"), ("estimates file", str(est_path))]
    conf = float(coll.get("confidence", 0.95))
    sec = _estimate_section(f"estimates: {job.input['column']}", facts, frame.to_dicts(),
                            f"{conf:.0%} confidence intervals around the unbiased estimate, covering the frequencies of the users in the input")
    ledgers = [job.path(job.budget["ledger"])] if job.budget and "ledger" in job.budget else []
    return f"ldp collect: {path.name}", [sec], ledgers


def _round_sections(summary: dict, name: str) -> list:
    out = []
    for row in summary.get("queries", []):
        label = row.get("query") or row.get("query_id") or "query"
        facts = [("plan", summary.get("plan")), ("round", summary.get("round")), ("mechanism", row.get("mechanism", row.get("kind", "—"))),
                 ("epsilon per device", row.get("epsilon")), ("status", row.get("status")),
                 ("reports accepted", row.get("reports_accepted")), ("reports rejected", row.get("reports_rejected")),
                 ("devices refused", row.get("devices_refused")), ("nodes answered", f"{row.get('nodes_answered')} of {row.get('nodes_asked')}")]
        if row.get("refused_by_reason"):
            facts.append(("refused by reason", json.dumps(row["refused_by_reason"], sort_keys=True)))
        if row.get("incomplete_reason"):
            facts.append(("incomplete because", row["incomplete_reason"]))
        heading = f"{name} · round {summary.get('round')} · {label}"
        rows = row.get("estimate")
        if rows is None and isinstance(row.get("discovered"), dict):
            rows = row["discovered"].get("items")
        if rows:
            rows = [{"item": "mean" if r.get("item") is None else r["item"], "estimate": _num(r.get("estimate")),
                     "ci_lower": _num(r.get("ci_lower")), "ci_upper": _num(r.get("ci_upper"))} for r in rows]
            out.append(_estimate_section(heading, facts, rows, "95% confidence intervals around the released (unbiased) estimate"))
        else:
            out.append({"heading": heading, "facts": facts, "notes": ["no estimate was released for this query in this round"]})
    return out


def _summaries(path: Path) -> list:
    files = sorted(path.rglob("round-*.json")) if path.is_dir() else [path]
    if not files:
        raise LDPParameterError(f"{path.name!r} holds no round summaries (round-NNNN.json)")
    docs = []
    for f in files:
        try:
            doc = json.loads(read_small_file(f, "round summary"))
        except (LDPParameterError, json.JSONDecodeError):
            raise LDPParameterError(f"{f.name} is not a readable round summary (JSON)") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("queries"), list):
            raise LDPParameterError(f"{f.name} is not a round summary (no 'queries' list)")
        docs.append((f, doc))
    return docs


def _ledger_section(path: Path) -> dict:
    acc = Accountant(path)
    try:
        pop = acc.population
        hist = acc.history()
        facts = [("population", pop.name), ("ledger", str(acc.path)), ("lifetime cap", float(pop.lifetime_cap)),
                 ("period cap", "—" if pop.period_cap is None else f"{float(pop.period_cap):g} per {pop.period}"),
                 ("cohorts", pop.cohorts), ("spends", len(hist)), ("largest spend of a cohort", float(acc.spent())),
                 ("remaining (all cohorts)", float(acc.remaining()))]
        table = (["seq", "time (UTC)", "query id", "mechanism", "epsilon", "cohorts"],
                 [[r.seq, r.time, r.query_id, r.mechanism, float(r.epsilon), cohort_ranges(r.cohorts, pop.cohorts)] for r in hist[-MAX_ROWS:]])
    finally:
        acc.close()
    fig, _ = budget_picture([path])
    notes = [f"the last {MAX_ROWS} of {len(hist)} spends are listed"] if len(hist) > MAX_ROWS else []
    return {"heading": f"budget ledger: {pop.name}", "facts": facts, "notes": notes, "image": figure_data_uri(fig),
            "alt": f"spend over time of population {pop.name}", "table": table}


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def cmd_report(args) -> int:
    """Write the HTML report of a collection job, a round summary or a results directory."""
    src = Path(args.source)
    out = Path(args.out)
    if not src.exists():
        raise LDPParameterError(f"{args.source!r} does not exist")
    if out.suffix.lower() not in (".html", ".htm"):
        raise LDPParameterError("--out must be an .html file")
    if not out.parent.is_dir():
        raise LDPParameterError("--out: its directory does not exist")
    ledgers = [Path(p) for p in args.ledger]
    for p in ledgers:
        if not p.is_file():
            raise LDPParameterError(f"--ledger {p.name!r} does not exist")
    if src.is_file() and src.suffix == ".toml":
        title, sections, job_ledgers = _job_sections(src)
        ledgers = job_ledgers + ledgers
    elif src.is_file() and _is_sqlite(src):
        title, sections, ledgers = f"budget ledger: {src.name}", [], [src, *ledgers]
    else:
        sections = []
        docs = _summaries(src)
        for f, doc in progress(docs, total=len(docs), desc="ldp report", unit="round"):
            sections += _round_sections(doc, str(doc.get("plan") or f.stem))
        title = f"federated results: {src.name}"
    for p in progress(ledgers, total=len(ledgers), desc="ldp report: ledgers", unit="ledger"):
        sections.append(_ledger_section(p))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = html_report(title, sections, subtitle=f"generated {stamp} from {src.name}; post-processing only, no budget spent")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    doc = {"report": str(out), "sections": len(sections), "ledgers": [str(p) for p in ledgers], "bytes": len(page.encode("utf-8"))}
    emit(args, doc, [f"report: {out} ({len(sections)} sections, {doc['bytes']:,} bytes, self-contained)"])
    return 0
