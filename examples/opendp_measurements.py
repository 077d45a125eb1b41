"""The mechanisms as OpenDP measurements: per-user maps, chaining with >>, and composition.

Run: python examples/opendp_measurements.py
"""

import opendp.prelude as dp

import ldp_plugin as ldp

ldp.enable_ldp_features()  # OpenDP's "contrib" + "honest-but-curious": the one explicit call (no constructor turns them on)

# Per user: discrete_distance -> max_divergence, map(1) = epsilon (rounded up, never down).
krr = ldp.make_krr(epsilon=1.0, categories=["yes", "no", "unsure"])
print("one user's report:", krr("yes"), "| privacy loss per user:", krr.map(1))

# Population: a whole batch in one (vectorized) call; hamming_distance, map(d_in) = d_in * epsilon.
batch = ldp.make_oue(epsilon=2.0, d=16, unit="population")
reports = batch(list(range(16)) * 100)
print("batch of", reports.shape[0], "OUE reports; map(3) =", batch.map(3))

# Chain a per-user transformation (here: bucket a string by its length) into k-RR.
mech = ldp.KRR(epsilon=1.0, d=4)
bucket = dp.t.make_user_transformation(
    dp.user_domain("Word", lambda _: True),
    dp.discrete_distance(),
    ldp.category_domain(mech),
    dp.discrete_distance(),
    lambda word: min(len(word), 10) % 4,
    lambda d_in: d_in,
)
chain = bucket >> ldp.then_ldp(mech)
print("chained report:", chain("privacy"), "| map(1) =", chain.map(1))

# Compose two queries on the same users with OpenDP's compositor (sequential per user).
comp = dp.c.make_adaptive_composition(
    ldp.category_domain(mech), dp.discrete_distance(), dp.max_divergence(), d_in=1, d_mids=[1.0, 1.0]
)
queryable = comp(2)
query = ldp.make_ldp(ldp.category_domain(mech), dp.discrete_distance(), mech)  # OpenDP's order: domain, metric, mechanism
print("two answers:", queryable(query), queryable(query), "| total epsilon:", comp.map(1))
