"""Render benchmarks/results/throughput.json as the markdown table in BENCHMARKS.md.

Usage: python benchmarks/render.py benchmarks/results/throughput.json
"""

import json
import sys


def main() -> None:
    doc = json.load(open(sys.argv[1]))
    print("| mechanism | d | ε | ours client secure /s | ours client seeded /s | ours server /s | pure-ldp client / server /s | multi-freq-ldpy client / server /s | × best peer (client secure, server) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in doc["rows"]:
        o = r["ours"]
        pl = r["pure_ldp"]
        mf = r["multi_freq_ldpy"]
        pls = f"{pl['client']:,.0f} / {pl['server']:,.0f}" if pl else "—"
        mfs = f"{mf['client']:,.0f} / {mf['server']:,.0f}"
        name = r["mechanism"] + (f" (k={r['k']})" if "k" in r else "")
        print(
            f"| {name} | {r['d']} | {r['epsilon']:g} | {o['client_secure']:,.0f} | {o['client_seeded']:,.0f} | {o['server']:,.0f} | {pls} | {mfs} | "
            f"{r['ratio_client_secure']:.1f}×, {r['ratio_server']:.1f}× |"
        )


if __name__ == "__main__":
    main()
