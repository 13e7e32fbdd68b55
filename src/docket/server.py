"""`docket serve`: the HTTP service over the session (docket.api), FastAPI + uvicorn.

    POST /v1/assemble   your ranked candidates in, the brief out
    POST /v1/ask        retrieve from the store as the key's principal, assemble
    POST /v1/answer     ask + generate + check; server-sent events (delta, answer, check, done)
    POST /v1/check      check an answer against its brief
    POST /v1/index      index records or documents             (admin key)
    DELETE /v1/documents/{doc}                                 (admin key)
    GET /healthz  /readyz  /metrics (Prometheus)

Who asks comes only from the API key (`Authorization: Bearer KEY`, keys in a file stored
hashed, docket.keys): never from the body. No key: public chunks only, or 401 when the server
requires keys. Every error is JSON, `{"error": {"code", "message", "field"}}`, with the field at
fault: 400 malformed JSON, 401/403 keys, 404, 413 body too large, 422 invalid or over a limit,
502/504 the model failed or timed out, 503 not ready. One JSON log line per request (id,
principal, endpoint, status, timings, token counts; never document or question text).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from docket import deadline
from docket.api import AnswerEvent, Session, embedder_named
from docket.blas import limit_process
from docket.brief.result import Brief
from docket.errors import DocketError, InputError, UnavailableError
from docket.keys import ApiKey, KeyFile
from docket.llm.errors import EndpointTimeout, LLMError
from docket.policy import Policy, load_policy
from docket.schemas import (
    AnswerOut,
    AnswerRequest,
    AskRequest,
    AssembleRequest,
    BriefOut,
    CandidateIn,
    CheckOut,
    CheckRequest,
    DeleteOut,
    ErrorOut,
    IndexOut,
    IndexRequest,
    RecordTypes,
)
from docket.store.access import readable
from docket.store.protocol import Filters, Principal
from docket.trace_store import TraceStore, candidate_rows

try:
    import anyio
    import anyio.to_thread
    from fastapi import Depends, FastAPI, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, StreamingResponse
    from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as e:  # pragma: no cover - depends on the environment
    raise UnavailableError("the service needs the server extra: pip install 'docket[server]'") from e

log = logging.getLogger("docket.server")
T = TypeVar("T")

#: the prompt sections whose tokens /metrics histograms (the spec's "log the tokens of each
#: prompt section per request and watch p50 and p95")
SECTIONS = ("system", "history", "documents", "tags", "question")
CONFIG_ENV = "DOCKET_SERVER_CONFIG"


@dataclass
class Limits:
    """What one request may carry; over a limit is 413 (body) or 422 naming the field."""

    body_bytes: int = 8 * 1024 * 1024
    candidates: int = 1000
    text_chars: int = 50_000
    question_chars: int = 4_000
    history_turns: int = 200
    history_chars: int = 200_000
    index_items: int = 20_000
    #: distinct versions of one document among a request's candidates (resolving and comparing
    #: versions grows faster than their number)
    versions_per_doc: int = 100
    #: seconds /readyz waits for the store before it says not ready
    ready_seconds: float = 5.0
    #: seconds a request's body may take to arrive, from its head (then 408; a slow upload must
    #: not hold a connection and a task for as long as it likes; docket.http_guard bounds the head)
    body_seconds: float = 30.0
    #: the work of one request (retrieval and assembly, not the model call): wall seconds, and CPU
    #: seconds of its worker thread; over either it stops with 503 `over_budget` naming the limit
    wall_seconds: float = 30.0
    cpu_seconds: float = 15.0


@dataclass
class ServerConfig:
    """Everything `docket serve` takes; JSON-serialisable so worker processes can rebuild it."""

    db: str = "docket.db"
    keys: str | None = None
    require_key: bool = False
    llm: str | None = None
    model: str | None = None
    generator_timeout: float = 60.0
    policy: str | None = None
    embedder: str = "minilm"
    create: bool = True
    #: requests handled at once per process (sync handlers run in threads; the assembler is
    #: CPU-bound Python, so more threads than cores only interleave under the GIL)
    threads: int = 8
    log_level: str = "info"
    #: briefs kept per process for GET /v1/trace/{id} (the oldest go first)
    traces: int = 256
    limits: Limits = field(default_factory=Limits)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServerConfig:
        data = json.loads(text)
        data["limits"] = Limits(**data.get("limits", {}))
        return cls(**data)


def session_from_config(config: ServerConfig) -> Session:
    generator = None
    if config.llm:
        from docket.llm import generator_from_url

        generator = generator_from_url(config.llm, model=config.model, timeout=config.generator_timeout)
    embedder_named(config.embedder)  # a bad name fails at start-up, not on the first request
    policy = load_policy(config.policy) if config.policy else Policy()
    return Session.open(config.db, create=config.create, policy=policy, generator=generator,
                        generator_timeout=config.generator_timeout, new_store_embedder=config.embedder)


# --- errors ---------------------------------------------------------------------------------


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


def _input_error(e: InputError) -> ApiError:
    where, fld = e.where, e.field
    name: str | None = fld
    if where and _PATHLIKE.match(where):
        name = f"{where}.{fld}" if fld else where
    return ApiError(422, "invalid", str(e), name)


def _loc(parts: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for p in parts:
        if p in ("body", "query", "path") and not out:
            continue
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "body"


def _validation_error(exc: RequestValidationError) -> ApiError:
    errs = list(exc.errors())
    first: dict[str, Any] = dict(errs[0]) if errs else {"type": "invalid", "msg": "invalid request", "loc": ("body",)}
    kind = first.get("type", "")
    if kind in ("json_invalid", "json_type"):
        ctx = first.get("ctx") or {}
        return ApiError(400, "malformed_json", f"the body is not valid JSON ({ctx.get('error', first.get('msg'))})",
                        "body")
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


# --- metrics --------------------------------------------------------------------------------


class Metrics:
    """Prometheus metrics of one app (its own registry, so tests and apps do not share counts).

    With several uvicorn workers set PROMETHEUS_MULTIPROC_DIR: /metrics then adds up every worker.
    """

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("docket_requests", "HTTP requests by endpoint, method and status",
                                ["endpoint", "method", "status"], registry=self.registry)
        self.latency = Histogram("docket_request_duration_seconds", "Request latency by endpoint", ["endpoint"],
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
                                 registry=self.registry)
        self.stage = Histogram("docket_stage_duration_seconds", "Time per stage of a request (retrieve, assemble, "
                               "generate, check)", ["stage"],
                               buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30),
                               registry=self.registry)
        self.tokens = Histogram("docket_prompt_tokens", "Tokens per prompt section per brief (system, history, "
                                "documents, tags, question)", ["section"],
                                buckets=(0, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600),
                                registry=self.registry)

    def exposition(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            reg = CollectorRegistry()
            multiprocess.MultiProcessCollector(reg)
            return generate_latest(reg), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


# --- identity -------------------------------------------------------------------------------


@dataclass
class Identity:
    key: ApiKey | None
    principal: Principal | None

    @property
    def name(self) -> str:
        return self.key.principal if self.key else "anonymous"


#: only for the OpenAPI schema's security scheme: the header itself is read by `bearer_token`
_bearer = HTTPBearer(auto_error=False, description="An API key from `docket keys add` (`Authorization: Bearer KEY`).")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
#: RFC 6750's b64token: what may follow "Bearer " (docket's keys are dk_ + URL-safe base64)
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_WHITESPACE_NAMES = {" ": "a space", "\t": "a tab", "\r": "a carriage return", "\n": "a line break"}


def bearer_token(values: list[str]) -> str:
    """The key of an `Authorization` header, exactly `Bearer KEY`: one header, the scheme, one
    space, the token, nothing around or inside it. Anything else is refused with the reason
    (a lenient parser is how a proxy and docket come to disagree about who is asking)."""

    def refuse(why: str) -> ApiError:
        return ApiError(401, "unauthorized", f"the Authorization header is refused: {why}; send exactly "
                        "'Authorization: Bearer KEY'", "authorization", {"WWW-Authenticate": "Bearer"})

    if len(values) != 1:
        raise refuse(f"it appears {len(values)} times, send it once")
    value = values[0]
    scheme, sep, token = value.partition(" ")
    if not sep:
        ws = next((c for c in value if c in _WHITESPACE_NAMES), None)
        if ws is not None:
            raise refuse(f"{_WHITESPACE_NAMES[ws]} separates the scheme from the key, where one space goes")
        raise refuse("no key after the scheme" if scheme.lower() == "bearer" else "it has no scheme and key")
    if scheme.lower() != "bearer":
        shown = scheme if scheme.isascii() and scheme.isprintable() and len(scheme) <= 20 else "another scheme"
        raise refuse(f"the scheme is {shown!r}, not Bearer")
    if not token:
        raise refuse("no key after 'Bearer '")
    ws = next((c for c in token if c in _WHITESPACE_NAMES), None)
    if ws is not None:
        blanks = "".join(_WHITESPACE_NAMES)
        where = ("before the key" if token[0] in blanks else
                 "after the key" if not any(c in blanks for c in token.rstrip(blanks)) else "inside the key")
        raise refuse(f"{_WHITESPACE_NAMES[ws]} {where} (one space between 'Bearer' and the key, nothing else)")
    if not _TOKEN.fullmatch(token):
        raise refuse("the key holds characters no key has")
    return token


# --- the app --------------------------------------------------------------------------------


def create_app(config: ServerConfig | None = None, *, session: Session | None = None,
               keys: KeyFile | None = None) -> FastAPI:
    """The FastAPI app. Tests pass their own `session` (and `keys`); `docket serve` passes neither."""
    config = config or ServerConfig()
    if config.require_key and keys is None and not config.keys:
        raise InputError("requires keys but no key file is given; add one with `docket keys add` and pass --keys",
                         field="--require-key")
    keys = keys if keys is not None else (KeyFile(config.keys) if config.keys else None)
    session = session if session is not None else session_from_config(config)
    limits = config.limits
    metrics = Metrics()
    traces = TraceStore(config.traces)
    policies: dict[str | None, Policy] = {None: session.policy}

    def policy_for(fmt: str | None) -> Policy:
        if fmt not in policies:
            policies[fmt] = session.policy.updated(render={"format": fmt})
        return policies[fmt]

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = max(1, config.threads)
        yield

    app = FastAPI(
        lifespan=lifespan,
        title="docket",
        version=_version(),
        description="Context assembly for RAG: which passages go into the prompt, in what form and order, and why. "
                    "Errors are JSON: {\"error\": {\"code\", \"message\", \"field\"}}.",
        responses={400: {"model": ErrorOut}, 401: {"model": ErrorOut}, 413: {"model": ErrorOut},
                   422: {"model": ErrorOut}},
    )
    app.state.session = session
    app.state.metrics = metrics
    app.state.keys = keys

    # --- middleware: request id, body limit, log line, metrics ------------------------------
    class BodyLimit:
        """413 before the handler reads a body over the limit (Content-Length or streamed), 408
        when it arrives too slowly, 415 when it is not JSON; and, once the body is in, a watch for
        the client going away (`request.state.client_gone`), which Starlette's
        `is_disconnected` cannot see through a `@app.middleware` layer."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                           send: Callable[[Any], Awaitable[None]]) -> None:
            if scope["type"] != "http":
                await self.inner(scope, receive, send)
                return
            if scope.get("method") == "POST" and (problem := _not_json(scope)):
                await _send_error(send, 415, "unsupported_media_type", problem, "content-type")
                return
            limit = limits.body_bytes
            for name, value in scope.get("headers", []):
                if name == b"content-length":
                    try:
                        too_big = int(value) > limit
                    except ValueError:
                        too_big = False
                    if too_big:
                        await _send_413(send, limit)
                        return
            seen = 0
            body_done = False
            body_end = time.monotonic() + limits.body_seconds
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
                    raise _SlowBody(limits.body_seconds)
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

    app.add_middleware(BodyLimit)

    @app.middleware("http")
    async def observe(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        rid = request.headers.get("x-request-id", "")
        rid = rid if _REQUEST_ID.match(rid) else uuid.uuid4().hex
        request.state.request_id = rid
        request.state.info = {}
        t0 = time.perf_counter()
        try:
            response = await call_next(request)
        except Exception as exc:  # a bug below: still one JSON error and one log line
            log.exception("unhandled error in %s", request.url.path)
            response = ApiError(500, "internal", f"internal error ({type(exc).__name__}); see the server log, "
                                f"request id {rid}").response()
        seconds = time.perf_counter() - t0
        route = request.scope.get("route")
        endpoint = getattr(route, "path", None) or "unmatched"
        metrics.requests.labels(endpoint, request.method, str(response.status_code)).inc()
        metrics.latency.labels(endpoint).observe(seconds)
        info = request.state.info
        for stage, ms in (info.get("stages") or {}).items():
            metrics.stage.labels(stage).observe(ms / 1000)
        for section in SECTIONS:
            n = (info.get("tokens") or {}).get(section)
            if isinstance(n, int):
                metrics.tokens.labels(section).observe(n)
        response.headers["x-request-id"] = rid
        if info.get("stages"):
            response.headers["server-timing"] = ", ".join(f"{k};dur={v:.2f}" for k, v in info["stages"].items())
        line = {"ts": round(time.time(), 3), "id": rid, "method": request.method, "endpoint": endpoint,
                "status": response.status_code, "ms": round(seconds * 1000, 2), **info}
        log.info(json.dumps(line, ensure_ascii=False, default=str))
        return response

    # --- error handlers ----------------------------------------------------------------------
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        request.state.info["error"] = exc.code
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        err = _validation_error(exc)
        request.state.info["error"] = err.code
        return err.response()

    @app.exception_handler(InputError)
    async def _bad_input(request: Request, exc: InputError) -> JSONResponse:
        err = _input_error(exc)
        request.state.info["error"] = err.code
        return err.response()

    @app.exception_handler(DocketError)
    async def _docket_error(request: Request, exc: DocketError) -> JSONResponse:
        if isinstance(exc, deadline.OverBudget):
            err = ApiError(503, "over_budget", str(exc), None, extra={"limit": {exc.limit: exc.seconds}})
        elif isinstance(exc, deadline.Abandoned):
            err = ApiError(499, "client_gone", str(exc))
        elif isinstance(exc, UnavailableError):  # a feature this server lacks (a package, a model): say which
            err = _llm_error(exc) if isinstance(exc, LLMError) else ApiError(503, "unavailable", str(exc))
        else:  # the server's own state (its store, its files): the details are the operator's, in the log
            rid = request.state.request_id
            log.error(json.dumps({"ts": round(time.time(), 3), "id": rid, "event": "server_error",
                                  "error": str(exc)}, ensure_ascii=False))
            err = ApiError(503, "unavailable", f"the server cannot answer this request right now; the operator is "
                           f"told (request id {rid})")
        request.state.info["error"] = err.code
        return err.response()

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 408: "timeout", 413: "too_large"}.get(exc.status_code,
                                                                                                  "http_error")
        fld = "body" if exc.status_code in (400, 408, 413) else None
        request.state.info["error"] = code
        return ApiError(exc.status_code, code, str(exc.detail), fld, headers=dict(exc.headers or {})).response()

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:  # a bug: say so, log it, never leak text
        log.exception("unhandled error in %s", request.url.path)
        return ApiError(500, "internal", f"internal error ({type(exc).__name__}); see the server log, request id "
                        f"{request.state.request_id}").response()

    # --- identity ----------------------------------------------------------------------------
    def verify(request: Request, token: str) -> ApiKey | None:
        """The key's identity; a key file that broke while the server runs is the operator's
        problem: the path and reason go to the log, the caller gets a generic 503."""
        if keys is None:
            return None
        try:
            return keys.verify(token)
        except DocketError as e:
            rid = request.state.request_id
            log.error(json.dumps({"ts": round(time.time(), 3), "id": rid, "event": "key_file_unreadable",
                                  "error": str(e)}, ensure_ascii=False))
            raise ApiError(503, "unavailable", f"the server cannot check API keys right now; the operator is told "
                           f"(request id {rid})") from None

    def identity(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Identity:
        values = request.headers.getlist("authorization")
        challenge = {"WWW-Authenticate": "Bearer"}
        if not values:
            if config.require_key:
                raise ApiError(401, "unauthorized", "an API key is required: send Authorization: Bearer KEY",
                               "authorization", challenge)
            request.state.info["principal"] = "anonymous"
            return Identity(None, None)
        key = verify(request, bearer_token(values))
        if key is None:
            raise ApiError(401, "unauthorized", "unknown API key", "authorization", challenge)
        who = session.principal(key.principal, key.groups)
        request.state.info["principal"] = key.principal
        request.state.info["key"] = key.name
        return Identity(key, who)

    def admin(ident: Identity = Depends(identity)) -> Identity:
        if ident.key is None:
            raise ApiError(401, "unauthorized", "this route needs an admin API key", "authorization",
                           {"WWW-Authenticate": "Bearer"})
        if not ident.key.admin:
            raise ApiError(403, "forbidden", f"the key {ident.key.name!r} is not an admin key; writes need one "
                           "(`docket keys add NAME --principal P --admin`)", "authorization")
        return ident

    # --- helpers -------------------------------------------------------------------------------
    def ignored_identity_fields(req: Any) -> list[str]:
        sent = [f for f in ("principal", "groups") if getattr(req, f, None) is not None]
        return [f"{f!r} in the body is ignored: who asks comes from the API key only" for f in sent]

    def check_question(q: str) -> None:
        if not q.strip():
            raise ApiError(422, "invalid", "question is empty; ask a question", "question")
        if len(q) > limits.question_chars:
            raise ApiError(422, "too_long", f"question has {len(q)} characters, the limit is {limits.question_chars}",
                           "question")

    def check_history(req: Any) -> None:
        hist = req.history or []
        if len(hist) > limits.history_turns:
            raise ApiError(422, "too_many", f"history has {len(hist)} turns, the limit is {limits.history_turns}",
                           "history")
        total = 0
        for i, m in enumerate(hist):
            total += len(m.content)
            if total > limits.history_chars:
                raise ApiError(422, "too_long", f"history holds more than {limits.history_chars} characters",
                               f"history[{i}].content")

    def record(request: Request, brief: Brief, ms: dict[str, float], extra: dict[str, Any] | None = None) -> None:
        tk = brief.tokens
        request.state.info.update({
            "found": brief.found, "passages": tk.passages,
            "tokens": {"system": tk.system, "history": tk.history or 0, "documents": tk.documents, "tags": tk.tags or 0,
                       "question": tk.question, "total": tk.total},
            "stages": ms, **(extra or {}),
        })

    def owner_of(ident: Identity) -> str | None:
        """Who may read a brief's trace page: the key that asked (its digest, so a key re-issued
        under the same name and principal is someone else), or nobody for an anonymous caller
        (anonymous callers are not one person; their briefs get no trace page)."""
        return f"key:{ident.key.digest}" if ident.key is not None and ident.key.digest else None

    def brief_json(brief: Brief, warnings: list[str], ident: Identity | None = None,
                   candidates: Any = None) -> dict[str, Any]:
        out = brief.to_json()
        if warnings:
            out["warnings"] = list(out["warnings"]) + warnings
        owner = owner_of(ident) if ident is not None else None
        if owner is not None:  # kept for GET /v1/trace/{id}, readable by this key only
            out["trace_id"] = traces.put(owner, dict(out), candidate_rows(candidates))
        return out

    def attachments_of(req: Any) -> list[Any] | None:
        """The request's files as docket Attachments (the reading errors come from docket.modes)."""
        from docket.modes.attach import Attachment

        if not req.attachments:
            return None
        out = []
        for i, a in enumerate(req.attachments):
            where = f"attachments[{i}]"
            if (a.text is None) == (a.data_base64 is None):
                raise ApiError(422, "invalid", "give the file's content as text or as data_base64, exactly one", where)
            if a.text is not None:
                data = a.text.encode("utf-8", "surrogatepass")  # a lone surrogate: replaced and counted when read
            else:
                try:
                    data = base64.b64decode(a.data_base64, validate=True)
                except (binascii.Error, ValueError):
                    raise ApiError(422, "invalid", "is not valid base64", f"{where}.data_base64") from None
            out.append(Attachment(name=a.name, data=data, kind=a.kind))
        return out

    def run_ask(req: AskRequest, ident: Identity) -> Any:
        check_question(req.question)
        check_history(req)
        f = req.filters
        filters = Filters(docs=tuple(f.docs), source_types=tuple(f.source_types), statuses=tuple(f.statuses),
                          date_from=f.since, date_to=f.until) if f else None
        return session.ask(req.question, principal=ident.principal, filters=filters, k=req.k, mode=req.mode,
                           history=req.history, policy=policy_for(req.format), budget=req.budget, floor=req.floor,
                           as_of=req.as_of, attachments=attachments_of(req), whole_corpus=req.whole_corpus)

    async def bounded(request: Request, work: Callable[[], T]) -> T:
        """`work()` in a worker thread (the event loop, and /healthz with it, stays free) under the
        request's budget (docket.deadline: wall and CPU seconds), stopped when the client goes."""
        budget = deadline.Budget(wall_seconds=limits.wall_seconds, cpu_seconds=limits.cpu_seconds)

        def run() -> T:
            with budget.active():
                return work()

        async def watch() -> None:
            gone = getattr(request.state, "client_gone", None)  # set by BodyLimit (a TestClient may lack it)
            if gone is not None:
                await gone.wait()
                budget.cancel()

        failed: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            try:
                result = await anyio.to_thread.run_sync(run)
            except Exception as e:  # raised below, outside the task group (which would wrap it)
                failed = e
            tg.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return result

    def check_versions(items: list[CandidateIn]) -> None:
        seen: dict[str, set[int | None]] = {}
        for i, c in enumerate(items):
            if c.doc is None:
                continue
            versions = seen.setdefault(c.doc, set())
            versions.add(c.version)
            if len(versions) > limits.versions_per_doc:
                raise ApiError(422, "too_many", f"more than {limits.versions_per_doc} versions of document {c.doc!r} "
                               "among the candidates (the limit per document); send the versions that matter",
                               f"candidates[{i}].version")

    # --- routes -------------------------------------------------------------------------------
    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers (on the event loop: no request's work stands in front)."""
        return {"status": "ok"}

    ready_threads = anyio.CapacityLimiter(2)  # readiness never waits behind the requests' threads

    @app.get("/readyz", tags=["ops"], responses={503: {"model": ErrorOut}})
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: the store answers and the embedder is loaded. Says ready or not and nothing
        about the data; an admin key also gets the store's figures, the log gets the reason."""

        def probe() -> dict[str, Any]:
            stats = session.stats()
            session.embedder()
            return stats

        rid = request.state.request_id
        try:
            with anyio.fail_after(limits.ready_seconds):
                stats = await anyio.to_thread.run_sync(probe, limiter=ready_threads, abandon_on_cancel=True)
        except (DocketError, TimeoutError) as e:
            why = str(e) if isinstance(e, DocketError) else f"no answer from the store within {limits.ready_seconds:g} s"
            log.error(json.dumps({"ts": round(time.time(), 3), "id": rid, "event": "not_ready", "error": why},
                                 ensure_ascii=False))
            return JSONResponse({"ready": False, "error": {"code": "unavailable", "message": "not ready; the reason "
                                 f"is in the server log (request id {rid})", "field": None}}, status_code=503)
        values = request.headers.getlist("authorization")
        if values:  # the figures are for an admin key only; any other header is ignored here
            try:
                key = await anyio.to_thread.run_sync(verify, request, bearer_token(values), limiter=ready_threads)
            except ApiError:
                key = None
            if key is not None and key.admin:
                return JSONResponse({"ready": True, **stats})
        return JSONResponse({"ready": True})

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    def metrics_route() -> PlainTextResponse:
        """Prometheus text format: requests and latency per endpoint, tokens per prompt section."""
        body, ctype = metrics.exposition()
        return PlainTextResponse(body, media_type=ctype)

    @app.post("/v1/assemble", response_model=BriefOut, tags=["briefs"])
    async def assemble_route(req: AssembleRequest, request: Request,
                             ident: Identity = Depends(identity)) -> JSONResponse:
        """The brief from your own ranked candidates (best first): full records, or ids of chunks in
        the server's store. Candidates the key's principal may not read are dropped."""
        return await bounded(request, lambda: assemble_work(req, request, ident))

    def assemble_work(req: AssembleRequest, request: Request, ident: Identity) -> JSONResponse:
        check_question(req.question)
        check_history(req)
        if len(req.candidates) > limits.candidates:
            raise ApiError(422, "too_many", f"{len(req.candidates)} candidates, the limit is {limits.candidates}",
                           "candidates")
        for i, c in enumerate(req.candidates):
            if c.text is not None and len(c.text) > limits.text_chars:
                raise ApiError(422, "too_long", f"text has {len(c.text)} characters, the limit is {limits.text_chars}",
                               f"candidates[{i}].text")
        check_versions(req.candidates)
        t0 = time.perf_counter()
        cands, store = _candidates(session, req.candidates, ident.principal)
        if req.whole_corpus and not req.attachments:  # the corpus is the server's store, as the key may read it
            store = session.store
        t1 = time.perf_counter()
        brief = session.assemble(req.question, cands, store=store, history=req.history, principal=ident.principal,
                                 policy=policy_for(req.format), budget=req.budget, floor=req.floor, as_of=req.as_of,
                                 attachments=attachments_of(req), whole_corpus=req.whole_corpus)
        ms = {"parse": round((t1 - t0) * 1000, 3), "assemble": round((time.perf_counter() - t1) * 1000, 3)}
        record(request, brief, ms, {"candidates": len(cands)})
        # the trace page lists only the candidates this key may read: a restricted record the caller sent is
        # not named in it (as in the brief, which never held it)
        return JSONResponse(brief_json(brief, ignored_identity_fields(req), ident, readable(cands, ident.principal)))

    @app.post("/v1/ask", response_model=BriefOut, tags=["briefs"])
    async def ask_route(req: AskRequest, request: Request, ident: Identity = Depends(identity)) -> JSONResponse:
        """Retrieve from the store as the key's principal (public chunks without a key), assemble."""

        def work() -> JSONResponse:
            res = run_ask(req, ident)
            record(request, res.brief, res.timings, {"candidates": len(res.candidates)})
            return JSONResponse(brief_json(res.brief, ignored_identity_fields(req), ident, res.candidates))

        return await bounded(request, work)

    @app.post("/v1/answer", response_model=AnswerOut, tags=["answers"],
              responses={200: {"content": {"text/event-stream": {}}}, 502: {"model": ErrorOut},
                         503: {"model": ErrorOut}, 504: {"model": ErrorOut}})
    async def answer_route(req: AnswerRequest, request: Request, ident: Identity = Depends(identity)) -> Any:
        """Ask, generate and check. With `stream` (default) server-sent events: `brief`, `delta`
        (text pieces), `answer`, `check`, `error`, `done`; otherwise one JSON object (502/504
        with the brief when the model fails or times out)."""
        if session.generator is None:
            raise ApiError(503, "no_generator", "this server has no model: start it with `docket serve --llm URL`")
        res = await bounded(request, lambda: run_ask(req, ident))  # the model call has its own --timeout
        warnings = ignored_identity_fields(req)
        info = request.state.info
        record(request, res.brief, dict(res.timings))
        if not req.stream:
            t0 = time.perf_counter()
            report = await anyio.to_thread.run_sync(lambda: session.generate(
                res.brief, allowed_domains=req.allowed_domains, structured=req.structured))
            info["stages"]["generate"] = round((time.perf_counter() - t0) * 1000, 3)
            body = brief_json(res.brief, warnings, ident, res.candidates)
            body.update(report.to_json())
            if report.error:
                err = EndpointTimeout(report.error) if report.error_kind == "timeout" else LLMError(report.error)
                api = _llm_error(err)
                info["error"] = api.code
                return JSONResponse({**body, "error": {"code": api.code, "message": report.error, "field": None}},
                                    status_code=api.status)
            return JSONResponse(body)
        rid = request.state.request_id

        def events() -> Iterator[str]:
            yield _sse("brief", brief_json(res.brief, warnings, ident, res.candidates))
            t0 = time.perf_counter()
            for ev in session.stream(res.brief, allowed_domains=req.allowed_domains, structured=req.structured):
                yield _sse(ev.kind, _event_data(ev, rid))
            info["stages"]["generate"] = round((time.perf_counter() - t0) * 1000, 3)

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "x-accel-buffering": "no"})

    @app.get("/v1/trace/{trace_id}", response_class=HTMLResponse, tags=["briefs"], responses={404: {"model": ErrorOut}})
    def trace_route(trace_id: str, ident: Identity = Depends(identity)) -> HTMLResponse:
        """The trace of a brief this key received (its `trace_id`) as one self-contained HTML page:
        ranked candidates and their fate, every decision with its numbers, token bars, conflicts,
        the final prompt. Kept in memory for the last `traces` briefs of this process."""
        from docket.trace_html import CSP, render_trace

        owner = owner_of(ident)
        if owner is None:
            raise ApiError(401, "unauthorized", "trace pages are served to API keys only (an anonymous brief has none; "
                           "`docket assemble --html` writes one)", "authorization", {"WWW-Authenticate": "Bearer"})
        kept = traces.get(trace_id, owner)
        if kept is None:  # unknown, expired, or another key's: the same answer, so ids do not leak
            raise ApiError(404, "not_found", "no trace with this id for this key (traces are kept for the last "
                           f"{traces.capacity} briefs of the process that served them)", "trace_id")
        return HTMLResponse(render_trace(kept.brief, kept.candidates),
                            headers={"content-security-policy": CSP, "x-content-type-options": "nosniff",
                                     "cache-control": "no-store", "referrer-policy": "no-referrer"})

    @app.post("/v1/check", response_model=CheckOut, tags=["answers"])
    async def check_route(req: CheckRequest, request: Request, ident: Identity = Depends(identity)) -> JSONResponse:
        """Check an answer's citations against the brief it was written from."""
        return await bounded(request, lambda: check_work(req, request))

    def check_work(req: CheckRequest, request: Request) -> JSONResponse:
        size = len(req.answer) if isinstance(req.answer, str) else len(json.dumps(req.answer, ensure_ascii=False))
        if size > limits.history_chars:
            raise ApiError(422, "too_long", f"answer holds more than {limits.history_chars} characters", "answer")
        t0 = time.perf_counter()
        report = session.check(req.answer, req.brief, allowed_domains=req.allowed_domains, strip=req.strip_links,
                               names=req.names)
        request.state.info["stages"] = {"check": round((time.perf_counter() - t0) * 1000, 3)}
        return JSONResponse(report.to_json())

    @app.post("/v1/index", response_model=IndexOut, tags=["store"], responses={403: {"model": ErrorOut}})
    def index_route(req: IndexRequest, request: Request, ident: Identity = Depends(admin)) -> JSONResponse:
        """Index chunk records and documents (admin key). Problems are reported per item; the rest
        is indexed."""
        n = len(req.records) + len(req.documents)
        if n == 0:
            raise ApiError(422, "missing", "give records or documents to index", "records")
        if n > limits.index_items:
            raise ApiError(422, "too_many", f"{n} records and documents, the limit is {limits.index_items}", "records")
        for i, rec in enumerate(req.records):  # strict JSON types, as every other request field
            try:
                RecordTypes.model_validate(rec)
            except ValidationError as e:
                err = _validation_error(RequestValidationError([{**x, "loc": ("records", i, *x["loc"])}
                                                                for x in e.errors()]))
                raise err from None
        t0 = time.perf_counter()
        report = session.index(records=req.records, documents=[d.model_dump() for d in req.documents],
                               chunk_size=req.chunk_size, overlap=req.overlap)
        request.state.info["stages"] = {"index": round((time.perf_counter() - t0) * 1000, 3)}
        request.state.info["chunks_written"] = report.chunks_written
        return JSONResponse(report.to_json())

    @app.delete("/v1/documents/{doc:path}", response_model=DeleteOut, tags=["store"],
                responses={403: {"model": ErrorOut}, 404: {"model": ErrorOut}})
    def delete_route(doc: str, request: Request, version: int | None = Query(None, ge=1),
                     ident: Identity = Depends(admin)) -> JSONResponse:
        """Remove a document, or one version of it (admin key)."""
        try:
            n = session.delete(doc, version)
        except InputError as e:
            raise ApiError(404, "not_found", str(e), "doc") from None
        return JSONResponse({"doc": doc, "version": version, "deleted_chunks": n})

    return app


class _TooLarge(StarletteHTTPException):
    """A streamed body went over the limit (FastAPI passes HTTP exceptions through as they are)."""

    def __init__(self) -> None:
        super().__init__(413, "the body is larger than the limit")


class _SlowBody(StarletteHTTPException):
    """The body did not arrive within the limit: 408, and the connection closes."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body did not arrive within {seconds:g} s", headers={"connection": "close"})


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


def _llm_error(e: LLMError) -> ApiError:
    if isinstance(e, EndpointTimeout) or getattr(e, "kind", "") == "timeout":
        return ApiError(504, "generator_timeout", str(e))
    if getattr(e, "kind", "") == "config":
        return ApiError(503, "no_generator", str(e))
    return ApiError(502, "generator_failed", str(e))


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


def _version() -> str:
    from docket import __version__

    return __version__


def app_from_env() -> FastAPI:
    """The app factory uvicorn workers call (`docket serve --workers N`): the config travels in
    the DOCKET_SERVER_CONFIG environment variable."""
    raw = os.environ.get(CONFIG_ENV)
    config = ServerConfig.from_json(raw) if raw else ServerConfig()
    configure_logging(config.log_level)  # each worker process logs its own JSON lines
    limit_process()  # requests run in worker threads, where docket.blas cannot hold BLAS per call
    app = create_app(config)
    app.state.session.warm_up()
    freeze_startup_objects()
    return app


def freeze_startup_objects() -> None:
    """Move what start-up loaded (models, indexes) out of the garbage collector's view: a full
    collection during a large request then scans only that request's objects, which keeps the
    pauses that stall every other request (and /healthz) short."""
    import gc

    gc.collect()
    gc.freeze()


def configure_logging(level: str = "info") -> None:
    """One JSON line per request on stderr (the CLI calls this; a library never configures logging)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False


__all__ = ["Limits", "ServerConfig", "app_from_env", "bearer_token", "configure_logging", "create_app",
           "freeze_startup_objects", "session_from_config"]
