"""``ldp serve``: the HTTPS ingestion endpoint. Tokens, TLS (certificates made here with
``cryptography``), the plan's queries served, envelopes posted in the wire format into the
query's collector; replays, over-quota clients and malformed posts refused with a clear status
and nothing stored; the estimate released to analysts from the minimum batch."""

from __future__ import annotations

import ssl

import httpx
import pytest

from ldp_plugin import KRR, OUE
from ldp_plugin.federated.envelope import seal
from ldp_plugin.mechanisms.reports import to_wire_each
from ldp_plugin.federated.query import Query
from ldp_plugin.federated.results import released_rows

from ._serve_helpers import live_server, write_setup

PLAN = """
[plan]
name = "web"
min_batch = 5

[[query]]
name = "colour"
mechanism = "krr"
epsilon = "1"
params = {d = 4}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    setup = write_setup(tmp, PLAN)
    with live_server(setup) as (service, url):
        client = httpx.Client(base_url=url, verify=ssl.create_default_context(cafile=setup["tls"]["ca"]), timeout=30)
        yield service, client, setup["tokens"]
        client.close()


def _auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _envelopes(query: Query, values, rng: int) -> bytes:
    mech = query.mechanism()
    return b"".join(seal(to_wire_each(mech, mech.randomize(values, rng=rng), tag=query.content_hash)))


def _query(client, tokens) -> tuple:
    r = client.get("/v1/queries", headers=_auth(tokens["phone"]))
    assert r.status_code == 200
    [q] = r.json()["queries"]
    return q["id"], Query.from_json(q["json"])


def _accepted(client, tokens, qid) -> int:
    return client.get(f"/v1/status/{qid}", headers=_auth(tokens["analyst"])).json()["accepted"]


def test_queries_need_a_token_and_are_the_plans(server):
    service, client, tokens = server
    assert client.get("/v1/queries").status_code == 401
    assert client.get("/v1/queries", headers=_auth("not-a-token")).status_code == 401
    qid, q = _query(client, tokens)
    assert q.query_id == "web/colour/r1" and q.spec == KRR(epsilon=1.0, d=4).spec() and q.min_batch == 5
    assert qid == q.content_hash.hex()


def test_posts_are_collected_and_refusals_store_nothing(server):
    service, client, tokens = server
    qid, q = _query(client, tokens)
    base = _accepted(client, tokens, qid)
    body = _envelopes(q, [0, 1, 2, 3, 3, 3], rng=1)
    url = f"/v1/reports/{qid}"
    octet = {"Content-Type": "application/octet-stream"}
    r = client.post(url, content=body, headers={**_auth(tokens["phone"]), **octet})
    assert r.status_code == 200 and r.json() == {"accepted": 6}
    assert _accepted(client, tokens, qid) == base + 6
    # a replay (the same envelopes again, or one of them inside a new post): 409, nothing stored
    assert client.post(url, content=body, headers={**_auth(tokens["laptop"]), **octet}).json() == {"error": "replay"}
    fresh = _envelopes(q, [1, 2], rng=2)
    size = len(body) // 6
    r = client.post(url, content=fresh + body[:size], headers={**_auth(tokens["laptop"]), **octet})
    assert r.status_code == 409
    dup = fresh[:size] * 2
    assert client.post(url, content=dup, headers={**_auth(tokens["laptop"]), **octet}).status_code == 409
    # malformed: a truncated envelope, another query's tag, another mechanism, values out of range
    assert client.post(url, content=fresh[:-1], headers={**_auth(tokens["laptop"]), **octet}).status_code == 400
    other = Query.for_mechanism("other", KRR(epsilon=1.0, d=4))
    assert client.post(url, content=_envelopes(other, [1], rng=3), headers={**_auth(tokens["laptop"]), **octet}).json()["error"] == "malformed"
    wrong = Query(q.query_id, OUE(epsilon=1.0, d=4).spec(), "1.0")
    assert client.post(url, content=_envelopes(wrong, [1], rng=4), headers={**_auth(tokens["laptop"]), **octet}).status_code == 400
    bad = bytearray(_envelopes(q, [1], rng=5))
    bad[-4:] = (7).to_bytes(4, "little")  # report 7 of a d = 4 mechanism
    r = client.post(url, content=bytes(bad), headers={**_auth(tokens["laptop"]), **octet})
    assert r.status_code == 400 and r.json()["reasons"] == {"out_of_range": 1}
    # wrong media type, unknown query, an analyst posting, no token
    assert client.post(url, content=fresh, headers={**_auth(tokens["laptop"]), "Content-Type": "text/plain"}).status_code == 415
    assert client.post("/v1/reports/" + "0" * 32, content=fresh, headers={**_auth(tokens["laptop"]), **octet}).status_code == 404
    assert client.post(url, content=fresh, headers={**_auth(tokens["analyst"]), **octet}).status_code == 403
    assert client.post(url, content=fresh, headers=octet).status_code == 401
    assert _accepted(client, tokens, qid) == base + 6  # nothing of the refused posts was stored
    # the fresh envelopes were never stored, so they are still accepted
    assert client.post(url, content=fresh, headers={**_auth(tokens["laptop"]), **octet}).json() == {"accepted": 2}


def test_over_quota_is_refused_and_stores_nothing(server):
    service, client, tokens = server
    qid, q = _query(client, tokens)
    url = f"/v1/reports/{qid}"
    octet = {"Content-Type": "application/octet-stream"}
    used = service.served[qid].by_client.get("phone", 0)
    room = 12 - used
    assert room > 1
    r = client.post(url, content=_envelopes(q, [0] * (room + 1), rng=6), headers={**_auth(tokens["phone"]), **octet})
    assert r.status_code == 429 and r.json()["error"] == "over_quota"
    before = _accepted(client, tokens, qid)
    assert client.post(url, content=_envelopes(q, [0] * room, rng=7), headers={**_auth(tokens["phone"]), **octet}).status_code == 200
    assert _accepted(client, tokens, qid) == before + room
    assert client.post(url, content=_envelopes(q, [0], rng=8), headers={**_auth(tokens["phone"]), **octet}).status_code == 429


def test_estimate_is_released_to_analysts_from_the_minimum_batch(server):
    service, client, tokens = server
    qid, q = _query(client, tokens)
    assert client.get(f"/v1/status/{qid}", headers=_auth(tokens["phone"])).status_code == 403
    body = client.get(f"/v1/status/{qid}", headers=_auth(tokens["analyst"])).json()
    assert body["accepted"] >= 5 and [r["item"] for r in body["estimate"]] == [0, 1, 2, 3]
    col = service.served[qid].collector
    assert body["estimate"] == released_rows(col)  # the rows a Flower round releases: the raw unbiased estimate with its intervals


def test_plain_http_is_not_served(server):
    service, client, tokens = server
    with pytest.raises(httpx.HTTPError):
        httpx.get(str(client.base_url).replace("https://", "http://") + "/v1/queries", headers=_auth(tokens["phone"]), timeout=5)
