"""The GC policy of the process `docket serve` owns (docket.service.collector): after each
response the request's leftovers are collected and the survivors frozen; a sweep every
`sweep_requests` requests (or when idle) collects what died while frozen, so that garbage is
bounded; the settings are checked naming the field; a library's app leaves the GC alone."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from docket.errors import InputError
from docket.service.collector import CollectAfterResponse, Collector, GcSettings
from docket.service.config import ServerConfig


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    """Each test leaves the process's collector as it found it (nothing frozen by the test)."""
    before, threshold = gc.get_freeze_count(), gc.get_threshold()
    yield
    if gc.get_freeze_count() != before:
        gc.unfreeze()
    gc.set_threshold(*threshold)
    gc.collect()


class Node:
    """A container that is tracked by the collector and can form a cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> Node:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a


class CycleApp:
    """An ASGI app whose every request makes a reference cycle that outlives the request and
    dies in the next one: the worst case for freezing (alive at the freeze, garbage after)."""

    def __init__(self) -> None:
        self.held: Node | None = None
        self.made: list[weakref.ref[Node]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.held = cycle()  # the previous request's cycle is now unreachable garbage
        self.made.append(weakref.ref(self.held))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def _request(app: CollectAfterResponse) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_: dict[str, Any]) -> None:
        return None

    await app({"type": "http", "method": "GET", "path": "/"}, receive, send)


def _serve(collector: Collector, inner: CycleApp, n: int) -> None:
    app = CollectAfterResponse(inner, collector)

    async def many() -> None:
        for _ in range(n):
            await _request(app)

    asyncio.run(many())


def alive(refs: list[weakref.ref[Node]]) -> int:
    return sum(r() is not None for r in refs)


def test_cycles_that_die_while_frozen_are_collected_within_sweep_requests() -> None:
    collector = Collector(GcSettings(sweep_requests=10))
    collector.activate()
    inner = CycleApp()
    _serve(collector, inner, 9)
    # frozen while held, then dropped: only the sweep can reach them (8 dead, the 9th still held)
    assert alive(inner.made) == 9
    _serve(collector, inner, 1)  # the 10th request sweeps
    assert alive(inner.made) == 1  # only the cycle the app still holds
    assert (collector.sweeps, collector.freezes) == (1, 9)
    _serve(collector, inner, 25)
    assert alive(inner.made) <= 10  # never more than one sweep period's worth waits


def test_cycles_made_and_dropped_within_a_request_go_at_its_end() -> None:
    collector = Collector(GcSettings(sweep_requests=1000))
    collector.activate()
    refs: list[weakref.ref[Node]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        refs.append(weakref.ref(cycle()))  # garbage at once, before any freeze
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    wrapped = CollectAfterResponse(app, collector)
    gc.disable()  # no automatic pass may do the policy's work for it
    try:
        for _ in range(20):
            asyncio.run(_request(wrapped))
    finally:
        gc.enable()
    assert alive(refs) == 0 and collector.sweeps == 0


def test_an_inactive_collector_leaves_the_gc_alone() -> None:
    """An app built in someone else's process (create_app without `docket serve`) freezes nothing."""
    collector = Collector(GcSettings(sweep_requests=1))
    inner = CycleApp()
    before = gc.get_freeze_count()
    _serve(collector, inner, 5)
    assert gc.get_freeze_count() == before and collector.sweeps == collector.freezes == 0
    assert collector.in_flight == 0


def test_the_owner_raises_the_young_threshold_and_a_library_does_not() -> None:
    """Fewer automatic young collections while a request runs (issue 21): only the process owner's
    `activate` sets the threshold; the older generations' thresholds are kept."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(700, middle, old)
    Collector(GcSettings(young_threshold=12_345))  # built, not activated: a library's app
    assert gc.get_threshold() == (700, middle, old)
    Collector(GcSettings(young_threshold=12_345)).activate()
    assert gc.get_threshold() == (12_345, middle, old)
    assert ServerConfig.from_json(ServerConfig(gc=GcSettings(young_threshold=9)).to_json()).gc.young_threshold == 9


def test_freeze_off_keeps_only_the_startup_freeze() -> None:
    collector = Collector(GcSettings(freeze=False, sweep_requests=1))
    collector.activate()
    _serve(collector, CycleApp(), 5)
    assert collector.sweeps == collector.freezes == 0
    assert not collector.idle_due()


def test_idle_sweep_after_the_idle_seconds_and_only_after_a_request() -> None:
    now = [0.0]
    collector = Collector(GcSettings(sweep_idle_seconds=30.0), clock=lambda: now[0])
    collector.activate()
    now[0] = 100.0
    assert not collector.idle_due()  # nothing served since start-up: nothing to sweep
    collector.started()
    collector.finished()
    now[0] = 129.0
    assert not collector.idle_due()
    collector.started()  # a request in flight: never sweep under it
    now[0] = 200.0
    assert not collector.idle_due()
    collector.finished()
    now[0] = 230.0
    assert collector.idle_due()
    collector.sweep()
    assert not collector.idle_due() and collector.since_sweep == 0


def test_pauses_are_reported() -> None:
    seen: list[tuple[str, int]] = []
    collector = Collector(GcSettings(sweep_requests=3), on_pause=lambda kind, s, n: seen.append((kind, n)))
    collector.activate()
    _serve(collector, CycleApp(), 3)
    assert [k for k, _ in seen] == ["startup", "collect", "collect", "sweep"]
    assert seen[-1][1] >= 2  # the sweep found the two dead frozen cycles (two objects each, and their dicts)


@pytest.mark.parametrize(("settings", "field"), [
    ({"sweep_requests": 0}, "gc.sweep_requests"),
    ({"sweep_requests": 2.5}, "gc.sweep_requests"),
    ({"sweep_requests": True}, "gc.sweep_requests"),
    ({"sweep_idle_seconds": 0}, "gc.sweep_idle_seconds"),
    ({"sweep_idle_seconds": float("nan")}, "gc.sweep_idle_seconds"),
    ({"sweep_idle_seconds": "30"}, "gc.sweep_idle_seconds"),
    ({"freeze": "yes"}, "gc.freeze"),
    ({"young_threshold": 0}, "gc.young_threshold"),
    ({"young_threshold": 700.5}, "gc.young_threshold"),
    ({"young_threshold": False}, "gc.young_threshold"),
    ({"young_threshold": 10**8}, "gc.young_threshold"),
])
def test_bad_settings_name_the_field(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        ServerConfig(gc=GcSettings(**settings))
    assert e.value.field == field and field in str(e.value)
    with pytest.raises(InputError) as e:  # what a worker process rebuilds from the environment
        ServerConfig.from_json(json.dumps({"gc": settings}))
    assert e.value.field == field


def test_settings_travel_to_worker_processes() -> None:
    config = ServerConfig(gc=GcSettings(freeze=False, sweep_requests=7, sweep_idle_seconds=2.5))
    assert ServerConfig.from_json(config.to_json()).gc == config.gc
    assert ServerConfig.from_json(json.dumps({})).gc == GcSettings()


def test_serve_refuses_a_bad_sweep_count_naming_the_option() -> None:
    from docket.cli import _register, app

    _register()  # the commands load lazily (docket.cli)
    result = CliRunner().invoke(app, ["serve", "--gc-sweep-requests", "0"])
    assert result.exit_code == 2
    assert "--gc-sweep-requests" in result.output


def test_serve_takes_the_young_threshold_and_refuses_a_bad_one(tmp_path: Any, monkeypatch: Any) -> None:
    """`--gc-young-threshold` reaches the served app's collector settings; 0 is refused naming the option."""
    import uvicorn

    from docket.cli import _register, app

    _register()
    result = CliRunner().invoke(app, ["serve", "--gc-young-threshold", "0"])
    assert result.exit_code == 2 and "--gc-young-threshold" in result.output
    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: served.append(application))
    monkeypatch.setattr("docket.server.freeze_startup_objects", lambda application: None)  # keep pytest's collector
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    result = CliRunner().invoke(app, ["serve", "--db", str(tmp_path / "s.db"), "--embedder", "hash", "--port", port,
                                      "--gc-young-threshold", "4321", "--log-level", "warning"])
    assert result.exit_code == 0, result.output
    assert served and served[0].state.service.config.gc.young_threshold == 4321
    served[0].state.session.close()


def test_the_served_app_reports_its_policy_in_metrics(tmp_path: Any) -> None:
    """`docket serve`'s path: create_app, then the process owner hands over the collector."""
    from fastapi.testclient import TestClient

    from docket.server import create_app, freeze_startup_objects

    app = create_app(ServerConfig(db=str(tmp_path / "s.db"), embedder="hash", log_level="warning",
                                  gc=GcSettings(sweep_requests=2)))
    with TestClient(app) as client:
        assert app.state.service.collector.active is False
        client.get("/healthz")
        assert app.state.service.collector.freezes == 0  # a library's app: nothing frozen
        freeze_startup_objects(app)
        for _ in range(3):
            assert client.get("/healthz").status_code == 200
        text = client.get("/metrics").text
    assert 'docket_gc_pause_seconds_count{kind="collect"}' in text
    assert 'docket_gc_pause_seconds_count{kind="sweep"} 1.0' in text
    assert "docket_gc_frozen_objects" in text


def test_the_idle_watch_sweeps_once_the_server_is_quiet() -> None:
    """The lifespan's watch (docket.server runs it for the app's life) sweeps after the idle time."""
    import anyio

    from docket.service.collector import watch_idle

    collector = Collector(GcSettings(sweep_idle_seconds=0.05))
    collector.activate()
    collector.started()
    collector.finished()

    async def briefly() -> None:
        with anyio.move_on_after(0.5):
            await watch_idle(collector, tick=0.01)

    anyio.run(briefly)
    assert collector.sweeps == 1 and collector.since_sweep == 0  # once: nothing served since
