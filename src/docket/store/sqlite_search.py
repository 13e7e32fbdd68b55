"""Searching a SQLite store: the index of the current generation, kept warm and in a snapshot file.

The index (sqlite_index) is loaded lazily and kept current after writes by this or any other
process: every write transaction bumps a generation counter and the change log says which rows
changed, so the warm index applies only those rows (it reloads in full when much has changed). A
process that loads a large index in full also writes it to `FILE.index` beside the database, and
the next process maps that file instead of reading every row, after checking it against the
database (store id, write token, counts, access digest): a file it cannot vouch for is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from docket.blas import BlasThreads as _BlasThreads
from docket.store import snapshot as _snapshot_file
from docket.store.protocol import Filters
from docket.store.sqlite_index import _INDEX_COLS, _dense_top, _Index, _Rows
from docket.store.sqlite_schema import SCHEMA_VERSION
from docket.store.sqlite_write import _Writes
from docket.store.terms import query_terms

_SNAPSHOT_LAYOUT = f"sqlite-index-1/schema-{SCHEMA_VERSION}"
#: the smallest store whose index is kept in a snapshot file by default (smaller ones load in
#: well under a second); env DOCKET_INDEX_SNAPSHOT: 0 = never, 1 = whatever the size
SNAPSHOT_MIN_ROWS = 20_000

#: BLAS threads for SQLite's dense scan (env DOCKET_DENSE_THREADS, default 1; 0 leaves BLAS as
#: configured). The scan is one memory-bound float32 mat-vec, which more threads barely speed up,
#: and OpenBLAS's workers spin-wait for a while after each call, taking a core from the Python
#: work that follows (BM25, the fetch, assembly): on the 2-core bench machine warm retrieve p50
#: at 100k chunks went from ~80 to ~50 ms with one thread (docs/store.md, speed at scale).
_DENSE_BLAS = _BlasThreads()



def _access_digest(arrays: dict[str, np.ndarray], strings: dict[str, list[str]]) -> str:
    """A hash of what decides who may read each row (row ids, public flags, ACL entries and their
    rows): a snapshot whose access arrays were damaged or edited is never used."""
    h = hashlib.sha256()
    for name in ("rowids", "public", "acl_sizes", "acl_rows"):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode() + a.dtype.str.encode() + str(a.shape).encode())
        h.update(a.data.cast("B") if a.size else b"")
    h.update(json.dumps(strings["acl_names"]).encode())
    return h.hexdigest()


def _fingerprint_of(m: _Index) -> dict[str, int]:
    """`SQLiteStore._fingerprint` as the index `m` holds it."""
    live = np.ones(len(m.ids), dtype=bool) if m.alive is None else m.alive
    acl = sum(int(live[ix].sum()) for ix in m.acl.values())
    return {"check_rows": int(live.sum()), "check_top": int(m.rowids[live].max()) if live.any() else 0,
            "check_acl": acl}


def _snapshots_wanted(rows: int | None) -> bool:
    """Whether to read (rows None) or write (a full load of `rows`) the index snapshot."""
    setting = os.environ.get("DOCKET_INDEX_SNAPSHOT", "").strip().lower()
    if setting in ("0", "off", "false", "no"):
        return False
    return rows is None or setting in ("1", "on", "true", "yes") or rows >= SNAPSHOT_MIN_ROWS




class _Search(_Writes):
    """The search side of `SQLiteStore`."""

    _index: _Index | None = None
    #: (change-log position, rows in rowid order, first rowid) a load wrote (`_Dense.after_load`)
    _load_rows: tuple[int, list[_Rows], int] | None = None

    # --- search -----------------------------------------------------------------------------
    def generation(self) -> str:
        """The write counter: it changes whenever any process writes to the store."""
        return self._generation()

    def _search_index(self) -> _Index:
        """The index of the current generation (of the snapshot, inside `snapshot()`): the warm
        one when nothing changed, the warm one with the logged changes applied after a write
        (milliseconds for a document), a full load otherwise."""
        with self._lock, self.snapshot():
            gen = self._generation()
            m = self._index
            if m is not None and m.generation == gen:
                return m
            fresh = self._refreshed_index(m, gen) if m is not None else self._snapshot_index(gen)
            self._index = fresh if fresh is not None else self._load_index(gen, save=True)
            return self._index

    def _log_end(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM chunk_log").fetchone()
        return int(row[0] or 0)

    def _index_rows(self, where: str = "", args: Sequence[Any] = ()) -> list[Any]:
        return self._conn.execute(f"SELECT {_INDEX_COLS} FROM chunks {where} ORDER BY rowid", args).fetchall()

    def _load_index(self, gen: str, save: bool = False) -> _Index:
        seq = self._log_end()
        given, self._load_rows = self._load_rows, None
        dim = int(self.meta().get("dim", "0") or 0)
        if given is not None and given[0] == seq:  # the rows a load wrote, and nothing since (`after_load`)
            got = _Rows.joined(given[1], np.arange(given[2], given[2] + sum(len(p.ids) for p in given[1])))
        else:
            got = _Rows.of(self._index_rows(), dim)
        acl_rows = self._conn.execute("SELECT principal, chunk FROM chunk_acl").fetchall()
        index = _Index.load(got, [(r[0], r[1]) for r in acl_rows], gen, seq)
        token = self._token(gen) if save and self._store_id and self._tokens else None
        if token is not None and _snapshots_wanted(len(index.ids)) and self.path.is_file():
            try:
                fields, arrays, strings = index.snapshot_parts()
                fields = {"layout": _SNAPSHOT_LAYOUT, "store_id": self._store_id, "token": token, **fields,
                          **self._fingerprint(), "access_digest": _access_digest(arrays, strings)}
                _snapshot_file.write(self.snapshot_path, fields, arrays, strings,
                                     mode=stat.S_IMODE(self.path.stat().st_mode))  # readable by who reads the store
            except (OSError, ValueError):
                pass  # a cache: a read-only directory or a full disk costs the next process a full load, nothing else
        return index

    @property
    def snapshot_path(self) -> Path:
        """Where the search index is kept between processes (see `_snapshot_index`)."""
        return self.path.with_name(self.path.name + ".index")

    def _snapshot_index(self, gen: str) -> _Index | None:
        """The index from the snapshot file a process wrote after its full load, brought up to
        date from the change log, or None (no usable file, or it is not an earlier state of this
        store: a full load follows, which writes a new one). A new process then maps the vector
        matrix and postings instead of reading every row (seconds at 100k, most of a minute at 1M)."""
        if not _snapshots_wanted(None) or not self._store_id or not self._tokens:
            return None
        got = _snapshot_file.read(self.snapshot_path)
        if got is None:
            return None
        fields, arrays, strings = got
        try:
            if (fields.get("layout") != _SNAPSHOT_LAYOUT or fields.get("store_id") != self._store_id
                    or int(fields["generation"]) > int(gen) or fields.get("token") is None
                    or self._token(str(fields["generation"])) != fields["token"]):
                return None  # another store, or not an earlier state of this one
            m = _Index.from_snapshot(fields, arrays, strings)
            counts = _fingerprint_of(m)
            if (counts != {k: int(fields[k]) for k in counts}
                    or _access_digest(arrays, strings) != fields.get("access_digest")):
                return None  # the arrays do not hold what the file says they hold
        except (KeyError, ValueError, TypeError):
            return None
        if m.seq > self._log_end():
            return None  # written for a later state than this file holds (e.g. a restored backup)
        fresh = self._refreshed_index(m, gen)
        if fresh is None:
            return None
        if _fingerprint_of(fresh) != self._fingerprint():
            return None  # the rows or their ACL entries are not what the file says
        return fresh

    def _token(self, gen: str) -> str | None:
        """The write token of generation `gen` (None: written before tokens, or pruned)."""
        row = self._conn.execute("SELECT token FROM write_tokens WHERE generation = ?", (int(gen),)).fetchone()
        return str(row[0]) if row is not None else None

    def _fingerprint(self) -> dict[str, int]:
        """Counts the index must agree with (read in the caller's snapshot): rows, highest rowid,
        ACL entries."""
        # count(*) reads the smallest index and max(rowid) one page; a sum over a column would read
        # every row (most of the cold start the snapshot saves, at 1M chunks)
        rows, top = self._conn.execute("SELECT count(*), max(rowid) FROM chunks").fetchone()
        acl = self._conn.execute("SELECT count(*) FROM chunk_acl").fetchone()[0]
        return {"check_rows": int(rows), "check_top": int(top or 0), "check_acl": int(acl)}

    def _refreshed_index(self, m: _Index, gen: str) -> _Index | None:
        """`m` with the changes logged since it was built, or None when a full load is due (the
        log was pruned past it, too much changed, a first load was empty)."""
        # two queries: SQLite answers a lone min() or max() from the key, both at once by a scan
        lo = self._conn.execute("SELECT min(seq) FROM chunk_log").fetchone()[0]
        hi = self._conn.execute("SELECT max(seq) FROM chunk_log").fetchone()[0]
        if hi is None:  # an empty log: nothing ever changed, unless it was emptied behind this index
            return replace(m, generation=gen) if m.seq == 0 else None
        if int(hi) == m.seq:  # no chunk changed (settings, principals or versions only)
            return replace(m, generation=gen)
        if int(lo) > m.seq + 1 or m.base_rows == 0:
            return None
        changed = sorted({int(r[0]) for r in self._conn.execute("SELECT chunk FROM chunk_log WHERE seq > ?", (m.seq,))})
        if m.worn(len(changed)):
            return None
        rows: list[Any] = []
        acl_rows: list[tuple[str, int]] = []
        for start in range(0, len(changed), 500):
            part = changed[start : start + 500]
            marks = ",".join("?" * len(part))
            rows += self._index_rows(f"WHERE rowid IN ({marks})", part)
            acl_rows += [(r[0], r[1]) for r in
                         self._conn.execute(f"SELECT principal, chunk FROM chunk_acl WHERE chunk IN ({marks})", part)]
        got = _Rows.of(rows, m.mat.shape[1])
        if got.mat.shape[1] != m.mat.shape[1]:
            return None
        return m.refreshed(np.asarray(changed, dtype=np.int64), got, acl_rows, gen, int(hi))

    def _dense_exact(self, m: _Index, q: np.ndarray, k: int, mask: np.ndarray | None) -> list[tuple[str, float]]:
        """Exact cosine over the rows `mask` passes (every row: None), the k best, best first."""
        with _DENSE_BLAS():
            if mask is not None:
                idx = np.flatnonzero(mask)
                if idx.size == 0:
                    return []
                scores = m.mat[idx] @ q if idx.size < len(m.ids) // 4 else (m.mat @ q)[idx]
            else:
                idx = None
                scores = m.mat @ q
            rows_of = idx if idx is not None else np.arange(scores.shape[0])
            top, exact = _dense_top(scores, rows_of, m.mat, q, m.rowids, k)
        ids = m.ids
        return [(ids[r], x) for r, x in zip(rows_of[top].tolist(), exact.tolist())]

    def search_bm25(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        with self._lock, self.snapshot():
            m = self._search_index()
            marks = ",".join("?" * len(terms))
            term_ids = [r[0] for r in self._conn.execute(f"SELECT id FROM terms WHERE term IN ({marks})", terms)]
        return m.bm25(sorted(term_ids), k, filters)

