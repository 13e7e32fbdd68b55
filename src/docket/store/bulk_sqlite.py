"""`docket import` into a SQLite store: every row of the file in one transaction, batch inserts.

Uses the store's own write transaction (`_transaction`: BEGIN IMMEDIATE, the generation bump,
COMMIT, or ROLLBACK on any error) and its term ids (`_TermIds`); each row's posting blob is the
one `write_version` stores, byte for byte (tests/test_import.py), cut from one array per batch
out of the term counts the worker processes send (docket.store.bulk_text), with one
`executemany` per batch instead of statements per document version. The chunk log triggers fire as for any write, so readers' warm indexes and the
ANN index file follow; the search index is built once, after the load, by a first search, from
the rows the load kept (`_Dense.after_load`: no read-back) while a thread builds the ANN index
from the load's vectors beside the commit.

Feature records (docket.features) are not computed here (about 1 ms a chunk, ten times the rest of
the import); a chunk without one gets its features the first time a brief reads it, as chunks
written before schema 3 do.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from datetime import date as Date
from itertools import repeat
from typing import Any

import numpy as np

from docket.errors import InputError
from docket.store.access import AclResolution, resolve_acl
from docket.store.bulk_text import Terms
from docket.store.importer import Batch, Checker
from docket.store.protocol import Filters
from docket.store.sqlite_index import _Rows

_INSERT = ("INSERT INTO chunks(id, doc, version, position, status, date, effective_to, title, section, source_type,"
           " trust, acl, public, metadata, text, tokens, vector, terms, len, context)"
           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
#: SQLite's page cache (KiB) for this connection during a load, then set back (`_load_settings`)
_LOAD_CACHE_KIB = 262_144


def load(store: Any, batches: Iterable[Batch], checker: Checker, note: AclResolution,
         stages: dict[str, float] | None = None) -> int:
    """Write every batch and the versions they make, all or nothing; returns the chunks written.
    `stages` (benchmarks) gets the seconds each stage took."""
    from docket.store.sqlite_schema import _TermIds

    ids = _TermIds(store._terms)
    known = dict(ids.cache)
    started = time.perf_counter()
    spent = {"terms": 0.0, "insert": 0.0}
    checker.on_checked = _Checked(store, checker)
    try:
        with _load_settings(store._conn):
            n = _write(store, batches, checker, note, ids, known, spent)
        ids.committed()
        built = time.perf_counter()
        if n:  # the search index (and its snapshot / ANN files), built once now rather than by the first question
            store.search_dense(np.zeros(checker.dim, dtype=np.float32), 1, Filters(unrestricted=True))
    finally:
        store.load_done()  # rows and a build the search did not take (a refused file, no approximate index)
    if stages is not None:
        stages["read+check+count"] = built - started - sum(spent.values())
        stages.update(spent)
        stages["search index"] = time.perf_counter() - built
    return n


class _Checked:
    """Keeps the checked batches' vectors. For a file whose row count is known (Parquet): at its
    first batch (any worker process is forked by then) has the store start training its ANN
    index from the sample rows read from the file beside the load (`_Dense.ann_ahead`), and at its
    last row hands it the checked vectors (`_Dense.ann_before_load`: it trains from those now when
    it did not start ahead, or when the rows read ahead were not exactly these)."""

    def __init__(self, store: Any, checker: Checker) -> None:
        self.store, self.checker, self.rows = store, checker, 0
        self.vectors: list[np.ndarray] = []

    def __call__(self, b: Batch, total: int) -> None:
        if not self.rows and total and self.checker.read_rows is not None:
            self.store.ann_ahead(total, self.checker.read_rows)
        self.vectors.append(b.vectors)
        self.rows += len(b)
        if total and self.rows == total:
            self.store.ann_before_load(self.vectors)


@contextmanager
def _load_settings(conn: Any) -> Iterator[None]:
    """The connection's settings for the load, set back after it (its commit or rollback).

    - A page cache of `_LOAD_CACHE_KIB` (the default 2 MB cannot hold the indexes each insert
      walks: chunk ids, document versions, terms).
    - A rollback journal instead of WAL, with `synchronous=FULL`: in WAL every page of the load is
      written twice (to the WAL, then by the checkpoint into the file), which at 100k rows cost
      the writer ~2 s of system CPU of its ~9; a rollback journal holds only the pages the store
      had before (an empty store: a few), so the load's pages are written once. A crash or a
      refused row still leaves nothing (the journal rolls the file back, as WAL would). The switch
      needs the file to itself: where another connection has it open, the load stays in WAL.
      While it runs, another process cannot open the store (it waits for the lock, as for any
      writer's journal); `_set_wal` puts WAL back after it (waiting up to 30 s for other openers).
    """
    from docket.store.sqlite_schema import _set_wal

    cache = int(conn.execute("PRAGMA cache_size").fetchone()[0])
    sync = int(conn.execute("PRAGMA synchronous").fetchone()[0])
    conn.execute(f"PRAGMA cache_size={-_LOAD_CACHE_KIB}")
    try:
        journal = str(conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]).lower()
    except sqlite3.OperationalError:  # another connection holds the file: stay in WAL
        journal = "wal"
    try:
        if journal != "wal":
            conn.execute("PRAGMA synchronous=FULL")
        yield
    finally:
        if journal != "wal":
            _set_wal(conn)
            conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute(f"PRAGMA cache_size={cache}")


def _write(store: Any, batches: Iterable[Batch], checker: Checker, note: AclResolution, ids: Any,
           known: dict[str, int], spent: dict[str, float]) -> int:
    """The load's one transaction: the rows, then the versions they make."""
    from docket.store.sqlite_read import _iso
    from docket.store.sqlite_schema import _registry

    n = 0
    parts: list[_Rows] = []  # the rows as the search index reads them, handed to it after the commit
    with store._transaction() as cur:
        if cur.execute("SELECT EXISTS (SELECT 1 FROM chunks) OR EXISTS (SELECT 1 FROM versions)").fetchone()[0]:
            raise InputError("already holds documents; `docket import` builds a new store (import into an empty "
                             "one, then add to it with `docket index`)", where=store.location)
        cur.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                        [("dim", str(checker.dim)), ("embedder", checker.embedder)])
        registry = _registry(cur)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for b in batches:
            n += _insert(cur, b, ids, known, registry, note, spent, parts)
        store.after_load(cur, parts)
        cur.executemany(
            "INSERT INTO versions VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(v.doc, v.version, v.status, _iso(v.date), _iso(v.effective_to), v.title, f"{checker.where}:{v.first}",
              v.content_hash(), v.n, now) for v in sorted(checker.versions.values(), key=lambda v: (v.doc, v.version))])
    return n


def _insert(cur: Any, b: Batch, ids: Any, known: dict[str, int], registry: Any, note: AclResolution,
            spent: dict[str, float], parts: list[_Rows]) -> int:
    from docket.store.sqlite_read import _iso

    c = b.cols
    n = len(b)
    t0 = time.perf_counter()
    assert b.terms is not None, "bulk_sqlite reads batches(..., terms=True)"
    postings, sizes, lengths = _postings(cur, ids, known, b.terms)
    t1 = time.perf_counter()
    acls = _per_value(c["acl"], lambda acl: resolve_acl(acl, registry, note))
    shown = _per_value(acls, lambda acl: None if acl is None else json.dumps(list(acl)))
    dates, ends = _per_value(c["date"], _iso), _per_value(c["effective_to"], _iso)
    raw, width = b.vectors.tobytes(), b.vectors.shape[1] * 4
    cur.executemany(_INSERT, zip(
        c["id"], c["doc"], c["version"], c["position"], c["status"], dates, ends, c["title"], c["section"],
        c["source_type"], c["trust"], shown, [int(a is None) for a in acls],
        _metadata(c["metadata"]), c["text"], b.tokens,
        [raw[i * width : (i + 1) * width] for i in range(n)], _cut(postings, sizes), lengths.tolist(), repeat(None, n),
        strict=True))
    parts.append(_Rows(  # what _Rows.of reads back from these rows (rowids: set once the load knows them)
        rowids=np.zeros(0, dtype=np.int64), ids=c["id"], docs=c["doc"], statuses=c["status"], sources=c["source_type"],
        dates=np.asarray(_per_value(dates, lambda d: Date.fromisoformat(d).toordinal() if d else 0), dtype=np.int64),
        public=np.fromiter((a is None for a in acls), dtype=bool, count=n), mat=b.vectors,
        lens=lengths.astype(np.float32), post_terms=np.ascontiguousarray(postings["term"]),
        post_rows=np.repeat(np.arange(n, dtype=np.int32), sizes), post_tf=postings["tf"].astype(np.float32)))
    if any(acls):
        rowid = "SELECT rowid FROM chunks WHERE id = ?"
        first = cur.execute(rowid, (c["id"][0],)).fetchone()[0]
        last = cur.execute(rowid, (c["id"][-1],)).fetchone()[0]
        if last - first == n - 1:  # each insert took a rowid above every other: n rowids in n places, in order
            rowid_of = dict(zip(c["id"], range(first, first + n), strict=True))
        else:  # rowids not consecutive (the largest possible one was taken: SQLite then picks at random)
            rowid_of = {i: cur.execute(rowid, (i,)).fetchone()[0] for i in c["id"]}
        cur.executemany("INSERT OR IGNORE INTO chunk_acl VALUES (?, ?)",
                        [(e, rowid_of[i]) for i, acl in zip(c["id"], acls, strict=True) if acl for e in acl])
    spent["terms"] += t1 - t0
    spent["insert"] += time.perf_counter() - t1
    return n


def _metadata(metas: list[dict[str, Any]]) -> list[str | None]:
    """Each row's metadata column: its JSON, None for none (every row, mostly)."""
    if not any(metas):
        return [None] * len(metas)
    return [json.dumps(m, ensure_ascii=False) if m else None for m in metas]


def _per_value(values: list[Any], fn: Any) -> list[Any]:
    """`fn` of each value (an acl tuple, a date), called once per distinct value."""
    seen = {v: fn(v) for v in dict.fromkeys(values)}
    return list(map(seen.__getitem__, values))


def _postings(cur: Any, ids: Any, known: dict[str, int], terms: Terms) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The batch's postings in row order (`_POSTING`: term id, capped count), how many each row
    has, and each row's length (the sum of its counts, before the cap); `_cut` of the first two is
    each row's posting blob, byte for byte what `_TermIds.pack` (write_version) gives for its
    search text. Ids for the batch's new terms are taken here; `known` is every term id this load
    has seen (new ones also go to `ids.new`)."""
    from docket.store.sqlite_schema import _POSTING, insert_terms

    vocab, index, tf, sizes = terms
    if not len(sizes):
        return np.zeros(0, dtype=_POSTING), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    for tid, term in insert_terms(cur, set(vocab).difference(known)):
        ids.new[term] = known[term] = tid
    arr = np.empty(len(index), dtype=_POSTING)
    arr["term"] = np.fromiter(map(known.__getitem__, vocab), dtype=np.int64, count=len(vocab))[index]
    arr["tf"] = np.minimum(tf, 65535)
    ends = np.cumsum(sizes)
    running = np.concatenate([[0], np.cumsum(tf)])
    return arr, np.asarray(sizes), running[ends] - running[ends - sizes]


def _cut(arr: np.ndarray, sizes: np.ndarray) -> list[bytes]:
    """Each row's posting blob, cut from the batch's postings."""
    if not len(sizes):
        return []
    raw, width = arr.tobytes(), arr.dtype.itemsize
    cuts = (np.cumsum(sizes) * width).tolist()
    return [raw[s:e] for s, e in zip([0, *cuts[:-1]], cuts, strict=True)]
