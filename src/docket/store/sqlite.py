"""The embedded default store: one SQLite file, no server.

WAL journal; each document version is written inside one `BEGIN IMMEDIATE` transaction, so a
process killed mid-index leaves every document either in its old or its new state. The stdlib
`sqlite3` cannot load extensions (no sqlite-vec), so search runs in numpy over an index loaded
lazily from the file and kept current after writes (by this or any other process: every write
transaction bumps a generation counter, and triggers log which chunk rows changed, so the warm
index applies only those rows; it reloads in full when much has changed): dense search is exact
cosine over a float32 matrix of the vector BLOBs (approximate, through a faiss IVF index that
re-checks and re-scores its candidates, from 50,000 rows up); keyword search is BM25 (k1 1.2, b 0.75, the
PostgreSQL backend's formula) over postings built from each chunk's stored term ids, with IDF,
document count and average length taken over the rows the principal may read, so a ranking
never depends on text the asker cannot see. Metadata and ACL filters are numpy masks applied
before ranking: a filtered-out chunk never gets a rank. `snapshot()` holds one read transaction,
so searches and fetches inside it see one state of the file.

The store is split by job: `sqlite_schema` (the file, its schema and migrations, opening),
`sqlite_read` (chunks, versions, export), `sqlite_write` (transactions and the change log),
`sqlite_index` (the in-memory matrix and postings), `sqlite_search` (keeping that index
current, its snapshot file, BM25 and exact dense search) and `sqlite_dense` (dense search,
approximate through `sqlite_ann`'s faiss IVF index above a size). `SQLiteStore` joins them.
"""

from __future__ import annotations

from docket.store.sqlite_ann import AnnSettings
from docket.store.sqlite_dense import _Dense
from docket.store.sqlite_schema import _MIGRATIONS, SCHEMA_VERSION
from docket.store.sqlite_search import _DENSE_BLAS, SNAPSHOT_MIN_ROWS, _BlasThreads

__all__ = ["AnnSettings", "SCHEMA_VERSION", "SNAPSHOT_MIN_ROWS", "SQLiteStore", "_BlasThreads", "_DENSE_BLAS", "_MIGRATIONS"]


class SQLiteStore(_Dense):
    """A docket store in one SQLite file (see the module docstring for the guarantees)."""

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


