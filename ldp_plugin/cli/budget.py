"""``ldp budget init|show|history|spend-check|central|backup|plot``: the persistent ledger of a population."""

from __future__ import annotations

import json
from pathlib import Path

from .._errors import LDPParameterError
from ..accountant import Accountant, BudgetExceededError, Population, as_fraction, cohort_ranges, spend_groups
from ..pictures import spend_over_time
from ..progress import status

#: what ``ldp budget plot --out`` may write (matplotlib picks the format from the extension)
PICTURE_SUFFIXES = (".png", ".svg", ".pdf")


def budget_picture(ledgers: list) -> tuple:
    """``(figure, populations)``: one panel per ledger's population, its cohort groups' spend over
    time (:func:`~ldp_plugin.accountant.spend_groups`)."""
    pops = []
    for path in ledgers:
        acc = Accountant(path)
        try:
            pop = acc.population
            groups = spend_groups(acc.history(), pop.cohorts)
            pops.append({"name": pop.name, "ledger": str(acc.path), "lifetime_cap": float(pop.lifetime_cap), "cohorts": pop.cohorts,
                         "spends": len(acc.history()), "remaining": float(acc.remaining()), "groups": groups})
        finally:
            acc.close()
    return spend_over_time(pops), pops


def _plot(args) -> dict:
    out = Path(args.out)
    if out.suffix.lower() not in PICTURE_SUFFIXES:
        raise LDPParameterError(f"--out must end in one of {', '.join(PICTURE_SUFFIXES)} (got {out.suffix or 'no extension'!r})")
    if not out.parent.is_dir():
        raise LDPParameterError("--out: its directory does not exist")
    fig, pops = budget_picture(list(args.ledger))
    fig.savefig(out, dpi=110)
    return {"picture": str(out), "populations": [
        {"population": p["name"], "ledger": p["ledger"], "spends": p["spends"], "remaining": p["remaining"],
         "cohort_groups": [{"cohorts": g["label"], "spent": g["cumulative"][-1]} for g in p["groups"]]} for p in pops]}


def cmd_budget(args) -> int:
    """``ldp budget init|show|history|spend-check|central|backup|plot``: the persistent ledger of a population."""

    def frac(f):
        return {"value": float(f), "exact": f"{f.numerator}/{f.denominator}"}

    if args.budget_command == "plot":
        out = _plot(args)
    elif args.budget_command == "init":
        pop = Population(
            name=args.population, lifetime_cap=args.lifetime_cap, period_cap=args.period_cap, period=args.period, cohorts=args.cohorts
        )
        acc = Accountant.create(args.ledger, pop, exist_ok=args.exist_ok, parents=args.parents)
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
            status("ldp budget central: composing the recorded releases (dp_accounting PLD)")
            c = acc.central_epsilon(args.delta, cohorts=cohorts)
            out = {"ledger": str(acc.path), "central_epsilon": c["epsilon"], "delta": c["delta"], "local_epsilon": c["local_epsilon"],
                   "shuffled_batches": [r.to_dict() for r in acc.shuffle_records()], "method": c["method"]}
        elif args.budget_command == "history":
            C = acc.population.cohorts
            out = {"ledger": str(acc.path), "history": [dict(r.to_dict(), cohort_summary=cohort_ranges(r.cohorts, C), cohort_count=len(r.cohorts))
                                                        for r in acc.history()]}
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
                    print(f"{r['seq']:>5} {r['time']} {r['query_id']:<24} {r['mechanism']:<20} eps={r['epsilon']:<10g} cohorts={r['cohort_summary']}")
            elif k == "shuffled_batches":
                for r in v:
                    print(f"  batch {r['batch_id']}: query {r['query_id']}, cohorts {r['cohorts']}, n_min {r['n_min']:,}, "
                          f"central eps {r['epsilon_central']:.6g} at delta {r['delta']:g}")
            elif k == "populations":
                for p in v:
                    groups = "; ".join(f"{g['cohorts']}: {g['spent']:.6g}" for g in p["cohort_groups"]) or "no spend"
                    print(f"  {p['population']}: {p['spends']} spends, remaining {p['remaining']:.6g} ({groups})")
            elif k == "cohorts":
                for r in v:
                    print(f"  cohort {r['cohort']:>3}: spent {r['spent']['value']:.6g}, remaining {r['remaining']['value']:.6g}")
            else:
                print(f"{k}: {v}")
    if args.budget_command == "spend-check" and not out["fits"]:
        return 1
    return 0
