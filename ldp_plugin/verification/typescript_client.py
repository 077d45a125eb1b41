"""The TypeScript client (``clients/typescript``) verified by the same layers as the Python client,
through a Node harness (``ldp verify --client typescript``).

* **Exact channel** (:func:`typescript_channel`): Node replays the real TypeScript client once per
  leaf of the tree of its sampler calls' outcomes (``dist/testing/enumerate.js``: every Bernoulli
  answered both ways, every uniform integer each way) and returns, per leaf, the calls it made — the
  threshold or range it passed, the outcome it got — and the wire blob of the report it returned.
  The row is rebuilt here with exact rationals from those integers (a Bernoulli of threshold ``T``
  weighs ``T/2**64`` or ``1 − T/2**64``, a uniform integer on ``[0, r)`` weighs ``1/r``), each
  report decoded by the Python collector's codec (:func:`~ldp_plugin.mechanisms.reports.from_wire`)
  and placed in the Python mechanism's declared channel (``output_index``). It must equal the
  declared channel exactly, and that channel's worst-case ratio must be ``<= e**ε``. k-subset's
  other items are answered as one uniform choice among the subsets (as the Python layer answers
  ``sorted_subsets``; Floyd's algorithm on the words is covered by the byte-identical vectors).
  Clients that read raw words (OLH's seed, Duchi's 64-bit comparison) are not enumerable, as in
  the Python layer.
* **Goodness of fit** (:func:`typescript_gof`): Node randomizes ``n`` users per input from a
  recorded seeded stream (reproducible); Pearson's χ² against the declared row, pooled as the
  Python layer pools (:func:`~ldp_plugin.verification.layers._pooled_chisquare`), at the family-wise
  level; the same counts must be rejected against the channel at 1.3 ε (power check).
* **Seeded bugs** (``src/testing/seeded_bugs.ts``): deliberately broken TypeScript clients that the
  layers must catch (:func:`typescript_self_test`).

Node is found on ``PATH``; the client directory is ``$LDP_TYPESCRIPT_CLIENT`` or the repository's
``clients/typescript`` (built: ``npm ci && npm run build``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..exact import TWO64, epsilon_of_ratio, ratio_within_exp
from ..mechanisms import CMS, HCMS, KRR, Duchi, Hybrid, Piecewise, OLH, ORR, OUE, RAPPOR, HadamardMechanism, HadamardResponse, KSubset, WarnerRR
from ..mechanisms.distribution import SquareWave
from ..mechanisms.reports import from_wire, from_wire_many, report_count
from ..sampling import SeededRandomSource
from .layers import FAMILY_ALPHA, _pooled_chisquare

__all__ = ["client_dir", "typescript_instances", "typescript_seeded_bugs", "typescript_channel", "typescript_gof",
           "verify_typescript_instance", "verify_typescript", "typescript_self_test"]

#: random bytes reserved per simulated user for the goodness-of-fit stream (the hungriest canonical
#: client, OUE at ε = 4 on the sparse path, draws a first block of about 160)
_STREAM_BYTES_PER_USER = 256


def client_dir() -> Path:
    """The TypeScript client's directory (``$LDP_TYPESCRIPT_CLIENT`` or the repository's)."""
    env = os.environ.get("LDP_TYPESCRIPT_CLIENT")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "clients" / "typescript"
    if not (path / "dist" / "index.js").is_file():
        raise LDPParameterError("the TypeScript client was not found: set LDP_TYPESCRIPT_CLIENT to clients/typescript (built with npm run build)")
    return path


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise LDPParameterError("verifying the TypeScript client needs Node.js on PATH")
    return node


def _run(script: str, job: dict, timeout: float = 600) -> Any:
    base = client_dir()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.json"
        path.write_text(json.dumps(job))
        proc = subprocess.run([_node(), str(base / script), str(path)], capture_output=True, text=True, timeout=timeout, cwd=base)
    if proc.returncode != 0:
        raise LDPParameterError(f"the TypeScript harness {script} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc.stdout


def typescript_instances() -> list:
    """(name, mechanism) of the canonical instances checked on the TypeScript client."""
    return [
        ("warner", WarnerRR(epsilon=1.0)),
        ("krr", KRR(epsilon=0.5, d=2)),
        ("krr", KRR(epsilon=2.0, d=5)),
        ("rappor", RAPPOR(epsilon=1.0, d=3)),
        ("oue", OUE(epsilon=1.0, d=4)),
        ("oue", OUE(epsilon=4.0, d=6)),
        ("hadamard", HadamardResponse(epsilon=1.0, d=3)),
        ("hadamard", HadamardResponse(epsilon=2.0, d=6)),
        ("hadamard-mechanism", HadamardMechanism(epsilon=1.0, d=5)),
        ("k-subset", KSubset(epsilon=1.0, d=5, k=2)),
        ("olh", OLH(epsilon=1.0, d=5)),
        ("orr", ORR(epsilon=1.0, k=4, cohorts=2, d=3)),
        ("cms", CMS(epsilon=1.0, k=4, cohorts=2, d=3)),
        ("hcms", HCMS(epsilon=1.0, k=4, cohorts=2, d=4)),
        ("duchi", Duchi(epsilon=1.0, grid=4)),
        ("piecewise", Piecewise(epsilon=1.0, grid=4)),
        ("hybrid", Hybrid(epsilon=2.0, grid=4)),
        ("square-wave", SquareWave(epsilon=1.0, grid=8)),
    ]


def typescript_seeded_bugs() -> list:
    """(bug name in ``SEEDED_BUGS`` of the TypeScript testing module, the mechanism it claims to be)."""
    return [
        ("krr-swapped-threshold", KRR(epsilon=1.0, d=4)),
        ("krr-no-skip", KRR(epsilon=1.0, d=4)),
        ("oue-own-bit-with-q", OUE(epsilon=1.0, d=4)),
    ]


def _column(mech: Any, blob: bytes) -> Optional[int]:
    reports, rejected = from_wire(mech, blob)
    if rejected or report_count(mech, reports) != 1:
        return None  # not a well-formed report of this mechanism: outside the declared channel
    return int(mech.output_index(reports)[0])


def typescript_channel(mech: Any, *, bug: Optional[str] = None, max_leaves: int = 50_000):
    """The TypeScript client's exact channel rows (a list of Fraction rows over the declared
    channel's columns, plus one column for anything outside it), or a string saying why the
    client is not enumerable."""
    width = len(mech.channel().outputs)
    job = {"spec": mech.spec(), "inputs": list(range(mech.verification_input_count())), "maxLeaves": max_leaves}
    if bug:
        job["bug"] = bug
    out = json.loads(_run("verify/channel.mjs", job))
    if "not_enumerable" in out:
        return str(out["not_enumerable"])
    rows = []
    for leaves in out["rows"]:
        row = [Fraction(0)] * (width + 1)
        for leaf in leaves:
            w = Fraction(1)
            for kind, param, outcome in leaf["calls"]:
                v = int(param)
                if kind == "bernoulli":
                    if not 0 <= v <= TWO64:
                        return "a Bernoulli threshold outside [0, 2**64]"
                    w *= Fraction(v if outcome == 0 else TWO64 - v, TWO64)
                else:
                    w *= Fraction(1, v)
            col = _column(mech, bytes.fromhex(leaf["wire"]))
            row[width if col is None else col] += w
        rows.append(row)
    return rows


def _worst_ratio(rows: list) -> Optional[Fraction]:
    worst = Fraction(1)
    for j in range(len(rows[0])):
        col = [r[j] for r in rows]
        if max(col) == 0:
            continue
        if min(col) == 0:
            return None  # unequal supports: unbounded
        worst = max(worst, max(col) / min(col))
    return worst


def typescript_gof(mech: Any, *, n_per_input: int = 20_000, seed: int = 0, alpha: float = FAMILY_ALPHA, bug: Optional[str] = None) -> dict:
    """χ² of the TypeScript client's reports (a recorded seeded stream) against the declared
    channel, per input, at level ``alpha / d``; with the power check against the 1.3 ε channel."""
    P = [[float(p) for p in row] for row in mech.channel().matrix]
    wrong = dataclasses.replace(mech, epsilon=mech.epsilon * 1.3).channel()
    W = [[float(p) for p in row] for row in wrong.matrix]
    d = mech.verification_input_count()
    p_ok, p_wrong = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for x in range(d):
            stream = Path(tmp) / "stream.hex"
            stream.write_text(SeededRandomSource(seed, stream=x).random_bytes(_STREAM_BYTES_PER_USER * n_per_input).tobytes().hex())
            job = {"spec": mech.spec(), "values": [x] * n_per_input, "codes": True, "tag": "", "random": str(stream)}
            if bug:
                job["bug"] = bug
            blobs = [bytes.fromhex(line)[16:] for line in _run("vectors/make_reports.mjs", job).split()]
            reports, rejected = from_wire_many(mech, blobs)
            if rejected or report_count(mech, reports) != n_per_input:
                p_ok.append(0.0)  # reports outside the declared channel
                continue
            counts = np.bincount(mech.output_index(reports), minlength=len(P[x]))
            p_ok.append(_pooled_chisquare(counts, np.asarray(P[x])))
            p_wrong.append(_pooled_chisquare(counts, np.asarray(W[x])))
    level = alpha / d
    return {"layer": "goodness-of-fit (typescript)", "samples_per_input": n_per_input, "min_p_value": min(p_ok),
            "power_check_rejects_1.3eps": bool(p_wrong) and min(p_wrong) < level, "passed": min(p_ok) > level}


def verify_typescript_instance(name: str, mech: Any, *, seed: int = 0, quick: bool = False, alpha: float = FAMILY_ALPHA,
                               bug: Optional[str] = None) -> dict:
    """The exact-channel and goodness-of-fit layers on one TypeScript client instance."""
    declared = [list(r) for r in mech.channel().matrix]
    rows = typescript_channel(mech, bug=bug)
    if isinstance(rows, str):
        exact = {"enumerated": False, "reason": rows, "passed": True}
    else:
        width = len(declared[0])
        outside = any(r[width] for r in rows)
        equal = not outside and [r[:width] for r in rows] == declared
        ratio = None if outside else _worst_ratio([r[:width] for r in rows])
        within = ratio is not None and ratio_within_exp(ratio, mech.epsilon)
        exact = {"enumerated": True, "equal_to_declared": equal, "realized_epsilon": epsilon_of_ratio(ratio) if ratio is not None else float("inf"),
                 "passed": bool(equal and within)}
    if not mech.channel_is_client:  # a fresh seed per report (OLH): the declared channel is over fixed verification seeds
        gof = {"layer": "goodness-of-fit (typescript)", "applicable": False, "passed": True}
    else:
        gof = typescript_gof(mech, n_per_input=4_000 if quick else 20_000, seed=seed, alpha=alpha, bug=bug)
    caught_by = [k for k, layer in (("exact channel", exact), ("goodness of fit", gof)) if not layer["passed"]]
    return {"client": "typescript", "name": name, "instance": mech.spec().get("params", {}), "declared_epsilon": mech.epsilon,
            "exact_channel": exact, "goodness_of_fit": gof, "passed": not caught_by, "caught_by": caught_by,
            **({"seeded_bug": bug, "caught": bool(caught_by)} if bug else {})}


def verify_typescript(*, seed: int = 0, quick: bool = False) -> list:
    """Every canonical TypeScript instance (family-wise false-alarm rate ``FAMILY_ALPHA``)."""
    inst = typescript_instances()
    return [verify_typescript_instance(n, m, seed=seed + 1_000_003 * i, quick=quick, alpha=FAMILY_ALPHA / len(inst))
            for i, (n, m) in enumerate(inst)]


def typescript_self_test(*, seed: int = 0, quick: bool = False) -> list:
    """Every seeded TypeScript bug, each of which must be caught."""
    return [verify_typescript_instance(bug, m, seed=seed + 7 * i, quick=quick, bug=bug) for i, (bug, m) in enumerate(typescript_seeded_bugs())]
