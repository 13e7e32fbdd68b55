"""The HTTP service's parts (`docket serve`; docket.server assembles them into one app).

    config      Limits, ServerConfig, the session a config opens
    errors      ApiError, how every failure becomes one JSON error, the exception handlers
    metrics     the Prometheus metrics of one app
    auth        who asks: the bearer key, the identity and admin dependencies
    state       the per-app state (config, session, keys, limits, traces, policies) on app.state
    responses   a route's body checked against its declared response model
    middleware  BodyLimit (413/408/415, client gone) and observe (request id, log line, metrics)
    ops         GET /healthz /readyz /metrics
    briefs      POST /v1/assemble /v1/ask /v1/answer /v1/check, GET /v1/trace/{id}
    store       POST /v1/index, DELETE /v1/documents/{doc}
"""

from __future__ import annotations

from docket.errors import UnavailableError

try:
    import anyio  # noqa: F401
    import fastapi  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise UnavailableError("the service needs the server extra: pip install 'docket[server]'") from e
