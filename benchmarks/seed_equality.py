"""Hash the seeded reports of every registered mechanism (canonical instances), SampleOne and five
Polars paths; run it under two installs (e.g. PYTHONPATH=/tmp/oldpkg for an older commit installed
with `pip install --no-deps --target /tmp/oldpkg <checkout>`) and compare the printed dicts."""
import hashlib, sys, numpy as np, polars as pl
import ldp_plugin as ldp
from ldp_plugin.registry import load_registry
out = {}
def h(x):
    if hasattr(x, "cohort"):
        return hashlib.sha256(np.asarray(x.cohort).tobytes() + np.asarray(x.value).tobytes()).hexdigest()[:16]
    return hashlib.sha256(np.ascontiguousarray(np.asarray(x)).tobytes()).hexdigest()[:16]
for name, decl in sorted(load_registry().items()):
    for i, inst in enumerate(decl.canonical):
        m = decl.mechanism_class()(**inst)
        d = m.d
        gen = np.random.default_rng(7)
        if "m" in decl.parameters:
            sets = [sorted(gen.choice(d, size=int(gen.integers(0, m.m + 1)), replace=False).tolist()) for _ in range(2000)]
            r = m.randomize(sets, rng=11)
        else:
            codes = gen.integers(0, d, 20000)
            r = m.randomize(codes if m.categories is None else [m.categories[c] for c in codes], rng=11)
        out[f"{name}-{i}"] = h(r)
s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, categories=["a", "b", "c"]), m=2)
out["sample-one"] = h(s.randomize([["a", "b"], ["c"], [], ["b"]] * 500, rng=3))
df = pl.DataFrame({"uid": range(5000), "app": ["a", "b", "c", "a", "b"] * 1000, "s": [["a"], ["b", "c"], [], ["a", "c"], ["c"]] * 1000})
for nm, mech, col, kw in [("pl-krr", ldp.KRR(epsilon=1.0, categories=["a", "b", "c"]), "app", {}), ("pl-oue", ldp.OUE(epsilon=1.0, categories=["a", "b", "c"]), "app", {}),
                          ("pl-orr", ldp.ORR(epsilon=1.0, k=4, cohorts=8), "app", {"user_id": "uid", "cohorts": 5}), ("pl-wheel", ldp.Wheel(epsilon=1.0, m=2, categories=["a", "b", "c"]), "s", {}),
                          ("pl-s1", s, "s", {})]:
    rep = df.ldp.privatize(col, mech, seed=9, **kw)
    out[nm] = hashlib.sha256(rep.write_ipc(None).getvalue()).hexdigest()[:16] if False else hashlib.sha256(b"".join(rep[c].to_numpy().tobytes() for c in rep.columns)).hexdigest()[:16]
print(out)
