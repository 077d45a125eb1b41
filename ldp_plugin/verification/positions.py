"""The realized channel rebuilt from the client's own source calls, position by position
(every source call recorded with its position).

The sampling-path layer checks that every threshold the client asks for is *one of* the declared
thresholds; a threshold used at the wrong place (swapped between two output bits, complemented,
the permanent layer's used in the instantaneous layer) passes that check. This layer answers every
call of the sampling API with **every possible outcome**, each with its exact probability, and
so rebuilds the client's realized channel per input:

1. a probe run (one user) records the sequence of calls — kind, threshold(s), range, subset or
   shuffle shape, and how many elements each user gets (:class:`CallRecord`);
2. the enumeration run gives the client ``L = Π radix`` users holding the same input ``x``: user
   ``r``'s outcome of call ``k`` is digit ``k`` of ``r`` in the mixed radix of the calls, with
   exact probability ``T/2**64`` or ``1 − T/2**64`` per Bernoulli element **at its row and column**
   (``bernoulli_rows``: ``p`` at the listed positions, ``q`` elsewhere; ``bernoulli_each``: the
   element's own threshold), ``1/r`` per uniform integer, one over the number of subsets or
   ordered prefixes; the realized ``Q(y|x)`` is the sum of the weights of the users whose report
   maps to ``y`` — exact rationals;
3. it must **equal** the declared channel's row ``x`` exactly.

The same source in *replay* mode (one user, each call's outcome read from a script) drives
:func:`replay_client`: one client call per leaf of the tree of outcomes, depth first — the exact
rebuild of :mod:`.client_channel` (the sampling-path layer), which also covers clients whose calls
depend on earlier outcomes. One outcome model (the weights of every sampler call) serves both.

Raw draws (``words``, ``random_bytes``: a memoized layer's secret keys, a hash seed) cannot be
enumerated: they get ``K`` independent random values (replicates), identical across the ``L``
users of one replicate, so each replicate's channel is exact *given* those keys — the keyed
PRF's decisions of the permanent layer — and the average over ``K`` (up to 4,096; 1,024 in quick mode) replicates must
lie within the empirical Bernstein bound (Maurer & Pontil 2009, Thm 4; values in [0, 1], level
``α`` split over inputs and outputs) of the declared row. A client whose calls
depend on earlier outcomes in size (a redraw of some rows only) is reported as not enumerable,
as is one with more than ``max_rows`` users to enumerate; the membership check of the
sampling-path layer still covers it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations, permutations
from typing import Any, Optional

import numpy as np

from ..exact import TWO64
from ..sampling import RandomSource, SeededRandomSource
from .channels import declared_channel
from .production import production_outputs

__all__ = ["CallRecord", "EnumeratingSource", "enumerate_client", "replay_client", "enumerated_channel", "positions_layer"]


#: replay mode: the most sampler calls one user may make (a rejection loop would never end)
MAX_REPLAY_CALLS = 256


class _Grow(Exception):
    """A per-user range larger than the probe saw (it depends on an earlier outcome): enumerate
    call ``k`` with the larger radix."""

    def __init__(self, k: int, radix: int):
        super().__init__(k, radix)
        self.k, self.radix = k, radix


class OutsideChannel(Exception):
    """The client produced an output index that the declared channel does not have."""


class NotEnumerable(Exception):
    """The client's calls cannot be enumerated (sizes that depend on outcomes, too many users)."""


@dataclass
class CallRecord:
    """One call of the sampling API: ``kind``; per user ``per_row`` elements; ``radix`` outcomes
    per user; ``thresholds``: the Bernoulli threshold of each element position of a user's row
    (``bernoulli_rows``: ``p`` at the listed columns, ``q`` elsewhere), or the range of each
    uniform draw; ``raw``: bytes per user of a raw draw."""

    kind: str
    per_row: int
    radix: int
    thresholds: tuple = ()
    detail: dict = field(default_factory=dict)
    raw: int = 0

    def summary(self) -> dict:
        out = {"kind": self.kind, "per_user": self.per_row}
        if self.thresholds:
            out["thresholds_by_position"] = [str(t) for t in self.thresholds[:16]]
        out.update(self.detail)
        return out


def _rows_of(size: int, n: int) -> int:
    if n <= 0 or size % n:
        raise NotEnumerable(f"a call of size {size} is not a whole number of elements per user ({n} users)")
    return size // n


class EnumeratingSource(RandomSource):
    """Records every call (probe mode, ``plan=None``) or answers every call with the outcome
    digits of each user (enumeration mode); see the module docstring."""

    secure = False

    def __init__(self, n_users: int, plan: Optional[list] = None, *, replicates: int = 1, seed: int = 0, script: Optional[list] = None):
        self.n = n_users
        self.plan = plan
        self.script = script  # replay mode (one user): the outcome of each call, then 0s
        self.calls: list = []
        self.K = replicates
        self.L = n_users // replicates
        self.seed = seed
        self.weight_num = np.ones(n_users, dtype=object)
        self.weight_den = 1
        self._stride = 1

    @functools.cached_property
    def raw(self) -> SeededRandomSource:  # the replicates' raw draws (made on first use: replay never reads one)
        return SeededRandomSource(self.seed)

    @functools.cached_property
    def _probe_rng(self) -> SeededRandomSource:
        return SeededRandomSource(self.seed + 1)

    # -- bookkeeping ----------------------------------------------------------------------------
    def _next(self, rec: CallRecord) -> Optional[np.ndarray]:
        """Record ``rec``; in enumeration mode return each user's digit for this call."""
        k = len(self.calls)
        self.calls.append(rec)
        if self.script is not None:  # replay: this call's outcome from the script (one user)
            if k >= MAX_REPLAY_CALLS:  # e.g. a rejection loop: an unbounded tree of outcomes
                raise NotEnumerable(f"more than {MAX_REPLAY_CALLS} sampler calls for one user (a rejection loop?)")
            return np.array([self.script[k] if k < len(self.script) else 0] * self.n, dtype=np.int64)
        if self.plan is None:  # probe: outcome 0 for every user
            return np.zeros(self.n, dtype=np.int64)
        if k >= len(self.plan) or self.plan[k].kind != rec.kind or self.plan[k].per_row != rec.per_row:
            raise NotEnumerable("the client's calls differ between the probe and the enumeration")
        leaf = np.arange(self.n, dtype=np.int64) % self.L
        digit = (leaf // self._stride) % rec.radix
        self._stride *= rec.radix
        return digit

    def _weigh(self, num: np.ndarray, den: int) -> None:
        self.weight_num = self.weight_num * num
        self.weight_den *= den

    def _bits(self, digit: Optional[np.ndarray], thresholds: list, per_row: int) -> np.ndarray:
        """``(n, per_row)`` booleans: bit ``j`` of each user's digit, weighted by its threshold
        (``thresholds``: per user and position, as Python ints in an object array)."""
        bits = ((digit[:, None] >> np.arange(per_row)[None, :]) & 1).astype(bool)
        num = np.ones(self.n, dtype=object)
        for j in range(per_row):
            t = thresholds[:, j]
            num = num * np.where(bits[:, j], t, TWO64 - t)
        self._weigh(num, TWO64**per_row)
        return bits

    # -- the sampling API -----------------------------------------------------------------------
    def random_bytes(self, n: int) -> np.ndarray:
        per = _rows_of(n, self.n)
        if self.script is not None:
            raise NotEnumerable("the client reads raw random words or bytes (a secret key, a hash seed, a rejection draw)")
        self.calls.append(CallRecord("random_bytes", per, 1, raw=per, detail={"raw_bytes_per_user": per}))
        if self.plan is None:
            return self._probe_rng.random_bytes(n)
        block = self.raw.random_bytes(self.K * per).reshape(self.K, per)
        return np.repeat(block, self.L, axis=0).reshape(-1).copy()

    def words(self, n: int, bits: int = 64) -> np.ndarray:
        dtype = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
        return self.random_bytes(n * (bits // 8)).view(dtype)

    def bernoulli(self, threshold: int, size: int) -> np.ndarray:
        per = _rows_of(size, self.n)
        t = int(threshold)
        radix = 1 if t in (0, TWO64) else 2**per
        digit = self._next(CallRecord("bernoulli", per, radix, (t,) * per))
        if radix == 1:
            return np.full(size, t == TWO64)
        thr = np.full((self.n, per), t, dtype=object)
        return self._bits(digit, thr, per).reshape(-1)

    def bernoulli_each(self, thresholds: np.ndarray) -> np.ndarray:
        t = np.asarray(thresholds, dtype=np.uint64)
        per = _rows_of(t.size, self.n)
        thr = np.array([int(v) for v in t.tolist()], dtype=object).reshape(self.n, per)
        first = tuple(int(v) for v in thr[0]) if self.n else ()
        digit = self._next(CallRecord("bernoulli_each", per, 2**per, first))
        return self._bits(digit, thr, per).reshape(-1)

    def bernoulli_packed(self, threshold: int, n_rows: int, n_bits: int) -> np.ndarray:
        return self.bernoulli_rows(threshold, n_rows, n_bits, np.zeros((n_rows, 0), dtype=np.int64), threshold, kind="bernoulli_packed")

    def bernoulli_rows(self, q_threshold: int, n_rows: int, n_bits: int, positions, p_threshold: int, kind: str = "bernoulli_rows") -> np.ndarray:
        if n_rows == 0:  # no user takes part (a replayed user outside this group)
            return np.zeros((0, (n_bits + 7) // 8), dtype=np.uint8)
        if n_rows != self.n:
            raise NotEnumerable("a packed call over a subset of the users")
        positions = np.asarray(positions, dtype=np.int64).reshape(n_rows, -1)
        thr = np.full((n_rows, n_bits), int(q_threshold), dtype=object)
        for c in range(positions.shape[1]):
            thr[np.arange(n_rows), positions[:, c]] = int(p_threshold)
        rec = CallRecord(kind, n_bits, 2**n_bits, tuple(thr[0]) if n_rows else (),
                         detail={"p_positions_of_first_user": positions[0].tolist() if n_rows else []})
        digit = self._next(rec)
        bits = self._bits(digit, thr, n_bits)
        out = np.packbits(bits, axis=1, bitorder="little")
        return out

    def uniform_int(self, r: int, size: int) -> np.ndarray:
        per = _rows_of(size, self.n)
        digit = self._next(CallRecord("uniform_int", per, int(r) ** per, detail={"range": int(r)}))
        vals = (digit[:, None] // (int(r) ** np.arange(per, dtype=object)).astype(np.int64)[None, :]) % int(r)
        self._weigh(np.ones(self.n, dtype=object), int(r) ** per)
        return vals.reshape(-1).astype(np.int64)

    def uniform_int_each(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=np.int64)
        per = _rows_of(r.size, self.n)
        rr = r.reshape(self.n, per)
        top = int(rr.max()) if rr.size else 1
        k = len(self.calls)
        if self.plan is not None and k < len(self.plan) and self.plan[k].kind == "uniform_int_each":
            if top**per > self.plan[k].radix:
                raise _Grow(k, top**per)
            top = round(self.plan[k].radix ** (1 / per))
        digit = self._next(CallRecord("uniform_int_each", per, top**per, detail={"ranges_of_first_user": rr[0].tolist() if self.n else []}))
        vals = (digit[:, None] // (top ** np.arange(per)).astype(np.int64)[None, :]) % top
        valid = (vals < rr).all(axis=1)
        den = math.lcm(*[int(v) for v in np.unique(rr)]) ** per
        num = np.array([den // math.prod(int(v) for v in row) for row in rr], dtype=object) * valid.astype(object)
        self._weigh(num, den)
        return vals.reshape(-1)

    def inverse_cdf(self, boundaries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """One outcome per interval of the element's boundary row, of weight
        ``(B[r, j+1] − B[r, j]) / 2**64`` (the last interval ends at ``2**64``)."""
        B = np.asarray(boundaries, dtype=np.uint64)
        rows = np.asarray(rows, dtype=np.int64)
        per = _rows_of(rows.size, self.n)
        width = int(B.shape[1])
        digit = self._next(CallRecord("inverse_cdf", per, width**per, detail={"intervals": width}))
        vals = (digit[:, None] // (width ** np.arange(per, dtype=object)).astype(np.int64)[None, :]) % width
        edges = [[int(v) for v in row] + [TWO64] for row in B.tolist()]
        num = np.ones(self.n, dtype=object)
        for j, (r, v) in enumerate(zip(rows.reshape(self.n, per).T.tolist(), vals.T.tolist())):
            num = num * np.array([edges[a][b + 1] - edges[a][b] for a, b in zip(r, v)], dtype=object)
        self._weigh(num, TWO64**per)
        return vals.reshape(-1).astype(np.int64)

    def sorted_subsets(self, x: np.ndarray, include: np.ndarray, d: int, k: int) -> np.ndarray:
        x = np.asarray(x, dtype=np.int64)
        include = np.asarray(include, dtype=bool)
        if x.size == 0:
            return np.zeros((0, k), dtype=np.int64)
        if x.size != self.n:
            raise NotEnumerable("a subset call over a subset of the users")
        options = {a: list(combinations(range(d - 1), k - a)) for a in (0, 1)}
        radix = max(len(options[0]), len(options[1]))
        digit = self._next(CallRecord("sorted_subsets", k, radix, detail={"d": d, "k": k}))
        out = np.zeros((self.n, k), dtype=np.int64)
        num = np.zeros(self.n, dtype=object)
        den = math.lcm(len(options[0]), len(options[1]))
        for i in range(self.n):
            a = int(include[i])
            opts = options[a]
            if digit[i] < len(opts):
                others = [v + (v >= x[i]) for v in opts[digit[i]]]
                out[i] = sorted(others + ([int(x[i])] if a else []))
                num[i] = den // len(opts)
        self._weigh(num, den)
        return out

    def partial_shuffle_prefix(self, n_rows: int, population: int, s: int) -> np.ndarray:
        if n_rows == 0:
            return np.zeros((0, s), dtype=np.int64)
        if n_rows != self.n:
            raise NotEnumerable("a shuffle over a subset of the users")
        opts = list(permutations(range(population), s))
        digit = self._next(CallRecord("partial_shuffle_prefix", s, len(opts), detail={"population": population, "s": s}))
        self._weigh(np.ones(self.n, dtype=object), len(opts))
        return np.array([opts[int(v)] for v in digit], dtype=np.int64).reshape(n_rows, s)


def enumerate_client(run, width: int, *, replicates: int = 1024, max_rows: int = 1 << 15, seed: int = 0) -> dict:
    """The realized output distribution of ``run(n, source) -> output indices`` (a client on
    ``n`` users who all hold the same input) rebuilt from its calls; see the module docstring.
    Returns the calls, ``exact`` (no raw draws) and ``rows``: one row of Fractions (exact) or a
    ``(K, width)`` float array (one conditional row per keyed replicate)."""
    probe = EnumeratingSource(1, seed=seed)
    run(1, probe)
    plan = probe.calls
    exact = not any(c.raw for c in plan)
    for _attempt in range(8):
        L = math.prod(c.radix for c in plan)
        K = 1 if exact else min(replicates, max_rows // max(L, 1))
        if L * K > max_rows or (not exact and K < 256):
            raise NotEnumerable(f"{L:,} outcomes × {K} replicates do not fit in {max_rows:,} users")
        src = EnumeratingSource(L * K, plan, replicates=K, seed=seed)
        try:
            out = np.asarray(run(L * K, src), dtype=np.int64)
            break
        except _Grow as g:
            plan[g.k].radix = g.radix
    else:
        raise NotEnumerable("per-user ranges kept growing")
    if len(src.calls) != len(plan):
        raise NotEnumerable("the client's calls differ between the probe and the enumeration")
    # outcomes of weight 0 are impossible draws (enumerated, never sampled): their outputs are ignored
    possible = np.array([bool(w) for w in src.weight_num.tolist()], dtype=bool)
    if possible.any() and (int(out[possible].min()) < 0 or int(out[possible].max()) >= width):
        raise OutsideChannel(f"the client produced an output outside the declared channel's {width} outputs")
    out = np.where(possible, out, 0)
    if exact:  # exact rationals: the sum of each output's integer weights over the denominator
        acc = [0] * width
        for y, w in zip(out.tolist(), src.weight_num.tolist()):
            if w:
                acc[y] += w
        rows: Any = [[Fraction(a, src.weight_den) for a in acc]]
    else:  # one conditional row per replicate (floats: compared within a statistical bound)
        w = np.array([float(Fraction(int(v), src.weight_den)) for v in src.weight_num.tolist()])
        rep = np.arange(L * K) // L
        rows = np.bincount(rep * width + out, weights=w, minlength=K * width).reshape(K, width)
    return {"calls": plan, "exact": exact, "replicates": K, "users": L * K, "rows": rows}


def replay_client(run, width: int, *, max_leaves: int = 50_000) -> tuple:
    """The exact output distribution of ``run(1, source) -> output index`` (a client on one user)
    by replaying it once per leaf of its tree of sampler outcomes, depth first, on the same
    :class:`EnumeratingSource` (replay mode: each call's outcome read from a script): clients
    whose calls depend on earlier outcomes (a group per sampled attribute, a level per user) are
    covered, one client call per leaf. Returns ``(row of Fractions, leaves)``; raises
    :class:`NotEnumerable` (raw draws, more than ``max_leaves`` leaves) or :class:`OutsideChannel`."""
    acc = [Fraction(0)] * width
    script: list = []
    for leaf in range(max_leaves):
        src = EnumeratingSource(1, script=script)
        y = int(np.asarray(run(1, src)).ravel()[0])
        w = Fraction(int(src.weight_num[0]), src.weight_den)
        if w:
            if not 0 <= y < width:
                raise OutsideChannel(f"the client produced an output outside the declared channel's {width} outputs")
            acc[y] += w
        radix = [c.radix for c in src.calls]
        taken = script + [0] * (len(radix) - len(script))
        j = len(radix) - 1
        while j >= 0 and taken[j] + 1 >= radix[j]:
            j -= 1
        if j < 0:
            return acc, leaf + 1
        script = taken[:j] + [taken[j] + 1]
    raise NotEnumerable(f"more than {max_leaves} outcome paths")


def enumerated_channel(mech: Any, x: int, *, replicates: int = 1024, max_rows: int = 1 << 15, seed: int = 0) -> dict:
    """:func:`enumerate_client` on the verification entry point with every user holding ``x``."""
    width = len(declared_channel(mech).outputs)
    return enumerate_client(lambda n, src: production_outputs(mech, np.full(n, x, dtype=np.int64), src), width,
                            replicates=replicates, max_rows=max_rows, seed=seed)


def compare_row(e: dict, D: list, *, tests: int, alpha: float) -> dict:
    """The worst output of the enumerated row(s) ``e`` against the declared row ``D``; ``ok``:
    they match (exactly, or within the empirical Bernstein bound at level ``alpha / tests``)."""
    if e["exact"]:
        diff = [i for i, (a, b) in enumerate(zip(e["rows"][0], D)) if a != b]
        if diff:
            i = diff[0]
            return {"ok": False, "output": i, "realized": float(e["rows"][0][i]), "declared": float(D[i]), "excess": math.inf}
        return {"ok": True, "excess": 0.0}
    R = np.asarray(e["rows"], dtype=np.float64)
    K = R.shape[0]
    mean, var = R.mean(axis=0), R.var(axis=0, ddof=1)
    Df = np.array([float(v) for v in D])
    # empirical Bernstein (Maurer & Pontil 2009, Thm 4) for the mean of K iid values in [0, 1]
    lg = math.log(2 * 2 * tests * len(D) / alpha)
    bound = np.sqrt(2 * var * lg / K) + 7 * lg / (3 * (K - 1))
    excess = np.abs(mean - Df) / bound
    i = int(excess.argmax())
    return {"ok": bool(excess[i] <= 1), "output": i, "realized": float(mean[i]), "declared": float(Df[i]), "excess": float(excess[i])}


def positions_layer(mech: Any, *, quick: bool = False, alpha: float = 1e-6, seed: int = 0, max_rows: Optional[int] = None, replicates: Optional[int] = None) -> dict:
    """The realized channel rebuilt per input from the client's calls must equal the declared
    one: exactly when every draw is enumerable, else within a z-test over keyed replicates."""
    declared = declared_channel(mech).matrix
    m = mech.verification_input_count()
    max_rows = max_rows or (1 << 15 if quick else 1 << 16)
    replicates = replicates or (1024 if quick else 4096)
    mismatch: list = []
    calls_summary: list = []
    mode = "exact"
    worst_z = 0.0  # keyed mode: the largest |realized − declared| over its confidence bound
    try:
        for x in range(m):
            e = enumerated_channel(mech, x, replicates=replicates, max_rows=max_rows, seed=seed + x)
            if x == 0:
                calls_summary = [c.summary() for c in e["calls"]]
            if not e["exact"]:
                mode = "keyed replicates"
            c = compare_row(e, declared[x], tests=m, alpha=alpha)
            if math.isfinite(c["excess"]):
                worst_z = max(worst_z, c["excess"])
            if not c["ok"]:
                mismatch.append({"input": x, **{k: v for k, v in c.items() if k != "ok"}})
    except NotEnumerable as exc:
        return {"layer": "positions", "enumerated": False, "reason": str(exc), "passed": True}
    except OutsideChannel as exc:
        return {"layer": "positions", "enumerated": True, "mode": mode, "reason": str(exc), "mismatches": [], "passed": False}
    return {
        "layer": "positions",
        "enumerated": True,
        "mode": mode,
        "calls": calls_summary,
        "max_excess": worst_z,
        "mismatches": mismatch[:5],
        "passed": not mismatch,
    }
