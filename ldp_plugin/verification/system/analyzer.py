"""The analyzer as a channel's accountant: the central (ε, δ) it records against the batch it
actually opened.

Two deployed devices (:mod:`._fixture`; their owner pinned the analyzer's public key, so every
report leaves sealed) answer one shuffled query through the node's reply path; the shuffler
takes their replies and, beside them, what an adversary on the path adds: a byte-identical replay
of a ciphertext (``duplicate_ciphertext`` at the shuffler), an honest envelope re-sealed (a fresh
sealed box around a nonce already in the batch: ``duplicate`` at the analyzer), a box sealed to
another key (``undecryptable``) and an envelope of another query sealed to the analyzer
(``wrong_tag``). The shuffler forwards its batch and :func:`~ldp_plugin.federated.analyzer.analyze_batch`
opens it. The layer passes iff

1. **the batch it opened is the one the devices sent**: the envelopes the analyzer accepts are
   exactly the envelopes the devices' ledgers kept (same bytes, each once), every adversarial
   addition rejected by its reason;
2. **the charge and the record are the batch's**: the analyzer's ledger charged the query its
   local ``report_charge`` once (a rerun on the same batch charges nothing more), and recorded the
   batch at ``n`` = the reports accepted, at the requested δ, with the central ε that
   :func:`ldp_plugin.amplification.amplify` gives for that ``n`` and δ;
3. **nothing is spent before every cheap check**: a batch of another query than expected, a δ
   outside ``(0, 1)``, a ledger that does not exist, a batch below the query's minimum, a batch of a
   memoized series, a batch whose ciphertext size is not its query's, and a batch whose reports
   open to fewer than the minimum are each refused with nothing charged or recorded;
4. **the threads open what one core opens** (full run): the batch opened on two threads
   (:func:`~ldp_plugin.federated.sealed.open_boxes`) gives the same envelopes, byte for byte.

Power: the seeded bugs of :mod:`.seeded_bugs` (an analyzer that records the batch at a looser δ
than asked; one that ignores replayed nonces) each fail it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..._errors import LDPInputError, LDPParameterError
from ...accountant import Accountant, Population
from ...amplification import amplify
from ...federated.analyzer import analyze_batch
from ...federated.batch import iter_ciphertexts, read_batch, write_batch
from ...federated.device import DeviceFleet
from ...federated.query import Query
from ...federated.sealed import SEAL_OVERHEAD, generate_analyzer_keys, open_boxes, open_reports, private_key, public_key, seal_reports
from ...federated.shuffler import Shuffler
from ...mechanisms import KRR
from ...mechanisms.longitudinal import LGRR
from ...mechanisms.charge import report_charge
from ._fixture import DEVICES, Device, on_the_wire

__all__ = ["analyzer_layer", "DELTA"]

#: the δ the analyzer is asked to record at
DELTA = 1e-6
_NODES = 2


def _kept(device: Device, query: Query) -> list:
    fleet = DeviceFleet.open(device.config)
    try:
        return [bytes.fromhex(h) for h in fleet.ledger.kept_reports(query.content_hash.hex())["reports"]]
    finally:
        fleet.close()


def analyzer_layer(*, seed: int = 0, quick: bool = False, analyze: Callable = analyze_batch, directory: str | Path) -> dict:
    """The module's checks with ``analyze`` (default: the real analyzer) in ``directory`` (a
    fresh temporary directory). ``seed`` changes nothing (the devices draw from the OS CSPRNG)."""
    t0 = time.perf_counter()
    tmp = Path(directory)
    keys = generate_analyzer_keys(tmp / "keys")
    other = generate_analyzer_keys(tmp / "other-keys")
    mech = KRR(epsilon=2.0, d=4)
    query = Query.for_mechanism("system/shuffled", mech, min_batch=4)
    stray = Query.for_mechanism("system/stray", mech, min_batch=4)
    policy = {"lifetime_cap": "100", "max_epsilon_per_query": "4", "allowed_mechanisms": ["krr"]}
    nodes = [Device(tmp / f"node{i}", policy=policy, analyzer_key=keys["public_key_hex"]) for i in range(_NODES)]
    sh = Shuffler(query)
    failures: list = []
    honest = []
    for node in nodes:
        reply = node.answer(query.to_json())
        res = sh.add_reply(on_the_wire(reply), quota=DEVICES)
        if res["error"] is not None or res["accepted"] != DEVICES:
            failures.append(f"the shuffler took {res['accepted']} of a node's {DEVICES} sealed reports ({res['error']})")
        honest += _kept(node, query)
    sk = private_key(keys["private_key"])
    pk = public_key(keys["public_key_hex"])
    first = reply["reports"][0]
    opened, _ = open_reports([first], sk)
    stray_ct = nodes[0].answer(stray.to_json())["reports"][0]
    adversary = [first, seal_reports(opened, pk)[0], seal_reports(opened, public_key(other["public_key_hex"]))[0], stray_ct]
    sh.add(adversary)
    if sh.rejected != {"duplicate_ciphertext": 1}:
        failures.append(f"the shuffler rejected {sh.rejected}, expected one duplicate_ciphertext")
    batch = tmp / "batch.ldpbatch"
    sent = sh.forward(batch)
    ledger = tmp / "analyzer.sqlite"
    Accountant.create(ledger, Population(name="analyzer", lifetime_cap="100")).close()
    out = analyze(batch, key=keys["private_key"], ledger=ledger, delta=DELTA, out_dir=tmp / "reports")
    header, body = read_batch(batch)
    envelopes, bad = open_reports(list(iter_ciphertexts(header, body)), sk)
    accepted = sorted({e for e in envelopes if e in set(honest)})
    want_rejected = {"duplicate": 1, "undecryptable": 1, "wrong_tag": 1}
    if out["reports_accepted"] != len(honest) or sorted(honest) != accepted or out["rejected_by_reason"] != want_rejected:
        failures.append(f"the analyzer accepted {out['reports_accepted']} (rejections {out['rejected_by_reason']}); "
                        f"the devices sent {len(honest)} and the path added {want_rejected}")
    acc = Accountant(ledger)
    try:
        spends = [r for r in acc.history() if r.query_id == query.query_id]
        records = acc.shuffle_records(query.query_id)
        analyze(batch, key=keys["private_key"], ledger=ledger, delta=DELTA)  # a rerun on the same batch
        rerun_spends = [r for r in acc.history() if r.query_id == query.query_id]
    finally:
        acc.close()
    expect = amplify(mech, len(honest), DELTA)
    if len(spends) != 1 or spends[0].epsilon != report_charge(mech) or len(rerun_spends) != 1:
        failures.append(f"the analyzer's ledger charged {[float(r.epsilon) for r in rerun_spends]}, the query's charge is {float(report_charge(mech))!r} once")
    rec = records[0] if len(records) == 1 else None
    if rec is None or (rec.n_min, rec.n_observed, rec.delta) != (len(honest), len(honest), DELTA) or rec.epsilon_central != float(expect["epsilon"]):
        failures.append(f"the batch was recorded as {None if rec is None else (rec.n_min, rec.n_observed, rec.delta, rec.epsilon_central)}; "
                        f"it earned n={len(honest)}, δ={DELTA}, ε={float(expect['epsilon'])!r}")
    failures += _refusals(tmp, query, keys, other, analyze, [bytes(c) for c in iter_ciphertexts(header, body)])
    workers = None
    if not quick:  # two threads open exactly what one core opens
        opened, ok = open_boxes(body, int(header["ciphertext_size"]), sk, workers=2)
        workers = [bytes(row) for row in opened[ok]] == envelopes and int(ok.size - ok.sum()) == bad
        if not workers:
            failures.append("two threads opened other envelopes than one core")
    return {"layer": "analyzer", "reports_sent": len(honest), "batch": sent["n"], "accepted": out["reports_accepted"],
            "rejected": out["rejected_by_reason"], "epsilon_local": float(report_charge(mech)),
            "epsilon_central": None if rec is None else rec.epsilon_central, "expected_epsilon_central": float(expect["epsilon"]),
            "delta": DELTA, "workers_agree": workers, "failures": failures, "seconds": round(time.perf_counter() - t0, 2),
            "passed": not failures}


def _refusals(tmp: Path, query: Query, keys: dict, other: dict, analyze: Callable, cts: list) -> list:
    """Check 3: each refused batch leaves a fresh analyzer ledger as it was."""
    ledger = tmp / "refusals.sqlite"
    Accountant.create(ledger, Population(name="analyzer", lifetime_cap="100")).close()
    size = len(cts[0])
    series = Query.for_mechanism("system/series", LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3), min_batch=4)
    foreign = seal_reports([b"x" * (size - SEAL_OVERHEAD)] * 4, public_key(other["public_key_hex"]))

    def batch(name: str, q: Query, items: list, width: int) -> Path:
        return write_batch(tmp / f"{name}.ldpbatch", query_json=q.to_json(), batch_id=name, ciphertexts=items, ciphertext_size=width)

    whole = batch("whole", query, cts, size)
    cases = [("another query than expected", dict(batch=whole, expect_query_id="system/other")),
             ("a delta outside (0, 1)", dict(batch=whole, delta=0.0)),
             ("a ledger that does not exist", dict(batch=whole, ledger=tmp / "none.sqlite")),
             ("a batch below the minimum", dict(batch=batch("small", query, cts[:1], size))),
             ("a memoized series", dict(batch=batch("series", series, cts[:4], size))),
             ("a ciphertext size not the query's", dict(batch=batch("size", query, [c + b"\0" for c in cts[:4]], size + 1))),
             ("reports that open below the minimum", dict(batch=batch("foreign", query, foreign, size)))]
    failures = []
    for label, kw in cases:
        args = {"key": keys["private_key"], "ledger": ledger, "delta": DELTA, **kw}
        try:
            analyze(args.pop("batch"), **args)
            failures.append(f"{label}: the batch was analyzed")
        except (LDPParameterError, LDPInputError):
            pass
        acc = Accountant(ledger)
        try:
            if acc.history() or acc.shuffle_records():
                failures.append(f"{label}: the refused batch was charged or recorded")
        finally:
            acc.close()
    return failures
