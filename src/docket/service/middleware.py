"""The app's middleware: BodyLimit (what a body may be before a handler reads it) and observe
(the request id, one JSON log line and the metrics per request)."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from fastapi import Request
from starlette.exceptions import HTTPException as StarletteHTTPException

from docket.service.config import Limits
from docket.service.errors import internal_error
from docket.service.metrics import SECTIONS, Metrics

log = logging.getLogger("docket.server")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class _TooLarge(StarletteHTTPException):
    """A streamed body went over the limit (FastAPI passes HTTP exceptions through as they are)."""

    def __init__(self) -> None:
        super().__init__(413, "the body is larger than the limit")


class _SlowBody(StarletteHTTPException):
    """The body did not arrive within the limit: 408, and the connection closes."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body did not arrive within {seconds:g} s", headers={"connection": "close"})


class BodyLimit:
    """413 before the handler reads a body over the limit (Content-Length or streamed), 408
    when it arrives too slowly, 415 when it is not JSON; and, once the body is in, a watch for
    the client going away (`request.state.client_gone`), which Starlette's
    `is_disconnected` cannot see through a `@app.middleware` layer."""

    def __init__(self, inner: Any, limits: Limits) -> None:
        self.inner = inner
        self.limits = limits

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        if scope.get("method") == "POST" and (problem := _not_json(scope)):
            await _send_error(send, 415, "unsupported_media_type", problem, "content-type")
            return
        if _declared_too_big(scope, self.limits.body_bytes):
            await _send_413(send, self.limits.body_bytes)
            return
        await self._limited(scope, receive, send)

    async def _limited(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        """The inner app with a receive that counts the body, times it, then watches for the disconnect."""
        limit = self.limits.body_bytes
        seen = 0
        body_done = False
        body_end = time.monotonic() + self.limits.body_seconds
        gone = anyio.Event()
        scope.setdefault("state", {})["client_gone"] = gone

        async def watch() -> None:  # after the body the server's next message is the disconnect
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        async def limited() -> Any:
            nonlocal seen, body_done
            if body_done:  # after the body: only the disconnect, from the watch
                await gone.wait()
                return {"type": "http.disconnect"}
            with anyio.move_on_after(max(0.0, body_end - time.monotonic())) as waited:
                msg = await receive()
            if waited.cancelled_caught:
                raise _SlowBody(self.limits.body_seconds)
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise _TooLarge()
                body_done = not msg.get("more_body", False)
                if body_done:
                    tg.start_soon(watch)
            elif msg["type"] == "http.disconnect":
                gone.set()
            return msg

        failed: Exception | None = None
        async with anyio.create_task_group() as tg:
            try:
                await self.inner(scope, limited, send)
            except Exception as e:  # raised as it is, not wrapped by the task group
                failed = e
            tg.cancel_scope.cancel()
        if failed is not None:
            raise failed


def _declared_too_big(scope: MutableMapping[str, Any], limit: int) -> bool:
    """A Content-Length over the limit (an unreadable one is left to the body count)."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                too_big = int(value) > limit
            except ValueError:
                too_big = False
            if too_big:
                return True
    return False


def _not_json(scope: MutableMapping[str, Any]) -> str | None:
    """Why a POST's body would not be read as JSON (its Content-Type), or None."""
    values = [v for k, v in scope.get("headers", []) if k == b"content-type"]
    if not values:
        return ("the Content-Type header is missing; send the body as JSON with 'Content-Type: application/json' "
                "(curl: -H 'content-type: application/json')")
    media = values[0].decode("latin-1").split(";", 1)[0].strip().lower()
    if len(values) == 1 and (media == "application/json" or (media.startswith("application/")
                                                              and media.endswith("+json"))):
        return None
    shown = media if media.isprintable() and len(media) < 80 else "something else"
    hint = " (what curl -d sends unless told otherwise)" if media == "application/x-www-form-urlencoded" else ""
    if len(values) > 1:
        return "the Content-Type header appears more than once; send one, 'Content-Type: application/json'"
    return f"the body must be JSON, but Content-Type is {shown!r}{hint}; send 'Content-Type: application/json'"


async def _send_413(send: Callable[[Any], Awaitable[None]], limit: int) -> None:
    await _send_error(send, 413, "too_large", f"the body is larger than {limit} bytes", "body")


async def _send_error(send: Callable[[Any], Awaitable[None]], status: int, code: str, message: str,
                      fld: str | None) -> None:
    """An error answered before the handler reads the body (and so with `connection: close`)."""
    body = json.dumps({"error": {"code": code, "message": message, "field": fld}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


async def observe(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
    """The request id (the caller's `x-request-id` when well-formed), one JSON log line, the metrics."""
    rid = request.headers.get("x-request-id", "")
    rid = rid if _REQUEST_ID.match(rid) else uuid.uuid4().hex
    request.state.request_id = rid
    request.state.info = {}
    t0 = time.perf_counter()
    try:
        response = await call_next(request)
    except Exception as exc:  # a bug below: still one JSON error and one log line
        log.exception("unhandled error in %s", request.url.path)
        response = internal_error(exc, rid).response()
    seconds = time.perf_counter() - t0
    route = request.scope.get("route")
    endpoint = getattr(route, "path", None) or "unmatched"
    info = request.state.info
    _count(request.app.state.service.metrics, request.method, endpoint, response.status_code, seconds, info)
    response.headers["x-request-id"] = rid
    if info.get("stages"):
        response.headers["server-timing"] = ", ".join(f"{k};dur={v:.2f}" for k, v in info["stages"].items())
    line = {"ts": round(time.time(), 3), "id": rid, "method": request.method, "endpoint": endpoint,
            "status": response.status_code, "ms": round(seconds * 1000, 2), **info}
    log.info(json.dumps(line, ensure_ascii=False, default=str))
    return response


def _count(metrics: Metrics, method: str, endpoint: str, status: int, seconds: float, info: dict[str, Any]) -> None:
    metrics.requests.labels(endpoint, method, str(status)).inc()
    metrics.latency.labels(endpoint).observe(seconds)
    for stage, ms in (info.get("stages") or {}).items():
        metrics.stage.labels(stage).observe(ms / 1000)
    for section in SECTIONS:
        n = (info.get("tokens") or {}).get(section)
        if isinstance(n, int):
            metrics.tokens.labels(section).observe(n)


__all__ = ["BodyLimit", "observe"]
