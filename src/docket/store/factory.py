"""Open a store by location: SQLite for a file path, PostgreSQL for a URL.

The factory lives apart from the protocol so the backends can import the protocol's types
without the protocol importing them back.
"""

from __future__ import annotations

from typing import Any

from docket.features import FeatureCache
from docket.store.protocol import Store


def open_store(location: str, *, create: bool = True, read_only: bool = False, file_mode: int | None = None,
               records: Any = None, features: FeatureCache | None = None) -> Store:
    """SQLite for a file path, PostgreSQL for a `postgresql://` (or `postgres://`) URL.
    `read_only` (SQLite): for commands that only read, nothing is created or changed;
    `file_mode` (SQLite): the permission bits of the store's files (default 0600 for a new one);
    `records` writes each chunk's feature record (docket.features.RecordWriter; the Session and
    `docket index` pass the brief's, with rendered token counts); `features`: the feature cache the
    rows read are offered to (docket.features.FeatureCache: a Session passes its own,
    docket.caches; default the process-wide one)."""
    if location.startswith(("postgresql://", "postgres://")):
        from docket.store.postgres import PostgresStore

        return PostgresStore(location, read_only=read_only, records=records, features=features)
    from docket.store.sqlite import SQLiteStore

    return SQLiteStore(location, create=create, read_only=read_only, file_mode=file_mode, records=records, features=features)
