"""Dense search on a SQLite store: exact below a size, approximate (faiss IVF of 8-bit codes, sqlite_ann) above.

Exact cosine over the whole matrix costs ~1 ms per 10,000 rows; at 100k rows and up most of a
warm `ask` was that scan (issue 22). From `AnnSettings.min_rows` live rows up, a search asks the
IVF index for a short list of candidates instead (ranked by 8-bit codes), then checks and
re-scores them here, so that

- access stays exact: the index searches under an `IDSelectorBitmap` of the rows the filter
  passes (the principal's readable rows and the metadata filters), and every candidate is
  checked again against that mask before it is scored;
- scores are exact: the short list (2k, at least k + 16) is re-scored from the store's own
  float32 matrix as exact search scores it (float64 near the k-th, ties by rowid), and the k best
  of it by those scores are the answer;
- never fewer than k: when fewer than min(k, rows passing the filter) come back, the search is
  exact over the rows the filter passes. It is exact from the start when those rows are few
  (`exact_below`: "the asker can read only a small part of the store"), on request
  (`Filters.exact`, `docket ask --exact`) and with DOCKET_DENSE_SEARCH=exact.

The index file `FILE.ann` beside the database follows writes through the change log, and a
missing, stale, damaged or foreign file is rebuilt, never trusted (`_ann_from_file`).
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import numpy as np

from docket.errors import InputError
from docket.store import sqlite_ann as _ann
from docket.store.protocol import Filters
from docket.store.sqlite_ann import AnnIndex, AnnSettings, LoadBuild
from docket.store.sqlite_index import _dense_top, _Index, _Rows
from docket.store.sqlite_search import _Search

#: a catch-up from the log that touched this share of the index writes the file again
_REWRITE_SHARE = 0.02


def _shortlist(k: int) -> int:
    """Candidates asked of the index for k results: the codes' scores err by up to ~2e-3, so rows near
    the k-th can swap places; 2k (at least k + 16) held every row of the exact top k that the
    probed lists hold, on MiniLM vectors at 100k and 1M chunks (docs/store.md)."""
    return k + max(16, k)


def _exact_scores(m: _Index, rowids: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The store's own cosines of `rowids` with `q`; -inf for a rowid it holds no live row of."""
    pos = m.positions(np.asarray(rowids, dtype=np.int64))
    out = np.full(pos.shape[0], -np.inf, dtype=np.float64)
    held = pos >= 0
    out[held] = m.mat[pos[held]] @ np.asarray(q, dtype=np.float32)
    return out


class _Dense(_Search):
    """`search_dense` of `SQLiteStore`, and the approximate index it keeps."""

    #: None: AnnSettings.from_env() at the first search (tests and callers may set one)
    ann: AnnSettings | None = None
    _ann: AnnIndex | None = None
    #: the index of rows an import is writing, built beside the load (`after_load`)
    _ann_load: LoadBuild | None = None
    _ann_applied = 0  # changes applied to the in-memory index since it was read or written
    #: how the last dense search ran: "exact", "approximate" or "exact-fallback" (tests, traces)
    last_dense = ""

    @property
    def ann_path(self) -> Path:
        """Where the approximate index is kept between processes."""
        return self.path.with_name(self.path.name + ".ann")

    def ann_settings(self) -> AnnSettings:
        if self.ann is None:
            self.ann = AnnSettings.from_env()
        return self.ann

    def search_dense(self, qvec: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        m = self._search_index()
        if not m.ids or k <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if q.shape[0] != m.mat.shape[1]:
            raise InputError(f"query vector has {q.shape[0]} dimensions, the store holds {m.mat.shape[1]}", field="vector")
        mask = m.mask(filters, m.readable(filters))
        settings = self.ann_settings()
        live = m.live_rows()
        selected = live if mask is None else int(mask.sum())
        if selected == 0:
            self.last_dense = "exact"  # nothing passes the filter: nothing to search
            return []
        self.last_dense = "exact"
        if not filters.exact and settings.wanted(live) and selected >= settings.exact_below:
            got = self._dense_approximate(m, q, k, mask, selected, live, settings)
            if got is not None:
                self.last_dense = "approximate"
                return got
        return self._dense_exact(m, q, k, mask)

    def _dense_approximate(self, m: _Index, q: np.ndarray, k: int, mask: np.ndarray | None, selected: int,
                           live: int, settings: AnnSettings) -> list[tuple[str, float]] | None:
        """The k best through the IVF index, or None: no index, the probes would scan more rows
        than the filter passes (an exact scan of those is cheaper), or fewer than k came back
        ("exact-fallback")."""
        with self._lock:
            ann = self._ann_current(m, settings)
            if ann is None:
                return None
            nprobe = _ann.probes(settings.nprobe, selected / live)
            if settings.cheaper_exact and min(nprobe, ann.nlist) * ann.rows / ann.nlist >= selected:
                return None
            bitmap = None if mask is None else _ann.bitmap_of(m.rowids[mask])
            found = ann.search(q, _shortlist(k), nprobe, bitmap)
        pos = m.positions(found)
        pos = pos[pos >= 0]
        if mask is not None:
            pos = pos[mask[pos]]  # the index proposes; the store's own mask decides
        if pos.shape[0] < min(k, selected):
            self.last_dense = "exact-fallback"
            return None
        rows = m.mat[pos]  # gathered once: scored here, the contenders re-scored from it
        top, exact = _dense_top(rows @ q, np.arange(pos.shape[0]), rows, q, m.rowids[pos], k)
        ids = m.ids
        return [(ids[r], x) for r, x in zip(pos[top].tolist(), exact.tolist())]

    # --- keeping the index ---------------------------------------------------------------------
    def _ann_current(self, m: _Index, settings: AnnSettings) -> AnnIndex | None:
        """The IVF index holding the live rows of `m`: the warm one (with the changes logged since
        applied), else the file's (checked), else a new one (written to the file). None without
        faiss. Called under the store's lock."""
        if not _ann.available():
            return None
        a = self._ann
        if a is not None and a.seq != m.seq:
            a = self._ann_caught_up(a, m) if a.seq < m.seq else None
        if a is None:
            a = self._ann_from_file(m)
        if a is None or a.worn():
            a = self._ann_build(m, settings)
        elif self._ann_applied > max(1000, _REWRITE_SHARE * a.rows):
            self._ann_save(a, m)
        self._ann = a
        return a

    def _ann_caught_up(self, a: AnnIndex, m: _Index) -> AnnIndex | None:
        """`a` with the rows changed between its log position and `m`'s applied (taken out, and
        added again from `m` where they still live), or None when the log no longer reaches back."""
        with self.snapshot():
            lo = self._conn.execute("SELECT min(seq) FROM chunk_log").fetchone()[0]
            if lo is None or int(lo) > a.seq + 1:
                return None
            changed = np.unique(np.fromiter(
                (r[0] for r in self._conn.execute("SELECT chunk FROM chunk_log WHERE seq > ? AND seq <= ?",
                                                  (a.seq, m.seq))), dtype=np.int64))
        if changed.shape[0] > a.rows // 4 + 1000:
            return None  # a rebuild trains lists that fit what the store now holds
        pos = m.positions(changed)
        pos = pos[pos >= 0]
        try:
            a.apply(changed, m.mat[pos], m.rowids[pos], m.seq)
        except RuntimeError:
            self._ann = None
            return None
        self._ann_applied += int(changed.shape[0])
        return a

    def after_load(self, cur: Any, parts: list[_Rows]) -> None:
        """Keep the rows a load has just written through `cur` (in its transaction, before the
        commit; `parts` as `_Rows.of` would read them back, in the order written) for the first
        search: its full load takes them instead of reading every row back (`_load_index`), and
        the IVF index of their vectors is built meanwhile when that search will want one
        (sqlite_ann.LoadBuild: the index `_ann_build` would make). Both only if nothing else is
        written before that search (same change-log position); rows that do not run without a gap
        from the first rowid are read back as usual."""
        early, self._ann_load = self._ann_load, None
        self.load_done()
        n = sum(len(p.ids) for p in parts)
        lo, hi, count = cur.execute("SELECT min(rowid), max(rowid), count(*) FROM chunks").fetchone()
        if not n or count != n or lo is None or hi - lo + 1 != n:
            if early is not None:
                early.drop()
            return
        seq = int(cur.execute("SELECT max(seq) FROM chunk_log").fetchone()[0] or 0)
        self._load_rows = (seq, parts, int(lo))
        mats = [p.mat for p in parts]
        if early is not None and early.started_for(mats):
            self._ann_load = early.rows_at(int(lo), seq)  # training since the last batch was checked
            return
        if early is not None:
            early.drop()
        settings = self.ann_settings()
        if settings.wanted(n) and n >= settings.exact_below and _ann.available():
            self._ann_load = LoadBuild(mats, settings.nlist).rows_at(int(lo), seq)

    def ann_ahead(self, rows: int, read: Any) -> None:
        """Start training the IVF index of a load of `rows` rows before they are checked, from the
        sample rows `read(picks)` gives (sqlite_ann.LoadBuild.ahead), when the first search will
        want one and the training runs on one thread (below `ONE_THREAD_BELOW` rows: it then
        shares the second core with the load's text work instead of taking both from the writer).
        `ann_before_load` hands it the checked vectors."""
        self.load_done()
        settings = self.ann_settings()
        if (rows and rows < _ann.ONE_THREAD_BELOW and settings.wanted(rows) and rows >= settings.exact_below
                and _ann.available()):
            self._ann_load = LoadBuild.ahead(rows, read, settings.nlist)

    def ann_before_load(self, vectors: list[np.ndarray]) -> None:
        """Start training the IVF index of a load's rows from their vectors (every row checked, in
        file order, none written yet), when the first search will want one: `after_load` gives
        it their rowids and log position once they are written. A build started `ann_ahead`
        for as many rows takes the vectors instead."""
        early = self._ann_load
        if early is not None and early.checked(vectors):
            return
        self.load_done()
        n = sum(v.shape[0] for v in vectors)
        settings = self.ann_settings()
        if n and settings.wanted(n) and n >= settings.exact_below and _ann.available():
            self._ann_load = LoadBuild(list(vectors), settings.nlist)

    def load_done(self) -> None:
        """Forget what `after_load` kept and no search took (waiting for the build's thread)."""
        loaded, self._ann_load, self._load_rows = self._ann_load, None, None
        if loaded is not None:
            loaded.drop()

    def _ann_from_file(self, m: _Index) -> AnnIndex | None:
        """The index in `FILE.ann`, brought up to `m`, if the file can be vouched for: written for
        this database (store id) at a state it went through (the write token of its generation),
        no later than `m`, and, once the log is applied, holding exactly the live rowids of `m`
        (count, sum, sum of squares) with a sample of rows finding themselves."""
        if not self._store_id or not self._tokens:
            return None
        got = _ann.read(self.ann_path, mapped=True)  # lists mapped: a cold first search reads only what it probes
        if got is None:
            return None
        a, stamp = got
        try:
            if (stamp.get("store_id") != self._store_id or int(stamp["dim"]) != m.mat.shape[1]
                    or stamp.get("token") is None or self._token(str(stamp["generation"])) != stamp["token"]
                    or a.seq > m.seq):
                return None
        except (KeyError, TypeError, ValueError):
            return None
        self._ann_applied = 0
        if a.seq < m.seq and self._ann_caught_up(a, m) is None:
            return None
        live = m.live_in_rowid_order()
        if _ann.ids_digest(a.ids()) != _ann.ids_digest(m.rowids[live]):
            return None
        sample = live[_ann.check_rows(live.shape[0])]  # 16 rows: a copy of the matrix would read all of it
        if not _ann.self_check(a, m.mat[sample], m.rowids[sample], lambda ids, q: _exact_scores(m, ids, q)):
            return None
        return a

    def _ann_build(self, m: _Index, settings: AnnSettings) -> AnnIndex:
        live = m.live_in_rowid_order()
        full = live.shape[0] == len(m.ids) and bool((live == np.arange(len(m.ids))).all())
        mat = m.mat if full else m.mat[live]
        loaded, self._ann_load = self._ann_load, None
        a = loaded.take(mat, m.rowids[live], m.seq) if loaded is not None and loaded.nlist == settings.nlist else None
        if a is None:
            a = AnnIndex.build(mat, m.rowids[live], m.seq, settings.nlist)
        self._ann_save(a, m)
        return a

    def _ann_save(self, a: AnnIndex, m: _Index) -> None:
        """Write `a` to `FILE.ann` with its stamp; a read-only folder or a full disk only means no file."""
        self._ann_applied = 0
        token = self._token(m.generation) if self._store_id and self._tokens else None
        if token is None or not self.path.is_file():
            return
        stamp = {"store_id": self._store_id, "generation": m.generation, "token": token, "dim": int(m.mat.shape[1])}
        try:
            _ann.write(self.ann_path, a, stamp, mode=stat.S_IMODE(self.path.stat().st_mode))
        except (OSError, RuntimeError):
            pass  # a cache: the next process builds its own
