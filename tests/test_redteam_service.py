"""Red team of the service (`docket serve`) as a caller who wants more than its share: requests
that cost the server more than the caller, slow clients, abandoned requests, Authorization
headers a lenient parser would accept, type-confused fields, hand-edited key files, other
callers' traces, what unauthenticated endpoints tell, and bad listen addresses.

Most classes run against a real uvicorn server on 127.0.0.1 (raw sockets where the client
library would tidy up what is sent); each loop is bounded in count and time.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redteam_log import record

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn", reason="pip install 'docket[server]'")

from fastapi.testclient import TestClient  # noqa: E402
from test_server_live import serving  # noqa: E402

from docket.api import Session  # noqa: E402
from docket.demo import REFUND_QUESTION, nimbus_chunks  # noqa: E402
from docket.errors import InputError  # noqa: E402
from docket.keys import KeyFile  # noqa: E402
from docket.server import ServerConfig, create_app  # noqa: E402

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("DOCKET_REDTEAM_SEED", "7"))
HEADER_S, BODY_S = 1.0, 2.0
SECRET = {"id": "sec-1", "doc": "salary-bands", "text": "Salary bands for level 3: 52,000 to 61,000 euros.",
          "acl": ["finance"]}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("redteam-service")
    db = tmp / "s.db"
    with Session.open(str(db), create=True, new_store_embedder="hash") as s:
        assert s.index(records=[c.to_record() for c in nimbus_chunks()] + [SECRET]).ok
    kf = KeyFile(tmp / "keys.json")
    tokens = {"ann": kf.add("ann", "ann", ("finance",)), "ops": kf.add("ops", "ops", admin=True)}
    log = tmp / "serve.log"
    with serving("--db", str(db), "--keys", str(tmp / "keys.json"), "--request-cpu", "4", "--request-timeout", "20",
                 "--header-timeout", str(HEADER_S), "--body-timeout", str(BODY_S), "--max-connections", "1000",
                 log=log) as url:
        port = int(url.rsplit(":", 1)[1])
        yield {"url": url, "port": port, "tokens": tokens, "log": log, "db": str(db), "tmp": tmp}


def near_duplicates(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    base = ("the refund policy for annual plans allows a full refund within thirty days of purchase and a prorated "
            "refund after that period provided the account is in good standing and no chargebacks exist").split()
    out = []
    for i in range(n):
        words = list(base)
        words[rng.randrange(len(words))] = f"word{i}"
        out.append({"id": f"c{i}", "doc": f"d{i % 50}", "text": " ".join(words), "score": round(0.9 - i * 1e-4, 6)})
    return out


def heavy_body(seed: int) -> bytes:
    return json.dumps({"question": REFUND_QUESTION, "candidates": near_duplicates(1000, seed)}).encode()


def raw_request(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            pass
    return out


def percentile(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * q))]


# --- requests that cost the server more than the caller ------------------------------------------


def test_redteam_health_beside_heavy_requests(live: dict[str, Any]) -> None:
    """Two unauthenticated /v1/assemble with 1,000 near-duplicate candidates each (the payload that
    took 103 CPU-s and stalled /healthz for 14-31 s) beside /healthz and /readyz calls."""
    url, results = live["url"], []

    def heavy(seed: int) -> None:
        t0 = time.monotonic()
        r = httpx.post(url + "/v1/assemble", content=heavy_body(seed), headers={"content-type": "application/json"},
                       timeout=120)
        results.append((r.status_code, r.json()["error"]["code"] if r.status_code >= 400 else "", time.monotonic() - t0))

    threads = [threading.Thread(target=heavy, args=(SEED + i,)) for i in range(2)]
    for t in threads:
        t.start()
    health: list[float] = []
    deadline = time.monotonic() + 120
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        for path in ("/healthz", "/readyz"):
            t0 = time.monotonic()
            ok = httpx.get(url + path, timeout=30).status_code == 200
            health.append(time.monotonic() - t0 if ok else 99.0)
        time.sleep(0.05)
    for t in threads:
        t.join(5)
    slow = sum(1 for x in health if x > 2.0)
    unbounded = sum(1 for status, code, secs in results if not (status == 503 and code == "over_budget" and secs < 60))
    record("service/health-beside-heavy", tried=len(health) + len(results), escaped=slow + unbounded,
           note=f"health p50 {percentile(health, 0.5):.3f}s p95 {percentile(health, 0.95):.3f}s "
                f"max {max(health):.3f}s; heavy {[(s, round(t, 1)) for s, _, t in results]}")
    assert len(results) == 2 and unbounded == 0, results
    assert percentile(health, 0.95) < 1.0 and slow == 0, sorted(health)[-5:]


def test_redteam_abandoned_requests_stop(live: dict[str, Any]) -> None:
    """A heavy request whose client goes away after a second stops computing (499 in the log)."""
    stopped, tried = 0, 3
    for i in range(tried):
        body = heavy_body(SEED + 10 + i)
        rid = f"abandon-{SEED}-{i}"
        with socket.create_connection(("127.0.0.1", live["port"])) as s:
            s.sendall(b"POST /v1/assemble HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                      b"x-request-id: %s\r\ncontent-length: %d\r\n\r\n" % (rid.encode(), len(body)) + body)
            time.sleep(1.0)
        gone = time.monotonic()
        while time.monotonic() - gone < 10:
            lines = [json.loads(x) for x in live["log"].read_text().splitlines() if x.startswith("{")]
            mine = [x for x in lines if x.get("id") == rid]
            if mine:
                if mine[0]["status"] == 499 and mine[0]["ms"] < 6000:
                    stopped += 1
                break
            time.sleep(0.1)
    record("service/abandoned-request", tried=tried, escaped=tried - stopped)
    assert stopped == tried


def test_redteam_slow_clients_are_cut_off(live: dict[str, Any]) -> None:
    """300 connections that stall (nothing sent, half a head, a head byte by byte, a body that
    never ends): every one is closed within the head / body limits, and /healthz answers."""
    port, rng = live["port"], random.Random(SEED)
    head = b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n"
    socks: list[tuple[socket.socket, str]] = []
    for i in range(300):
        kind = ["silent", "half-head", "drip-head", "stalled-body"][i % 4]
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if kind == "half-head":
            s.sendall(head[: rng.randrange(5, len(head))])
        elif kind == "drip-head":
            s.sendall(head[:3])
        elif kind == "stalled-body":
            s.sendall(head + b"\r\n" + b'{"question": "')
        s.setblocking(False)
        socks.append((s, kind))
    t0 = time.monotonic()
    health_ok = 0
    open_ = set(range(len(socks)))
    dripped = 3
    while open_ and time.monotonic() - t0 < HEADER_S + BODY_S + 8:
        for i in list(open_):
            s, kind = socks[i]
            try:
                if kind == "drip-head" and dripped < len(head):
                    s.send(head[dripped:dripped + 1])
                if s.recv(65536) == b"":
                    open_.discard(i)
            except BlockingIOError:
                pass
            except OSError:
                open_.discard(i)
        dripped += 1
        if httpx.get(live["url"] + "/healthz", timeout=5).status_code == 200:
            health_ok += 1
        time.sleep(0.2)
    closed_after = time.monotonic() - t0
    for s, _ in socks:
        s.close()
    record("service/slow-clients", tried=len(socks), escaped=len(open_),
           note=f"all closed after {closed_after:.1f}s (head limit {HEADER_S:g}s, body {BODY_S:g}s)")
    assert not open_, sorted({socks[i][1] for i in open_})
    assert health_ok > 0


# --- the Authorization header -----------------------------------------------------------------


def header_variants(token: str, rng: random.Random) -> list[bytes]:
    """Authorization headers (raw lines) that are not exactly `Bearer TOKEN`."""
    blanks = [" ", "\t", "  ", " \t", "\x0b", "\x0c", "\u00a0"]
    out = [f"Authorization: Bearer {token}\r\n Authorization: x".encode(),  # an obs-fold after the header
           f"Authorization: Bearer\r\n {token}".encode(),  # folded between scheme and key
           f"Authorization: Bearer \r\n\t{token}".encode(),
           f"Authorization: Bearer {token}\r\nAuthorization: Bearer {token}".encode(),
           f"Authorization: Bearer {token}\r\nauthorization: Bearer nope".encode()]
    for _ in range(60):
        b = rng.choice(blanks)
        where = rng.randrange(4)
        value = [f"Bearer{b}{token}", f"Bearer {b}{token}", f"Bearer {token}{b}x", f"Bearer {token[:6]}{b}{token[6:]}"][where]
        if value == f"Bearer {token}":  # the one exact form
            continue
        out.append(b"Authorization: " + value.encode("latin-1", "replace"))
    for scheme in ("Basic", "Token", "Bearer:", "Bearer=", "Bear", "Bearerr"):
        out.append(f"Authorization: {scheme} {token}".encode())
    return out


def test_redteam_authorization_headers(live: dict[str, Any]) -> None:
    rng = random.Random(SEED)
    token = live["tokens"]["ann"]
    body = json.dumps({"question": "What are the salary bands for level 3?"}).encode()
    exact = raw_request(live["port"], b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                        b"Authorization: Bearer %s\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
                        % (token.encode(), len(body)) + body)
    assert exact.startswith(b"HTTP/1.1 200"), exact[:300]
    variants = header_variants(token, rng)
    accepted, unexplained = [], []
    for line in variants:
        reply = raw_request(live["port"], b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                            + line + b"\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body) + body)
        status = reply[9:12]
        if status == b"200":
            accepted.append(line)
        elif not (status == b"400" or (status == b"401" and b"refused" in reply)):
            unexplained.append((line, reply[:200]))
    record("service/authorization-header", tried=len(variants), escaped=len(accepted) + len(unexplained))
    assert not accepted and not unexplained, (accepted[:3], unexplained[:3])


# --- strict fields ----------------------------------------------------------------------------


#: every typed request field: route -> field -> a valid body holding it
FIELDS: dict[str, dict[str, Any]] = {
    "/v1/ask": {"k": 5, "budget": 500, "floor": 0.1, "whole_corpus": False, "as_of": "2025-01-01", "format": "xml",
                "question": "q", "mode": "bm25"},
    "/v1/assemble": {"budget": 500, "floor": 0.1, "whole_corpus": False, "as_of": "2025-01-01", "question": "q"},
    "/v1/answer": {"stream": False, "structured": False, "k": 5, "question": "q"},
    "/v1/check": {"strip_links": False, "names": True},
    "/v1/index": {"chunk_size": 300, "overlap": 20},
}
BASE = {"/v1/ask": {"question": "q"}, "/v1/assemble": {"question": "q"}, "/v1/answer": {"question": "q"},
        "/v1/check": {"answer": "a", "brief": {}}, "/v1/index": {"records": []}}


def wrong_types(valid: Any, rng: random.Random) -> list[Any]:
    if isinstance(valid, bool):
        return ["true", "false", "yes", "no", "0", "1", 0, 1, None, [], {}, 0.0]
    if isinstance(valid, int):
        return [str(valid), f"{valid}.0", True, False, float(valid) + 0.5, [valid], {"v": valid}, ""]
    if isinstance(valid, float):
        return [str(valid), True, False, [valid], {"v": valid}, "nan", ""]
    if valid == "2025-01-01":
        return [1735689600, "2025-01-01T00:00:00", "01/01/2025", True, "20250101", ["2025-01-01"]]
    return [rng.randrange(10**6), True, [valid], {"v": valid}, 1.5]


def test_redteam_strict_fields(live: dict[str, Any]) -> None:
    rng = random.Random(SEED)
    session = Session.open(live["db"])
    keys = str(live["tmp"] / "keys.json")
    client = TestClient(create_app(ServerConfig(db=live["db"], keys=keys), session=session))
    admin = {"Authorization": f"Bearer {live['tokens']['ops']}"}
    tried, escaped = 0, []
    for route, fields in FIELDS.items():
        for name, valid in fields.items():
            for bad in wrong_types(valid, rng):
                if bad is None and name in ("whole_corpus", "budget", "floor", "as_of", "format"):
                    continue  # null is these fields' default (the policy decides)
                body = {**BASE[route], name: bad}
                r = client.post(route, json=body, headers=admin)
                tried += 1
                if r.status_code != 422 or r.json()["error"]["field"] != name:
                    escaped.append((route, name, bad, r.status_code, r.text[:120]))
    for i in range(40):  # candidates' typed fields
        name, bad = rng.choice([("score", "0.5"), ("score", True), ("version", "2"), ("version", 1.5),
                                ("position", True), ("date", 0), ("acl", "finance"), ("trust", 1)])
        cand = {"id": f"c{i}", "doc": "d", "text": "Refunds within 30 days.", "score": 0.5, name: bad}
        r = client.post("/v1/assemble", json={"question": "q", "candidates": [cand]})
        tried += 1
        if r.status_code != 422 or r.json()["error"]["field"] != f"candidates[0].{name}":
            escaped.append(("/v1/assemble", name, bad, r.status_code, r.text[:120]))
    record("service/strict-fields", tried=tried, escaped=len(escaped))
    assert not escaped, escaped[:5]


# --- the key file -------------------------------------------------------------------------------


def test_redteam_key_file(tmp_path: Path) -> None:
    """Hand edits of a key file: every ill-typed value, unknown field or nesting bomb is refused at
    start-up with one line naming the file; none makes a key an admin."""
    rng = random.Random(SEED)
    KeyFile(tmp_path / "base.json").add("ann", "ann", ("finance",))
    base = json.loads((tmp_path / "base.json").read_text())
    bad_values: dict[str, list[Any]] = {
        "admin": ["false", "no", "0", "False", "", "true", "1", 0, 1, 0.0, None, [], {}, [False]],
        "groups": ["finance", [1], [None], [["x"]], {"a": 1}, 5, True, ["a b"], [""]],
        "principal": [5, True, None, [], "", "a b", "x" * 65], "name": [5, None, "", "a/b", "-x"],
        "sha256": ["", "abc", 5, "G" * 64, None], "created": [5, True, None, []], "hint": [5, True, "x" * 40],
    }
    cases: list[dict[str, Any]] = []
    for fld, values in bad_values.items():
        for v in values:
            entry = dict(base["keys"][0], **{fld: v})
            cases.append({"version": 1, "keys": [entry]})
    for _ in range(30):
        extra = "".join(rng.choice("abcdefghij_") for _ in range(rng.randrange(1, 8)))
        cases.append({"version": 1, "keys": [dict(base["keys"][0], **{extra: rng.choice([1, "x", True])})]})
    cases += [{"version": 1, "keys": [{k: v for k, v in base["keys"][0].items() if k != drop}]}
              for drop in ("name", "principal", "sha256")]
    texts = [json.dumps(c) for c in cases] + ['{"keys": ' + "[" * n + "]" * n + "}" for n in (100, 1000, 20000)]
    texts += ["[]", "null", "{", '{"keys": {}}', '{"version": "1", "keys": []}', "\ufeff{}"]
    escaped = []
    path = tmp_path / "edited.json"
    for text in texts:
        path.write_text(text)
        try:
            KeyFile(path)
        except InputError as e:
            msg = str(e)
            if "\n" in msg or str(path) not in msg:
                escaped.append((text[:80], msg))
            continue
        except Exception as e:  # a traceback where one line was due
            escaped.append((text[:80], repr(e)))
            continue
        escaped.append((text[:80], "accepted"))
    record("service/key-file", tried=len(texts), escaped=len(escaped))
    assert not escaped, escaped[:5]


def test_redteam_key_file_modes(tmp_path: Path) -> None:
    modes = []
    for umask in (0o000, 0o002, 0o022, 0o077):
        old = os.umask(umask)
        try:
            path = tmp_path / f"k{umask}.json"
            kf = KeyFile(path)
            kf.add("ann", "ann")
            kf.add("bob", "bob")
            kf.remove("ann")
        finally:
            os.umask(old)
        modes.append(path.stat().st_mode & 0o777)
    record("service/key-file-mode", tried=len(modes), escaped=sum(1 for m in modes if m != 0o600),
           note=f"modes {[oct(m) for m in modes]}")
    assert modes == [0o600] * 4


# --- traces -------------------------------------------------------------------------------------


def test_redteam_traces_belong_to_a_key(live: dict[str, Any], tmp_path: Path) -> None:
    """Anonymous briefs carry no trace id; a key's trace is readable by that key only: not by
    another key, not anonymously, not by a key re-issued with the same name and principal."""
    path = tmp_path / "keys.json"
    kf = KeyFile(path, check_every=0)
    client = TestClient(create_app(ServerConfig(db=live["db"], keys=str(path)), session=Session.open(live["db"]),
                                   keys=KeyFile(path, check_every=0)))
    questions = ["What are the salary bands for level 3?", REFUND_QUESTION, "Where do parcels ship from?"]
    tried, leaked = 0, 0
    for i in range(12):
        q = questions[i % len(questions)]
        r = client.post("/v1/ask", json={"question": q, "floor": -1.0})
        tried += 1
        leaked += "trace_id" in r.json()
    for i in range(6):
        name = f"user{i}"
        old = kf.add(name, name, ("finance",))
        r = client.post("/v1/ask", json={"question": questions[0], "floor": -1.0},
                        headers={"Authorization": f"Bearer {old}"})
        tid = r.json()["trace_id"]
        kf.remove(name)
        new = kf.add(name, name)
        other = kf.add(f"other{i}", f"other{i}", ("finance",))
        for who in (new, other, None):
            headers = {"Authorization": f"Bearer {who}"} if who else {}
            page = client.get(f"/v1/trace/{tid}", headers=headers)
            tried += 1
            leaked += page.status_code == 200
    record("service/traces", tried=tried, escaped=leaked, leaked=leaked)
    assert leaked == 0


# --- what unauthenticated endpoints tell ---------------------------------------------------------


def test_redteam_unauthenticated_endpoints_tell_nothing(live: dict[str, Any]) -> None:
    url, tokens = live["url"], live["tokens"]
    store_words = [Path(live["db"]).name, str(live["tmp"]), '"chunks"', '"generation"', '"embedder"']
    tried, told = 0, []
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Bearer {tokens['ann']}"},
                    {"Authorization": "Basic x"}, {"Authorization": f"Bearer  {tokens['ops']}"}):
        for path in ("/healthz", "/readyz"):
            r = httpx.get(url + path, headers=headers, timeout=10)
            tried += 1
            if any(w in r.text for w in store_words):
                told.append((path, headers, r.text[:120]))
    admin = httpx.get(url + "/readyz", headers={"Authorization": f"Bearer {tokens['ops']}"}, timeout=10).json()
    assert admin["ready"] is True and admin["chunks"] > 0  # the figures are there for an admin key
    record("service/unauthenticated-info", tried=tried, escaped=len(told), leaked=len(told))
    assert not told, told


# --- docket serve's address -------------------------------------------------------------------------


def test_redteam_serve_listen_errors(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [["--host", h] for h in ("999.1.1.1", "256.0.0.1", "1.2.3", "::g", "no such host.invalid",
                                         "10.255.255.254", "-", "")]
        cases += [["--port", str(port)], ["--host", "127.0.0.1", "--port", str(port)]]
        bad = []
        for args in cases:
            r = subprocess.run([sys.executable, "-m", "docket", "serve", "--db", str(tmp_path / "x.db"), "--embedder",
                                "hash", *args], capture_output=True, text=True, timeout=120)
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            if r.returncode != 2 or len(lines) != 1 or "Traceback" in r.stderr:
                bad.append((args, r.returncode, r.stderr[-300:]))
    record("service/listen-errors", tried=len(cases), escaped=len(bad))
    assert not bad, bad
