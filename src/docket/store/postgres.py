"""PostgreSQL + pgvector: the store for when one machine is not enough.

Same tables and behaviour as the SQLite file (`docket export` / `docket index --from` move a
store between them). Dense search is pgvector's HNSW index (cosine). Keyword search is BM25
(k1 = 1.2, b = 0.75) over a postings table (`chunk_terms`: lexeme, chunk, term frequency, length)
filled from each chunk's english `tsvector` in the write transaction: `ts_rank` has to score
every matching row (hundreds of ms at 100k chunks), a postings aggregate only reads the query
terms' postings. Scores differ a little from FTS5's bm25 (stemmers differ), the filtering not.
Filters, the ACL included, are SQL conditions of the same query that ranks, so a chunk the
principal may not read is never a candidate. Each document version is one transaction.

HNSW with a selective filter can return fewer rows than asked (pgvector 0.6 filters after the
index scan); then the query is re-run as an exact scan so a filtered search is never short.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from docket.errors import InputError, UnavailableError
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

_BASE_SCHEMA = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS versions(
  doc text NOT NULL, version integer NOT NULL, status text NOT NULL, date date, effective_to date,
  title text, source text, content_hash text NOT NULL, n_chunks integer NOT NULL, indexed_at timestamptz,
  PRIMARY KEY (doc, version));
CREATE TABLE IF NOT EXISTS principals(name text PRIMARY KEY, groups text[] NOT NULL);
"""
_CHUNKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks(
  rowid bigserial PRIMARY KEY, id text NOT NULL UNIQUE, doc text NOT NULL, version integer NOT NULL,
  position integer, status text NOT NULL, date date, effective_to date, title text, section text,
  source_type text, trust text, acl text[], public boolean NOT NULL, metadata jsonb, text text NOT NULL,
  tokens integer NOT NULL, vector vector({dim}) NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', coalesce(title, '') || ' ' || coalesce(section, '')), 'B')
    || setweight(to_tsvector('english', text), 'A')) STORED,
  len integer NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS chunk_terms(term text NOT NULL, chunk bigint NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
  tf real NOT NULL, len real NOT NULL, PRIMARY KEY (term, chunk) INCLUDE (tf, len));
CREATE INDEX IF NOT EXISTS chunk_terms_chunk ON chunk_terms(chunk);
CREATE TABLE IF NOT EXISTS fts_stats(one boolean PRIMARY KEY DEFAULT true CHECK (one), n bigint NOT NULL,
  total_len bigint NOT NULL);
INSERT INTO fts_stats VALUES (true, 0, 0) ON CONFLICT DO NOTHING;
CREATE INDEX IF NOT EXISTS chunks_restricted ON chunks(rowid) WHERE NOT public;
CREATE INDEX IF NOT EXISTS chunks_docver ON chunks(doc, version, position);
CREATE INDEX IF NOT EXISTS chunks_acl ON chunks USING gin(acl);
"""
_HNSW = "CREATE INDEX IF NOT EXISTS chunks_hnsw ON chunks USING hnsw (vector vector_cosine_ops)"
_COLS = "c.id, c.doc, c.version, c.position, c.status, c.date, c.effective_to, c.title, c.section, " \
    "c.source_type, c.trust, c.acl, c.metadata, c.text, c.tokens, c.vector"
_ORDER = "ORDER BY c.position IS NULL, c.position, c.id"


def _connect(url: str) -> Any:
    try:
        import psycopg
        from pgvector.psycopg import register_vector
        from psycopg.rows import dict_row
    except ImportError as e:
        raise UnavailableError("PostgreSQL needs the postgres extra: pip install 'docket[postgres]'") from e
    try:
        conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
    except psycopg.OperationalError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "connection failed"
        raise UnavailableError(f"cannot connect to PostgreSQL: {first}") from None
    conn.execute(_BASE_SCHEMA)
    register_vector(conn)
    return conn


class PostgresStore:
    """A docket store in a PostgreSQL database with the pgvector extension."""

    def __init__(self, url: str) -> None:
        self.location = url
        self._conn = _connect(url)
        self._bulk = False
        self._has_chunks = self._table_exists("chunks")
        if self._has_chunks:
            self._conn.execute(_HNSW)

    def _table_exists(self, name: str) -> bool:
        row = self._conn.execute("SELECT to_regclass(%s) AS t", (name,)).fetchone()
        return row["t"] is not None

    def _ensure_chunks(self, dim: int) -> None:
        if not self._has_chunks:
            self._conn.execute(_CHUNKS_SCHEMA.format(dim=int(dim)))
            self._has_chunks = True
        if not self._bulk:
            self._conn.execute(_HNSW)  # also rebuilds it after a bulk load that was interrupted

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Loading into an empty store: build the HNSW index once at the end instead of row by
        row (pgvector's advice; several times faster). Atomicity per version is unchanged."""
        if self.count() > 0:
            yield
            return
        self._bulk = True
        self._conn.execute("DROP INDEX IF EXISTS chunks_hnsw")
        try:
            yield
        finally:
            self._bulk = False
            self._conn.execute("SET maintenance_work_mem = '512MB'")
            if self._has_chunks:
                self._conn.execute(_HNSW)
                # sets the visibility map, so BM25 reads postings from the index alone
                self._conn.execute("VACUUM (ANALYZE) chunk_terms")
                self._conn.execute("ANALYZE chunks")

    # --- settings and principals -----------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._conn.execute("SELECT key, value FROM meta")}

    def set_meta(self, values: dict[str, str]) -> None:
        with self._conn.transaction():
            for k, v in values.items():
                self._conn.execute(
                    "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (k, v)
                )
        if "dim" in values:
            self._ensure_chunks(int(values["dim"]))

    def set_principal(self, name: str, groups: Sequence[str]) -> None:
        self._conn.execute(
            "INSERT INTO principals VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET groups = EXCLUDED.groups",
            (name, sorted(set(groups))),
        )

    def principal(self, name: str, extra_groups: Sequence[str] = ()) -> Principal:
        row = self._conn.execute("SELECT groups FROM principals WHERE name = %s", (name,)).fetchone()
        stored = row["groups"] if row else []
        return Principal(name=name, groups=frozenset(stored) | frozenset(extra_groups))

    # --- ChunkLookup ----------------------------------------------------------------------
    def get(self, chunk_id: str) -> Chunk | None:
        return self.get_many([chunk_id]).get(chunk_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Chunk]:
        if not self._has_chunks or not ids:
            return {}
        rows = self._conn.execute(f"SELECT {_COLS} FROM chunks c WHERE c.id = ANY(%s)", (list(ids),)).fetchall()
        return {r["id"]: chunk_from_row(r, _vec(r["vector"])) for r in rows}

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        if not self._has_chunks:
            return []
        q = f"SELECT {_COLS} FROM chunks c WHERE c.doc = %s AND c.version = %s {_ORDER}"
        return [chunk_from_row(r, _vec(r["vector"])) for r in self._conn.execute(q, (doc, version))]

    def versions(self, doc: str) -> list[VersionInfo]:
        return [v.info() for v in self.stored_versions(doc)]

    def stored_versions(self, doc: str) -> list[StoredVersion]:
        rows = self._conn.execute("SELECT * FROM versions WHERE doc = %s ORDER BY version", (doc,)).fetchall()
        return [
            StoredVersion(r["doc"], r["version"], r["status"], r["date"], r["effective_to"], r["content_hash"],
                          r["n_chunks"], r["source"] or "")
            for r in rows
        ]

    def documents(self) -> list[str]:
        return [r["doc"] for r in self._conn.execute("SELECT DISTINCT doc FROM versions ORDER BY doc")]

    def count(self) -> int:
        if not self._has_chunks:
            return 0
        return int(self._conn.execute("SELECT count(*) AS n FROM chunks").fetchone()["n"])

    # --- writing ----------------------------------------------------------------------------
    def write_version(self, dv: DocumentVersion) -> WriteResult:
        if dv.vectors is None or dv.tokens is None:
            raise InputError(f"document {dv.doc!r} v{dv.version} has no vectors/token counts yet", where=dv.source)
        self._ensure_chunks(dv.vectors.shape[1])
        with self._conn.transaction():
            # one writer per document at a time: the version check and the write see the same state
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (dv.doc,))
            existing = self.stored_versions(dv.doc)
            check_version(existing, dv)
            plan = plan_write(existing, dv)
            clash = self._conn.execute(
                "SELECT id, doc, version FROM chunks WHERE id = ANY(%s) AND NOT (doc = %s AND version = %s) LIMIT 1",
                ([c.id for c in dv.chunks], dv.doc, dv.version),
            ).fetchone()
            if clash:
                raise InputError(
                    f"chunk id {clash['id']!r} already belongs to document {clash['doc']!r} v{clash['version']}",
                    where=dv.source, field="id",
                )
            self._delete_rows("doc = %s AND version = %s", (dv.doc, dv.version))
            self._conn.execute(
                "INSERT INTO versions VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (doc, version) DO UPDATE SET "
                "status = EXCLUDED.status, date = EXCLUDED.date, effective_to = EXCLUDED.effective_to, "
                "title = EXCLUDED.title, source = EXCLUDED.source, content_hash = EXCLUDED.content_hash, "
                "n_chunks = EXCLUDED.n_chunks, indexed_at = EXCLUDED.indexed_at",
                (dv.doc, dv.version, plan.status, dv.date, dv.effective_to, dv.title, dv.source, dv.content_hash,
                 len(dv.chunks), datetime.now(UTC)),
            )
            vectors = np.asarray(dv.vectors, dtype=np.float32)
            with self._conn.cursor() as cur:
                with cur.copy(
                    "COPY chunks(id, doc, version, position, status, date, effective_to, title, section, source_type,"
                    " trust, acl, public, metadata, text, tokens, vector) FROM STDIN"
                ) as copy:
                    for c, vec, n in zip(dv.chunks, vectors, dv.tokens, strict=True):
                        copy.write_row((
                            c.id, c.doc, c.version, c.position, plan.status, c.date, c.effective_to, c.title,
                            c.section, c.source_type, c.trust, list(c.acl) if c.acl is not None else None,
                            c.acl is None, json.dumps(c.metadata, ensure_ascii=False) if c.metadata else None,
                            c.text, int(n), vec,
                        ))
            self._index_terms(dv.doc, dv.version)
            if plan.superseded:
                for table in ("versions", "chunks"):
                    self._conn.execute(
                        f"UPDATE {table} SET status = 'superseded' WHERE doc = %s AND version = ANY(%s)",
                        (dv.doc, plan.superseded),
                    )
        return plan

    def _index_terms(self, doc: str, version: int) -> None:
        """Postings and lengths of one version's chunks, and the corpus statistics BM25 needs."""
        self._conn.execute(
            "UPDATE chunks c SET len = l.n FROM (SELECT c2.rowid, coalesce(sum(cardinality(u.positions)), 0) AS n "
            "FROM chunks c2 LEFT JOIN LATERAL unnest(c2.tsv) u ON true WHERE c2.doc = %s AND c2.version = %s "
            "GROUP BY c2.rowid) l WHERE c.rowid = l.rowid",
            (doc, version),
        )
        self._conn.execute(
            "INSERT INTO chunk_terms(term, chunk, tf, len) SELECT u.lexeme, c.rowid, cardinality(u.positions), c.len "
            "FROM chunks c, unnest(c.tsv) u WHERE c.doc = %s AND c.version = %s",
            (doc, version),
        )
        self._conn.execute(
            "UPDATE fts_stats SET n = fts_stats.n + s.n, total_len = fts_stats.total_len + s.l FROM (SELECT count(*) AS n, "
            "coalesce(sum(len), 0) AS l FROM chunks WHERE doc = %s AND version = %s) s",
            (doc, version),
        )

    def _delete_rows(self, cond: str, args: tuple[Any, ...]) -> int:
        """Delete chunks (their postings cascade) and take them out of the BM25 statistics."""
        self._conn.execute(
            f"UPDATE fts_stats SET n = fts_stats.n - s.n, total_len = fts_stats.total_len - s.l FROM (SELECT count(*) AS n, "
            f"coalesce(sum(len), 0) AS l FROM chunks WHERE {cond}) s",
            args,
        )
        return int(self._conn.execute(f"DELETE FROM chunks WHERE {cond}", args).rowcount)

    def delete(self, doc: str, version: int | None = None) -> int:
        cond, args = ("doc = %s", (doc,)) if version is None else ("doc = %s AND version = %s", (doc, version))
        with self._conn.transaction():
            n = 0
            if self._has_chunks:
                n = self._delete_rows(cond, args)
            self._conn.execute(f"DELETE FROM versions WHERE {cond}", args)
        return int(n)

    # --- search -----------------------------------------------------------------------------
    def search_dense(self, qvec: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        if not self._has_chunks or k <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        where, args = _where_sql(filters)
        sql = (f"SELECT c.id, 1 - (c.vector <=> %s) AS s FROM chunks c WHERE true {where} "
               "ORDER BY c.vector <=> %s LIMIT %s")  # a second sort key would stop HNSW from being used
        params = (q, *args, q, k)
        with self._conn.transaction():
            self._conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, 2 * k))}")
            rows = self._conn.execute(sql, params).fetchall()
            if len(rows) < k and where:
                self._conn.execute("SET LOCAL enable_indexscan = off")  # exact scan: never short
                rows = self._conn.execute(sql, params).fetchall()
        return [(r["id"], float(r["s"])) for r in rows]

    def search_bm25(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        terms = fts_terms(query)
        if not self._has_chunks or not terms or k <= 0:
            return []
        stats = self._conn.execute("SELECT n, total_len FROM fts_stats").fetchone()
        n, avg = int(stats["n"]), max(1.0, float(stats["total_len"]) / max(1, int(stats["n"])))
        where, args = _where_sql(filters)
        restricted = bool(where) and (
            where != " AND c.public"
            or self._conn.execute("SELECT EXISTS (SELECT 1 FROM chunks WHERE NOT public) AS r").fetchone()["r"]
        )
        lexemes = self._conn.execute("SELECT tsvector_to_array(to_tsvector('english', %s)) AS a",
                                     (" ".join(terms),)).fetchone()["a"]
        if not lexemes:
            return []
        # `term = ANY(array)` keeps the planner on the (term, chunk) key: only these postings are read
        scored = (
            "WITH t AS (SELECT term, ln(1 + (%s::float8 - count(*) + 0.5) / (count(*) + 0.5)) AS idf "
            "FROM chunk_terms WHERE term = ANY(%s) GROUP BY term), "
            "s AS (SELECT ct.chunk, sum(t.idf * ct.tf * 2.2 / (ct.tf + 1.2 * (0.25 + 0.75 * ct.len / %s::float8))) "
            "AS score FROM chunk_terms ct JOIN t ON t.term = ct.term WHERE ct.term = ANY(%s) GROUP BY ct.chunk) "
        )
        params: tuple[Any, ...] = (n, lexemes, avg, lexemes)
        if restricted:
            sql = scored + f"SELECT c.id, s.score FROM s JOIN chunks c ON c.rowid = s.chunk WHERE true {where} " \
                "ORDER BY s.score DESC, c.id LIMIT %s"
            params = (*params, *args, k)
        else:  # every chunk passes: rank first, join only the k winners (same result)
            sql = scored + "SELECT c.id, top.score FROM (SELECT chunk, score FROM s ORDER BY score DESC, chunk " \
                "LIMIT %s) top JOIN chunks c ON c.rowid = top.chunk ORDER BY top.score DESC, c.id"
            params = (*params, k)
        return [(r["id"], float(r["score"])) for r in self._conn.execute(sql, params)]

    # --- export -----------------------------------------------------------------------------
    def export(self) -> Iterator[DocumentVersion]:
        for doc in self.documents():
            for sv in self.stored_versions(doc):
                q = f"SELECT {_COLS} FROM chunks c WHERE c.doc = %s AND c.version = %s {_ORDER}"
                rows = self._conn.execute(q, (doc, sv.version)).fetchall() if self._has_chunks else []
                chunks = [chunk_from_row(r, None) for r in rows]
                yield DocumentVersion(
                    doc=doc, version=sv.version, status=sv.status, date=sv.date, effective_to=sv.effective_to,
                    title=chunks[0].title if chunks else "", source=f"{_redact(self.location)} (export)", chunks=chunks,
                    supersedes=False,
                    vectors=np.stack([_vec(r["vector"]) for r in rows]) if rows else None,
                    tokens=[int(r["tokens"]) for r in rows],
                )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _where_sql(f: Filters) -> tuple[str, list[Any]]:
    """SQL conditions (each starting with AND) on `chunks c`, ACL included."""
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
    names = f.acl_names
    if names is not None:
        if names:
            parts.append("(c.public OR c.acl && %s::text[])")
            args.append(names)
        else:
            parts.append("c.public")
    return "".join(f" AND {p}" for p in parts), args


def _vec(value: Any) -> np.ndarray:
    """pgvector's loader gives a `Vector` (0.3+) or an array, depending on the version."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def _redact(url: str) -> str:
    """The URL without its password, for reports."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        return f"{scheme}://{cred.split(':', 1)[0]}@{host}"
    return url
