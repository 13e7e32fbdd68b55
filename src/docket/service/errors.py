"""Every failure as one JSON error, `{"error": {"code", "message", "field"}}`, with the field at
fault: ApiError, the translation of docket's and FastAPI's errors, the app's handlers, and the
route class that reads a JSON body refusing a key given twice."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from docket import deadline
from docket.errors import DocketError, InputError, UnavailableError
from docket.llm.errors import EndpointTimeout, LLMError
from docket.safeio import DuplicateKey, decode_json

log = logging.getLogger("docket.server")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 headers: dict[str, str] | None = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.headers = headers or {}
        self.extra = extra or {}

    def response(self) -> JSONResponse:
        body: dict[str, Any] = {"error": {"code": self.code, "message": self.message, "field": self.field}}
        body.update(self.extra)
        return JSONResponse(body, status_code=self.status, headers=self.headers)


_PATHLIKE = re.compile(r"^[A-Za-z_]+(\[\d+\])*(\.[A-Za-z_]+(\[\d+\])*)*$")


def input_error(e: InputError) -> ApiError:
    where, fld = e.where, e.field
    name: str | None = fld
    if where and _PATHLIKE.match(where):
        name = f"{where}.{fld}" if fld else where
    return ApiError(422, "invalid", str(e), name)


class _KeyTwice(StarletteHTTPException):
    """400 `duplicate_key`: the body gives a key twice in one object. Starlette's request.json()
    keeps the last copy; the caller's own reader (or the proxy or audit log before us) may have
    kept the first, so `"acl": [...], ..., "acl": null` would mean two things. An HTTP exception
    because FastAPI passes those through its body reading as they are."""

    code = "duplicate_key"

    def __init__(self, e: DuplicateKey) -> None:
        super().__init__(400, f"{e.path}: {e.detail}")
        self.field = e.path


class _StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()  # as json.loads(bytes) reads it: UTF-8, -16 or -32, a BOM allowed
            try:
                self._json = decode_json(body.decode(json.detect_encoding(body), "surrogatepass"))
            except DuplicateKey as e:
                raise _KeyTwice(e) from None
        return self._json


class StrictJsonRoute(APIRoute):
    """A route whose JSON body is read by docket.safeio.decode_json (FastAPI reads a body through
    `request.json()`, json.loads); everything else is FastAPI's."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictJsonRequest(request.scope, request.receive))

        return strict


def _loc(parts: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for p in parts:
        if p in ("body", "query", "path") and not out:
            continue
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "body"


def validation_error(exc: RequestValidationError) -> ApiError:
    errs = list(exc.errors())
    first: dict[str, Any] = dict(errs[0]) if errs else {"type": "invalid", "msg": "invalid request", "loc": ("body",)}
    kind = first.get("type", "")
    if kind in ("json_invalid", "json_type"):
        ctx = first.get("ctx") or {}
        return ApiError(400, "malformed_json", f"the body is not valid JSON ({ctx.get('error', first.get('msg'))})",
                        "body")
    if kind == "missing":  # `qestion` sent for `question`: name the misspelt key, not only the absent one
        unknown = [e for e in errs if e.get("type") == "extra_forbidden"
                   and tuple(e.get("loc", ()))[:-1] == tuple(first.get("loc", ()))[:-1]]
        if unknown:
            import difflib

            wanted = str(tuple(first.get("loc", ("",)))[-1])
            given = [str(tuple(e.get("loc", ("",)))[-1]) for e in unknown]
            near = difflib.get_close_matches(wanted, given, n=1, cutoff=0.6)
            pick = unknown[given.index(near[0])] if near else unknown[0]
            loc = _loc(tuple(pick.get("loc", ())))
            hint = f"did you mean {wanted!r}? it is required" if near else f"and {_loc(tuple(first.get('loc', ())))} is required"
            return ApiError(422, "unknown_field", f"{loc} is not a known field ({hint}; see /openapi.json)", loc)
    loc = _loc(tuple(first.get("loc", ())))
    if kind == "extra_forbidden":
        return ApiError(422, "unknown_field", f"{loc} is not a known field (check the spelling; see /openapi.json)", loc)
    if kind == "missing":
        return ApiError(422, "missing", f"{loc} is required", loc)
    if kind in _STRICT_TYPES and "input" in first:  # strict fields: say what JSON type came instead
        return ApiError(422, "invalid", f"{loc} must be {_STRICT_TYPES[kind]}, got {_json_kind(first['input'])} "
                        "(values are not converted between JSON types)", loc)
    msg = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    return ApiError(422, "invalid", f"{loc}: {msg}", loc)


#: pydantic's strict type errors, as what the field takes
_STRICT_TYPES = {"int_type": "a JSON integer", "float_type": "a JSON number", "bool_type": "true or false",
                 "string_type": "a JSON string", "list_type": "a JSON array", "dict_type": "a JSON object",
                 "model_type": "a JSON object", "model_attributes_type": "a JSON object", "date_type": "a date "
                 "as a YYYY-MM-DD string", "int_from_float": "a JSON integer"}


def _json_kind(value: Any) -> str:
    """A value as the JSON the caller sent: `the string "50"`, `true`, `a number (5.5)`, `an array`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40])}"
    if isinstance(value, int | float):
        return f"the number {value!r}"[:60]
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def llm_error(e: LLMError) -> ApiError:
    if isinstance(e, EndpointTimeout) or getattr(e, "kind", "") == "timeout":
        return ApiError(504, "generator_timeout", str(e))
    if getattr(e, "kind", "") == "config":
        return ApiError(503, "no_generator", str(e))
    return ApiError(502, "generator_failed", str(e))


def internal_error(exc: Exception, rid: str) -> ApiError:
    """A bug: say so and where to look, never the exception's text (it may hold a document's)."""
    return ApiError(500, "internal", f"internal error ({type(exc).__name__}); see the server log, request id {rid}")


# --- the app's handlers ------------------------------------------------------------------------


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    request.state.info["error"] = exc.code
    return exc.response()


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    err = validation_error(exc)
    request.state.info["error"] = err.code
    return err.response()


async def _bad_input(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InputError)
    err = input_error(exc)
    request.state.info["error"] = err.code
    return err.response()


def docket_error(request: Request, exc: DocketError) -> ApiError:
    """A DocketError raised below a route, as the caller may see it."""
    if isinstance(exc, deadline.OverBudget):
        return ApiError(503, "over_budget", str(exc), None, extra={"limit": {exc.limit: exc.seconds}})
    if isinstance(exc, deadline.Abandoned):
        return ApiError(499, "client_gone", str(exc))
    if isinstance(exc, UnavailableError):  # a feature this server lacks (a package, a model): say which
        return llm_error(exc) if isinstance(exc, LLMError) else ApiError(503, "unavailable", str(exc))
    # the server's own state (its store, its files): the details are the operator's, in the log
    rid = request.state.request_id
    log.error(json.dumps({"ts": round(time.time(), 3), "id": rid, "event": "server_error",
                          "error": str(exc)}, ensure_ascii=False))
    return ApiError(503, "unavailable", f"the server cannot answer this request right now; the operator is "
                    f"told (request id {rid})")


async def _docket_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DocketError)
    err = docket_error(request, exc)
    request.state.info["error"] = err.code
    return err.response()


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = getattr(exc, "code", None) or {404: "not_found", 405: "method_not_allowed", 408: "timeout",
                                          413: "too_large"}.get(exc.status_code, "http_error")
    fld = getattr(exc, "field", None) or ("body" if exc.status_code in (400, 408, 413) else None)
    request.state.info["error"] = code
    return ApiError(exc.status_code, code, str(exc.detail), fld, headers=dict(exc.headers or {})).response()


async def _bug(request: Request, exc: Exception) -> JSONResponse:  # a bug: say so, log it, never leak text
    log.exception("unhandled error in %s", request.url.path)
    return internal_error(exc, request.state.request_id).response()


def install_handlers(app: FastAPI) -> None:
    """The app's exception handlers: each error class answered as one JSON error."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(InputError, _bad_input)
    app.add_exception_handler(DocketError, _docket_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _bug)


__all__ = ["ApiError", "StrictJsonRoute", "docket_error", "input_error", "install_handlers", "internal_error", "llm_error",
           "validation_error"]
