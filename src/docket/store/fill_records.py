"""Fill the feature records a bulk load left out (`docket import --features`, `docket features`).

`docket import` writes no feature records (docket.features: ~1 ms a chunk, ten times the rest of
the import), so every chunk of an imported store is a first sight for the assembler until this
runs. It reads the chunks that have no record in rowid order, a batch at a time, computes each
record with the writer `docket index` uses (the caller passes it: the wiring's, with the rendered
token counts, docket.brief.sizer.feature_record; a store knows nothing of rendering), and writes
them back, one short write transaction a batch. For many rows the records are computed in forked
worker processes, a few batches ahead of the writer, under the rules of docket.store.bulk_text
(Linux, more than one core, no other thread in this process).

Safe beside other processes: a reader sees a batch's records all at once or not at all; readers'
search indexes do not change (no chunk row does, so the write generation is not bumped either:
snapshot and ANN files stay valid). A writer may change chunks while this runs: each batch is
read again inside its write transaction and a record is written only for a row whose columns are
still those it was computed from, never over a record already there (`docket index` writing
the same chunk wins). Resumable: a rerun finds only the chunks still without a record.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

from docket.errors import DocketError, InputError
from docket.features import RecordWriter
from docket.store.protocol import chunk_from_row

#: chunks read, computed and written together (one write transaction each: ~0.5 s of records)
BATCH = 512
#: chunks without a record before worker processes start (fewer cost less than their start-up)
POOL_AFTER_ROWS = 2_048
#: worker processes at most (by default one a core)
MAX_WORKERS = 8
#: the columns a record is computed from (everything chunk_from_row reads but the vector)
_COLS = ("c.id, c.doc, c.version, c.position, c.status, c.date, c.effective_to, c.title, c.section, "
         "c.source_type, c.trust, c.acl, c.metadata, c.text")

Row = dict[str, Any]


@dataclass
class FillReport:
    """What a fill did: records written, chunks that changed while it ran (left without one),
    the chunks that had none when it started, seconds, and the worker processes used (0: in-process)."""

    written: int
    changed: int
    missing: int
    seconds: float
    workers: int

    def to_json(self) -> dict[str, Any]:
        return {"written": self.written, "changed": self.changed, "missing": self.missing,
                "seconds": round(self.seconds, 3), "workers": self.workers,
                "records_per_s": round(self.written / self.seconds) if self.seconds and self.written else None}


def fill_records(store: Any, records: RecordWriter, *, batch: int = BATCH, workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> FillReport:
    """Write a feature record (by `records`) for every chunk of `store` that has none.
    `workers`: worker processes (None: chosen as docket.store.bulk_text does; 0: in this process).
    `progress(done, total)` is called after each batch."""
    if batch < 1:
        raise InputError(f"must be at least 1, got {batch}", field="batch")
    side = _backend(store)
    started = time.perf_counter()
    total = side.missing()
    pool, n_workers = _pool(records, total, workers)
    written = changed = 0

    def drain(item: tuple[list[Row], Future[list[str]] | list[str]]) -> None:
        """Write one batch's records (waiting for a worker's), and report progress."""
        nonlocal written, changed
        rows, got = item
        w, c = side.write(rows, got if isinstance(got, list) else got.result())
        written, changed = written + w, changed + c
        if progress is not None:
            progress(written + changed, total)

    try:
        ahead: list[tuple[list[Row], Future[list[str]] | list[str]]] = []
        depth = max(2, n_workers + 1)
        for rows in side.batches(batch):
            ahead.append((rows, pool.submit(_records_of, rows) if pool is not None else _compute(records, rows)))
            if len(ahead) >= depth:
                drain(ahead.pop(0))
        for item in ahead:
            drain(item)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    side.tidy()
    return FillReport(written, changed, total, time.perf_counter() - started, n_workers)


# --- computing records, here or in worker processes ----------------------------------------------

_writer: RecordWriter | None = None


def _set_writer(records: RecordWriter) -> None:
    global _writer
    _writer = records


def _records_of(rows: Sequence[Row]) -> list[str]:
    """In a worker: the records of `rows` by the writer the pool was started with."""
    assert _writer is not None
    return _compute(_writer, rows)


def _compute(records: RecordWriter, rows: Sequence[Row]) -> list[str]:
    return [records(chunk_from_row(r, None)) for r in rows]


def _pool(records: RecordWriter, total: int, workers: int | None) -> tuple[Executor | None, int]:
    """Worker processes for `total` records, or none (see the module docstring). The writer reaches
    them through the fork, so any callable works (nothing is pickled but rows and records)."""
    from docket.store.bulk_text import fork_pool

    cores = os.cpu_count() or 1
    if workers is None:  # one a core: reading and writing are ~4 % of the work (~28,000 rows/s), so the
        # writer needs no core of its own (bulk_text's writer does)
        workers = min(MAX_WORKERS, cores) if total > POOL_AFTER_ROWS and cores > 1 else 0
    pool = fork_pool(workers, _set_writer, (records,))
    return (pool, workers) if pool is not None else (None, 0)


# --- the two backends ----------------------------------------------------------------------------


class _Side:
    """One backend's statements: count, read in batches, write (checked), tidy."""

    def missing(self) -> int:
        raise NotImplementedError

    def batches(self, size: int) -> Iterator[list[Row]]:
        """The rows still without a record, `size` at a time in rowid order (a row written meanwhile
        is not read again: each page starts after the last rowid of the one before)."""
        after = -1
        while True:
            rows = self.page(after, size)
            if not rows:
                return
            after = rows[-1]["rowid"]
            yield rows

    def page(self, after: int, size: int) -> list[Row]:
        raise NotImplementedError

    def write(self, rows: list[Row], recs: list[str]) -> tuple[int, int]:
        """Write the records of the rows still as read; returns (written, changed)."""
        raise NotImplementedError

    def tidy(self) -> None:
        """Remove records whose chunk is gone (a race with a concurrent delete can leave one)."""


def _backend(store: Any) -> _Side:
    if type(store).__name__ == "PostgresStore":
        if store.read_only:
            raise DocketError(f"{store.location}: opened for reading only; open it without read_only to write")
        return _Postgres(store)
    store._check_writable()
    if not os.access(store.path, os.W_OK):
        raise InputError("cannot be written (a read-only file): feature records are written into the store; "
                         "run this as a user who may write it", where=str(store.path))
    return _SQLite(store)


def _same(before: Sequence[Row], now: dict[Any, Row]) -> list[bool]:
    return [now.get(r["rowid"]) == r for r in before]


class _SQLite(_Side):
    def __init__(self, store: Any) -> None:
        self.store = store
        self.conn = store._conn

    def _rows(self, sql: str, args: Sequence[Any]) -> list[Row]:
        with self.store._lock:
            return [dict(r) for r in self.conn.execute(sql, args)]

    def missing(self) -> int:
        with self.store._lock:
            return int(self.conn.execute("SELECT count(*) FROM chunks c WHERE NOT EXISTS "
                                         "(SELECT 1 FROM chunk_features f WHERE f.chunk = c.rowid)").fetchone()[0])

    def page(self, after: int, size: int) -> list[Row]:
        return self._rows(f"SELECT c.rowid AS rowid, {_COLS} FROM chunks c WHERE c.rowid > ? AND NOT EXISTS "
                          "(SELECT 1 FROM chunk_features f WHERE f.chunk = c.rowid) ORDER BY c.rowid LIMIT ?",
                          (after, size))

    def write(self, rows: list[Row], recs: list[str]) -> tuple[int, int]:
        import sqlite3

        ids = [r["rowid"] for r in rows]
        with self.store._lock:
            cur = self.conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")  # waits up to the connection's 30 s for another writer
            except sqlite3.OperationalError as e:
                if "readonly" in str(e):
                    raise InputError(f"cannot be written ({e})", where=str(self.store.path)) from None
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                raise InputError("another writer held the store for 30 s; the records written so far are kept, "
                                 "run it again to write the rest", where=str(self.store.path)) from None
            try:
                now = {r["rowid"]: dict(r) for r in cur.execute(
                    f"SELECT c.rowid AS rowid, {_COLS} FROM chunks c WHERE c.rowid IN ({','.join('?' * len(ids))})", ids)}
                keep = _same(rows, now)
                cur.executemany("INSERT OR IGNORE INTO chunk_features VALUES (?, ?)",
                                [(i, rec) for i, rec, k in zip(ids, recs, keep, strict=True) if k])
                written = cur.rowcount if cur.rowcount >= 0 else sum(keep)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return written, len(rows) - sum(keep)


class _Postgres(_Side):
    def __init__(self, store: Any) -> None:
        self.store = store
        self.conn = store._conn
        self.ready = store._chunks_ready() and store._table_exists("chunk_features")

    def missing(self) -> int:
        if not self.ready:
            return 0
        with self.store._lock:
            return int(self.conn.execute("SELECT count(*) AS n FROM chunks c WHERE NOT EXISTS "
                                         "(SELECT 1 FROM chunk_features f WHERE f.chunk = c.rowid)").fetchone()["n"])

    def page(self, after: int, size: int) -> list[Row]:
        if not self.ready:
            return []
        with self.store._lock:
            return [dict(r) for r in self.conn.execute(
                f"SELECT c.rowid AS rowid, {_COLS} FROM chunks c WHERE c.rowid > %s AND NOT EXISTS "
                "(SELECT 1 FROM chunk_features f WHERE f.chunk = c.rowid) ORDER BY c.rowid LIMIT %s", (after, size))]

    def write(self, rows: list[Row], recs: list[str]) -> tuple[int, int]:
        ids = [r["rowid"] for r in rows]

        def once() -> tuple[int, int]:
            with self.store._lock, self.conn.transaction():
                now = {r["rowid"]: dict(r) for r in self.conn.execute(
                    f"SELECT c.rowid AS rowid, {_COLS} FROM chunks c WHERE c.rowid = ANY(%s)", (ids,))}
                keep = _same(rows, now)
                pairs = [(i, rec) for i, rec, k in zip(ids, recs, keep, strict=True) if k]
                cur = self.conn.execute(
                    "INSERT INTO chunk_features(chunk, features) SELECT * FROM unnest(%s::bigint[], %s::text[]) "
                    "ON CONFLICT (chunk) DO NOTHING", ([p[0] for p in pairs], [p[1] for p in pairs]))
                return max(cur.rowcount, 0), len(rows) - len(pairs)

        return self.store._retry(once, "writing feature records", self.store.location)  # type: ignore[no-any-return]

    def tidy(self) -> None:
        if self.ready:
            with self.store._lock:
                self.conn.execute("DELETE FROM chunk_features f WHERE NOT EXISTS "
                                  "(SELECT 1 FROM chunks c WHERE c.rowid = f.chunk)")
