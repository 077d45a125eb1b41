"""Prefix-tree discovery of frequent strings over an unknown dictionary: PEM and TreeHist.

**PEM** (prefix extending method; Wang, Li, Lopuhaä-Zwakenberg, Jha, "Locally differentially
private heavy hitter identification", TDSC 2019, §IV) and **TreeHist** (Bassily, Nissim, Stemmer,
Thakurta, "Practical locally private heavy hitters", NeurIPS 2017 / JMLR 2020, §3). Users are
split into one group per level by a **data-independent** assignment (uniform draws, or a salted
hash of the user id). A user of level ``ℓ`` reports the item of their string at prefix length
``s_ℓ`` (:mod:`ldp_plugin.discovery.prefix`) through one frequency oracle, once. The server
decodes level by level: level ``ℓ``'s candidates are level ``ℓ − 1``'s survivors extended by every
string of ``s_ℓ − s_{ℓ−1}`` symbols (or a shorter one and the terminator); PEM keeps the ``beam``
largest estimates, TreeHist every prefix selected by Benjamini–Hochberg at ``alpha`` (at most
``beam``). The final level's candidates are estimated, a finished string's estimates from every
level where it was decoded are pooled (inverse-variance: the groups are disjoint), and the
``top_k`` are returned with p-values, intervals and controlled selection
(:mod:`ldp_plugin.discovery.diagnostics`).

The frequency oracle (``oracle``) is one of the hashed open-alphabet oracles, so the reports do
not depend on the candidates and the protocol needs **one** round: ``"orr"`` (default: O-RR, i.e.
OLH's hash-then-k-RR with ``cohorts`` hash functions and OLH's variance-optimal
``k = round(e^ε) + 1``; the oracle ``ldp choose`` ranks first for large open domains) or
``"cms"`` (Apple's count-mean sketch: O-RAPPOR with one hash, ``k = 1024`` bits) or ``"hcms"``
(Apple's Hadamard count-mean sketch: one ±1 coefficient per report, ``k = 1024``) or
``"count-sketch"`` (the private count sketch: HCMS's report of a signed cell, ``k = 1024``; its
read-out needs no collision correction). Candidates are
decoded by the streamed sketch decoder when there are many (:mod:`ldp_plugin.estimation_sketch`).

**Privacy.** Every user sends exactly one report, of one ε-LDP oracle; the level assignment is
independent of the data and each level's item is a function of the user's own string. So the
protocol is ``epsilon``-LDP per user and per collection (``max_divergence``); this is what
:meth:`PrefixDiscovery.charge` records in the ledger. Reports carry their level in the clear
(public, data-independent).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from ..hashing import assign_cohorts, cohort_seed
from ..mechanisms import CMS, HCMS, ORR, CountSketch
from ..progress import status
from ..sampling import RNGLike, as_source
from .diagnostics import DiscoveryOptions, HeavyHitters, cell_sd, detectable, positive_int, p_values, pooled, result, select
from .prefix import PrefixCodec

__all__ = ["PrefixDiscovery", "DiscoveryAccumulator", "METHODS", "ORACLES"]

METHODS = ("pem", "treehist")
_ORACLE_CLASSES = {"orr": ORR, "cms": CMS, "hcms": HCMS, "count-sketch": CountSketch}
ORACLES = tuple(_ORACLE_CLASSES)
_LEVEL_TAG = 0x6C6576656C  # "level": level ℓ's hash seed is cohort_seed(hash_seed, _LEVEL_TAG + ℓ)


@dataclass(frozen=True, kw_only=True)
class PrefixDiscovery(DiscoveryOptions):
    """A heavy-hitter discovery query (module docstring): ``epsilon``-LDP per user.

    :param top_k: strings to return.
    :param method: ``"pem"`` (top-``beam`` pruning, ``step`` symbols per level) or ``"treehist"``
        (significance pruning, one symbol per level).
    :param alphabet: the public characters strings are made of; ``max_length`` their longest length.
    :param step: symbols added per level (PEM default: the largest with
        ``beam · extensions(step) <= max_candidates``).
    :param beam: prefixes kept per level (default ``4·top_k``).
    :param oracle: ``"orr"``, ``"cms"``, ``"hcms"`` or ``"count-sketch"``; ``k`` its cells (default as in the module docstring),
        ``cohorts`` its hash functions.
    :param final_share: the final level's share of users relative to one other level (its
        estimates decide the ranking; 1 = PEM's equal split).
    :param alpha, selection: level and method (``"bh"``/``"bonferroni"``) of the selection.

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
    codec: PrefixCodec = field(init=False, repr=False, compare=False)
    mechanisms: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = lambda name, v: object.__setattr__(self, name, v)  # noqa: E731
        self._check_shared()
        if self.method not in METHODS:
            raise LDPParameterError(f"method must be one of {METHODS} (got {self.method!r})")
        if self.oracle not in ORACLES:
            raise LDPParameterError(f"oracle must be one of {ORACLES} (got {self.oracle!r})")
        set_("max_candidates", positive_int(self.max_candidates, "max_candidates", 2, 1 << 22))
        set_("beam", positive_int(4 * self.top_k if self.beam is None else self.beam, "beam", self.top_k, 1 << 16))
        set_("final_share", positive_int(self.final_share, "final_share", 1, 64))
        if self.step is None:
            step = 1
            if self.method == "pem":
                while step < self.max_length and self.beam * self.codec.extension_count(step + 1) <= self.max_candidates:
                    step += 1
            set_("step", step)
        else:
            set_("step", positive_int(self.step, "step", 1, self.max_length))
        if self.codec.extension_count(self.step) > self.max_candidates:
            raise LDPParameterError(
                f"step={self.step} gives {self.codec.extension_count(self.step)} extensions per prefix, more than max_candidates={self.max_candidates}"
            )
        default_k = max(2, round(math.exp(self.epsilon)) + 1) if self.oracle == "orr" else 1024
        set_("k", positive_int(default_k if self.k is None else self.k, "k", 2, 1 << 24))
        mechs = tuple(self._level_mechanism(i) for i in range(len(self.lengths)))
        set_("mechanisms", mechs)

    def _level_mechanism(self, level: int):
        seed = cohort_seed(self.hash_seed, _LEVEL_TAG + level)
        return _ORACLE_CLASSES[self.oracle](epsilon=self.epsilon, k=self.k, cohorts=self.cohorts, hash_seed=seed)

    # -- description ---------------------------------------------------------------------------
    @property
    def lengths(self) -> tuple[int, ...]:
        """Prefix length of each level."""
        return self.codec.lengths(self.step)

    @property
    def epsilon_per_user(self) -> float:
        """What one user spends in one collection (one report of one ε-LDP oracle)."""
        return self.epsilon

    @property
    def shares(self) -> tuple[int, ...]:
        L = len(self.lengths)
        return (1,) * (L - 1) + (self.final_share,)

    def spec(self) -> dict:
        return {
            "protocol": self.method, "epsilon": self.epsilon, "top_k": self.top_k, "alphabet": self.alphabet,
            "max_length": self.max_length, "step": self.step, "beam": self.beam, "oracle": self.oracle, "k": self.k,
            "cohorts": self.cohorts, "hash_seed": self.hash_seed, "final_share": self.final_share,
        }

    def final_candidates(self) -> int:
        """The most candidates the final level can decode (the multiple-testing count)."""
        L = self.lengths
        return self.beam * self.codec.extension_count(L[-1] - (L[-2] if len(L) > 1 else 0))

    def min_detectable_frequency(self, n: int) -> float:
        """The frequency a string of ``max_length`` needs to be selected at the final level with
        probability ½ (Bonferroni over :meth:`final_candidates` tests at ``alpha``), announced from
        ``n``, ``ε`` and the protocol before anything is collected; shorter strings are pooled over
        several levels and need less. Uses the oracle's single-cell variance
        (:meth:`~ldp_plugin.mechanisms.cohort_base._CohortMechanism.cell_variance`) over the final level's expected users."""
        n = positive_int(n, "n", 1, 1 << 62)
        sd = cell_sd(self.mechanisms[-1], n * self.shares[-1] / sum(self.shares))
        return detectable(sd, self.alpha, self.final_candidates(), self.selection)

    # -- client ------------------------------------------------------------------------------------
    def assign_levels(self, n: int, *, rng: RNGLike = None, user_ids: Any = None, salt: Optional[int] = None) -> np.ndarray:
        """Each user's level, independent of the data: uniform draws with the level shares, or the
        salted hash of the user id (stable across collections)."""
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
        level; nothing links a row to its user). ``levels`` from :meth:`assign_levels` (default:
        drawn here). Checks every value before any randomness is drawn."""
        series = self.codec.check(values if isinstance(values, pl.Series) else pl.Series("values", values, dtype=pl.String, strict=False))
        n = series.len()
        source = as_source(rng)
        lv = self.assign_levels(n, rng=source) if levels is None else np.asarray(levels)
        if lv.shape != (n,) or lv.dtype.kind not in "iu" or (n and (lv.min() < 0 or lv.max() >= len(self.lengths))):
            raise LDPInputError(f"levels must be one integer in [0, {len(self.lengths)}) per value")
        frames = []
        for level, length in enumerate(self.lengths):
            idx = np.flatnonzero(lv == level)
            if idx.size == 0:
                continue
            items = self.codec.level_items(series.gather(idx), length)
            m = self.mechanisms[level]
            f = m.reports_to_frame(m.randomize(items, rng=source))
            frames.append(f.with_columns(pl.lit(level, dtype=pl.UInt8).alias("level")).select("level", *f.columns))
        if not frames:
            raise LDPInputError("no values to privatize")
        return pl.concat(frames)

    # -- server ----------------------------------------------------------------------------------
    def accumulator(self) -> "DiscoveryAccumulator":
        return DiscoveryAccumulator(self)

    def discover(self, reports: Any) -> HeavyHitters:
        """Decode the levels (module docstring) from a reports frame, a list of frames or Parquet
        paths, or a :class:`DiscoveryAccumulator`."""
        acc = reports if isinstance(reports, DiscoveryAccumulator) else self.accumulator().add(reports)
        if acc.query != self:
            raise LDPParameterError("the accumulator belongs to a different discovery query")
        missing = [i for i, a in enumerate(acc.levels) if a.n == 0]
        if missing:
            raise LDPInputError(f"no reports for level(s) {missing}: every level needs reports")
        live, pool, rows = [""], {}, []
        prev = 0
        cands: list = []
        for level, length in enumerate(self.lengths):
            t0 = time.perf_counter()
            cands = self.codec.extend(live, length - prev)
            est = acc.levels[level].estimate(candidates=cands, postprocess="none", confidence=self.confidence)
            raw, se = np.asarray(est.raw[: len(cands)]), np.asarray(est.std_error[: len(cands)])
            final = level == len(self.lengths) - 1
            for i, c in enumerate(cands):
                if final or self.codec.finished(c):
                    pool.setdefault(c, []).append((float(raw[i]), float(se[i])))
            if self.method == "pem":
                order = np.argsort(-raw, kind="stable")[: self.beam]
                keep = order[raw[order] > 0]
            else:
                sig = np.flatnonzero(select(p_values(raw, se), self.alpha, "bh"))
                keep = sig[np.argsort(-raw[sig], kind="stable")][: self.beam]
            live = [cands[i] for i in keep]
            rows.append({"level": level, "prefix_length": length, "users": acc.levels[level].n, "candidates": len(cands),
                         "kept": len(live), "seconds": round(time.perf_counter() - t0, 3)})
            status(f"level {level + 1}/{len(self.lengths)}: prefix length {length}, {acc.levels[level].n} users, {len(cands)} candidates, {len(live)} kept")
            prev = length
        est_se = np.array([pooled(pool[c]) for c in cands]) if cands else np.zeros((0, 2))
        estimate, se = est_se[:, 0], est_se[:, 1]
        return result(self, [self.codec.display(c) for c in cands], estimate, se, acc.n, rows)

    def charge(self, accountant: Any, query_id: str, **kw: Any):
        """Spend this collection's ε per user under ``query_id`` (before any report exists)."""
        return accountant.spend(query_id, self.epsilon, mechanism=self.method, params=self.spec(), **kw)


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
            self.levels[int(level[0])].add(m.frame_to_reports(part))
        return self

    def merge(self, other: "DiscoveryAccumulator") -> "DiscoveryAccumulator":
        if not isinstance(other, DiscoveryAccumulator) or other.query != self.query:
            raise LDPParameterError("can only merge accumulators of the same discovery query")
        out = DiscoveryAccumulator(self.query)
        out.levels = [a.merge(b) for a, b in zip(self.levels, other.levels)]
        return out
