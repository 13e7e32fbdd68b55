"""Connections of `docket serve --workers N` send small writes at once (docket.http_guard._no_delay).

uvicorn binds the listening socket of a multi-worker server itself, with proto 0; asyncio then
leaves Nagle on for what it accepts, and every response waited ~40 ms for the client's delayed
ACK. The protocol sets TCP_NODELAY on each connection it is given, whatever the socket reads as."""

from __future__ import annotations

import socket
from typing import Any

from docket.http_guard import GuardedH11Protocol, _no_delay


class _Transport:
    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock

    def get_extra_info(self, key: str) -> Any:
        return self.sock if key == "socket" else None


def _accepted_from_proto0_listener() -> tuple[socket.socket, socket.socket, socket.socket]:
    listener = socket.socket(socket.AF_INET)  # as uvicorn's Config.bind_socket makes it
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    client = socket.create_connection(listener.getsockname())
    conn, _ = listener.accept()
    return listener, client, conn


def test_a_connection_accepted_from_a_proto0_socket_gets_nodelay() -> None:
    listener, client, conn = _accepted_from_proto0_listener()
    try:
        assert conn.proto == 0  # why asyncio's own _set_nodelay passes it by
        assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        _no_delay(_Transport(conn))  # type: ignore[arg-type]
        assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        for s in (conn, client, listener):
            s.close()


def test_no_socket_or_a_unix_socket_is_left_alone() -> None:
    _no_delay(_Transport(None))  # type: ignore[arg-type]
    a, b = socket.socketpair(socket.AF_UNIX)
    try:
        _no_delay(_Transport(a))  # type: ignore[arg-type]  # TCP_NODELAY does not apply: no error
    finally:
        a.close()
        b.close()


def test_the_protocol_sets_it_when_a_connection_is_made(monkeypatch: Any) -> None:
    seen: list[object] = []
    monkeypatch.setattr("docket.http_guard._no_delay", seen.append)
    monkeypatch.setattr("uvicorn.protocols.http.h11_impl.H11Protocol.connection_made", lambda self, t: None)
    proto = GuardedH11Protocol.__new__(GuardedH11Protocol)
    proto.header_seconds, proto._timer, proto._phase = 10.0, None, ""
    monkeypatch.setattr(GuardedH11Protocol, "_arm", lambda self, phase, seconds: None)
    transport = _Transport(None)
    proto.connection_made(transport)  # type: ignore[arg-type]
    assert seen == [transport]
