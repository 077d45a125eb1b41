"""Quickstart: randomize a column of app names with k-subset, estimate frequencies with error bars.

Run: python examples/quickstart.py
"""

import numpy as np

import ldp_plugin as ldp

apps = ["search", "mail", "maps", "video", "news", "music"]
rng = np.random.default_rng(0)  # generates the example's *data* only
true_theta = np.array([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])
users = rng.choice(apps, size=50_000, p=true_theta)

# One mechanism object: frozen, validated, realized likelihood ratio checked exactly.
mech = ldp.KSubset(epsilon=1.0, categories=apps)  # k = k# (l2-optimal) by default
print(f"k-subset with k={mech.k}, declared epsilon={mech.epsilon}, realized epsilon={mech.realized_epsilon}")

# Client side: each user's report (OS CSPRNG by default). Vectorized over the whole batch.
reports = mech.randomize(users)

# Server side: a mergeable accumulator, then the shared estimator.
acc = mech.accumulator().add(reports[:25_000])
acc = acc.merge(mech.accumulator().add(reports[25_000:]))
estimate = acc.estimate(postprocess="projection", confidence=0.95)
print(estimate.to_polars(truth=[float(np.mean(users == a)) for a in apps]))
