"""The analyzer of encode–shuffle–analyze (Bittau et al., "Prochlo", SOSP 2017): it reads a
shuffled batch (:mod:`~ldp_plugin.federated.batch` — ciphertexts, the query, a batch id; no node
id, no order, no time), opens each report with its private key, validates and aggregates them,
and records in its ledger the central (ε, δ) the batch actually earned.

:func:`analyze_batch`, cheapest checks first and before anything is decrypted or spent: the batch
file whole (magic, header, length), the query (parsed as a device parses it; ``expect_query_id``
refuses a batch of another query), the mechanism (a memoized series is refused: its permanent
reports link a device across batches, which the amplification bound does not cover), the
ciphertext size against the query, the batch's size against the query's ``min_batch``, δ, the
private key file (0600), the ledger (it must exist: ``ldp budget init``) and its remaining budget.
Then every ciphertext is opened (``undecryptable``: sealed to another key or altered) and the
opened envelopes go through the collector's checks (:class:`~ldp_plugin.federated.collector.Collector`:
exact length, header, the query's tag — a report of another query is ``wrong_tag`` —, a replayed
nonce is ``duplicate``, value ranges), every rejection counted by reason.

Only if at least ``min_batch`` reports were accepted is the query charged its local ε0 in the
ledger (:meth:`~ldp_plugin.accountant.Accountant.spend`; a rerun on the same batch is charged once)
and the batch recorded (:meth:`~ldp_plugin.accountant.Accountant.record_shuffle`) at
``n = the reports accepted`` — the size actually received and validated, never the size the
shuffler announced — so the central (ε, δ) in the ledger (:func:`ldp_plugin.amplification.amplify`:
the smallest certified bound of the variation-ratio analysis, Wang et al., VLDB 2024, with the
generic parameters of Feldman, McMillan, Talwar, FOCS 2021, and the privacy blanket for
randomized response) is the one the deployment earned. The neighbouring relation is replacing one
device's value (the shuffle model's; the local ε0 stays each device's enforced budget). The bound
assumes the shuffler and the analyzer do not collude and that the accepted reports come from
distinct honest devices: a report an adversary controls does not hide anyone (it lowers the
effective n; see docs/shuffling.md).
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
from pathlib import Path
from typing import Optional

import numpy as np

from .._boundary import writable_directory
from .._errors import LDPInputError, LDPParameterError
from ..accountant import Accountant
from .batch import read_batch
from .collector import Collector
from .envelope import envelope_size
from .query import Query
from .results import released_rows
from .sealed import SEAL_OVERHEAD, open_boxes, private_key
from .shuffler import BatchBelowMinimum, check_shufflable

__all__ = ["analyze_batch", "ANALYZER_REJECTIONS"]

ANALYZER_REJECTIONS = ("undecryptable",)  # beside the collector's reasons


def analyze_batch(batch: str | Path, *, key: str | Path, ledger: str | Path, delta: float, expect_query_id: Optional[str] = None,
                  out_dir: Optional[str | Path] = None, workers: Optional[int] = None) -> dict:
    """Open, validate and aggregate one shuffled batch; charge the query and record the batch's
    central (ε, δ) in ``ledger``. Returns the counts, the ledger's record and the estimate.
    Raises :class:`LDPParameterError` / :class:`LDPInputError` (nothing charged, nothing
    recorded) on a bad batch, key, ledger or query, and :class:`BatchBelowMinimum` when fewer than
    the query's ``min_batch`` reports are accepted. ``out_dir``: the accepted reports as Parquet
    parts (``ldp aggregate`` reads them), written only for an accepted batch. The sealed boxes are
    opened on ``workers`` threads (default: every core; :func:`~ldp_plugin.federated.sealed.open_boxes`)."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta) or not 0 < delta < 1:
        raise LDPParameterError(f"delta must be in (0, 1) (got {delta!r})")  # the cheap checks first: the key, the ledger, delta
    sk = private_key(key)
    if not Path(ledger).is_file():
        raise LDPParameterError(f"the analyzer's ledger {Path(ledger).name!r} does not exist (create it once with `ldp budget init`)")
    if out_dir is not None:
        writable_directory(out_dir, "the output directory")
    acc = Accountant(ledger)  # a file that is not a ledger is refused before the batch is read
    header, body = read_batch(batch)
    try:
        query = Query.from_json(header["query"])
    except (LDPInputError, LDPParameterError) as e:
        raise LDPInputError(f"the batch's query is not a valid query ({e})") from None
    if expect_query_id is not None and query.query_id != expect_query_id:
        raise LDPParameterError(f"the batch is for query id {query.query_id!r}, not the expected {expect_query_id!r}")
    mech = query.mechanism()
    check_shufflable(mech, f"{mech.name!r}")
    size = envelope_size(mech, query.content_hash) + SEAL_OVERHEAD
    if header["ciphertext_size"] != size:
        raise LDPInputError(f"the batch's ciphertext size {header['ciphertext_size']} is not the query's {size}")
    n = int(header["n"])
    if n < max(query.min_batch, 2):
        raise BatchBelowMinimum(f"the batch holds {n} reports, below the query's min_batch={query.min_batch} (and 2): not analyzed")
    stage = None if out_dir is None else Path(out_dir) / f".staging-{secrets.token_hex(6)}"  # parts kept only if the batch is accepted
    try:
        if query.query_id not in {r.query_id for r in acc.history()}:
            acc.check(mech)  # the budget fits (BudgetExceededError) before anything is decrypted
        col = Collector(query, out_dir=stage)
        opened, ok = open_boxes(body, size, sk, workers=workers)  # every core; rows in batch order
        undecryptable = int(n - np.count_nonzero(ok))
        col.ingest_array(opened if not undecryptable else opened[ok])  # the columnar checks over the opened envelopes
        rejected = dict(col.rejected)
        if undecryptable:
            rejected["undecryptable"] = undecryptable
        if col.accepted < max(query.min_batch, 2):
            raise BatchBelowMinimum(f"{col.accepted} of the batch's {n} reports were accepted ({sum(rejected.values())} rejected by reason "
                                    f"{sorted(rejected)}), below the query's min_batch={query.min_batch}: nothing is charged or recorded")
        name = query.spec.get("name") or mech.name
        acc.spend(query.query_id, mech, mechanism=name, params=query.to_dict())
        rec = acc.record_shuffle(query.query_id, mech, batch_id=header["batch_id"], n_min=col.accepted, n_observed=col.accepted, delta=float(delta))
        estimate = released_rows(col)
        if stage is not None and stage.is_dir():
            for part in sorted(stage.glob("part-*.parquet")):
                os.replace(part, Path(out_dir) / part.name)
    finally:
        acc.close()
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
    return {"query_id": query.query_id, "query_hash": query.content_hash.hex(), "mechanism": name, "batch_id": header["batch_id"],
            "reports_received": n, "reports_accepted": col.accepted, "reports_rejected": int(sum(rejected.values())),
            "rejected_by_reason": rejected, "epsilon_local": float(mech.epsilon), "epsilon_central": rec.epsilon_central, "delta": rec.delta,
            "epsilon_central_lower": rec.epsilon_lower, "n_amplified": rec.n_min, "method": rec.method, "assumption": rec.assumption,
            "estimate": estimate}
