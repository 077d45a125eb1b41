"""Wall time of every example (issue 21's bar: at most 20 s each), each in a fresh process and an
empty working directory, best of 2.

Usage: python benchmarks/examples_time.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    worst = 0.0
    for script in sorted((ROOT / "examples").glob("*.py")):
        best = 1e9
        for _ in range(2):
            with tempfile.TemporaryDirectory() as cwd:
                t0 = time.perf_counter()
                out = subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True)
                best = min(best, time.perf_counter() - t0)
            if out.returncode:
                raise SystemExit(f"{script.name} failed: {out.stderr[-500:]}")
        worst = max(worst, best)
        print(f"{script.name:<26} {best:6.1f} s {'(over the 20 s bar)' if best > 20 else ''}", flush=True)
    print(f"slowest: {worst:.1f} s")


if __name__ == "__main__":
    main()
