"""A live ``ldp serve`` for tests: a plan, tokens, TLS made with ``cryptography``, uvicorn in a thread."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ldp_plugin.federated.certs import make_tls
from ldp_plugin.federated.ingest import IngestService, load_tokens, plan_queries
from ldp_plugin.federated.plan import Plan
from ldp_plugin.federated.serve import run_server

TOKENS = {"phone": ("device", 12), "laptop": ("device", 1000), "analyst": ("analyst", 1)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_setup(tmp: Path, plan_text: str) -> dict:
    (tmp / "plan.toml").write_text(plan_text)
    clients, tokens = {}, {}
    for name, (role, quota) in TOKENS.items():
        tok = f"token-of-{name}-" + hashlib.sha256(name.encode()).hexdigest()[:16]
        tokens[name] = tok
        clients[name] = {"token_sha256": hashlib.sha256(tok.encode()).hexdigest(), "role": role, "quota": quota}
    (tmp / "tokens.json").write_text(json.dumps({"clients": clients}))
    tls = make_tls(tmp / "tls", hosts=("127.0.0.1", "localhost"))
    return {"tokens": tokens, "tls": tls, "plan": tmp / "plan.toml", "tokens_file": tmp / "tokens.json"}


@contextmanager
def live_server(setup: dict, *, static_dir=None, max_post: int = 10_000):
    plan = Plan.from_toml(setup["plan"])
    service = IngestService(plan_queries(plan), load_tokens(setup["tokens_file"]), out_dir=plan.out_dir, max_post=max_post)
    port = free_port()
    server = run_server(service, host="127.0.0.1", port=port, certfile=setup["tls"]["cert"], keyfile=setup["tls"]["key"], static_dir=static_dir)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("ldp serve did not start")
        time.sleep(0.05)
    try:
        yield service, f"https://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
