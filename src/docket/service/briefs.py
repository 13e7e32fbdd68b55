"""The brief routes: POST /v1/assemble (your candidates), /v1/ask (the store's), /v1/answer
(ask, generate, check), /v1/check (an answer against its brief), GET /v1/trace/{id}."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse

from docket.api import AnswerEvent, Session
from docket.errors import InputError
from docket.llm.errors import EndpointTimeout, LLMError
from docket.schemas import (
    AnswerOut,
    AnswerRequest,
    AskRequest,
    AssembleRequest,
    BriefOut,
    CandidateIn,
    CheckOut,
    CheckRequest,
    ErrorOut,
)
from docket.service.auth import Identity, identity, owner_of
from docket.service.errors import ApiError, StrictJsonRoute, internal_error, llm_error, log
from docket.service.responses import check_body, validated
from docket.service.state import ServiceState, ignored_identity_fields, state_of
from docket.store.access import readable
from docket.store.protocol import Principal

router = APIRouter(route_class=StrictJsonRoute)


@router.post("/v1/assemble", response_model=BriefOut, tags=["briefs"])
async def assemble_route(req: AssembleRequest, request: Request, ident: Identity = Depends(identity),
                         state: ServiceState = Depends(state_of)) -> JSONResponse:
    """The brief from your own ranked candidates (best first): full records, or ids of chunks in
    the server's store. Candidates the key's principal may not read are dropped."""
    return await state.bounded(request, lambda: assemble_work(state, req, request, ident))


def assemble_work(state: ServiceState, req: AssembleRequest, request: Request, ident: Identity) -> JSONResponse:
    session = state.session
    state.check_question(req.question)
    state.check_history(req)
    state.check_candidates(req.candidates)
    t0 = time.perf_counter()
    cands, store = _candidates(session, req.candidates, ident.principal)
    if req.whole_corpus and not req.attachments:  # the corpus is the server's store, as the key may read it
        store = session.store
    t1 = time.perf_counter()
    brief = session.assemble(req.question, cands, store=store, history=req.history, principal=ident.principal,
                             policy=state.policy_for(req.format), budget=req.budget, floor=req.floor, as_of=req.as_of,
                             attachments=state.attachments_of(req), whole_corpus=req.whole_corpus)
    ms = {"parse": round((t1 - t0) * 1000, 3), "assemble": round((time.perf_counter() - t1) * 1000, 3)}
    state.record(request, brief, ms, {"candidates": len(cands)})
    # the trace page lists only the candidates this key may read: a restricted record the caller sent is
    # not named in it (as in the brief, which never held it)
    return validated(BriefOut, state.brief_json(brief, ignored_identity_fields(req), ident,
                                                readable(cands, ident.principal)), request)


@router.post("/v1/ask", response_model=BriefOut, tags=["briefs"])
async def ask_route(req: AskRequest, request: Request, ident: Identity = Depends(identity),
                    state: ServiceState = Depends(state_of)) -> JSONResponse:
    """Retrieve from the store as the key's principal (public chunks without a key), assemble."""

    def work() -> JSONResponse:
        res = state.run_ask(req, ident)
        state.record(request, res.brief, res.timings, {"candidates": len(res.candidates)})
        body = state.brief_json(res.brief, ignored_identity_fields(req), ident, res.candidates)
        return validated(BriefOut, body, request)

    return await state.bounded(request, work)


@router.post("/v1/answer", response_model=AnswerOut, tags=["answers"],
             responses={200: {"content": {"text/event-stream": {}}}, 502: {"model": ErrorOut},
                        503: {"model": ErrorOut}, 504: {"model": ErrorOut}})
async def answer_route(req: AnswerRequest, request: Request, ident: Identity = Depends(identity),
                       state: ServiceState = Depends(state_of)) -> Any:
    """Ask, generate and check. With `stream` (default) server-sent events: `brief`, `delta`
    (text pieces), `answer`, `check`, `error`, `done`; otherwise one JSON object (502/504
    with the brief when the model fails or times out)."""
    session = state.session
    if session.generator is None:
        raise ApiError(503, "no_generator", "this server has no model: start it with `docket serve --llm URL`")
    res = await state.bounded(request, lambda: state.run_ask(req, ident))  # the model call has its own --timeout
    warnings = ignored_identity_fields(req)
    info = request.state.info
    state.record(request, res.brief, dict(res.timings))
    if not req.stream:
        return await _answer_json(state, req, request, ident, res, warnings)
    rid = request.state.request_id
    first = state.brief_json(res.brief, warnings, ident, res.candidates)
    check_body(BriefOut, first, request)

    def events() -> Iterator[str]:
        yield _sse("brief", first)
        t0 = time.perf_counter()
        for ev in session.stream(res.brief, allowed_domains=req.allowed_domains, structured=req.structured):
            yield _sse(ev.kind, _event_data(ev, rid))
        info["stages"]["generate"] = round((time.perf_counter() - t0) * 1000, 3)

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"cache-control": "no-cache", "x-accel-buffering": "no"})


async def _answer_json(state: ServiceState, req: AnswerRequest, request: Request, ident: Identity, res: Any,
                       warnings: list[str]) -> JSONResponse:
    """/v1/answer without `stream`: the brief, the answer and its check as one object."""
    info = request.state.info
    t0 = time.perf_counter()
    report = await anyio.to_thread.run_sync(lambda: state.session.generate(
        res.brief, allowed_domains=req.allowed_domains, structured=req.structured))
    info["stages"]["generate"] = round((time.perf_counter() - t0) * 1000, 3)
    body = state.brief_json(res.brief, warnings, ident, res.candidates)
    body.update(report.to_json())
    if report.error:
        err = EndpointTimeout(report.error) if report.error_kind == "timeout" else LLMError(report.error)
        api = llm_error(err)
        info["error"] = api.code
        failed = {**body, "error": {"code": api.code, "message": report.error, "field": None}}
        return validated(ErrorOut, failed, request, status_code=api.status)
    return validated(AnswerOut, body, request)


@router.get("/v1/trace/{trace_id}", response_class=HTMLResponse, tags=["briefs"], responses={404: {"model": ErrorOut}})
def trace_route(trace_id: str, request: Request, ident: Identity = Depends(identity),
                state: ServiceState = Depends(state_of)) -> HTMLResponse:
    """The trace of a brief this key received (its `trace_id`) as one self-contained HTML page:
    ranked candidates and their fate, every decision with its numbers, token bars, conflicts,
    the final prompt. Kept in memory for the last `traces` briefs of this process."""
    from docket.trace_html import CSP, render_trace

    owner = owner_of(ident)
    if owner is None:
        raise ApiError(401, "unauthorized", "trace pages are served to API keys only (an anonymous brief has none; "
                       "`docket assemble --html` writes one)", "authorization", {"WWW-Authenticate": "Bearer"})
    kept = state.traces.get(trace_id, owner)
    if kept is None:  # unknown, expired, or another key's: the same answer, so ids do not leak
        raise ApiError(404, "not_found", "no trace with this id for this key (traces are kept for the last "
                       f"{state.traces.capacity} briefs of the process that served them)", "trace_id")
    try:
        page = render_trace(kept.brief, kept.candidates)
    except InputError as e:  # the kept brief is the service's own: one it cannot draw is its bug, not the caller's
        log.error("trace %s cannot be drawn: %s", trace_id, e)
        raise internal_error(e, request.state.request_id) from None
    return HTMLResponse(page,
                        headers={"content-security-policy": CSP, "x-content-type-options": "nosniff",
                                 "cache-control": "no-store", "referrer-policy": "no-referrer"})


@router.post("/v1/check", response_model=CheckOut, tags=["answers"])
async def check_route(req: CheckRequest, request: Request, ident: Identity = Depends(identity),
                      state: ServiceState = Depends(state_of)) -> JSONResponse:
    """Check an answer's citations against the brief it was written from."""
    return await state.bounded(request, lambda: check_work(state, req, request))


def check_work(state: ServiceState, req: CheckRequest, request: Request) -> JSONResponse:
    limit = state.limits.history_chars
    size = len(req.answer) if isinstance(req.answer, str) else len(json.dumps(req.answer, ensure_ascii=False))
    if size > limit:
        raise ApiError(422, "too_long", f"answer holds more than {limit} characters", "answer")
    t0 = time.perf_counter()
    report = state.session.check(req.answer, req.brief, allowed_domains=req.allowed_domains, strip=req.strip_links,
                                 names=req.names)
    request.state.info["stages"] = {"check": round((time.perf_counter() - t0) * 1000, 3)}
    return validated(CheckOut, report.to_json(), request)


def _candidates(session: Session, items: list[CandidateIn], principal: Principal | None) -> tuple[list[Any], Any]:
    """Full records (a MemoryStore of them is what the assembler reads) or ids in the server's
    store (read through the principal's view); a mix is refused."""
    from docket.store.base import MemoryStore

    if not items:
        return [], MemoryStore([])
    full = [c.text is not None for c in items]
    if all(full):
        cands = session.candidates_from([c.model_dump(exclude_none=True) for c in items])
        return cands, MemoryStore([c.chunk for c in cands])
    if any(full):
        first = full.index(False)
        raise ApiError(422, "invalid", "give every candidate as a full record (id, doc, text, score) or every one as "
                       "an id of a stored chunk (id, score), not a mix", f"candidates[{first}].text")
    extra = [i for i, c in enumerate(items) if set(c.model_dump(exclude_none=True)) - {"id", "score"}]
    if extra:
        raise ApiError(422, "invalid", "a candidate given by id carries only id and score (give text for a full record)",
                       f"candidates[{extra[0]}]")
    return session.candidates_by_id([(c.id, c.score) for c in items], principal)


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def _event_data(ev: AnswerEvent, rid: str) -> Any:
    if ev.kind == "delta":
        return {"text": ev.data}
    if ev.kind in ("answer", "check"):
        return ev.data.to_json()
    if ev.kind == "done":
        return {"request_id": rid}
    return ev.data


__all__ = ["router"]
