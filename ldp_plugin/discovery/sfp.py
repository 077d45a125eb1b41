"""Apple's Sequence Fragment Puzzle (SFP): discovery from fragments tied together by a small hash
("Learning with Privacy at Scale", Apple Differential Privacy Team, 2017, §"Sequence Fragment
Puzzle").

A string ``w`` (padded with terminators to ``max_length``) is cut into fragments of ``fragment``
symbols. Each user draws a position ``j`` uniformly (data-independent, sent in the clear) and
sends **two** reports: the item ``r ‖ w[j·f : (j+1)·f]`` through position ``j``'s oracle, where
``r = h(w) mod 2^puzzle_bits`` is a public hash of the whole string (the puzzle piece that ties
the fragments of one string together), and the whole string through the word oracle. The server
decodes every ``(r, fragment)`` pair at every position (streamed sketch decoder), keeps the
``beam`` largest per position, joins the fragments that share ``r`` across all positions, keeps
the joins whose own hash is ``r``, and estimates those strings from the word reports.

Defaults: a 6-bit puzzle (``2^6 · (a+1)^f`` fragment items per position: with 8 bits the server
decoded 4× as many and took 3–4× PEM's time for the same recall). The word estimates come from
the word reports, whose randomization is independent of the fragment reports that chose the
candidates, so the intervals hold for the users' own frequencies; the result is selected and its
intervals FCR-adjusted as PEM's (:func:`~ldp_plugin.discovery.diagnostics.result`).

**Demoted** (a :class:`UserWarning` at construction; ``ldp choose`` never recommends it; use
PEM or TreeHist, :class:`~ldp_plugin.discovery.PrefixDiscovery`). Measured on data nobody tuned
for: recall 0.08–0.12 on real English and Czech text against 0.84–0.90 for PEM/TreeHist at
ε = 2, a server 5–6× slower than PEM's, and no detectability statement that holds: a string must
win a beam at *every* position against the fragments of every other string (a threshold per
position says nothing of that competition), the joins of one puzzle value can number in the
hundreds of thousands (the server keeps at most 4,096 of them), and the word stage selects again —
a per-position Bonferroni frequency was announced and then missed by 16 of 33 string–seed pairs
above it at ε = 2, and by a string at 7× it at ε = 8. So :meth:`SFP.min_detectable_frequency` is
NaN (none announced); the intervals of what it does return still hold (below).

**Privacy.** The fragment report is ``(1 − word_share)·ε``-LDP and the word report
``word_share·ε``-LDP (each an O-RR report, exact ratio checked); by basic composition each user
spends ``epsilon`` per collection (``max_divergence``) — what :meth:`SFP.charge` records.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from ..hashing import cohort_seed, item_keys, seeded_hash
from ..mechanisms import ORR
from ..mechanisms.charge import report_charge
from ..mechanisms.reports import frame_to_reports, reports_to_frame
from ..progress import status
from ..sampling import RNGLike, as_source
from .diagnostics import DiscoveryOptions, HeavyHitters, cell_sd, decode, detectable, positive_int, result
from .prefix import TERM, PrefixCodec

__all__ = ["SFP"]

_TAG = 0x736670  # "sfp"
_SFP_INTERVALS = (
    "estimates from the word reports (randomized independently of the fragment reports that chose the candidates); "
    "selected items: Benjamini-Yekutieli (2005) FCR-adjusted intervals at level 1 - R(1 - confidence)/m; "
    "unselected items (listed only with unselected=True): marginal intervals"
)
#: the construction warning (module docstring, *Demoted*)
DEMOTED = ("SFP is demoted: its recall on real text was 0.08-0.12 against 0.84-0.90 for PEM/TreeHist and it announces no "
           "minimum detectable frequency (strings far above a per-position threshold were missed); use method='pem' or "
           "'treehist' (docs/strings.md)")
_SFP_UNIT = "one user: two reports (a fragment at (1 - word_share)·epsilon and the word at word_share·epsilon), epsilon in total"


@dataclass(frozen=True, kw_only=True)
class SFP(DiscoveryOptions):
    """The Sequence Fragment Puzzle query (module docstring); ``epsilon``-LDP per user. Demoted:
    constructing it warns (module docstring, *Demoted*).

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", UserWarning)
    ...     SFP(epsilon=4.0, alphabet="ab", max_length=4, cohorts=32).positions
    2
    """

    fragment: int = 2
    puzzle_bits: int = 6
    word_share: float = 0.5
    beam: int = 0
    method: str = field(default="sfp", init=False)
    codec: PrefixCodec = field(init=False, repr=False, compare=False)
    fragment_mechanisms: tuple = field(init=False, repr=False, compare=False)
    word_mechanism: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        warnings.warn(DEMOTED, UserWarning, stacklevel=3)
        set_ = lambda name, v: object.__setattr__(self, name, v)  # noqa: E731
        self._check_shared()
        set_("fragment", positive_int(self.fragment, "fragment", 1, min(4, self.max_length)))
        set_("puzzle_bits", positive_int(self.puzzle_bits, "puzzle_bits", 1, 16))
        set_("beam", positive_int(self.beam or 8 * self.top_k, "beam", self.top_k, 1 << 16))
        if not (isinstance(self.word_share, float) and 0.0 < self.word_share < 1.0):
            raise LDPParameterError(f"word_share must be a float in (0, 1) (got {self.word_share!r})")
        cells = (1 << self.puzzle_bits) * self.codec.symbols**self.fragment
        if cells > 1 << 22:
            raise LDPParameterError(f"puzzle_bits={self.puzzle_bits} and fragment={self.fragment} give {cells} fragment items per position (at most 2**22)")
        e_word = self.epsilon * self.word_share
        e_frag = self.epsilon - e_word
        mk = lambda e, j: ORR(epsilon=e, k=max(2, round(math.exp(e)) + 1), cohorts=self.cohorts, hash_seed=cohort_seed(self.hash_seed, _TAG + j))  # noqa: E731
        set_("fragment_mechanisms", tuple(mk(e_frag, j) for j in range(self.positions)))
        set_("word_mechanism", mk(e_word, 1 << 20))

    @property
    def positions(self) -> int:
        return -(-self.max_length // self.fragment)

    @property
    def epsilon_per_user(self) -> float:
        return self.epsilon

    def spec(self) -> dict:
        return {"protocol": "sfp", "epsilon": self.epsilon, "top_k": self.top_k, "alphabet": self.alphabet, "max_length": self.max_length,
                "fragment": self.fragment, "puzzle_bits": self.puzzle_bits, "word_share": self.word_share, "beam": self.beam,
                "cohorts": self.cohorts, "hash_seed": self.hash_seed}

    def report_cost(self) -> Fraction:
        """What one user's two reports cost together (``max_divergence``, basic composition): the
        word oracle's charge plus the largest fragment oracle's
        (:func:`~ldp_plugin.mechanisms.charge.report_charge`, exact). The two shares are floats
        (``ε·word_share`` and ``ε − ε·word_share``) whose exact values may add up to one ulp more
        than ``ε``: the sum is charged, never ``ε``'s text."""
        return report_charge(self.word_mechanism) + max(report_charge(m) for m in self.fragment_mechanisms)

    def charge(self, accountant: Any, query_id: str, **kw: Any):
        """Spend this collection's ε per user (both reports: :meth:`report_cost`) under ``query_id``."""
        return accountant.spend(query_id, self.report_cost(), mechanism="sfp", params=self.spec(), **kw)

    def _puzzle(self, words: Any) -> np.ndarray:
        return seeded_hash(item_keys(words), cohort_seed(self.hash_seed, _TAG - 1), 1 << self.puzzle_bits)

    def _padded(self, values: pl.Series) -> pl.Series:
        return values.str.pad_end(self.positions * self.fragment, TERM)

    def fragment_items(self, values: pl.Series, position: int, puzzle: np.ndarray) -> pl.Series:
        frag = self._padded(values).str.slice(position * self.fragment, self.fragment)
        return pl.Series(puzzle.astype(np.int64)).cast(pl.String) + "|" + frag

    def min_detectable_frequency(self, n: int) -> float:
        """NaN: SFP announces no minimum detectable frequency (module docstring, *Demoted*). The
        frequency at which one position's fragment passes a Bonferroni threshold
        (:meth:`position_threshold`) is necessary-looking but was measured not to be sufficient."""
        positive_int(n, "n", 1, 1 << 62)
        return math.nan

    def position_threshold(self, n: int) -> float:
        """The frequency at which a string's fragment at one position passes the Bonferroni
        threshold over every ``(r, fragment)`` item with probability ½ — *not* a detectability
        guarantee (beam competition, join truncation and the word stage come after it)."""
        n = positive_int(n, "n", 1, 1 << 62)
        sd = cell_sd(self.fragment_mechanisms[0], n / self.positions)
        return detectable(sd, self.alpha, (1 << self.puzzle_bits) * self.codec.symbols**self.fragment, self.selection)

    # -- client ----------------------------------------------------------------------------------
    def privatize(self, values: Any, *, rng: RNGLike = None) -> pl.DataFrame:
        """Each user's two reports → ``position, cohort, report, word_cohort, word_report``."""
        series = self.codec.check(values if isinstance(values, pl.Series) else pl.Series("values", values, dtype=pl.String, strict=False))
        n = series.len()
        if n == 0:
            raise LDPInputError("no values to privatize")
        source = as_source(rng)
        pos = source.uniform_int(self.positions, n).astype(np.int64)
        puzzle = self._puzzle(series)
        frames = []
        for j in range(self.positions):
            idx = np.flatnonzero(pos == j)
            if idx.size == 0:
                continue
            m = self.fragment_mechanisms[j]
            f = reports_to_frame(m, m.randomize(self.fragment_items(series.gather(idx), j, puzzle[idx]), rng=source))
            w = reports_to_frame(self.word_mechanism, self.word_mechanism.randomize(series.gather(idx), rng=source))
            frames.append(pl.concat([f.with_columns(pl.lit(j, dtype=pl.UInt8).alias("position")).select("position", "cohort", "report"),
                                     w.rename({"cohort": "word_cohort", "report": "word_report"})], how="horizontal"))
        return pl.concat(frames)

    # -- server ------------------------------------------------------------------------------------
    def discover(self, reports: pl.DataFrame) -> HeavyHitters:
        if not isinstance(reports, pl.DataFrame) or not {"position", "word_cohort", "word_report"} <= set(reports.columns):
            raise LDPInputError("SFP reports must be the frame from SFP.privatize (position, cohort, report, word_cohort, word_report)")
        symbols = [TERM, *self.alphabet]
        frags = ["".join(t) for t in itertools.product(symbols, repeat=self.fragment)]
        pieces = [f"{r}|{f}" for r in range(1 << self.puzzle_bits) for f in frags]
        kept: list[dict] = []
        rows = []
        for j, m in enumerate(self.fragment_mechanisms):
            part = reports.filter(pl.col("position") == j)
            if part.height == 0:
                raise LDPInputError(f"no reports for fragment position {j}")
            est = m.accumulator().add(frame_to_reports(m, part.select("cohort", "report"))).estimate(candidates=pieces, postprocess="none")
            raw = np.asarray(est.raw[: len(pieces)])
            top = np.argsort(-raw, kind="stable")[: self.beam]
            by_r: dict = {}
            for i in top[raw[top] > 0]:
                r, f = pieces[i].split("|", 1)
                by_r.setdefault(int(r), []).append(f)
            kept.append(by_r)
            rows.append({"level": j, "position": j, "users": part.height, "candidates": len(pieces), "kept": int((raw[top] > 0).sum())})
            status(f"fragment position {j + 1}/{self.positions}: {part.height} users, {len(pieces)} candidates")
        words = set()
        for r in set.intersection(*(set(k) for k in kept)):
            joins = itertools.islice(itertools.product(*(k[r] for k in kept)), 4096)
            for parts in joins:
                s = "".join(parts)
                body = s.rstrip(TERM)
                if TERM not in body and len(body) <= self.max_length:
                    words.add((body, r))
        joined = sorted(words)
        ok = self._puzzle(pl.Series([w for w, _ in joined], dtype=pl.String)) == np.array([r for _, r in joined]) if joined else []
        cands = sorted({w for (w, _), good in zip(joined, ok) if good})
        if not cands:
            raise LDPInputError("no fragments could be joined into strings: too few users for this epsilon")
        wm = self.word_mechanism
        acc = wm.accumulator().add(frame_to_reports(wm, reports.select(pl.col("word_cohort").alias("cohort"), pl.col("word_report").alias("report"))))
        estimate, se = decode(acc, cands, self.confidence)
        return result(self, cands, estimate, se, reports.height, rows, interval_method=_SFP_INTERVALS, privacy_unit=_SFP_UNIT)
