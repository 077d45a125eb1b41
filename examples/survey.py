"""A closed-alphabet survey: "Which of these 64 products did you buy most recently?"

Closed-alphabet O-RR (Kairouz, Bonawitz & Ramage (ICML 2016) §5.4: per-cohort permutations instead of hashes) against k-RR and
k-RAPPOR at the same epsilon, on the same answers. Prints the l1 error of each projected estimate.

Run: python examples/survey.py
"""

import numpy as np
import polars as pl

import ldp_plugin as ldp

rng = np.random.default_rng(7)  # the example's *data* only
products = [f"product-{i:02d}" for i in range(64)]
theta = 0.9 ** np.arange(64)
theta /= theta.sum()
answers = pl.DataFrame({"respondent": np.arange(100_000), "answer": rng.choice(products, size=100_000, p=theta)})
truth = answers["answer"].value_counts().with_columns(truth=pl.col("count") / answers.height)

true_top = truth.sort("truth", descending=True)["answer"][0]
print(f"true top answer: {true_top} ({truth['truth'].max():.3f}); the runner-up is within a few standard errors, so a")
print("mechanism's top answer can differ from it by noise alone (compare the l1 errors, not the top answer)")
eps = 2.0
choice = ldp.theory.choose_orr(len(products), eps, answers.height)
mechanisms = {
    f"O-RR (k={choice['k']}, C={choice['cohorts']})": ldp.ORR(epsilon=eps, k=choice["k"], cohorts=choice["cohorts"], categories=products),
    "k-RR": ldp.KRR(epsilon=eps, categories=products),
    "k-RAPPOR": ldp.RAPPOR(epsilon=eps, categories=products),
}
for name, mech in mechanisms.items():
    reports = answers.ldp.privatize("answer", mech, user_id="respondent")
    est = reports.ldp.estimate(mech).join(truth, left_on="item", right_on="answer", how="left").fill_null(0.0)
    l1 = (est["estimate"] - est["truth"]).abs().sum()
    top = est.sort("estimate", descending=True)["item"][0]
    print(f"{name:<24} l1 error {l1:.4f}   top answer: {top}{'' if top == true_top else ' (noise: the true top answer is ' + true_top + ')'}")
