"""The shuffled analyzer's decryption rate on every core, against libsodium's own single-core rate
measured in the same run.

    python3 benchmarks/analyzer_cores.py [--reports 200000] [--repeats 2]

Over the same sealed k-RR envelopes (one buffer, as a shuffled batch's body holds them), each row
the best of ``--repeats``:

* ``libsodium_single_core``: the reference — libsodium's ``crypto_box_seal_open`` called in a
  plain loop on one core, each box read in place and opened into one preallocated buffer (the
  fastest a Python caller gets from libsodium; PyNaCl's ``SealedBox.decrypt`` loop is printed
  beside it);
* ``open_boxes_1_worker`` and ``open_boxes_<cores>_workers``: the library's
  :func:`~ldp_plugin.federated.sealed.open_boxes` (what ``ldp federated analyze --workers``
  runs), everything included (its threads' start, the result arrays);
* ``analyzer_inner_loop``: ``open_boxes`` on every core then ``Collector.ingest_array`` of the
  opened envelopes (every collector check and the accumulator), as ``analyze_batch`` does.

``ratio_all_cores_vs_cores_x_libsodium`` = ``open_boxes`` on every core ÷ (cores × the
reference); the bar is ≥ 0.8. ``cpu_over_wall`` (process CPU time ÷ wall time of the all-cores
runs) is about ``cores`` when the machine was otherwise idle."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    sys.path.pop(0)  # this directory's coverage.py would shadow the package numba imports

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from nacl._sodium import ffi, lib  # noqa: E402
from nacl.public import PrivateKey, SealedBox  # noqa: E402

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.federated import Collector, Query  # noqa: E402
from ldp_plugin.federated.envelope import seal  # noqa: E402
from ldp_plugin.federated.sealed import SEAL_OVERHEAD, open_boxes, seal_reports  # noqa: E402
from ldp_plugin.mechanisms.reports import to_wire_each  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n = args.reports
    mech = ldp.KRR(epsilon=1.0, d=64)
    q = Query.for_mechanism("bench", mech, min_batch=1)
    envs = seal(to_wire_each(mech, mech.randomize_encoded(np.arange(n) % 64), tag=q.content_hash))
    sk = PrivateKey.generate()
    boxes = seal_reports(envs, sk.public_key)
    size = len(boxes[0])
    body = b"".join(boxes)
    skb, pkb = bytes(sk), bytes(sk.public_key)

    def libsodium_loop() -> None:
        m = size - SEAL_OVERHEAD
        out = bytearray(n * m)
        src, dst = ffi.from_buffer(body), ffi.from_buffer(out)
        bad = 0
        for i in range(n):
            bad += lib.crypto_box_seal_open(dst + i * m, src + i * size, size, pkb, skb) != 0
        assert bad == 0

    def sealedbox_loop() -> None:
        box = SealedBox(sk)
        for c in boxes:
            box.decrypt(c)

    def inner_loop() -> None:
        opened, ok = open_boxes(body, size, sk, workers=cores)
        assert Collector(q).ingest_array(opened[ok])["accepted"] == n

    def best(fn, cpu: list | None = None) -> float:
        times = []
        for _ in range(args.repeats):
            t, c = time.perf_counter(), time.process_time()
            fn()
            times.append(time.perf_counter() - t)
            if cpu is not None:
                cpu.append((time.process_time() - c, times[-1]))
        return n / min(times)

    cpu: list = []
    rows = {
        "libsodium_single_core": best(libsodium_loop),
        "pynacl_sealedbox_single_core": best(sealedbox_loop),
        "open_boxes_1_worker": best(lambda: open_boxes(body, size, sk, workers=1)),
        f"open_boxes_{cores}_workers": best(lambda: open_boxes(body, size, sk, workers=cores), cpu),
        "analyzer_inner_loop": best(inner_loop),
    }
    rows["ratio_all_cores_vs_cores_x_libsodium"] = rows[f"open_boxes_{cores}_workers"] / (cores * rows["libsodium_single_core"])
    print(json.dumps({"machine": f"{platform.machine()}, {cores} cores, Python {platform.python_version()}", "reports": n, "box_bytes": size,
                      "load_average_1min": round(os.getloadavg()[0], 2), "cpu_over_wall": round(sum(c for c, _ in cpu) / sum(w for _, w in cpu), 2),
                      "reports_per_second": {k: round(v, 3) if k.startswith("ratio") else round(v) for k, v in rows.items()}}, indent=1))


if __name__ == "__main__":
    main()
