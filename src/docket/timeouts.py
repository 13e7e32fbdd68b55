"""Model calls bounded in time: a call abandoned at its time-out, and a stream that must finish
within it (a stalled stream raises EndpointTimeout instead of hanging). `Session` runs every
generator call through these, in its own thread pool."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from docket.errors import DocketError
from docket.llm.errors import EndpointTimeout, LLMError


def call_within(pool: Executor, fn: Callable[[], Any], timeout: float, name: str, what: str) -> Any:
    """`fn()` in `pool`, its result within `timeout` seconds; a late answer is abandoned as a
    time-out naming the model (`name`) and the call (`what`)."""
    fut = pool.submit(fn)
    try:
        return fut.result(timeout=timeout)
    except FutureTimeout:
        fut.cancel()
        raise EndpointTimeout(f"{name}: no answer within {timeout:g} s ({what}); raise the "
                              "generator time-out or use a smaller model or prompt") from None


def stream_within(pool: Executor, start: Callable[[], Iterator[str]], timeout: float, name: str) -> Iterator[str]:
    """The pieces of the stream `start()` opens, read in a worker thread of `pool`; the whole
    answer must arrive within `timeout` seconds."""
    q: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()

    def pump() -> None:
        try:
            for piece in start():
                if stop.is_set():
                    return
                q.put(("piece", piece))
            q.put(("end", None))
        except BaseException as e:  # handed to the reader, re-raised there
            q.put(("error", e))

    pool.submit(pump)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            try:
                kind, value = q.get(timeout=max(0.0, left))
            except queue.Empty:
                raise EndpointTimeout(f"{name}: the answer did not finish within {timeout:g} s "
                                      "(stream); raise the generator time-out") from None
            if kind == "end":
                return
            if kind == "error":
                if isinstance(value, DocketError):
                    raise value
                raise LLMError(f"the generator failed while streaming ({type(value).__name__}: {value})")
            yield value
    finally:
        stop.set()


__all__ = ["call_within", "stream_within"]
