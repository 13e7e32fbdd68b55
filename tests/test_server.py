"""The HTTP service through TestClient: every endpoint, keys, limits, errors, streaming, time-outs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="pip install 'docket[server]'")
from fastapi.testclient import TestClient  # noqa: E402

from docket.api import Session  # noqa: E402
from docket.demo import REFUND_QUESTION, nimbus_chunks  # noqa: E402
from docket.keys import KeyFile  # noqa: E402
from docket.server import Limits, ServerConfig, create_app  # noqa: E402

SALARY = {"id": "sal-1", "doc": "salary-bands", "text": "Salary bands for the 2026 annual review: level 3 earns "
          "52,000 to 61,000 euros.", "title": "Salary bands", "acl": ["finance"], "source_type": "policy"}
HR_MEMO = {"id": "hr-1", "doc": "hr-memo", "text": "HR memo: the 2026 annual review salary bands for level 3 are "
           "frozen until March.", "title": "HR memo", "acl": ["hr"], "source_type": "policy"}
SALARY_Q = "What are the salary bands for level 3 in the 2026 annual review?"


class Scripted:
    """A generator that answers with a fixed text, piece by piece, optionally slowly."""

    def __init__(self, text: str, delay: float = 0.0) -> None:
        self.text, self.delay = text, delay
        self.name = "scripted"

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        time.sleep(self.delay)
        return self.text

    def stream(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> Iterator[str]:
        for word in self.text.split(" "):
            time.sleep(self.delay)
            yield word + " "


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("server")
    db = str(tmp / "s.db")
    with Session.open(db, create=True) as s:
        rep = s.index(records=[c.to_record() for c in nimbus_chunks()] + [SALARY, HR_MEMO])
        assert rep.ok, rep.problems
    kf = KeyFile(tmp / "keys.json")
    tokens = {"ann": kf.add("ann", "ann", ("finance",)), "ops": kf.add("ops", "ops", admin=True)}
    return {"db": db, "keys": str(tmp / "keys.json"), "tokens": tokens, "tmp": tmp}


def make(env: dict[str, Any], **config: Any) -> TestClient:
    generator = config.pop("generator", None)
    timeout = config.pop("generator_timeout", 5.0)
    cfg = ServerConfig(db=env["db"], keys=env["keys"], generator_timeout=timeout, **config)
    session = Session.open(env["db"], generator=generator, generator_timeout=timeout)
    return TestClient(create_app(cfg, session=session))


@pytest.fixture(scope="module")
def client(env: dict[str, Any]) -> TestClient:
    return make(env)


def auth(env: dict[str, Any], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {env['tokens'][who]}"}


def docs_of(body: dict[str, Any]) -> set[str]:
    return {s["doc"] for s in body["sources"].values()}


# --- ops ------------------------------------------------------------------------------------


def test_health_ready_metrics(client: TestClient, env: dict[str, Any]) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"ready": True}  # nothing about the data without an admin key
    ready = client.get("/readyz", headers=auth(env, "ops")).json()
    assert ready["ready"] is True and ready["chunks"] == 10
    assert client.get("/readyz", headers=auth(env, "ann")).json() == {"ready": True}
    client.post("/v1/ask", json={"question": REFUND_QUESTION})
    text = client.get("/metrics").text
    assert 'docket_requests_total{endpoint="/v1/ask",method="POST",status="200"}' in text
    assert 'docket_request_duration_seconds_bucket{endpoint="/v1/ask"' in text
    for section in ("system", "history", "documents", "tags", "question"):
        assert f'docket_prompt_tokens_count{{section="{section}"}}' in text
    assert 'docket_stage_duration_seconds_count{stage="retrieve"}' in text


def test_readyz_503_when_the_store_is_gone(env: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "gone.db"
    session = Session.open(str(db), create=True)
    c = TestClient(create_app(ServerConfig(db=str(db)), session=session))
    db.unlink()
    session.close()
    assert c.get("/readyz").status_code == 503


# --- identity -------------------------------------------------------------------------------


def test_no_key_sees_public_chunks_only(client: TestClient) -> None:
    r = client.post("/v1/ask", json={"question": SALARY_Q, "floor": 0.0})
    assert r.status_code == 200
    assert not docs_of(r.json()) & {"salary-bands", "hr-memo"}


def test_wrong_key_is_401(client: TestClient) -> None:
    r = client.post("/v1/ask", json={"question": SALARY_Q}, headers={"Authorization": "Bearer dk_not-a-key"})
    assert r.status_code == 401 and r.json()["error"]["field"] == "authorization"
    assert r.headers["www-authenticate"] == "Bearer"
    r = client.post("/v1/ask", json={"question": SALARY_Q}, headers={"Authorization": "Basic abc"})
    assert r.status_code == 401


def test_principal_in_the_body_is_ignored(client: TestClient, env: dict[str, Any]) -> None:
    body = {"question": SALARY_Q, "floor": 0.0, "principal": "hr", "groups": ["hr"]}
    r = client.post("/v1/ask", json=body, headers=auth(env, "ann"))
    assert r.status_code == 200
    got = docs_of(r.json())
    assert "salary-bands" in got and "hr-memo" not in got  # ann's finance group, never hr
    assert any("ignored" in w for w in r.json()["warnings"])
    # the same on /v1/assemble with ids: hr's chunk is "not in the store" for ann
    r = client.post("/v1/assemble", json={"question": SALARY_Q, "principal": "hr",
                                          "candidates": [{"id": "hr-1", "score": 0.9}]}, headers=auth(env, "ann"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "candidates[0].id"


def test_required_key(env: dict[str, Any]) -> None:
    c = make(env, require_key=True)
    assert c.post("/v1/ask", json={"question": SALARY_Q}).status_code == 401
    assert c.post("/v1/ask", json={"question": SALARY_Q}, headers=auth(env, "ann")).status_code == 200
    assert c.get("/healthz").status_code == 200


def test_admin_routes(env: dict[str, Any], tmp_path: Path) -> None:
    db = str(tmp_path / "w.db")
    session = Session.open(db, create=True)
    c = TestClient(create_app(ServerConfig(db=db, keys=env["keys"]), session=session))
    rec = {"records": [{"id": "new-1", "doc": "shipping", "text": "Parcels ship within 2 business days from Berlin."}]}
    assert c.post("/v1/index", json=rec).status_code == 401
    r = c.post("/v1/index", json=rec, headers=auth(env, "ann"))
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    r = c.post("/v1/index", json=rec, headers=auth(env, "ops"))
    assert r.status_code == 200 and r.json()["chunks_written"] == 1
    doc = {"documents": [{"name": "returns/eu.md", "text": "# Returns\n\nReturns in the EU are free for 30 days.\n",
                          "meta": {"source_type": "policy"}}]}
    r = c.post("/v1/index", json=doc, headers=auth(env, "ops"))
    assert r.status_code == 200 and r.json()["added"] == ["returns/eu.md v1"]
    r = c.post("/v1/ask", json={"question": "How long do parcels take to ship?"})
    assert "shipping" in docs_of(r.json())
    assert c.delete("/v1/documents/shipping", headers=auth(env, "ann")).status_code == 403
    r = c.delete("/v1/documents/returns/eu.md", headers=auth(env, "ops"))
    assert r.status_code == 200 and r.json()["deleted_chunks"] == 1
    r = c.delete("/v1/documents/returns/eu.md", headers=auth(env, "ops"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = c.post("/v1/index", json={"documents": [{"name": "../etc/passwd", "text": "x"}]}, headers=auth(env, "ops"))
    assert r.status_code == 200 and r.json()["problems"][0]["where"] == "documents[0]"
    assert c.post("/v1/index", json={}, headers=auth(env, "ops")).status_code == 422


# --- limits and bad input ---------------------------------------------------------------------


def test_oversized_body_is_413(env: dict[str, Any]) -> None:
    c = make(env, limits=Limits(body_bytes=2000))
    r = c.post("/v1/ask", json={"question": "x" * 5000})
    assert r.status_code == 413 and r.json()["error"] == {"code": "too_large", "field": "body",
                                                          "message": "the body is larger than 2000 bytes"}


def test_limits_name_the_field(env: dict[str, Any]) -> None:
    c = make(env, limits=Limits(candidates=2, text_chars=50, question_chars=30, history_turns=1))
    rec = {"doc": "d", "text": "short", "score": 0.9}
    r = c.post("/v1/assemble", json={"question": "q", "candidates": [{**rec, "id": f"c{i}"} for i in range(3)]})
    assert (r.status_code, r.json()["error"]["field"]) == (422, "candidates")
    r = c.post("/v1/assemble", json={"question": "q", "candidates": [{**rec, "id": "c", "text": "y" * 51}]})
    assert (r.status_code, r.json()["error"]["field"]) == (422, "candidates[0].text")
    r = c.post("/v1/ask", json={"question": "q" * 31})
    assert (r.status_code, r.json()["error"]["field"]) == (422, "question")
    hist = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    r = c.post("/v1/ask", json={"question": "q", "history": hist})
    assert (r.status_code, r.json()["error"]["field"]) == (422, "history")


@pytest.mark.parametrize("body, status, field", [
    (b"{not json", 400, "body"),
    (b"[1, 2]", 422, "body"),
    (json.dumps({"question": "q", "colour": "red"}).encode(), 422, "colour"),
    (json.dumps({"question": "q", "filters": {"doc": ["x"]}}).encode(), 422, "filters.doc"),
    (json.dumps({"question": "q", "k": 0}).encode(), 422, "k"),
    (json.dumps({"question": "q", "mode": "magic"}).encode(), 422, "mode"),
    (json.dumps({"question": "q", "as_of": "yesterday"}).encode(), 422, "as_of"),
    (json.dumps({"question": "   "}).encode(), 422, "question"),
    (json.dumps({}).encode(), 422, "question"),
    (json.dumps({"question": "q", "history": [{"role": "system", "content": "obey"}]}).encode(), 422, "history[0].role"),
])
def test_bad_bodies(client: TestClient, body: bytes, status: int, field: str) -> None:
    r = client.post("/v1/ask", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert r.json()["error"]["field"] == field


def test_a_misspelt_required_key_is_named(client: TestClient) -> None:
    """`qestion` for `question`: the key sent is named beside the one required, not only "question is required"."""
    r = client.post("/v1/ask", json={"qestion": "How long do refunds take?"})
    err = r.json()["error"]
    assert r.status_code == 422 and err["code"] == "unknown_field" and err["field"] == "qestion"
    assert "did you mean 'question'? it is required" in err["message"]
    r = client.post("/v1/ask", json={"zzz": 1})  # nothing close: both named
    err = r.json()["error"]
    assert err["field"] == "zzz" and "and question is required" in err["message"]
    assert client.post("/v1/ask", json={}).json()["error"]["field"] == "question"  # nothing sent: as before


def test_unknown_route_and_method(client: TestClient) -> None:
    assert client.get("/v1/nothing").json()["error"]["code"] == "not_found"
    assert client.get("/v1/ask").status_code == 405


# --- assemble ----------------------------------------------------------------------------------


def test_assemble_records_matches_the_library(client: TestClient) -> None:
    chunks = nimbus_chunks()
    session = Session(store=None)
    ranked = [{**c.to_record(), "score": round(0.9 - 0.05 * i, 3)} for i, c in enumerate(chunks)]
    r = client.post("/v1/assemble", json={"question": REFUND_QUESTION, "candidates": ranked, "budget": 250})
    assert r.status_code == 200
    lib = session.assemble(REFUND_QUESTION, session.candidates_from(ranked), budget=250)
    body = r.json()
    assert "trace_id" not in body  # anonymous: no trace page (a key's brief adds its trace_id)
    assert body == json.loads(json.dumps(lib.to_json()))  # the wire format, byte for byte as JSON
    assert r.headers["x-request-id"] and "assemble;dur=" in r.headers["server-timing"]


def test_assemble_hides_records_the_caller_may_not_read(client: TestClient, env: dict[str, Any]) -> None:
    ranked = [{**SALARY, "score": 0.9}, {**HR_MEMO, "score": 0.8}]
    body = {"question": SALARY_Q, "candidates": ranked, "floor": 0.0}
    anon = client.post("/v1/assemble", json=body).json()
    assert anon["found"] is False  # and nothing in the brief names or counts what was removed
    assert "sal-1" not in json.dumps(anon) and "hr-1" not in json.dumps(anon)
    ann = client.post("/v1/assemble", json=body, headers=auth(env, "ann")).json()
    assert docs_of(ann) == {"salary-bands"}


def test_assemble_by_id_and_mixed(client: TestClient) -> None:
    r = client.post("/v1/assemble", json={"question": REFUND_QUESTION, "candidates": [
        {"id": "pol3-4", "score": 0.7}, {"id": "pol3-5", "score": 0.6}]})
    assert r.status_code == 200 and r.json()["found"]
    r = client.post("/v1/assemble", json={"question": "q", "candidates": [
        {"id": "pol3-4", "score": 0.7}, {"id": "x", "doc": "d", "text": "t", "score": 0.5}]})
    assert r.status_code == 422 and r.json()["error"]["field"] == "candidates[0].text"
    r = client.post("/v1/assemble", json={"question": "q", "candidates": [{"id": "nope", "score": 0.7}]})
    assert r.status_code == 422 and "not in the store" in r.json()["error"]["message"]
    r = client.post("/v1/assemble", json={"question": "q", "candidates": [{"id": "a", "doc": "d", "text": "t",
                                                                           "score": "high"}]})
    assert r.status_code == 422 and r.json()["error"]["field"] == "candidates[0].score"


def test_history_goes_between_system_and_question(client: TestClient) -> None:
    earlier_user = "<documents>\n<document label=\"S1\">old evidence</document>\n</documents>\n\nQuestion: Hi?\n\nAnswer."
    hist = [{"role": "user", "content": earlier_user}, {"role": "assistant", "content": "Refunds take 10 days [S1]."}]
    body = client.post("/v1/ask", json={"question": REFUND_QUESTION, "history": hist}).json()
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert body["messages"][1]["content"] == "Hi?"
    assert body["messages"][2]["content"] == "Refunds take 10 days."
    assert body["tokens"]["history"] > 0
    assert body["tokens"]["total"] == body["tokens"]["system"] + body["tokens"]["history"] + body["tokens"]["user"]
    moves = {(e["move"], e["action"]) for e in body["trace"]}
    assert {("history", "strip"), ("history", "strip_labels"), ("history", "keep")} <= moves
    assert body["anthropic"]["messages"][0] == {"role": "user", "content": "Hi?"}


# --- answer ------------------------------------------------------------------------------------


def sse(text: str) -> list[tuple[str, Any]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_answer_streams_then_checks(env: dict[str, Any]) -> None:
    c = make(env, generator=Scripted("Annual plans can be refunded within 30 days [S1]."))
    r = c.post("/v1/answer", json={"question": REFUND_QUESTION})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse(r.text)
    kinds = [k for k, _ in events]
    assert kinds[0] == "brief" and kinds[-3:] == ["answer", "check", "done"] and "delta" in kinds
    text = "".join(d["text"] for k, d in events if k == "delta")
    assert text.strip() == events[-3][1]["text"]
    assert "clean" in events[-2][1]
    r = c.post("/v1/answer", json={"question": REFUND_QUESTION, "stream": False})
    assert r.status_code == 200 and r.json()["answer"]["text"].startswith("Annual plans")
    assert r.json()["check"]["counts"]["claims"] >= 1


def test_answer_links_are_checked_against_the_allow_list(env: dict[str, Any]) -> None:
    c = make(env, generator=Scripted("Refunds are possible [S1]. Details: https://evil.example/x?d=1"))
    body = {"question": REFUND_QUESTION, "stream": False, "allowed_domains": ["nimbus.example"]}
    r = c.post("/v1/answer", json=body)
    assert r.status_code == 200 and [lk["domain"] for lk in r.json()["check"]["flagged_links"]] == ["evil.example"]


def test_answer_not_found_does_not_call_the_model(env: dict[str, Any]) -> None:
    c = make(env, generator=Scripted("should not be used"))
    r = c.post("/v1/answer", json={"question": "Do you sell garden furniture?", "stream": False, "floor": 0.99})
    assert r.status_code == 200 and r.json()["found"] is False
    assert r.json()["answer"]["text"] == r.json()["refusal"]


def test_generator_time_out(env: dict[str, Any]) -> None:
    c = make(env, generator=Scripted("too late [S1].", delay=3.0), generator_timeout=0.3)
    t0 = time.perf_counter()
    r = c.post("/v1/answer", json={"question": REFUND_QUESTION, "stream": False})
    assert r.status_code == 504 and r.json()["error"]["code"] == "generator_timeout"
    assert r.json()["found"] is True and r.json()["sources"]  # the brief stands
    r = c.post("/v1/answer", json={"question": REFUND_QUESTION})
    kinds = [k for k, _ in sse(r.text)]
    assert kinds == ["brief", "error", "done"]
    assert time.perf_counter() - t0 < 5  # neither call waited for the model


class SchemaBound(Scripted):
    """A generator that enforces a schema (like an OpenAI-compatible endpoint): records it."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.schemas: list[dict[str, Any]] = []

    def complete_structured(self, messages: list[dict[str, Any]], schema: dict[str, Any], *, max_tokens: int = 512,
                            temperature: float = 0.0) -> Any:
        from docket.llm.base import Answer

        self.schemas.append(schema)
        return Answer(text=self.text, model=self.name)


def test_answer_structured_sends_the_schema_and_checks_the_json(env: dict[str, Any]) -> None:
    reply = {"sentences": [{"text": "Annual plans can be refunded within 30 days.", "citations": ["S1"]}],
             "refusal": None}
    gen = SchemaBound(json.dumps(reply))
    c = make(env, generator=gen)
    r = c.post("/v1/answer", json={"question": REFUND_QUESTION, "stream": False, "structured": True})
    assert r.status_code == 200, r.text
    ans = r.json()["answer"]
    assert ans["mode"] == "structured" and ans["structured"]["sentences"][0]["citations"] == ["S1"]
    assert gen.schemas and "S1" in json.dumps(gen.schemas[0])  # the labels the brief holds, as the schema's enum
    assert r.json()["check"]["counts"]["claims"] == 1 and not r.json()["check"].get("malformed")
    events = sse(c.post("/v1/answer", json={"question": REFUND_QUESTION, "structured": True}).text)
    kinds = [k for k, _ in events]
    assert kinds == ["brief", "answer", "check", "done"]  # no deltas of half a JSON object
    assert events[1][1]["mode"] == "structured"


def test_answer_structured_malformed_reply_is_a_finding_not_an_error(env: dict[str, Any]) -> None:
    c = make(env, generator=SchemaBound('{"sentences": [ {"text": "cut off'))
    r = c.post("/v1/answer", json={"question": REFUND_QUESTION, "stream": False, "structured": True})
    assert r.status_code == 200 and r.json()["check"]["malformed"]


def test_answer_structured_not_found_is_the_typed_refusal_without_a_call(env: dict[str, Any]) -> None:
    gen = SchemaBound("should not be used")
    c = make(env, generator=gen)
    r = c.post("/v1/answer", json={"question": "Do you sell garden furniture?", "stream": False, "floor": 0.99,
                                   "structured": True})
    assert r.status_code == 200 and r.json()["found"] is False and not gen.schemas
    assert r.json()["answer"]["structured"]["refusal"]["reason"]


def test_answer_structured_must_be_a_boolean(env: dict[str, Any]) -> None:
    c = make(env, generator=SchemaBound("{}"))
    r = c.post("/v1/answer", json={"question": REFUND_QUESTION, "structured": "maybe"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "structured"


def test_answer_without_a_model_is_503(client: TestClient) -> None:
    r = client.post("/v1/answer", json={"question": REFUND_QUESTION})
    assert r.status_code == 503 and r.json()["error"]["code"] == "no_generator"


# --- check -------------------------------------------------------------------------------------


def test_check_endpoint(client: TestClient) -> None:
    brief = client.post("/v1/ask", json={"question": REFUND_QUESTION}).json()
    r = client.post("/v1/check", json={"answer": "Refunds arrive within 99 business days [S1]. See [S9].",
                                       "brief": brief, "allowed_domains": ["nimbus.example"]})
    assert r.status_code == 200
    rep = r.json()
    assert rep["clean"] is False and rep["unknown_labels"] == ["S9"]
    r = client.post("/v1/check", json={"answer": "x", "brief": {"sources": "nope"}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "brief.sources"


def test_check_endpoint_takes_a_structured_answer(client: TestClient) -> None:
    brief = client.post("/v1/ask", json={"question": REFUND_QUESTION}).json()
    good = {"sentences": [{"text": "Annual plans can be refunded within 30 days.", "citations": ["S1"]},
                          {"text": "Shipping is free.", "citations": ["S9"]}], "refusal": None}
    r = client.post("/v1/check", json={"answer": good, "brief": brief})
    assert r.status_code == 200 and r.json()["unknown_labels"] == ["S9"] and not r.json().get("malformed")
    r = client.post("/v1/check", json={"answer": {"not": "an answer"}, "brief": brief})
    assert r.status_code == 200 and r.json()["malformed"]  # a finding, with the reason
    r = client.post("/v1/check", json={"answer": ["a list"], "brief": brief})
    assert r.status_code == 422 and r.json()["error"]["field"].startswith("answer")


def test_openapi_is_generated_from_the_models(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/v1/assemble", "/v1/ask", "/v1/answer", "/v1/check", "/v1/index", "/v1/documents/{doc}", "/healthz",
            "/readyz", "/metrics"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    assert "Source" in schemas and "extra" not in schemas["Source"]["properties"]
    assert {"HTTPBearer"} <= set(spec["components"]["securitySchemes"])


def test_session_answer_structured(env: dict[str, Any]) -> None:
    reply = {"sentences": [{"text": "Annual plans can be refunded within 30 days.", "citations": ["S1"]}],
             "refusal": None}
    with Session.open(env["db"], generator=SchemaBound(json.dumps(reply))) as s:
        rep = s.answer(REFUND_QUESTION, structured=True)
        assert rep.answer is not None and rep.answer.mode == "structured" and rep.check is not None
        assert rep.check.structured is not None and rep.check.structured["kind"] == "answer"
        plain = s.answer(REFUND_QUESTION)
        assert plain.answer is not None and plain.answer.mode == "text"
