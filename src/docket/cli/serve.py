"""`docket serve` (the HTTP service) and `docket keys` (its API keys)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.terminal import console as terminal_console
from docket.errors import InputError

if TYPE_CHECKING:
    from rich.table import Table
else:  # rich loads when a command prints (docket.cli.richlazy)
    from docket.cli.richlazy import Table

keys_app = typer.Typer(help="API keys of `docket serve`: each binds a principal, its groups and admin scope.",
                       no_args_is_help=True)
app.add_typer(keys_app, name="keys")

KEYS_ENV = "DOCKET_KEYS"
DEFAULT_KEYS = "docket-keys.json"
KeysPath = Annotated[Path, typer.Option("--keys", envvar=KEYS_ENV, help="The key file (JSON, keys stored hashed).")]


def _split(values: list[str] | None) -> tuple[str, ...]:
    return tuple(v.strip() for item in values or [] for v in item.split(",") if v.strip())


@keys_app.command("add")
def keys_add(
    name: Annotated[str, typer.Argument(help="A name for the key (who or what uses it).")],
    principal: Annotated[str, typer.Option("--principal", help="The principal the key asks as (as in chunk acls).")],
    groups: Annotated[list[str] | None, typer.Option("--groups", help="Groups of the principal (comma-separated).")] = None,
    admin: Annotated[bool, typer.Option("--admin", help="Allow writes: POST /v1/index, DELETE /v1/documents.")] = False,
    keys: KeysPath = Path(DEFAULT_KEYS),
) -> None:
    """Create a key and print it once (only its hash is stored: it cannot be shown again)."""
    from docket.keys import KeyFile

    token = KeyFile(keys).add(name, principal, _split(groups), admin=admin)
    typer.echo(token)
    scope = "admin" if admin else "read"
    terminal_console(stderr=True).print(f"key {name!r} for principal {principal!r} ({scope}) added to {keys}; "
                               "this is the only time it is shown", soft_wrap=True)


@keys_app.command("list")
def keys_list(keys: KeysPath = Path(DEFAULT_KEYS), as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The keys in the file (names, principals, groups, scope; never the keys)."""
    from docket.keys import KeyFile

    if not keys.exists():
        raise InputError("no key file here; create one with `docket keys add`", where=str(keys))
    found = KeyFile(keys).keys()
    if as_json:
        typer.echo(json.dumps([k.to_json() for k in found], indent=2))
        return
    t = Table(title=f"API keys in {keys}")
    for col in ("name", "principal", "groups", "scope", "starts with", "created"):
        t.add_column(col)
    for k in found:
        t.add_row(k.name, k.principal, ", ".join(k.groups), "admin" if k.admin else "read", k.hint + "…", k.created)
    terminal_console().print(t)


@keys_app.command("remove")
def keys_remove(name: Annotated[str, typer.Argument(help="The key's name.")], keys: KeysPath = Path(DEFAULT_KEYS)) -> None:
    """Revoke a key (a running server notices within a second)."""
    from docket.keys import KeyFile

    if not KeyFile(keys).remove(name):
        raise InputError("is not in the key file", where=f"key {name!r}")
    terminal_console(stderr=True).print(f"removed key {name!r} from {keys}")


@app.command("serve")
def serve_cmd(
    db: Annotated[str, typer.Option("--db", help="SQLite file (created when missing), or a postgresql:// URL.")] = "docket.db",
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.", callback=opt.int_range(1, 65535))] = 8000,
    keys: Annotated[Path | None, typer.Option("--keys", envvar=KEYS_ENV, help="API key file (`docket keys add`).",
                                              callback=opt.input_file)] = None,
    require_key: Annotated[bool, typer.Option("--require-key", help="401 without a key (default: public chunks only).")] = False,
    llm: opt.Llm = None,
    model: opt.Model = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds a model call may take (then 504).",
                                           callback=opt.finite(0.0, 3600.0, lo_open=True))] = 60.0,
    policy: opt.PolicyPath = None,
    embedder: Annotated[str, typer.Option("--embedder", help="For a new store: minilm (default) or hash (tests).",
                                          callback=opt.choice("minilm", "hash"))] = "minilm",
    workers: Annotated[int, typer.Option("--workers", help="Worker processes (each keeps its own warm state).",
                                         callback=opt.int_range(1, 64))] = 1,
    threads: Annotated[int, typer.Option("--threads", help="Requests handled at once per worker (more wait in line).",
                                         callback=opt.int_range(1, 256))] = 8,
    max_body: Annotated[int, typer.Option("--max-body", help="Largest request body in bytes (then 413).",
                                          callback=opt.positive)] = 8 * 1024 * 1024,
    max_candidates: Annotated[int, typer.Option("--max-candidates", help="Most candidates per /v1/assemble.",
                                                callback=opt.positive)] = 1000,
    request_timeout: Annotated[float, typer.Option("--request-timeout", help="Seconds of work one request may take "
                                                   "(retrieval and assembly; then 503 over_budget).",
                                                   callback=opt.finite(0.0, 3600.0, lo_open=True))] = 30.0,
    request_cpu: Annotated[float, typer.Option("--request-cpu", help="CPU seconds one request's assembly may use "
                                               "(then 503 over_budget).",
                                               callback=opt.finite(0.0, 3600.0, lo_open=True))] = 15.0,
    header_timeout: Annotated[float, typer.Option("--header-timeout", help="Seconds a client has to send a request's "
                                                  "head (then 408 and the connection closes).",
                                                  callback=opt.finite(0.0, 600.0, lo_open=True))] = 10.0,
    body_timeout: Annotated[float, typer.Option("--body-timeout", help="Seconds a client has to send a request's "
                                                "body (then 408).", callback=opt.finite(0.0, 3600.0, lo_open=True))] = 30.0,
    max_connections: Annotated[int, typer.Option("--max-connections", help="Open connections per worker (more get "
                                                 "503 at once).", callback=opt.int_range(1, 100_000))] = 512,
    gc_freeze: Annotated[bool, typer.Option("--gc-freeze/--no-gc-freeze", help="After each response, collect and "
                                            "freeze what the request left (no full collection stalls requests).")] = True,
    gc_sweep_requests: Annotated[int, typer.Option("--gc-sweep-requests", help="A full collection after this many "
                                                   "requests (bounds the garbage that waits while frozen).",
                                                   callback=opt.int_range(1, 10_000_000))] = 10_000,
    gc_sweep_idle: Annotated[float, typer.Option("--gc-sweep-idle", help="A full collection once the server has "
                                                 "been idle this many seconds.",
                                                 callback=opt.finite(0.0, 86_400.0, lo_open=True))] = 30.0,
    gc_young_threshold: Annotated[int, typer.Option("--gc-young-threshold", help="Objects allocated between two "
                                                    "young collections while a request runs (CPython's default "
                                                    "is 700).", callback=opt.int_range(1, 10_000_000))] = 20_000,
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning.",
                                           callback=opt.choice("debug", "info", "warning", "error"))] = "info",
) -> None:
    """Serve the HTTP API (POST /v1/assemble, /v1/ask, /v1/answer, /v1/check, /v1/index; docs/service.md).

    Needs the server extra: pip install 'docket[server]'.
    """
    try:
        import uvicorn
    except ImportError:
        raise InputError("needs the server extra: pip install 'docket[server]'", field="serve") from None
    from docket.http_guard import LIMITS_ENV, GuardedH11Protocol
    from docket.server import CONFIG_ENV, GcSettings, Limits, ServerConfig, configure_logging, create_app
    from docket.server import freeze_startup_objects as take_over_gc

    opt.requires(model, llm, "--model", "--llm")
    check_listen(host, port)  # a bad address or a port in use: one line and exit 2, before any loading
    config = ServerConfig(db=db, keys=str(keys) if keys else None, require_key=require_key, llm=llm, model=model,
                          generator_timeout=timeout, policy=str(policy) if policy else None, embedder=embedder,
                          threads=threads, log_level=log_level,
                          limits=Limits(body_bytes=max_body, candidates=max_candidates, wall_seconds=request_timeout,
                                        cpu_seconds=request_cpu, body_seconds=body_timeout),
                          gc=GcSettings(freeze=gc_freeze, sweep_requests=gc_sweep_requests,
                                        sweep_idle_seconds=gc_sweep_idle, young_threshold=gc_young_threshold))
    # `--db` is created when missing (docs/service.md): a mistyped path would serve an empty store in silence
    fresh = "://" not in db and not Path(db).exists()
    configure_logging(log_level)
    os.environ[LIMITS_ENV] = f"{header_timeout},{body_timeout}"  # read by the protocol, in every worker
    # slow clients: a head and a body have their time limits (docket.http_guard, 408), idle
    # keep-alive connections close after 5 s, and a worker holds at most --max-connections
    net = {"http": GuardedH11Protocol, "timeout_keep_alive": 5, "limit_concurrency": max_connections,
           "h11_max_incomplete_event_size": 16 * 1024}
    err = terminal_console(stderr=True)
    if workers == 1:
        from docket.blas import limit_process

        limit_process()  # requests run in worker threads, where docket.blas cannot hold BLAS per call
        application = create_app(config)  # bad settings fail here, with docket's one-line error
        application.state.session.warm_up()
        take_over_gc(application)
        err.print(f"docket serving {db} on http://{host}:{port} (docs: http://{host}:{port}/docs)", soft_wrap=True)
        if fresh:
            err.print(_new_store_note(db), soft_wrap=True)
        uvicorn.run(application, host=host, port=port, log_level=log_level, access_log=False, **net)  # type: ignore[arg-type]
        return
    create_app(config).state.session.close()  # check the settings once before forking workers
    os.environ[CONFIG_ENV] = config.to_json()
    err.print(f"docket serving {db} on http://{host}:{port} with {workers} workers", soft_wrap=True)
    if fresh:
        err.print(_new_store_note(db), soft_wrap=True)
    uvicorn.run("docket.server:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level=log_level, access_log=False, **net)  # type: ignore[arg-type]
    sys.exit(0)


def _new_store_note(db: str) -> str:
    return (f"docket: {db} did not exist: this is a new, empty store, and every question is 'not found' until "
            f"you index into it (`docket index PATH --db {db}`, or POST /v1/index with an admin key); check the "
            "--db path if you meant an existing store")


def check_listen(host: str, port: int) -> None:
    """Bind the address once, so a host that is not an address of this machine, a port in use or
    one we may not take is docket's one-line error (exit 2), not uvicorn's log and exit 3."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise InputError(f"{host!r} is not an address or host name this machine can listen on ({e})",
                         field="--host") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise InputError(f"port {port} on {host} is in use by another program; stop it or choose another "
                                 "--port", field="--port") from None
            if e.errno == errno.EACCES:
                raise InputError(f"this user may not listen on port {port} (ports below 1024 need privileges); "
                                 "choose another", field="--port") from None
            raise InputError(f"cannot listen on {host}:{port} ({e.strerror or e}); is it an address of this machine?",
                             field="--host") from None

