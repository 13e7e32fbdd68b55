"""The embedded default store: one SQLite file, no server.

WAL journal; each document version is written inside one `BEGIN IMMEDIATE` transaction, so a
process killed mid-index leaves every document either in its old or its new state. BM25 is
SQLite's FTS5 `bm25()`. The stdlib `sqlite3` cannot load extensions (no sqlite-vec), so dense
search is exact cosine in numpy over a float32 matrix loaded lazily from the vector BLOBs and
cached until the store's write generation changes (a counter bumped by every write transaction,
so writes by another process are seen too). Metadata and ACL filters are numpy masks applied
before ranking: a filtered-out chunk never gets a rank.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from datetime import date as Date
from pathlib import Path
from typing import Any

import numpy as np

from docket.errors import DocketError, InputError
from docket.model import Chunk
from docket.store.base import VersionInfo
from docket.store.protocol import (
    DocumentVersion,
    Filters,
    Principal,
    StoredVersion,
    WriteResult,
    check_version,
    chunk_from_row,
    fts_terms,
    plan_write,
)

SCHEMA_VERSION = "1"
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
  tokens INTEGER NOT NULL, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_docver ON chunks(doc, version, position);
CREATE TABLE IF NOT EXISTS chunk_acl(principal TEXT NOT NULL, chunk INTEGER NOT NULL,
  PRIMARY KEY (principal, chunk)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_acl_chunk ON chunk_acl(chunk);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(title, section, text,
  tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS principals(name TEXT PRIMARY KEY, groups TEXT NOT NULL);
"""
_COLS = "c.id, c.doc, c.version, c.position, c.status, c.date, c.effective_to, c.title, c.section, " \
    "c.source_type, c.trust, c.acl, c.metadata, c.text, c.tokens, c.vector"


@dataclass
class _Matrix:
    """The in-memory side of dense search, rebuilt when the write generation changes."""

    generation: str
    ids: list[str]
    rowids: np.ndarray
    mat: np.ndarray
    public: np.ndarray
    docs: np.ndarray
    doc_codes: dict[str, int]
    statuses: np.ndarray
    status_codes: dict[str, int]
    source_types: np.ndarray
    source_codes: dict[str, int]
    dates: np.ndarray  # proleptic ordinal, 0 = undated
    acl: dict[str, np.ndarray]  # principal -> row indexes it may read

    def mask(self, f: Filters) -> np.ndarray | None:
        m: np.ndarray | None = None

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
        names = f.acl_names
        if names is not None:
            readable = self.public.copy()
            for name in names:
                idx = self.acl.get(name)
                if idx is not None:
                    readable[idx] = True
            m = both(readable)
        return m


def _codes(values: list[str | None]) -> tuple[np.ndarray, dict[str, int]]:
    table: dict[str, int] = {}
    out = np.empty(len(values), dtype=np.int32)
    for i, v in enumerate(values):
        out[i] = table.setdefault(v, len(table) + 1) if v is not None else 0
    return out, table


class SQLiteStore:
    """A docket store in one SQLite file (see the module docstring for the guarantees)."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        if not create and not self.path.exists():
            raise InputError("no store here; build one with `docket index PATH --db FILE`", where=str(self.path))
        try:
            self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
        except sqlite3.DatabaseError as e:
            raise InputError(f"is not a docket SQLite store ({e})", where=str(self.path)) from None
        self._lock = threading.RLock()
        self._matrix: _Matrix | None = None

    # --- settings and principals -----------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._conn.execute("SELECT key, value FROM meta")}

    def set_meta(self, values: dict[str, str]) -> None:
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))

    def set_principal(self, name: str, groups: Sequence[str]) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO principals VALUES (?, ?)", (name, json.dumps(sorted(set(groups)))))

    def principal(self, name: str, extra_groups: Sequence[str] = ()) -> Principal:
        row = self._conn.execute("SELECT groups FROM principals WHERE name = ?", (name,)).fetchone()
        stored = json.loads(row["groups"]) if row else []
        return Principal(name=name, groups=frozenset(stored) | frozenset(extra_groups))

    # --- ChunkLookup ----------------------------------------------------------------------
    def get(self, chunk_id: str) -> Chunk | None:
        return self.get_many([chunk_id]).get(chunk_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            q = f"SELECT {_COLS} FROM chunks c WHERE c.id IN ({','.join('?' * len(part))})"
            for r in self._conn.execute(q, part):
                out[r["id"]] = self._chunk(r)
        return out

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        q = f"SELECT {_COLS} FROM chunks c WHERE c.doc = ? AND c.version = ? ORDER BY c.position IS NULL, c.position, c.id"
        return [self._chunk(r) for r in self._conn.execute(q, (doc, version))]

    def versions(self, doc: str) -> list[VersionInfo]:
        return [v.info() for v in self.stored_versions(doc)]

    def stored_versions(self, doc: str) -> list[StoredVersion]:
        rows = self._conn.execute("SELECT * FROM versions WHERE doc = ? ORDER BY version", (doc,)).fetchall()
        return [
            StoredVersion(r["doc"], r["version"], r["status"], _date(r["date"]), _date(r["effective_to"]),
                          r["content_hash"], r["n_chunks"], r["source"] or "")
            for r in rows
        ]

    def documents(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT doc FROM versions ORDER BY doc")]

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    @staticmethod
    def _chunk(r: sqlite3.Row) -> Chunk:
        return chunk_from_row(dict(r), np.frombuffer(r["vector"], dtype=np.float32))

    # --- writing ----------------------------------------------------------------------------
    def write_version(self, dv: DocumentVersion) -> WriteResult:
        if dv.vectors is None or dv.tokens is None:
            raise DocketError(f"{dv.source}: document {dv.doc!r} v{dv.version} has no vectors/token counts yet")
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
            self._insert_chunks(cur, dv, plan.status)
            if plan.superseded:
                marks = ",".join("?" * len(plan.superseded))
                args = ("superseded", dv.doc, *plan.superseded)
                cur.execute(f"UPDATE versions SET status = ? WHERE doc = ? AND version IN ({marks})", args)
                cur.execute(f"UPDATE chunks SET status = ? WHERE doc = ? AND version IN ({marks})", args)
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

    def _insert_chunks(self, cur: sqlite3.Cursor, dv: DocumentVersion, status: str) -> None:
        """Insert the chunk rows of one version (inside the caller's transaction)."""
        assert dv.vectors is not None and dv.tokens is not None
        vectors = np.ascontiguousarray(dv.vectors, dtype=np.float32)
        for c, vec, n in zip(dv.chunks, vectors, dv.tokens, strict=True):
            cur.execute(
                "INSERT INTO chunks(id, doc, version, position, status, date, effective_to, title, section, source_type,"
                " trust, acl, public, metadata, text, tokens, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (c.id, c.doc, c.version, c.position, status, _iso(c.date), _iso(c.effective_to), c.title, c.section,
                 c.source_type, c.trust, json.dumps(list(c.acl)) if c.acl is not None else None,
                 1 if c.acl is None else 0, json.dumps(c.metadata, ensure_ascii=False) if c.metadata else None,
                 c.text, int(n), vec.tobytes()),
            )
            rowid = cur.lastrowid
            cur.execute("INSERT INTO chunks_fts(rowid, title, section, text) VALUES (?,?,?,?)", (rowid, c.title, c.section, c.text))
            if c.acl:
                cur.executemany("INSERT OR IGNORE INTO chunk_acl VALUES (?, ?)", [(p, rowid) for p in c.acl])

    def _delete_rows(self, cur: sqlite3.Cursor, where: str, args: tuple[Any, ...]) -> int:
        rowids = [r[0] for r in cur.execute(f"SELECT rowid FROM chunks WHERE {where}", args)]
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            marks = ",".join("?" * len(part))
            cur.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", part)
            cur.execute(f"DELETE FROM chunk_acl WHERE chunk IN ({marks})", part)
            cur.execute(f"DELETE FROM chunks WHERE rowid IN ({marks})", part)
        return len(rowids)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """One write: `BEGIN IMMEDIATE`, the caller's statements, the generation bump (readers
        reload their vector matrix when it changes), COMMIT; any error rolls all of it back."""
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
                cur.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
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
    def _generation(self) -> str:
        return str(self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def _load_matrix(self) -> _Matrix:
        gen = self._generation()
        if self._matrix is not None and self._matrix.generation == gen:
            return self._matrix
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN")  # one consistent snapshot of chunks and acl rows
            try:
                gen = self._generation()
                rows = cur.execute(
                    "SELECT rowid, id, doc, status, source_type, date, public, vector FROM chunks ORDER BY rowid"
                ).fetchall()
                acl_rows = cur.execute("SELECT principal, chunk FROM chunk_acl").fetchall()
            finally:
                cur.execute("COMMIT")
        dim = int(self.meta().get("dim", "0") or 0)
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        mat = np.frombuffer(b"".join(r[7] for r in rows), dtype=np.float32).reshape(len(rows), -1) if rows \
            else np.zeros((0, dim), dtype=np.float32)
        index = {int(rid): i for i, rid in enumerate(rowids)}
        by_principal: dict[str, list[int]] = {}
        for p, chunk in acl_rows:
            if chunk in index:
                by_principal.setdefault(p, []).append(index[chunk])
        docs, doc_codes = _codes([r[2] for r in rows])
        statuses, status_codes = _codes([r[3] for r in rows])
        sources, source_codes = _codes([r[4] for r in rows])
        self._matrix = _Matrix(
            generation=gen,
            ids=[r[1] for r in rows],
            rowids=rowids,
            mat=mat,
            public=np.fromiter((bool(r[6]) for r in rows), dtype=bool, count=len(rows)),
            docs=docs, doc_codes=doc_codes,
            statuses=statuses, status_codes=status_codes,
            source_types=sources, source_codes=source_codes,
            dates=np.fromiter((Date.fromisoformat(r[5]).toordinal() if r[5] else 0 for r in rows), dtype=np.int64, count=len(rows)),
            acl={p: np.asarray(ix, dtype=np.int64) for p, ix in by_principal.items()},
        )
        return self._matrix

    def search_dense(self, qvec: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        m = self._load_matrix()
        if not m.ids or k <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if q.shape[0] != m.mat.shape[1]:
            raise InputError(f"query vector has {q.shape[0]} dimensions, the store holds {m.mat.shape[1]}", field="vector")
        mask = m.mask(filters)
        if mask is not None:
            idx = np.flatnonzero(mask)
            if idx.size == 0:
                return []
            scores = m.mat[idx] @ q if idx.size < len(m.ids) // 4 else (m.mat @ q)[idx]
        else:
            idx = None
            scores = m.mat @ q
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
        top = top[np.lexsort((top, -scores[top]))]
        rows = idx[top] if idx is not None else top
        return [(m.ids[int(r)], float(scores[int(t)])) for r, t in zip(rows, top)]

    def search_bm25(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        terms = fts_terms(query)
        if not terms or k <= 0:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        mask = self._load_matrix().mask(filters)
        if mask is None or bool(mask.all()):
            # every chunk passes the filters (e.g. a store without acls): rank in FTS5 alone, which
            # is twice as fast as ranking through the join; the result is the same
            q = ("SELECT c.id, f.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? "
                 "ORDER BY rank LIMIT ?) f JOIN chunks c ON c.rowid = f.rowid ORDER BY f.rank, c.id")
            return [(r[0], -float(r[1])) for r in self._conn.execute(q, (match, k))]
        where, args = _where_sql(filters)
        q = (
            "SELECT c.id, bm25(chunks_fts) AS s FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? {where} ORDER BY s, c.id LIMIT ?"
        )
        return [(r[0], -float(r[1])) for r in self._conn.execute(q, (match, *args, k))]

    # --- export -----------------------------------------------------------------------------
    def export(self) -> Iterator[DocumentVersion]:
        for (doc,) in self._conn.execute("SELECT DISTINCT doc FROM versions ORDER BY doc").fetchall():
            for sv in self.stored_versions(doc):
                q = f"SELECT {_COLS} FROM chunks c WHERE c.doc = ? AND c.version = ? ORDER BY c.position IS NULL, c.position, c.id"
                rows = self._conn.execute(q, (doc, sv.version)).fetchall()
                chunks = [chunk_from_row(dict(r), None) for r in rows]
                vecs = np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows]) if rows else None
                yield DocumentVersion(
                    doc=doc, version=sv.version, status=sv.status, date=sv.date, effective_to=sv.effective_to,
                    title=chunks[0].title if chunks else "", source=f"{self.location} (export)", chunks=chunks,
                    supersedes=False, vectors=vecs, tokens=[int(r["tokens"]) for r in rows],
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


