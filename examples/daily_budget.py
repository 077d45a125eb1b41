"""A daily collection over a week against a lifetime budget: fresh k-RR is refused on the day the
budget runs out; the memoized (longitudinal) mode, charged at the user level (any two histories of
one user — the default), lasts longer but is refused too once its lifetime bound exceeds the cap;
only a deployment that names the papers' value-level relation (same change pattern) keeps going.

Run: python examples/daily_budget.py
"""

import os
import tempfile
from datetime import datetime, timedelta, timezone

import numpy as np

import ldp_plugin as ldp

apps = ["chat", "maps", "mail", "video", "news"]
n = 20_000
rng = np.random.default_rng(0)  # the example's *data* only
values = rng.choice(apps, size=n, p=[0.4, 0.25, 0.15, 0.12, 0.08])
user_keys = [ldp.new_user_key() for _ in range(n)]  # each user's secret, kept on the device
start = datetime(2026, 11, 23, 9, tzinfo=timezone.utc)
tmp = tempfile.TemporaryDirectory()  # the example's ledgers; removed when it ends
ledger_dir = tmp.name

print("Fresh randomization every day, epsilon = 1 per day, lifetime cap 4:")
acc = ldp.Accountant.create(os.path.join(ledger_dir, "fresh.sqlite"), ldp.Population(name="app-users", lifetime_cap="4"))
mech = ldp.KRR(epsilon=1.0, categories=apps)
for day in range(7):
    when = start + timedelta(days=day)
    try:
        acc.spend(f"apps-{when:%Y-%m-%d}", mech, when=when)  # check-then-spend, before any release
    except ldp.BudgetExceededError as e:
        print(f"  day {day + 1}: REFUSED — needs {float(e.requested)}, {float(e.remaining)} left of the lifetime cap")
        continue
    est = mech.estimate(mech.randomize(values))
    print(f"  day {day + 1}: released; chat ≈ {est.estimate[0]:.3f} ± {est.std_error[0]:.3f}; remaining {float(acc.remaining())}")

print("\nMemoized: permanent k-RR (eps_inf = 2) per (user key, value) + fresh k-RR (eps_1 = 1) daily,")
print("a guard refuses a 3rd distinct value per user on the client (the charge does not assume it);")
print("charged the increment of the user-level lifetime bound:")
memo = ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, categories=apps, max_values=2)
acc2 = ldp.Accountant.create(os.path.join(ledger_dir, "memo.sqlite"), ldp.Population(name="app-users", lifetime_cap="4"))
guard = ldp.DistinctValueGuard()
released = 0  # collections actually made: collection t is charged collection_cost(t)
for day in range(7):
    when = start + timedelta(days=day)
    try:
        acc2.spend_collection(f"apps-memo-{when:%Y-%m-%d}", memo, released + 1, when=when)  # before any release
    except ldp.BudgetExceededError as e:
        print(f"  day {day + 1}: REFUSED — needs {float(e.requested):.3f}, {float(e.remaining):.3f} left (user level)")
        continue
    released += 1
    reports = memo.randomize(values, user_keys, guard=guard)  # unchanged values reuse their permanent report
    est = memo.estimate(reports)
    print(f"  day {day + 1}: released; chat ≈ {est.estimate[0]:.3f} ± {est.std_error[0]:.3f}; "
          f"charged {float(memo.collection_cost(released)):.3f}, remaining {float(acc2.remaining()):.3f}")

print("\nThe same series under the papers' value-level relation (named: relation='value'; it hides which")
print("values a user holds, not when they change): min(t, d)*eps_inf capped by the user level:")
memo_v = ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, categories=apps, max_values=2, relation="value")
acc3 = ldp.Accountant.create(os.path.join(ledger_dir, "memo-value.sqlite"), ldp.Population(name="app-users", lifetime_cap="4"))
for day in range(7):
    when = start + timedelta(days=day)
    try:
        rec = acc3.spend_collection(f"apps-memo-{when:%Y-%m-%d}", memo_v, day + 1, when=when)
    except ldp.BudgetExceededError as e:
        print(f"  day {day + 1}: REFUSED — needs {float(e.requested):.3f}, {float(e.remaining):.3f} left (value level)")
        break
    print(f"  day {day + 1}: charged {float(rec.epsilon):.3f} (relation {rec.params['relation']!r}), remaining {float(acc3.remaining()):.3f}")
print(f"\naudit trail: {len(acc2.history())} rows in the ledger file {acc2.path.name} (`ldp budget history LEDGER`)")
acc.close()
acc2.close()
acc3.close()
tmp.cleanup()
