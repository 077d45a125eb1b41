"""pure-ldp's PEM, TreeHist and SFP on the words file written by benchmarks/heavy_hitters.py.

Run with a Python that has pure-ldp==1.2.0 and numpy<2 (its heavy hitters need it):
    python benchmarks/heavy_hitters_peers.py WORDS.txt EPSILON TOP_K [N] [--methods PEM,TreeHist,SFP] [--alphabet CHARS] [--max-length L]
(the alphabet and max length default to a-z and 10; for the corpora of benchmarks/corpora.py pass
the corpus's characters and its longest string).
Prints one JSON line per method: items, client/server seconds. The oracle is pure-ldp's CMS
(k=32, m=1024), fragment length 2 (its default string oracle cannot allocate this domain)."""

import json
import string
import sys
import time

from pure_ldp.core.fo_creator import create_fo_client_instance, create_fo_server_instance
from pure_ldp.core.hh_creator import create_hh_client_instance, create_hh_server_instance


def run(name, words, epsilon, top_k, chars=string.ascii_lowercase, max_length=10):
    alphabet = list(chars) + ["*"]  # its padding character must be a symbol, or no short word is ever found
    params = {"epsilon": epsilon, "k": 32, "m": 1024}
    server_fo = create_fo_server_instance("CMS", dict(params))
    client_params = dict(params)
    client_params["hash_funcs"] = server_fo.get_hash_funcs()
    client_fo = create_fo_client_instance("CMS", client_params)
    common = {"epsilon": epsilon, "fragment_length": 2, "max_string_length": max_length, "alphabet": alphabet, "index_mapper": lambda x: x}
    if name == "PEM":
        common["start_length"] = 2
    client = create_hh_client_instance(name, dict(common, fo_client=client_fo))
    t0 = time.time()
    reports = [client.privatise(w) for w in words]
    t1 = time.time()
    server = create_hh_server_instance(name, dict(common, fo_server=server_fo))
    for r in reports:
        server.aggregate(r)
    if name == "PEM":
        hh, freq = server.find_heavy_hitters(k=top_k)
    else:
        hh, freq = server.find_heavy_hitters(threshold=0.005)
        order = sorted(range(len(hh)), key=lambda i: -freq[i])[:top_k]
        hh, freq = [hh[i] for i in order], [freq[i] for i in order]
    t2 = time.time()
    return {"method": name, "items": [h.split("*")[0] for h in hh], "client_seconds": t1 - t0, "server_seconds": t2 - t1}


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("epsilon", type=float)
    ap.add_argument("top_k", type=int)
    ap.add_argument("n", type=int, nargs="?", default=None)
    ap.add_argument("--methods", default="PEM,TreeHist,SFP")
    ap.add_argument("--alphabet", default=string.ascii_lowercase)
    ap.add_argument("--max-length", type=int, default=10)
    a = ap.parse_args()
    words = open(a.path).read().split("\n")
    if a.n:
        words = words[: a.n]
    for name in a.methods.split(","):
        try:
            print(json.dumps(run(name, words, a.epsilon, a.top_k, a.alphabet, a.max_length)), flush=True)
        except Exception as e:  # a peer's failure is a measurement, not a crash of the benchmark
            print(json.dumps({"method": name, "error": f"{type(e).__name__}: {e}"}), flush=True)
