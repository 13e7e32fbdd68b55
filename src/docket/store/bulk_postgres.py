"""`docket import` into a PostgreSQL store: binary COPY into a staging table, then set-based SQL.

One transaction holds the whole load (nothing of the file is stored unless all of it is):

1. the rows stream, checked batch by batch, into a staging table with `COPY ... (FORMAT BINARY)`
   (psycopg's copy; vectors through pgvector's binary dumper);
2. the keyword index's own indexes and foreign key are dropped, each chunk's english tsvector is
   worked out once (a parallel CREATE TABLE AS: the staging tables are unlogged tables of this
   transaction, since parallel workers cannot read a temporary table, and are dropped before
   its COMMIT), the chunks go in with one INSERT ... SELECT, then every posting (with its
   impact, A0 = this load's average length: docket.store.pg_keywords) with one more, and the
   indexes are built again, sorted, once;
3. each (term, ACL class)'s document frequency (term_df), the ACL classes' statistics and the
   versions rows, and the generation bump.

After the COMMIT the HNSW index is built once (pgvector's advice for a bulk load) and the posting
table vacuumed, so keyword search reads postings from the index alone. A crash before the HNSW
build leaves a store whose next opener builds it (PostgresStore._ensure_hnsw).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import repeat
from typing import Any

from docket.errors import InputError
from docket.store.access import AclResolution, Registry, resolve_acl
from docket.store.importer import Batch, Checker

#: the staging tables: unlogged tables of the load's own transaction, dropped before its COMMIT
#: (a rollback or a crash leaves none). Not temporary: parallel workers cannot read a temporary
#: table, and the tsvectors (the load's costliest SQL) are worked out by a parallel CREATE TABLE AS.
#: A user who may not create tables in the store's schema stages in temporary ones (`_staging`)
_STAGE = """
CREATE {kind} TABLE docket_import(n bigint, id text, doc text, version integer, position integer, status text,
  date date, effective_to date, title text, section text, source_type text, trust text, acl text[], metadata text,
  text text, tokens integer, vector vector({dim}), cls bigint, context text)
"""
#: planner settings for the parallel CREATE TABLE AS: every worker the server allows for a query
_PARALLEL = ("SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0; "
             "SET LOCAL min_parallel_table_scan_size = 0")
_TYPES = ["int8", "text", "text", "int4", "int4", "text", "date", "date", "text", "text", "text", "text", "text[]", "text",
          "text", "int4", "vector", "int8", "text"]
_DROP = """
ALTER TABLE chunk_terms DROP CONSTRAINT IF EXISTS chunk_terms_chunk_fkey;
ALTER TABLE chunk_terms DROP CONSTRAINT IF EXISTS chunk_terms_pkey;
DROP INDEX IF EXISTS chunk_terms_chunk;
DROP INDEX IF EXISTS chunk_terms_impact;
DROP INDEX IF EXISTS chunks_hnsw;
"""
#: the keyword index's indexes and foreign key, built again once the postings are in (stage, SQL)
_REBUILD = [
    ("primary key", "ALTER TABLE chunk_terms ADD PRIMARY KEY (term, chunk) INCLUDE (tf, len, cls)"),
    ("chunk index", "CREATE INDEX chunk_terms_chunk ON chunk_terms(chunk)"),
    ("impact index", "CREATE INDEX chunk_terms_impact ON chunk_terms(term, w DESC) INCLUDE (chunk, cls, tf, len)"),
    ("foreign key", "ALTER TABLE chunk_terms ADD CONSTRAINT chunk_terms_chunk_fkey FOREIGN KEY (chunk) "
                    "REFERENCES chunks(rowid) ON DELETE CASCADE"),
]
_CHUNKS = """
INSERT INTO chunks(rowid, id, doc, version, position, status, date, effective_to, title, section, source_type, trust,
                   acl, public, metadata, text, tokens, vector, len, cls, context)
SELECT %s::bigint + s.n, s.id, s.doc, s.version, s.position, s.status, s.date, s.effective_to, s.title, s.section, s.source_type, s.trust,
       s.acl, s.acl IS NULL, s.metadata::jsonb, s.text, s.tokens, s.vector, t.len, s.cls, s.context
FROM docket_import s JOIN docket_import_tv t USING (n) ORDER BY s.n
"""


@contextmanager
def _stage(stages: dict[str, float] | None, name: str) -> Iterator[None]:
    t = time.perf_counter()
    yield
    if stages is not None:
        stages[name] = stages.get(name, 0.0) + time.perf_counter() - t


def load(store: Any, batches: Iterable[Batch], checker: Checker, note: AclResolution,
         stages: dict[str, float] | None = None) -> int:
    """Write every batch and the versions they make, all or nothing; returns the chunks written.
    `stages` (benchmarks) gets the seconds each stage took."""
    from docket.store import postgres as pg

    store._ensure_chunks(checker.dim)
    conn = store._conn
    with store._lock, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (pg._DDL_LOCK,))
        # no other writer while the store is built (they wait, then see it whole)
        conn.execute("LOCK TABLE versions, chunks, chunk_terms, term_df, acl_classes, chunk_features "
                     "IN SHARE ROW EXCLUSIVE MODE")
        if conn.execute("SELECT EXISTS (SELECT 1 FROM chunks) OR EXISTS (SELECT 1 FROM versions) AS x").fetchone()["x"]:
            raise InputError("already holds documents; `docket import` builds a new store (import into an empty "
                             "one, then add to it with `docket index`)", where=pg._redact(store.location))
        for key, value in (("dim", str(checker.dim)), ("embedder", checker.embedder)):
            conn.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", (key, value))
        registry = Registry.of((r["name"], r["groups"]) for r in conn.execute("SELECT name, groups FROM principals"))
        kind = _staging(conn)
        conn.execute(_STAGE.format(kind=kind, dim=int(checker.dim)))
        with _stage(stages, "read+check+copy"):
            n = _copy(conn, batches, registry, note)
            conn.execute("ANALYZE docket_import")
        conn.execute(_DROP)
        # the file's rows take the next n chunk rowids, in file order (what nextval one row at a
        # time would give them), so the postings need no join to find their chunk
        base = int(conn.execute("SELECT nextval(pg_get_serial_sequence('chunks', 'rowid')) AS b").fetchone()["b"])
        conn.execute("SELECT setval(pg_get_serial_sequence('chunks', 'rowid'), %s)", (base + max(n, 1) - 1,))
        with _stage(stages, "tsvector"):
            conn.execute(_PARALLEL)
            # OFFSET 0 keeps the subquery whole: flattened, the planner put the tsvector expression
            # both in the column and in the length's subquery, so each was computed twice (3x the
            # time), and all of it above the Gather, in one process
            conn.execute(f"CREATE {kind} TABLE docket_import_tv AS SELECT n, cls, tv, coalesce((SELECT "
                         "sum(cardinality(u.positions)) FROM unnest(tv) u), 0)::integer AS len FROM (SELECT s.n, s.cls, "
                         f"{pg._TSV} AS tv FROM docket_import s OFFSET 0) x")
            conn.execute("ANALYZE docket_import_tv")
        with _stage(stages, "chunks"):
            conn.execute(_CHUNKS, (base,))
        a0 = float(conn.execute("SELECT greatest(1.0, coalesce(avg(len), 1))::float8 AS a FROM docket_import_tv")
                   .fetchone()["a"])
        conn.execute("INSERT INTO meta VALUES ('bm25_avgdl', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                     (repr(a0),))
        impact = pg.IMPACT_SQL.format(tf="cardinality(u.positions)", len="t.len", a0="%s::float8")
        with _stage(stages, "postings"):
            conn.execute("INSERT INTO chunk_terms(term, chunk, tf, len, cls, w) SELECT u.lexeme, %s::bigint + t.n, "
                         f"cardinality(u.positions), t.len, t.cls, {impact} FROM docket_import_tv t, unnest(t.tv) u",
                         (base, a0))
        with _stage(stages, "document frequencies"):
            _document_frequencies(conn, kind)
        _at_least(conn, "maintenance_work_mem", "512MB", local=True)  # the sorts of the keyword indexes
        for name, sql in _REBUILD:
            with _stage(stages, name):
                conn.execute(sql)
        conn.execute("INSERT INTO acl_classes(id, entries, n, total_len) SELECT cls, min(acl), count(*), "
                     "coalesce(sum(len), 0) FROM chunks GROUP BY cls ORDER BY cls ON CONFLICT (id) DO UPDATE SET "
                     "entries = coalesce(acl_classes.entries, EXCLUDED.entries), n = EXCLUDED.n, "
                     "total_len = EXCLUDED.total_len")
        _versions(conn, checker, pg._redact(store.location))
        conn.execute("DROP TABLE docket_import, docket_import_tv, docket_import_df")
        conn.execute(pg._BUMP)
    _after(store, stages)
    return n


def _document_frequencies(conn: Any, kind: str) -> None:
    """Each (term, ACL class)'s document frequency (term_df, which keyword search sums over the
    classes an asker may read), counted from the tsvectors by a parallel CREATE TABLE AS (an
    INSERT ... SELECT runs in one process), then added in (a store emptied by deletes keeps rows at 0)."""
    _at_least(conn, "work_mem", "64MB", local=True)  # the count's hash table, in memory at 1M chunks
    conn.execute(f"CREATE {kind} TABLE docket_import_df AS SELECT u.lexeme AS term, t.cls, count(*) AS df "
                 "FROM docket_import_tv t, unnest(t.tv) u GROUP BY u.lexeme, t.cls")
    conn.execute("INSERT INTO term_df(term, cls, df) SELECT term, cls, df FROM docket_import_df ORDER BY term, cls "
                 "ON CONFLICT (term, cls) DO UPDATE SET df = term_df.df + EXCLUDED.df")  # rows a delete left at 0


def _copy(conn: Any, batches: Iterable[Batch], registry: Registry, note: AclResolution) -> int:
    from docket.store.postgres import acl_class

    n = 0
    with conn.cursor() as cur, cur.copy("COPY docket_import FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(_TYPES)
        for b in batches:
            c = b.cols
            resolved = {a: resolve_acl(a, registry, note) for a in dict.fromkeys(c["acl"])}
            typed = {a: (None if r is None else list(r), acl_class(r)) for a, r in resolved.items()}
            acls = list(map(typed.__getitem__, c["acl"]))
            for row in zip(range(n, n + len(b)), c["id"], c["doc"], c["version"], c["position"], c["status"], c["date"],
                           c["effective_to"], c["title"], c["section"], c["source_type"], c["trust"],
                           [a[0] for a in acls],
                           [json.dumps(m, ensure_ascii=False) if m else None for m in c["metadata"]], c["text"],
                           b.tokens, b.vectors, [a[1] for a in acls], repeat(None), strict=False):
                cp.write_row(row)
            n += len(b)
    return n


def _versions(conn: Any, checker: Checker, where: str) -> None:
    now = datetime.now(UTC)
    with conn.cursor() as cur, cur.copy("COPY versions FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["text", "int4", "text", "date", "date", "text", "text", "text", "int4", "timestamptz"])
        for v in sorted(checker.versions.values(), key=lambda v: (v.doc, v.version)):
            cp.write_row((v.doc, v.version, v.status, v.date, v.effective_to, v.title, f"{checker.where}:{v.first}",
                          v.content_hash(), v.n, now))


def _after(store: Any, stages: dict[str, float] | None) -> None:
    """The HNSW index, built once; the visibility map and planner statistics (outside the
    transaction: VACUUM cannot run in one)."""
    conn = store._conn
    _at_least(conn, "maintenance_work_mem", "1GB", local=False)  # the HNSW graph built in memory
    with _stage(stages, "hnsw"):
        store._ensure_hnsw()
    with _stage(stages, "vacuum"):
        conn.execute("VACUUM (ANALYZE) chunk_terms")
        conn.execute("VACUUM (ANALYZE) term_df")
        conn.execute("ANALYZE chunks")


def _staging(conn: Any) -> str:
    """UNLOGGED where this user may create tables in the schema the store's tables are made in
    (the first of its search path), else TEMP (the tsvectors then worked out by one process)."""
    row = conn.execute("SELECT coalesce(has_schema_privilege(current_schema(), 'CREATE'), false) AS ok").fetchone()
    return "UNLOGGED" if row["ok"] else "TEMP"


def _at_least(conn: Any, name: str, size: str, *, local: bool) -> None:
    """Raise a memory setting to `size` for this transaction (`local`) or session, never lower it:
    a server configured with more for a big build keeps it."""
    conn.execute("SELECT set_config(%s, %s, %s) WHERE pg_size_bytes(current_setting(%s)) < pg_size_bytes(%s)",
                 (name, size, local, name, size))
