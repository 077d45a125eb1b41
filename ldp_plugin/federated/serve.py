"""``ldp serve``: the HTTPS ingestion endpoint (Starlette on uvicorn, the ``serve`` extra) over an
:class:`~.ingest.IngestService` — every decision is the service's; this module maps it to HTTP.

Routes (every one needs ``Authorization: Bearer <token>``):

* ``GET /v1/queries`` → ``{"queries": [{"id": content hash hex, "json": the query's canonical JSON}]}``
* ``POST /v1/reports/{id}`` (``application/octet-stream``: concatenated envelopes) → 200
  ``{"accepted": n}``, or 400/401/403/404/409/413/415/429 with ``{"error": reason}`` and nothing stored
* ``GET /v1/status/{id}`` (analysts) → counts and, from the minimum batch, the estimate
* ``/app/…``: an optional directory of static files (a web page and the client bundle), same origin

TLS: a certificate and key (e.g. from :func:`~ldp_plugin.federated.certs.make_tls`); plain HTTP is
refused unless the host is the loopback address and ``insecure`` is asked for (tests of the logic).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Optional

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .._errors import LDPParameterError
from .ingest import IngestService

__all__ = ["make_app", "run_server"]


def make_app(service: IngestService, *, static_dir: Optional[str | Path] = None) -> Starlette:
    """The ASGI app of ``service`` (and ``static_dir`` under ``/app``)."""

    async def queries(request: Request) -> JSONResponse:
        status, body = service.queries(request.headers.get("authorization"))
        return JSONResponse(body, status_code=status)

    async def post_reports(request: Request) -> JSONResponse:
        auth = request.headers.get("authorization")
        if service.client(auth) is None:  # before reading the body
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        declared = request.headers.get("content-length")
        limit = service.max_post * max(s.collector.size for s in service.served.values())
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return JSONResponse({"error": "too_large"}, status_code=413)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return JSONResponse({"error": "too_large"}, status_code=413)
        status, out = service.post(auth, request.path_params["qid"], request.headers.get("content-type"), bytes(body))
        return JSONResponse(out, status_code=status)

    async def status(request: Request) -> JSONResponse:
        code, body = service.status(request.headers.get("authorization"), request.path_params["qid"])
        return JSONResponse(body, status_code=code)

    routes = [Route("/v1/queries", queries, methods=["GET"]), Route("/v1/reports/{qid}", post_reports, methods=["POST"]),
              Route("/v1/status/{qid}", status, methods=["GET"])]
    if static_dir is not None:
        routes.append(Mount("/app", app=StaticFiles(directory=str(static_dir), html=True)))
    return Starlette(routes=routes)


def run_server(service: IngestService, *, host: str = "127.0.0.1", port: int = 8443, certfile: Optional[str | Path] = None,
               keyfile: Optional[str | Path] = None, static_dir: Optional[str | Path] = None, insecure: bool = False):
    """A configured ``uvicorn.Server`` (call ``.run()``, or run it in a thread in tests)."""
    if certfile is None or keyfile is None:
        loopback = False
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            pass
        if not (insecure and loopback):
            raise LDPParameterError("ldp serve needs --cert and --key (TLS); plain HTTP only with --insecure on a loopback address")
    config = uvicorn.Config(make_app(service, static_dir=static_dir), host=host, port=port, log_level="warning", ws="none", lifespan="off",
                            ssl_certfile=None if certfile is None else str(certfile), ssl_keyfile=None if keyfile is None else str(keyfile))
    return uvicorn.Server(config)
