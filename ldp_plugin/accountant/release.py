"""The one release path: spend, produce, mark the release, keep reports (a mixin of
:class:`ldp_plugin.accountant.Accountant`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Iterable, Optional


from .._boundary.private import create_private_file
from .._errors import LDPParameterError
from .budget import LedgerError
from .interop import _deserialize, _serialize


class _Releases:
    # -- releasing -----------------------------------------------------------------------------------
    def run(self, query_id: str, measurement: Any, data: Any, *, cohorts: Optional[Iterable[int]] = None, keep_reports: bool = False, **kw):
        """Spend, then run ``measurement(data)`` (an OpenDP measurement or a callable) and return
        its release. With ``keep_reports=True`` the release is stored, and a retry of the same
        query id returns it without running (and without charging) again. A measurement of this
        library checks ``data`` against its domain first (``check_argument``): a value it would
        refuse is refused before anything is spent."""
        check = getattr(measurement, "check_argument", None)
        if callable(check) and self.kept_reports(query_id) is None:
            check(data)
        return self.release(query_id, measurement, lambda: measurement(data), cohorts=cohorts, keep_reports=keep_reports, **kw)

    def release(self, query_id: str, cost: Any, produce: Any, *, cohorts: Optional[Iterable[int]] = None, keep_reports: bool = False, **kw):
        """The one release path (``run`` and the Polars namespace use it): spend ``cost`` under
        ``query_id`` (atomic check-then-spend), then call ``produce()`` for the reports, marking the
        release ``started`` (in the spend's own transaction) → ``released`` (or ``partial`` if it fails after the spend). A retried
        query id (same spec) is charged once and returns the kept reports, or is refused with a
        message that says whether the first release completed."""
        known = {"d_in", "mechanism", "params", "when"}
        if set(kw) - known:
            raise LDPParameterError(f"release() takes only {sorted(known)} besides cohorts and keep_reports")
        rec = self._spend(query_id, cost, cohorts=cohorts, started=True, **{k: kw.get(k, 1 if k == "d_in" else None) for k in known})
        if rec.retried:
            kept = self.kept_reports(query_id)
            if kept is not None:
                return kept
            raise LDPParameterError(self.retry_refusal(query_id))
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
            raise LedgerError(f"backup destination {str(dst)!r} already exists" + (" (a directory; give a new file path)" if dst.is_dir() else ""))
        if not dst.parent.is_dir():
            raise LedgerError(f"backup destination {str(dst)!r}: its directory does not exist")
        try:
            create_private_file(dst)  # a copy of the budget is as private as the ledger (0600)
            out = sqlite3.connect(str(dst))
        except (sqlite3.Error, OSError):
            raise LedgerError(f"backup destination {str(dst)!r} cannot be created (is its directory writable?)") from None
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
