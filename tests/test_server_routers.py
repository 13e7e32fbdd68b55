"""The service as parts (docket.service): the state on app.state, one router per group, and every
declared response model enforced on the body that is sent."""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="pip install 'docket[server]'")
from fastapi.routing import APIRoute  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from docket.api import Session  # noqa: E402
from docket.demo import REFUND_QUESTION, nimbus_chunks  # noqa: E402
from docket.keys import KeyFile  # noqa: E402
from docket.schemas import BriefOut, CheckOut  # noqa: E402
from docket.server import ApiError, ServerConfig, ServiceState, create_app  # noqa: E402
from docket.service import briefs, ops, responses, store  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src" / "docket"
SECRET = "the-secret-passage-text"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("routers")
    db = str(tmp / "r.db")
    with Session.open(db, create=True) as s:
        assert s.index(records=[c.to_record() for c in nimbus_chunks()]).ok
    kf = KeyFile(tmp / "keys.json")
    return {"db": db, "keys": str(tmp / "keys.json"), "ops": kf.add("ops", "ops", admin=True)}


def make(env: dict[str, Any]) -> tuple[TestClient, ServiceState]:
    app = create_app(ServerConfig(db=env["db"], keys=env["keys"]), session=Session.open(env["db"]))
    state = app.state.service
    assert isinstance(state, ServiceState) and app.state.session is state.session
    return TestClient(app), state


def candidates() -> list[dict[str, Any]]:
    return [{"id": c.id, "doc": c.doc, "text": c.text, "score": 1.0 - i / 10} for i, c in enumerate(nimbus_chunks()[:4])]


def test_every_route_is_on_a_router_with_its_declared_model(env: dict[str, Any]) -> None:
    c, _ = make(env)
    routes = {(r.path, m): r for router in (ops.router, briefs.router, store.router) for r in router.routes
              if isinstance(r, APIRoute) for m in r.methods}
    models = {(p, m): getattr(r.response_model, "__name__", None) for (p, m), r in routes.items()}
    assert models == {("/healthz", "GET"): "dict", ("/readyz", "GET"): None, ("/metrics", "GET"): None,
                      ("/v1/assemble", "POST"): "BriefOut", ("/v1/ask", "POST"): "BriefOut",
                      ("/v1/answer", "POST"): "AnswerOut", ("/v1/trace/{trace_id}", "GET"): None,
                      ("/v1/check", "POST"): "CheckOut", ("/v1/index", "POST"): "IndexOut",
                      ("/v1/documents/{doc:path}", "DELETE"): "DeleteOut"}
    served = {(p, m.upper()) for p, ops_ in c.get("/openapi.json").json()["paths"].items() for m in ops_}
    assert served == {(p.replace(":path", ""), m) for p, m in routes}  # the app serves the routers' routes and nothing else


def test_a_valid_body_is_sent_byte_for_byte_as_built(env: dict[str, Any]) -> None:
    c, state = make(env)
    r = c.post("/v1/assemble", json={"question": REFUND_QUESTION, "candidates": candidates()})
    assert r.status_code == 200, r.text
    BriefOut.model_validate(r.json())
    # the bytes are JSONResponse's rendering of the dict the route built, not a re-serialised model
    assert r.content == json.dumps(r.json(), ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize("route", ["assemble", "ask", "check"])
def test_a_body_that_breaks_its_model_is_a_logged_500_not_sent(env: dict[str, Any], route: str,
                                                               caplog: pytest.LogCaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    c, state = make(env)
    if route == "check":
        class Bad:
            def to_json(self) -> dict[str, Any]:
                return {"clean": "not-a-bool", "unknown_labels": [SECRET]}

        monkeypatch.setattr(state.session, "check", lambda *a, **k: Bad())
        body: dict[str, Any] = {"answer": "x [S1].", "brief": {"sources": {}}}
    else:
        real = state.brief_json

        def broken(*a: Any, **k: Any) -> dict[str, Any]:
            out = real(*a, **k)
            out.pop("found")
            out["messages"] = [{"role": "system", "content": 42}]
            out["question"] = [SECRET]
            return out

        monkeypatch.setattr(state, "brief_json", broken)
        body = {"question": REFUND_QUESTION, "candidates": candidates()} if route == "assemble" else \
            {"question": REFUND_QUESTION}
    with caplog.at_level(logging.ERROR, logger="docket.server"):
        r = c.post(f"/v1/{route}", json=body)
    assert r.status_code == 500, r.text
    err = r.json()["error"]
    assert err["code"] == "internal" and ("BriefOut" in err["message"] or "CheckOut" in err["message"])
    assert SECRET not in r.text
    lines = [json.loads(rec.getMessage()) for rec in caplog.records if rec.getMessage().startswith("{")]
    bad = [x for x in lines if x.get("event") == "response_invalid"]
    assert bad and bad[0]["problems"] and bad[0]["id"] == r.headers["x-request-id"]
    assert SECRET not in caplog.text  # the log names fields and error types, never values


def test_check_body_names_the_model_and_the_fields() -> None:
    class Req:
        class state:  # noqa: N801 - a stand-in for request.state
            request_id = "rid-1"

    good = {"clean": True, "unknown_labels": [], "uncited_sentences": [], "unsupported": [], "flagged_links": [],
            "refusal": False, "counts": {}, "extra": "kept"}
    responses.check_body(CheckOut, good, Req())  # type: ignore[arg-type]
    with pytest.raises(ApiError) as e:
        responses.check_body(CheckOut, {**good, "counts": {"n": "many"}}, Req())  # type: ignore[arg-type]
    assert e.value.status == 500 and "CheckOut" in e.value.message and "rid-1" in e.value.message


def test_service_units_stay_small() -> None:
    """No function over 80 lines, no module over 600, in the service (issue 19)."""
    files = [SRC / "server.py", *sorted((SRC / "service").glob("*.py"))]
    for path in files:
        text = path.read_text()
        assert text.count("\n") <= 600, path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                assert n <= 80, f"{path.name}:{node.name} has {n} lines"
