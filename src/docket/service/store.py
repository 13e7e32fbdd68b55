"""The store routes (admin key): POST /v1/index, DELETE /v1/documents/{doc}."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from docket.errors import InputError
from docket.schemas import DeleteOut, ErrorOut, IndexOut, IndexRequest, RecordTypes
from docket.service.auth import Identity, admin
from docket.service.errors import ApiError, StrictJsonRoute, validation_error
from docket.service.responses import validated
from docket.service.state import ServiceState, state_of

router = APIRouter(tags=["store"], route_class=StrictJsonRoute)


@router.post("/v1/index", response_model=IndexOut, responses={403: {"model": ErrorOut}})
def index_route(req: IndexRequest, request: Request, ident: Identity = Depends(admin),
                state: ServiceState = Depends(state_of)) -> JSONResponse:
    """Index chunk records and documents (admin key). Problems are reported per item; the rest
    is indexed."""
    limit = state.limits.index_items
    n = len(req.records) + len(req.documents)
    if n == 0:
        raise ApiError(422, "missing", "give records or documents to index", "records")
    if n > limit:
        raise ApiError(422, "too_many", f"{n} records and documents, the limit is {limit}", "records")
    for i, rec in enumerate(req.records):  # strict JSON types, as every other request field
        try:
            RecordTypes.model_validate(rec)
        except ValidationError as e:
            err = validation_error(RequestValidationError([{**x, "loc": ("records", i, *x["loc"])}
                                                           for x in e.errors()]))
            raise err from None
    t0 = time.perf_counter()
    report = state.session.index(records=req.records, documents=[d.model_dump() for d in req.documents],
                                 chunk_size=req.chunk_size, overlap=req.overlap)
    request.state.info["stages"] = {"index": round((time.perf_counter() - t0) * 1000, 3)}
    request.state.info["chunks_written"] = report.chunks_written
    return validated(IndexOut, report.to_json(), request)


@router.delete("/v1/documents/{doc:path}", response_model=DeleteOut,
               responses={403: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def delete_route(doc: str, request: Request, version: int | None = Query(None, ge=1),
                 ident: Identity = Depends(admin), state: ServiceState = Depends(state_of)) -> JSONResponse:
    """Remove a document, or one version of it (admin key)."""
    try:
        n = state.session.delete(doc, version)
    except InputError as e:
        raise ApiError(404, "not_found", str(e), "doc") from None
    return validated(DeleteOut, {"doc": doc, "version": version, "deleted_chunks": n}, request)


__all__ = ["router"]
