"""Shuffled releases in the ledger: the central (ε, δ) beside the enforced local ε0 (a mixin of
:class:`ldp_plugin.accountant.Accountant`).

The **local ε0 stays the enforced budget**: :meth:`record_shuffle` spends nothing, it records,
for a query already charged, that a trusted shuffler released the reports of some cohorts as one
batch of at least ``n_min`` reports, and the central (ε, δ) that this buys
(:func:`ldp_plugin.amplification.amplify` at the guaranteed minimum ``n_min``, never at the
observed size). :meth:`central_epsilon` composes, per cohort, every query that touched it — a
shuffled one by its recorded (ε, δ), any other by its local ε0 (an ε0-LDP release is ε0-DP
centrally) — with dp_accounting's privacy-loss-distribution accountant (pessimistic
discretization; no hand-written convolution), and reports the worst cohort.

Refusals, all before anything is written: a query that was not charged; a batch whose observed
size is below its guaranteed minimum (the release keeps its local guarantee only); a batch id
used for another query (one user's two reports in one batch are not covered); a cohort claimed
by two batches of the same query, or not touched by the query (cohorts that were not shuffled
together are never combined into one batch's n).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from .._extras import extra_module
from .._errors import LDPParameterError
from .budget import LedgerError, _cost_of
from ..amplification import amplify

SHUFFLE_SCHEMA = """
CREATE TABLE IF NOT EXISTS shuffle_claim (
    query_id TEXT NOT NULL,
    batch_id TEXT NOT NULL UNIQUE,
    cohorts TEXT NOT NULL,
    n_min INTEGER NOT NULL,
    n_observed INTEGER NOT NULL,
    epsilon_central REAL NOT NULL,
    delta REAL NOT NULL,
    epsilon_lower REAL,
    method TEXT NOT NULL,
    assumption TEXT NOT NULL,
    time TEXT NOT NULL,
    PRIMARY KEY (query_id, batch_id)
);
"""

#: dp_accounting's discretization of the privacy loss (pessimistic: the composed ε never understates)
VALUE_DISCRETIZATION = 1e-5


@dataclass(frozen=True)
class ShuffleRecord:
    """One recorded shuffled batch."""

    query_id: str
    batch_id: str
    cohorts: tuple
    n_min: int
    n_observed: int
    epsilon_central: float
    delta: float
    epsilon_lower: Optional[float]
    method: str
    assumption: str
    time: str

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise LDPParameterError(f"{name} must be an integer >= 2 (got {value!r})")
    return value


class _ShuffleClaims:
    def _shuffle_table(self) -> None:
        self._con.executescript(SHUFFLE_SCHEMA)  # ledgers created before shuffle records existed gain the table

    def record_shuffle(
        self,
        query_id: str,
        mechanism: Any,
        *,
        batch_id: str,
        n_min: int,
        n_observed: int,
        delta: float,
        cohorts: Optional[Iterable[int]] = None,
    ) -> ShuffleRecord:
        """Record that the reports of ``query_id`` (already charged its local ε0) for ``cohorts``
        (default: all it touched) were released by a trusted shuffler as batch ``batch_id`` of
        ``n_observed >= n_min`` reports; returns the record with the central (ε, δ) at ``n_min``.
        Repeating the same record returns it; anything refused writes nothing (see the module)."""

        if not isinstance(batch_id, str) or not batch_id:
            raise LDPParameterError("batch_id must be a non-empty string")
        n_min, n_observed = _count(n_min, "n_min"), _count(n_observed, "n_observed")
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
            raise LDPParameterError(f"delta must be in (0, 1) (got {delta!r})")
        row = self._con.execute("SELECT seq, query_id, time, period, mechanism, params, epsilon, cohorts FROM spend WHERE query_id = ?", (query_id,)).fetchone()
        if row is None:
            raise LedgerError(f"query id {query_id!r} has not been charged: spend (or release) it before recording its shuffle")
        spent = self._record(row)
        eps0, _, _ = _cost_of(mechanism, 1)
        if eps0 != spent.epsilon:
            raise LDPParameterError(
                f"the mechanism's local epsilon {float(eps0)!r} is not the {float(spent.epsilon)!r} charged for query id {query_id!r}"
            )
        cs = spent.cohorts if cohorts is None else self._cohorts(cohorts)
        if not set(cs) <= set(spent.cohorts):
            raise LDPParameterError(f"cohorts {sorted(set(cs) - set(spent.cohorts))} were not touched by query id {query_id!r}")
        if n_observed < n_min:
            raise LDPParameterError(
                f"batch {batch_id!r} released {n_observed} reports, below its guaranteed minimum n_min={n_min}: "
                "no amplified claim is recorded; the release keeps its local epsilon only"
            )
        self._shuffle_table()
        for rec in self.shuffle_records(query_id):  # a repeated record is answered without recomputing
            if rec.batch_id == batch_id and (rec.cohorts, rec.n_min, rec.n_observed, rec.delta) == (tuple(cs), n_min, n_observed, float(delta)):
                return rec
        out = amplify(mechanism, n_min, float(delta))  # seconds: computed outside the write lock
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            self._check_claim(query_id, batch_id, cs, n_min, n_observed, float(delta))
            rec = ShuffleRecord(
                query_id, batch_id, tuple(cs), n_min, n_observed, float(out["epsilon"]), float(delta), out["epsilon_lower"],
                out["method"], out["assumption"], datetime.now(timezone.utc).isoformat(),
            )
            con.execute(
                "INSERT INTO shuffle_claim(query_id, batch_id, cohorts, n_min, n_observed, epsilon_central, delta, epsilon_lower, "
                "method, assumption, time) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (rec.query_id, rec.batch_id, json.dumps(list(rec.cohorts)), rec.n_min, rec.n_observed, rec.epsilon_central, rec.delta,
                 rec.epsilon_lower, rec.method, rec.assumption, rec.time),
            )
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        return rec

    def _check_claim(self, query_id: str, batch_id: str, cs: tuple, n_min: int, n_observed: int, delta: float) -> None:
        for rec in self.shuffle_records(query_id):
            if rec.batch_id == batch_id:
                raise LDPParameterError(f"batch {batch_id!r} is already recorded for query id {query_id!r} with other cohorts, sizes or delta")
            overlap = set(rec.cohorts) & set(cs)
            if overlap:
                raise LDPParameterError(
                    f"cohorts {sorted(overlap)} of query id {query_id!r} are already claimed by batch {rec.batch_id!r}: "
                    "a cohort's reports are in one shuffled batch"
                )
        other = self._con.execute("SELECT query_id FROM shuffle_claim WHERE batch_id = ?", (batch_id,)).fetchone()
        if other is not None:
            raise LDPParameterError(f"batch {batch_id!r} is already recorded for another query: one batch holds one query's reports")

    def shuffle_records(self, query_id: Optional[str] = None) -> list:
        """The recorded shuffled batches (of one query, or all), oldest first."""
        has = self._con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'shuffle_claim'").fetchone()
        if not has:
            return []
        sql = ("SELECT query_id, batch_id, cohorts, n_min, n_observed, epsilon_central, delta, epsilon_lower, method, assumption, time "
               "FROM shuffle_claim")
        rows = self._con.execute(sql + (" WHERE query_id = ?" if query_id is not None else "") + " ORDER BY rowid",
                                 (() if query_id is None else (query_id,))).fetchall()
        return [ShuffleRecord(r[0], r[1], tuple(json.loads(r[2])), *r[3:]) for r in rows]

    def central_epsilon(self, delta: float, *, cohorts: Optional[Iterable[int]] = None) -> dict:
        """The central ε at ``delta`` of everything charged so far, per user: for each cohort,
        the composition (dp_accounting PLD) of its shuffled releases' recorded (ε, δ) and its
        other releases' local ε0; the worst cohort is reported as ``epsilon``. ``delta`` must
        exceed the sum of the composed releases' δ (else the answer would be infinite: refused)."""
        needs = "composing shuffled releases needs dp_accounting"
        common = extra_module("dp_accounting.pld.common", "shuffle", needs)
        pld = extra_module("dp_accounting.pld.privacy_loss_distribution", "shuffle", needs)

        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
            raise LDPParameterError(f"delta must be in (0, 1) (got {delta!r})")
        claims: dict = {}
        for rec in self.shuffle_records():
            for c in rec.cohorts:
                claims[(rec.query_id, c)] = (rec.epsilon_central, rec.delta)
        scope = None if cohorts is None else set(self._cohorts(cohorts))
        per_cohort: dict = {}
        for rec in self.history():
            if rec.epsilon == 0:
                continue
            for c in rec.cohorts:
                if scope is not None and c not in scope:
                    continue
                pair = claims.get((rec.query_id, c), (float(rec.epsilon), 0.0))
                per_cohort.setdefault(c, []).append(pair)
        cache: dict = {}
        by_cohort: dict = {}
        for c, pairs in per_cohort.items():
            key = tuple(sorted(pairs))
            if key not in cache:
                if sum(d for _, d in key) >= delta:
                    raise LDPParameterError(
                        f"delta={delta!r} is not above the sum {sum(d for _, d in key)!r} of the composed releases' deltas (cohort {c})"
                    )
                counts: dict = {}
                for pair in key:
                    counts[pair] = counts.get(pair, 0) + 1
                total = None
                for (e, d), k in counts.items():
                    one = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(e, d), value_discretization_interval=VALUE_DISCRETIZATION)
                    part = one.self_compose(k) if k > 1 else one
                    total = part if total is None else total.compose(part)
                eps = float(total.get_epsilon_for_delta(delta))
                cache[key] = min(eps, sum(e for e, _ in key)) if math.isfinite(eps) else sum(e for e, _ in key)
            by_cohort[c] = cache[key]
        worst = max(by_cohort.values()) if by_cohort else 0.0
        return {
            "epsilon": worst,
            "delta": float(delta),
            "by_cohort": by_cohort,
            "local_epsilon": float(max((self.spent([c]) for c in per_cohort), default=0)),
            "shuffled_batches": len(self.shuffle_records()),
            "method": "dp_accounting privacy-loss-distribution composition (pessimistic) of each release's (epsilon, delta)",
        }
