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

The store is split by job: `postgres_schema` (connection, schema and migrations, opening,
settings and principals), `postgres_read` (fetches, versions, snapshots, search, export) and
`postgres_write` (version writes, deletes, bulk loads), each a base class of the next;
`PostgresStore` joins them. The names other modules and tests use are re-exported here.
"""

from __future__ import annotations

import time  # noqa: F401 - re-exported: tests patch postgres.time.sleep (the retry waits)

from docket.store.postgres_read import _readable_sql, _stored, _vec, _where_sql  # noqa: F401 - re-exported
from docket.store.postgres_schema import (  # noqa: F401 - re-exported
    _BASE_SCHEMA,
    _BUMP,
    _CHUNKS_SCHEMA,
    _COLS,
    _DDL_LOCK,
    _FROM,
    _HNSW,
    _MIGRATIONS,
    _ORDER,
    _TABLE_EXISTS,
    _TRIES,
    _TSV,
    IMPACT_SQL,
    SCHEMA_VERSION,
    _connect,
    _redact,
    acl_class,
)
from docket.store.postgres_write import (  # noqa: F401 - re-exported
    _APPLY_STATS,
    _CLAIM_A0,
    _CLASS_STATS,
    _DELETE_CHUNKS,
    _IMPACT,
    _INSERT_CHUNKS,
    _INSERT_FEATURES,
    _PgWrite,
)
from docket.store.protocol import chunk_from_row  # noqa: F401 - re-exported


class PostgresStore(_PgWrite):
    """A docket store in a PostgreSQL database with the pgvector extension."""

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
