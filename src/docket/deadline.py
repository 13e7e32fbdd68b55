"""A work budget for one request: how long it may run and how much CPU it may burn.

The service runs each request's assembly in a worker thread under a `Budget`; the assembler's
loops whose work grows faster than the input (pairs compared for conflicts and duplicates, the
notes over them) call `check()`, which raises `OverBudget` once the request has used its wall
time or its thread's CPU time, or `Abandoned` once the client has gone. Outside a budget (the
library, the CLI) `check()` is one context-variable read and does nothing.

    with Budget(wall_seconds=30, cpu_seconds=10).active():
        brief = session.assemble(...)          # raises OverBudget instead of running for minutes
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from docket.errors import DocketError

#: how often (seconds of wall time) `check()` reads the thread's CPU clock, a system call
_CPU_EVERY = 0.005


class OverBudget(DocketError):
    """The request used up its time or CPU budget; `limit` names which, `seconds` its size."""

    def __init__(self, limit: str, seconds: float) -> None:
        self.limit, self.seconds = limit, seconds
        what = "seconds of CPU time" if limit == "cpu_seconds" else "seconds"
        super().__init__(f"the request needed more than {seconds:g} {what} (the server's {limit} limit); "
                         "send fewer or shorter candidates, fewer versions of a document, or a smaller budget")


class Abandoned(DocketError):
    """The client went away: nobody will read the answer, so the work stops."""


class Budget:
    """Wall and CPU seconds for one request. `cancel()` may be called from any thread."""

    def __init__(self, wall_seconds: float | None = None, cpu_seconds: float | None = None) -> None:
        self.wall_seconds, self.cpu_seconds = wall_seconds, cpu_seconds
        self._cancelled = threading.Event()
        self._wall_end = float("inf")
        self._cpu_end = float("inf")
        self._next_cpu = 0.0

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @contextmanager
    def active(self) -> Iterator[Budget]:
        """Start the clocks in the calling thread (the CPU clock is that thread's) and make this
        the budget `check()` sees there."""
        now = time.monotonic()
        self._wall_end = now + self.wall_seconds if self.wall_seconds else float("inf")
        self._cpu_end = time.thread_time() + self.cpu_seconds if self.cpu_seconds else float("inf")
        self._next_cpu = now
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def check(self) -> None:
        if self._cancelled.is_set():
            raise Abandoned("the client closed the connection")
        now = time.monotonic()
        if now > self._wall_end:
            raise OverBudget("wall_seconds", float(self.wall_seconds or 0))
        if now >= self._next_cpu:
            self._next_cpu = now + _CPU_EVERY
            if time.thread_time() > self._cpu_end:
                raise OverBudget("cpu_seconds", float(self.cpu_seconds or 0))


_current: ContextVar[Budget | None] = ContextVar("docket_budget", default=None)


def check() -> None:
    """Raise if the running request is over its budget or abandoned; nothing outside a budget."""
    budget = _current.get()
    if budget is not None:
        budget.check()


__all__ = ["Abandoned", "Budget", "OverBudget", "check"]
