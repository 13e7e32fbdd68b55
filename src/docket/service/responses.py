"""A route's JSON body checked against the response model it declares, then sent as built.

FastAPI validates a route's `response_model` only when the route returns data; docket's routes
return a `JSONResponse` (the body's bytes and key order are the contract, docs/contract.md), which
FastAPI passes through unchecked. `validated` closes that gap: the body must validate against the
declared model, or the request is a 500 (a bug) and the log says which fields; the caller never
gets a body that breaks the published schema."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError

from docket.service.errors import ApiError

log = logging.getLogger("docket.server")


def check_body(model: type[BaseModel], body: dict[str, Any], request: Request) -> None:
    """Raise a 500 ApiError when `body` does not validate against `model`. The log names the
    fields at fault and the error types, never their values (they may be documents' text)."""
    try:
        model.model_validate(body)
    except ValidationError as e:
        rid = getattr(request.state, "request_id", "")
        problems = [{"loc": ".".join(str(p) for p in x["loc"]), "type": x["type"]} for x in e.errors()[:10]]
        log.error(json.dumps({"ts": round(time.time(), 3), "id": rid, "event": "response_invalid",
                              "model": model.__name__, "problems": problems}, ensure_ascii=False))
        raise ApiError(500, "internal", f"internal error (the response does not match {model.__name__}); see the "
                       f"server log, request id {rid}") from None


def validated(model: type[BaseModel], body: dict[str, Any], request: Request, status_code: int = 200) -> JSONResponse:
    """`body` as the JSON response, once it validates against the route's declared `model`."""
    check_body(model, body, request)
    return JSONResponse(body, status_code=status_code)


__all__ = ["check_body", "validated"]
