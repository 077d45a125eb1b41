"""The public-entry-point layer: ``randomize`` and ``randomize_one`` with what users pass — labels,
numbers, sets, tuples, key–value sets, user keys — not only ``randomize_encoded`` or the
verification hooks.

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
* **user keys** (``needs_user_keys``): fresh random keys per user;
* **several attributes** (``input_kind == "tuple"``): every tuple of codes gives its row;
* **key–value sets** (``input_kind == "key-value"``): the empty set, one pair per key at values
  −1, 0, 1, and two pairs, each against the padding-and-sampling mixture of code rows it must
  realize (a uniform slot of ``max(|S|, ell)``; a real pair's sign by randomized rounding of the
  value; a dummy's by its declared threshold);
* **one user** (every case): ``randomize_one(v, rng=s)`` equals the batch path's report of that
  user on the same source (the path the layers verify), and a batch's reports come back from the
  wire (``to_wire_each`` → ``from_wire_many``) unchanged and none rejected.

The cases come from one driver per input kind (:data:`DRIVERS`); a mechanism whose input kind has
no driver fails the layer (:class:`NoDriver`), so a new kind cannot go unverified.

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
from ..mechanisms import reports as reports_mod
from ..sampling import SeededRandomSource
from .channels import declared_channel
from .layers import _pooled_chisquare
from .positions import NotEnumerable, OutsideChannel, compare_row, enumerate_client
from ..mechanisms.protocol import InputKind, Keyed, SupportRates, has

__all__ = ["entry_points_layer", "entry_cases", "DRIVERS", "NoDriver"]


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


class NoDriver(LookupError):
    """A mechanism's ``input_kind`` has no driver in :data:`DRIVERS`: its public entry point would
    go unverified, so the layer fails."""


def _tuple_cases(mech: Any, rows: list, keyed: bool) -> list:
    """Several attributes: the public client takes an n × attributes array of codes."""
    tuples = mech._tuples()
    return [(f"tuple {tuple(tuples[x].tolist())}", mech, lambda n, x=x: np.repeat(tuples[x:x + 1], n, axis=0), keyed, list(rows[x]), x)
            for x in range(mech.verification_input_count())]


def _key_value_cases(mech: Any, rows: list, keyed: bool) -> list:
    """Key–value sets (PCKV): a user's set is padded to ``max(|S|, ell)`` slots, one slot drawn
    uniformly; a real pair ``(k, v)`` gives code ``2k + 1`` with probability ``min((1 + v)/2,
    1 − 2^-53)`` (randomized rounding of the value, exact for v in {−1, 0, 1}) else ``2k``; the
    dummy slot ``j`` gives key ``d + j − |S|`` with the declared dummy sign threshold. The expected
    row is that mixture of the code channel's rows (paper: padding-and-sampling, then k-RR)."""
    d, ell = mech.d, mech.ell
    p_dummy = Fraction(int(mech.dummy_sign_threshold), 1 << 64)

    def row(pairs: list) -> list:
        L = max(len(pairs), ell)
        out = [Fraction(0)] * len(rows[0])
        for j in range(L):
            if j < len(pairs):
                k, v = pairs[j]
                plus = min((1 + Fraction(v)) / 2, 1 - Fraction(2048, 1 << 64))
            else:
                k, plus = d + j - len(pairs), p_dummy
            for code, w in ((2 * k + 1, plus), (2 * k, 1 - plus)):
                for y in range(len(out)):
                    out[y] += Fraction(1, L) * w * rows[code][y]
        return out

    sets = [[]] + [[(k, v)] for k in range(d) for v in (-1, 0, 1)]
    if d >= 2:
        sets.append([(0, 1), (d - 1, -1)])
    # a set longer than ell is sampled only when the caller says so (on_long="sample"); the default refuses it
    sampling = dataclasses.replace(mech, on_long="sample")
    return [(f"key-value set {pairs}", mech if len(pairs) <= ell else sampling, lambda n, pairs=pairs: [list(pairs) for _ in range(n)], keyed,
             row(pairs), None) for pairs in sets]


def _number_cases(mech: Any, rows: list, keyed: bool) -> list:
    cases: list = []
    if len(rows) != mech.grid + 1:
        # cell inputs (Square Wave, bucketed oracles, trees): a value at the centre of cell k is row k
        lo, hi, g = mech.lower, mech.upper, len(rows)
        for k in range(g):
            v = lo + (hi - lo) * (k + 0.5) / g
            cases.append((f"value at the centre of cell {k}", mech, lambda n, v=v: np.full(n, v), keyed, list(rows[k]), k))
        return cases
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


def _set_cases(mech: Any, rows: list, keyed: bool) -> list:
    cases: list = []
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


def _value_cases(mech: Any, rows: list, keyed: bool) -> list:
    cases: list = []
    d = mech.verification_input_count()
    own = mech.categories
    for x in range(d):
        v = own[x] if own is not None else x
        cases.append((f"value {v!r}", mech, lambda n, v=v: np.array([v] * n, dtype=object if own is not None else np.int64), keyed, list(rows[x]), x))
    if own is None and not keyed and mech.domain_size is not None:
        try:
            lab = mech.with_categories([f"item-{i}" for i in range(d)])
            lrows = declared_channel(lab).matrix
        except (LDPParameterError, TypeError, ValueError):
            lab = None
        if lab is not None:
            for x in range(d):
                cases.append((f"label 'item-{x}'", lab, lambda n, x=x: np.array([f"item-{x}"] * n, dtype=object), False, list(lrows[x]), x))
    return cases


#: one driver per input kind: an input kind without one fails the layer (:class:`NoDriver`)
DRIVERS = {"value": _value_cases, "number": _number_cases, "set": _set_cases, "tuple": _tuple_cases, "key-value": _key_value_cases}


def entry_cases(mech: Any) -> list:
    """``(label, mechanism, make_batch(n), keyed, expected row, item code or None)`` for the
    public entry points, from the driver of the mechanism's input kind."""
    kind = str(mech.input_kind.value if isinstance(mech.input_kind, InputKind) else mech.input_kind)
    if kind not in DRIVERS:
        raise NoDriver(f"no entry-point driver for input kind {kind!r}")
    return DRIVERS[kind](mech, declared_channel(mech).matrix, has(mech, Keyed))


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


def _same(a: Any, b: Any) -> bool:
    """Structural equality of two column dicts."""
    return a.keys() == b.keys() and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def _flat(x: Any) -> tuple:
    """A report as a flat tuple of integers (bytes, arrays and tuples unrolled)."""
    if isinstance(x, (bytes, bytearray)):
        return tuple(x)
    if isinstance(x, (tuple, list)):
        return tuple(v for item in x for v in _flat(item))
    if isinstance(x, dict):
        return tuple(v for item in x.values() for v in _flat(item))
    arr = np.asarray(x)
    if arr.dtype.kind in "iub":
        return tuple(int(v) for v in arr.ravel())
    return tuple(float(v) if arr.dtype.kind == "f" else str(v) for v in arr.ravel())


def _one_of(m: Any, batch: Any) -> tuple:
    """The batch path's report of its one user: the first row of every report column, in order."""
    cols = m.base._to_columns(batch)
    return _flat(tuple(np.asarray(cols[f.name])[0] for f in m.base.report_fields()))


def _one_and_wire(m: Any, make: Callable, keyed: bool, seed: int, *, replicates: int) -> Optional[str]:
    """``randomize_one(v, rng=s)`` must be the batch path's report of one user on the same source
    (the one the layers verify), for ``replicates`` seeds; and a batch's reports must survive the
    wire (``to_wire_each`` → ``from_wire_many``) unchanged, none rejected."""
    value = make(1)[0]
    for r in range(replicates):
        key = _keys(1, SeededRandomSource(seed + r + 1)) if keyed else None
        one = m.randomize_one(value, rng=SeededRandomSource(seed + r), user_key=None if key is None else key[0])
        batch = m.randomize(make(1), rng=SeededRandomSource(seed + r), **({"user_keys": key} if keyed else {}))
        ref = _one_of(m, batch)
        got = _flat(one)
        if any(isinstance(v, str) for v in got):  # a labelled report (an item, a subset of items): its codes
            got = _flat(m.encode(np.array(list(got), dtype=object)))
        if got != ref:
            return "randomize_one differs from the batch path on the same source"  # (a labelled report is its label's code)
    n = 16
    src = SeededRandomSource(seed)
    reports = _randomize(m, make(n), n, src, keyed)
    tag = bytes(range(16))
    back, rejected = reports_mod.from_wire_many(m, reports_mod.to_wire_each(m, reports, tag=tag), tag=tag)
    if rejected or not _same(m.base._to_columns(back), m.base._to_columns(reports)):
        return f"the wire round trip changed or rejected reports ({rejected or 'changed'})"
    return None


def entry_points_layer(mech: Any, *, quick: bool = False, alpha: float = 1e-6, seed: int = 0, max_rows: Optional[int] = None) -> dict:
    """The public ``randomize`` on raw values, numbers, sets and user keys (module docstring)."""
    max_rows = max_rows or (1 << 15 if quick else 1 << 16)
    n_sample = 5_000 if quick else 20_000
    try:
        cases = entry_cases(mech)
    except NoDriver as e:
        return {"layer": "entry points", "cases": 0, "modes": {}, "failures": [{"case": str(e)}], "passed": False}
    level = alpha / max(len(cases), 1)
    width = len(declared_channel(mech).outputs)
    failures, modes = [], {"exact": 0, "keyed replicates": 0, "sampled": 0, "seed and rate checks": 0}
    for i, (label, m, make, keyed, expected, x) in enumerate(cases):
        problem = _one_and_wire(m, make, keyed, seed + 7919 * i, replicates=8 if quick else 32)
        if problem is not None:  # randomize_one and the wire must follow the verified batch path exactly
            failures.append({"case": label, "reason": problem})
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
