"""The store handles a Session holds: one shared SQLite reader (and its in-memory vector matrix)
or a PostgreSQL connection per thread, and one writer, used one write at a time."""

from __future__ import annotations

import threading

from docket.brief.sizer import feature_record
from docket.caches import Caches
from docket.errors import UnavailableError
from docket.store.factory import open_store
from docket.store.protocol import Store


class StoreHandles:
    """Store handles for many threads: SQLite shares one reader (and its in-memory vector matrix);
    PostgreSQL gives each thread its own connection. Writes go through one writer, one at a time."""

    def __init__(self, location: str, create: bool, read_only: bool = False, file_mode: int | None = None,
                 caches: Caches | None = None) -> None:
        self.location = location
        #: the session's caches: every store opened here offers the rows it reads to their feature cache
        self.features = caches.features if caches is not None else None
        self.file_mode = file_mode
        self.create = create
        self.read_only = read_only  # the shared SQLite reader opens with mode=ro (docket ask)
        self.shared = not location.startswith(("postgresql://", "postgres://"))
        self._local = threading.local()
        self._all: list[Store] = []
        self._lock = threading.Lock()
        self.write_lock = threading.Lock()
        self._reader: Store | None = None
        self._writer: Store | None = None
        self.closed = False
        self.reader()  # fail now, with the store's own message, if it cannot be opened

    def _open(self) -> Store:
        st = open_store(self.location, create=self.create, read_only=self.read_only, file_mode=self.file_mode,
                        records=feature_record, features=self.features)
        with self._lock:
            self._all.append(st)
        return st

    def reader(self) -> Store:
        if self.closed:
            raise UnavailableError("the session is closed")
        if self.shared:
            if self._reader is None:
                with self._lock:
                    if self._reader is None:
                        self._reader = open_store(self.location, create=self.create, read_only=self.read_only,
                                                  file_mode=self.file_mode, records=feature_record,
                                                  features=self.features)
                        self._all.append(self._reader)
            return self._reader
        st = getattr(self._local, "store", None)
        if st is None:
            st = self._local.store = self._open()
        return st

    def writer(self) -> Store:
        if self.closed:
            raise UnavailableError("the session is closed")
        if self._writer is None:
            self._writer = self._open()
        return self._writer

    def close(self) -> None:
        self.closed = True
        with self._lock:
            for st in self._all:
                try:
                    st.close()
                except Exception:  # closing is best effort; the process may be shutting down
                    pass
            self._all.clear()
        self._reader = self._writer = None
        self._local = threading.local()


class nolock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def redact(location: str) -> str:
    """A store location without the password of a connection URL."""
    if "://" in location and "@" in location:
        head, rest = location.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        user = cred.split(":", 1)[0]
        return f"{head}://{user}:***@{host}" if ":" in cred else location
    return location


__all__ = ["StoreHandles", "nolock", "redact"]
