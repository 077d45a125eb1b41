"""A ledger's history summarised for people: cohort sets as ranges (``0-999``), never thousands of
ids, and the spend over time per group of cohorts that were charged by exactly the same queries
(cohorts with one history draw one line). Read-only post-processing of the audit rows."""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction
from typing import Iterable, Sequence

from .budget import SpendRecord

__all__ = ["cohort_ranges", "spend_groups"]


def cohort_ranges(cohorts: Iterable[int], total: int, *, max_ranges: int = 6) -> str:
    """``"all 2,000"``, ``"none"`` or the runs of consecutive cohorts (``"0-3,7,9-12"``); past
    ``max_ranges`` runs the rest is counted (``"… +4 more ranges, 1,000 cohorts"``)."""
    cs = sorted(set(int(c) for c in cohorts))
    if not cs:
        return "none"
    if len(cs) == total and cs[0] == 0 and cs[-1] == total - 1:
        return f"all {total:,}"
    runs = []
    start = prev = cs[0]
    for c in cs[1:]:
        if c != prev + 1:
            runs.append((start, prev))
            start = c
        prev = c
    runs.append((start, prev))
    text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:max_ranges])
    if len(runs) > max_ranges:
        return f"{text},… +{len(runs) - max_ranges} more ranges, {len(cs):,} cohorts"
    return text


def spend_groups(history: Sequence[SpendRecord], total: int, *, max_groups: int = 8) -> list:
    """``[{"label", "cohorts", "times", "cumulative"}]``: the cohorts grouped by the exact sequence
    of spends that charged them, each group's cumulative ε (exact, as float) after each of its
    spends, the ``max_groups`` groups of largest final spend first (a last group ``"other
    cohorts (…)"`` holds the upper envelope of the rest, so no spend is hidden below its line)."""
    charged: dict = {}
    for rec in history:
        for c in rec.cohorts:
            charged.setdefault(int(c), []).append(rec.seq)
    by_seq = {rec.seq: rec for rec in history}
    groups: dict = {}
    for c in range(total):
        groups.setdefault(tuple(charged.get(c, ())), []).append(c)
    rows = []
    for signature, cohorts in groups.items():
        if not signature:
            continue
        cum, acc = [], Fraction(0)
        for seq in signature:
            acc += by_seq[seq].epsilon
            cum.append(acc)
        rows.append({"cohorts": cohorts, "seqs": list(signature), "cumulative": cum})
    rows.sort(key=lambda r: (-r["cumulative"][-1], r["cohorts"][0]))
    if len(rows) > max_groups:
        rest = rows[max_groups - 1:]
        rows = rows[:max_groups - 1]
        seqs = sorted({s for r in rest for s in r["seqs"]})
        # the envelope: after each spend, the largest total any of the remaining groups has reached
        # (totals only grow, so a running maximum over the groups that spend touches)
        members: dict = {}
        for i, r in enumerate(rest):
            for s in r["seqs"]:
                members.setdefault(s, []).append(i)
        totals = [Fraction(0)] * len(rest)
        env, top = [], Fraction(0)
        for s in seqs:
            for i in members[s]:
                totals[i] += by_seq[s].epsilon
                top = max(top, totals[i])
            env.append(top)
        rows.append({"cohorts": sorted(c for r in rest for c in r["cohorts"]), "seqs": seqs, "cumulative": env,
                     "label": f"other cohorts ({len(rest)} groups, largest total)"})
    out = []
    for r in rows:
        label = r.get("label") or f"cohorts {cohort_ranges(r['cohorts'], total)}"
        out.append({"label": label, "cohorts": r["cohorts"], "times": [datetime.fromisoformat(by_seq[s].time) for s in r["seqs"]],
                    "cumulative": [float(x) for x in r["cumulative"]]})
    return out
