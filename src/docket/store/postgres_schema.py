"""PostgreSQL store, lowest layer: the connection, the schema and its migrations, opening a
store (`_PgSchema`), its settings and principals, and the SQL pieces every layer above shares.
Split out of docket.store.postgres (see its docstring for the design); nothing here imports upward."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from docket.errors import InputError, UnavailableError
from docket.features import FeatureCache, RecordWriter, default_cache, record_of
from docket.store.access import AclResolution, Principal, Registry, resolve_acl
from docket.store.protocol import (
    chunk_from_row,
)

SCHEMA_VERSION = 6
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
CREATE TABLE IF NOT EXISTS term_df(term text NOT NULL, cls bigint NOT NULL, df bigint NOT NULL, PRIMARY KEY (term, cls) INCLUDE (df));
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
#: adds each (term, ACL class)'s change of document frequency, given as a query of (term, cls, d)
#: rows, to term_df: net per pair, in (term, cls) order (the lock order every writer shares, see
#: docket.store.postgres), so two writers of one term both land and never wait in a cycle
APPLY_DF = ("INSERT INTO term_df(term, cls, df) SELECT term, cls, sum(d) FROM ({deltas}) AS delta(term, cls, d) "
            "GROUP BY term, cls HAVING sum(d) <> 0 ORDER BY term, cls "
            "ON CONFLICT (term, cls) DO UPDATE SET df = term_df.df + EXCLUDED.df")
#: the postings of a set of chunks counted per (term, ACL class), as APPLY_DF's deltas ({cond} on `c`)
POSTING_COUNTS = ("SELECT ct.term, ct.cls, count(*) AS n FROM chunks c JOIN chunk_terms ct ON ct.chunk = c.rowid "
                  "WHERE {cond} GROUP BY ct.term, ct.cls")
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


def _migrate_v5_to_v6(conn: Any) -> None:
    """Schema 5 -> 6 (inside the caller's transaction): the document frequency of each term per
    ACL class (term_df), counted once from the postings here and kept by every write after, so
    keyword search sums a few rows instead of counting a term's postings per query."""
    if conn.execute("SELECT to_regclass('chunk_terms') AS t").fetchone()["t"] is None:
        return  # no chunks yet: the table comes with them
    conn.execute("CREATE TABLE IF NOT EXISTS term_df(term text NOT NULL, cls bigint NOT NULL, df bigint NOT NULL, "
                 "PRIMARY KEY (term, cls) INCLUDE (df))")
    conn.execute("INSERT INTO term_df(term, cls, df) SELECT term, cls, count(*) FROM chunk_terms GROUP BY term, cls "
                 "ON CONFLICT (term, cls) DO UPDATE SET df = EXCLUDED.df")


#: schema version -> the function that lifts a store from it to the next version
_MIGRATIONS = {1: _migrate_v1_to_v2, 2: _migrate_v2_to_v3, 3: _migrate_v3_to_v4, 4: _migrate_v4_to_v5,
               5: _migrate_v5_to_v6}


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


class _PgSchema:
    """A docket store in a PostgreSQL database: the connection, schema, settings and principals."""

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
        #: pg_keywords.first_m), and how often each statement gave the answer (`m1`, `m2`, `exact`)
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


def _redact(url: str) -> str:
    """The URL without its password, for reports."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        return f"{scheme}://{cred.split(':', 1)[0]}@{host}"
    return url
