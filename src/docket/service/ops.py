"""GET /healthz, /readyz and /metrics: is the process alive, can it answer, what has it done."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from docket.errors import DocketError
from docket.schemas import ErrorOut
from docket.service.auth import bearer_token
from docket.service.errors import ApiError, StrictJsonRoute
from docket.service.state import ServiceState, state_of

log = logging.getLogger("docket.server")
router = APIRouter(tags=["ops"], route_class=StrictJsonRoute)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness: the process answers (on the event loop: no request's work stands in front)."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"model": ErrorOut}})
async def readyz(request: Request, state: ServiceState = Depends(state_of)) -> JSONResponse:
    """Readiness: the store answers and the embedder is loaded. Says ready or not and nothing
    about the data; an admin key also gets the store's figures, the log gets the reason."""
    session, limits = state.session, state.limits

    def probe() -> dict[str, Any]:
        stats = session.stats()
        session.embedder()
        return stats

    rid = request.state.request_id
    try:
        with anyio.fail_after(limits.ready_seconds):
            stats = await anyio.to_thread.run_sync(probe, limiter=state.ready_threads, abandon_on_cancel=True)
    except (DocketError, TimeoutError) as e:
        why = str(e) if isinstance(e, DocketError) else f"no answer from the store within {limits.ready_seconds:g} s"
        log.error(json.dumps({"ts": round(time.time(), 3), "id": rid, "event": "not_ready", "error": why},
                             ensure_ascii=False))
        return JSONResponse({"ready": False, "error": {"code": "unavailable", "message": "not ready; the reason "
                             f"is in the server log (request id {rid})", "field": None}}, status_code=503)
    values = request.headers.getlist("authorization")
    if values:  # the figures are for an admin key only; any other header is ignored here
        try:
            key = await anyio.to_thread.run_sync(state.verify, request, bearer_token(values),
                                                 limiter=state.ready_threads)
        except ApiError:
            key = None
        if key is not None and key.admin:
            return JSONResponse({"ready": True, **stats})
    return JSONResponse({"ready": True})


@router.get("/metrics", response_class=PlainTextResponse)
def metrics_route(state: ServiceState = Depends(state_of)) -> PlainTextResponse:
    """Prometheus text format: requests and latency per endpoint, tokens per prompt section."""
    body, ctype = state.metrics.exposition()
    return PlainTextResponse(body, media_type=ctype)


__all__ = ["router"]
