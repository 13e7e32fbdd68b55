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

This module assembles the app from docket.service: the per-app state (`app.state.service`), the
middleware, the exception handlers and one router per group of routes (ops, briefs, store).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from docket.api import Session
from docket.blas import limit_process
from docket.errors import InputError, UnavailableError
from docket.keys import KeyFile
from docket.schemas import ErrorOut
from docket.service import briefs, ops, store
from docket.service.auth import Identity, bearer_token
from docket.service.collector import CollectAfterResponse, Collector, GcSettings, watch_idle
from docket.service.config import CONFIG_ENV, Limits, ServerConfig, session_from_config
from docket.service.errors import ApiError, install_handlers
from docket.service.metrics import SECTIONS, Metrics
from docket.service.middleware import BodyLimit, observe
from docket.service.state import ServiceState

try:
    from fastapi import FastAPI
except ImportError as e:  # pragma: no cover - depends on the environment (docket.service says so first)
    raise UnavailableError("the service needs the server extra: pip install 'docket[server]'") from e

log = logging.getLogger("docket.server")


def _lifespan(threads: int, collector: Collector) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        import anyio
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = max(1, threads)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_idle, collector)  # sweeps only once `docket serve` activated it
            yield
            tg.cancel_scope.cancel()

    return lifespan


def create_app(config: ServerConfig | None = None, *, session: Session | None = None,
               keys: KeyFile | None = None) -> FastAPI:
    """The FastAPI app. Tests pass their own `session` (and `keys`); `docket serve` passes neither."""
    config = config or ServerConfig()
    if config.require_key and keys is None and not config.keys:
        raise InputError("requires keys but no key file is given; add one with `docket keys add` and pass --keys",
                         field="--require-key")
    keys = keys if keys is not None else (KeyFile(config.keys) if config.keys else None)
    session = session if session is not None else session_from_config(config)
    service = ServiceState(config, session, keys)
    app = FastAPI(
        lifespan=_lifespan(config.threads, service.collector),
        title="docket",
        version=_version(),
        description="Context assembly for RAG: which passages go into the prompt, in what form and order, and why. "
                    "Errors are JSON: {\"error\": {\"code\", \"message\", \"field\"}}.",
        responses={400: {"model": ErrorOut}, 401: {"model": ErrorOut}, 413: {"model": ErrorOut},
                   422: {"model": ErrorOut}},
    )
    app.state.service = service
    app.state.session = session
    app.state.metrics = service.metrics
    app.state.keys = keys
    app.add_middleware(BodyLimit, limits=config.limits)  # inside observe: its 413/408 are logged too
    app.middleware("http")(observe)
    app.add_middleware(CollectAfterResponse, collector=service.collector)  # outermost: after the send
    install_handlers(app)
    for router in (ops.router, briefs.router, store.router):
        app.include_router(router)
    return app


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
    freeze_startup_objects(app)
    return app


def freeze_startup_objects(app: FastAPI) -> None:
    """Move what start-up loaded (models, indexes) out of the garbage collector's view and hand
    the process's collector to the app's policy (docket.service.collector): from now on each
    request's survivors are frozen once its response is sent, so no full collection scans the
    caches while requests wait. Only the process owner calls this; a library never does."""
    app.state.service.collector.activate()


def configure_logging(level: str = "info") -> None:
    """One JSON line per request on stderr (the CLI calls this; a library never configures logging)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False


__all__ = ["CONFIG_ENV", "SECTIONS", "ApiError", "GcSettings", "Identity", "Limits", "Metrics", "ServerConfig", "ServiceState",
           "app_from_env", "bearer_token", "configure_logging", "create_app", "freeze_startup_objects",
           "session_from_config"]
