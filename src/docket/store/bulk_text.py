"""The per-row text work of `docket import`: token counts and (for SQLite) keyword terms.

Counting tokens (the default counter: toktok-rs, ≈11 µs a row; tiktoken ≈35 where toktok-rs is
missing) and finding, folding and stemming words (≈45 µs a row through docket.store.terms row by
row; ≈31 through `batch_terms`, pyarrow's string kernels over a batch) are much of a bulk load's CPU. For a big file they run in worker
processes, a batch or two ahead of the writer, so a machine with free cores loads at the speed
of the writing alone; the results are the very functions' results (`docket index` counts with
the same counter, and `batch_terms` gives what `term_counts` gives), in file order. A small file,
a one-core machine, a platform without fork, a process that runs other threads (forking one can
deadlock on a lock another thread holds), or a counter other than the default (tests) does the
work in this process.
"""

from __future__ import annotations

import os
import re
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


#: the rows' (titles, sections, texts): their keyword terms are those of `f"{title} {section}
#: {text}"` (what SQLite's keyword search reads, sqlite_schema._search_text), joined where they
#: are worked out (a text also counted is then sent to a worker once: pickle keeps one copy)
TermsOf = tuple[Sequence[str], Sequence[str], Sequence[str]]


def work(to_count: Sequence[str], to_terms: TermsOf | None) -> Result:
    """Token counts of `to_count` (the default counter) and term counts of `to_terms`."""
    from docket.tokens import default_counter

    return _work(default_counter().count, to_count, to_terms)


def _work(count: Callable[[str], int], to_count: Sequence[str], to_terms: TermsOf | None) -> Result:
    if to_terms is None:
        return list(map(count, to_count)), None
    texts = [f"{t} {s} {x}" for t, s, x in zip(*to_terms, strict=True)]
    return list(map(count, to_count)), batch_terms(texts)


def batch_terms(texts: Sequence[str]) -> Terms:
    """`encode([term_counts(t) for t in texts])`, the same terms in the same order, with the words
    found by pyarrow's compiled string kernels for every row whose folded text (`terms._fold`) has
    no word character outside ASCII (most rows: accents fold away, dashes and quotes are no part
    of a word): its bytes other than [0-9A-Za-z_] made spaces (`\\w` in ASCII), split, one-letter
    words and stopwords dropped, each distinct word stemmed once (`terms._stem_words`, the very
    stems), each row's distinct stems counted in order of first occurrence (numpy). The other rows
    go through `term_counts` itself; so does everything without pyarrow."""
    from docket.store.terms import term_counts

    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return encode([term_counts(t) for t in texts])
    ready = [t.lower() if t.isascii() else _folded(t) for t in texts]
    plain = np.fromiter((t is not None for t in ready), dtype=bool, count=len(ready))
    arr = pa.array([t or "" for t in ready], type=pa.large_string())
    vocab: dict[str, int] = {}
    rows, stems, tfs = _ascii_postings(pa, pc, arr.filter(pa.array(plain)), np.flatnonzero(plain), vocab)
    other = np.flatnonzero(~plain)
    if other.size:  # the other rows, each with its term_counts, appended after the ASCII ones
        counts = [term_counts(texts[i]) for i in other.tolist()]
        rows = np.concatenate([rows, np.repeat(other, [len(c) for c in counts])])
        stems = np.concatenate([stems, np.fromiter((vocab.setdefault(t, len(vocab)) for c in counts for t in c),
                                                   dtype=np.int64)])
        tfs = np.concatenate([tfs, np.fromiter((n for c in counts for n in c.values()), dtype=np.int64)])
        order = np.argsort(rows, kind="stable")  # rows in order; a row's postings keep theirs
        rows, stems, tfs = rows[order], stems[order], tfs[order]
    sizes = np.bincount(rows, minlength=len(texts)).astype(np.int64)
    return list(vocab), stems.astype(np.int32), tfs, sizes


#: a word character (`\w`) outside ASCII
_UNICODE_WORD = re.compile(r"[^\W\x00-\x7f]")


def _folded(text: str) -> str | None:
    """`terms._fold(text)` when every word character in it is ASCII (its other characters, being
    no part of a word, then become spaces like any ASCII separator), else None."""
    from docket.store.terms import _fold

    out = _fold(text)
    return None if _UNICODE_WORD.search(out) else out


#: byte -> itself for [0-9A-Za-z_] (what `\w` is in ASCII), a space for any other byte (any
#: byte of a multi-byte character too: a text here has no word character outside ASCII)
_WORD_BYTES = np.full(256, ord(" "), dtype=np.uint8)
for _c in b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_":
    _WORD_BYTES[_c] = _c


def _ascii_postings(pa: Any, pc: Any, arr: Any, at: np.ndarray, vocab: dict[str, int]) -> tuple[np.ndarray, ...]:
    """(row, stem id, count) of each distinct stem of each row of `arr` (ASCII texts; row numbers
    from `at`), rows in order and a row's stems in order of first occurrence; new stems enter `vocab`."""
    from docket.store.protocol import STOPWORDS
    from docket.store.terms import _stem_words

    empty = np.zeros(0, dtype=np.int64)
    if not len(arr):
        return empty, empty, empty
    offsets, data = arr.buffers()[1:]
    folded = _WORD_BYTES[np.frombuffer(data, dtype=np.uint8)]
    split = pc.ascii_split_whitespace(pa.LargeStringArray.from_buffers(len(arr), offsets, pa.py_buffer(folded)))
    words = pc.list_flatten(split)
    keep = pc.and_(pc.greater(pc.binary_length(words), 1),
                   pc.invert(pc.is_in(words, value_set=pa.array(sorted(STOPWORDS), type=pa.large_string()))))
    owner = at[pc.list_parent_indices(split).to_numpy()][keep.to_numpy(zero_copy_only=False)]
    coded = pc.dictionary_encode(words.filter(keep))
    distinct = coded.dictionary.to_numpy(zero_copy_only=False).tolist()
    if not distinct:
        return empty, empty, empty
    stem_of = np.fromiter((vocab.setdefault(s, len(vocab)) for s in _stem_words(distinct)), dtype=np.int64,
                          count=len(distinct))
    stem = stem_of[coded.indices.to_numpy()]
    key = owner.astype(np.int64) * len(vocab) + stem
    uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    uniq = uniq[order]
    return uniq // len(vocab), uniq % len(vocab), counts[order].astype(np.int64)


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

    def __init__(self, count: Callable[[str], int], *, default_counter: bool, rows: int = 0) -> None:
        """`rows`: how many rows the file holds, where known (Parquet): a big file starts the
        workers at its first batch instead of after POOL_AFTER_ROWS."""
        self.count = count
        # fork: a worker starts in milliseconds with the stem cache (and the counter's vocabulary,
        # where this process has loaded it) and never re-runs the caller's script (spawn would)
        self.pooled = default_counter and (os.cpu_count() or 1) > 1 and sys.platform == "linux"
        self.seen = 0
        self.big = rows > POOL_AFTER_ROWS
        self.pool: Executor | None = None
        if self.pooled and self.big:  # forked now: each worker loads the counter while the first batch is read
            self._start()

    def _start(self) -> None:
        self.pool = fork_pool(max(1, min(4, (os.cpu_count() or 2) - 1)), initializer=_warm)
        if self.pool is not None:
            self.pool.submit(int)  # a fork pool starts its processes at the first task

    def submit(self, to_count: list[str], to_terms: TermsOf | None) -> Future[Result] | _Done:
        self.seen += len(to_count) if to_terms is None else len(to_terms[2])
        if self.pool is None and self.pooled and (self.big or self.seen > POOL_AFTER_ROWS):
            self._start()
        if self.pool is None:
            return _Done(_work(self.count, to_count, to_terms))
        return self.pool.submit(work, to_count, to_terms)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def fork_pool(workers: int, initializer: Callable[..., object] | None = None,
              initargs: tuple[Any, ...] = ()) -> Executor | None:
    """`workers` forked worker processes, or None where forking is not safe here (not Linux, or
    another thread runs) or none are wanted: the caller then works in-process."""
    if workers <= 0 or sys.platform != "linux" or not _single_threaded():
        return None
    import multiprocessing

    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=initializer,
                               initargs=initargs)


def _single_threaded() -> bool:
    """Whether forking is safe: a fork copies every lock as it is, so a process with another thread
    (a server, a caller's thread pool) that may hold one does the work in-process instead."""
    import threading

    return threading.active_count() == 1


def _warm() -> None:
    """A worker's start: the default counter's vocabulary loaded before its first batch arrives."""
    from docket.tokens import default_counter

    try:
        default_counter()
    except Exception:  # noqa: BLE001 - the batch's own call reports it
        pass


class DefaultCount:
    """The default counter's `count`, the counter made at the first call: an import whose counting
    runs in worker processes never loads its vocabulary here (≈0.5 s of the writer's CPU at the
    start of a load); each worker loads its own at its first batch."""

    def __call__(self, text: str) -> int:
        from docket.tokens import default_counter

        return default_counter().count(text)


def is_default(count: Any) -> bool:
    """Whether `count` is the default counter's (what a worker process builds for itself)."""
    if isinstance(count, DefaultCount):
        return True
    from docket.tokens import default_counter

    return getattr(count, "__self__", None) is default_counter()
