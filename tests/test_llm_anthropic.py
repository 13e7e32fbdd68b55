"""Anthropic's native citations, mapped back to docket labels, against a fake Messages API."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("anthropic")

from docket.check import check_answer  # noqa: E402
from docket.llm import errors as E  # noqa: E402
from docket.llm import generator_from_url  # noqa: E402
from docket.llm.anthropic_gen import AnthropicGenerator, document_labels, render_cited  # noqa: E402

ANNUAL = ("Annual plans: you can cancel within 30 days of purchase for a full refund. After 30 days, we refund the "
          "unused whole months, minus an early-termination fee. The early-termination fee is 15% of the refunded amount.")
PAYOUTS = "Refunds go back to the original payment method within 10 business days."


def doc(label: str, title: str, text: str) -> dict[str, Any]:
    return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text},
            "title": f"{label}: {title}", "context": f"label={label}; status=current", "citations": {"enabled": True}}


REQUEST = {"system": "Answer from the documents.",
           "messages": [{"role": "user", "content": [doc("S1", "Nimbus refund policy", ANNUAL),
                                                      doc("S2", "Nimbus refund policy", PAYOUTS),
                                                      {"type": "text", "text": "Question: refund after 30 days?"}]}]}
SOURCES = {"S1": {"doc": "refund-policy", "version": 3, "chunks": ["pol3-4", "pol3-5"], "title": "Nimbus refund policy",
                  "section": "Annual plans", "status": "current", "text": ANNUAL},
           "S2": {"doc": "refund-policy", "version": 3, "chunks": ["pol3-6"], "title": "Nimbus refund policy",
                  "section": "Payouts", "status": "current", "text": PAYOUTS}}


class FakeBrief(SimpleNamespace):
    def anthropic(self) -> dict[str, Any]:
        return REQUEST


BRIEF = FakeBrief(found=True, sources=SOURCES, refusal="I do not know from the provided sources.",
                  messages=[{"role": "system", "content": "x"}, {"role": "user", "content": "y"}])

RESPONSE = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "end_turn",
    "stop_sequence": None, "usage": {"input_tokens": 120, "output_tokens": 30},
    "content": [
        {"type": "text", "text": "Yes. "},
        {"type": "text", "text": "After 30 days you get the unused whole months back, minus an early-termination fee",
         "citations": [{"type": "char_location", "cited_text": "After 30 days, we refund the unused whole months, minus an early-termination fee.",
                        "document_index": 0, "document_title": "S1: Nimbus refund policy", "start_char_index": 76, "end_char_index": 156}]},
        {"type": "text", "text": ". "},
        {"type": "text", "text": "The money goes back to your original payment method within 10 business days.",
         "citations": [{"type": "char_location", "cited_text": PAYOUTS, "document_index": 1,
                        "document_title": "S2: Nimbus refund policy", "start_char_index": 0, "end_char_index": len(PAYOUTS)}]},
    ],
}


class FakeAnthropic:
    def __init__(self) -> None:
        self.script: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                fake.requests.append({"path": self.path, "body": body, "key": self.headers.get("x-api-key") or self.headers.get("authorization", "").removeprefix("Bearer ")})
                status, payload = fake.script.pop(0) if fake.script else (200, RESPONSE)
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def api():
    s = FakeAnthropic()
    yield s
    s.close()


def test_document_labels() -> None:
    assert document_labels(REQUEST) == ["S1", "S2"]
    untitled = {"messages": [{"role": "user", "content": [{"type": "document"}, {"type": "document", "title": "S7: x"}]}]}
    assert document_labels(untitled) == ["S1", "S7"]


def test_native_citations_become_labels(api: FakeAnthropic) -> None:
    gen = AnthropicGenerator("claude-test", api_key="k", base_url=api.url, timeout=5)
    ans = gen.answer_brief(BRIEF, max_tokens=200)
    assert ans.text == ("Yes. After 30 days you get the unused whole months back, minus an early-termination fee [S1]. "
                        "The money goes back to your original payment method within 10 business days [S2].")
    assert [(c.label, c.start, c.end, c.document_index) for c in ans.citations] == [("S1", 76, 156, 0), ("S2", 0, len(PAYOUTS), 1)]
    assert ans.usage == {"prompt_tokens": 120, "completion_tokens": 30}
    sent = api.requests[0]
    assert sent["path"] == "/v1/messages" and sent["key"] == "k"
    assert sent["body"]["system"] == REQUEST["system"] and sent["body"]["messages"] == REQUEST["messages"]
    # the same checker works on the rendered answer
    report = check_answer(ans.text, {"sources": SOURCES, "refusal": BRIEF.refusal})
    assert report.clean, report.to_json()


def test_plain_messages(api: FakeAnthropic) -> None:
    gen = AnthropicGenerator("claude-test", api_key="k", base_url=api.url, timeout=5)
    gen.generate([{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"}])
    body = api.requests[0]["body"]
    assert body["system"] == "rules" and body["messages"] == [{"role": "user", "content": "hi"}]


def test_errors(api: FakeAnthropic) -> None:
    gen = AnthropicGenerator("claude-nope", api_key="bad", base_url=api.url, timeout=5, backoff=0.01)
    api.script.append((401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}))
    with pytest.raises(E.AuthError, match="ANTHROPIC_API_KEY"):
        gen.answer_brief(BRIEF)
    api.script.append((404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}}))
    with pytest.raises(E.ModelNotFound, match="claude-nope"):
        gen.answer_brief(BRIEF)
    api.script += [(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), (200, RESPONSE)]
    assert gen.answer_brief(BRIEF).text.startswith("Yes.")


def test_render_inserts_labels_before_punctuation() -> None:
    block = SimpleNamespace(type="text", text="Fees are 15%.", citations=[SimpleNamespace(document_index=0, cited_text="15%")])
    text, cits = render_cited([block], ["S4"])
    assert text == "Fees are 15% [S4]." and cits[0].label == "S4"
    already = SimpleNamespace(type="text", text="Fees are 15% [S4].", citations=[SimpleNamespace(document_index=0)])
    assert render_cited([already], ["S4"])[0] == "Fees are 15% [S4]."


def test_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    g = generator_from_url("anthropic", model="claude-x")
    assert isinstance(g, AnthropicGenerator) and g.model == "claude-x"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("DOCKET_LLM_API_KEY", raising=False)
    with pytest.raises(E.NotConfigured, match="ANTHROPIC_API_KEY"):
        generator_from_url("anthropic")
