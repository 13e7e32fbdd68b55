"""The OpenAI-compatible generator against a tiny fake server on 127.0.0.1.

Each failure an endpoint can produce (refused, timeout, 401, 429, 5xx, malformed JSON, wrong
model) must become one clear `LLMError` line; 429/5xx are retried with backoff.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("openai")

from docket.llm import errors as E  # noqa: E402
from docket.llm import generator_from_url  # noqa: E402
from docket.llm.openai_compat import OpenAICompatGenerator  # noqa: E402

MESSAGES = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Hi?"}]


def completion(text: str, model: str = "tiny") -> dict[str, Any]:
    return {
        "id": "c1", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


class FakeServer:
    """Answers POST /v1/chat/completions from a script of (status, body, headers, delay) steps."""

    def __init__(self, models: list[str] | None = None) -> None:
        self.script: list[tuple[int, Any, dict[str, str], float]] = []
        self.models = models if models is not None else ["tiny"]
        self.calls: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                hdrs = {"Content-Type": "application/json", **(headers or {})}
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "me"} for m in fake.models]})
                else:
                    self._send(404, {"error": {"message": "no such route"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(length) or b"{}")
                fake.calls.append(req)
                status, body, headers, delay = fake.script.pop(0) if fake.script else (200, completion("ok"), {}, 0.0)
                if delay:
                    time.sleep(delay)
                if req.get("stream") and status == 200 and isinstance(body, dict) and "choices" in body:
                    text = body["choices"][0]["message"]["content"]
                    parts = [text[i : i + 4] for i in range(0, len(text), 4)]
                    events = b""
                    for p in parts:
                        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "tiny",
                                 "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
                        events += b"data: " + json.dumps(chunk).encode() + b"\n\n"
                    events += b"data: [DONE]\n\n"
                    self._send(200, events, {"Content-Type": "text/event-stream"})
                    return
                self._send(status, body, headers)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def gen(url: str, **kw: Any) -> OpenAICompatGenerator:
    kw.setdefault("timeout", 5.0)
    kw.setdefault("backoff", 0.01)
    return OpenAICompatGenerator(url, kw.pop("model", "tiny"), **kw)


def one_line(e: BaseException) -> str:
    s = str(e)
    assert "\n" not in s and s
    return s


def test_success_and_usage(server: FakeServer) -> None:
    server.script.append((200, completion("  Refunds take 10 business days [S1].  "), {}, 0.0))
    ans = gen(server.url).complete(MESSAGES, max_tokens=50)
    assert ans.text == "Refunds take 10 business days [S1]."
    assert ans.usage == {"prompt_tokens": 7, "completion_tokens": 3}
    assert server.calls[0]["max_tokens"] == 50 and server.calls[0]["model"] == "tiny"


def test_stream_joins_to_the_answer(server: FakeServer) -> None:
    server.script.append((200, completion("Refunds take 10 business days [S1]."), {}, 0.0))
    pieces = list(gen(server.url).stream(MESSAGES))
    assert len(pieces) > 1 and "".join(pieces) == "Refunds take 10 business days [S1]."


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(E.EndpointUnreachable) as ei:
        gen(f"http://127.0.0.1:{port}/v1").generate(MESSAGES)
    assert "connection refused" in one_line(ei.value) and str(port) in str(ei.value)


def test_timeout(server: FakeServer) -> None:
    server.script.append((200, completion("late"), {}, 1.5))
    t0 = time.perf_counter()
    with pytest.raises(E.EndpointTimeout) as ei:
        gen(server.url, timeout=0.3).generate(MESSAGES)
    assert time.perf_counter() - t0 < 1.4  # not retried
    assert "0.3 s" in one_line(ei.value)


def test_401(server: FakeServer) -> None:
    server.script.append((401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}, {}, 0.0))
    with pytest.raises(E.AuthError) as ei:
        gen(server.url).generate(MESSAGES)
    msg = one_line(ei.value)
    assert "401" in msg and "API key" in msg
    assert len(server.calls) == 1  # never retried


def test_429_then_success(server: FakeServer) -> None:
    server.script += [(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}, 0.0),
                      (429, {"error": {"message": "slow down"}}, {}, 0.0),
                      (200, completion("fine [S1]."), {}, 0.0)]
    assert gen(server.url, retries=3).generate(MESSAGES) == "fine [S1]."
    assert len(server.calls) == 3


def test_429_gives_up(server: FakeServer) -> None:
    server.script += [(429, {"error": {"message": "slow down"}}, {}, 0.0)] * 3
    with pytest.raises(E.RateLimited) as ei:
        gen(server.url, retries=2).generate(MESSAGES)
    assert "429" in one_line(ei.value) and "3 attempts" in str(ei.value)


def test_500_retried_then_error(server: FakeServer) -> None:
    server.script += [(500, {"error": {"message": "boom"}}, {}, 0.0)] * 2
    with pytest.raises(E.ServerError) as ei:
        gen(server.url, retries=1).generate(MESSAGES)
    assert "500" in one_line(ei.value) and "boom" in str(ei.value)
    assert len(server.calls) == 2


def test_500_then_success(server: FakeServer) -> None:
    server.script += [(503, {"error": {"message": "loading"}}, {}, 0.0), (200, completion("ok [S1]."), {}, 0.0)]
    assert gen(server.url).generate(MESSAGES) == "ok [S1]."


@pytest.mark.parametrize("body", [b"this is not json", b'{"id": "x", "choices": []}', b'{"choices": [{"message": {"content": null}}]}'])
def test_malformed(server: FakeServer, body: bytes) -> None:
    server.script.append((200, body, {}, 0.0))
    with pytest.raises(E.MalformedResponse) as ei:
        gen(server.url).generate(MESSAGES)
    assert "malformed" in one_line(ei.value) or "not a chat completion" in str(ei.value) or "no text" in str(ei.value)


def test_wrong_model_404_lists_served_models(server: FakeServer) -> None:
    server.script.append((404, {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}, {}, 0.0))
    with pytest.raises(E.ModelNotFound) as ei:
        gen(server.url, model="gpt-9").generate(MESSAGES)
    msg = one_line(ei.value)
    assert "gpt-9" in msg and "tiny" in msg


def test_model_discovered_when_one_is_served(server: FakeServer) -> None:
    g = OpenAICompatGenerator(server.url, None, timeout=5)
    assert g.generate(MESSAGES) == "ok" and g.model == "tiny"


def test_several_models_need_a_name() -> None:
    s = FakeServer(models=["a", "b"])
    try:
        with pytest.raises(E.NotConfigured) as ei:
            OpenAICompatGenerator(s.url, None, timeout=5).generate(MESSAGES)
        assert "--model" in one_line(ei.value)
    finally:
        s.close()


def test_errors_are_docket_errors() -> None:
    from docket.errors import DocketError, UnavailableError

    for cls in (E.EndpointUnreachable, E.EndpointTimeout, E.AuthError, E.ModelNotFound, E.RateLimited, E.ServerError, E.MalformedResponse):
        assert issubclass(cls, UnavailableError) and issubclass(cls, DocketError)


def test_factory_urls(server: FakeServer) -> None:
    g = generator_from_url(f"http://127.0.0.1:{server.port}", model="tiny")
    assert isinstance(g, OpenAICompatGenerator) and g.base_url.endswith("/v1")
    g2 = generator_from_url(f"ollama://127.0.0.1:{server.port}", model="tiny")
    assert isinstance(g2, OpenAICompatGenerator) and g2.base_url == f"http://127.0.0.1:{server.port}/v1"
    with pytest.raises(E.NotConfigured):
        generator_from_url("ftp://nowhere")
