"""The garbage-collection policy of the process `docket serve` owns (issues 21, 22).

CPython's full (generation-2) collection scans every tracked object. A server's heap grows with
its caches (the feature cache keeps up to 100k chunks' features, ~30 tracked objects each), so a
full pass costs 0.1-0.4 s at a few thousand cached chunks and more later, and one comes every
~30 first-sight requests, stalling every request in flight: that set the p99.

The policy: when a request's response has been sent, collect the young generations (objects made
since the last freeze, a fraction of a millisecond) and freeze the survivors. Young collections
then scan one request's objects, and the automatic full pass has almost nothing to scan. A cycle
that dies after it was frozen (a cache eviction, or a request that was in flight while another
froze) is not collected while frozen, so every `sweep_requests` requests, and whenever the
server has been idle `sweep_idle_seconds`, a sweep unfreezes everything and collects it once:
the memory such cycles hold is bounded by what `sweep_requests` requests leave behind.
Measured: the young collection takes 0.7-1.9 ms a request; 4 sweeps over ~500 first-sight
requests (concurrency 1 and 4) freed 867 objects in all, at 1.1 s each; so sweeps are rare.

The process is global state: only the process owner turns the policy on (`activate`, called by
`docket serve`); an app built by `create_app` in someone else's process leaves the GC alone.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from docket.errors import InputError


@dataclass(frozen=True)
class GcSettings:
    """What the policy does; the defaults bound frozen garbage to 10,000 requests' worth (measured:
    ~2 objects a request reach a sweep, at concurrency 1 and 4), and the sweep, which scans the whole
    heap (1.1 s at a 10k-chunk store after 500 first-sight requests), stays rare."""

    #: collect and freeze after every request (False: only the start-up objects are frozen)
    freeze: bool = True
    #: a full sweep (unfreeze, collect, freeze) after this many requests
    sweep_requests: int = 10_000
    #: a full sweep once the server has had no request in flight this long (and served one since)
    sweep_idle_seconds: float = 30.0
    #: allocations (less deallocations) of tracked objects between two automatic young collections
    #: while a request runs (CPython's default is 700: ~17 collections a first-sight request of 200
    #: records, 4.5 ms CPU; at 20,000 one, 2.3 ms, the same peak RSS, issue 21). The request's
    #: leftovers are collected when its response is sent either way; what waits longer is a
    #: request's own garbage cycles, up to this many objects
    young_threshold: int = 20_000

    def check(self, prefix: str = "gc") -> None:
        """Bad values are an error naming the field, before the server starts."""
        if not isinstance(self.freeze, bool):
            raise InputError("must be true or false", field=f"{prefix}.freeze")
        if isinstance(self.sweep_requests, bool) or not isinstance(self.sweep_requests, int) \
                or self.sweep_requests < 1:
            raise InputError(f"must be a whole number of requests, at least 1 (got {self.sweep_requests!r}); "
                             "it bounds how long frozen garbage waits", field=f"{prefix}.sweep_requests")
        young = self.young_threshold
        if isinstance(young, bool) or not isinstance(young, int) or not 1 <= young <= 10_000_000:
            raise InputError(f"must be a whole number of objects from 1 to 10,000,000 (got {young!r})",
                             field=f"{prefix}.young_threshold")
        idle = self.sweep_idle_seconds
        if isinstance(idle, bool) or not isinstance(idle, int | float) or not 0 < idle < float("inf"):
            raise InputError(f"must be a positive finite number of seconds (got {idle!r})",
                             field=f"{prefix}.sweep_idle_seconds")


class Collector:
    """The per-process policy: counts requests in flight, collects and freezes after each one,
    sweeps every `sweep_requests` or when idle. Called from the event loop only (the middleware
    and the lifespan's idle watch), so its counters need no lock; gc calls are atomic under the GIL."""

    def __init__(self, settings: GcSettings, clock: Callable[[], float] = time.monotonic,
                 on_pause: Callable[[str, float, int], None] | None = None) -> None:
        self.settings = settings
        self.active = False
        self.in_flight = 0
        self.since_sweep = 0
        self.freezes = 0
        self.sweeps = 0
        self._clock = clock
        self._last_end = clock()
        self._on_pause = on_pause

    def activate(self) -> None:
        """Take over the process's collector: collect once and freeze what start-up loaded."""
        self.active = True
        _, middle, old = gc.get_threshold()
        gc.set_threshold(self.settings.young_threshold, middle, old)
        self._timed("startup", _collect_all_and_freeze)

    def started(self) -> None:
        self.in_flight += 1

    def finished(self) -> None:
        """A response was sent: freeze its survivors; sweep when the request count says so."""
        self.in_flight -= 1
        self._last_end = self._clock()
        if not (self.active and self.settings.freeze):
            return  # off: only what start-up loaded stays frozen, CPython collects the rest
        self.since_sweep += 1
        if self.since_sweep >= self.settings.sweep_requests:
            self.sweep()
        else:
            self.freezes += 1
            self._timed("collect", _collect_and_freeze)

    def idle_due(self) -> bool:
        return (self.active and self.settings.freeze and self.in_flight == 0 and self.since_sweep > 0
                and self._clock() - self._last_end >= self.settings.sweep_idle_seconds)

    def sweep(self) -> None:
        """Unfreeze everything, collect it all, freeze the survivors again: the one pass that
        scans the whole heap, so it runs rarely (every `sweep_requests`) or when idle."""
        self.sweeps += 1
        self.since_sweep = 0
        self._timed("sweep", self._sweep)

    def _sweep(self) -> int:
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        return found

    def _timed(self, kind: str, work: Callable[[], int]) -> None:
        t = time.perf_counter()
        found = work()
        if self._on_pause is not None:
            self._on_pause(kind, time.perf_counter() - t, found)


def _collect_and_freeze() -> int:
    """Collect the young generations, then freeze. Everything not frozen was made since the last
    freeze; the young generations hold at most a few thousand of those objects, so this pass is
    bounded (0.5 ms median against 7.5 ms for a full pass over them, 90 first-sight requests) and
    it finds the cycles a request made and dropped. One that had aged into the oldest generation
    before it died waits for the sweep (none did in those 90 requests: the sweep freed 0)."""
    found = gc.collect(1)
    gc.freeze()
    return found


def _collect_all_and_freeze() -> int:
    found = gc.collect()
    gc.freeze()
    return found


class CollectAfterResponse:
    """ASGI middleware (outermost): marks a request in flight and, once its response is sent,
    lets the collector run, so the pause lands between requests, not inside one."""

    def __init__(self, inner: Any, collector: Collector) -> None:
        self.inner = inner
        self.collector = collector

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        self.collector.started()
        try:
            await self.inner(scope, receive, send)
        finally:
            self.collector.finished()


async def watch_idle(collector: Collector, tick: float = 1.0) -> None:
    """Sweep when the server has been idle long enough (runs for the app's lifetime)."""
    import anyio

    while True:
        await anyio.sleep(min(tick, collector.settings.sweep_idle_seconds))
        if collector.idle_due():
            collector.sweep()


__all__ = ["CollectAfterResponse", "Collector", "GcSettings", "watch_idle"]
