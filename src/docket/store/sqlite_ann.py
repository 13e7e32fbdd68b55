"""Approximate dense search for a large SQLite store: a faiss IVF index of 8-bit codes kept in `FILE.ann`.

Why IVF (faiss-cpu `IndexIVFScalarQuantizer`, inner product over the unit vectors): it deletes
rows (`remove_ids`), so it follows the store's writes row by row; and it searches under an
`IDSelector`, so a filter (the principal's readable rows, metadata) is applied inside the scan.
faiss's HNSW cannot delete and usearch's Python API cannot filter (issue 22).

Why 8-bit codes (`QT_8bit` of each vector's residual from its list's centroid) instead of the
float32 vectors (`IndexIVFFlat`, until issue 22's fourth round): a probe reads a quarter of the
bytes, and the search is bound by memory bandwidth (64 probes at 1M chunks read ~32,000 vectors).
The codes only rank candidates; the caller (sqlite_dense) re-scores a short list of them exactly
from the store's own float32 matrix, and on MiniLM vectors a short list of 2k held every row the
float32 index would have found (docs/store.md).

The index only *proposes* candidates, keyed by chunk rowid. The caller maps them to its own rows,
drops any the filter does not pass, re-scores them exactly from its own matrix and falls back to
exact search when fewer than k come back; so a damaged or foreign file can cost recall, never a
chunk the asker may not read and never a wrong score. A file is still checked before it is used
(`read`): its trailer (magic, layout, length) must be whole, and the caller checks the stamp
(store id, write token, change-log position), the row count and a digest of the rowids it holds,
and that a sample of rows finds itself.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from docket.errors import InputError
from docket.safeio import replacing

#: what ends an index file: the stamp (JSON), its length (8 bytes, little endian), this magic
#: (02: 8-bit codes; a float32 `IndexIVFFlat` file of layout 1 is rebuilt, never read)
MAGIC = b"DKTANN02"
LAYOUT = "sqlite-ann-2"

#: how many rows of its own a check searches for (`self_check`)
_CHECK_ROWS = 16


@dataclass(frozen=True)
class AnnSettings:
    """When dense search is approximate, and how hard it looks.

    `mode`: "auto" (approximate from `min_rows` live rows up, exact below) or "exact" (never
    approximate). `nprobe`: inverted lists scanned per search (docs/store.md: chosen by measured
    recall@k on MiniLM vectors). `exact_below`: a search whose filter leaves fewer rows than this
    is exact over those rows (a scan of them costs less than the probes would, and a very
    selective filter is where IVF loses recall). `nlist` 0: `nlist_for(rows)`. `cheaper_exact`:
    a search whose probes would scan more rows than its filter passes is exact instead (tests turn
    it off to send every search through the index)."""

    mode: str = "auto"
    min_rows: int = 50_000
    nprobe: int = 64
    exact_below: int = 20_000
    nlist: int = 0
    cheaper_exact: bool = True

    @classmethod
    def from_env(cls) -> AnnSettings:
        """The defaults, with DOCKET_DENSE_SEARCH (auto / exact) and DOCKET_ANN_MIN_ROWS applied."""
        mode = os.environ.get("DOCKET_DENSE_SEARCH", "auto").strip().lower() or "auto"
        if mode not in ("auto", "exact"):
            raise InputError(f"must be auto or exact, got {mode!r}", field="DOCKET_DENSE_SEARCH")
        raw = os.environ.get("DOCKET_ANN_MIN_ROWS", "").strip()
        min_rows = cls.min_rows
        if raw:
            try:
                min_rows = int(raw)
            except ValueError:
                min_rows = -1
            if min_rows < 0:
                raise InputError(f"must be a whole number of rows (0 or more), got {raw!r}", field="DOCKET_ANN_MIN_ROWS")
        return cls(mode=mode, min_rows=min_rows)

    def wanted(self, rows: int) -> bool:
        return self.mode == "auto" and rows >= max(1, self.min_rows)


def nlist_for(rows: int) -> int:
    """Inverted lists for `rows` vectors: 2·sqrt(rows), at least 39 training points each. Measured
    on MiniLM vectors (docs/store.md): at 100k rows 2·sqrt (632 lists) reached recall@100 0.993 at
    nprobe 64 where 4·sqrt (1,264) reached 0.989, and trained in 8 s instead of 37 s."""
    return max(1, min(rows // 39, int(2 * math.sqrt(rows))))


def probes(nprobe: int, share: float) -> int:
    """Lists to probe when a filter passes `share` of the rows: each probed list then holds about
    `share` as many passing rows, so probe more (at most 16x) to scan about as many of them."""
    return nprobe if share >= 0.5 else math.ceil(nprobe * min(16.0, 0.5 / share))


def available() -> bool:
    """Whether faiss can be imported (it is a core dependency; a broken install means exact search)."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def new_ivf(dim: int, nlist: int) -> Any:
    """An untrained IVF index of `nlist` lists holding 8-bit codes of each vector's residual from
    its list's centroid (per-dimension ranges trained on the residuals: finer steps than over the
    vectors themselves), scored by inner product."""
    import faiss

    # faiss's Python constructor keeps a reference to the quantizer: it lives as long as the index
    return faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist, faiss.ScalarQuantizer.QT_8bit,
                                         faiss.METRIC_INNER_PRODUCT, True)


def is_ours(index: Any) -> bool:
    """Whether a read faiss index is of the kind `new_ivf` makes (anything else is rebuilt)."""
    import faiss

    return (isinstance(index, faiss.IndexIVFScalarQuantizer) and index.metric_type == faiss.METRIC_INNER_PRODUCT
            and index.sq.qtype == faiss.ScalarQuantizer.QT_8bit and bool(index.by_residual))


def training_rows(n: int, nlist: int = 0) -> np.ndarray | slice:
    """The rows (positions in rowid order) of `n` that `AnnIndex.build` trains on: a fixed-seed
    sample of 64 per list, or all of them."""
    sample = min(n, 64 * min(nlist or nlist_for(n), n))
    return np.sort(np.random.default_rng(22).choice(n, size=sample, replace=False)) if sample < n else slice(None)


def trained(sample: np.ndarray, n: int, nlist: int = 0, make: Callable[[int, int], Any] = new_ivf) -> Any:
    """An empty index (`make`) for `n` rows, its lists and codes trained on `sample` (the rows
    `training_rows(n, nlist)` picks)."""
    nlist = min(nlist or nlist_for(n), n)
    index = make(sample.shape[1], nlist)
    index.cp.min_points_per_centroid = 1  # the sample decides; no warning on stderr
    index.cp.seed = 22
    index.train(np.ascontiguousarray(sample, dtype=np.float32))
    return index


class AnnIndex:
    """A trained IVF index (`new_ivf`) over a store's live rows, ids = chunk rowids, at change-log position
    `seq` (it holds the store's rows as of that entry)."""

    def __init__(self, index: Any, seq: int, trained_rows: int, mapped: bool = False) -> None:
        self.index = index
        self.seq = seq
        self.trained_rows = trained_rows
        #: the lists are a read-only map of the file (`read(..., mapped=True)`), not in memory
        self.mapped = mapped

    def to_memory(self) -> None:
        """Copy mapped lists into memory (faiss's `ArrayInvertedLists`), so the index can change
        and be written. Copied from the map itself, never read again from the path: the file may
        have been replaced by another process since (a newer state than `seq`)."""
        if not self.mapped:
            return
        import faiss

        src = self.index.invlists
        dst = faiss.ArrayInvertedLists(self.index.nlist, self.index.code_size)
        for i in range(self.index.nlist):
            size = src.list_size(i)
            if size:
                dst.add_entries(i, size, src.get_ids(i), src.get_codes(i))
        self.index.replace_invlists(dst, True)  # the index owns the copy (and frees the map)
        dst.this.disown()  # type: ignore[attr-defined]  # SWIG: the index frees it, not Python
        self.mapped = False

    @classmethod
    def build(cls, mat: np.ndarray, rowids: np.ndarray, seq: int, nlist: int = 0,
              make: Callable[[int, int], Any] = new_ivf) -> AnnIndex:
        """Train on a fixed-seed sample of `mat` (rows in rowid order, so the same store trains the
        same lists) and add every row. `make`: another faiss IVF kind (benchmarks compare them)."""
        n, dim = mat.shape
        index = trained(mat[training_rows(n, nlist)], n, nlist, make)
        index.add_with_ids(np.ascontiguousarray(mat, dtype=np.float32), np.ascontiguousarray(rowids, dtype=np.int64))
        return cls(index, seq, n)

    @property
    def rows(self) -> int:
        return int(self.index.ntotal)

    @property
    def nlist(self) -> int:
        return int(self.index.nlist)

    def worn(self) -> bool:
        """Whether the lists were trained on far fewer or far more rows than they now hold."""
        return not self.trained_rows / 4 <= self.rows <= self.trained_rows * 4

    def apply(self, removed: np.ndarray, vectors: np.ndarray, rowids: np.ndarray, seq: int) -> None:
        """Rows `removed` (rowids) taken out, then `vectors` added under `rowids`: the index at `seq`."""
        import faiss

        self.to_memory()
        if removed.size:
            self.index.remove_ids(faiss.IDSelectorBatch(np.ascontiguousarray(removed, dtype=np.int64)))
        if rowids.size:
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                    np.ascontiguousarray(rowids, dtype=np.int64))
        self.seq = seq

    def search(self, q: np.ndarray, k: int, nprobe: int, bitmap: np.ndarray | None) -> np.ndarray:
        """The rowids of up to `k` best rows for `q` by their codes' scores (best first; the caller
        re-scores them exactly), only rows whose bit is set in `bitmap` (bit i of byte i >> 3,
        little-endian bit order: rowid i) when one is given."""
        import faiss

        params = faiss.SearchParametersIVF()
        params.nprobe = min(max(1, nprobe), self.nlist)
        if bitmap is not None:
            params.sel = faiss.IDSelectorBitmap(bitmap.shape[0], faiss.swig_ptr(bitmap))
        _, ids = self.index.search(np.ascontiguousarray(q.reshape(1, -1), dtype=np.float32), k, params=params)
        out: np.ndarray = ids[0]
        return out[out >= 0]

    def ids(self) -> np.ndarray:
        """Every rowid the lists hold (any order)."""
        import faiss

        lists = self.index.invlists
        parts = []
        for i in range(self.nlist):
            size = lists.list_size(i)
            if size:
                parts.append(faiss.rev_swig_ptr(lists.get_ids(i), size).copy())
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


#: below this many rows `LoadBuild` trains with one faiss thread, so that the main thread keeps
#: the other core for the rest of the load (at 100k on the shared 2-core machine, from the start of
#: the build to its end: 3.4-3.7 s with one thread, 5.3-6.3 s with two); above it the training
#: (85-128 s at 1M with two threads, docs/store.md) is far longer than the rest of the load, so
#: it keeps every thread as `AnnIndex.build` does (not measured with one thread at 1M)
ONE_THREAD_BELOW = 250_000


class LoadBuild:
    """`AnnIndex.build` of the rows a load writes, run in a thread beside the rest of the load
    (its last batches, the commit, the search index made from the rows it kept): the same sample,
    the same lists and the same codes, from the load's own vectors instead of the matrix read back.
    faiss runs without the GIL, so on a second core the build costs the load no time of its own
    (issue 22, decision 4). The training starts once every row is checked (`parts` given), or at
    the load's start from the sample rows read by `read` (`ahead`); the rows are added once
    `rows_at` gives their rowids; `take` hands the index over only for exactly those rows at that
    log position.

    `parts`: the load's vectors in the order written (rowid order)."""

    def __init__(self, parts: list[np.ndarray], nlist: int = 0, threads: int | None = None, *,
                 rows: int = 0, read: Callable[[np.ndarray | slice], np.ndarray | None] | None = None) -> None:
        self.parts, self.nlist = parts, nlist
        self.n = sum(p.shape[0] for p in parts) if read is None else rows
        #: faiss threads for the training (0: all); by default one below `ONE_THREAD_BELOW` rows
        self.threads = (1 if self.n < ONE_THREAD_BELOW else 0) if threads is None else threads
        self.first, self.seq = 0, -1
        self._placed = threading.Event()  # rows_at was called (or drop)
        self._checked = threading.Event()  # every row is checked: `parts` are the load's vectors (or drop)
        self._built: AnnIndex | None = None
        self._read = read
        #: whether the index was trained on the sample `read` gave (it equalled the checked rows)
        self.early = False
        if read is None:
            self._sample = self._gathered(parts)
            self._checked.set()
        self._thread = threading.Thread(target=self._build, name="docket-ann-load", daemon=True)
        self._thread.start()

    @classmethod
    def ahead(cls, rows: int, read: Callable[[np.ndarray | slice], np.ndarray | None], nlist: int = 0,
              threads: int | None = None) -> LoadBuild:
        """A build for a load of `rows` rows that trains before they are checked: `read(picks)`
        (in the thread) gives the vectors of the sample rows `training_rows` picks, as the load
        will check them (None: it cannot). `checked` gives the load's vectors once every row is
        checked; the index is trained again from those when the sample read is not exactly their
        rows (byte for byte), so the result is `AnnIndex.build`'s either way."""
        return cls([], nlist, threads, rows=rows, read=read)

    def _gathered(self, parts: list[np.ndarray]) -> np.ndarray:
        """The training sample of `parts` (the rows `training_rows` picks)."""
        pick = training_rows(self.n, self.nlist)
        if isinstance(pick, slice):
            return np.concatenate(parts)
        # gathered in the caller's thread (an `ahead` build gathers in its own, only when the rows it
        # read were not these): in the build's thread each numpy step would wait for the GIL
        starts = np.cumsum([0] + [p.shape[0] for p in parts])
        cut = np.searchsorted(pick, starts).tolist()  # pick is sorted: a part's rows are one run
        sample = np.empty((pick.shape[0], parts[0].shape[1]), dtype=np.float32)
        for p, a, b, start in zip(parts, cut, cut[1:], starts.tolist()):
            np.take(p, pick[a:b] - start, axis=0, out=sample[a:b])
        return sample

    def checked(self, parts: list[np.ndarray]) -> bool:
        """Every row of the load is checked: `parts` are its vectors (an `ahead` build). False
        when they are not the rows this build was started for (their count)."""
        if self._checked.is_set() or sum(p.shape[0] for p in parts) != self.n:
            return False
        self.parts = list(parts)
        self._checked.set()
        return True

    def started_for(self, parts: list[np.ndarray]) -> bool:
        """Whether this build was started from exactly these arrays (the batches written)."""
        return not self._placed.is_set() and len(parts) == len(self.parts) and all(
            a is b for a, b in zip(parts, self.parts))

    def rows_at(self, first: int, seq: int) -> LoadBuild:
        """The rows are written: the first under rowid `first`, the rest after it without a gap,
        the change log at `seq` once they are."""
        self.first, self.seq = first, seq
        self._placed.set()
        return self

    def _build(self) -> None:
        import faiss

        try:
            every = faiss.omp_get_max_threads()
            # faiss's OpenMP threads for this thread only (its team); the rows are added with all
            # of them (the main thread is waiting for them by then)
            faiss.omp_set_num_threads(self.threads or every)
            index = None
            if self._read is not None:
                sample = self._read_sample()
                index = self._trained_behind(sample) if sample is not None else None
                self._checked.wait()
                if self.seq == -1 and self._placed.is_set():
                    return  # dropped
                if index is not None and sample is not None and self._same(sample):
                    self.early = True
                else:
                    index = None
                del sample
                if index is None:
                    self._sample = self._gathered(self.parts)
            if index is None:
                sample, self._sample = self._sample, np.zeros(0, dtype=np.float32)
                index = trained(sample, self.n, self.nlist)
                del sample
            self._placed.wait()
            if self.seq < 0:
                return  # dropped
            faiss.omp_set_num_threads(every)
            rowid = self.first
            for p in self.parts:  # faiss adds in blocks of its own: one call or many, the same lists
                index.add_with_ids(np.ascontiguousarray(p, dtype=np.float32),
                                   np.arange(rowid, rowid + p.shape[0], dtype=np.int64))
                rowid += p.shape[0]
            self._built = AnnIndex(index, self.seq, self.n)
        except (RuntimeError, MemoryError, ValueError):
            self._built = None  # the store builds its own

    def _trained_behind(self, sample: np.ndarray) -> Any:
        """`trained(sample, ...)` in a thread of the lowest priority (nice 19, where the system
        allows it): a build started ahead trains on the CPU the load leaves idle (the second core
        while the text workers wait for batches) instead of taking a share of the writer's; faiss
        holds no GIL while it trains, so the writer never waits for it. The rows are added at
        normal priority, in this thread."""
        import faiss

        out: list[Any] = []

        def train() -> None:
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # this thread only (Linux)
            except (AttributeError, OSError):
                pass  # another platform: trained at the load's priority
            faiss.omp_set_num_threads(self.threads or faiss.omp_get_max_threads())  # a new thread's own setting
            try:
                out.append(trained(sample, self.n, self.nlist))
            except (RuntimeError, MemoryError, ValueError):
                pass

        t = threading.Thread(target=train, name="docket-ann-train", daemon=True)
        t.start()
        t.join()
        return out[0] if out else None

    def _read_sample(self) -> np.ndarray | None:
        assert self._read is not None
        pick = training_rows(self.n, self.nlist)
        try:
            got = self._read(pick)
        except Exception:  # noqa: BLE001 - any failure to read ahead: trained from the checked rows instead
            return None
        want = self.n if isinstance(pick, slice) else pick.shape[0]
        if got is None or got.ndim != 2 or got.shape[0] != want or got.dtype != np.float32:
            return None
        return np.ascontiguousarray(got)

    def _same(self, sample: np.ndarray) -> bool:
        """Whether `sample` is, byte for byte, the rows of the checked vectors the training picks."""
        pick = training_rows(self.n, self.nlist)
        if isinstance(pick, slice):
            return bool(np.array_equal(sample, np.concatenate(self.parts)))
        at = 0
        starts = np.cumsum([0] + [p.shape[0] for p in self.parts]).tolist()
        cut = np.searchsorted(pick, starts).tolist()
        for p, a, b, start in zip(self.parts, cut, cut[1:], starts):
            if p.shape[1] != sample.shape[1] or not np.array_equal(p[pick[a:b] - start], sample[a:b]):
                return False
            at = b
        return at == sample.shape[0]

    def take(self, mat: np.ndarray, rowids: np.ndarray, seq: int) -> AnnIndex | None:
        """The index, when `mat` / `rowids` (a store's live rows in rowid order at `seq`) are the rows
        this load wrote, byte for byte (waits for the thread); None otherwise. Once only."""
        if not self._placed.is_set():
            self.drop()
            return None
        self._thread.join()
        built, parts = self._built, self.parts
        self._built, self.parts = None, []
        if (built is None or seq != self.seq or rowids.shape[0] != self.n or mat.shape[0] != self.n
                or not self.n or int(rowids[0]) != self.first or int(rowids[-1]) != self.first + self.n - 1
                or not bool((np.diff(rowids) == 1).all())):
            return None
        at = 0
        for p in parts:
            if not np.array_equal(mat[at : at + p.shape[0]], p):
                return None
            at += p.shape[0]
        return built

    def drop(self) -> None:
        """Stop before the rows are added if they were not yet placed, wait for the thread (a
        training under way ends first) and forget what it built (the load failed, or searched no
        index)."""
        if not self._placed.is_set():
            self.seq = -1
            self._placed.set()
        self._checked.set()
        self._thread.join()
        self._built, self.parts = None, []


def ids_digest(rowids: np.ndarray) -> list[int]:
    """Order-free summary of a set of rowids: count, sum and sum of squares (mod 2**64)."""
    r = np.asarray(rowids, dtype=np.uint64)
    return [int(r.shape[0]), int(r.sum(dtype=np.uint64)), int((r * r).sum(dtype=np.uint64))]


def check_rows(n: int) -> np.ndarray:
    """Which of `n` rows (positions in rowid order) `self_check` searches for."""
    return np.unique(np.linspace(0, n - 1, num=min(n, _CHECK_ROWS)).astype(np.int64)) if n else np.zeros(0, np.int64)


def self_check(ann: AnnIndex, vectors: np.ndarray, rowids: np.ndarray,
               exact_scores: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> bool:
    """Each of a sample of rows (`vectors`, `rowids`: see `check_rows`) finds itself among its 10
    nearest by the codes, or ten rows the store's own vectors score as high (copies of it):
    the lists, the centroids and the codes agree with the store's vectors. `exact_scores(rowids,
    q)`: the store's exact scores of those rows (-inf for a rowid it does not hold)."""
    import faiss

    params = faiss.SearchParametersIVF()
    params.nprobe = min(4, ann.nlist)  # a row sits in its nearest list, the first probed
    for vec, rowid in zip(vectors, rowids.tolist()):
        q = np.ascontiguousarray(vec.reshape(1, -1), dtype=np.float32)
        _, ids = ann.index.search(q, 10, params=params)
        if rowid in ids[0].tolist():
            continue
        self_score = float(q[0] @ q[0])
        crowded = bool((ids[0] >= 0).all() and (exact_scores(ids[0], q[0]) >= self_score - 1e-4).all())  # ten copies
        if not crowded:
            return False
    return True


def bitmap_of(rowids: np.ndarray) -> np.ndarray:
    """The `IDSelectorBitmap` of a set of rowids (one bit per rowid up to the largest)."""
    if rowids.size == 0:
        return np.zeros(1, dtype=np.uint8)
    bits = np.zeros(int(rowids.max()) + 1, dtype=bool)
    bits[rowids] = True
    return np.packbits(bits, bitorder="little")


def _no_prefetch_threads(index: Any) -> None:
    """Mapped lists are faiss's `OnDiskInvertedLists`, which start threads (32 by default) to
    touch the pages of the lists every search probes: ~2 ms a search on a 2-core machine, more than
    the scan itself at 100k chunks (issue 22, fourth round: 2.9 ms mapped against 0.7 ms read).
    Without them a search reads its lists' pages itself as it scans them."""
    import faiss

    lists = faiss.downcast_InvertedLists(index.invlists)
    if isinstance(lists, faiss.OnDiskInvertedLists):
        lists.prefetch_nthread = 0


def write(path: Path, ann: AnnIndex, stamp: dict[str, Any], mode: int | None = None) -> None:
    """The index, then the stamp, written to a temporary file renamed over `path` (a reader sees
    the old file or the new one, never half of one). Raises OSError when it cannot be written."""
    import faiss

    ann.to_memory()  # a mapped index would be written as a reference to its file
    with replacing(path, mode) as tmp:
        faiss.write_index(ann.index, tmp)
        size = os.path.getsize(tmp)
        head = json.dumps({**stamp, "layout": LAYOUT, "index_bytes": size, "seq": ann.seq,
                           "trained_rows": ann.trained_rows, "rows": ann.rows}, separators=(",", ":")).encode()
        with open(tmp, "ab") as f:
            f.write(head + len(head).to_bytes(8, "little") + MAGIC)


def read(path: Path, mapped: bool = False) -> tuple[AnnIndex, dict[str, Any]] | None:
    """The index and its stamp, or None when `path` holds no whole index file of this layout
    (missing, truncated, foreign, of another faiss index kind, code or dimension than it says).

    `mapped`: the inverted lists are mapped read-only from the file instead of read (faiss's
    `IO_FLAG_MMAP`): a new process's first search reads the ~64 lists it probes, not the whole
    file (1.5 GB at 1M chunks: ~1.5 s of a cold first `ask`), and processes share the pages. The
    map stays valid when the file is replaced (a new file is renamed over it); an index that must
    change is copied into memory first (`AnnIndex.to_memory`)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            if size < 16:
                return None
            f.seek(size - 16)
            tail = f.read(16)
            if tail[8:] != MAGIC:
                return None
            n = int.from_bytes(tail[:8], "little")
            if n > size - 16:
                return None
            f.seek(size - 16 - n)
            stamp = json.loads(f.read(n))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(stamp, dict) or stamp.get("layout") != LAYOUT or stamp.get("index_bytes") != size - 16 - n:
        return None
    try:
        import faiss

        try:  # already of its own class (a downcast proxy would not own it)
            index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP if mapped else 0)
        except RuntimeError:
            if not mapped:
                raise
            mapped = False  # a file system that cannot map it: read it (a rebuild would cost minutes)
            index = faiss.read_index(str(path))
        if (not is_ours(index) or index.d != int(stamp["dim"]) or index.ntotal != int(stamp["rows"])
                or not index.is_trained):
            return None
        if mapped:
            _no_prefetch_threads(index)
        return AnnIndex(index, int(stamp["seq"]), int(stamp["trained_rows"]), mapped), stamp
    except (RuntimeError, KeyError, TypeError, ValueError, ImportError):
        return None
