"""The public-entry-point layer (issue 32): ``randomize`` with what users pass — labels, numbers,
sets, user keys — not only ``randomize_encoded`` or the verification hooks.

The other layers drive the client after encoding (item codes, grid indices, verification seeds),
so the steps users' values go through first were never looked at: the encoding of labels, the
randomized rounding of numbers to the grid, the keyed (memoized) rounding and permanent layers,
hash-seed derivation and the long-set sampling of pad-and-sample. :func:`entry_points_layer`
calls the public ``randomize`` on raw batches and compares each with the row it must realize:

* **labels / codes** (``input_kind == "value"``): the channel row of the item (for a mechanism
  without labels, also a copy over string labels, ``with_categories``);
* **numbers** (``input_kind == "number"``): every grid point ``lower + k (upper − lower)/grid``
  gives row ``k``; the point a quarter of the way into cell ``k`` gives ``¾·row(k) + ¼·row(k+1)``
  (randomized rounding is unbiased); both without and, where ``randomize`` takes them, with random
  ``user_keys`` (the α-point rounding of the memoized path);
* **sets** (``input_kind == "set"``): the row of each verification set given as a list of labels;
  with ``on_long="sample"``, a set ``S`` of ``m + 1`` items must realize the average of the rows
  of its ``m``-subsets (a uniform ``m``-subset is kept; for pad-and-sample this is the average
  over its items of the padded mechanism's rows — a uniform item);
* **user keys** (``needs_user_keys``): fresh random keys per user.

Each comparison rebuilds the realized row from the client's own source calls
(:func:`~ldp_plugin.verification.positions.enumerate_client`: exact, or within a Bernstein bound
over keyed replicates); a client that cannot be enumerated is sampled instead (χ² against the
row, bins below 5 expected pooled). Reports that cannot be mapped to channel outputs (a hashed
oracle's public reports carry fresh 64-bit seeds, not the verification seeds) are checked for what
the public path adds: every 64-bit seed field must be fresh (no two users of a batch share one,
whatever their values — a seed derived from the value fails), and the share of reports that
support the user's own item must be ``p*`` (exact binomial test) where the oracle declares it.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from itertools import combinations
from typing import Any, Callable, Optional

import numpy as np

from .._errors import LDPParameterError
from ..sampling import SeededRandomSource
from .layers import _pooled_chisquare
from .positions import NotEnumerable, OutsideChannel, compare_row, enumerate_client
from ..mechanisms.protocol import Keyed, SupportRates, has

__all__ = ["entry_points_layer", "entry_cases"]


def _keys(n: int, source) -> list:
    raw = np.asarray(source.random_bytes(32 * n), dtype=np.uint8).reshape(n, 32)
    return [bytes(r) for r in raw]


def _takes_user_keys(mech: Any) -> bool:
    # every client has the one signature (``user_keys=`` included); only keyed mechanisms accept keys
    return has(mech, Keyed)


def _randomize(mech: Any, batch: Any, n: int, source, keyed: bool):
    if keyed:
        return mech.randomize(batch, user_keys=_keys(n, source), rng=source)
    return mech.randomize(batch, rng=source)


def entry_cases(mech: Any) -> list:
    """``(label, mechanism, make_batch(n), keyed, expected row, item code or None)`` for the
    public entry points."""
    kind = mech.input_kind
    rows = mech.channel().matrix
    keyed = has(mech, Keyed)
    cases: list = []
    if kind == "tuple":  # several attributes: the public client takes an n × attributes array of codes
        tuples = mech._tuples()
        for x in range(mech.verification_input_count()):
            cases.append((f"tuple {tuple(tuples[x].tolist())}", mech, lambda n, x=x: np.repeat(tuples[x:x + 1], n, axis=0), keyed, list(rows[x]), x))
        return cases
    if kind == "key-value":  # the channel is over the sampled (key, value) code, drawn inside the client:
        return cases         # no public input maps to one row (the positions layer covers the code channel)
    if kind == "number" and len(rows) != mech.grid + 1:
        # cell inputs (Square Wave, bucketed oracles, trees): a value at the centre of cell k is row k
        lo, hi, g = mech.lower, mech.upper, len(rows)
        for k in range(g):
            v = lo + (hi - lo) * (k + 0.5) / g
            cases.append((f"value at the centre of cell {k}", mech, lambda n, v=v: np.full(n, v), keyed, list(rows[k]), k))
        return cases
    if kind == "number":
        lo, hi, g = mech.lower, mech.upper, mech.grid
        variants = [False, True] if _takes_user_keys(mech) else [keyed]
        for use_keys in variants:
            tag = " (user keys)" if use_keys else ""
            for k in range(g + 1):
                v = lo + (hi - lo) * k / g
                cases.append((f"value at grid point {k}{tag}", mech, lambda n, v=v: np.full(n, v), use_keys, list(rows[k]), k))
            for k in range(g):
                v = lo + (hi - lo) * (k + 0.25) / g
                exp = [Fraction(3, 4) * a + Fraction(1, 4) * b for a, b in zip(rows[k], rows[k + 1])]
                cases.append((f"value 1/4 into cell {k}{tag}", mech, lambda n, v=v: np.full(n, v), use_keys, exp, k))
        return cases
    if kind == "set":
        inputs = mech.verification_inputs()
        labels = _labels(mech)
        for i, X in enumerate(inputs):
            items = [labels[c] for c in X]
            cases.append((f"set {list(X)}", mech, lambda n, items=items: [list(items) for _ in range(n)], keyed, list(rows[i]), None))
        m, d = mech.m, mech.domain_size  # a set mechanism: at most m items, the on_long policy
        if d is not None and d > m:
            longm = dataclasses.replace(mech, on_long="sample")
            index = {tuple(X): i for i, X in enumerate(inputs)}
            S = list(range(m + 1))
            subs = [rows[index[T]] for T in combinations(S, m)]
            exp = [sum(r[j] for r in subs) / len(subs) for j in range(len(subs[0]))]
            items = [labels[c] for c in S]
            cases.append((f"long set {S} (on_long='sample')", longm, lambda n, items=items: [list(items) for _ in range(n)], keyed, exp, None))
        return cases
    d = mech.verification_input_count()
    own = mech.categories
    for x in range(d):
        v = own[x] if own is not None else x
        cases.append((f"value {v!r}", mech, lambda n, v=v: np.array([v] * n, dtype=object if own is not None else np.int64), keyed, list(rows[x]), x))
    if own is None and not keyed and mech.domain_size is not None:
        try:
            lab = mech.with_categories([f"item-{i}" for i in range(d)])
            lrows = lab.channel().matrix
        except (LDPParameterError, TypeError, ValueError):
            lab = None
        if lab is not None:
            for x in range(d):
                cases.append((f"label 'item-{x}'", lab, lambda n, x=x: np.array([f"item-{x}"] * n, dtype=object), False, list(lrows[x]), x))
    return cases


def _labels(mech: Any) -> list:
    return list(mech.items)


def _seed_fields(mech: Any) -> list:
    return [f.name for f in mech.base.report_fields() if np.dtype(f.dtype) == np.uint64 and f.bound is None]


def _hashed_checks(mech: Any, make: Callable, x: Optional[int], keyed: bool, n: int, src, alpha: float) -> tuple:
    """Fresh seeds and the own-item support rate, for reports that have no channel index."""
    from scipy.stats import binomtest

    reports = _randomize(mech, make(n), n, src, keyed)
    cols = mech._to_columns(reports)
    fresh = all(np.unique(np.asarray(cols[f])).size >= n - 1 for f in _seed_fields(mech) if f in cols)
    p = 1.0
    if x is not None and has(mech, SupportRates):
        k = int(np.asarray(mech.support_counts(reports))[x])
        p = float(binomtest(k, n, float(mech.p_star_exact)).pvalue)
    return fresh, p


def entry_points_layer(mech: Any, *, quick: bool = False, alpha: float = 1e-6, seed: int = 0, max_rows: Optional[int] = None) -> dict:
    """The public ``randomize`` on raw values, numbers, sets and user keys (module docstring)."""
    max_rows = max_rows or (1 << 15 if quick else 1 << 16)
    n_sample = 5_000 if quick else 20_000
    cases = entry_cases(mech)
    level = alpha / max(len(cases), 1)
    width = len(mech.channel().outputs)
    failures, modes = [], {"exact": 0, "keyed replicates": 0, "sampled": 0, "seed and rate checks": 0}
    for i, (label, m, make, keyed, expected, x) in enumerate(cases):
        def run(n, src, m=m, make=make, keyed=keyed):
            return m.output_index(_randomize(m, make(n), n, src, keyed))

        if _seed_fields(m):  # public reports carry fresh 64-bit hash seeds, not the verification seeds
            fresh, p = _hashed_checks(m, make, x, keyed, n_sample, SeededRandomSource(seed + i), level)
            modes["seed and rate checks"] += 1
            if not fresh or p < level:
                failures.append({"case": label, "fresh_seeds": fresh, "own_item_rate_p": p})
            continue
        try:
            e = enumerate_client(run, width, max_rows=max_rows, replicates=1024 if quick else 4096, seed=seed + i)
            c = compare_row(e, expected, tests=len(cases), alpha=alpha)
            modes["exact" if e["exact"] else "keyed replicates"] += 1
            if not c["ok"]:
                failures.append({"case": label, **{k: v for k, v in c.items() if k != "ok"}})
            continue
        except OutsideChannel:
            failures.append({"case": label, "reason": "an output outside the declared channel"})
            continue
        except NotEnumerable:
            pass
        src = SeededRandomSource(seed + i)
        out = run(n_sample, src)
        counts = np.bincount(out, minlength=width)
        p = 0.0 if counts.size > width else _pooled_chisquare(counts, np.array([float(v) for v in expected]))
        modes["sampled"] += 1
        if p < level:
            failures.append({"case": label, "p_value": p})
    return {
        "layer": "entry points",
        "cases": len(cases),
        "modes": {k: v for k, v in modes.items() if v},
        "failures": failures[:5],
        "passed": not failures,
    }
