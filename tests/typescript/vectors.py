"""Cross-language test vectors: reports made by the Python client from a recorded random stream.

Each vector holds a mechanism's spec, one user's value, the query tag, the exact bytes the Python
client's sampler drew (a seeded stream, recorded) and the wire blob it produced. The TypeScript
client replays the same bytes (``ReplaySource``) and must produce the same blob, byte for byte,
consuming exactly the recorded bytes. ``python -m tests.typescript.vectors`` rewrites the committed
file ``clients/typescript/vectors/vectors.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ldp_plugin import CMS, HCMS, LOLOHA, SampleOne, Duchi, Hybrid, Piecewise, SquareWave, KRR, OLH, ORAPPOR, ORR, OUE, RAPPOR, HadamardMechanism, HadamardResponse, KSubset, WarnerRR
from ldp_plugin.mechanisms.reports import to_wire
from ldp_plugin.sampling import RandomSource, SeededRandomSource

VECTORS_PATH = Path(__file__).resolve().parents[2] / "clients" / "typescript" / "vectors" / "vectors.json"


class RecordingSource(RandomSource):
    """A seeded stream that records every byte it hands out (simulations and tests only)."""

    secure = False

    def __init__(self, seed: int):
        self.inner = SeededRandomSource(seed)
        self.drawn = bytearray()

    def random_bytes(self, n: int) -> np.ndarray:
        out = self.inner.random_bytes(n)
        self.drawn += out.tobytes()
        return out


def _instances():
    """(mechanism, values) per parameter point: small and large domains, tiny and large ε, the
    16- and 32-bit Lemire paths, dense and sparse packed rows, labels and booleans, hash ranges
    from 2 to e**10, one to several words of batched subset draws."""
    out = []
    for eps in (0.1, 1.0, 4.0, 12.0):
        for d in (2, 3, 5, 1024, 1025, 70000):
            out.append((KRR(epsilon=eps, d=d), [0, d - 1, d // 2]))
    out.append((KRR(epsilon=0.75, categories=["a", "b", "é", "z z"]), ["a", "é", "z z"]))
    for eps in (0.3, 2.0, 9.0):
        out.append((WarnerRR(epsilon=eps), [False, True]))
    for cls in (RAPPOR, OUE):
        for eps in (0.5, 1.0, 3.0, 4.0, 8.0):
            for d in (2, 7, 8, 9, 64, 1000):
                out.append((cls(epsilon=eps, d=d), [0, d - 1]))
    out.append((OUE(epsilon=6.0, categories=["x", "y", "w"]), ["y"]))
    for eps in (0.5, 2.0, 10.0):
        for d in (2, 5, 1000):
            out.append((OLH(epsilon=eps, d=d), [0, d - 1]))
            out.append((OLH(epsilon=eps, d=d, g=2), [d // 2]))
    out.append((OLH(epsilon=1.0, categories=[-3, 7, 2**40]), [-3, 2**40]))
    out.append((OLH(epsilon=1.5, categories=["maps", "mail", "é"]), ["é", "maps"]))
    words = ["maps", "mail", "chat", "", "ünïcode", "x" * 200]
    for eps in (0.5, 2.0, 6.0):
        out.append((ORR(epsilon=eps, k=8, cohorts=16, hash_seed=7), words[:3]))
        out.append((ORR(epsilon=eps, k=300, cohorts=3, hash_seed=2**63 + 5), words))
        out.append((ORAPPOR(epsilon=eps, k=16, h=2, cohorts=8), words[:3]))
        out.append((ORAPPOR(epsilon=eps, k=64, h=3, cohorts=4, hash_seed=11), [12, -4]))
        out.append((CMS(epsilon=eps, k=32, cohorts=8), words))
        out.append((HCMS(epsilon=eps, k=16, cohorts=4), words[:4]))
        out.append((HCMS(epsilon=eps, k=1024, cohorts=64, hash_seed=3), [0, 77]))
    out.append((ORR(epsilon=1.0, k=4, cohorts=6, d=6), [0, 5]))
    out.append((ORAPPOR(epsilon=1.0, k=8, cohorts=4, categories=["a", "b", "c", "d", "e"]), ["a", "e"]))
    out.append((HCMS(epsilon=2.0, k=8, cohorts=3, d=8), [3, 7]))
    for cls in (Duchi, Piecewise, Hybrid):
        for eps, lo, hi, grid in ((0.5, 0.0, 1.0, 1024), (1.0, -5.0, 20.0, 64), (3.0, 0.0, 1.0, 2), (7.5, 100.0, 101.5, 4096)):
            out.append((cls(epsilon=eps, lower=lo, upper=hi, grid=grid), [lo, hi, lo + (hi - lo) / 3, lo + (hi - lo) * 0.5]))
    sets = [[], ["b"], ["a", "c"], ["c", "a", "b"]]
    out.append((SampleOne(mechanism=KRR(epsilon=1.0, categories=["a", "b", "c"]), m=3), sets))
    out.append((SampleOne(mechanism=KRR(epsilon=2.0, categories=["a", "b", "c"]), m=2, on_long="sample"), sets))
    out.append((SampleOne(mechanism=OUE(epsilon=2.0, d=9), m=4), [[], [0], [8, 3, 5], [1, 2, 3, 4]]))
    out.append((SampleOne(mechanism=KRR(epsilon=0.5, d=1100), m=1, on_long="sample"), [[7], [1, 1099]]))
    out.append((SampleOne(mechanism=ORR(epsilon=2.0, k=16, cohorts=8), m=3), [[], ["maps"], ["maps", "mail", "chat"]]))
    out.append((SampleOne(mechanism=HCMS(epsilon=2.0, k=8, cohorts=3, categories=["x", "y", "z"]), m=2), [["x"], ["z", "y"]]))
    for eps, lo, hi, grid in ((0.5, 0.0, 1.0, 256), (1.0, -5.0, 20.0, 64), (4.0, 0.0, 1.0, 2), (12.0, 0.0, 1000.0, 1024)):
        out.append((SquareWave(epsilon=eps, lower=lo, upper=hi, grid=grid), [lo, hi, lo + (hi - lo) / 3, lo + (hi - lo) * 0.999]))
    for cls in (HadamardResponse, HadamardMechanism):
        for eps in (0.2, 1.0, 6.0):
            for d in (2, 5, 8, 1000, 5000):
                out.append((cls(epsilon=eps, d=d), [0, d - 1, d // 3]))
    for eps in (0.5, 2.0, 7.0):
        for d, k in ((2, 1), (4, 1), (4, 3), (6, 5), (20, 2), (20, 7), (1025, 3), (70000, 5), (300, 40)):
            out.append((KSubset(epsilon=eps, d=d, k=k), [0, d - 1, d // 2]))
    return out


def _keyed_instances():
    """(memoized mechanism, values, user keys): the same key must give the same permanent answers."""
    out = []
    for e_perm, e_one, d, g in ((2.0, 1.0, 8, 3), (1.0, 0.25, 2, 2), (6.0, 3.0, 1000, 17), (4.0, 0.5, 64, 200)):
        for relation in ("user", "value"):
            out.append((LOLOHA(epsilon_perm=e_perm, epsilon_1=e_one, d=d, g=g, relation=relation), [0, d - 1, d // 2]))
    return out


def make_vectors(seeds_per_value: int = 6) -> list:
    vectors = []
    seed = 0
    for mech, values in _instances():
        for value in values:
            for s in range(seeds_per_value):
                seed += 1
                tag = bytes([s, len(vectors) % 256]) * s  # tags of 0..2·(seeds−1) bytes
                src = RecordingSource(seed)
                reports = mech.randomize([value], rng=src)
                vectors.append({
                    "spec": mech.spec(),
                    "value": value,
                    "tag": tag.hex(),
                    "random": bytes(src.drawn).hex(),
                    "wire": to_wire(mech, reports, tag=tag).hex(),
                })
    for mech, values in _keyed_instances():
        for value in values:
            for s in range(seeds_per_value):
                seed += 1
                key = bytes([(seed * 7 + i) % 256 for i in range(16 + seed % 49)])  # keys of 16 to 64 bytes
                src = RecordingSource(seed)
                reports = mech.randomize([value], [key], rng=src)
                vectors.append({"spec": mech.spec(), "value": value, "key": key.hex(), "tag": "", "random": bytes(src.drawn).hex(),
                                "wire": to_wire(mech, reports).hex()})
    return vectors


def vectors_text() -> str:
    return json.dumps(make_vectors(), indent=0, ensure_ascii=True, sort_keys=True) + "\n"


if __name__ == "__main__":
    VECTORS_PATH.write_text(vectors_text())
    print(f"wrote {VECTORS_PATH}")
