"""PostgreSQL store, writes: a document version in one transaction, deletes and bulk loads
(`_PgWrite`, over `_PgRead`), with the write statements; the lock order is in docket.store.postgres."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from docket.errors import InputError
from docket.features import stored_features
from docket.store.access import Registry, resolve_acl
from docket.store.postgres_read import _PgRead, _stored
from docket.store.postgres_schema import _BUMP, _TSV, APPLY_DF, IMPACT_SQL, POSTING_COUNTS, _redact, acl_class
from docket.store.protocol import (
    DocumentVersion,
    WriteResult,
    check_version,
    plan_write,
)

#: a version's feature records, by chunk id (after its chunks are inserted, in the same pipeline)
_INSERT_FEATURES = ("INSERT INTO chunk_features(chunk, features) SELECT c.rowid, u.f FROM unnest(%s::text[], %s::text[]) "
                    "AS u(id, f) JOIN chunks c ON c.id = u.id")
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
t AS MATERIALIZED (SELECT s.*, {_TSV} AS tv FROM s),
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
#: a version's (term, ACL class) postings counted (read before its rows are replaced)
_VERSION_POSTINGS = POSTING_COUNTS.format(cond="c.doc = %s AND c.version = %s")
#: the document frequencies a version's write changes: its new postings counted, minus the
#: replaced rows' counts (given as arrays); after the postings, before the classes' statistics
_APPLY_VERSION_DF = APPLY_DF.format(deltas=_VERSION_POSTINGS + " UNION ALL SELECT * FROM unnest(%s::text[], %s::bigint[], "
                                    "%s::bigint[]) AS o(term, cls, d)")
#: the statistics of a version's rows, per ACL class (read before the rows are replaced)
_CLASS_STATS = "SELECT cls, count(*) AS n, coalesce(sum(len), 0) AS l FROM chunks WHERE doc = %s AND version = %s GROUP BY cls"
#: takes the postings of the chunks a delete removes out of the document frequencies ({cond} on `c`)
_DELETE_DF = APPLY_DF.format(deltas="SELECT term, cls, -n FROM (" + POSTING_COUNTS + ") AS p")
# removes chunks (their postings cascade, their features go with them) and takes them out of their
# classes' statistics (class order)
_DELETE_CHUNKS = """
WITH d AS (DELETE FROM chunks WHERE {cond} RETURNING rowid, cls, len),
f AS (DELETE FROM chunk_features WHERE chunk IN (SELECT rowid FROM d))
INSERT INTO acl_classes(id, n, total_len) SELECT cls, -count(*), -coalesce(sum(len), 0) FROM d GROUP BY cls ORDER BY cls
ON CONFLICT (id) DO UPDATE SET n = acl_classes.n + EXCLUDED.n, total_len = acl_classes.total_len + EXCLUDED.total_len
"""


class _PgWrite(_PgRead):
    """Writing a PostgreSQL store: versions, deletes, bulk loads."""

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
                cur_old_df = conn.execute(_VERSION_POSTINGS, (dv.doc, dv.version))
                cur_registry = conn.execute("SELECT name, groups FROM principals") if plain else None
                conn.execute(_CLAIM_A0, ([c.text for c in dv.chunks],))
                cur_a0 = conn.execute("SELECT value FROM meta WHERE key = 'bm25_avgdl'")
                pipe.sync()
                a0 = float(cur_a0.fetchone()["value"])
                existing = [_stored(r) for r in cur_versions.fetchall()]
                clash = cur_clash.fetchone()
                old = cur_old.fetchall()  # the rows this write replaces (stable: the document is ours)
                old_df = cur_old_df.fetchall()
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
                conn.execute(_APPLY_VERSION_DF, (dv.doc, dv.version, [r["term"] for r in old_df],
                                                 [r["cls"] for r in old_df], [-r["n"] for r in old_df]))
                conn.execute(_APPLY_STATS, (dv.doc, dv.version, [r["cls"] for r in old], [r["n"] for r in old],
                                            [r["l"] for r in old]))
            self._conn.execute(_BUMP)  # the meta row, last of every write's locks
        return plan

    def delete(self, doc: str, version: int | None = None) -> int:
        cols, args = (("doc",), (doc,)) if version is None else (("doc", "version"), (doc, version))
        cond = " AND ".join(f"{col} = %s" for col in cols)
        where = f"document {doc!r}" if version is None else f"document {doc!r} v{version}"

        def run() -> int:
            with self._lock, self._conn.transaction():
                # the document's lock, as a write takes it: a delete and a write of one document never interleave
                self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (doc,))
                n = 0
                if self._chunks_ready():
                    n = int(self._conn.execute(f"SELECT count(*) AS n FROM chunks WHERE {cond}", args).fetchone()["n"])
                    self._conn.execute(_DELETE_DF.format(cond=" AND ".join(f"c.{col} = %s" for col in cols)), args)
                    self._conn.execute(_DELETE_CHUNKS.format(cond=cond), args)
                self._conn.execute(f"DELETE FROM versions WHERE {cond}", args)
                self._conn.execute(_BUMP)
            return n

        return int(self._retry(run, f"deleting {where}", _redact(self.location)))
