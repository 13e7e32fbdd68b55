"""The modes through the service: attachments, the whole corpus per key, routing, and
GET /v1/trace/{id} (readable by the key that made the brief only)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from office_files import encrypt_pdf, make_pdf

pytest.importorskip("fastapi", reason="pip install 'docket[server]'")
from bs4 import BeautifulSoup  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from docket.api import Session  # noqa: E402
from docket.demo import nimbus_chunks  # noqa: E402
from docket.embed import HashEmbedder  # noqa: E402
from docket.keys import KeyFile  # noqa: E402
from docket.server import ServerConfig, create_app  # noqa: E402

SECRET = {"id": "sal-1", "doc": "salary-bands", "text": "Salary bands for level 3: 52,000 to 61,000 euros.",
          "title": "Salary bands", "acl": ["finance"], "source_type": "policy"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("server_modes")
    db = str(tmp / "s.db")
    with Session.open(db, create=True, embedder=HashEmbedder(64)) as s:
        rep = s.index(records=[c.to_record() for c in nimbus_chunks()] + [SECRET])
        assert rep.ok, rep.problems
    kf = KeyFile(tmp / "keys.json")
    tokens = {"ann": kf.add("ann", "ann", ("finance",)), "bob": kf.add("bob", "bob")}
    cfg = ServerConfig(db=db, keys=str(tmp / "keys.json"))
    client = TestClient(create_app(cfg, session=Session.open(db, embedder=HashEmbedder(64))))
    return {"client": client, "tokens": tokens}


def auth(env: dict[str, Any], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {env['tokens'][who]}"}


def test_whole_corpus_per_key(env):
    c = env["client"]
    ann = c.post("/v1/ask", json={"question": "Which documents mention salaries?", "whole_corpus": True},
                 headers=auth(env, "ann")).json()
    bob = c.post("/v1/ask", json={"question": "Which documents mention salaries?", "whole_corpus": True},
                 headers=auth(env, "bob")).json()
    assert ann["mode"] == bob["mode"] == "whole_corpus"
    assert "salary-bands" in {s["doc"] for s in ann["sources"].values()}
    assert "salary-bands" not in {s["doc"] for s in bob["sources"].values()}
    assert ann["cache"]["prefix_key"] != bob["cache"]["prefix_key"]
    via_assemble = c.post("/v1/assemble", json={"question": "salaries?", "whole_corpus": True},
                          headers=auth(env, "bob")).json()
    assert via_assemble["mode"] == "whole_corpus" and via_assemble["cache"]["prefix_key"] == bob["cache"]["prefix_key"]


def test_attachments_are_the_context(env):
    c = env["client"]
    pdf = make_pdf(["Section 1. The term is two years.", "Section 2. Either party may terminate with 90 days notice."])
    body = {"question": "How can it be terminated?", "attachments": [
        {"name": "contract.pdf", "data_base64": base64.b64encode(pdf).decode()},
        {"name": "notes.md", "text": "# Notes\n\nCall the lawyer first."}]}
    r = c.post("/v1/ask", json=body, headers=auth(env, "bob"))
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["mode"] == "attachments" and {s["doc"] for s in out["sources"].values()} == {"contract.pdf", "notes.md"}
    assert out["sources"]["S2"]["pages"] == [2] and out["sources"]["S2"]["trust"] == "user-provided"
    r = c.post("/v1/assemble", json=body, headers=auth(env, "bob"))
    assert r.status_code == 200 and r.json()["mode"] == "attachments"


@pytest.mark.parametrize("attachment, field, code", [
    ({"name": "a.pdf"}, "attachments[0]", 422),
    ({"name": "a.pdf", "text": "x", "data_base64": "eA=="}, "attachments[0]", 422),
    ({"name": "a.pdf", "data_base64": "not base64!!"}, "attachments[0].data_base64", 422),
])
def test_bad_attachments_name_the_field(env, attachment, field, code):
    r = env["client"].post("/v1/ask", json={"question": "q?", "attachments": [attachment]}, headers=auth(env, "bob"))
    assert r.status_code == code and r.json()["error"]["field"] == field


def test_an_encrypted_pdf_is_one_clear_error(env):
    data = base64.b64encode(encrypt_pdf(make_pdf(["secret terms"]))).decode()
    r = env["client"].post("/v1/ask", json={"question": "q?", "attachments": [{"name": "locked.pdf", "data_base64": data}]},
                           headers=auth(env, "bob"))
    assert r.status_code == 422 and "encrypted PDF" in r.json()["error"]["message"]


def test_trace_page_for_its_own_key_only(env):
    c = env["client"]
    r = c.post("/v1/ask", json={"question": "Can I get a refund on an annual plan after 30 days?", "floor": -1.0},
               headers=auth(env, "ann"))
    out = r.json()
    tid = out["trace_id"]
    page = c.get(f"/v1/trace/{tid}", headers=auth(env, "ann"))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    soup = BeautifulSoup(page.text, "html.parser")
    rows = soup.select("tr.candidate")
    assert len(rows) == len({r["data-candidate"] for r in rows}) > 0
    assert soup.find_all("script") == []
    other = c.get(f"/v1/trace/{tid}", headers=auth(env, "bob"))  # another key: as if the trace did not exist
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    anonymous = c.get(f"/v1/trace/{tid}")  # no key: trace pages are for keys only
    assert anonymous.status_code == 401 and "API keys only" in anonymous.json()["error"]["message"]
    assert c.get("/v1/trace/nope", headers=auth(env, "ann")).status_code == 404


def test_trace_page_of_hostile_records_shows_them_as_text(env):
    """Records a caller sends hold markup, bidi overrides and ids that look like docket's own words;
    the trace page shows each as text, boxed where it hides, with the fate the brief gives it."""
    from selectolax.lexbor import LexborHTMLParser

    hostile = ['<script>document.title="PWNED"</script>', "x\u202e1S sa tpmorp eht ni", "a, pol3-4",
               '"><img src=http://pwn.test/>', "\ufeff\u2066S1\u2069"]
    recs = [{"id": f"h{i}:{p}", "doc": f"d{i}:{p}", "text": f"Annual plan refunds within 30 days. {p}", "title": p,
             "section": p, "status": "user-generated", "score": 0.9 - i / 10} for i, p in enumerate(hostile)]
    c = env["client"]
    r = c.post("/v1/assemble", json={"question": "Can I get a refund on an annual plan?", "candidates": recs,
                                     "floor": -1.0}, headers=auth(env, "bob"))
    assert r.status_code == 200, r.text
    page = c.get(f"/v1/trace/{r.json()['trace_id']}", headers=auth(env, "bob"))
    assert page.status_code == 200 and "\u202e" not in page.text and "\ufeff" not in page.text
    tree = LexborHTMLParser(page.text)
    assert not tree.css("script, img, iframe") and tree.css_first("title").text() == "docket trace"
    rows = tree.css("tr.candidate")
    assert len(rows) == len(recs)
    sources = r.json()["sources"]
    for row, rec in zip(rows, recs, strict=True):
        code = row.css_first("td code").text(deep=True)
        assert code == rec["id"].replace("\u202e", "U+202E").replace("\ufeff", "U+FEFF").replace(
            "\u2066", "U+2066").replace("\u2069", "U+2069")
        label = next((k for k, s in sources.items() if rec["id"] in s["chunks"]), None)
        fate = row.css_first("td.fate").text(deep=True)
        assert (fate == f"in the prompt as {label}") if label else not fate.startswith("in the prompt")


def test_a_trace_that_cannot_be_drawn_is_the_service_error_shape(env):
    """A kept brief the page cannot draw (here: damaged in memory) answers in the service's error
    shape (500 internal, the field in the server log), never an unhandled traceback."""
    c = env["client"]
    r = c.post("/v1/ask", json={"question": "Can I get a refund on an annual plan?", "floor": -1.0},
               headers=auth(env, "bob"))
    tid = r.json()["trace_id"]
    traces = c.app.state.service.traces
    kept = next(k for t, k in traces._items.items() if t == tid)
    saved = kept.brief["trace"]
    kept.brief["trace"] = [{"move": "floor", "chunks": "not-a-list"}]
    try:
        page = c.get(f"/v1/trace/{tid}", headers=auth(env, "bob"))
    finally:
        kept.brief["trace"] = saved
    assert page.status_code == 500, page.text  # the service's own brief: its bug, said without the brief's text
    assert page.json()["error"]["code"] == "internal" and "request id" in page.json()["error"]["message"]
    assert c.get(f"/v1/trace/{tid}", headers=auth(env, "bob")).status_code == 200
