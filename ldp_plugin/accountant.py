"""The privacy budget accountant: compose queries over one population and enforce its budget
across repeated collections — persistently (a SQLite ledger), safely under concurrency and crashes.

Model
-----
* A :class:`Population` has a name, a **lifetime cap** ``ε_total`` (always: a cap never renews
  without a lifetime bound), optionally a **per-period cap** (per UTC day, hour or week) and ``C``
  data-independent cohorts (a partition of the users, e.g. by a salted hash of the user id).
* A **query** spends its ε (``measurement.map(1)``: per user, ``max_divergence``) on every cohort
  it touches. Composition is sequential per user and parallel across disjoint cohorts: spend is
  tracked per cohort, and a query touching cohorts ``S`` fits iff
  ``max_{c ∈ S} spent_c + ε <= cap`` (for the lifetime cap and, if any, the current period's cap).
* Arithmetic is exact: every ε is the exact rational value of the float OpenDP reports (a binary
  fraction), every cap the exact value of what you pass (``Fraction("0.1")`` or ``"0.1"`` is
  1/10; a float ``0.1`` is ``0.1000000000000000055…``). The stored totals never understate.
  So ten queries whose measurement reports ``ε = 0.1`` do **not** fit a cap of ``1.0``: their
  exact sum exceeds 1 by ``5.5·10⁻¹⁷``.

Enforcement
-----------
:meth:`Accountant.spend` checks and spends in **one** ``BEGIN IMMEDIATE`` SQLite transaction
(WAL, ``synchronous=FULL``) **before** anything is released; :meth:`Accountant.run` spends, then
runs the measurement. A crash after the commit loses budget, never privacy. A refused query raises
:class:`BudgetExceededError` (a ``ValueError`` with ``requested`` and ``remaining``) and writes
nothing. A retried query id is charged once (it must repeat the same ε, cohorts and mechanism) and
returns the kept reports if they were kept.

Ledger
------
One SQLite file per population: ``population`` (the definition and its fingerprint), ``spend``
(one auditable row per query: time, period, query id, mechanism, parameters, exact ε, cohorts),
``cohort_total`` / ``period_total`` (exact running totals, so a check reads only the touched
cohorts) and ``kept_reports``. Opening a ledger that is missing, corrupted or defined for another
population is an error.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ._errors import LDPParameterError

__all__ = [
    "BudgetExceededError",
    "LedgerError",
    "Population",
    "SpendRecord",
    "Accountant",
    "as_fraction",
    "PERIODS",
]

PERIODS = ("day", "hour", "week")
SCHEMA_VERSION = 1


class BudgetExceededError(ValueError):
    """A query would exceed the budget; nothing was spent. Carries ``requested`` and
    ``remaining`` (exact Fractions) and the binding ``cap`` ("lifetime" or the period)."""

    def __init__(self, message: str, *, requested: Fraction, remaining: Fraction, cap: str):
        super().__init__(message)
        self.requested = requested
        self.remaining = remaining
        self.cap = cap


class LedgerError(ValueError):
    """The ledger file is missing, corrupted, or belongs to another population definition."""


def as_fraction(value: Any, name: str = "epsilon") -> Fraction:
    """The exact value of an ε or a cap: a Fraction, an int, a decimal string, or a float (its
    exact binary value). Must be finite and > 0 for caps, >= 0 for costs."""
    if isinstance(value, Fraction):
        f = value
    elif isinstance(value, bool):
        raise LDPParameterError(f"{name} must be a number (got a boolean)")
    elif isinstance(value, (int, np.integer)):
        f = Fraction(int(value))
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise LDPParameterError(f"{name} must be finite (got {value!r})")
        f = Fraction(float(value))
    elif isinstance(value, str):
        try:
            f = Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise LDPParameterError(f"{name} must be a number or a decimal string (got {value!r})") from None
    else:
        raise LDPParameterError(f"{name} must be a number (got type {type(value).__name__})")
    if f < 0:
        raise LDPParameterError(f"{name} must be >= 0 (got {float(f)})")
    return f


def _frac_text(f: Fraction) -> str:
    return f"{f.numerator}/{f.denominator}"


def _text_frac(s: str) -> Fraction:
    num, _, den = s.partition("/")
    return Fraction(int(num), int(den or 1))


@dataclass(frozen=True)
class Population:
    """A population: ``name``, exact ``lifetime_cap``, optional ``period_cap`` per ``period``
    (``"day"``, ``"hour"`` or ``"week"``, UTC), and ``cohorts`` data-independent cohorts."""

    name: str
    lifetime_cap: Fraction
    period_cap: Optional[Fraction] = None
    period: Optional[str] = None
    cohorts: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise LDPParameterError("population name must be a non-empty string")
        cap = as_fraction(self.lifetime_cap, "lifetime_cap")
        if cap <= 0:
            raise LDPParameterError("lifetime_cap must be > 0")
        object.__setattr__(self, "lifetime_cap", cap)
        if (self.period_cap is None) != (self.period is None):
            raise LDPParameterError("give both period_cap and period (or neither)")
        if self.period_cap is not None:
            pc = as_fraction(self.period_cap, "period_cap")
            if pc <= 0 or pc > cap:
                raise LDPParameterError("period_cap must be in (0, lifetime_cap]: a period cap never replaces the lifetime bound")
            if self.period not in PERIODS:
                raise LDPParameterError(f"period must be one of {PERIODS} (got {self.period!r})")
            object.__setattr__(self, "period_cap", pc)
        c = self.cohorts
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= int(c) <= 1 << 20:
            raise LDPParameterError(f"cohorts must be an integer in [1, 2**20] (got {c!r})")
        object.__setattr__(self, "cohorts", int(c))

    def definition(self) -> dict:
        return {
            "name": self.name,
            "lifetime_cap": _frac_text(self.lifetime_cap),
            "period_cap": None if self.period_cap is None else _frac_text(self.period_cap),
            "period": self.period,
            "cohorts": self.cohorts,
        }

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.definition(), sort_keys=True).encode()).hexdigest()

    @classmethod
    def from_definition(cls, d: dict) -> "Population":
        return cls(
            name=d["name"],
            lifetime_cap=_text_frac(d["lifetime_cap"]),
            period_cap=None if d["period_cap"] is None else _text_frac(d["period_cap"]),
            period=d["period"],
            cohorts=int(d["cohorts"]),
        )

    def period_key(self, when: datetime) -> Optional[str]:
        if self.period is None:
            return None
        when = when.astimezone(timezone.utc)
        if self.period == "day":
            return when.strftime("%Y-%m-%d")
        if self.period == "hour":
            return when.strftime("%Y-%m-%dT%H")
        iso = when.isocalendar()
        return f"{iso[0]}-W{iso[1]:02d}"


@dataclass(frozen=True)
class SpendRecord:
    """One ledger row (frozen)."""

    seq: int
    query_id: str
    time: str
    period: Optional[str]
    mechanism: str
    params: dict
    epsilon: Fraction
    cohorts: tuple
    retried: bool = False

    def to_dict(self) -> dict:
        return {
            "seq": self.seq,
            "query_id": self.query_id,
            "time": self.time,
            "period": self.period,
            "mechanism": self.mechanism,
            "params": self.params,
            "epsilon": float(self.epsilon),
            "epsilon_exact": _frac_text(self.epsilon),
            "cohorts": list(self.cohorts),
            "retried": self.retried,
        }


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spend (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    query_id TEXT NOT NULL UNIQUE,
    time TEXT NOT NULL,
    period TEXT,
    mechanism TEXT NOT NULL,
    params TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    epsilon_float REAL NOT NULL,
    cohorts TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cohort_total (cohort INTEGER PRIMARY KEY, total TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS period_total (period TEXT NOT NULL, cohort INTEGER NOT NULL, total TEXT NOT NULL,
    PRIMARY KEY (period, cohort));
CREATE TABLE IF NOT EXISTS kept_reports (query_id TEXT PRIMARY KEY, kind TEXT NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS release_status (query_id TEXT PRIMARY KEY, status TEXT NOT NULL, detail TEXT);
"""


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA busy_timeout = 60000")
    # a rollback journal (not WAL): every committed spend is in the main file, so a copy of the
    # ledger file alone holds every spend (a WAL copy would hand the budget back)
    con.execute("PRAGMA journal_mode = DELETE")
    con.execute("PRAGMA synchronous = FULL")
    return con


def _read_meta(path: Path) -> dict:
    ro = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60.0)
    try:
        has_meta = ro.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        return dict(ro.execute("SELECT key, value FROM meta").fetchall()) if has_meta else {}
    finally:
        ro.close()


def _cost_of(measurement: Any, d_in: int) -> tuple[Fraction, str, dict]:
    """Exact ε of an OpenDP measurement (max_divergence) or a plain number, plus a description."""
    if hasattr(measurement, "map") and hasattr(measurement, "output_measure"):
        if "MaxDivergence" not in str(measurement.output_measure):
            raise LDPParameterError(f"the accountant composes pure-ε measurements (max_divergence); got {measurement.output_measure}")
        eps = measurement.map(d_in)
        return as_fraction(float(eps)), "opendp-measurement", {"input_metric": str(measurement.input_metric)}
    from .mechanisms import Mechanism

    if isinstance(measurement, Mechanism):  # its spec (categories and their order included)
        return as_fraction(float(measurement.epsilon)) * d_in, str(measurement.name), measurement.spec()
    return as_fraction(measurement) * d_in, "epsilon", {}


class Accountant:
    """Budget accountant over one population, backed by a SQLite ledger file.

    >>> import tempfile, os, ldp_plugin as ldp
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
    >>> acc = ldp.Accountant.create(path, ldp.Population(name="app-users", lifetime_cap="1"))
    >>> rec = acc.spend("q1", ldp.make_krr(epsilon=0.5, d=4))
    >>> float(acc.remaining())
    0.5
    >>> try:
    ...     acc.spend("q2", ldp.make_krr(epsilon=0.75, d=4))
    ... except ldp.BudgetExceededError as e:
    ...     print(float(e.requested), float(e.remaining))
    0.75 0.5
    """

    def __init__(self, path: str | Path, population: Optional[Population] = None):
        path = Path(path)
        if not path.is_file():
            raise LedgerError(f"ledger {str(path)!r} does not exist (create it with Accountant.create or `ldp budget init`)")
        self.path = path
        # validate read-only first: never touch a file that is not our ledger
        try:
            try:
                rows = _read_meta(path)
            except sqlite3.OperationalError:
                if not path.with_name(path.name + "-journal").exists():
                    raise
                # a writer was killed mid-transaction: its hot journal is rolled back by the first
                # read-write connection (SQLite's own recovery), then we validate read-only again
                rw = sqlite3.connect(str(path), timeout=60.0)
                try:
                    rw.execute("SELECT count(*) FROM sqlite_master").fetchone()
                finally:
                    rw.close()
                rows = _read_meta(path)
        except sqlite3.DatabaseError as e:
            raise LedgerError(f"ledger {str(path)!r} is not a readable SQLite ledger ({e})") from None
        if rows.get("schema") != str(SCHEMA_VERSION) or "population" not in rows:
            raise LedgerError(f"ledger {str(path)!r} is not an ldp-plugin ledger (schema {rows.get('schema')!r})")
        try:
            stored = Population.from_definition(json.loads(rows["population"]))
        except (KeyError, ValueError, TypeError) as e:
            raise LedgerError(f"ledger {str(path)!r} has a corrupted population definition ({e})") from None
        if stored.fingerprint() != rows.get("fingerprint"):
            raise LedgerError(f"ledger {str(path)!r} is corrupted: the population fingerprint does not match its definition")
        if population is not None and population.fingerprint() != stored.fingerprint():
            raise LedgerError(
                f"ledger {str(path)!r} belongs to population {stored.name!r} with another definition; refusing to mix budgets"
            )
        self.population = stored
        self._con = _connect(path)
        self._check_integrity()

    # -- creation ----------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, population: Population, *, exist_ok: bool = False) -> "Accountant":
        """Create a new ledger file for ``population`` (or open it if ``exist_ok`` and it matches)."""
        path = Path(path)
        if path.exists():
            if exist_ok:
                return cls(path, population)
            raise LedgerError(f"ledger {str(path)!r} already exists")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LedgerError(f"cannot create the ledger's directory for {str(path)!r} ({e.strerror})") from None
        # build the complete ledger in a private file, then link it into place atomically: a
        # concurrent create/open never sees a half-initialized ledger, and exactly one wins
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            con = _connect(tmp)
        except sqlite3.Error as e:
            raise LedgerError(f"cannot create the ledger {str(path)!r} ({e})") from None
        try:
            con.executescript(_SCHEMA)
            con.execute("BEGIN IMMEDIATE")
            con.executemany(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                [
                    ("schema", str(SCHEMA_VERSION)),
                    ("population", json.dumps(population.definition(), sort_keys=True)),
                    ("fingerprint", population.fingerprint()),
                    ("created", datetime.now(timezone.utc).isoformat()),
                ],
            )
            con.execute("COMMIT")
        finally:
            con.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            if not exist_ok:
                raise LedgerError(f"ledger {str(path)!r} already exists") from None
        finally:
            for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
                try:
                    os.unlink(leftover)
                except FileNotFoundError:
                    pass
        return cls(path, population)

    def _check_integrity(self) -> None:
        try:
            ok = self._con.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise LedgerError(f"ledger {str(self.path)!r} is corrupted ({e})") from None
        if ok != "ok":
            raise LedgerError(f"ledger {str(self.path)!r} is corrupted ({ok})")
        # the totals must equal what the audit rows add up to (an edited total never restores budget)
        con = self._con
        con.execute("BEGIN")  # one read snapshot: rows and totals of the same commits
        try:
            spends = con.execute("SELECT epsilon, cohorts, period FROM spend").fetchall()
            stored = {c: _text_frac(t) for c, t in con.execute("SELECT cohort, total FROM cohort_total")}
            stored_p = {(p, c): _text_frac(t) for p, c, t in con.execute("SELECT period, cohort, total FROM period_total")}
        finally:
            con.execute("COMMIT")
        life: dict = {}
        per: dict = {}
        for eps_text, cohorts_json, period in spends:
            eps = _text_frac(eps_text)
            if eps == 0:
                continue
            for c in json.loads(cohorts_json):
                life[c] = life.get(c, Fraction(0)) + eps
                if period is not None:
                    per[(period, c)] = per.get((period, c), Fraction(0)) + eps
        if stored != life or stored_p != per:
            raise LedgerError(
                f"ledger {str(self.path)!r} is inconsistent: its budget totals differ from the sum of its audit rows "
                "(edited or corrupted); refusing to use it"
            )

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Accountant":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------------
    def _cohorts(self, cohorts: Optional[Iterable[int]]) -> tuple:
        C = self.population.cohorts
        if cohorts is None:
            return tuple(range(C))
        try:
            raw = list(cohorts)
        except TypeError:
            raise LDPParameterError("cohorts must be a list of integers") from None
        if any(isinstance(c, bool) or not isinstance(c, (int, np.integer)) for c in raw):
            raise LDPParameterError(f"cohorts must be integers in [0, {C}) (got a value of type {type(next(c for c in raw if isinstance(c, bool) or not isinstance(c, (int, np.integer)))).__name__})")
        cs = sorted({int(c) for c in raw})
        if not cs:
            raise LDPParameterError("a query must touch at least one cohort")
        if cs[0] < 0 or cs[-1] >= C:
            raise LDPParameterError(f"cohorts must be in [0, {C})")
        return tuple(cs)

    def _max_total(self, table: str, cohorts: tuple, period: Optional[str] = None) -> Fraction:
        best = Fraction(0)
        where = "cohort IN (%s)" % ",".join("?" * len(cohorts)) if len(cohorts) < self.population.cohorts else "1"
        args: list = list(cohorts) if where != "1" else []
        if table == "period_total":
            sql = f"SELECT total FROM period_total WHERE period = ? AND {where}"
            args = [period, *args]
        else:
            sql = f"SELECT total FROM cohort_total WHERE {where}"
        for (t,) in self._con.execute(sql, args):
            f = _text_frac(t)
            if f > best:
                best = f
        return best

    def spent(self, cohorts: Optional[Iterable[int]] = None) -> Fraction:
        """The largest lifetime spend over the given cohorts (all by default)."""
        return self._max_total("cohort_total", self._cohorts(cohorts))

    def remaining(self, cohorts: Optional[Iterable[int]] = None, *, when: Optional[datetime] = None) -> Fraction:
        """Exact budget a new query on ``cohorts`` may still spend (lifetime and period caps)."""
        cs = self._cohorts(cohorts)
        rem = self.population.lifetime_cap - self._max_total("cohort_total", cs)
        if self.population.period_cap is not None:
            key = self.population.period_key(when or datetime.now(timezone.utc))
            rem = min(rem, self.population.period_cap - self._max_total("period_total", cs, key))
        return max(rem, Fraction(0))

    def history(self) -> list[SpendRecord]:
        return [self._record(row) for row in self._con.execute("SELECT seq, query_id, time, period, mechanism, params, epsilon, cohorts FROM spend ORDER BY seq")]

    @staticmethod
    def _record(row, retried: bool = False) -> SpendRecord:
        seq, qid, t, period, mech, params, eps, cohorts = row
        return SpendRecord(seq, qid, t, period, mech, json.loads(params), _text_frac(eps), tuple(json.loads(cohorts)), retried)

    # -- spending ----------------------------------------------------------------------------------
    def check(self, measurement: Any, *, cohorts: Optional[Iterable[int]] = None, d_in: int = 1, when: Optional[datetime] = None) -> Fraction:
        """Would the query fit? Returns the remaining budget after it, or raises
        :class:`BudgetExceededError`. Spends nothing (a pre-check, e.g. before an OpenDP filter)."""
        eps, _, _ = _cost_of(measurement, d_in)
        cs = self._cohorts(cohorts)
        self._fits(eps, cs, when or datetime.now(timezone.utc))
        return self.remaining(cs, when=when) - eps

    def _fits(self, eps: Fraction, cs: tuple, when: datetime) -> Optional[str]:
        pop = self.population
        rem = pop.lifetime_cap - self._max_total("cohort_total", cs)
        if eps > rem:
            raise BudgetExceededError(
                f"query needs epsilon={float(eps)!r} but only {float(max(rem, 0))!r} of the lifetime budget "
                f"{float(pop.lifetime_cap)!r} remains on the touched cohorts",
                requested=eps, remaining=max(rem, Fraction(0)), cap="lifetime",
            )
        key = pop.period_key(when)
        if key is not None:
            prem = pop.period_cap - self._max_total("period_total", cs, key)
            if eps > prem:
                raise BudgetExceededError(
                    f"query needs epsilon={float(eps)!r} but only {float(max(prem, 0))!r} of the per-{pop.period} budget "
                    f"{float(pop.period_cap)!r} remains in period {key}",
                    requested=eps, remaining=max(min(prem, rem), Fraction(0)), cap=pop.period,
                )
        return key

    def spend(
        self,
        query_id: str,
        measurement: Any,
        *,
        cohorts: Optional[Iterable[int]] = None,
        d_in: int = 1,
        mechanism: Optional[str] = None,
        params: Optional[dict] = None,
        when: Optional[datetime] = None,
    ) -> SpendRecord:
        """Atomically check and spend the query's ε on the touched cohorts (before any release).

        ``measurement``: an OpenDP measurement (its cost is ``map(d_in)``; ``max_divergence``), an
        ldp_plugin mechanism (its ``epsilon``), or a number. A query id already in the ledger is
        charged once: the same ε/cohorts/mechanism return the existing record (``retried=True``);
        anything else is an error.
        """
        if not isinstance(query_id, str) or not query_id:
            raise LDPParameterError("query_id must be a non-empty string")
        if isinstance(d_in, bool) or not isinstance(d_in, int) or d_in < 0:
            raise LDPParameterError("d_in must be a non-negative Python int")
        eps, kind, desc = _cost_of(measurement, d_in)
        cs = self._cohorts(cohorts)
        mech_name = mechanism or kind
        params_json = json.dumps(params if params is not None else desc, sort_keys=True, default=str)
        when = when or datetime.now(timezone.utc)
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            row = con.execute(
                "SELECT seq, query_id, time, period, mechanism, params, epsilon, cohorts FROM spend WHERE query_id = ?", (query_id,)
            ).fetchone()
            if row is not None:
                rec = self._record(row, retried=True)
                if rec.epsilon != eps or rec.cohorts != cs or rec.mechanism != mech_name:
                    raise LDPParameterError(f"query id {query_id!r} was already used for a different query (epsilon, cohorts or mechanism differ)")
                if json.loads(row[5]) != json.loads(params_json):
                    raise LDPParameterError(
                        f"query id {query_id!r} was already used with other mechanism parameters (e.g. other categories or "
                        "their order): a new query needs a new query id"
                    )
                con.execute("ROLLBACK")
                return rec
            key = self._fits(eps, cs, when)
            t = when.astimezone(timezone.utc).isoformat()
            cur = con.execute(
                "INSERT INTO spend(query_id, time, period, mechanism, params, epsilon, epsilon_float, cohorts) VALUES (?,?,?,?,?,?,?,?)",
                (query_id, t, key, mech_name, params_json, _frac_text(eps), float(eps), json.dumps(list(cs))),
            )
            seq = cur.lastrowid
            if eps > 0:
                self._add_totals("cohort_total", cs, eps)
                if key is not None:
                    self._add_totals("period_total", cs, eps, key)
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        return SpendRecord(seq, query_id, t, key, mech_name, json.loads(params_json), eps, cs)

    def _add_totals(self, table: str, cs: tuple, eps: Fraction, period: Optional[str] = None) -> None:
        con = self._con
        if table == "cohort_total":
            cur = dict(con.execute("SELECT cohort, total FROM cohort_total WHERE cohort IN (%s)" % ",".join("?" * len(cs)), cs).fetchall())
            con.executemany(
                "INSERT OR REPLACE INTO cohort_total(cohort, total) VALUES (?, ?)",
                [(c, _frac_text(_text_frac(cur[c]) + eps if c in cur else eps)) for c in cs],
            )
        else:
            cur = dict(
                con.execute(
                    "SELECT cohort, total FROM period_total WHERE period = ? AND cohort IN (%s)" % ",".join("?" * len(cs)), (period, *cs)
                ).fetchall()
            )
            con.executemany(
                "INSERT OR REPLACE INTO period_total(period, cohort, total) VALUES (?, ?, ?)",
                [(period, c, _frac_text(_text_frac(cur[c]) + eps if c in cur else eps)) for c in cs],
            )

    # -- releasing -----------------------------------------------------------------------------------
    def run(self, query_id: str, measurement: Any, data: Any, *, cohorts: Optional[Iterable[int]] = None, keep_reports: bool = False, **kw):
        """Spend, then run ``measurement(data)`` (an OpenDP measurement or a callable) and return
        its release. With ``keep_reports=True`` the release is stored, and a retry of the same
        query id returns it without running (and without charging) again."""
        return self.release(query_id, measurement, lambda: measurement(data), cohorts=cohorts, keep_reports=keep_reports, **kw)

    def release(self, query_id: str, cost: Any, produce: Any, *, cohorts: Optional[Iterable[int]] = None, keep_reports: bool = False, **kw):
        """The one release path (``run`` and the Polars namespace use it): spend ``cost`` under
        ``query_id`` (atomic check-then-spend), then call ``produce()`` for the reports, marking the
        release ``started`` → ``released`` (or ``partial`` if it fails after the spend). A retried
        query id (same spec) is charged once and returns the kept reports, or is refused with a
        message that says whether the first release completed."""
        rec = self.spend(query_id, cost, cohorts=cohorts, **kw)
        if rec.retried:
            kept = self.kept_reports(query_id)
            if kept is not None:
                return kept
            raise LDPParameterError(self.retry_refusal(query_id))
        self.mark_release(query_id, "started")
        try:
            out = produce()
        except BaseException as e:
            self.mark_release(query_id, "partial", type(e).__name__)
            raise
        if keep_reports:
            self.keep(query_id, out)
        self.mark_release(query_id, "released")
        return out

    def mark_release(self, query_id: str, status: str, detail: Optional[str] = None) -> None:
        """Record what became of a spent query: ``"started"`` (set before the first report),
        ``"released"`` or ``"partial"`` (failed after the spend; nothing may be trusted as complete)."""
        if status not in ("started", "released", "partial"):
            raise LDPParameterError("status must be 'started', 'released' or 'partial'")
        self._con.execute("INSERT OR REPLACE INTO release_status(query_id, status, detail) VALUES (?, ?, ?)", (query_id, status, detail))

    def release_status(self, query_id: str) -> Optional[str]:
        row = self._con.execute("SELECT status FROM release_status WHERE query_id = ?", (query_id,)).fetchone()
        return None if row is None else row[0]

    def retry_refusal(self, query_id: str) -> str:
        """The message for a retried query whose reports were not kept (says if it never finished)."""
        status = self.release_status(query_id)
        if status in ("started", "partial"):
            return (
                f"query id {query_id!r} was charged but its release did not complete ({'crashed' if status == 'started' else 'failed'} "
                "after the spend): the budget is lost, nothing complete was released; a new release needs a new query id"
            )
        return f"query id {query_id!r} was already released and its reports were not kept: a new release needs a new query id"

    def backup(self, destination: str | Path) -> Path:
        """A consistent copy of the ledger (SQLite's online backup API, safe while in use)."""
        dst = Path(destination)
        if dst.exists():
            raise LedgerError(f"backup destination {str(dst)!r} already exists")
        out = sqlite3.connect(str(dst))
        try:
            self._con.backup(out)
        finally:
            out.close()
        return dst

    def keep(self, query_id: str, reports: Any) -> None:
        """Store a released batch under its (spent) query id."""
        kind, blob = _serialize(reports)
        self._con.execute("INSERT OR REPLACE INTO kept_reports(query_id, kind, data) VALUES (?, ?, ?)", (query_id, kind, blob))

    def kept_reports(self, query_id: str) -> Any:
        row = self._con.execute("SELECT kind, data FROM kept_reports WHERE query_id = ?", (query_id,)).fetchone()
        return None if row is None else _deserialize(*row)

    # -- OpenDP interop ------------------------------------------------------------------------------
    def privacy_filter(self, query_id: str, epsilon: Any, *, input_domain: Any, input_metric: Any = None, cohorts: Optional[Iterable[int]] = None):
        """Reserve ``epsilon`` in the ledger (one spend), and hand out an OpenDP privacy filter
        (``make_fully_adaptive_composition`` + ``make_privacy_filter``, ``d_out = epsilon``) for
        interactive use in this process, wrapped so each query is **pre-checked** (a query the
        filter would reject would otherwise exhaust it)."""
        import opendp.prelude as dp

        eps = as_fraction(epsilon)
        rec = self.spend(query_id, eps, cohorts=cohorts, mechanism="opendp-privacy-filter")
        metric = input_metric if input_metric is not None else dp.discrete_distance()
        odo = dp.c.make_fully_adaptive_composition(input_domain, metric, dp.max_divergence())
        filt = dp.c.make_privacy_filter(odo, d_in=1, d_out=float(eps))
        return PrecheckedFilter(filt, rec.epsilon)

    def compositor(self, query_id: str, d_mids: Sequence[float], *, input_domain: Any, input_metric: Any = None, cohorts: Optional[Iterable[int]] = None):
        """Spend ``Σ d_mids`` and return ``make_adaptive_composition`` over those budgets."""
        import opendp.prelude as dp

        metric = input_metric if input_metric is not None else dp.discrete_distance()
        comp = dp.c.make_adaptive_composition(input_domain, metric, dp.max_divergence(), d_in=1, d_mids=[float(x) for x in d_mids])
        self.spend(query_id, comp, cohorts=cohorts, mechanism="opendp-adaptive-composition")
        return comp


class PrecheckedFilter:
    """An OpenDP privacy-filter queryable whose queries are checked against the remaining
    budget *before* they reach the filter (OpenDP exhausts a filter on a rejected query)."""

    def __init__(self, filter_measurement: Any, budget: Fraction):
        self._queryable = filter_measurement(1)
        self.budget = budget
        self.spent = Fraction(0)

    @property
    def remaining(self) -> Fraction:
        return self.budget - self.spent

    def __call__(self, measurement: Any):
        eps, _, _ = _cost_of(measurement, 1)
        if self.spent + eps > self.budget:
            raise BudgetExceededError(
                f"query needs epsilon={float(eps)!r} but the filter has {float(self.remaining)!r} left",
                requested=eps, remaining=self.remaining, cap="filter",
            )
        out = self._queryable(measurement)
        self.spent += eps
        return out


def _serialize(obj: Any) -> tuple[str, bytes]:
    from .mechanisms.protocol import report_batch_arrays

    buf = io.BytesIO()
    if type(obj).__module__.startswith("polars") and type(obj).__name__ == "DataFrame":
        obj.write_parquet(buf)
        return "polars", buf.getvalue()
    arrays = report_batch_arrays(obj)
    if arrays is not None:
        kind = arrays.pop("__kind__")
        np.savez(buf, **arrays)
        return kind, buf.getvalue()
    if isinstance(obj, np.ndarray) and obj.dtype != object:
        np.save(buf, obj, allow_pickle=False)
        return "numpy", buf.getvalue()
    return "json", json.dumps(obj, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)).encode()


def _deserialize(kind: str, blob: bytes) -> Any:
    buf = io.BytesIO(blob)
    if kind == "polars":
        import polars as pl

        return pl.read_parquet(buf)
    if kind == "cohort":
        from .mechanisms.protocol import report_batch_from_arrays

        return report_batch_from_arrays(kind, np.load(buf, allow_pickle=False))
    if kind == "numpy":
        return np.load(buf, allow_pickle=False)
    return json.loads(blob.decode())
