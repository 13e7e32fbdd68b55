"""Reading a SQLite store: chunks by id and by document version, versions, principals, export.

Every read that must agree with a search runs inside `snapshot()`, one WAL read transaction.
"""

from __future__ import annotations

import json
import sqlite3
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date as Date
from typing import Any

import numpy as np

from docket.model import Chunk
from docket.store.access import Principal
from docket.store.base import VersionInfo
from docket.store.protocol import DocumentVersion, Filters, StoredVersion, chunk_from_row
from docket.store.sqlite_schema import _COLS, _FROM, _Opened

#: how many fetched rows an open store keeps (`_Fetched`): a few asks' worth of candidates
FETCHED_ROWS = 4096


class _Fetched:
    """The rows `get_many` read at one write generation, by chunk id, as (chunk, feature record,
    float32 vector): a repeated candidate is handed out again (the same frozen `Chunk`) without
    its SQL row, its 384 floats unpacked again or its record offered from a new object. Any write
    changes the generation and empties it. Bounded: two halves of `capacity` / 2, the older one
    dropped when the newer fills (a row met again moves to the newer).

    A row read without its feature record (an imported store before `docket features`) is kept
    only while the records can be known unchanged: `fill_records` writes records without a new
    generation (no chunk changes), so such rows are dropped whenever the records' `stamp` moves
    (see `_Reads._records_stamp`), and the next read offers the filled records."""

    __slots__ = ("bare", "generation", "half", "old", "stamp", "young")

    def __init__(self, capacity: int = FETCHED_ROWS) -> None:
        self.generation = ""
        self.stamp: object = None
        self.bare = False  # whether a row without its record may be kept
        self.half = max(1, capacity // 2)
        self.young: dict[str, tuple[Chunk, Any, np.ndarray]] = {}
        self.old: dict[str, tuple[Chunk, Any, np.ndarray]] = {}

    def at(self, generation: str, stamp: object = None) -> _Fetched:
        """These rows if they were read at `generation`, else emptied for it; the rows without a
        record only if they were read at the records' `stamp` too (None: keep no such row)."""
        if generation != self.generation:
            self.young, self.old, self.generation, self.bare = {}, {}, generation, False
        elif self.bare and (stamp is None or stamp != self.stamp):
            self.young = {cid: row for cid, row in self.young.items() if row[1] is not None}
            self.old = {cid: row for cid, row in self.old.items() if row[1] is not None}
            self.bare = False
        self.stamp = stamp
        return self

    def get(self, chunk_id: str) -> tuple[Chunk, Any, np.ndarray] | None:
        got = self.young.get(chunk_id)
        if got is None:
            got = self.old.get(chunk_id)
            if got is not None:
                self.put(chunk_id, got)
        return got

    def put(self, chunk_id: str, row: tuple[Chunk, Any, np.ndarray]) -> None:
        if row[1] is None:
            if self.stamp is None:
                return
            self.bare = True
        self.young[chunk_id] = row
        if len(self.young) >= self.half:
            self.old, self.young = self.young, {}

    def __len__(self) -> int:
        return len(self.young) + len(self.old)


#: how many documents' readable versions an open store keeps (`_Listed`), per principal's acl
LISTED_DOCS = 4096


class _Listed:
    """The readable versions `readable_versions_of` listed at one write generation, by (the
    access condition, document): Move 1 asks for the versions of the same candidates' documents
    on every `ask`. Any write changes the generation and empties it (versions and acls are only
    written in write transactions, which move it). Bounded: emptied when it holds `capacity`."""

    __slots__ = ("capacity", "generation", "lists")

    def __init__(self, capacity: int = LISTED_DOCS) -> None:
        self.capacity = capacity
        self.generation = ""
        self.lists: dict[tuple[object, str], tuple[VersionInfo, ...]] = {}

    def at(self, generation: str) -> _Listed:
        if generation != self.generation:
            self.lists, self.generation = {}, generation
        return self

    def put(self, key: tuple[object, str], infos: list[VersionInfo]) -> None:
        if len(self.lists) >= self.capacity:
            self.lists = {}
        self.lists[key] = tuple(infos)


class _Reads(_Opened):
    """The read side of `SQLiteStore`."""

    _fetched: _Fetched | None = None
    _listed: _Listed | None = None

    def _generation(self) -> str:
        return str(self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def principal(self, name: str, extra_groups: Sequence[str] = ()) -> Principal:
        p = Principal(name, frozenset(extra_groups))
        row = self._conn.execute("SELECT groups FROM principals WHERE name = ?", (p.name,)).fetchone()
        stored = json.loads(row["groups"]) if row else []
        return Principal(name=p.name, groups=frozenset(stored) | p.groups)

    # --- ChunkLookup ----------------------------------------------------------------------
    def get(self, chunk_id: str) -> Chunk | None:
        return self.get_many([chunk_id]).get(chunk_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The chunks of `ids` that exist, by id. Rows read before at the store's
        current write generation come from `_Fetched` (checked inside one read transaction, so
        the generation and the rows are of one state); inside a write transaction of this
        connection nothing is kept or reused (its rows may still roll back)."""
        ids = list(dict.fromkeys(ids))
        with self._lock:
            if self._conn.in_transaction and not self._snapshot_depth:
                return self._read_chunks(ids, None)
            with self.snapshot():
                if self._fetched is None:
                    self._fetched = _Fetched(FETCHED_ROWS)
                return self._read_chunks(ids, self._fetched.at(self._generation(), self._records_stamp()))

    def _records_stamp(self) -> tuple[int, int]:
        """What moves when feature records may have been written without a new generation:
        another connection's commit (`PRAGMA data_version`, read inside the snapshot) or any
        change made through this one (`total_changes`, rolled back or not)."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0]), self._conn.total_changes

    def _read_chunks(self, ids: list[str], kept: _Fetched | None) -> dict[str, Chunk]:
        """`get_many` of distinct `ids`: the rows in `kept` re-offered to the feature cache (it
        may have let them go), the others read (500 a query) and kept."""
        found: dict[str, Chunk] = {}
        missing = ids
        if kept is not None:
            missing = []
            offer = self.features.offer
            for cid in ids:
                row = kept.get(cid)
                if row is None:
                    missing.append(cid)
                else:
                    found[cid] = row[0]
                    offer(*row)
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            q = f"SELECT {_COLS} FROM {_FROM} WHERE c.id IN ({','.join('?' * len(part))})"
            for r in self._conn.execute(q, part):
                c, record, vector = self._row_parts(r)
                self.features.offer(c, record, vector)
                found[c.id] = c
                if kept is not None:
                    kept.put(c.id, (c, record, vector))  # without its record: while the records' stamp holds
        return found  # keyed by each row's own id, as SQLite matched it

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
        return self._version_infos(docs, "")

    def readable_versions_of(self, docs: Sequence[str], principal: Principal | None) -> dict[str, list[VersionInfo]]:
        """`versions_many` keeping only the versions that hold a chunk `principal` may read
        (anonymous: a public one): what a scoped view lists, in one query instead of two."""
        acl, acl_args = _where_sql(Filters(principal=principal))
        where = f" AND EXISTS (SELECT 1 FROM chunks c WHERE c.doc = v.doc AND c.version = v.version{acl})"
        with self._lock:
            if self._conn.in_transaction and not self._snapshot_depth:  # inside a write: nothing kept
                return self._version_infos(docs, where, acl_args)
            with self.snapshot():  # the generation and the lists of one state
                if self._listed is None:
                    self._listed = _Listed(LISTED_DOCS)
                kept = self._listed.at(self._generation())
                cond = (acl, tuple(acl_args))
                out: dict[str, list[VersionInfo]] = {}
                missing = []
                for d in dict.fromkeys(docs):
                    got = kept.lists.get((cond, d))
                    if got is None:
                        missing.append(d)
                    else:
                        out[d] = list(got)
                if not missing:
                    return out
                for d, infos in self._version_infos(missing, where, acl_args).items():
                    kept.put((cond, d), infos)
                    out[d] = infos
        return {d: out[d] for d in dict.fromkeys(docs)}

    def _version_infos(self, docs: Sequence[str], where: str, args: Sequence[Any] = ()) -> dict[str, list[VersionInfo]]:
        """The versions of `docs` (lowest first) passing `where`, built straight from plain rows:
        Move 1 reads them on every `ask`, so no `StoredVersion` in between and no by-name row access."""
        out: dict[str, list[VersionInfo]] = {d: [] for d in docs}
        names = list(out)
        cur = self._conn.cursor()
        cur.row_factory = None
        with self._lock:
            for start in range(0, len(names), 500):
                part = names[start : start + 500]
                q = (f"SELECT v.doc, v.version, v.status, v.date, v.effective_to FROM versions v "
                     f"WHERE v.doc IN ({','.join('?' * len(part))}){where} ORDER BY v.doc, v.version")
                for doc, version, status, day, until in cur.execute(q, [*part, *args]):
                    out[doc].append(VersionInfo(doc, version, status, _date(day), _date(until)))
        return out

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

    def _chunk(self, r: sqlite3.Row) -> Chunk:
        c, record, vector = self._row_parts(r)
        # the features record is parsed only if this content's features are not in memory; the
        # blob's float32 array is the vector the assembler reads (the same values as the tuple)
        self.features.offer(c, record, vector)
        return c

    @staticmethod
    def _row_parts(r: sqlite3.Row) -> tuple[Chunk, Any, np.ndarray]:
        """A row's chunk, its feature record and its vector as float32 (what `features.offer` takes)."""
        blob = r["vector"]
        # struct gives the float32 values as Python floats at once (numpy's frombuffer + tolist, in one step)
        c = chunk_from_row(r, struct.unpack(f"={len(blob) // 4}f", blob))
        return c, r["features"], np.frombuffer(blob, dtype=np.float32)

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


