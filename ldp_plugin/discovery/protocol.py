"""Prefix-tree discovery of frequent strings over an unknown dictionary: PEM and TreeHist.

**PEM** (prefix extending method; Wang, Li, Lopuhaä-Zwakenberg, Jha, "Locally differentially
private heavy hitter identification", TDSC 2019, §IV) and **TreeHist** (Bassily, Nissim, Stemmer,
Thakurta, "Practical locally private heavy hitters", NeurIPS 2017 / JMLR 2020, §3). Users are
split by a **data-independent** assignment (uniform draws, or a salted hash of the user id) into
one group per discovery level and one **held-out** group. A user of level ``ℓ`` reports the item
of their string at prefix length ``s_ℓ`` (:mod:`ldp_plugin.discovery.prefix`) through one
frequency oracle, once; a held-out user reports their whole string.

**Level plan** (:func:`plan_lengths`): ``step`` symbols per level, the most for which a beam of
``2·top_k`` prefixes extends to at most ``max_candidates`` (two symbols for ``a-z'``, one for 39
symbols), prefix lengths ``step, 2·step, …, max_length``; the beam is ``4·top_k`` when the
candidates allow, less otherwise.

**Decoding.** Level ``ℓ``'s candidates are the live prefixes of level ``ℓ − 1`` extended by every
string of ``1..step`` symbols and the terminator (finished) or of ``step`` symbols (live), plus the
strings being screened and the **finished pool**. A finished string (one of exactly ``s_ℓ`` symbols
or fewer finishes at level ``ℓ``) **leaves the race**: it never competes with live prefixes for
the beam. It is screened at its first level (``z >= screen_z``, at most ``max_candidates/8``),
joins the pool when its estimate pooled over that level and the next is at least ``finish_z``
standard errors (at most ``pool_per_level`` per level; the last level decides alone), and from then
on every later level's users and the held-out group estimate it (pooled inverse-variance: the
groups are disjoint). Live prefixes: PEM keeps the ``beam`` largest estimates, TreeHist the
prefixes whose estimate exceeds the level's noise threshold (Bassily et al. §3 prune by a
threshold on the estimated count; here ``z ≥ z_{1 − beam/(2·S_ℓ)}`` over the level's ``S_ℓ`` live
candidates, at which the level's noise alone fills at most half the beam in expectation; the
largest ``beam`` of them). Pruning decides only which strings can become candidates (recall);
the error control is the final selection's.

**Selection-honest inference.** A pooled string's reported estimate, standard error, p-value and
interval come only from users whose reports played no part in making it a candidate: the levels
*after* the one where it joined the pool, and the held-out group (level-wise sample splitting;
the groups are disjoint and data-independent, so the estimate is independent of the selection).
The strings are then selected by ``selection`` (Benjamini–Hochberg by default) at ``alpha`` over
the whole pool, and only the selected ones are returned (``top_k`` is a maximum; ``unselected=True``
lists the rest too, marked). Intervals of the selected strings are the **FCR-adjusted** intervals
of Benjamini & Yekutieli ("False discovery rate-adjusted multiple confidence intervals for
selected parameters", JASA 2005, §2: level ``1 − R·(1 − confidence)/m`` for ``R`` selected of
``m``), so the expected share of returned intervals that miss their truth is at most
``1 − confidence`` *after* selection; unselected strings get the marginal interval.

The frequency oracle (``oracle``) is one of the hashed open-alphabet oracles, so the reports do
not depend on the candidates and the protocol needs **one** round: ``"orr"`` (default: O-RR, i.e.
OLH's hash-then-k-RR with ``cohorts`` hash functions and OLH's variance-optimal
``k = round(e^ε) + 1``; the oracle ``ldp choose`` ranks first for large open domains) or
``"cms"`` (Apple's count-mean sketch: O-RAPPOR with one hash, ``k = 1024`` bits) or ``"hcms"``
(Apple's Hadamard count-mean sketch: one ±1 coefficient per report, ``k = 1024``) or
``"count-sketch"`` (the private count sketch: HCMS's report of a signed cell, ``k = 1024``).
**As discovery oracles the sketches lose**: a light cell's variance per report is 2.5× (CMS) to 15× (HCMS, count sketch) O-RR's at
ε = 4 (``cell_variance()``), and a prefix level has tens of thousands of candidates, so their
recall on English words stayed at 0.26–0.30 from ε = 2 to 8 where O-RR reached 0.87, and on Zipf
words at ε = 4 at 0.52–0.57 vs 0.905 (BENCHMARKS.md); use them only when 1-bit reports are required. Candidates are decoded by the decoder of smaller predicted error
(:meth:`~ldp_plugin.mechanisms.cohort_server.CohortAccumulator.estimate`, ``decoder="auto"``), the
streamed sketch decoder's cohort-spread standard errors floored at the light candidates' common
error (:func:`~ldp_plugin.discovery.diagnostics.light_std_error`, at least a light item's predicted
randomization error: without the floor the selection favours nulls whose spread came out small,
and their ``z`` has Student-t tails).

**Privacy.** The privacy unit is **one user**: every user is assigned to exactly one group
(one level, or the held-out group) and sends exactly one report, of one ε-LDP oracle; the
assignment is independent of the data and each report's item is a function of the user's own
string. So the protocol is ``epsilon``-LDP per user and per collection (``max_divergence``,
neighbouring = one user's string changed); this is what :meth:`PrefixDiscovery.charge` records in
the ledger. Reports carry their group in the clear (public, data-independent).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from ..hashing import assign_cohorts, cohort_seed
from ..mechanisms import CMS, HCMS, ORR, CountSketch
from ..mechanisms.charge import report_charge
from ..mechanisms.frame_spec import SPEC_COLUMN, spec_text
from ..mechanisms.reports import frame_to_reports, reports_to_frame
from ..progress import status
from ..sampling import RNGLike, as_source
from .diagnostics import _N, DiscoveryOptions, HeavyHitters, cell_sd, decode, detectable, positive_int, pooled, result
from .prefix import PrefixCodec

__all__ = ["PrefixDiscovery", "DiscoveryAccumulator", "METHODS", "ORACLES"]

METHODS = ("pem", "treehist")
_ORACLE_CLASSES = {"orr": ORR, "cms": CMS, "hcms": HCMS, "count-sketch": CountSketch}
ORACLES = tuple(_ORACLE_CLASSES)
_LEVEL_TAG = 0x6C6576656C  # "level": level ℓ's hash seed is cohort_seed(hash_seed, _LEVEL_TAG + ℓ)


def plan_lengths(codec: PrefixCodec, top_k: int, max_candidates: int, step: Optional[int] = None, beam: Optional[int] = None) -> tuple[tuple[int, ...], int]:
    """``(prefix lengths, beam)`` of the discovery levels (module docstring): ``step`` symbols per
    level (default: the most with ``2·top_k · extension_count(step) <= max_candidates``, so every
    level's race has the same number of candidates per beam slot), lengths ``step, 2·step, …,
    max_length``, and the beam (default ``4·top_k``, less when ``max_candidates`` needs it, never
    below ``top_k``). A function of public parameters only."""
    if step is None:
        step = 1
        while step < codec.max_length and 2 * top_k * codec.extension_count(step + 1) <= max_candidates:
            step += 1
    if beam is None:
        beam = max(top_k, min(4 * top_k, max_candidates // codec.extension_count(step)))
    return codec.lengths(step), beam


@dataclass(frozen=True, kw_only=True)
class PrefixDiscovery(DiscoveryOptions):
    """A heavy-hitter discovery query (module docstring): ``epsilon``-LDP per user (one user, one
    group, one report).

    :param top_k: the most strings to return (only the selected ones are returned).
    :param method: ``"pem"`` (top-``beam`` pruning of live prefixes) or ``"treehist"``
        (threshold pruning of live prefixes, :meth:`prune_z`).
    :param alphabet: the public characters strings are made of; ``max_length`` their longest length
        (:func:`~ldp_plugin.discovery.prefix.infer_domain` reads both from the data in a simulation).
    :param step: symbols per level (default: the most the alphabet allows, :func:`plan_lengths`).
    :param beam: live prefixes kept per level (default ``4·top_k``, down to ``2·top_k`` when that
        lets a level add one more symbol).
    :param oracle: ``"orr"``, ``"cms"``, ``"hcms"`` or ``"count-sketch"``; ``k`` its cells (default as in the module docstring),
        ``cohorts`` its hash functions.
    :param final_share: the held-out group's share of users relative to one level.
    :param screen_z: a finished string is screened at its first level (at least ``screen_z``
        standard errors, at most ``max_candidates/8``) ...
    :param finish_z: ... and joins the pool when its estimate pooled over that level and the next
        is at least ``finish_z`` standard errors ...
    :param pool_per_level: ... at most ``pool_per_level`` per level (default 2048).
    :param alpha: the level of the selection.
    :param selection: its method (``"bh"``/``"bonferroni"``).

    >>> q = PrefixDiscovery(epsilon=4.0, top_k=2, alphabet="ab", max_length=3, step=2, cohorts=32)
    >>> q.lengths, q.epsilon_per_user
    ((2, 3), 4.0)
    """

    method: str = "pem"
    step: Optional[int] = None
    beam: Optional[int] = None
    oracle: str = "orr"
    k: Optional[int] = None
    final_share: int = 2
    max_candidates: int = 1 << 16
    finish_z: float = 1.0
    screen_z: float = 0.0
    pool_per_level: Optional[int] = None
    codec: PrefixCodec = field(init=False, repr=False, compare=False)
    mechanisms: tuple = field(init=False, repr=False, compare=False)
    lengths: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = lambda name, v: object.__setattr__(self, name, v)  # noqa: E731
        self._check_shared()
        if self.method not in METHODS:
            raise LDPParameterError(f"method must be one of {METHODS} (got {self.method!r})")
        if self.oracle not in ORACLES:
            raise LDPParameterError(f"oracle must be one of {ORACLES} (got {self.oracle!r})")
        set_("max_candidates", positive_int(self.max_candidates, "max_candidates", 2, 1 << 22))
        if self.step is not None:
            set_("step", positive_int(self.step, "step", 1, self.max_length))
            if self.codec.extension_count(self.step) > self.max_candidates:
                raise LDPParameterError(
                    f"step={self.step} gives {self.codec.extension_count(self.step)} extensions per prefix, more than max_candidates={self.max_candidates}"
                )
        lengths, beam = plan_lengths(self.codec, self.top_k, self.max_candidates, self.step, self.beam)
        set_("step", lengths[0] if self.step is None else self.step)
        set_("beam", positive_int(beam, "beam", self.top_k, 1 << 16))
        set_("lengths", lengths)
        set_("final_share", positive_int(self.final_share, "final_share", 1, 64))
        if not (isinstance(self.finish_z, (int, float)) and not isinstance(self.finish_z, bool) and -10.0 <= float(self.finish_z) <= 10.0):
            raise LDPParameterError(f"finish_z must be a number in [-10, 10] (got {self.finish_z!r})")
        set_("finish_z", float(self.finish_z))
        set_("pool_per_level", positive_int(2048 if self.pool_per_level is None else self.pool_per_level, "pool_per_level", 1, 1 << 20))
        if not (isinstance(self.screen_z, (int, float)) and not isinstance(self.screen_z, bool) and -10.0 <= float(self.screen_z) <= 10.0):
            raise LDPParameterError(f"screen_z must be a number in [-10, 10] (got {self.screen_z!r})")
        set_("screen_z", float(self.screen_z))
        default_k = _ORACLE_CLASSES[self.oracle].default_cells(self.epsilon)
        set_("k", positive_int(default_k if self.k is None else self.k, "k", 2, 1 << 24))
        mechs = tuple(self._level_mechanism(i) for i in range(len(self.lengths) + 1))
        set_("mechanisms", mechs)

    def _level_mechanism(self, level: int):
        seed = cohort_seed(self.hash_seed, _LEVEL_TAG + level)
        return _ORACLE_CLASSES[self.oracle](epsilon=self.epsilon, k=self.k, cohorts=self.cohorts, hash_seed=seed)

    # -- description ---------------------------------------------------------------------------
    @property
    def holdout(self) -> int:
        """The held-out group's index (after the discovery levels)."""
        return len(self.lengths)

    @property
    def epsilon_per_user(self) -> float:
        """What one user spends in one collection (one report of one ε-LDP oracle)."""
        return self.epsilon

    @property
    def shares(self) -> tuple[int, ...]:
        """Relative group sizes: one per discovery level, then the held-out group's ``final_share``."""
        return (1,) * len(self.lengths) + (self.final_share,)

    def spec(self) -> dict:
        return {
            "protocol": self.method, "epsilon": self.epsilon, "top_k": self.top_k, "alphabet": self.alphabet,
            "max_length": self.max_length, "prefix_lengths": list(self.lengths), "beam": self.beam, "oracle": self.oracle, "k": self.k,
            "cohorts": self.cohorts, "hash_seed": self.hash_seed, "final_share": self.final_share, "finish_z": self.finish_z,
            "screen_z": self.screen_z, "pool_per_level": self.pool_per_level,
        }

    def _level_candidates(self) -> list[tuple[int, int]]:
        """``(live candidates, finished candidates)`` each level decodes at most (new ones only)."""
        out, prev, live = [], 0, 1
        last = len(self.lengths) - 1
        for i, length in enumerate(self.lengths):
            step = length - prev
            fin = live * (self.codec.finished_count(step) + (1 if i == 0 else 0))
            out.append((0 if i == last else live * len(self.alphabet) ** step, fin))
            live, prev = self.beam, length
        return out

    def prune_z(self, live_candidates: int) -> float:
        """TreeHist's pruning threshold at a level of ``live_candidates`` live prefixes: the z-score
        ``z_{1 − beam/(2·S)}`` that a null prefix exceeds with probability ``beam/(2·S)`` (at most
        ½), so the level's noise alone keeps at most half the beam in expectation."""
        return float(_N.inv_cdf(1.0 - min(0.5, self.beam / (2.0 * max(int(live_candidates), 1)))))

    @property
    def screen_cap(self) -> int:
        """Finished strings screened per level at most (the largest z first)."""
        return max(1, self.max_candidates // 8)

    def pool_bound(self) -> int:
        """The most strings the final selection tests (the finished pool's size bound)."""
        return sum(min(f, self.pool_per_level) for _, f in self._level_candidates())

    def min_detectable_frequency(self, n: int, *, by_level: bool = False) -> Any:
        """The frequency at which a string is returned with probability at least ½, announced from
        ``n``, ``ε`` and the protocol before anything is collected; the largest over the level
        where the string finishes (``by_level=True``: one value per finishing level).

        A string finishing at level ``f`` must pass every stage: its prefix survives each earlier
        level's pruning (bounded by exceeding the Bonferroni maximum of the level's noise,
        ``z_{1−α/S_ℓ}`` standard errors over its ``S_ℓ`` live candidates: PEM's ``beam``-th largest
        noise is below it, and so is TreeHist's threshold :meth:`prune_z`, assuming fewer than ``beam`` prefixes
        at a level are heavier); it passes the screen at level ``f`` (``max(screen_z,
        z_{1−cap/F_f})`` over ``F_f`` finished candidates) and the pool's entry on levels ``f`` and
        ``f + 1`` pooled (``max(finish_z, z_{1−pool_per_level/F_f})``); and it is selected from the
        pooled estimate of the later levels and the held-out group (Bonferroni over
        :meth:`pool_bound`, which BH's threshold never exceeds). Each of the ``J`` stages gets the
        margin ``z_{1 − 1/(2J)}``, so by the union bound all pass with probability ≥ ½. Standard
        errors use the oracle's single-cell variance
        (:meth:`~ldp_plugin.mechanisms.cohort.base._CohortMechanism.cell_variance`) over each
        group's expected users (the group split)."""
        n = positive_int(n, "n", 1, 1 << 62)
        total = sum(self.shares)
        sd = [cell_sd(m, n * s / total) for m, s in zip(self.mechanisms, self.shares)]
        cands = self._level_candidates()
        tests = self.pool_bound()
        last = len(self.lengths) - 1
        inv = lambda s: float(np.sqrt(1.0 / sum(1.0 / (x * x) for x in s)))  # noqa: E731  pooled sd
        q = lambda frac: _N.inv_cdf(1.0 - min(max(frac, 1e-300), 0.5))  # noqa: E731
        out = []
        for f in range(len(self.lengths)):
            two = f < last
            J = f + (3 if two else 2)
            margin = _N.inv_cdf(1.0 - 1.0 / (2 * J))
            need = [(q(self.alpha / max(cands[l][0], 1)) + margin) * sd[l] for l in range(f)]
            F = max(cands[f][1], 1)
            entry = max(self.finish_z, q(self.pool_per_level / F))
            if two:
                need.append((max(self.screen_z, q(self.screen_cap / F)) + margin) * sd[f])
                need.append((entry + margin) * inv(sd[f : f + 2]))
                rest = sd[f + 2 :]
            else:
                need.append((entry + margin) * sd[f])
                rest = sd[f + 1 :]
            pooled_sd = inv(rest)
            need.append(detectable(pooled_sd, self.alpha, tests, self.selection) + margin * pooled_sd)
            out.append(max(need))
        return tuple(out) if by_level else max(out)

    # -- client ------------------------------------------------------------------------------------
    def assign_levels(self, n: int, *, rng: RNGLike = None, user_ids: Any = None, salt: Optional[int] = None) -> np.ndarray:
        """Each user's group (a level, or :attr:`holdout`), independent of the data: uniform draws
        with the groups' shares, or the salted hash of the user id (stable across collections)."""
        shares = np.repeat(np.arange(len(self.shares)), self.shares)
        if user_ids is not None:
            if salt is None:
                raise LDPParameterError("assigning levels from user ids needs a salt")
            slot = assign_cohorts(user_ids, shares.size, salt)
        else:
            slot = as_source(rng).uniform_int(shares.size, n)
        return shares[np.asarray(slot, dtype=np.int64)]

    def privatize(self, values: Any, *, rng: RNGLike = None, levels: Any = None) -> pl.DataFrame:
        """Every user's one report → a frame ``level, cohort, report`` (one row per user, grouped by
        group; nothing links a row to its user). ``levels`` from :meth:`assign_levels` (default:
        drawn here). Checks every value before any randomness is drawn."""
        series = self.codec.check(values if isinstance(values, pl.Series) else pl.Series("values", values, dtype=pl.String, strict=False))
        n = series.len()
        source = as_source(rng)
        groups = len(self.shares)
        lv = self.assign_levels(n, rng=source) if levels is None else np.asarray(levels)
        if lv.shape != (n,) or lv.dtype.kind not in "iu" or (n and (lv.min() < 0 or lv.max() >= groups)):
            raise LDPInputError(f"levels must be one integer in [0, {groups}) per value")
        frames = []
        for level, length in enumerate((*self.lengths, self.max_length)):
            idx = np.flatnonzero(lv == level)
            if idx.size == 0:
                continue
            items = self.codec.level_items(series.gather(idx), length)
            m = self.mechanisms[level]
            f = reports_to_frame(m, m.randomize(items, rng=source))
            frames.append(f.with_columns(pl.lit(level, dtype=pl.UInt8).alias("level")).select("level", *f.columns))
        if not frames:
            raise LDPInputError("no values to privatize")
        # each level's spec column names its own oracle: one Enum over every level's spec, so the levels concatenate
        specs = pl.Enum(list(dict.fromkeys(spec_text(m) for m in self.mechanisms)))
        return pl.concat([f.with_columns(pl.col(SPEC_COLUMN).cast(pl.String).cast(specs)) for f in frames])

    # -- server ----------------------------------------------------------------------------------
    def accumulator(self) -> "DiscoveryAccumulator":
        return DiscoveryAccumulator(self)

    def discover(self, reports: Any) -> HeavyHitters:
        """Decode the levels, then select and estimate the finished pool (module docstring) from a
        reports frame, a list of frames or Parquet paths, or a :class:`DiscoveryAccumulator`."""
        acc = reports if isinstance(reports, DiscoveryAccumulator) else self.accumulator().add(reports)
        if acc.query != self:
            raise LDPParameterError("the accumulator belongs to a different discovery query")
        missing = [i for i, a in enumerate(acc.levels) if a.n == 0]
        if missing:
            raise LDPInputError(f"no reports for group(s) {missing}: every level and the held-out group need reports")
        live: list = [""]
        screened: dict = {}  # finished string -> its first level's (estimate, se): one more level decides
        pool: dict = {}  # finished string -> the level where it joined the pool
        later: dict = {}  # pooled string -> [(estimate, se)] from the groups after that level
        rows = []
        prev = 0
        last = len(self.lengths) - 1
        for level, length in enumerate(self.lengths):
            t0 = time.perf_counter()
            new = self.codec.extend(live, length - prev, live=level < last) if live else []
            old_s, old_p = list(screened), list(pool)
            cands = new + old_s + old_p
            if not cands:
                break
            raw, se = decode(acc.levels[level], cands, self.confidence)
            for i, c in enumerate(old_p, start=len(new) + len(old_s)):
                later[c].append((float(raw[i]), float(se[i])))
            # screened strings: pooled over their first level and this one, the largest z join the pool
            pz = np.array([_z(pooled([screened[c], (float(raw[i]), float(se[i]))])) for i, c in enumerate(old_s, start=len(new))])
            joined = self._enter(old_s, pz, pool, later, level)
            nr, nse = raw[: len(new)], se[: len(new)]
            done = np.array([self.codec.finished(c) for c in new], dtype=bool)
            z = nr / np.maximum(nse, 1e-300)
            if level == last:  # no later level to screen on: this level's estimate decides
                joined += self._enter(new, np.where(done, z, -np.inf), pool, later, level)
                screened = {}
            else:
                fin = np.flatnonzero(done & (z >= self.screen_z))
                fin = fin[np.argsort(-z[fin], kind="stable")][: self.screen_cap]
                screened = {new[i]: (float(nr[i]), float(nse[i])) for i in fin}
            open_ = np.flatnonzero(~done)
            if self.method == "pem":
                order = open_[np.argsort(-nr[open_], kind="stable")][: self.beam]
                keep = order[nr[order] > 0]
            else:
                sig = open_[z[open_] >= self.prune_z(open_.size)]
                keep = sig[np.argsort(-nr[sig], kind="stable")][: self.beam]
            live = [new[i] for i in keep]
            rows.append({"level": level, "prefix_length": length, "users": acc.levels[level].n, "candidates": len(cands),
                         "kept": len(live), "screened": len(screened), "pooled": joined, "seconds": round(time.perf_counter() - t0, 3)})
            status(f"level {level + 1}/{len(self.lengths)}: prefix length {length}, {acc.levels[level].n} users, "
                   f"{len(cands)} candidates, {len(live)} live, {joined} finished strings pooled")
            prev = length
        t0 = time.perf_counter()
        final = list(pool)
        if final:
            h = acc.levels[self.holdout]
            for c, r, s in zip(final, *decode(h, final, self.confidence)):
                later[c].append((float(r), float(s)))
        rows.append({"level": self.holdout, "prefix_length": self.max_length, "users": acc.levels[self.holdout].n, "candidates": len(final),
                     "kept": len(final), "screened": 0, "pooled": 0, "seconds": round(time.perf_counter() - t0, 3), "held_out": True})
        est_se = np.array([pooled(later[c]) for c in final]) if final else np.zeros((0, 2))
        return result(self, [self.codec.display(c) for c in final], est_se[:, 0], est_se[:, 1], acc.n, rows)

    def _enter(self, items: list, z: np.ndarray, pool: dict, later: dict, level: int) -> int:
        """Pool the ``items`` whose z-score is at least ``finish_z`` (at most ``pool_per_level``,
        the largest first); their estimates start from the next group."""
        ok = np.flatnonzero(z >= self.finish_z)
        ok = ok[np.argsort(-z[ok], kind="stable")][: self.pool_per_level]
        for i in ok:
            pool[items[i]] = level
            later[items[i]] = []
        return int(ok.size)

    def report_cost(self) -> Fraction:
        """What one user's collection costs (``max_divergence``): each user sends one report, of
        one level's oracle, so the largest of their charges
        (:func:`~ldp_plugin.mechanisms.charge.report_charge`: the realized ε rounded up)."""
        return max(report_charge(m) for m in self.mechanisms)

    def charge(self, accountant: Any, query_id: str, **kw: Any):
        """Spend this collection's ε per user (:meth:`report_cost`) under ``query_id`` (before any
        report exists)."""
        return accountant.spend(query_id, self.report_cost(), mechanism=self.method, params=self.spec(), **kw)


def _z(est_se: tuple) -> float:
    return est_se[0] / max(est_se[1], 1e-300)


class DiscoveryAccumulator:
    """Mergeable server state of a discovery: one cohort accumulator per level."""

    def __init__(self, query: PrefixDiscovery):
        self.query = query
        self.levels = [m.accumulator() for m in query.mechanisms]

    @property
    def n(self) -> int:
        return sum(a.n for a in self.levels)

    def add(self, reports: Any) -> "DiscoveryAccumulator":
        """Add a reports frame (``level`` + the oracle's columns), several, or Parquet paths."""
        if isinstance(reports, (list, tuple)):
            for r in reports:
                self.add(r)
            return self
        if isinstance(reports, (str,)) or hasattr(reports, "__fspath__"):
            reports = pl.read_parquet(reports)
        if isinstance(reports, pl.LazyFrame):
            reports = reports.collect()
        if not isinstance(reports, pl.DataFrame) or "level" not in reports.columns:
            raise LDPInputError("discovery reports must be a Polars frame with a 'level' column (from PrefixDiscovery.privatize)")
        lv = reports["level"]
        if lv.null_count() or (lv.len() and (lv.min() < 0 or lv.max() >= len(self.levels))):
            raise LDPInputError(f"report levels must be integers in [0, {len(self.levels)})")
        for level, part in reports.partition_by("level", as_dict=True).items():
            m = self.query.mechanisms[int(level[0])]
            self.levels[int(level[0])].add(frame_to_reports(m, part))
        return self

    def merge(self, other: "DiscoveryAccumulator") -> "DiscoveryAccumulator":
        if not isinstance(other, DiscoveryAccumulator) or other.query != self.query:
            raise LDPParameterError("can only merge accumulators of the same discovery query")
        out = DiscoveryAccumulator(self.query)
        out.levels = [a.merge(b) for a, b in zip(self.levels, other.levels)]
        return out
