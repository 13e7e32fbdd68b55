"""PostgreSQL + pgvector: the store for when one machine is not enough.

Same tables and behaviour as the SQLite file (`docket export` / `docket index --from` move a
store between them). Dense search is pgvector's HNSW index (cosine). Keyword search is BM25
(k1 = 1.2, b = 0.75) over a postings table (`chunk_terms`: lexeme, chunk, term frequency, length)
filled from each chunk's english `tsvector` in the write transaction: `ts_rank` has to score
every matching row (hundreds of ms at 100k chunks), a postings aggregate only reads the query
terms' postings. Scores differ a little from FTS5's bm25 (stemmers differ), the filtering not.
Filters, the ACL included, are SQL conditions of the same query that ranks, so a chunk the
principal may not read is never a candidate. Each document version is one transaction.

Concurrent writers (threads, processes, several `docket index` runs) never wait on each other in a
cycle: every write transaction takes its locks in one global order (the document's advisory lock,
then chunk ids in sorted order, then the ACL classes' statistics rows in sorted id order, last), and
schema DDL runs only after a fresh catalog read under docket's DDL lock says it is needed. A
transaction that PostgreSQL aborts anyway (a deadlock with a non-docket session, a serialization
failure under a stricter default isolation) is tried again a few times with jittered backoff; only
then is the version reported as not written, and nothing of it is stored.

HNSW with a selective filter can return fewer rows than asked (pgvector 0.6 filters after the
index scan); then the query is re-run as an exact scan so a filtered search is never short.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np

from docket.errors import InputError, UnavailableError
from docket.features import FeatureCache, RecordWriter, default_cache, record_of, stored_features
from docket.model import Chunk
from docket.store import pg_keywords
from docket.store.access import AclResolution, Principal, Registry, resolve_acl
from docket.store.base import VersionInfo
from docket.store.protocol import (
    DocumentVersion,
    Filters,
    StoredVersion,
    WriteResult,
    check_version,
    chunk_from_row,
    fts_terms,
    plan_write,
)

SCHEMA_VERSION = 5
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
  tokens integer NOT NULL, vector vector({dim}) NOT NULL, len integer NOT NULL DEFAULT 0,
  cls bigint NOT NULL DEFAULT 0, context text);
CREATE TABLE IF NOT EXISTS chunk_terms(term text NOT NULL, chunk bigint NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
  tf real NOT NULL, len real NOT NULL, cls bigint NOT NULL DEFAULT 0, w real NOT NULL DEFAULT 0,
  PRIMARY KEY (term, chunk) INCLUDE (tf, len, cls));
CREATE INDEX IF NOT EXISTS chunk_terms_chunk ON chunk_terms(chunk);
CREATE INDEX IF NOT EXISTS chunk_terms_impact ON chunk_terms(term, w DESC) INCLUDE (chunk, cls, tf, len);
CREATE TABLE IF NOT EXISTS acl_classes(id bigint PRIMARY KEY, entries text[], n bigint NOT NULL DEFAULT 0,
  total_len bigint NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS chunks_docver ON chunks(doc, version, position);
CREATE TABLE IF NOT EXISTS chunk_features(chunk bigint PRIMARY KEY, features text NOT NULL);
"""
#: every write transaction bumps this counter last (a short row lock), so readers in any process can
#: tell that the store changed (docket.api refreshes its warm state on it)
_BUMP = ("INSERT INTO meta VALUES ('generation', '1') ON CONFLICT (key) DO UPDATE "
         "SET value = (meta.value::bigint + 1)::text")
_HNSW = "CREATE INDEX IF NOT EXISTS chunks_hnsw ON chunks USING hnsw (vector vector_cosine_ops)"
_COLS = "c.id, c.doc, c.version, c.position, c.status, c.date, c.effective_to, c.title, c.section, " \
    "c.source_type, c.trust, c.acl, c.metadata, c.text, c.tokens, c.vector, f.features"
#: the chunks with their persisted features (docket.features), kept in a table of their own so
#: the chunk rows (and the heap the HNSW index and the scans read) stay as narrow as before
_FROM = "chunks c LEFT JOIN chunk_features f ON f.chunk = c.rowid"
#: a version's feature records, by chunk id (after its chunks are inserted, in the same pipeline)
_INSERT_FEATURES = ("INSERT INTO chunk_features(chunk, features) SELECT c.rowid, u.f FROM unnest(%s::text[], %s::text[]) "
                    "AS u(id, f) JOIN chunks c ON c.id = u.id")
_ORDER = "ORDER BY c.position IS NULL, c.position, c.id"
#: one advisory lock for docket's DDL in a database: two first writers must not both create tables
_DDL_LOCK = 7_204_311_590_113
#: the english tsvector of a chunk (title and section weighted B, the text A, and the context A:
#: index --contextualize's model-written context is searched with the text), as `tv`
_TSV = ("setweight(to_tsvector('english', coalesce(s.title, '') || ' ' || coalesce(s.section, '')), 'B') "
        "|| setweight(to_tsvector('english', s.text), 'A') || setweight(to_tsvector('english', coalesce(s.context, '')), 'A')")
#: a posting's impact (docket.store.pg_keywords): the tf part of its BM25 score with the store's
#: fixed average length A0 (meta `bm25_avgdl`, the last parameter), for the (term, w DESC) index
IMPACT_SQL = "{tf} * 2.2 / ({tf} + 1.2 * (0.25 + 0.75 * {len} / {a0}))"
_IMPACT = IMPACT_SQL.format(tf="cardinality(u.positions)", len="l.len", a0="%s::float8")
#: fixes A0 on a store's first write (the version's average length; a later write finds it set, and
#: waits for a first writer still running): set once, so every impact is worked out with one A0
_CLAIM_A0 = ("INSERT INTO meta SELECT 'bm25_avgdl', (SELECT greatest(1, avg((SELECT coalesce(sum(cardinality(u.positions)), "
             "0) FROM unnest(to_tsvector('english', x)) u)))::text FROM unnest(%s::text[]) x) "
             # once set, the texts are not parsed again (a one-time filter, checked first)
             "WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bm25_avgdl') ON CONFLICT (key) DO NOTHING")
# one statement writes a version's chunks (in id order: two documents claiming one id wait in one
# order, so the later one gets the reported clash, never a deadlock) and their postings
_INSERT_CHUNKS = f"""
WITH s AS (
  SELECT * FROM unnest(%s::text[], %s::integer[], %s::date[], %s::date[], %s::text[], %s::text[], %s::text[],
                       %s::text[], %s::text[], %s::text[], %s::text[], %s::integer[], %s::vector[], %s::bigint[],
                       %s::text[])
    AS s(id, position, date, effective_to, title, section, source_type, trust, acl, metadata, text, tokens, vector, cls,
         context)),
t AS (SELECT s.*, {_TSV} AS tv FROM s),
l AS (SELECT t.*, coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(t.tv) u), 0)::integer AS len FROM t),
ins AS (
  INSERT INTO chunks(id, doc, version, position, status, date, effective_to, title, section, source_type, trust, acl,
                     public, metadata, text, tokens, vector, len, cls, context)
  SELECT id, %s, %s, position, %s, date, effective_to, title, section, source_type, trust,
         CASE WHEN acl IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(acl::jsonb)) END,
         acl IS NULL, metadata::jsonb, text, tokens, vector, len, cls, context FROM l ORDER BY id
  RETURNING rowid, id)
INSERT INTO chunk_terms(term, chunk, tf, len, cls, w)
SELECT u.lexeme, ins.rowid, cardinality(u.positions), l.len, l.cls, {_IMPACT}
FROM ins JOIN l ON l.id = ins.id, unnest(l.tv) u
"""
#: the net change of each ACL class's BM25 statistics (the version's new rows minus the replaced
#: rows, given as arrays), applied in class-id order as the version's last statement: the only row
#: locks two writers of different documents share are taken in one order, after every other lock
_APPLY_STATS = """
INSERT INTO acl_classes(id, entries, n, total_len)
SELECT cls, min(entries), sum(n), sum(l) FROM (
  SELECT cls, min(acl) AS entries, count(*) AS n, coalesce(sum(len), 0) AS l FROM chunks
    WHERE doc = %s AND version = %s GROUP BY cls
  UNION ALL
  SELECT o.cls, NULL::text[], -o.n, -o.l FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS o(cls, n, l)) d
GROUP BY cls HAVING sum(n) <> 0 OR sum(l) <> 0 ORDER BY cls
ON CONFLICT (id) DO UPDATE SET n = acl_classes.n + EXCLUDED.n, total_len = acl_classes.total_len + EXCLUDED.total_len
"""
#: the statistics of a version's rows, per ACL class (read before the rows are replaced)
_CLASS_STATS = "SELECT cls, count(*) AS n, coalesce(sum(len), 0) AS l FROM chunks WHERE doc = %s AND version = %s GROUP BY cls"
# removes chunks (their postings cascade, their features go with them) and takes them out of their
# classes' statistics (class order)
_DELETE_CHUNKS = """
WITH d AS (DELETE FROM chunks WHERE {cond} RETURNING rowid, cls, len),
f AS (DELETE FROM chunk_features WHERE chunk IN (SELECT rowid FROM d))
INSERT INTO acl_classes(id, n, total_len) SELECT cls, -count(*), -coalesce(sum(len), 0) FROM d GROUP BY cls ORDER BY cls
ON CONFLICT (id) DO UPDATE SET n = acl_classes.n + EXCLUDED.n, total_len = acl_classes.total_len + EXCLUDED.total_len
"""
#: how many times a transaction PostgreSQL aborted (deadlock victim, serialization failure) is run
#: in all before the write is reported as not done; the waits between tries grow from ~20 ms
_TRIES = 6
_T = TypeVar("_T")
#: whether a table exists in the schemas of the search path, read from the catalog itself: the
#: session's name cache (`to_regclass`) is not refreshed by an advisory lock, so after waiting for
#: another writer's DDL it can still say "absent"
_TABLE_EXISTS = ("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                 "ON n.oid = c.relnamespace WHERE c.relname = %s AND n.nspname = ANY(current_schemas(false))) AS t")


def acl_class(acl: Sequence[str] | None) -> int:
    """The id of an ACL class (the chunks sharing one typed acl): 0 = public, else a 63-bit hash."""
    if acl is None:
        return 0
    h = hashlib.blake2b(json.dumps(sorted(acl)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1 or 1


def _readable_sql(f: Filters) -> tuple[str, list[Any]]:
    """The ACL classes the filter's principal may read, as an SQL array expression ('' = all)."""
    names = f.acl_names
    if names is None:
        return "", []
    if not names:
        return "ARRAY[0::bigint]", []
    return "(SELECT array_agg(id) FROM acl_classes WHERE id = 0 OR entries && %s::text[])::bigint[]", [names]


def _migrate_v1_to_v2(conn: Any) -> None:
    """Schema 1 -> 2 (inside the caller's transaction): users and groups apart, BM25 statistics
    per ACL class. Plain acl entries become typed by the principals table (`resolve_acl`, noted
    in meta `acl_migration`); every chunk and posting gets its ACL class; the store-wide
    `fts_stats` (which counted restricted rows for everyone) and the unused tsv column go."""
    registry = Registry.of((r["name"], r["groups"]) for r in conn.execute("SELECT name, groups FROM principals"))
    note = AclResolution()
    conn.execute("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS cls bigint NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE chunk_terms ADD COLUMN IF NOT EXISTS cls bigint NOT NULL DEFAULT 0")
    conn.execute("CREATE TABLE IF NOT EXISTS acl_classes(id bigint PRIMARY KEY, entries text[], "
                 "n bigint NOT NULL DEFAULT 0, total_len bigint NOT NULL DEFAULT 0)")
    for r in conn.execute("SELECT DISTINCT acl FROM chunks WHERE acl IS NOT NULL").fetchall():
        typed = resolve_acl(r["acl"], registry, note)
        conn.execute("UPDATE chunks SET acl = %s, cls = %s WHERE acl = %s", (list(typed or ()), acl_class(typed), r["acl"]))
    conn.execute("UPDATE chunk_terms ct SET cls = c.cls FROM chunks c WHERE c.rowid = ct.chunk AND c.cls <> 0")
    conn.execute("ALTER TABLE chunk_terms DROP CONSTRAINT IF EXISTS chunk_terms_pkey")
    conn.execute("ALTER TABLE chunk_terms ADD PRIMARY KEY (term, chunk) INCLUDE (tf, len, cls)")
    conn.execute("INSERT INTO acl_classes(id, entries, n, total_len) SELECT cls, min(acl), count(*), coalesce(sum(len), 0) "
                 "FROM chunks GROUP BY cls")
    conn.execute("DROP TABLE IF EXISTS fts_stats")
    conn.execute("DROP INDEX IF EXISTS chunks_acl")
    conn.execute("DROP INDEX IF EXISTS chunks_restricted")
    conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS tsv")
    conn.execute("INSERT INTO meta VALUES ('acl_migration', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                 (json.dumps(note.to_json()),))


def _migrate_v2_to_v3(conn: Any) -> None:
    """Schema 2 -> 3 (inside the caller's transaction): every chunk keeps its question-independent
    features (docket.features) in chunk_features, computed here for the rows already stored."""
    if not conn.execute(_TABLE_EXISTS, ("chunks",)).fetchone()["t"]:
        return  # no chunks yet: the table comes with them
    conn.execute("CREATE TABLE IF NOT EXISTS chunk_features(chunk bigint PRIMARY KEY, features text NOT NULL)")
    cols = _COLS.replace(", f.features", "")
    rows = conn.execute(f"SELECT c.rowid AS rowid, {cols} FROM chunks c ORDER BY c.rowid").fetchall()
    for start in range(0, len(rows), 1000):
        part = rows[start : start + 1000]
        conn.execute("INSERT INTO chunk_features SELECT * FROM unnest(%s::bigint[], %s::text[]) ON CONFLICT (chunk) "
                     "DO UPDATE SET features = EXCLUDED.features",
                     ([r["rowid"] for r in part], [record_of(chunk_from_row(r, None)) for r in part]))


def _migrate_v3_to_v4(conn: Any) -> None:
    """Schema 3 -> 4 (inside the caller's transaction): a nullable `context` per chunk (index
    --contextualize: a model-written context, searched with the chunk, never shown in a prompt).
    Existing chunks have none, so their vectors and postings stay as they are."""
    if conn.execute("SELECT to_regclass('chunks') AS t").fetchone()["t"] is not None:
        conn.execute("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS context text")


def _migrate_v4_to_v5(conn: Any) -> None:
    """Schema 4 -> 5 (inside the caller's transaction): each posting gets its impact `w` (see
    docket.store.pg_keywords), worked out with the store's average length as A0, and the
    (term, w DESC) index keyword search reads postings best first through."""
    if conn.execute("SELECT to_regclass('chunk_terms') AS t").fetchone()["t"] is None:
        return
    conn.execute("ALTER TABLE chunk_terms ADD COLUMN IF NOT EXISTS w real NOT NULL DEFAULT 0")
    conn.execute("INSERT INTO meta SELECT 'bm25_avgdl', greatest(1.0, coalesce(sum(total_len), 0)::float8 / "
                 "greatest(1, coalesce(sum(n), 0)))::text FROM acl_classes ON CONFLICT (key) DO NOTHING")
    a0 = float(conn.execute("SELECT value FROM meta WHERE key = 'bm25_avgdl'").fetchone()["value"])
    conn.execute(f"UPDATE chunk_terms SET w = {IMPACT_SQL.format(tf='tf', len='len', a0='%s::float8')}", (a0,))
    conn.execute("CREATE INDEX IF NOT EXISTS chunk_terms_impact ON chunk_terms(term, w DESC) INCLUDE (chunk, cls, tf, len)")


#: schema version -> the function that lifts a store from it to the next version
_MIGRATIONS = {1: _migrate_v1_to_v2, 2: _migrate_v2_to_v3, 3: _migrate_v3_to_v4, 4: _migrate_v4_to_v5}


class _PipelineAbortNoise(logging.Filter):
    """Drops psycopg's "error ignored terminating <Pipeline>: ..." warning. It is logged when a
    statement of a pipelined transaction fails (a chunk-id clash, a deadlock victim about to be
    tried again); the error itself is raised to the store, which reports or retries it, so the
    line would only be noise on stderr (a library prints nothing)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith("error ignored terminating"))


_PIPELINE_NOISE = _PipelineAbortNoise()


def _connect(url: str, read_only: bool = False) -> Any:
    """A connection with pgvector's types; docket's base tables made unless `read_only` (then a
    database without them is refused: reading never creates or changes a store)."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
        from psycopg.rows import dict_row
    except ImportError as e:
        raise UnavailableError("PostgreSQL needs the postgres extra: pip install 'docket[postgres]'") from e
    logging.getLogger("psycopg").addFilter(_PIPELINE_NOISE)  # once: a logger keeps one copy of a filter
    try:
        conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
    except psycopg.OperationalError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "connection failed"
        raise UnavailableError(f"cannot connect to PostgreSQL: {first}") from None
    if read_only:
        found = conn.execute(_TABLE_EXISTS, ("meta",)).fetchone()
        if not (found and found["t"]):
            conn.close()
            raise InputError("is not a docket store (it has no meta table; nothing was created): build one with "
                             "`docket index PATH --db URL`", where=_redact(url))
    else:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            conn.execute(_BASE_SCHEMA)
    register_vector(conn)
    return conn


class PostgresStore:
    """A docket store in a PostgreSQL database with the pgvector extension."""

    def __init__(self, url: str, *, read_only: bool = False, records: RecordWriter | None = None,
                 features: FeatureCache | None = None) -> None:
        """`read_only`: for commands that only read: no table is created, no schema row written or
        migrated, and a database that is not a docket store is refused in one line. `features`: the
        cache each row read is offered to (a Session's own, docket.caches; default the process-wide one)."""
        self.location = url
        self.read_only = read_only
        #: writes each chunk's feature record (see SQLiteStore.records)
        self.records: RecordWriter = records or record_of
        self.features: FeatureCache = features if features is not None else default_cache()
        self._conn = _connect(url, read_only)
        self._lock = threading.RLock()
        self._snapshot_depth = 0
        self._bulk = False
        #: write transactions PostgreSQL aborted (deadlock, serialization failure) that were tried again
        self.retried = 0
        #: keyword search: postings read per term first (None: every posting, the default, see
        #: pg_keywords.first_m), and how often each statement gave the answer (`m1`, `m4`, `exact`)
        self.keyword_m: int | None = None
        self.keyword_stats: dict[str, int] = {}
        self._has_chunks = self._table_exists("chunks")
        self._open_schema()
        if self._has_chunks and not read_only:
            self._ensure_hnsw()

    def _table_exists(self, name: str) -> bool:
        return bool(self._conn.execute(_TABLE_EXISTS, (name,)).fetchone()["t"])

    def _chunks_ready(self) -> bool:
        """Whether the chunks table exists; asked again while it does not, since another process
        may create it at any time (a store opened empty sees what is indexed later)."""
        if not self._has_chunks:
            with self._lock:
                self._has_chunks = self._table_exists("chunks")
        return self._has_chunks

    def _retry(self, fn: Callable[[], _T], what: str, where: str | None) -> _T:
        """Run one transaction, again (after a jittered, growing wait) when PostgreSQL aborts it
        as a deadlock victim or a serialization failure; the last resort behind the lock order,
        so a write is reported as not done only when every try failed."""
        import psycopg

        for attempt in range(_TRIES):
            try:
                return fn()
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as e:
                if attempt + 1 == _TRIES:
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    raise InputError(f"{what} was not done: PostgreSQL aborted it {_TRIES} times ({first}); "
                                     "nothing of it was stored, run it again", where=where) from None
                self.retried += 1
                time.sleep(random.uniform(0.5, 1.0) * min(1.0, 0.02 * 2 ** attempt))  # noqa: S311 - jitter, not crypto
        raise AssertionError("unreachable")

    def _open_schema(self) -> None:
        """Record the schema version of a new store, or migrate an older one (one transaction,
        under docket's DDL lock, so two openers never migrate twice)."""
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            from docket.store.sqlite_file import check_meta_values  # the same damage, the same one line

            check_meta_values({str(r["key"]): str(r["value"]) for r in self._conn.execute("SELECT key, value FROM meta")},
                              _redact(self.location))
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                found = 1 if self._table_exists("chunks") else SCHEMA_VERSION  # schema 1 did not record itself
            else:
                found = int(row["value"])
            if found > SCHEMA_VERSION:
                raise InputError(f"was written by a newer docket (schema {found}, this one reads {SCHEMA_VERSION}); "
                                 "upgrade docket", where=_redact(self.location))
            if self.read_only:
                if found < SCHEMA_VERSION or row is None:
                    raise InputError(f"was written by an older docket (schema {found}, this one reads "
                                     f"{SCHEMA_VERSION}); a write (`docket index`) upgrades it", where=_redact(self.location))
                return
            while found < SCHEMA_VERSION:
                _MIGRATIONS[found](self._conn)
                found += 1
            self._conn.execute("INSERT INTO meta VALUES ('schema', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                               (str(found),))

    def _ensure_chunks(self, dim: int) -> None:
        if not self._has_chunks:
            self._retry(lambda: self._create_chunks(dim), "creating the store's tables", _redact(self.location))
            self._has_chunks = True

    def _create_chunks(self, dim: int) -> None:
        """The chunk tables, unless another writer created them first. The catalog is read after
        the DDL lock is held (`_TABLE_EXISTS`), so the DDL never runs twice: re-run, its
        `CREATE INDEX IF NOT EXISTS` would take SHARE locks on tables the first writer is filling,
        one after the other, and deadlock with that writer's inserts."""
        with self._lock, self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            if self._table_exists("chunks"):
                return
            self._conn.execute(_CHUNKS_SCHEMA.format(dim=int(dim)))
            if not self._bulk:  # a bulk load builds it at the end
                self._conn.execute(_HNSW)  # on the empty table, in the same transaction: instant

    def _ensure_hnsw(self) -> None:
        """Rebuild the HNSW index if a bulk load was interrupted (under the DDL lock, asked again
        once it is held: another opener may have built it meanwhile)."""
        if self._table_exists("chunks_hnsw"):
            return

        def build() -> None:
            with self._lock, self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
                if not self._table_exists("chunks_hnsw"):
                    self._conn.execute(_HNSW)

        self._retry(build, "building the HNSW index", _redact(self.location))

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Loading into an empty store: build the HNSW index once at the end instead of row by
        row (pgvector's advice; several times faster), and commit without waiting for the WAL
        flush (`synchronous_commit = off`: each version is still one atomic transaction; a
        crash may forget the last versions written, which the next index run writes again).
        """
        if self.count() > 0:
            yield
            return
        self._bulk = True
        self._conn.execute("DROP INDEX IF EXISTS chunks_hnsw")
        self._conn.execute("SET synchronous_commit = off")
        try:
            yield
        finally:
            self._bulk = False
            self._conn.execute("RESET synchronous_commit")
            # at least 1 GB for the HNSW build (pgvector slows sharply once its graph outgrows it);
            # a server configured with more keeps its own setting
            self._conn.execute("SELECT set_config('maintenance_work_mem', '1GB', false) "
                               "WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes('1GB')")
            if self._chunks_ready():
                self._ensure_hnsw()
                # sets the visibility map, so BM25 reads postings from the index alone
                self._conn.execute("VACUUM (ANALYZE) chunk_terms")
                self._conn.execute("ANALYZE chunks")

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

    # --- settings and principals -----------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._conn.execute("SELECT key, value FROM meta")}

    def set_meta(self, values: dict[str, str]) -> None:
        with self._conn.transaction():
            for k, v in sorted(values.items()):  # one key order for every writer
                self._conn.execute(
                    "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (k, v)
                )
        if "dim" in values:
            self._ensure_chunks(int(values["dim"]))

    def claim_meta(self, values: dict[str, str]) -> dict[str, str]:
        """Set the keys no one has set yet, in one transaction, and return the settings after it:
        of two first index runs starting at once, one fixes the embedder and the other learns it."""
        with self._lock, self._conn.transaction():
            for k, v in sorted(values.items()):
                self._conn.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", (k, v))
            meta = {r["key"]: r["value"] for r in self._conn.execute("SELECT key, value FROM meta")}
        if "dim" in meta:
            self._ensure_chunks(int(meta["dim"]))
        return meta

    def set_principal(self, name: str, groups: Sequence[str]) -> None:
        p = Principal(name, frozenset(groups))  # validates and strips user:/group: prefixes
        with self._lock:
            self._conn.execute(
                "INSERT INTO principals VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET groups = EXCLUDED.groups",
                (p.name, sorted(p.groups)),
            )

    def principal(self, name: str, extra_groups: Sequence[str] = ()) -> Principal:
        p = Principal(name, frozenset(extra_groups))
        with self._lock:
            row = self._conn.execute("SELECT groups FROM principals WHERE name = %s", (p.name,)).fetchone()
        stored = row["groups"] if row else []
        return Principal(name=p.name, groups=frozenset(stored) | p.groups)

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

    # --- writing ----------------------------------------------------------------------------
    def write_version(self, dv: DocumentVersion) -> WriteResult:
        """One transaction in two round trips: the reads the plan needs (pipelined), then every
        write of the version and the COMMIT (pipelined). A chunk id that another document takes
        at the same moment is reported like any other clash, not raised from the database; a
        transaction PostgreSQL aborts is tried again (`_retry`), all or nothing each time."""
        import psycopg

        if dv.vectors is None or dv.tokens is None:
            raise InputError(f"document {dv.doc!r} v{dv.version} has no vectors/token counts yet", where=dv.source)
        self._ensure_chunks(dv.vectors.shape[1])
        try:
            return self._retry(lambda: self._locked_write(dv), f"writing document {dv.doc!r} v{dv.version}", dv.source)
        except psycopg.errors.UniqueViolation as e:
            if getattr(e.diag, "constraint_name", None) != "chunks_id_key":
                raise
            clash = self._clash(dv)
            if clash is None:  # the other writer's version is gone again: say what happened
                raise InputError("a chunk id was taken by another document being written at the same time; "
                                 "run the index again", where=dv.source, field="id") from None
            raise InputError(
                f"chunk id {clash['id']!r} already belongs to document {clash['doc']!r} v{clash['version']}",
                where=dv.source, field="id",
            ) from None

    def _locked_write(self, dv: DocumentVersion) -> WriteResult:
        with self._lock:
            return self._write(dv)

    def _clash(self, dv: DocumentVersion) -> dict[str, Any] | None:
        row: dict[str, Any] | None = self._conn.execute(
            "SELECT id, doc, version FROM chunks WHERE id = ANY(%s) AND NOT (doc = %s AND version = %s) ORDER BY id LIMIT 1",
            ([c.id for c in dv.chunks], dv.doc, dv.version),
        ).fetchone()
        return row

    def _write(self, dv: DocumentVersion) -> WriteResult:
        """The version's transaction. Its locks come in one order shared by every docket
        transaction: the document's advisory lock (first, holding nothing), the chunk ids (sorted),
        the ACL classes' statistics rows (sorted, last), so concurrent writers never wait in a cycle."""
        if self._snapshot_depth:
            raise InputError("a store cannot be written inside its own snapshot() block")
        conn = self._conn
        plain = any(e for c in dv.chunks if c.acl for e in c.acl if not e.lower().startswith(("user:", "group:")))
        with conn.transaction():
            with conn.pipeline() as pipe:
                # one writer per document at a time: the version check and the write see the same state
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (dv.doc,))
                cur_versions = conn.execute("SELECT * FROM versions WHERE doc = %s ORDER BY version", (dv.doc,))
                cur_clash = conn.execute(
                    "SELECT id, doc, version FROM chunks WHERE id = ANY(%s) AND NOT (doc = %s AND version = %s) "
                    "ORDER BY id LIMIT 1", ([c.id for c in dv.chunks], dv.doc, dv.version))
                cur_old = conn.execute(_CLASS_STATS, (dv.doc, dv.version))
                cur_registry = conn.execute("SELECT name, groups FROM principals") if plain else None
                conn.execute(_CLAIM_A0, ([c.text for c in dv.chunks],))
                cur_a0 = conn.execute("SELECT value FROM meta WHERE key = 'bm25_avgdl'")
                pipe.sync()
                a0 = float(cur_a0.fetchone()["value"])
                existing = [_stored(r) for r in cur_versions.fetchall()]
                clash = cur_clash.fetchone()
                old = cur_old.fetchall()  # the rows this write replaces (stable: the document is ours)
                registry = Registry.of((r["name"], r["groups"]) for r in cur_registry.fetchall()) if cur_registry \
                    else Registry()
            check_version(existing, dv)
            plan = plan_write(existing, dv)
            if clash:
                raise InputError(
                    f"chunk id {clash['id']!r} already belongs to document {clash['doc']!r} v{clash['version']}",
                    where=dv.source, field="id",
                )
            acls = [resolve_acl(c.acl, registry, plan.acl) for c in dv.chunks]
            vectors = np.asarray(dv.vectors, dtype=np.float32)
            with conn.pipeline():
                if old:
                    conn.execute("DELETE FROM chunks WHERE doc = %s AND version = %s", (dv.doc, dv.version))
                conn.execute(
                    "INSERT INTO versions VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (doc, version) DO UPDATE SET "
                    "status = EXCLUDED.status, date = EXCLUDED.date, effective_to = EXCLUDED.effective_to, "
                    "title = EXCLUDED.title, source = EXCLUDED.source, content_hash = EXCLUDED.content_hash, "
                    "n_chunks = EXCLUDED.n_chunks, indexed_at = EXCLUDED.indexed_at",
                    (dv.doc, dv.version, plan.status, dv.date, dv.effective_to, dv.title, dv.source, dv.content_hash,
                     len(dv.chunks), datetime.now(UTC)),
                )
                cs = dv.chunks
                contexts = [x or None for x in dv.contexts] if dv.contexts else [None] * len(cs)
                conn.execute(_INSERT_CHUNKS, (
                    [c.id for c in cs], [c.position for c in cs], [c.date for c in cs], [c.effective_to for c in cs],
                    [c.title for c in cs], [c.section for c in cs], [c.source_type for c in cs], [c.trust for c in cs],
                    [json.dumps(list(a)) if a is not None else None for a in acls],
                    [json.dumps(c.metadata, ensure_ascii=False) if c.metadata else None for c in cs],
                    [c.text for c in cs], [int(n) for n in dv.tokens or ()], list(vectors),
                    [acl_class(a) for a in acls], contexts, dv.doc, dv.version, plan.status, a0,
                ))
                conn.execute(_INSERT_FEATURES, ([c.id for c in cs], [stored_features(c, plan.status, self.records) for c in cs]))
                conn.execute(_APPLY_STATS, (dv.doc, dv.version, [r["cls"] for r in old], [r["n"] for r in old],
                                            [r["l"] for r in old]))
            self._conn.execute(_BUMP)  # the meta row, last of every write's locks
        return plan

    def delete(self, doc: str, version: int | None = None) -> int:
        cond, args = ("doc = %s", (doc,)) if version is None else ("doc = %s AND version = %s", (doc, version))
        where = f"document {doc!r}" if version is None else f"document {doc!r} v{version}"

        def run() -> int:
            with self._lock, self._conn.transaction():
                # the document's lock, as a write takes it: a delete and a write of one document never interleave
                self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (doc,))
                n = 0
                if self._chunks_ready():
                    n = int(self._conn.execute(f"SELECT count(*) AS n FROM chunks WHERE {cond}", args).fetchone()["n"])
                    self._conn.execute(_DELETE_CHUNKS.format(cond=cond), args)
                self._conn.execute(f"DELETE FROM versions WHERE {cond}", args)
                self._conn.execute(_BUMP)
            return n

        return int(self._retry(run, f"deleting {where}", _redact(self.location)))

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
        over the ACL classes the principal may read, so text it may not read never moves its
        ranking; the other filters only choose among the scored rows. With `keyword_m` set, the top
        k are found from each term's best M postings and proven exact against what was not read
        (docket.store.pg_keywords); `keyword_stats` counts which statement answered."""
        terms = fts_terms(query)
        if not self._chunks_ready() or not terms or k <= 0:
            return []
        readable, acl_args = _readable_sql(filters)
        where, args = _where_sql(filters, acl=False)
        with self._lock:
            return pg_keywords.search(self._conn, " ".join(terms), k, readable, acl_args, where, args,
                                      m=self.keyword_m, stats=self.keyword_stats)

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

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


def _redact(url: str) -> str:
    """The URL without its password, for reports."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        return f"{scheme}://{cred.split(':', 1)[0]}@{host}"
    return url
