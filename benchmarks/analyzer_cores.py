"""The shuffled analyzer's decryption rate on every core, against libsodium's own single-core rate
measured in the same run.

    python3 benchmarks/analyzer_cores.py [--reports 200000] [--repeats 3]

Rows: libsodium's ``crypto_box_seal_open`` in a plain loop on one core (the reference), the
library's ``open_chunks`` on one worker and on every core (``workers = cores``), over the same
sealed k-RR envelopes; each the best of ``--repeats`` runs. The ratio row is
``open_chunks(all cores) / (cores × libsodium single-core)`` (the bar: >= 0.8)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
from nacl.bindings import crypto_box_seal_open
from nacl.public import PrivateKey

import ldp_plugin as ldp
from ldp_plugin.federated.envelope import seal
from ldp_plugin.mechanisms.reports import to_wire_each
from ldp_plugin.federated.sealed import open_chunks, seal_reports

CHUNK = 1 << 14


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mech = ldp.KRR(epsilon=1.0, d=64)
    reports = mech.randomize_encoded(np.arange(args.reports) % 64)
    envs = seal(to_wire_each(mech, reports, tag=b"\0" * 32))
    sk = PrivateKey.generate()
    sealed = seal_reports(envs, sk.public_key)
    skb, pkb = bytes(sk), bytes(sk.public_key)
    chunks = [sealed[i:i + CHUNK] for i in range(0, len(sealed), CHUNK)]

    def best(fn) -> float:
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return args.reports / min(times)

    rows = {
        "libsodium_single_core": best(lambda: [crypto_box_seal_open(c, pkb, skb) for c in sealed]),
        "open_chunks_1_worker": best(lambda: list(open_chunks(iter(chunks), sk, workers=1))),
        f"open_chunks_{cores}_workers": best(lambda: list(open_chunks(iter(chunks), sk, workers=cores))),
    }
    rows["ratio_all_cores_vs_cores_x_libsodium"] = rows[f"open_chunks_{cores}_workers"] / (cores * rows["libsodium_single_core"])
    print(json.dumps({"machine": f"{platform.machine()}, {cores} cores, Python {platform.python_version()}", "reports": args.reports,
                      "reports_per_second": {k: round(v, 3) if k.startswith("ratio") else round(v) for k, v in rows.items()}}, indent=1))


if __name__ == "__main__":
    main()
