"""Open a store by location: SQLite for a file path, PostgreSQL for a URL.

The factory lives apart from the protocol so the backends can import the protocol's types
without the protocol importing them back.
"""

from __future__ import annotations

from typing import Any

from docket.store.protocol import Store


def open_store(location: str, *, create: bool = True, records: Any = None) -> Store:
    """SQLite for a file path, PostgreSQL for a `postgresql://` (or `postgres://`) URL. `records`
    writes each chunk's feature record (docket.features.RecordWriter; the Session passes the
    brief's, with rendered token counts)."""
    if location.startswith(("postgresql://", "postgres://")):
        from docket.store.postgres import PostgresStore

        return PostgresStore(location, records=records)
    from docket.store.sqlite import SQLiteStore

    return SQLiteStore(location, create=create, records=records)
