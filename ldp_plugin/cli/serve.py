"""``ldp serve``: the HTTPS ingestion endpoint for devices beyond Flower (browsers, phones).

``ldp serve --plan plan.toml --tokens tokens.json --tls-dir tls/`` serves the plan's queries and
collects envelopes (:mod:`ldp_plugin.federated.serve`); ``--tls-dir`` makes a CA and a server
certificate there if none exists (``ca.pem`` is what clients trust). ``ldp serve --tokens
tokens.json --add-client NAME [--role device|analyst] [--quota N]`` adds a client and prints its
token once (only its SHA-256 is stored)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .._boundary import read_small_file, writable_directory
from .._errors import LDPParameterError
from ._common import refuse_unused
from ..federated.certs import make_tls
from ..federated.ingest import IngestService, load_tokens, new_token, plan_queries
from ..federated.plan import Plan
from ..federated.serve import run_server


#: the options of serving (an --add-client run adds a client and exits: they would be ignored)
SERVING = ("--plan", "--tls-dir", "--cert", "--key", "--host", "--port", "--static", "--max-post", "--insecure")


def _add_client(args) -> int:
    refuse_unused(args, SERVING, "with --add-client (it adds a client to --tokens and exits)")
    if not args.add_client.strip() or len(args.add_client) > 200 or any(not c.isprintable() for c in args.add_client):
        raise LDPParameterError("--add-client must be a client name of 1 to 200 printable characters")
    path = Path(args.tokens)
    if path.exists():
        try:
            doc = json.loads(read_small_file(path, "the tokens file"))
        except ValueError:
            raise LDPParameterError(f"the tokens file {path.name!r} is not readable JSON") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("clients", {}), dict):
            raise LDPParameterError('the tokens file needs {"clients": {name: {"token_sha256", "role", "quota"}}}')
    else:
        writable_directory(path.resolve().parent, "the directory of --tokens")
        doc = {"clients": {}}
    if args.add_client in doc.get("clients", {}):
        raise LDPParameterError("--add-client: a client of that name exists (pick another name)")
    token = new_token()
    doc.setdefault("clients", {})[args.add_client] = {"token_sha256": hashlib.sha256(token.encode()).hexdigest(), "role": args.role,
                                                      "quota": args.quota}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))
    path.chmod(0o600)
    print(json.dumps({"client": args.add_client, "token": token}) if args.json else token)
    return 0


def cmd_serve(args) -> int:
    if args.add_client is not None:
        return _add_client(args)
    refuse_unused(args, ("--role", "--quota"), "without --add-client (they describe the client it adds)")
    if not args.plan:
        raise LDPParameterError("ldp serve needs --plan (a plan TOML)")
    plan = Plan.from_toml(args.plan)
    service = IngestService(plan_queries(plan), load_tokens(args.tokens), out_dir=plan.out_dir, max_post=args.max_post)
    cert = key = None
    if args.tls_dir:
        d = Path(args.tls_dir)
        if not (d / "server.pem").exists():
            make_tls(d, hosts=(args.host, "localhost") if args.host != "localhost" else ("localhost",))
        cert, key = d / "server.pem", d / "server.key"
    elif args.cert or args.key:
        cert, key = args.cert, args.key
    server = run_server(service, host=args.host, port=args.port, certfile=cert, keyfile=key, static_dir=args.static, insecure=args.insecure)
    for k, s in service.served.items():
        print(f"serving {s.query.query_id} as /v1/reports/{k}", flush=True)
    server.run()
    return 0
