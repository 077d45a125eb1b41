"""The TypeScript client under Node: reports per second (CSPRNG source, one user at a time,
median of 3 runs after a warm-up) and the size of the minified ES-module bundle.

Bars: k-RR >= 10^6 reports/s, OUE d = 64 >= 10^5 reports/s, bundle <= 50 KB.

Usage: (cd clients/typescript && npm ci && npm run build) && python benchmarks/typescript_client.py
"""

import json
import subprocess
import tempfile
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[1] / "clients" / "typescript"

with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "ldp-client.min.js"
    subprocess.run([str(CLIENT / "node_modules" / ".bin" / "esbuild"), str(CLIENT / "src" / "index.ts"), "--bundle", "--minify",
                    "--format=esm", "--target=es2020", "--external:node:*", f"--outfile={out}", "--log-level=warning"], check=True)
    size = out.stat().st_size
print(f"minified bundle: {size:,} bytes ({size / 1000:.1f} KB)")
rows = [json.loads(line) for line in subprocess.run(["node", str(CLIENT / "bench" / "bench.mjs")], check=True, capture_output=True,
                                                    text=True, cwd=CLIENT).stdout.splitlines()]
print("| case | reports | reports/s (median of 3) | slowest run |")
print("|---|---|---|---|")
for r in rows:
    print(f"| {r['case']} | {r['reports']:,} | {r['per_second_median']:,} | {r['per_second_min']:,} |")
