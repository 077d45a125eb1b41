"""App usage: per-user *sets* of app names from an open alphabet, estimated with O-RR and OLH.

Each user reports once for their whole set (the privacy unit is the user): the set is padded to
m = 4 apps and one slot is sampled (pad-and-sample), then randomized. The analyst decodes O-RR
over any candidate list chosen *after* collection; OLH needs the app list up front (unknown apps
go to an explicit "other" bucket).

Run: python examples/app_usage.py
"""

import numpy as np
import polars as pl

import ldp_plugin as ldp

rng = np.random.default_rng(1)  # generates the example's *data* only
popular = ["chat", "maps", "mail", "video", "music", "news", "photos", "bank"]
long_tail = [f"indie-app-{i}" for i in range(300)]
weights = np.r_[np.linspace(8, 1, len(popular)), np.full(len(long_tail), 0.02)]
weights /= weights.sum()
apps = np.array(popular + long_tail)
n = 200_000
# each user's set: 1-4 distinct apps drawn by weight, vectorized (Gumbel top-k: the s largest of
# log w + Gumbel noise are a weighted sample without replacement)
sizes = rng.integers(1, 5, size=n)
keys = np.log(weights)[None, :] + rng.gumbel(size=(n, apps.size)).astype(np.float32)
top4 = np.argpartition(-keys, 4, axis=1)[:, :4]
order = np.take_along_axis(keys, top4, axis=1).argsort(axis=1)[:, ::-1]
top4 = np.take_along_axis(top4, order, axis=1)
flat = apps[top4[np.arange(4)[None, :] < sizes[:, None]]]
offsets = np.r_[0, np.cumsum(sizes)]
users = pl.DataFrame({"user_id": [f"u{i:07d}" for i in range(n)]}).with_columns(
    apps=pl.Series("apps", flat).to_frame().with_columns(u=pl.Series(np.repeat(np.arange(n), sizes))).group_by("u", maintain_order=True).agg("apps")["apps"]
)
truth = users.select(pl.col("apps").explode()).group_by("apps").len().with_columns(truth=pl.col("len") / n)

# O-RR, open alphabet: cohorts from a salted hash of the user id (data-independent), k and C chosen
# by the helper for the number of candidates we expect to decode
choice = ldp.theory.choose_orr(len(popular) + 1, 3.0, n, closed=False)
orr = ldp.SampleOne(mechanism=ldp.ORR(epsilon=3.0, k=choice["k"], cohorts=choice["cohorts"]), m=4)
reports = users.ldp.privatize("apps", orr, user_id="user_id", cohorts=2024)
print(f"O-RR reports: {reports.height:,} rows, columns {reports.columns}, k={choice['k']}, cohorts={choice['cohorts']}")
est = reports.ldp.estimate(orr, candidates=popular)
print("\nO-RR over the popular apps (open alphabet; '<other>' is the total frequency of every app not listed):")
print(est.join(truth, left_on="item", right_on="apps", how="left").select("item", "estimate", "std_error", "ci_lower", "ci_upper", "truth"))

# OLH over a declared app list; everything else is reported as "other"
olh = ldp.SampleOne(mechanism=ldp.OLH(epsilon=3.0, categories=popular + ["other"]), m=4)
reports = users.ldp.privatize("apps", olh, user_id="user_id", unknown="other")
est = reports.ldp.estimate(olh)
print("\nOLH over a declared app list (every other app was mapped to 'other' before randomizing; its truth is not shown):")
print(est.join(truth, left_on="item", right_on="apps", how="left").select("item", "estimate", "std_error", "truth"))
