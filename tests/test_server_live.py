"""`docket serve` as real processes on 127.0.0.1: one uvicorn server on SQLite, and two workers
sharing one PostgreSQL store (index through one, ask through the other)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn", reason="pip install 'docket[server]'")

from docket.keys import KeyFile  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(*args: str, log: Path) -> Iterator[str]:
    port = free_port()
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "docket", "serve", "--host", "127.0.0.1", "--port", str(port),
                                 *args], stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"docket serve exited {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError(f"docket serve did not answer: {log.read_text()[-2000:]}")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


RECORDS = [
    {"id": "ship-1", "doc": "shipping", "text": "Parcels ship within two business days from the Berlin warehouse."},
    {"id": "ret-1", "doc": "returns", "text": "Returns are free within thirty days of delivery."},
    {"id": "pay-1", "doc": "payroll", "text": "Payroll runs on the last business day of the month.", "acl": ["finance"]},
]


def test_real_uvicorn_on_loopback(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    log = tmp_path / "serve.log"
    with serving("--db", str(db), "--embedder", "hash", log=log) as url:
        assert httpx.get(url + "/readyz").json()["ready"] is True
        r = httpx.post(url + "/v1/ask", json={"question": "When do parcels ship?"}, timeout=30)
        assert r.status_code == 200 and r.json()["found"] is False  # an empty store: nothing to find
        assert httpx.post(url + "/v1/index", json={"records": RECORDS}).status_code == 401  # writes need a key
        r = httpx.post(url + "/v1/ask", content=b"{oops", headers={"content-type": "application/json"})
        assert r.status_code == 400
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    asks = [ln for ln in lines if ln["endpoint"] == "/v1/ask"]
    assert {ln["status"] for ln in asks} == {200, 400}
    ok = [ln for ln in asks if ln["status"] == 200]
    assert ok and all({"id", "principal", "ms", "stages", "tokens", "status"} <= set(ln) for ln in ok)
    assert all(isinstance(ln["ms"], int | float) and "retrieve" in ln["stages"] for ln in ok)
    assert "parcels" not in log.read_text().lower()  # no question or document text in the log
    # --db is created when missing; a mistyped path must not serve an empty store in silence
    assert f"docket: {db} did not exist: this is a new, empty store" in " ".join(log.read_text().split())


@pytest.mark.postgres
def test_two_workers_share_one_postgres_store(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    keys = tmp_path / "keys.json"
    kf = KeyFile(keys)
    admin = kf.add("ops", "ops", admin=True)
    ann = kf.add("ann", "ann", ("finance",))
    common = ("--db", pg_url, "--keys", str(keys), "--embedder", "hash")
    with serving(*common, log=tmp_path / "a.log") as a, serving(*common, log=tmp_path / "b.log") as b:
        q = {"question": "When does payroll run each month?", "floor": 0.0}
        before = httpx.post(b + "/v1/ask", json=q, headers={"Authorization": f"Bearer {ann}"}, timeout=30).json()
        assert before["found"] is False
        r = httpx.post(a + "/v1/index", json={"records": RECORDS}, headers={"Authorization": f"Bearer {admin}"},
                       timeout=60)
        assert r.status_code == 200 and r.json()["chunks_written"] == 3
        after = httpx.post(b + "/v1/ask", json=q, headers={"Authorization": f"Bearer {ann}"}, timeout=30).json()
        assert after["found"] is True and "payroll" in {s["doc"] for s in after["sources"].values()}
        anon = httpx.post(b + "/v1/ask", json=q, timeout=30).json()
        assert "payroll" not in {s["doc"] for s in anon["sources"].values()}  # acl holds in the other worker too
        r = httpx.delete(b + "/v1/documents/payroll", headers={"Authorization": f"Bearer {admin}"}, timeout=30)
        assert r.status_code == 200
        gone = httpx.post(a + "/v1/ask", json=q, headers={"Authorization": f"Bearer {ann}"}, timeout=30).json()
        assert "payroll" not in {s["doc"] for s in gone["sources"].values()}
        gens = {httpx.get(u + "/readyz", headers={"Authorization": f"Bearer {admin}"}).json()["generation"]
                for u in (a, b)}  # the figures are for an admin key
        assert len(gens) == 1  # both workers see the same write generation


def _raw(port: int, data: bytes, wait: float = 5.0) -> tuple[bytes, float]:
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            pass
    return out, time.monotonic() - t0


def test_slow_clients_folds_and_abandoned_work_on_a_real_server(tmp_path: Path) -> None:
    """The small version of tests/test_redteam_service.py: a stalled head and a stalled body are
    cut off with 408, a folded header is 400, an abandoned heavy request stops (499), and
    /healthz answers beside a heavy one."""
    log = tmp_path / "serve.log"
    with serving("--db", str(tmp_path / "s.db"), "--embedder", "hash", "--header-timeout", "0.5",
                 "--body-timeout", "1", "--request-cpu", "1", log=log) as url:
        port = int(url.rsplit(":", 1)[1])
        head = b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n"
        reply, secs = _raw(port, head[:30])
        assert reply.startswith(b"HTTP/1.1 408") and b"head" in reply and secs < 3, (reply, secs)
        reply, secs = _raw(port, head + b'\r\n{"question": ')
        assert reply.startswith(b"HTTP/1.1 408") and b"body" in reply and secs < 4, (reply, secs)
        reply, _ = _raw(port, b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-a: 1\r\n\tfolded\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 400") and b"folding" in reply
        words = "the refund policy for annual plans allows a full refund within thirty days of purchase".split()
        cands = [{"id": f"c{i}", "doc": f"d{i % 30}", "text": " ".join(words[:i % 12] + [f"w{i}"] + words[i % 12:]),
                  "score": 0.9 - i * 1e-4} for i in range(600)]
        body = json.dumps({"question": "Can I get a refund on an annual plan?", "candidates": cands}).encode()
        with socket.create_connection(("127.0.0.1", port)) as s:  # sent, then abandoned
            s.sendall(b"POST /v1/assemble HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-request-id: "
                      b"gone-1\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
            time.sleep(0.5)
        health = []
        r = None
        with httpx.Client(timeout=60) as c:

            def heavy() -> None:
                nonlocal r
                r = c.post(url + "/v1/assemble", content=body, headers={"content-type": "application/json"})

            t = threading.Thread(target=heavy)
            t.start()
            while t.is_alive():
                t0 = time.monotonic()
                assert c.get(url + "/healthz").status_code == 200
                health.append(time.monotonic() - t0)
                time.sleep(0.05)
            t.join()
        assert r is not None and r.status_code in (200, 503)
        if r.status_code == 503:
            assert r.json()["error"]["code"] == "over_budget"
        assert sorted(health)[int(len(health) * 0.95)] < 1.5, sorted(health)[-3:]
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    gone = [x for x in lines if x.get("id") == "gone-1"]
    assert gone and gone[0]["status"] == 499, gone
