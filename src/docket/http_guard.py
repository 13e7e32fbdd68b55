"""Time limits on slow clients, which uvicorn's h11 protocol does not have.

uvicorn closes an idle keep-alive connection, but a client that opens a connection and sends
its request head a byte at a time, or a body slower than it promised, holds the connection (and
the request's task) for as long as it likes: 300 such uploads were all still open after 20 s.
`GuardedH11Protocol` gives every request head `header_seconds` from its first byte (from the
connection's start for the first request), and a body `body_seconds` plus a grace period as a
backstop (the service's middleware answers 408 at `body_seconds`; this closes the connection if
the application could not). A head with an obsolete line fold (RFC 9112 §5.2: a header line that
starts with a space or tab, which h11 would join to the previous one) is refused with 400, so a
folded `Authorization` cannot read as another header than a proxy saw.

The limits come from the `DOCKET_HTTP_LIMITS` environment variable ("HEADER_SECONDS,BODY_SECONDS"),
which `docket serve` sets, so worker processes started by uvicorn get them too.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

LIMITS_ENV = "DOCKET_HTTP_LIMITS"
#: seconds the backstop waits after the body limit for the application's own 408
GRACE = 5.0
_FOLD = re.compile(rb"\r?\n[ \t]")
_HEAD_END = re.compile(rb"\r?\n\r?\n")


def limits() -> tuple[float, float]:
    """(header seconds, body seconds) from DOCKET_HTTP_LIMITS, default 10 and 30."""
    raw = os.environ.get(LIMITS_ENV, "")
    try:
        head, body = (float(x) for x in raw.split(","))
        if head > 0 and body > 0:
            return head, body
    except ValueError:
        pass
    return 10.0, 30.0


def _raw_response(status: int, reason: str, code: str, message: str) -> bytes:
    body = json.dumps({"error": {"code": code, "message": message, "field": None}}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


def _no_delay(transport: asyncio.BaseTransport) -> None:
    """TCP_NODELAY on the connection. asyncio sets it only on sockets whose `proto` reads
    IPPROTO_TCP; for `docket serve --workers N` uvicorn binds the listening socket itself with
    `socket.socket(family)`, proto 0, so every accepted connection kept Nagle on: a response's head
    and body go out in two writes, the second waits for the client's delayed ACK, and each request
    cost ~40 ms more (/healthz p50 44 ms with 2 workers against 0.8 ms with 1; 1.0 ms with this)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # not TCP (a Unix socket): nothing to set
        pass


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a head time limit, a body backstop and no line folding."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_seconds, self.body_seconds = limits()
        self._timer: asyncio.TimerHandle | None = None
        self._phase = ""
        self._head = bytearray()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _no_delay(transport)
        super().connection_made(transport)
        self._arm("head", self.header_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._folded(data):
            self._disarm()
            self.transport.write(_raw_response(400, "Bad Request", "malformed_header", "a header line starts with a "
                                               "space or tab (obsolete line folding); send each header on one line"))
            self.transport.close()
            return
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._phase != "head":
                self._arm("head", self.header_seconds)
        elif state is h11.SEND_BODY:
            self._head.clear()
            if self._phase != "body":
                self._arm("body", self.body_seconds + GRACE)
        else:
            self._head.clear()
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # uvicorn's keep-alive timer covers the idle time after it
        if self.conn.their_state is h11.IDLE:
            self._disarm()

    def _folded(self, data: bytes) -> bool:
        self._head += data[: 65536 - len(self._head)] if len(self._head) < 65536 else b""
        end = _HEAD_END.search(self._head)
        head = bytes(self._head[: end.start()] if end else self._head)
        return _FOLD.search(head) is not None

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._phase = phase
        self._timer = self.loop.call_later(seconds, self._expire, phase)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._phase = None, ""

    def _expire(self, phase: str) -> None:
        self._timer, self._phase = None, ""
        if self.transport.is_closing():
            return
        if phase == "head" and self.conn.their_state is h11.IDLE and (self.cycle is None or
                                                                        self.cycle.response_complete):
            self.transport.write(_raw_response(408, "Request Timeout", "timeout", f"the request head did not arrive "
                                               f"within {self.header_seconds:g} s"))
        self.transport.close()


__all__ = ["GuardedH11Protocol", "LIMITS_ENV", "limits"]
