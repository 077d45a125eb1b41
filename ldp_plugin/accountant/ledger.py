"""The SQLite ledger (:class:`Accountant`): one durable file, atomic check-then-spend, audit rows
and integrity; the release path and OpenDP interop are mixed in from :mod:`.release` and
:mod:`.interop`."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from .._boundary.private import create_private_file, private_dirs
from .._errors import LDPParameterError
from .budget import SCHEMA_VERSION, BudgetExceededError, LedgerError, Population, SpendRecord, _frac_text, _text_frac, _cost_of
from .interop import _OpenDPInterop
from .release import _Releases
from .shuffle import SHUFFLE_SCHEMA, _ShuffleClaims

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



class Accountant(_Releases, _OpenDPInterop, _ShuffleClaims):
    """Budget accountant over one population, backed by a SQLite ledger file.

    >>> import tempfile, os, ldp_plugin as ldp
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
    >>> acc = ldp.Accountant.create(path, ldp.Population(name="app-users", lifetime_cap="1"))
    >>> ldp.enable_ldp_features()  # OpenDP's contrib + honest-but-curious: the one explicit call
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
        if path.is_dir():
            raise LedgerError(f"ledger {str(path)!r} is a directory; give the ledger file")
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
    def create(cls, path: str | Path, population: Population, *, exist_ok: bool = False, parents: bool = False) -> "Accountant":
        """Create a new ledger file for ``population`` (or open it if ``exist_ok`` and it matches).
        Its directory must exist (a typo in a path must not start a second, empty budget
        elsewhere); ``parents=True`` creates missing directories."""
        if not hasattr(population, "definition"):
            raise LDPParameterError(
                f"population must be a Population, e.g. Population(name='app-users', lifetime_cap='4') "
                f"(got type {type(population).__name__})"
            )
        if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
            raise LDPParameterError(f"path must be a file path (got type {type(path).__name__})")
        path = Path(path)
        if path.is_dir():
            raise LedgerError(f"ledger {str(path)!r} is a directory; give a file path")
        if path.exists():
            if exist_ok:
                return cls(path, population)
            raise LedgerError(f"ledger {str(path)!r} already exists")
        if not path.parent.is_dir() and not parents:
            raise LedgerError(f"the directory of ledger {str(path)!r} does not exist: create it first, or pass parents=True "
                              "(ldp budget init --parents)")
        try:
            private_dirs(path.parent)  # 0700 for the directories it creates
        except OSError as e:
            raise LedgerError(f"cannot create the ledger's directory for {str(path)!r} ({e.strerror})") from None
        # build the complete ledger in a private file (0600: SQLite gives its journal the same mode),
        # then link it into place atomically: a concurrent create/open never sees a half-initialized
        # ledger, and exactly one wins
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            create_private_file(tmp)
            con = _connect(tmp)
        except (sqlite3.Error, OSError) as e:
            raise LedgerError(f"cannot create the ledger {str(path)!r} ({e})") from None
        try:
            con.executescript(_SCHEMA + SHUFFLE_SCHEMA)
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
            # grouped in SQL (exact: the ε texts are summed as Fractions below, times their count)
            spends = con.execute("SELECT epsilon, cohorts, period, COUNT(*) FROM spend GROUP BY epsilon, cohorts, period").fetchall()
            stored = {c: _text_frac(t) for c, t in con.execute("SELECT cohort, total FROM cohort_total")}
            stored_p = {(p, c): _text_frac(t) for p, c, t in con.execute("SELECT period, cohort, total FROM period_total")}
        finally:
            con.execute("COMMIT")
        life: dict = {}
        per: dict = {}
        for eps_text, cohorts_json, period, count in spends:
            eps = _text_frac(eps_text) * count
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
        every = len(cohorts) >= self.population.cohorts
        # SQLite binds at most 32766 variables (999 before 3.32): IN-lists go in chunks
        for chunk in ([()] if every else _chunks(cohorts)):
            where = "1" if every else "cohort IN (%s)" % ",".join("?" * len(chunk))
            args: list = list(chunk)
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

    def __repr__(self) -> str:
        """The ledger, its population and what remains (read from the ledger; never raises)."""
        try:
            pop = self.population
            left = float(self.remaining())
            period = f", period_cap={float(pop.period_cap):g} per {pop.period}" if pop.period_cap is not None else ""
            return (f"Accountant({str(self.path)!r}, population={pop.name!r}, lifetime_cap={float(pop.lifetime_cap):g}{period}, "
                    f"cohorts={pop.cohorts}, remaining={left:g})")
        except Exception:  # a repr must not fail (e.g. a ledger deleted under it)
            return f"Accountant({str(getattr(self, 'path', '?'))!r})"

    def remaining(self, cohorts: Optional[Iterable[int]] = None, *, when: Optional[datetime] = None) -> Fraction:
        """Exact budget a new query on ``cohorts`` may still spend (lifetime and period caps)."""
        cs = self._cohorts(cohorts)
        rem = self.population.lifetime_cap - self._max_total("cohort_total", cs)
        if self.population.period_cap is not None:
            key = self.population.period_key(when or datetime.now(timezone.utc))
            rem = min(rem, self.population.period_cap - self._max_total("period_total", cs, key))
        return max(rem, Fraction(0))

    def remaining_by_cohort(self, *, when: Optional[datetime] = None) -> list:
        """Remaining budget of every cohort (exact Fractions, index = cohort), from one read of the
        totals: what a device fleet checks before randomizing (each device one cohort)."""
        pop = self.population
        spent = [Fraction(0)] * pop.cohorts
        for c, t in self._con.execute("SELECT cohort, total FROM cohort_total"):
            spent[int(c)] = _text_frac(t)
        rem = [pop.lifetime_cap - s for s in spent]
        key = pop.period_key(when or datetime.now(timezone.utc))
        if key is not None:
            per = [Fraction(0)] * pop.cohorts
            for c, t in self._con.execute("SELECT cohort, total FROM period_total WHERE period = ?", (key,)):
                per[int(c)] = _text_frac(t)
            rem = [min(r, pop.period_cap - p) for r, p in zip(rem, per)]
        return rem

    def history(self) -> list[SpendRecord]:
        return [self._record(row) for row in self._con.execute("SELECT seq, query_id, time, period, mechanism, params, epsilon, cohorts FROM spend ORDER BY seq")]

    def spends_since(self, when: datetime) -> int:
        """How many queries were charged at or after ``when`` (a count of ledger rows)."""
        since = when.astimezone(timezone.utc).isoformat()
        return int(self._con.execute("SELECT count(*) FROM spend WHERE time >= ?", (since,)).fetchone()[0])

    @staticmethod
    def _record(row, retried: bool = False) -> SpendRecord:
        seq, qid, t, period, mech, params, eps, cohorts = row
        return SpendRecord(seq, qid, t, period, mech, json.loads(params), _text_frac(eps), tuple(json.loads(cohorts)), retried)

    # -- spending ----------------------------------------------------------------------------------
    def check(self, measurement: Any, *, cohorts: Optional[Iterable[int]] = None, d_in: int = 1, when: Optional[datetime] = None) -> Fraction:
        """Would the query fit? Returns the remaining budget after it, or raises
        :class:`BudgetExceededError`. Spends nothing (a pre-check, e.g. before an OpenDP filter)."""
        eps, _, _ = _cost_of(measurement, d_in)
        if eps == 0:
            raise LDPParameterError("epsilon must be > 0 to check a query (epsilon=0 charges nothing: there is nothing to check)")
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
        ldp_plugin mechanism (its :func:`~ldp_plugin.mechanisms.charge.report_charge`: the float ε's exact value), or a number. A query id already in the ledger is
        charged once: the same ε/cohorts/mechanism return the existing record (``retried=True``);
        anything else is an error.
        """
        return self._spend(query_id, measurement, cohorts=cohorts, d_in=d_in, mechanism=mechanism, params=params, when=when, started=False)

    def _spend(self, query_id: str, measurement: Any, *, cohorts: Optional[Iterable[int]], d_in: int, mechanism: Optional[str],
               params: Optional[dict], when: Optional[datetime], started: bool) -> SpendRecord:
        """:meth:`spend`; with ``started`` the release is marked ``started`` in the same transaction as
        the charge, so a process killed at any instant leaves either nothing or a charged query whose
        retry is refused as interrupted (never a charge without its release status)."""
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
            if started:
                con.execute("INSERT OR REPLACE INTO release_status(query_id, status, detail) VALUES (?, 'started', NULL)", (query_id,))
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        return SpendRecord(seq, query_id, t, key, mech_name, json.loads(params_json), eps, cs)

    def spend_collection(self, query_id: str, mechanism: Any, t: int, *, cohorts: Optional[Iterable[int]] = None,
                         when: Optional[datetime] = None) -> SpendRecord:
        """Charge collection ``t`` (1-based) of a repeated series of a keyed (memoized)
        ``mechanism``: ``mechanism.collection_cost(t)`` under the relation its spec names
        (``"user"`` by default; ``"value"`` only when the deployment named it), checked and spent
        atomically. The audit row's params hold the spec, the ``relation`` and the collection
        number. An unbounded charge (dBitFlipPM at the user level from ``t = 2``) raises before
        anything is spent. The ledger never sees the values, so the charge assumes nothing about
        them: ``collection_cost`` bounds every history of the series (``memoized-krr`` included,
        whose ``max_values`` is a client-side guard, not an assumption of the charge)."""
        cost = mechanism.collection_cost(t)
        params = {"spec": mechanism.spec(), "relation": mechanism.relation, "collection": t}
        return self.spend(query_id, cost, cohorts=cohorts, mechanism=mechanism.name, params=params, when=when)

    def _add_totals(self, table: str, cs: tuple, eps: Fraction, period: Optional[str] = None) -> None:
        con = self._con
        if table == "cohort_total":
            cur = {}
            for chunk in _chunks(cs):
                cur.update(con.execute("SELECT cohort, total FROM cohort_total WHERE cohort IN (%s)" % ",".join("?" * len(chunk)), chunk).fetchall())
            con.executemany(
                "INSERT OR REPLACE INTO cohort_total(cohort, total) VALUES (?, ?)",
                [(c, _frac_text(_text_frac(cur[c]) + eps if c in cur else eps)) for c in cs],
            )
        else:
            cur = {}
            for chunk in _chunks(cs):
                cur.update(
                    con.execute(
                        "SELECT cohort, total FROM period_total WHERE period = ? AND cohort IN (%s)" % ",".join("?" * len(chunk)), (period, *chunk)
                    ).fetchall()
                )
            con.executemany(
                "INSERT OR REPLACE INTO period_total(period, cohort, total) VALUES (?, ?, ?)",
                [(period, c, _frac_text(_text_frac(cur[c]) + eps if c in cur else eps)) for c in cs],
            )


#: cohorts bound per SQL statement (SQLite's limit is 999 variables before 3.32, 32766 after)
SQL_CHUNK = 900


def _chunks(cs: tuple) -> list:
    """``cs`` in slices small enough for one statement's bound variables."""
    return [tuple(cs[i : i + SQL_CHUNK]) for i in range(0, len(cs), SQL_CHUNK)] or [()]
