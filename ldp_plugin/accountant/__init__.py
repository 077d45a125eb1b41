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
(a rollback journal, ``synchronous=FULL``: the file alone holds every spend) **before** anything is released; :meth:`Accountant.run` spends, then
runs the measurement. A crash after the commit loses budget, never privacy. A refused query raises
:class:`BudgetExceededError` (a ``ValueError`` with ``requested`` and ``remaining``) and writes
nothing. A retried query id is charged once (it must repeat the same ε, cohorts and mechanism) and
returns the kept reports if they were kept.

Ledger
------
One SQLite file per population: ``population`` (the definition and its fingerprint), ``spend``
(one auditable row per query: time, period, query id, mechanism, parameters, exact ε, cohorts),
``cohort_total`` / ``period_total`` (exact running totals, so a check reads only the touched
cohorts), ``kept_reports``, ``release_status`` and ``shuffle_claim`` (shuffled batches and the
central (ε, δ) they buy, reported beside the enforced local ε0: :mod:`.shuffle`). Opening a ledger that is missing, corrupted or defined for another
population is an error.
"""


from .budget import PERIODS, SCHEMA_VERSION, BudgetExceededError, LedgerError, Population, SpendRecord, as_fraction
from .interop import PrecheckedFilter, _deserialize, _serialize
from .budget import _cost_of
from .ledger import Accountant, _connect
from .shuffle import ShuffleRecord
from .summary import cohort_ranges, spend_groups

__all__ = [
    "BudgetExceededError",
    "LedgerError",
    "Population",
    "SpendRecord",
    "ShuffleRecord",
    "Accountant",
    "as_fraction",
    "PERIODS",
    "cohort_ranges",
    "spend_groups",
]
