"""PostgreSQL store, reads: chunks, versions, snapshots, dense and keyword search, export
(`_PgRead`, over `_PgSchema`), and the SQL filters search and the benchmarks share."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from docket.model import Chunk
from docket.store import pg_keywords
from docket.store.access import Principal
from docket.store.base import VersionInfo
from docket.store.postgres_schema import (
    _COLS,
    _FROM,
    _ORDER,
    _PgSchema,
    _redact,
)
from docket.store.protocol import (
    DocumentVersion,
    Filters,
    StoredVersion,
    chunk_from_row,
    fts_terms,
)


class _PgRead(_PgSchema):
    """Reading a PostgreSQL store: fetches, versions, search, export."""

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One REPEATABLE READ transaction: every search and fetch inside sees one state of the
        database. Re-entrant."""
        with self._lock:
            if self._snapshot_depth:
                self._snapshot_depth += 1
                try:
                    yield
                finally:
                    self._snapshot_depth -= 1
                return
            with self._conn.transaction():
                self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                self._snapshot_depth = 1
                try:
                    yield
                finally:
                    self._snapshot_depth = 0

    # --- ChunkLookup ----------------------------------------------------------------------
    def get(self, chunk_id: str) -> Chunk | None:
        return self.get_many([chunk_id]).get(chunk_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Chunk]:
        if not self._chunks_ready() or not ids:
            return {}
        with self._lock:
            # binary: pgvector's binary loader reads a vector with one frombuffer; the text form is
            # parsed float by float (50 rows: ~8-12 ms text, ~3-5 ms binary; the same values)
            rows = self._conn.execute(f"SELECT {_COLS} FROM {_FROM} WHERE c.id = ANY(%s)", (list(ids),),
                                      binary=True).fetchall()
        offer = self.features.offer
        return {r["id"]: _chunk(r, offer) for r in rows}

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        if not self._chunks_ready():
            return []
        q = f"SELECT {_COLS} FROM {_FROM} WHERE c.doc = %s AND c.version = %s {_ORDER}"
        with self._lock:
            rows = self._conn.execute(q, (doc, version), binary=True).fetchall()  # binary: see get_many
        offer = self.features.offer
        return [_chunk(r, offer) for r in rows]

    def versions(self, doc: str) -> list[VersionInfo]:
        return [v.info() for v in self.stored_versions(doc)]

    def stored_versions(self, doc: str) -> list[StoredVersion]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM versions WHERE doc = %s ORDER BY version", (doc,)).fetchall()
        return [_stored(r) for r in rows]

    def stored_versions_of(self, docs: Sequence[str]) -> dict[str, list[StoredVersion]]:
        out: dict[str, list[StoredVersion]] = {d: [] for d in docs}
        with self._lock:
            rows = self._conn.execute("SELECT * FROM versions WHERE doc = ANY(%s) ORDER BY doc, version",
                                      (list(out),)).fetchall()
        for r in rows:
            out[r["doc"]].append(_stored(r))
        return out

    def versions_many(self, docs: Sequence[str]) -> dict[str, list[VersionInfo]]:
        """`versions` of each document, in one query."""
        return {d: [v.info() for v in vs] for d, vs in self.stored_versions_of(docs).items()}

    def readable_versions(self, docs: Sequence[str], principal: Principal | None) -> dict[str, set[int]]:
        """The versions of `docs` holding at least one chunk `principal` may read (anonymous: a
        public one), so a scoped view lists versions without reading their chunks."""
        out: dict[str, set[int]] = {}
        if not self._chunks_ready() or not docs:
            return out
        acl, acl_args = _where_sql(Filters(principal=principal))
        q = f"SELECT DISTINCT c.doc, c.version FROM chunks c WHERE c.doc = ANY(%s){acl}"
        with self._lock:
            for r in self._conn.execute(q, (list(dict.fromkeys(docs)), *acl_args)).fetchall():
                out.setdefault(r["doc"], set()).add(int(r["version"]))
        return out

    def documents(self) -> list[str]:
        return [r["doc"] for r in self._conn.execute("SELECT DISTINCT doc FROM versions ORDER BY doc")]

    def count(self) -> int:
        if not self._chunks_ready():
            return 0
        return int(self._conn.execute("SELECT count(*) AS n FROM chunks").fetchone()["n"])

    def generation(self) -> str:
        """The write counter: it changes whenever any process writes to the store. A store opened
        before the first index learns here that the chunks table now exists."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        self._chunks_ready()
        return str(row["value"]) if row else "0"

    # --- search -----------------------------------------------------------------------------
    def search_dense(self, qvec: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        if not self._chunks_ready() or k <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        where, args = _where_sql(filters)
        sql = (f"SELECT c.id, 1 - (c.vector <=> %s) AS s FROM chunks c WHERE true {where} "
               "ORDER BY c.vector <=> %s LIMIT %s")  # a second sort key would stop HNSW from being used
        params = (q, *args, q, k)
        with self._lock, self._conn.transaction():
            self._conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(40, min(1000, 2 * k))),))
            rows = self._conn.execute(sql, params).fetchall()
            if len(rows) < k and where:
                self._conn.execute("SET LOCAL enable_indexscan = off")  # exact scan: never short
                rows = self._conn.execute(sql, params).fetchall()
                self._conn.execute("SET LOCAL enable_indexscan = on")  # inside a snapshot the setting would outlive us
        return [(r["id"], float(r["s"])) for r in rows]

    def search_bm25(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        """BM25 (k1 = 1.2, b = 0.75). Document frequencies, row count and average length are taken
        over the ACL classes the principal may read (the frequencies summed from term_df, kept per
        term and class by every write), so text it may not read never moves its ranking; the other
        filters only choose among the scored rows. With `keyword_m` set, the top
        k are found from each term's best M postings and proven exact against what was not read
        (docket.store.pg_keywords); `keyword_stats` counts which statement answered."""
        terms = fts_terms(query)
        if not self._chunks_ready() or not terms or k <= 0:
            return []
        readable, acl_args = _readable_sql(filters)
        where, args = _where_sql(filters, acl=False)
        with self._lock, self._conn.transaction():
            # the scored postings are sorted by (chunk, term) for the ordered sums: at 1M chunks a
            # long question has ~200k of them, which spilled to disk under the default 4 MB
            # (exact statement p50 178-202 -> 129-135 ms with 64 MB); a larger setting is kept
            old = self._conn.execute(_RAISE_WORK_MEM).fetchone()["old"]
            try:
                return pg_keywords.search(self._conn, " ".join(terms), k, readable, acl_args, where, args,
                                          m=self.keyword_m, stats=self.keyword_stats)
            finally:  # inside a snapshot the setting would outlive the search
                self._conn.execute("SELECT set_config('work_mem', %s, true)", (old,))

    # --- export -----------------------------------------------------------------------------
    def export(self) -> Iterator[DocumentVersion]:
        for doc in self.documents():
            for sv in self.stored_versions(doc):
                q = f"SELECT {_COLS}, c.context FROM {_FROM} WHERE c.doc = %s AND c.version = %s {_ORDER}"
                rows = self._conn.execute(q, (doc, sv.version)).fetchall() if self._chunks_ready() else []
                chunks = [chunk_from_row(r, None) for r in rows]
                contexts = [r["context"] or "" for r in rows] if any(r["context"] for r in rows) else None
                yield DocumentVersion(
                    doc=doc, version=sv.version, status=sv.status, date=sv.date, effective_to=sv.effective_to,
                    title=chunks[0].title if chunks else "", source=f"{_redact(self.location)} (export)", chunks=chunks,
                    supersedes=False,
                    vectors=np.stack([_vec(r["vector"]) for r in rows]) if rows else None,
                    tokens=[int(r["tokens"]) for r in rows], contexts=contexts,
                )


#: raises work_mem for this transaction to what keyword search's sorts need (never lowers it),
#: returning the setting before
_RAISE_WORK_MEM = ("SELECT s.old, CASE WHEN pg_size_bytes(s.old) < pg_size_bytes('64MB') "
                   "THEN set_config('work_mem', '64MB', true) END AS now "
                   "FROM (SELECT current_setting('work_mem') AS old OFFSET 0) s")


def _readable_sql(f: Filters) -> tuple[str, list[Any]]:
    """The ACL classes the filter's principal may read, as an SQL array expression ('' = all)."""
    names = f.acl_names
    if names is None:
        return "", []
    if not names:
        return "ARRAY[0::bigint]", []
    return "(SELECT array_agg(id) FROM acl_classes WHERE id = 0 OR entries && %s::text[])::bigint[]", [names]


def _stored(r: dict[str, Any]) -> StoredVersion:
    return StoredVersion(r["doc"], r["version"], r["status"], r["date"], r["effective_to"], r["content_hash"],
                         r["n_chunks"], r["source"] or "")


def _where_sql(f: Filters, *, acl: bool = True) -> tuple[str, list[Any]]:
    """SQL conditions (each starting with AND) on `chunks c`, the ACL included unless `acl` is False."""
    parts: list[str] = []
    args: list[Any] = []
    for col, values in (("c.doc", f.docs), ("c.status", f.statuses), ("c.source_type", f.source_types)):
        if values:
            parts.append(f"{col} = ANY(%s)")
            args.append(list(values))
    if f.date_from is not None:
        parts.append("c.date >= %s")
        args.append(f.date_from)
    if f.date_to is not None:
        parts.append("c.date <= %s")
        args.append(f.date_to)
    readable, acl_args = _readable_sql(f) if acl else ("", [])
    if readable:
        parts.append(f"c.cls = ANY({readable})")
        args.extend(acl_args)
    return "".join(f" AND {p}" for p in parts), args


def _chunk(r: dict[str, Any], offer: Callable[..., None]) -> Chunk:
    vec = _vec(r["vector"])
    c = chunk_from_row(r, vec)
    offer(c, r.get("features"), vec)  # the record parsed only if these features are not in memory
    return c


def _vec(value: Any) -> np.ndarray:
    """pgvector's loader gives a `Vector` (0.3+) or an array, depending on the version."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)
