"""The per-row text work of `docket import`: token counts and (for SQLite) keyword terms.

Counting tokens (tiktoken) and finding, folding and stemming words (docket.store.terms) cost about
90 µs a row, most of a bulk load's CPU, and the word part holds the GIL. For a big file they run
in worker processes, a batch or two ahead of the writer, so a machine with free cores loads at
the speed of the writing alone; the results are the very functions' results (`docket index`
counts with the same counter and stems with the same `term_counts`), in file order. A small file,
a one-core machine, a platform without fork, a process that runs other threads (forking one can
deadlock on a lock another thread holds), or a counter other than the default (tests) does the
work in this process.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from itertools import chain
from typing import Any

import numpy as np

#: rows checked before worker processes start: a small import does not pay their start-up
POOL_AFTER_ROWS = 4_096
#: batches given to the workers ahead of the writer
AHEAD = 2

#: a batch's keyword terms, compact (cheap to send between processes): its distinct terms, then
#: each posting as an index into them and its count, row after row; `sizes[i]` postings of row i,
#: in `term_counts` order
Terms = tuple[list[str], np.ndarray, np.ndarray, np.ndarray]
Result = tuple[list[int], Terms | None]


def work(to_count: Sequence[str], to_terms: Sequence[str] | None) -> Result:
    """Token counts of `to_count` (the default counter) and term counts of `to_terms`."""
    from docket.tokens import default_counter

    return _work(default_counter().count, to_count, to_terms)


def _work(count: Callable[[str], int], to_count: Sequence[str], to_terms: Sequence[str] | None) -> Result:
    from docket.store.terms import term_counts

    return list(map(count, to_count)), None if to_terms is None else encode([term_counts(t) for t in to_terms])


def encode(counts: Sequence[Counter[str]]) -> Terms:
    """`Terms` of the rows' term counts."""
    flat = list(chain.from_iterable(counts))
    vocab = list(dict.fromkeys(flat))
    at = dict(zip(vocab, range(len(vocab))))
    index = np.fromiter(map(at.__getitem__, flat), dtype=np.int32, count=len(flat))
    tf = np.fromiter(chain.from_iterable(c.values() for c in counts), dtype=np.int64, count=len(flat))
    return vocab, index, tf, np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))


class _Done:
    """A result computed here, with a Future's `result`."""

    def __init__(self, value: Result) -> None:
        self.value = value

    def result(self) -> Result:
        return self.value


class TextWork:
    """Runs `work` for each batch, here or in worker processes (see the module docstring)."""

    def __init__(self, count: Callable[[str], int], *, default_counter: bool) -> None:
        self.count = count
        # fork: a worker starts in milliseconds with the counter's vocabulary and the stem cache
        # already loaded, and never re-runs the caller's script (spawn would); it only computes
        self.pooled = default_counter and (os.cpu_count() or 1) > 1 and sys.platform == "linux"
        self.seen = 0
        self.pool: Executor | None = None

    def submit(self, to_count: list[str], to_terms: list[str] | None) -> Future[Result] | _Done:
        self.seen += len(to_count) if to_terms is None else len(to_terms)
        if self.pool is None and self.pooled and self.seen > POOL_AFTER_ROWS and _single_threaded():
            import multiprocessing

            workers = max(1, min(4, (os.cpu_count() or 2) - 1))
            self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        if self.pool is None:
            return _Done(_work(self.count, to_count, to_terms))
        return self.pool.submit(work, to_count, to_terms)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _single_threaded() -> bool:
    """Whether forking is safe: a fork copies every lock as it is, so a process with another thread
    (a server, a caller's thread pool) that may hold one does the work in-process instead."""
    import threading

    return threading.active_count() == 1


def is_default(count: Any) -> bool:
    """Whether `count` is the default counter's (what a worker process builds for itself)."""
    from docket.tokens import default_counter

    return getattr(count, "__self__", None) is default_counter()
