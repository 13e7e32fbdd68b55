"""The service's safety classes, fast: the key file read strictly, the Authorization header read
exactly, traces owned by a key (not a name) and none for anonymous callers, strict request
fields on every route, the Content-Type, a per-request work budget, /readyz saying nothing about
the data, and a broken key file kept from callers. The live-server classes (slow clients, the
health checks beside a heavy request, an abandoned request) are in tests/test_redteam_service.py."""

from __future__ import annotations

import json
import logging
import os
import random
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi", reason="pip install 'docket[server]'")
from fastapi.testclient import TestClient  # noqa: E402

from docket import deadline  # noqa: E402
from docket.api import Session  # noqa: E402
from docket.demo import REFUND_QUESTION, nimbus_chunks  # noqa: E402
from docket.errors import InputError  # noqa: E402
from docket.keys import KeyFile  # noqa: E402
from docket.server import ApiError, Limits, ServerConfig, bearer_token, create_app  # noqa: E402

SALARY = {"id": "sal-1", "doc": "salary-bands", "text": "Salary bands for the 2026 annual review: level 3 earns "
          "52,000 to 61,000 euros.", "title": "Salary bands", "acl": ["finance"], "source_type": "policy"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("safety")
    db = str(tmp / "s.db")
    with Session.open(db, create=True) as s:
        assert s.index(records=[c.to_record() for c in nimbus_chunks()] + [SALARY]).ok
    kf = KeyFile(tmp / "keys.json")
    tokens = {"ann": kf.add("ann", "ann", ("finance",)), "ops": kf.add("ops", "ops", admin=True)}
    return {"db": db, "keys": str(tmp / "keys.json"), "tokens": tokens, "tmp": tmp}


def make(env: dict[str, Any], keys: str | None = None, **config: Any) -> TestClient:
    cfg = ServerConfig(db=env["db"], keys=keys or env["keys"], **config)
    return TestClient(create_app(cfg, session=Session.open(env["db"])))


@pytest.fixture(scope="module")
def client(env: dict[str, Any]) -> TestClient:
    return make(env)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text and "Traceback" not in text, text
    return text


# --- the key file ----------------------------------------------------------------------------


def key_file_with(tmp: Path, **changes: Any) -> Path:
    kf = KeyFile(tmp / "base.json")
    if not len(kf):
        kf.add("ann", "ann", ("finance",))
    data = json.loads((tmp / "base.json").read_text())
    for k, v in changes.items():
        if v is ...:
            data["keys"][0].pop(k)
        else:
            data["keys"][0][k] = v
    out = tmp / "edited.json"
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("value", ["false", "no", "0", "False", "", "true", 0, 1, None, [], {}, 0.0])
def test_admin_must_be_a_json_boolean(tmp_path: Path, value: Any) -> None:
    path = key_file_with(tmp_path, admin=value)
    with pytest.raises(InputError) as e:
        KeyFile(path)
    msg = one_line(e.value)
    assert str(path) in msg and "key 'ann'" in msg and "'admin'" in msg


@pytest.mark.parametrize("change, field", [
    ({"adimn": True}, "adimn"), ({"groups": "finance"}, "groups"), ({"groups": [1]}, "groups"),
    ({"principal": 5}, "principal"), ({"principal": ...}, "principal"), ({"sha256": "abc"}, "sha256"),
    ({"name": ""}, "name"), ({"groups": ["fin ance"]}, "groups"), ({"created": 20240101}, "created"),
])
def test_an_ill_typed_or_unknown_key_field_is_one_line(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    path = key_file_with(tmp_path, **change)
    with pytest.raises(InputError) as e:
        KeyFile(path)
    msg = one_line(e.value)
    assert str(path) in msg and field in msg


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=False), st.none(),
                       st.lists(st.booleans(), max_size=2)))
def test_no_value_but_a_boolean_makes_an_admin(tmp_path: Path, value: Any) -> None:
    path = key_file_with(tmp_path, admin=value)
    with pytest.raises(InputError):
        KeyFile(path)


@pytest.mark.parametrize("text", ['{"keys": ' + "[" * 5000 + "]" * 5000 + "}", "{", "[]", '{"keys": 3}',
                                  '{"keys": [], "version": 2}', '{"keys": [], "extra": 1}'])
def test_a_broken_key_file_stops_the_server_at_start_up(env: dict[str, Any], tmp_path: Path, text: str) -> None:
    path = tmp_path / "keys.json"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        create_app(ServerConfig(db=env["db"], keys=str(path)), session=Session.open(env["db"]))
    assert str(path) in one_line(e.value)


def test_two_keys_with_one_name_or_digest_are_refused(tmp_path: Path) -> None:
    KeyFile(tmp_path / "k.json").add("ann", "ann")
    data = json.loads((tmp_path / "k.json").read_text())
    data["keys"].append(dict(data["keys"][0]))
    (tmp_path / "k.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="appears twice"):
        KeyFile(tmp_path / "k.json")


def test_key_files_are_created_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        KeyFile(tmp_path / "k.json").add("ann", "ann")
        KeyFile(tmp_path / "k.json").add("bob", "bob")
        KeyFile(tmp_path / "k.json").remove("ann")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "k.json").stat().st_mode) == 0o600


def test_keys_add_where_it_cannot_write_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cli_run import run

    (tmp_path / "file").write_text("x")
    r = run("keys", "add", "ann", "--principal", "ann", "--keys", str(tmp_path / "file" / "k.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr

    def denied(*a: Any, **k: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("docket.keys.tempfile.mkstemp", denied)  # a read-only folder, also for root
    r = run("keys", "add", "ann", "--principal", "ann", "--keys", str(tmp_path / "k.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Permission denied" in r.stderr, r.stderr


# --- the Authorization header ------------------------------------------------------------------


BAD_HEADERS = ["Bearer  {t}", "Bearer\t{t}", "Bearer {t}\t", "Bearer {t} ", " Bearer {t}", "Bearer {t} x",
               "Basic {t}", "{t}", "Bearer", "Bearer ", "Bearer {t}\u00a0", "Token {t}", "Bearer {t},Bearer {t}"]


@pytest.mark.parametrize("template", BAD_HEADERS)
def test_authorization_must_be_exact(client: TestClient, env: dict[str, Any], template: str) -> None:
    value = template.format(t=env["tokens"]["ann"])
    try:
        r = client.post("/v1/ask", json={"question": REFUND_QUESTION}, headers={"Authorization": value})
    except Exception:  # a value the HTTP client itself refuses to send never reaches docket
        return
    assert r.status_code == 401, value
    err = r.json()["error"]
    assert err["field"] == "authorization" and "refused" in err["message"], (value, err)


def test_the_exact_header_is_accepted_and_two_headers_are_not(client: TestClient, env: dict[str, Any]) -> None:
    t = env["tokens"]["ann"]
    assert client.post("/v1/ask", json={"question": REFUND_QUESTION}, headers=bearer(t)).status_code == 200
    with pytest.raises(ApiError, match="2 times"):
        bearer_token([f"Bearer {t}", f"Bearer {t}"])


@settings(max_examples=200, deadline=None)
@given(ws=st.sampled_from([" ", "\t", "\r", "\n", "\r\n ", "\r\n\t"]), where=st.integers(0, 3))
def test_whitespace_anywhere_but_the_one_space_is_refused(ws: str, where: int) -> None:
    token = "dk_abcdefghijklmnop"
    value = ["Bearer" + ws + token, "Bearer " + ws + token, "Bearer " + token + ws,
             "Bearer " + token[:5] + ws + token[5:]][where]
    if value == "Bearer " + token:
        return
    with pytest.raises(ApiError) as e:
        bearer_token([value])
    assert e.value.status == 401 and "refused" in e.value.message


# --- traces belong to a key --------------------------------------------------------------------


def test_a_reissued_key_with_the_same_name_cannot_read_the_old_traces(env: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    kf = KeyFile(path, check_every=0)
    old = kf.add("ann", "ann", ("finance",))
    c = make(env, keys=str(path))
    r = c.post("/v1/ask", json={"question": "What are the salary bands for level 3?", "floor": -1.0},
               headers=bearer(old))
    tid = r.json()["trace_id"]
    assert c.get(f"/v1/trace/{tid}", headers=bearer(old)).status_code == 200
    kf.remove("ann")
    new = kf.add("ann", "ann")  # same name and principal, fewer groups
    time.sleep(1.1)  # the server re-reads the key file at most once a second
    again = c.get(f"/v1/trace/{tid}", headers=bearer(new))
    assert again.status_code == 404 and "salary" not in again.text.lower()
    assert c.get(f"/v1/trace/{tid}", headers=bearer(old)).status_code == 401  # the old key is revoked


def test_anonymous_briefs_have_no_trace_page(client: TestClient) -> None:
    r = client.post("/v1/ask", json={"question": REFUND_QUESTION})
    assert r.status_code == 200 and "trace_id" not in r.json()
    page = client.get("/v1/trace/anything")
    assert page.status_code == 401 and "API keys only" in page.json()["error"]["message"]


# --- strict request fields -------------------------------------------------------------------


REC = {"id": "c1", "doc": "d", "text": "Refunds are possible within 30 days.", "score": 0.9}
#: (route, body with a field of the wrong JSON type, the field the 422 must name)
LAX = [
    ("/v1/ask", {"question": "q", "k": "50"}, "k"),
    ("/v1/ask", {"question": "q", "k": True}, "k"),
    ("/v1/ask", {"question": "q", "k": 5.0}, "k"),
    ("/v1/ask", {"question": "q", "budget": "1000"}, "budget"),
    ("/v1/ask", {"question": "q", "budget": True}, "budget"),
    ("/v1/ask", {"question": "q", "whole_corpus": "yes"}, "whole_corpus"),
    ("/v1/ask", {"question": "q", "whole_corpus": 1}, "whole_corpus"),
    ("/v1/ask", {"question": "q", "floor": "0.4"}, "floor"),
    ("/v1/ask", {"question": "q", "floor": False}, "floor"),
    ("/v1/ask", {"question": 5}, "question"),
    ("/v1/ask", {"question": "q", "as_of": 1700000000}, "as_of"),
    ("/v1/ask", {"question": "q", "as_of": "2024-01-01T00:00:00"}, "as_of"),
    ("/v1/ask", {"question": "q", "filters": {"since": 20240101}}, "filters.since"),
    ("/v1/ask", {"question": "q", "filters": {"docs": "a"}}, "filters.docs"),
    ("/v1/ask", {"question": "q", "history": [{"role": "user", "content": 5}]}, "history[0].content"),
    ("/v1/ask", {"question": "q", "format": 1}, "format"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "score": True}]}, "candidates[0].score"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "score": "0.9"}]}, "candidates[0].score"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "version": "2"}]}, "candidates[0].version"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "version": True}]}, "candidates[0].version"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "position": 1.5}]}, "candidates[0].position"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "date": 0}]}, "candidates[0].date"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "acl": "finance"}]}, "candidates[0].acl"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "vector": [True]}]}, "candidates[0].vector[0]"),
    ("/v1/assemble", {"question": "q", "candidates": [{**REC, "id": 7}]}, "candidates[0].id"),
    ("/v1/assemble", {"question": "q", "whole_corpus": "false"}, "whole_corpus"),
    ("/v1/assemble", {"question": "q", "attachments": [{"name": "a.md", "text": 5}]}, "attachments[0].text"),
    ("/v1/answer", {"question": "q", "stream": "false"}, "stream"),
    ("/v1/answer", {"question": "q", "structured": 1}, "structured"),
    ("/v1/check", {"answer": "a", "brief": {}, "strip_links": "yes"}, "strip_links"),
    ("/v1/check", {"answer": "a", "brief": {}, "names": 0}, "names"),
    ("/v1/check", {"answer": "a", "brief": {}, "allowed_domains": "example.com"}, "allowed_domains"),
    ("/v1/index", {"records": [], "chunk_size": "300"}, "chunk_size"),
    ("/v1/index", {"documents": [{"name": "a.md", "text": "x"}], "overlap": True}, "overlap"),
    ("/v1/index", {"documents": [{"name": "a.md", "text": 5}]}, "documents[0].text"),
    ("/v1/index", {"records": [{**REC, "version": "2"}]}, "records[0].version"),
    ("/v1/index", {"records": [{**REC, "version": True}]}, "records[0].version"),
    ("/v1/index", {"records": [REC, {**REC, "acl": "finance"}]}, "records[1].acl"),
    ("/v1/index", {"records": [{**REC, "position": 1.0}]}, "records[0].position"),
    ("/v1/index", {"records": [{**REC, "date": 1700000000}]}, "records[0].date"),
]


@pytest.mark.parametrize("route, body, field", LAX, ids=[f"{r}:{f}" for r, _, f in LAX])
def test_lax_types_are_422_naming_the_field(client: TestClient, env: dict[str, Any], route: str, body: dict[str, Any],
                                            field: str) -> None:
    r = client.post(route, json=body, headers=bearer(env["tokens"]["ops"]))
    assert r.status_code == 422, (route, body, r.text)
    assert r.json()["error"]["field"] == field, r.text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["k", "budget", "floor", "whole_corpus"]),
       value=st.one_of(st.text(max_size=6), st.booleans(), st.lists(st.integers(), max_size=1), st.dictionaries(
           st.text(max_size=2), st.integers(), max_size=1)))
def test_no_string_or_boolean_passes_for_a_number(client: TestClient, field: str, value: Any) -> None:
    if field == "whole_corpus" and isinstance(value, bool):
        return
    r = client.post("/v1/ask", json={"question": "q", field: value})
    assert r.status_code == 422 and r.json()["error"]["field"] == field, (field, value, r.text)


def test_valid_types_still_pass(client: TestClient) -> None:
    r = client.post("/v1/ask", json={"question": REFUND_QUESTION, "k": 20, "budget": 800, "floor": 0.1,
                                     "whole_corpus": False, "as_of": "2026-01-01", "filters": {"since": "2020-01-01"}})
    assert r.status_code == 200, r.text
    r = client.post("/v1/assemble", json={"question": REFUND_QUESTION, "candidates": [{**REC, "score": 1,
                                                                                       "date": "2025-02-03"}]})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("headers, says", [({}, "missing"), ({"content-type": "application/x-www-form-urlencoded"},
                                                              "curl -d"), ({"content-type": "text/plain"}, "text/plain")])
def test_a_post_without_the_json_content_type_says_so(client: TestClient, headers: dict[str, str], says: str) -> None:
    for route in ("/v1/ask", "/v1/assemble", "/v1/check", "/v1/answer", "/v1/index"):
        r = client.post(route, content=json.dumps({"question": "q"}).encode(), headers=headers)
        assert r.status_code == 415, (route, r.text)
        err = r.json()["error"]
        assert err["field"] == "content-type" and says in err["message"] and "application/json" in err["message"]
    ok = client.post("/v1/ask", content=json.dumps({"question": REFUND_QUESTION}).encode(),
                     headers={"content-type": "application/json; charset=utf-8"})
    assert ok.status_code == 200


# --- the work of one request -------------------------------------------------------------------


def near_duplicates(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    base = ("the refund policy for annual plans allows a full refund within thirty days of purchase and a "
            "prorated refund after that period provided the account is in good standing").split()
    out = []
    for i in range(n):
        words = list(base)
        words[rng.randrange(len(words))] = f"word{i}"
        out.append({"id": f"c{i}", "doc": f"d{i % 40}", "text": " ".join(words), "score": round(0.9 - i * 1e-4, 6)})
    return out


def test_a_request_over_its_cpu_budget_is_503_naming_the_limit(env: dict[str, Any]) -> None:
    # 1 CPU-second: far below what 400 near-duplicates cost, far above a 3-candidate request even
    # cold on a loaded machine (at 0.2 the small request once went over)
    c = make(env, limits=Limits(cpu_seconds=1.0, wall_seconds=60))
    t0 = time.monotonic()
    r = c.post("/v1/assemble", json={"question": REFUND_QUESTION, "candidates": near_duplicates(400)})
    assert r.status_code == 503, r.text
    body = r.json()
    assert body["error"]["code"] == "over_budget" and "cpu_seconds" in body["error"]["message"]
    assert body["limit"] == {"cpu_seconds": 1.0}
    assert time.monotonic() - t0 < 30
    small = c.post("/v1/assemble", json={"question": REFUND_QUESTION, "candidates": near_duplicates(3)})
    assert small.status_code == 200  # the budget is per request


def test_too_many_versions_of_one_document_is_422(env: dict[str, Any]) -> None:
    c = make(env, limits=Limits(versions_per_doc=5))
    cands = [{**REC, "id": f"v{i}", "version": i + 1} for i in range(6)]
    r = c.post("/v1/assemble", json={"question": "q", "candidates": cands})
    assert r.status_code == 422 and r.json()["error"]["field"] == "candidates[5].version"


def test_budget_checks_are_cheap_and_inert_outside_a_request() -> None:
    deadline.check()  # no budget: nothing happens
    b = deadline.Budget(wall_seconds=0.05)
    with b.active():
        deadline.check()
        time.sleep(0.06)
        with pytest.raises(deadline.OverBudget, match="wall_seconds"):
            deadline.check()
    deadline.check()  # the budget ended with its block
    b = deadline.Budget(cpu_seconds=100)
    with b.active():
        b.cancel()
        with pytest.raises(deadline.Abandoned):
            deadline.check()
    with deadline.Budget(cpu_seconds=100).active():
        t0 = time.perf_counter()
        for _ in range(100_000):
            deadline.check()
        assert time.perf_counter() - t0 < 1.0  # ~1 µs a check at most


def test_the_library_gives_the_same_brief_with_and_without_a_budget(env: dict[str, Any]) -> None:
    s = Session(store=None)
    cands = s.candidates_from(near_duplicates(30))
    plain = s.assemble(REFUND_QUESTION, cands).to_json()
    with deadline.Budget(wall_seconds=120, cpu_seconds=120).active():
        bounded = s.assemble(REFUND_QUESTION, cands).to_json()
    assert plain == bounded


# --- what unauthenticated endpoints say ----------------------------------------------------------


def test_readyz_says_ready_and_nothing_about_the_data(client: TestClient, env: dict[str, Any]) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json() == {"ready": True}
    assert env["db"] not in r.text and "chunks" not in r.text
    admin = client.get("/readyz", headers=bearer(env["tokens"]["ops"])).json()
    assert admin["ready"] is True and admin["chunks"] > 0


def test_readyz_not_ready_names_no_path(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "secret-location" / "gone.db"
    db.parent.mkdir()
    session = Session.open(str(db), create=True)
    c = TestClient(create_app(ServerConfig(db=str(db)), session=session))
    db.unlink()
    session.close()
    with caplog.at_level(logging.ERROR, logger="docket.server"):
        r = c.get("/readyz")
    assert r.status_code == 503 and r.json()["ready"] is False
    assert "secret-location" not in r.text and "request id" in r.json()["error"]["message"]
    assert any("not_ready" in rec.getMessage() for rec in caplog.records)


def test_a_key_file_broken_while_serving_is_a_generic_503(env: dict[str, Any], tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "private-dir" / "keys.json"
    token = KeyFile(path).add("ann", "ann")
    c = TestClient(create_app(ServerConfig(db=env["db"], keys=str(path)), session=Session.open(env["db"])))
    assert c.post("/v1/ask", json={"question": REFUND_QUESTION}, headers=bearer(token)).status_code == 200
    path.write_text('{"keys": [{"name": "ann", "admin": "yes"}]}')
    time.sleep(1.1)
    with caplog.at_level(logging.ERROR, logger="docket.server"):
        r = c.post("/v1/ask", json={"question": REFUND_QUESTION}, headers=bearer(token))
    assert r.status_code == 503
    assert "private-dir" not in r.text and "admin" not in r.text
    rid = r.headers["x-request-id"]
    assert rid in r.json()["error"]["message"]
    logged = [rec.getMessage() for rec in caplog.records if "key_file_unreadable" in rec.getMessage()]
    assert logged and "private-dir" in logged[0] and rid in logged[0]


# --- docket serve's address ---------------------------------------------------------------------


@pytest.mark.parametrize("args, field", [(["--host", "999.1.1.1"], "--host"), (["--host", "not a host"], "--host")])
def test_serve_on_a_bad_address_is_one_line(tmp_path: Path, args: list[str], field: str) -> None:
    from cli_run import run

    r = run("serve", "--db", str(tmp_path / "x.db"), "--embedder", "hash", *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and field in r.stderr, r.stderr


def test_serve_on_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    from cli_run import run

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("serve", "--db", str(tmp_path / "x.db"), "--embedder", "hash", "--port", str(port))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "in use" in r.stderr, r.stderr


def test_a_strict_field_error_says_what_json_type_came(client: TestClient) -> None:
    err = client.post("/v1/ask", json={"question": "q", "k": "50"}).json()["error"]
    assert err["field"] == "k" and 'the string "50"' in err["message"] and "integer" in err["message"]
    err = client.post("/v1/ask", json={"question": "q", "whole_corpus": "yes"}).json()["error"]
    assert "true or false" in err["message"]
    err = client.post("/v1/ask", json={"question": "q", "as_of": 1700000000}).json()["error"]
    assert err["message"].startswith("as_of: must be a date as a YYYY-MM-DD string")


def test_a_server_side_failure_names_no_path_to_the_caller(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    from docket.errors import DocketError

    session = Session.open(env["db"])
    c = TestClient(create_app(ServerConfig(db=env["db"], keys=env["keys"]), session=session))

    def broken(*a: Any, **k: Any) -> Any:
        raise DocketError("/srv/private/store.db: chunks table is missing")

    monkeypatch.setattr(session, "ask", broken)
    with caplog.at_level(logging.ERROR, logger="docket.server"):
        r = c.post("/v1/ask", json={"question": REFUND_QUESTION})
    assert r.status_code == 503 and "/srv/private" not in r.text
    assert r.headers["x-request-id"] in r.json()["error"]["message"]
    assert any("/srv/private" in rec.getMessage() for rec in caplog.records)
