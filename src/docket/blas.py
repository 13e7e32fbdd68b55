"""BLAS held to a few threads while docket's own vector work runs.

docket's matrix products are small (a pool's pairwise cosines) or memory-bound (a store's dense
scan), so more BLAS threads barely speed them up; and OpenBLAS's workers spin-wait for a while
after each call, taking a core from the Python work that follows. On the two-core bench machine
that spin doubled a warm `ask` (docs/store.md, speed at scale). `DOCKET_DENSE_THREADS` (default 1;
0 leaves BLAS as configured) sets the limit for the SQLite dense scan and for `assemble`.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from docket.errors import InputError

P = ParamSpec("P")
R = TypeVar("R")


class BlasThreads:
    """BLAS limited to `threads` threads while a block entered through it runs in the main thread
    (0: BLAS left as configured; None: read DOCKET_DENSE_THREADS on first use); re-entrant, and
    BLAS is restored when the outermost block ends, even on an error. Searches in other threads
    leave BLAS alone: OpenBLAS ignores a thread count set from a worker thread once the main
    thread has set one, so a worker could not be sure to restore what it changed (a server
    that searches in worker threads sets OPENBLAS_NUM_THREADS=1 instead). The limit is
    process-wide (threadpoolctl): other threads' BLAS calls meanwhile share it."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads
        self._depth = 0
        self._limiter: Any = None
        self._controller: Any = None

    @contextmanager
    def __call__(self) -> Iterator[None]:
        if self.threads is None:
            self.threads = threads_setting(os.environ.get("DOCKET_DENSE_THREADS"))
        if self.threads <= 0 or threading.current_thread() is not threading.main_thread():
            yield
            return
        if self._depth == 0:
            if self._controller is None:
                from threadpoolctl import ThreadpoolController  # scans the loaded libraries once

                self._controller = ThreadpoolController()
            self._limiter = self._controller.limit(limits=self.threads, user_api="blas")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._limiter.restore_original_limits()
                self._limiter = None


def threads_setting(raw: str | None) -> int:
    """`DOCKET_DENSE_THREADS`: a whole number of BLAS threads for docket's vector work, 0 for BLAS's own."""
    if raw is None or not raw.strip():
        return 1
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if n < 0:
        raise InputError(f"must be a whole number of threads (0 leaves BLAS as configured), got {raw!r}",
                         field="DOCKET_DENSE_THREADS")
    return n



def limited(limit: BlasThreads) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the decorated function inside `limit` (see BlasThreads)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with limit():
                return fn(*args, **kwargs)

        return run

    return wrap


_process_limit: Any = None


def limit_process(threads: int | None = None) -> None:
    """Hold BLAS to `threads` (default: DOCKET_DENSE_THREADS, 1) for the rest of the process, from
    its main thread: for a server, whose searches and assemblies run in worker threads, where
    `BlasThreads` leaves BLAS alone. `docket serve` calls it; 0 leaves BLAS as configured."""
    global _process_limit
    n = threads_setting(os.environ.get("DOCKET_DENSE_THREADS")) if threads is None else threads
    if n <= 0 or threading.current_thread() is not threading.main_thread():
        return
    from threadpoolctl import ThreadpoolController

    _process_limit = ThreadpoolController().limit(limits=n, user_api="blas")
