"""The embedded default store: one SQLite file, no server.

WAL journal; each document version is written inside one `BEGIN IMMEDIATE` transaction, so a
process killed mid-index leaves every document either in its old or its new state. The stdlib
`sqlite3` cannot load extensions (no sqlite-vec), so search runs in numpy over an index loaded
lazily from the file and kept current after writes (by this or any other process: every write
transaction bumps a generation counter, and triggers log which chunk rows changed, so the warm
index applies only those rows; it reloads in full when much has changed): dense search is exact
cosine over a float32 matrix of the vector BLOBs; keyword search is BM25 (k1 1.2, b 0.75, the
PostgreSQL backend's formula) over postings built from each chunk's stored term ids, with IDF,
document count and average length taken over the rows the principal may read, so a ranking
never depends on text the asker cannot see. Metadata and ACL filters are numpy masks applied
before ranking: a filtered-out chunk never gets a rank. `snapshot()` holds one read transaction,
so searches and fetches inside it see one state of the file.

Schema changes are one migration function per version step (`_MIGRATIONS`), run once when an
older file is opened, inside one write transaction.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import struct
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from datetime import date as Date
from pathlib import Path
from typing import Any

import numpy as np

from docket.blas import BlasThreads as _BlasThreads
from docket.errors import DocketError, InputError
from docket.features import RecordWriter, default_cache, record_of, stored_features
from docket.model import Chunk
from docket.store import snapshot as _snapshot_file
from docket.store import sqlite_file as _sqlite_file
from docket.store.access import AclResolution, Principal, Registry, resolve_acl
from docket.store.base import VersionInfo
from docket.store.protocol import (
    DocumentVersion,
    Filters,
    StoredVersion,
    WriteResult,
    check_version,
    chunk_from_row,
    plan_write,
    search_text,
)
from docket.store.terms import query_terms, term_counts

SCHEMA_VERSION = 4
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS versions(
  doc TEXT NOT NULL, version INTEGER NOT NULL, status TEXT NOT NULL, date TEXT, effective_to TEXT,
  title TEXT, source TEXT, content_hash TEXT NOT NULL, n_chunks INTEGER NOT NULL, indexed_at TEXT,
  PRIMARY KEY (doc, version));
CREATE TABLE IF NOT EXISTS chunks(
  rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL, version INTEGER NOT NULL,
  position INTEGER, status TEXT NOT NULL, date TEXT, effective_to TEXT, title TEXT, section TEXT,
  source_type TEXT, trust TEXT, acl TEXT, public INTEGER NOT NULL, metadata TEXT, text TEXT NOT NULL,
  tokens INTEGER NOT NULL, vector BLOB NOT NULL, terms BLOB NOT NULL DEFAULT x'', len INTEGER NOT NULL DEFAULT 0,
  context TEXT);
CREATE INDEX IF NOT EXISTS chunks_docver ON chunks(doc, version, position);
CREATE TABLE IF NOT EXISTS chunk_acl(principal TEXT NOT NULL, chunk INTEGER NOT NULL,
  PRIMARY KEY (principal, chunk)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_acl_chunk ON chunk_acl(chunk);
CREATE TABLE IF NOT EXISTS terms(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS principals(name TEXT PRIMARY KEY, groups TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_features(chunk INTEGER PRIMARY KEY, features TEXT NOT NULL);
"""
#: which chunk rows changed, in commit order: triggers fill it for every writer (older docket
#: versions and plain SQL included), so a reader's warm index applies what changed since it
#: loaded instead of reading the whole file again (`_Index.refreshed`); writes prune it
_LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS chunk_log_insert AFTER INSERT ON chunks
  BEGIN INSERT INTO chunk_log(chunk) VALUES (NEW.rowid); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_delete AFTER DELETE ON chunks
  BEGIN INSERT INTO chunk_log(chunk) VALUES (OLD.rowid); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_update AFTER UPDATE ON chunks
  BEGIN INSERT INTO chunk_log(chunk) VALUES (OLD.rowid); INSERT INTO chunk_log(chunk) VALUES (NEW.rowid); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_acl_insert AFTER INSERT ON chunk_acl
  BEGIN INSERT INTO chunk_log(chunk) VALUES (NEW.chunk); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_acl_delete AFTER DELETE ON chunk_acl
  BEGIN INSERT INTO chunk_log(chunk) VALUES (OLD.chunk); END;
"""
#: one random token per generation, written by each write transaction (see `_ensure_write_tokens`)
_TOKENS_SCHEMA = "CREATE TABLE IF NOT EXISTS write_tokens(generation INTEGER PRIMARY KEY, token TEXT NOT NULL);"
#: how many log entries a store keeps (a reader further behind reloads in full)
_LOG_KEEP = 200_000
#: a warm index reloads in full instead once this share of its rows is dead or appended
_REFRESH_SHARE = 0.25
#: the layout of the index snapshot file (`SQLiteStore.snapshot_path`); another value is not read
_SNAPSHOT_LAYOUT = f"sqlite-index-1/schema-{SCHEMA_VERSION}"
#: the smallest store whose index is kept in a snapshot file by default (smaller ones load in
#: well under a second); env DOCKET_INDEX_SNAPSHOT: 0 = never, 1 = whatever the size
SNAPSHOT_MIN_ROWS = 20_000
_COLS = "c.id, c.doc, c.version, c.position, c.status, c.date, c.effective_to, c.title, c.section, " \
    "c.source_type, c.trust, c.acl, c.metadata, c.text, c.tokens, c.vector, f.features"
#: the chunks with their persisted features (docket.features), kept in a table of their own so
#: the chunk rows (read whole by every search) stay as narrow as before
_FROM = "chunks c LEFT JOIN chunk_features f ON f.chunk = c.rowid"
#: one posting of a chunk's term list: term id, frequency in the chunk
_POSTING = np.dtype([("term", "<i4"), ("tf", "<u2")])
_K1, _B = 1.2, 0.75


def _migrate_v1_to_v2(cur: sqlite3.Cursor) -> None:
    """Schema 1 -> 2: users and groups apart, BM25 over docket's own postings.

    Plain acl entries are rewritten in the typed form by the principals table (`resolve_acl`:
    a registered user who is no registered group becomes `user:NAME`, the rest `group:NAME`;
    what was done is kept in meta `acl_migration`). Each chunk gets its term ids and length; the
    FTS5 table (whose bm25() counted every row, restricted ones included) is dropped.
    """
    registry = _registry(cur)
    note = AclResolution()
    for rowid, acl in cur.execute("SELECT rowid, acl FROM chunks WHERE acl IS NOT NULL").fetchall():
        typed = resolve_acl(json.loads(acl), registry, note)
        assert typed is not None
        cur.execute("UPDATE chunks SET acl = ? WHERE rowid = ?", (json.dumps(list(typed)), rowid))
        cur.execute("DELETE FROM chunk_acl WHERE chunk = ?", (rowid,))
        cur.executemany("INSERT OR IGNORE INTO chunk_acl VALUES (?, ?)", [(e, rowid) for e in typed])
    cur.execute("ALTER TABLE chunks ADD COLUMN terms BLOB NOT NULL DEFAULT x''")
    cur.execute("ALTER TABLE chunks ADD COLUMN len INTEGER NOT NULL DEFAULT 0")
    cur.execute("CREATE TABLE IF NOT EXISTS terms(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE)")
    rows = cur.execute("SELECT rowid, title, section, text FROM chunks ORDER BY rowid").fetchall()
    ids = _TermIds()
    for start in range(0, len(rows), 1000):
        part = rows[start : start + 1000]
        packed = ids.pack(cur, [_search_text(r[1], r[2], r[3]) for r in part])
        cur.executemany("UPDATE chunks SET terms = ?, len = ? WHERE rowid = ?",
                        [(blob, n, r[0]) for (blob, n), r in zip(packed, part)])
    cur.execute("DROP TABLE IF EXISTS chunks_fts")
    cur.execute("INSERT OR REPLACE INTO meta VALUES ('acl_migration', ?)", (json.dumps(note.to_json()),))


def _migrate_v2_to_v3(cur: sqlite3.Cursor) -> None:
    """Schema 2 -> 3: every chunk keeps its question-independent features (docket.features:
    words, titles, statements, copy hash, rendered token counts), computed here for the rows
    already stored, so a fresh process reads them instead of recomputing them per chunk."""
    cur.execute("CREATE TABLE IF NOT EXISTS chunk_features(chunk INTEGER PRIMARY KEY, features TEXT NOT NULL)")
    cols = _COLS.replace(", f.features", "")
    rows = cur.execute(f"SELECT c.rowid AS rowid, {cols} FROM chunks c ORDER BY c.rowid").fetchall()
    for start in range(0, len(rows), 1000):
        part = rows[start : start + 1000]
        cur.executemany("INSERT OR REPLACE INTO chunk_features VALUES (?, ?)",
                        [(r["rowid"], record_of(chunk_from_row(dict(r), None))) for r in part])


def _migrate_v3_to_v4(cur: sqlite3.Cursor) -> None:
    """Schema 3 -> 4: a nullable `context` per chunk (index --contextualize: a model-written
    context, embedded and keyword-indexed with the chunk, never shown in a prompt). Existing
    chunks have none, so their vectors and postings stay as they are. A store that already has the
    column (written with it, then marked older) is left as it is."""
    if "context" not in {r[1] for r in cur.execute("PRAGMA table_info(chunks)")}:
        cur.execute("ALTER TABLE chunks ADD COLUMN context TEXT")


#: schema version -> the function that lifts a store from it to the next version
_MIGRATIONS = {1: _migrate_v1_to_v2, 2: _migrate_v2_to_v3, 3: _migrate_v3_to_v4}


def _registry(cur: sqlite3.Cursor) -> Registry:
    return Registry.of((r[0], json.loads(r[1])) for r in cur.execute("SELECT name, groups FROM principals"))


def _search_text(title: str | None, section: str | None, text: str, context: str | None = None) -> str:
    """What keyword search reads of a chunk: title, section, its context (if any) and text."""
    return f"{title or ''} {section or ''} {search_text(context, text)}"


class _TermIds:
    """Term -> id in the `terms` table; ids are never reused or deleted, so a mapping read once
    stays true. New ids enter the shared cache only after their transaction commits."""

    def __init__(self, cache: dict[str, int] | None = None) -> None:
        self.cache = cache if cache is not None else {}
        self.new: dict[str, int] = {}

    def pack(self, cur: sqlite3.Cursor, texts: Sequence[str]) -> list[tuple[bytes, int]]:
        counts = [term_counts(t) for t in texts]
        wanted = {t for c in counts for t in c if t not in self.cache and t not in self.new}
        if wanted:
            todo = sorted(wanted)
            cur.executemany("INSERT OR IGNORE INTO terms(term) VALUES (?)", [(t,) for t in todo])
            for start in range(0, len(todo), 500):
                part = todo[start : start + 500]
                for tid, term in cur.execute(f"SELECT id, term FROM terms WHERE term IN ({','.join('?' * len(part))})", part):
                    self.new[term] = tid
        out = []
        cache, new = self.cache, self.new
        for c in counts:
            arr = np.empty(len(c), dtype=_POSTING)
            arr["term"] = [cache.get(t) or new[t] for t in c]
            arr["tf"] = np.minimum(np.fromiter(c.values(), dtype=np.int64, count=len(c)), 65535)
            out.append((arr.tobytes(), int(sum(c.values()))))
        return out

    def committed(self) -> None:
        self.cache.update(self.new)
        self.new = {}


#: the chunk columns the search index reads, in this order
_INDEX_COLS = "rowid, id, doc, status, source_type, date, public, vector, terms, len"


@dataclass
class _Rows:
    """Chunk rows as read for the index, column by column (see `_INDEX_COLS`)."""

    rowids: np.ndarray
    ids: list[str]
    docs: list[str]
    statuses: list[str]
    sources: list[str | None]
    dates: np.ndarray
    public: np.ndarray
    mat: np.ndarray
    lens: np.ndarray
    post_terms: np.ndarray  # postings in row order: term ids...
    post_rows: np.ndarray  # ...the row (0-based in these rows) of each...
    post_tf: np.ndarray  # ...and its frequency

    @classmethod
    def of(cls, rows: Sequence[Any], dim: int) -> _Rows:
        n = len(rows)
        counts = np.fromiter((len(r[8]) // _POSTING.itemsize for r in rows), dtype=np.int64, count=n)
        postings = np.frombuffer(b"".join(r[8] for r in rows), dtype=_POSTING)
        return cls(
            rowids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=n),
            ids=[r[1] for r in rows], docs=[r[2] for r in rows], statuses=[r[3] for r in rows],
            sources=[r[4] for r in rows],
            dates=np.fromiter((Date.fromisoformat(r[5]).toordinal() if r[5] else 0 for r in rows), dtype=np.int64,
                              count=n),
            public=np.fromiter((bool(r[6]) for r in rows), dtype=bool, count=n),
            mat=np.frombuffer(b"".join(r[7] for r in rows), dtype=np.float32).reshape(n, -1) if rows
            else np.zeros((0, dim), dtype=np.float32),
            lens=np.fromiter((r[9] for r in rows), dtype=np.float32, count=n),
            post_terms=np.ascontiguousarray(postings["term"]),
            post_rows=np.repeat(np.arange(n, dtype=np.int32), counts),
            post_tf=postings["tf"].astype(np.float32),
        )


class _Matrix:
    """A float32 matrix that grows at the end in place: an index refreshed after a write appends
    the new rows without copying the old ones, and an older index keeps reading its own prefix
    (rows are never changed once written; dead ones are masked)."""

    def __init__(self, mat: np.ndarray) -> None:
        self.buf = np.ascontiguousarray(mat, dtype=np.float32)
        self.n = self.buf.shape[0]

    def append(self, rows: np.ndarray) -> np.ndarray:
        """The matrix with `rows` added (a view of the buffer); a new, larger buffer when full."""
        k = rows.shape[0]
        if rows.shape[1] != self.buf.shape[1]:
            raise ValueError(f"rows of dimension {rows.shape[1]} added to a matrix of {self.buf.shape[1]}")
        if self.n + k > self.buf.shape[0]:
            grown = np.empty((max(self.n + k, int(self.n * 1.25) + 1024), self.buf.shape[1]), dtype=np.float32)
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf[self.n : self.n + k] = rows
        self.n += k
        return self.buf[: self.n]


@dataclass
class _Index:
    """The in-memory side of search. Loaded once, then kept current from the change log: a row
    that changed is marked dead and its current state appended (`refreshed`), until dead and
    appended rows pass `_REFRESH_SHARE` and the next change reloads everything in rowid order."""

    generation: str
    seq: int  # the last change-log entry this index includes
    ids: list[str]
    rowids: np.ndarray
    mat: np.ndarray
    public: np.ndarray
    alive: np.ndarray | None  # None: every row is alive
    docs: np.ndarray
    doc_codes: dict[str, int]
    statuses: np.ndarray
    status_codes: dict[str, int]
    source_types: np.ndarray
    source_codes: dict[str, int]
    dates: np.ndarray  # proleptic ordinal, 0 = undated
    acl: dict[str, np.ndarray]  # typed acl entry -> row indexes it opens
    lens: np.ndarray  # terms per chunk (float32)
    post_terms: np.ndarray  # postings sorted by term id: term ids...
    post_rows: np.ndarray  # ...the row of each posting...
    post_tf: np.ndarray  # ...and its term frequency (float32)
    # postings of the rows appended since the load, sorted by term like the loaded ones
    new_terms: np.ndarray
    new_rows: np.ndarray
    new_tf: np.ndarray
    matrix: _Matrix
    base_rows: int  # rows of the full load (the rest were appended by refreshes)
    #: whether every row is public (None: not yet looked at); then an ACL check keeps every row
    every_public: bool | None = None
    #: (row count, mean length) of the rows each principal may read, by its acl names: BM25's
    #: statistics depend only on who asks, not on the question (bounded; see `readable_stats`)
    stats: dict[tuple[str, ...] | None, tuple[int, float]] = field(default_factory=dict)

    @classmethod
    def load(cls, rows: _Rows, acl_rows: Sequence[tuple[str, int]], generation: str, seq: int) -> _Index:
        index = {int(rid): i for i, rid in enumerate(rows.rowids)}
        by_entry: dict[str, list[int]] = {}
        for p, chunk in acl_rows:
            if chunk in index:
                by_entry.setdefault(p, []).append(index[chunk])
        order = np.argsort(rows.post_terms, kind="stable")
        docs, doc_codes = _codes(rows.docs)
        statuses, status_codes = _codes(rows.statuses)
        sources, source_codes = _codes(rows.sources)
        matrix = _Matrix(rows.mat)
        empty_i, empty_f = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        return cls(
            generation=generation, seq=seq, ids=rows.ids, rowids=rows.rowids, mat=matrix.buf[: matrix.n],
            public=rows.public, alive=None, docs=docs, doc_codes=doc_codes, statuses=statuses,
            status_codes=status_codes, source_types=sources, source_codes=source_codes, dates=rows.dates,
            acl={p: np.asarray(ix, dtype=np.int64) for p, ix in by_entry.items()}, lens=rows.lens,
            post_terms=np.ascontiguousarray(rows.post_terms[order]), post_rows=rows.post_rows[order],
            post_tf=rows.post_tf[order], new_terms=empty_i, new_rows=empty_i, new_tf=empty_f,
            matrix=matrix, base_rows=len(rows.ids),
        )

    def snapshot_parts(self) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, list[str]]]:
        """The index as `snapshot.write` takes it. Only a full load is written (no dead or appended
        rows), so what is read back is one state of the file, at `seq`."""
        if self.alive is not None or self.new_terms.shape[0] or self.base_rows != len(self.ids):
            raise ValueError("only a freshly loaded index is written to a snapshot")
        names = list(self.acl)
        acl_rows = [self.acl[k] for k in names]
        arrays = {
            "rowids": self.rowids, "mat": self.mat, "public": self.public, "docs": self.docs,
            "statuses": self.statuses, "source_types": self.source_types, "dates": self.dates, "lens": self.lens,
            "post_terms": self.post_terms, "post_rows": self.post_rows, "post_tf": self.post_tf,
            "acl_rows": np.concatenate(acl_rows) if acl_rows else np.zeros(0, dtype=np.int64),
            "acl_sizes": np.asarray([len(a) for a in acl_rows], dtype=np.int64),
        }
        strings = {"ids": self.ids, "acl_names": names, "doc_codes": _code_list(self.doc_codes),
                   "status_codes": _code_list(self.status_codes), "source_codes": _code_list(self.source_codes)}
        fields = {"generation": self.generation, "seq": self.seq, "rows": len(self.ids), "dim": int(self.mat.shape[1])}
        return fields, arrays, strings

    @classmethod
    def from_snapshot(cls, fields: dict[str, Any], a: dict[str, np.ndarray], s: dict[str, list[str]]) -> _Index:
        """The index `snapshot_parts` wrote (arrays as read-only memory maps); ValueError if its
        parts do not fit together."""
        n = int(fields["rows"])
        ids = list(s["ids"])
        mat = a["mat"]
        if len(ids) != n or mat.shape != (n, int(fields["dim"])) or mat.dtype != np.float32:
            raise ValueError("the snapshot's rows do not match")
        for name in ("rowids", "public", "docs", "statuses", "source_types", "dates", "lens"):
            if a[name].shape != (n,):
                raise ValueError(f"the snapshot's {name} do not match its rows")
        if not a["post_terms"].shape == a["post_rows"].shape == a["post_tf"].shape:
            raise ValueError("the snapshot's postings do not match")
        if a["post_rows"].size and int(a["post_rows"].max()) >= n:
            raise ValueError("a posting points past the snapshot's rows")
        names, sizes, rows = list(s["acl_names"]), a["acl_sizes"], a["acl_rows"]
        if len(names) != sizes.shape[0] or int(sizes.sum()) != rows.shape[0] or (rows.size and int(rows.max()) >= n):
            raise ValueError("the snapshot's ACL entries do not match")
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        acl = {k: rows[bounds[i] : bounds[i + 1]] for i, k in enumerate(names)}
        matrix = _Matrix(mat)
        empty_i, empty_f = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        return cls(
            generation=str(fields["generation"]), seq=int(fields["seq"]), ids=ids, rowids=a["rowids"],
            mat=matrix.buf[: matrix.n], public=a["public"], alive=None, docs=a["docs"],
            doc_codes=_code_table(s["doc_codes"]), statuses=a["statuses"], status_codes=_code_table(s["status_codes"]),
            source_types=a["source_types"], source_codes=_code_table(s["source_codes"]), dates=a["dates"], acl=acl,
            lens=a["lens"], post_terms=a["post_terms"], post_rows=a["post_rows"], post_tf=a["post_tf"],
            new_terms=empty_i, new_rows=empty_i, new_tf=empty_f, matrix=matrix, base_rows=n,
        )

    def worn(self, changed: int) -> bool:
        """Whether applying `changed` more rows would leave too much dead weight: reload instead."""
        dead = 0 if self.alive is None else int((~self.alive).sum())
        appended = len(self.ids) - self.base_rows
        return dead + appended + 2 * changed > _REFRESH_SHARE * max(self.base_rows, 1000)

    def refreshed(self, changed: np.ndarray, rows: _Rows, acl_rows: Sequence[tuple[str, int]], generation: str,
                  seq: int) -> _Index:
        """A new index: the rows whose rowid is in `changed` dead, `rows` (their current state:
        the rows still present) appended. This index is left as it was, for searches running on it."""
        n0 = len(self.ids)
        alive = np.ones(n0, dtype=bool) if self.alive is None else self.alive.copy()
        alive[np.isin(self.rowids, changed)] = False
        k = len(rows.ids)
        alive = np.concatenate([alive, np.ones(k, dtype=bool)])
        doc_codes, status_codes, source_codes = dict(self.doc_codes), dict(self.status_codes), dict(self.source_codes)
        at = {int(rid): n0 + i for i, rid in enumerate(rows.rowids)}
        acl = dict(self.acl)
        added: dict[str, list[int]] = {}
        for p, chunk in acl_rows:
            if chunk in at:
                added.setdefault(p, []).append(at[chunk])
        for p, ix in added.items():
            old = acl.get(p)
            fresh = np.asarray(ix, dtype=np.int64)
            acl[p] = fresh if old is None else np.concatenate([old, fresh])
        new_terms, new_rows, new_tf = _merged_postings(self.new_terms, self.new_rows, self.new_tf, rows.post_terms,
                                                       (rows.post_rows + n0).astype(np.int32), rows.post_tf)
        return _Index(
            generation=generation, seq=seq, ids=self.ids + rows.ids,
            rowids=np.concatenate([self.rowids, rows.rowids]),
            mat=self.matrix.append(rows.mat) if k else self.mat,
            public=np.concatenate([self.public, rows.public]), alive=alive,
            docs=np.concatenate([self.docs, _extend_codes(rows.docs, doc_codes)]), doc_codes=doc_codes,
            statuses=np.concatenate([self.statuses, _extend_codes(rows.statuses, status_codes)]),
            status_codes=status_codes,
            source_types=np.concatenate([self.source_types, _extend_codes(rows.sources, source_codes)]),
            source_codes=source_codes,
            dates=np.concatenate([self.dates, rows.dates]), acl=acl,
            lens=np.concatenate([self.lens, rows.lens]),
            post_terms=self.post_terms, post_rows=self.post_rows, post_tf=self.post_tf,
            new_terms=new_terms, new_rows=new_rows, new_tf=new_tf, matrix=self.matrix, base_rows=self.base_rows,
        )

    def readable(self, f: Filters) -> np.ndarray | None:
        """Rows the filter's principal may read, dead rows never (None: every row, as for an
        unrestricted search or when every row is alive and public)."""
        names = f.acl_names
        if names is None:
            return None if self.alive is None else self.alive.copy()
        if self.alive is None:
            if self.every_public is None:
                self.every_public = bool(self.public.all())
            if self.every_public:
                return None
        readable = self.public.copy()
        for name in names:
            idx = self.acl.get(name)
            if idx is not None:
                readable[idx] = True
        if self.alive is not None:
            readable &= self.alive
        return readable

    def mask(self, f: Filters, readable: np.ndarray | None) -> np.ndarray | None:
        m: np.ndarray | None = readable

        def both(a: np.ndarray) -> np.ndarray:
            return a if m is None else (m & a)

        for values, codes, col in (
            (f.docs, self.doc_codes, self.docs),
            (f.statuses, self.status_codes, self.statuses),
            (f.source_types, self.source_codes, self.source_types),
        ):
            if values:
                wanted = [codes[v] for v in values if v in codes]
                m = both(np.isin(col, wanted) if wanted else np.zeros(len(self.ids), dtype=bool))
        if f.date_from is not None:
            m = both((self.dates > 0) & (self.dates >= f.date_from.toordinal()))
        if f.date_to is not None:
            m = both((self.dates > 0) & (self.dates <= f.date_to.toordinal()))
        return m

    def readable_stats(self, names: list[str] | None, readable: np.ndarray | None) -> tuple[int, float]:
        """BM25's row count and mean length (at least 1) over `readable`, the rows `names` may read,
        computed once per principal for this index (an index is never changed once built)."""
        key = tuple(names) if names is not None else None
        got = self.stats.get(key)
        if got is None:
            if readable is None:
                got = (len(self.ids), max(1.0, float(self.lens.mean())) if len(self.ids) else 1.0)
            else:
                n = int(readable.sum())
                got = (n, max(1.0, float(self.lens[readable].mean())) if n else 1.0)
            if len(self.stats) >= 1024:
                self.stats.clear()
            self.stats[key] = got
        return got

    def postings(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding term `t` and its frequency in each (loaded and appended rows)."""
        lo, hi = np.searchsorted(self.post_terms, np.array([t, t + 1], dtype=self.post_terms.dtype))
        rows, tf = self.post_rows[lo:hi], self.post_tf[lo:hi]
        if self.new_terms.shape[0]:
            nlo, nhi = np.searchsorted(self.new_terms, np.array([t, t + 1], dtype=self.new_terms.dtype))
            if nhi > nlo:
                rows = np.concatenate([rows, self.new_rows[nlo:nhi]])
                tf = np.concatenate([tf, self.new_tf[nlo:nhi]])
        return rows, tf

    def bm25(self, term_ids: list[int], k: int, f: Filters) -> list[tuple[str, float]]:
        """BM25 of the rows passing `f`, with document frequencies, row count and average length
        over the rows the principal may read (never over rows it may not)."""
        readable = self.readable(f)
        mask = self.mask(f, readable)
        n, avg = self.readable_stats(f.acl_names, readable)
        if n == 0:
            return []
        scores: np.ndarray | None = None
        for t in term_ids:
            rows, tf = self.postings(t)
            if rows.shape[0] == 0:
                continue
            if readable is not None:
                keep = readable[rows]
                rows, tf = rows[keep], tf[keep]
            df = rows.shape[0]
            if df == 0:
                continue
            if mask is not None and mask is not readable:
                keep = mask[rows]
                rows, tf = rows[keep], tf[keep]
            idf = np.log1p((n - df + 0.5) / (df + 0.5))
            if scores is None:
                scores = np.zeros(len(self.ids), dtype=np.float64)
            # a row appears once in a term's postings, so a fancy-indexed add is exact
            scores[rows] += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * self.lens[rows] / avg))
        if scores is None:
            return []
        hit = np.flatnonzero(scores > 0)
        top = _top(scores[hit], self.rowids[hit], k)
        return [(self.ids[int(hit[i])], float(scores[hit[i]])) for i in top]


def _merged_postings(terms: np.ndarray, rows: np.ndarray, tf: np.ndarray, more_terms: np.ndarray,
                     more_rows: np.ndarray, more_tf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted postings with more added, still sorted by term (one linear insert per array, not a
    re-sort: a refresh after each write stays cheap as the appended part grows)."""
    order = np.argsort(more_terms, kind="stable")
    more_terms, more_rows, more_tf = more_terms[order], more_rows[order], more_tf[order]
    at = np.searchsorted(terms, more_terms, side="right")
    return np.insert(terms, at, more_terms), np.insert(rows, at, more_rows), np.insert(tf, at, more_tf)


#: float32 mat-vec error bound for unit vectors (dims ≤ 4096), for choosing the exact re-score's candidates
_F32_SLACK = 1e-4


def _contenders(scores: np.ndarray, k: int, slack: float = 0.0) -> np.ndarray:
    """Positions that may be among the k best: every score within `slack` of the k-th, so ties
    (and near-ties) at the boundary are all kept for the caller's own ordering to decide."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        return np.arange(n)
    kth = np.partition(scores, n - k)[n - k]  # the k-th best value (a partition of values, no index array)
    return np.flatnonzero(scores >= kth - slack)


def _dense_top(scores: np.ndarray, rows: np.ndarray, mat: np.ndarray, q: np.ndarray, rowids: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of `scores` (float32 cosines of `mat[rows]` with `q`), best first, and their
    scores re-computed exactly: a BLAS mat-vec can round a row's score differently depending on
    where the row sits in the matrix, which would let equal or nearly equal chunks swap places
    between two processes whose indexes hold rows in different orders. The candidates within
    float32 error of the k-th are re-scored in float64 (each product exact, one summation order
    per row), then ordered by that score and rowid."""
    cand = _contenders(scores, k, _F32_SLACK)
    exact = (mat[rows[cand]].astype(np.float64) * np.asarray(q, dtype=np.float64)).sum(axis=1)
    order = np.lexsort((rowids[rows[cand]], -exact))[:k]
    return cand[order], exact[order]


def _top(scores: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k best scores, best first, ties by key (the chunk's rowid): the same
    answer whatever order the index holds its rows in, boundary ties included."""
    cand = _contenders(scores, k)
    return cand[np.lexsort((keys[cand], -scores[cand]))[:k]]


#: BLAS threads for SQLite's dense scan (env DOCKET_DENSE_THREADS, default 1; 0 leaves BLAS as
#: configured). The scan is one memory-bound float32 mat-vec, which more threads barely speed up,
#: and OpenBLAS's workers spin-wait for a while after each call, taking a core from the Python
#: work that follows (BM25, the fetch, assembly): on the 2-core bench machine warm retrieve p50
#: at 100k chunks went from ~80 to ~50 ms with one thread (docs/store.md, speed at scale).
_DENSE_BLAS = _BlasThreads()


def _code_list(table: dict[str, int]) -> list[str]:
    """A code table as the list of its values in code order (codes are 1, 2, ...)."""
    return sorted(table, key=table.__getitem__)


def _code_table(values: list[str]) -> dict[str, int]:
    return {v: i for i, v in enumerate(values, 1)}


def _access_digest(arrays: dict[str, np.ndarray], strings: dict[str, list[str]]) -> str:
    """A hash of what decides who may read each row (row ids, public flags, ACL entries and their
    rows): a snapshot whose access arrays were damaged or edited is never used."""
    h = hashlib.sha256()
    for name in ("rowids", "public", "acl_sizes", "acl_rows"):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode() + a.dtype.str.encode() + str(a.shape).encode())
        h.update(a.data.cast("B") if a.size else b"")
    h.update(json.dumps(strings["acl_names"]).encode())
    return h.hexdigest()


def _fingerprint_of(m: _Index) -> dict[str, int]:
    """`SQLiteStore._fingerprint` as the index `m` holds it."""
    live = np.ones(len(m.ids), dtype=bool) if m.alive is None else m.alive
    acl = sum(int(live[ix].sum()) for ix in m.acl.values())
    return {"check_rows": int(live.sum()), "check_top": int(m.rowids[live].max()) if live.any() else 0,
            "check_acl": acl}


def _snapshots_wanted(rows: int | None) -> bool:
    """Whether to read (rows None) or write (a full load of `rows`) the index snapshot."""
    setting = os.environ.get("DOCKET_INDEX_SNAPSHOT", "").strip().lower()
    if setting in ("0", "off", "false", "no"):
        return False
    return rows is None or setting in ("1", "on", "true", "yes") or rows >= SNAPSHOT_MIN_ROWS


def _codes(values: Sequence[str | None]) -> tuple[np.ndarray, dict[str, int]]:
    table: dict[str, int] = {}
    return _extend_codes(values, table), table


def _extend_codes(values: Sequence[str | None], table: dict[str, int]) -> np.ndarray:
    """The codes of `values` in `table` (0 = None), adding the values it lacks."""
    out = np.empty(len(values), dtype=np.int32)
    for i, v in enumerate(values):
        out[i] = table.setdefault(v, len(table) + 1) if v is not None else 0
    return out


def _set_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch to WAL, waiting for other openers. Changing the journal mode needs the file to
    itself for an instant and SQLite answers "database is locked" at once instead of calling the
    busy handler, so two processes opening a brand-new store at the same moment would fail."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(0.2, pause * 2)


class SQLiteStore:
    """A docket store in one SQLite file (see the module docstring for the guarantees)."""

    def __init__(self, path: str | Path, *, create: bool = True, read_only: bool = False,
                 file_mode: int | None = None, records: RecordWriter | None = None) -> None:
        """`create`: make the file when there is none (mode 0600, or `file_mode`, whatever the
        umask). `read_only`: open it with SQLite's mode=ro, for commands that only read: nothing is
        created or migrated, and a file that is not a docket store is refused (sqlite_file).
        `records`: writes each chunk's feature record (see below)."""
        self.path = Path(path)
        #: writes each chunk's feature record (docket.features); the wiring passes one that adds
        #: the rendered token counts (docket.brief.sizer.feature_record), which a store cannot know
        self.records: RecordWriter = records or record_of
        self.location = str(self.path)
        self.read_only = read_only
        if (read_only or not create) and not self.path.exists():
            raise InputError("no store here; build one with `docket index PATH --db FILE`", where=str(self.path))
        if self.path.exists() and not self.path.is_file():
            raise InputError("is not a file; give the store's file name (e.g. docket.db)", where=str(self.path))
        try:
            if read_only:
                self._conn = _sqlite_file.connect_read_only(self.path)
            else:
                _sqlite_file.create_private(self.path, file_mode)
                self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
            self._conn.row_factory = sqlite3.Row
            _sqlite_file.check(self._conn, self.path, may_create=create and not read_only, newest=SCHEMA_VERSION)
            if not read_only:
                _set_wal(self._conn)
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._open_schema()
        except BaseException as e:
            conn = getattr(self, "_conn", None)
            if conn is not None:
                conn.close()  # a refused file is not held open
            if isinstance(e, sqlite3.DatabaseError):
                raise InputError(f"is not a docket SQLite store ({e})", where=str(self.path)) from None
            if isinstance(e, OSError):
                raise InputError(f"cannot be opened ({e.strerror or e})", where=str(self.path)) from None
            raise
        if file_mode is not None and not read_only:
            _sqlite_file.apply_mode(self.path, file_mode)
        self._lock = threading.RLock()
        self._index: _Index | None = None
        self._terms: dict[str, int] = {}
        self._snapshot_depth = 0

    def _open_schema(self) -> None:
        if self.read_only:
            self._open_read_only()
            return
        self._open_schema_version()
        self._ensure_log()
        self._store_id = self._ensure_store_id()
        self._tokens = self._ensure_write_tokens()

    def _open_read_only(self) -> None:
        """What `_open_schema` learns, without writing: an older store is refused (a write
        command upgrades it), and one without a store id or write tokens reads no snapshot."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        found = int(row[0])
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if found > SCHEMA_VERSION:
            raise InputError(f"was written by a newer docket (schema {found}, this one reads {SCHEMA_VERSION}); "
                             "upgrade docket", where=str(self.path))
        if found < SCHEMA_VERSION or "chunk_log" not in tables:
            raise InputError(f"was written by an older docket (schema {found}); a command that writes it "
                             "(`docket index ... --db FILE`, `docket principal NAME --groups ... --db FILE`) upgrades it "
                             "once, then reading works", where=str(self.path))
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        self._store_id = str(row[0]) if row is not None else None
        self._tokens = "write_tokens" in tables

    def _ensure_write_tokens(self) -> bool:
        """The table of write tokens (one random token per generation, written by every write
        transaction): an index snapshot says which token its generation had, and a database whose
        token for that generation differs (a restored backup written again, a copy that went its
        own way) is not the state the snapshot describes. False when it cannot be made (a
        read-only file): no snapshot is then read or written."""
        found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'write_tokens'")
        if found.fetchone() is not None:
            current = self._conn.execute("SELECT 1 FROM write_tokens WHERE generation = "
                                         "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation')")
            if current.fetchone() is not None:
                return True
        # the table, and a token for the generation the file is at (written by a docket before
        # tokens, or migrated): without one, a store that is only read would never get a snapshot
        try:
            self._conn.executescript(f"BEGIN IMMEDIATE;\n{_TOKENS_SCHEMA}\n"
                                     "INSERT OR IGNORE INTO write_tokens SELECT CAST(value AS INTEGER), "
                                     f"'{uuid.uuid4().hex}' FROM meta WHERE key = 'generation';\nCOMMIT;")
        except sqlite3.OperationalError:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'write_tokens'")
            return found.fetchone() is not None  # the table is there (a generation without a token writes no file)
        return True

    def _ensure_store_id(self) -> str | None:
        """This database's random identity (meta `store_id`), given to a store made before it
        existed on its first open (INSERT OR IGNORE: two openers agree). An index snapshot is used
        only by the database it was written for: a file deleted and indexed again at the same path
        can reach the same generation, row count and row ids with other contents or other ACLs.
        None when it cannot be written (a read-only file): such a store reads no snapshot."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is not None:
            return str(row[0])
        try:
            self._conn.executescript("BEGIN IMMEDIATE;\n"
                                     f"INSERT OR IGNORE INTO meta VALUES ('store_id', '{uuid.uuid4().hex}');\nCOMMIT;")
        except sqlite3.OperationalError:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            return None
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return str(row[0]) if row is not None else None

    def _ensure_log(self) -> None:
        """The change log and its triggers, added to a store made before they existed (one
        transaction; IF NOT EXISTS, so two openers agree)."""
        found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'chunk_log_acl_delete'")
        if found.fetchone() is not None:
            return
        try:
            self._conn.executescript(f"BEGIN IMMEDIATE;\n{_LOG_SCHEMA}\nCOMMIT;")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _open_schema_version(self) -> None:
        """Create a new store, or bring an older one up to `SCHEMA_VERSION` (one transaction)."""
        fresh = self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None
        if fresh:  # the whole schema in one transaction: another opener sees all of it or none
            try:  # (IF NOT EXISTS throughout: two creators agree)
                self._conn.executescript(f"BEGIN IMMEDIATE;\n{_SCHEMA}\n{_LOG_SCHEMA}\n"
                                         f"INSERT OR IGNORE INTO meta VALUES ('schema', '{SCHEMA_VERSION}');\n"
                                         "INSERT OR IGNORE INTO meta VALUES ('generation', '0');\n"
                                         f"INSERT OR IGNORE INTO meta VALUES ('store_id', '{uuid.uuid4().hex}');\nCOMMIT;")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        found = int(row[0]) if row is not None else SCHEMA_VERSION
        if found > SCHEMA_VERSION:
            raise InputError(f"was written by a newer docket (schema {found}, this one reads {SCHEMA_VERSION}); "
                             "upgrade docket", where=str(self.path))
        if found == SCHEMA_VERSION:
            return
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            found = int(cur.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0])  # another opener may have migrated it
            while found < SCHEMA_VERSION:
                _MIGRATIONS[found](cur)
                found += 1
                cur.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(found),))
            cur.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    # --- settings and principals -----------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise DocketError(f"{self.path}: opened for reading only; open it without read_only to write")

    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._conn.execute("SELECT key, value FROM meta")}

    def set_meta(self, values: dict[str, str]) -> None:
        """All the values in one transaction (a reader never sees `embedder` without `dim`)."""
        with self._transaction() as cur:
            cur.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(values.items()))

    def claim_meta(self, values: dict[str, str]) -> dict[str, str]:
        """Set the keys no one has set yet, in one transaction, and return the settings after it:
        of two first index runs starting at once, one fixes the embedder and the other learns it."""
        with self._transaction() as cur:
            cur.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", sorted(values.items()))
            return {r["key"]: r["value"] for r in cur.execute("SELECT key, value FROM meta")}

    def set_principal(self, name: str, groups: Sequence[str]) -> None:
        p = Principal(name, frozenset(groups))  # validates and strips user:/group: prefixes
        with self._lock:
            self._check_writable()
            self._conn.execute("INSERT OR REPLACE INTO principals VALUES (?, ?)", (p.name, json.dumps(sorted(p.groups))))

    def principal(self, name: str, extra_groups: Sequence[str] = ()) -> Principal:
        p = Principal(name, frozenset(extra_groups))
        row = self._conn.execute("SELECT groups FROM principals WHERE name = ?", (p.name,)).fetchone()
        stored = json.loads(row["groups"]) if row else []
        return Principal(name=p.name, groups=frozenset(stored) | p.groups)

    # --- ChunkLookup ----------------------------------------------------------------------
    def get(self, chunk_id: str) -> Chunk | None:
        return self.get_many([chunk_id]).get(chunk_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        ids = list(dict.fromkeys(ids))
        with self._lock:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                q = f"SELECT {_COLS} FROM {_FROM} WHERE c.id IN ({','.join('?' * len(part))})"
                for r in self._conn.execute(q, part):
                    out[r["id"]] = self._chunk(r)
        return out

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        q = f"SELECT {_COLS} FROM {_FROM} WHERE c.doc = ? AND c.version = ? ORDER BY c.position IS NULL, c.position, c.id"
        with self._lock:
            return [self._chunk(r) for r in self._conn.execute(q, (doc, version))]

    def versions(self, doc: str) -> list[VersionInfo]:
        return [v.info() for v in self.stored_versions(doc)]

    def stored_versions(self, doc: str) -> list[StoredVersion]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM versions WHERE doc = ? ORDER BY version", (doc,)).fetchall()
        return [
            StoredVersion(r["doc"], r["version"], r["status"], _date(r["date"]), _date(r["effective_to"]),
                          r["content_hash"], r["n_chunks"], r["source"] or "")
            for r in rows
        ]

    def stored_versions_of(self, docs: Sequence[str]) -> dict[str, list[StoredVersion]]:
        out: dict[str, list[StoredVersion]] = {d: [] for d in docs}
        docs = list(out)
        with self._lock:
            for start in range(0, len(docs), 500):
                part = docs[start : start + 500]
                q = f"SELECT * FROM versions WHERE doc IN ({','.join('?' * len(part))}) ORDER BY doc, version"
                for r in self._conn.execute(q, part):
                    out[r["doc"]].append(StoredVersion(r["doc"], r["version"], r["status"], _date(r["date"]),
                                                       _date(r["effective_to"]), r["content_hash"], r["n_chunks"],
                                                       r["source"] or ""))
        return out

    def versions_many(self, docs: Sequence[str]) -> dict[str, list[VersionInfo]]:
        """`versions` of each document, in one query per 500 documents."""
        return {d: [v.info() for v in vs] for d, vs in self.stored_versions_of(docs).items()}

    def readable_versions(self, docs: Sequence[str], principal: Principal | None) -> dict[str, set[int]]:
        """The versions of `docs` holding at least one chunk `principal` may read (anonymous: a
        public one), so a scoped view lists versions without reading their chunks."""
        out: dict[str, set[int]] = {}
        names = list(dict.fromkeys(docs))
        acl, acl_args = _where_sql(Filters(principal=principal))
        with self._lock:
            for start in range(0, len(names), 500):
                part = names[start : start + 500]
                q = (f"SELECT DISTINCT c.doc, c.version FROM chunks c WHERE c.doc IN ({','.join('?' * len(part))})"
                     f"{acl}")
                for doc, version in self._conn.execute(q, [*part, *acl_args]):
                    out.setdefault(doc, set()).add(int(version))
        return out

    def documents(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT doc FROM versions ORDER BY doc")]

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    @staticmethod
    def _chunk(r: sqlite3.Row) -> Chunk:
        blob = r["vector"]
        # struct gives the float32 values as Python floats at once (numpy's frombuffer + tolist, in one step)
        c = chunk_from_row(r, struct.unpack(f"={len(blob) // 4}f", blob))
        # the features record is parsed only if this content's features are not in memory; the
        # blob's float32 array is the vector the assembler reads (the same values as the tuple)
        default_cache().offer(c, r["features"], np.frombuffer(blob, dtype=np.float32))
        return c

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: every search and fetch inside sees the same state of the file
        (WAL readers keep their snapshot while writers commit). Re-entrant."""
        with self._lock:
            if self._snapshot_depth:
                self._snapshot_depth += 1
                try:
                    yield
                finally:
                    self._snapshot_depth -= 1
                return
            self._conn.execute("BEGIN")
            self._snapshot_depth = 1
            try:
                yield
            finally:
                self._snapshot_depth = 0
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")

    # --- writing ----------------------------------------------------------------------------
    def write_version(self, dv: DocumentVersion) -> WriteResult:
        if dv.vectors is None or dv.tokens is None:
            raise DocketError(f"{dv.source}: document {dv.doc!r} v{dv.version} has no vectors/token counts yet")
        contexts: list[str | None] = list(dv.contexts) if dv.contexts else [None] * len(dv.chunks)
        texts = [_search_text(c.title, c.section, c.text, ctx) for c, ctx in zip(dv.chunks, contexts, strict=True)]
        ids = _TermIds(self._terms)
        with self._transaction() as cur:
            existing = self.stored_versions(dv.doc)
            check_version(existing, dv)
            plan = plan_write(existing, dv)
            self._check_ids(cur, dv)
            self._delete_rows(cur, "doc = ? AND version = ?", (dv.doc, dv.version))
            cur.execute(
                "INSERT OR REPLACE INTO versions VALUES (?,?,?,?,?,?,?,?,?,?)",
                (dv.doc, dv.version, plan.status, _iso(dv.date), _iso(dv.effective_to), dv.title, dv.source,
                 dv.content_hash, len(dv.chunks), datetime.now(UTC).isoformat(timespec="seconds")),
            )
            self._insert_chunks(cur, dv, plan, ids.pack(cur, texts), contexts)
        ids.committed()
        return plan

    def _check_ids(self, cur: sqlite3.Cursor, dv: DocumentVersion) -> None:
        ids = [c.id for c in dv.chunks]
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            q = f"SELECT id, doc, version FROM chunks WHERE id IN ({','.join('?' * len(part))}) AND NOT (doc = ? AND version = ?)"
            clash = cur.execute(q, (*part, dv.doc, dv.version)).fetchone()
            if clash:
                raise InputError(
                    f"chunk id {clash['id']!r} already belongs to document {clash['doc']!r} v{clash['version']}",
                    where=dv.source, field="id",
                )

    def _insert_chunks(self, cur: sqlite3.Cursor, dv: DocumentVersion, plan: WriteResult,
                       terms: list[tuple[bytes, int]], contexts: list[str | None]) -> None:
        """Insert the chunk rows of one version (inside the caller's transaction), acl entries typed."""
        assert dv.vectors is not None and dv.tokens is not None
        vectors = np.ascontiguousarray(dv.vectors, dtype=np.float32)
        registry = _registry(cur) if any(c.acl for c in dv.chunks) else Registry()
        acls = [resolve_acl(c.acl, registry, plan.acl) for c in dv.chunks]
        cur.executemany(
            "INSERT INTO chunks(id, doc, version, position, status, date, effective_to, title, section, source_type,"
            " trust, acl, public, metadata, text, tokens, vector, terms, len, context)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(c.id, c.doc, c.version, c.position, plan.status, _iso(c.date), _iso(c.effective_to), c.title, c.section,
              c.source_type, c.trust, json.dumps(list(acl)) if acl is not None else None,
              1 if acl is None else 0, json.dumps(c.metadata, ensure_ascii=False) if c.metadata else None,
              c.text, int(n), vec.tobytes(), blob, length, ctx or None)
             for c, acl, vec, n, (blob, length), ctx in zip(dv.chunks, acls, vectors, dv.tokens, terms, contexts,
                                                            strict=True)],
        )
        cur.executemany("INSERT OR REPLACE INTO chunk_features SELECT rowid, ? FROM chunks WHERE id = ?",
                        [(stored_features(c, plan.status, self.records), c.id) for c in dv.chunks])
        if any(acls):
            rowid_of = {r[1]: r[0] for r in cur.execute("SELECT rowid, id FROM chunks WHERE doc = ? AND version = ?",
                                                       (dv.doc, dv.version))}
            cur.executemany("INSERT OR IGNORE INTO chunk_acl VALUES (?, ?)",
                            [(e, rowid_of[c.id]) for c, acl in zip(dv.chunks, acls) if acl for e in acl])

    def _delete_rows(self, cur: sqlite3.Cursor, where: str, args: tuple[Any, ...]) -> int:
        rowids = [r[0] for r in cur.execute(f"SELECT rowid FROM chunks WHERE {where}", args)]
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            marks = ",".join("?" * len(part))
            cur.execute(f"DELETE FROM chunk_acl WHERE chunk IN ({marks})", part)
            cur.execute(f"DELETE FROM chunk_features WHERE chunk IN ({marks})", part)
            cur.execute(f"DELETE FROM chunks WHERE rowid IN ({marks})", part)
        return len(rowids)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """One write: `BEGIN IMMEDIATE`, the caller's statements, the generation bump (readers
        reload their index when it changes), COMMIT; any error rolls all of it back."""
        with self._lock:
            self._check_writable()
            if self._snapshot_depth:
                raise DocketError("a store cannot be written inside its own snapshot() block")
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")  # waits up to the connection's 30 s for another writer
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                raise InputError("another writer held the store for 30 s; nothing of this write was stored, "
                                 "run it again", where=str(self.path)) from None
            try:
                yield cur
                cur.execute("DELETE FROM chunk_log WHERE seq <= (SELECT max(seq) FROM chunk_log) - ?", (_LOG_KEEP,))
                cur.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
                if self._tokens:
                    cur.execute("INSERT OR REPLACE INTO write_tokens SELECT CAST(value AS INTEGER), ? FROM meta "
                                "WHERE key = 'generation'", (uuid.uuid4().hex,))
                    cur.execute("DELETE FROM write_tokens WHERE generation <= (SELECT CAST(value AS INTEGER) FROM meta "
                                "WHERE key = 'generation') - ?", (_LOG_KEEP,))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    def delete(self, doc: str, version: int | None = None) -> int:
        where, args = ("doc = ?", (doc,)) if version is None else ("doc = ? AND version = ?", (doc, version))
        with self._transaction() as cur:
            n = self._delete_rows(cur, where, args)
            cur.execute(f"DELETE FROM versions WHERE {where}", args)
        return n

    # --- search -----------------------------------------------------------------------------
    def generation(self) -> str:
        """The write counter: it changes whenever any process writes to the store."""
        return self._generation()

    def _generation(self) -> str:
        return str(self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def _search_index(self) -> _Index:
        """The index of the current generation (of the snapshot, inside `snapshot()`): the warm
        one when nothing changed, the warm one with the logged changes applied after a write
        (milliseconds for a document), a full load otherwise."""
        with self._lock, self.snapshot():
            gen = self._generation()
            m = self._index
            if m is not None and m.generation == gen:
                return m
            fresh = self._refreshed_index(m, gen) if m is not None else self._snapshot_index(gen)
            self._index = fresh if fresh is not None else self._load_index(gen, save=True)
            return self._index

    def _log_end(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM chunk_log").fetchone()
        return int(row[0] or 0)

    def _index_rows(self, where: str = "", args: Sequence[Any] = ()) -> list[Any]:
        return self._conn.execute(f"SELECT {_INDEX_COLS} FROM chunks {where} ORDER BY rowid", args).fetchall()

    def _load_index(self, gen: str, save: bool = False) -> _Index:
        seq = self._log_end()
        rows = self._index_rows()
        acl_rows = self._conn.execute("SELECT principal, chunk FROM chunk_acl").fetchall()
        dim = int(self.meta().get("dim", "0") or 0)
        index = _Index.load(_Rows.of(rows, dim), [(r[0], r[1]) for r in acl_rows], gen, seq)
        token = self._token(gen) if save and self._store_id and self._tokens else None
        if token is not None and _snapshots_wanted(len(index.ids)) and self.path.is_file():
            try:
                fields, arrays, strings = index.snapshot_parts()
                fields = {"layout": _SNAPSHOT_LAYOUT, "store_id": self._store_id, "token": token, **fields,
                          **self._fingerprint(), "access_digest": _access_digest(arrays, strings)}
                _snapshot_file.write(self.snapshot_path, fields, arrays, strings,
                                     mode=stat.S_IMODE(self.path.stat().st_mode))  # readable by who reads the store
            except (OSError, ValueError):
                pass  # a cache: a read-only directory or a full disk costs the next process a full load, nothing else
        return index

    @property
    def snapshot_path(self) -> Path:
        """Where the search index is kept between processes (see `_snapshot_index`)."""
        return self.path.with_name(self.path.name + ".index")

    def _snapshot_index(self, gen: str) -> _Index | None:
        """The index from the snapshot file a process wrote after its full load, brought up to
        date from the change log, or None (no usable file, or it is not an earlier state of this
        store: a full load follows, which writes a new one). A new process then maps the vector
        matrix and postings instead of reading every row (seconds at 100k, most of a minute at 1M)."""
        if not _snapshots_wanted(None) or not self._store_id or not self._tokens:
            return None
        got = _snapshot_file.read(self.snapshot_path)
        if got is None:
            return None
        fields, arrays, strings = got
        try:
            if (fields.get("layout") != _SNAPSHOT_LAYOUT or fields.get("store_id") != self._store_id
                    or int(fields["generation"]) > int(gen) or fields.get("token") is None
                    or self._token(str(fields["generation"])) != fields["token"]):
                return None  # another store, or not an earlier state of this one
            m = _Index.from_snapshot(fields, arrays, strings)
            counts = _fingerprint_of(m)
            if (counts != {k: int(fields[k]) for k in counts}
                    or _access_digest(arrays, strings) != fields.get("access_digest")):
                return None  # the arrays do not hold what the file says they hold
        except (KeyError, ValueError, TypeError):
            return None
        if m.seq > self._log_end():
            return None  # written for a later state than this file holds (e.g. a restored backup)
        fresh = self._refreshed_index(m, gen)
        if fresh is None:
            return None
        if _fingerprint_of(fresh) != self._fingerprint():
            return None  # the rows or their ACL entries are not what the file says
        return fresh

    def _token(self, gen: str) -> str | None:
        """The write token of generation `gen` (None: written before tokens, or pruned)."""
        row = self._conn.execute("SELECT token FROM write_tokens WHERE generation = ?", (int(gen),)).fetchone()
        return str(row[0]) if row is not None else None

    def _fingerprint(self) -> dict[str, int]:
        """Counts the index must agree with (read in the caller's snapshot): rows, highest rowid,
        ACL entries."""
        # count(*) reads the smallest index and max(rowid) one page; a sum over a column would read
        # every row (most of the cold start the snapshot saves, at 1M chunks)
        rows, top = self._conn.execute("SELECT count(*), max(rowid) FROM chunks").fetchone()
        acl = self._conn.execute("SELECT count(*) FROM chunk_acl").fetchone()[0]
        return {"check_rows": int(rows), "check_top": int(top or 0), "check_acl": int(acl)}

    def _refreshed_index(self, m: _Index, gen: str) -> _Index | None:
        """`m` with the changes logged since it was built, or None when a full load is due (the
        log was pruned past it, too much changed, a first load was empty)."""
        # two queries: SQLite answers a lone min() or max() from the key, both at once by a scan
        lo = self._conn.execute("SELECT min(seq) FROM chunk_log").fetchone()[0]
        hi = self._conn.execute("SELECT max(seq) FROM chunk_log").fetchone()[0]
        if hi is None:  # an empty log: nothing ever changed, unless it was emptied behind this index
            return replace(m, generation=gen) if m.seq == 0 else None
        if int(hi) == m.seq:  # no chunk changed (settings, principals or versions only)
            return replace(m, generation=gen)
        if int(lo) > m.seq + 1 or m.base_rows == 0:
            return None
        changed = sorted({int(r[0]) for r in self._conn.execute("SELECT chunk FROM chunk_log WHERE seq > ?", (m.seq,))})
        if m.worn(len(changed)):
            return None
        rows: list[Any] = []
        acl_rows: list[tuple[str, int]] = []
        for start in range(0, len(changed), 500):
            part = changed[start : start + 500]
            marks = ",".join("?" * len(part))
            rows += self._index_rows(f"WHERE rowid IN ({marks})", part)
            acl_rows += [(r[0], r[1]) for r in
                         self._conn.execute(f"SELECT principal, chunk FROM chunk_acl WHERE chunk IN ({marks})", part)]
        got = _Rows.of(rows, m.mat.shape[1])
        if got.mat.shape[1] != m.mat.shape[1]:
            return None
        return m.refreshed(np.asarray(changed, dtype=np.int64), got, acl_rows, gen, int(hi))

    def search_dense(self, qvec: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        m = self._search_index()
        if not m.ids or k <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if q.shape[0] != m.mat.shape[1]:
            raise InputError(f"query vector has {q.shape[0]} dimensions, the store holds {m.mat.shape[1]}", field="vector")
        mask = m.mask(filters, m.readable(filters))
        with _DENSE_BLAS():
            if mask is not None:
                idx = np.flatnonzero(mask)
                if idx.size == 0:
                    return []
                scores = m.mat[idx] @ q if idx.size < len(m.ids) // 4 else (m.mat @ q)[idx]
            else:
                idx = None
                scores = m.mat @ q
            rows_of = idx if idx is not None else np.arange(scores.shape[0])
            top, exact = _dense_top(scores, rows_of, m.mat, q, m.rowids, k)
        return [(m.ids[int(r)], float(x)) for r, x in zip(rows_of[top], exact)]

    def search_bm25(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        with self._lock, self.snapshot():
            m = self._search_index()
            marks = ",".join("?" * len(terms))
            term_ids = [r[0] for r in self._conn.execute(f"SELECT id FROM terms WHERE term IN ({marks})", terms)]
        return m.bm25(sorted(term_ids), k, filters)

    # --- export -----------------------------------------------------------------------------
    def export(self) -> Iterator[DocumentVersion]:
        for (doc,) in self._conn.execute("SELECT DISTINCT doc FROM versions ORDER BY doc").fetchall():
            for sv in self.stored_versions(doc):
                q = f"SELECT {_COLS}, c.context FROM {_FROM} WHERE c.doc = ? AND c.version = ? ORDER BY c.position IS NULL, c.position, c.id"
                rows = self._conn.execute(q, (doc, sv.version)).fetchall()
                chunks = [chunk_from_row(dict(r), None) for r in rows]
                vecs = np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows]) if rows else None
                contexts = [r["context"] or "" for r in rows] if any(r["context"] for r in rows) else None
                yield DocumentVersion(
                    doc=doc, version=sv.version, status=sv.status, date=sv.date, effective_to=sv.effective_to,
                    title=chunks[0].title if chunks else "", source=f"{self.location} (export)", chunks=chunks,
                    supersedes=False, vectors=vecs, tokens=[int(r["tokens"]) for r in rows], contexts=contexts,
                )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _where_sql(f: Filters) -> tuple[str, list[Any]]:
    """SQL conditions (each starting with AND) on the chunks table `c`, ACL included."""
    parts: list[str] = []
    args: list[Any] = []
    for col, values in (("c.doc", f.docs), ("c.status", f.statuses), ("c.source_type", f.source_types)):
        if values:
            parts.append(f"{col} IN ({','.join('?' * len(values))})")
            args.extend(values)
    if f.date_from is not None:
        parts.append("c.date IS NOT NULL AND c.date >= ?")
        args.append(f.date_from.isoformat())
    if f.date_to is not None:
        parts.append("c.date IS NOT NULL AND c.date <= ?")
        args.append(f.date_to.isoformat())
    names = f.acl_names
    if names is not None:
        if names:
            marks = ",".join("?" * len(names))
            parts.append(f"(c.public = 1 OR EXISTS (SELECT 1 FROM chunk_acl a WHERE a.chunk = c.rowid AND a.principal IN ({marks})))")
            args.extend(names)
        else:
            parts.append("c.public = 1")
    return "".join(f" AND {p}" for p in parts), args


def _iso(d: Date | None) -> str | None:
    return d.isoformat() if d is not None else None


def _date(s: str | None) -> Date | None:
    return Date.fromisoformat(s) if s else None


