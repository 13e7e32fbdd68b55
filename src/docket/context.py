"""What every move receives besides the passages: the question, look-ups and the trace.

A move is a plain function `(passages, ctx) -> passages`. It reads the store, vectors and
token counts only through this object, sizes passages through `ctx.sizer` (the brief layer's
`docket.sizing.Sizer`, built by the factory the wiring passes) and writes its decisions to
`ctx.trace`, so it can be tested without a model or a database and never imports the brief.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from itertools import repeat
from typing import Any

import numpy as np

from docket import counting
from docket.caches import Caches, default_caches
from docket.embed import Embedder
from docket.errors import InputError
from docket.features import FeatureCache, render_key
from docket.model import Chunk, Trace
from docket.policy import Policy
from docket.sizing import Sizer
from docket.store.base import ChunkLookup
from docket.tokens import TokenCounter


def clock() -> Date:
    """Today's date: the one place the assembler reads the wall clock (tests replace it)."""
    return Date.today()


@dataclass
class Context:
    question: str
    store: ChunkLookup
    policy: Policy
    counter: TokenCounter
    embedder: Embedder | None = None
    trace: Trace = field(default_factory=Trace)
    #: pairs of chunk ids that disagree (Move 1), turned into labels at render time
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    #: things the caller must know (e.g. "the current rule was not found")
    warnings: list[str] = field(default_factory=list)
    #: the wall clock, read once per assembly (the default "as of" date for versions)
    today: Date = field(default_factory=lambda: clock())
    #: the date whose versions Move 1 kept and why: {"date", "source"} (set by Move 1)
    as_of: dict[str, Any] | None = None
    #: the session's caches (docket.caches): the steps and the renderer read their tables here;
    #: without a session, the process-wide fallback
    caches: Caches = field(default_factory=default_caches)
    #: per-chunk features (words, titles, statements, rendered counts), computed once per chunk:
    #: `caches.features` unless given
    features: FeatureCache = None  # type: ignore[assignment]  # filled from `caches` in __post_init__
    #: the candidates that cleared the floor: pair similarities are computed once over them
    pool: list[Chunk] | None = None
    #: the noise floor this assembly screened the pool with (docket.assemble._apply_floor): the
    #: embedder's own, lowered to an exact hit's or the reader's best score, or -inf where none
    #: applies (an embedder without a known floor, the user's own files); the moves stop at the
    #: same floor (`floor`), so what the screen kept is never dropped again on another scale
    noise_floor: float | None = None
    #: the reachable set of the pool Moves 1-2 compare (docket.moves.reach), once found; a key when
    #: it was found not to apply (the whole pool is compared)
    reach: Any = None
    #: what Moves 1-2 read of the claims of a passage that is not one whole chunk
    #: (claims.compare.PassageRead: its sketch, its claims once a pair needs them), by its text: one
    #: query's, read once for both moves
    claims_read: dict[str, Any] = field(default_factory=dict)
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)
    _qvec: np.ndarray | None = None
    _sims: np.ndarray | None = None
    _sim_pos: dict[int, int] = field(default_factory=dict)
    _sim_chunks: list[Chunk] = field(default_factory=list)
    #: the pairs of the pool's matrix at the lowest threshold asked so far: (threshold, rows, cols,
    #: their cosines), so Move 2 filters Move 1's pairs instead of scanning the matrix again
    _pairs: tuple[float, np.ndarray, np.ndarray, np.ndarray] | None = None
    _render_key: str | None = None
    #: the feature entries of the last two chunk lists asked (`entries`): (chunks, entries), newest first
    _entries: list[tuple[list[Chunk], list[Any]]] = field(default_factory=list)
    #: builds the passage sizer for this context (assemble passes docket.brief.sizer.RenderSizer);
    #: a copy made with dataclasses.replace builds its own, for its own policy
    sizer_factory: Callable[[Context], Sizer] | None = None
    _sizer: Sizer | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.features is None:
            self.features = self.caches.features

    @property
    def sizer(self) -> Sizer:
        s = self._sizer
        if s is None:
            if self.sizer_factory is None:
                raise InputError("sizes passages as rendered: build the Context with sizer_factory= (assemble passes "
                                 "docket.brief.sizer.RenderSizer)", field="sizer_factory")
            s = self._sizer = self.sizer_factory(self)
        return s

    def has_vectors(self) -> bool:
        return self.embedder is not None

    def question_vector(self) -> np.ndarray:
        if self._qvec is None:
            if self.embedder is None:
                raise InputError("this move needs vectors: give chunks a 'vector' or configure an embedder")
            self._qvec = self.embedder.embed([self.question])[0]
        return self._qvec

    @property
    def floor(self) -> float:
        """The score floor the moves stop at: the one the pool was screened with, or `pack.floor`
        for moves run without the screen (a caller's own pipeline)."""
        return self.policy.pack.floor if self.noise_floor is None else self.noise_floor

    def entries(self, chunks: Sequence[Chunk]) -> list[Any]:
        """`features.entries(chunks)`, looked up once per list of chunks: an assembly asks for the
        pool's entries several times (checks, re-scoring, vectors, the reachable set), in the
        ranker's order and then in the re-scored one. The same chunk objects in the same order
        are the same list (compared object by object, without a Python step per chunk)."""
        n = len(chunks)
        for seen, entries in self._entries:
            if len(seen) == n and all(map(operator.is_, seen, chunks)):
                return entries
        entries = self.features.entries(chunks)
        self._entries = [(list(chunks), entries), *self._entries[:1]]
        return entries

    def remember_entries(self, chunks: list[Chunk], entries: list[Any]) -> None:
        """Hold `entries` as `entries(chunks)`: a caller that has them already (the candidates'
        entries in the re-scored order) spares the look-up of each chunk."""
        self._entries = [(list(chunks), entries), *self._entries[:1]]

    def passage_features(self, passages: Sequence[Any]) -> list[Any]:
        """`features.of_passages(passages)`: a passage's chunk features when it is one whole chunk,
        else None. When every passage is one (the pool as Moves 1-2 see it), read through
        `entries`, which holds the pool's list already: no Python step per passage."""
        if set(map(len, map(_CHUNKS, passages))) <= {1} and set(map(_OVERRIDE, passages)) <= {None}:
            return list(map(_FEATURES, self.entries(list(map(_FIRST, passages)))))
        return self.features.of_passages(passages)

    def vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """Unit vectors for chunks: the record's own `vector` if it has one, else the embedder's."""
        if not chunks:
            return np.zeros((0, 1), dtype=np.float32)
        entries = self.entries(chunks)
        dim = getattr(self.embedder, "dim", None)
        got = list(map(_VECTOR, entries))
        if set(map(_CHECKED, entries)) == {dim} and not any(map(operator.is_, got, repeat(None))):
            return stack(got)  # every chunk has its vector, checked against this embedder (a warm pool)
        rows: list[np.ndarray | None] = []
        need: list[Chunk] = []
        for c, e in zip(chunks, entries):
            v = e.vector
            if v is None:
                v = self._vectors.get(c.id)
                if v is None:
                    need.append(c)
            elif e.checked != dim:
                if (dim is not None and len(v) != dim) or abs(e.norm - 1.0) > 1e-3:  # type: ignore[operator]
                    check_vectors([c], self.embedder)
                e.checked = dim
            rows.append(v)
        if need:
            if self.embedder is None:
                raise InputError(
                    "has no 'vector' and no embedder is configured", where=f"chunk {need[0].id!r}", field="vector"
                )
            missing = list(dict.fromkeys(c.id for c in need))
            by_id = {c.id: c for c in need}
            for cid, v in zip(missing, self.embedder.embed([by_id[i].text for i in missing])):
                self._vectors[cid] = v
            rows = [r if r is not None else self._vectors[c.id] for c, r in zip(chunks, rows)]
        return stack(rows)  # type: ignore[arg-type]

    def similarities(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """Cosines between every pair of `chunks`, from one matrix over the pool: duplicates
        (Move 2) and conflicts (Move 1) read the same numbers, computed once per query."""
        if self._sims is None:
            base = list(self.pool or [])
            pos: dict[int, int] = {}
            if len(chunks) != len(base) or any(a is not b for a, b in zip(chunks, base)):
                pos = self._positions(base)
                for c in chunks:
                    if id(c) not in pos:
                        pos[id(c)] = len(base)
                        base.append(c)
            vecs = self.vectors(base)
            self._sims = vecs @ vecs.T
            self._pairs = None
            self._sim_pos = pos  # built when a call asks for part of the pool (empty until then)
            self._sim_chunks = base
        sims, base = self._sims, self._sim_chunks
        if len(chunks) == len(base) and all(a is b for a, b in zip(chunks, base)):
            return sims
        if not self._sim_pos:
            self._sim_pos = self._positions(base)
        pos = self._sim_pos
        idx = [pos.get(id(c)) for c in chunks]
        if None in idx:  # a chunk the pool did not have (fetched by Move 1): start again with it
            self._sims = None
            self.pool = base
            return self.similarities(chunks)
        ix = np.asarray(idx)
        return sims[np.ix_(ix, ix)]  # type: ignore[no-any-return]

    @staticmethod
    def _positions(chunks: Sequence[Chunk]) -> dict[int, int]:
        return {id(c): i for i, c in enumerate(chunks)}

    def similar_pairs(self, chunks: Sequence[Chunk], threshold: float) -> tuple[np.ndarray, list[int], list[int]]:
        """`similarities(chunks)` and its pairs at `threshold` (`pairs_at_least`). Over the pool's
        own matrix the pairs found at a lower threshold are filtered, not found again: Move 1 asks
        for the conflict threshold, Move 2 for the (higher) duplicate threshold of the same pool."""
        sims = self.similarities(chunks)
        if sims is not self._sims:
            return (sims, *pairs_at_least(sims, threshold))
        cached = self._pairs
        if cached is not None and cached[0] <= threshold:
            keep = cached[3] >= _at_least(threshold, sims.dtype)
            return sims, cached[1][keep].tolist(), cached[2][keep].tolist()
        rows, cols = _pair_arrays(sims, threshold)
        self._pairs = (threshold, rows, cols, sims[rows, cols])
        return sims, rows.tolist(), cols.tolist()

    def tokens(self, text: str) -> int:
        return counting.count(self.counter, text)

    def render_key(self) -> str:
        """The render settings as a hashable key (rendered counts are cached under it)."""
        if self._render_key is None:
            self._render_key = render_key(self.policy.render)
        return self._render_key


_VECTOR, _CHECKED = operator.attrgetter("vector"), operator.attrgetter("checked")
_CHUNKS, _OVERRIDE = operator.attrgetter("chunks"), operator.attrgetter("text_override")
_FIRST, _FEATURES = operator.attrgetter("first"), operator.attrgetter("features")


def pairs_at_least(sims: np.ndarray, threshold: float) -> tuple[list[int], list[int]]:
    """The pairs (i < j) whose similarity is at least `threshold`, in the order of
    itertools.combinations. The comparison is the exact one of float(sims[i, j]) >= threshold,
    done in float32 against the smallest float32 that is not below the threshold."""
    rows, cols = _pair_arrays(sims, threshold)
    return rows.tolist(), cols.tolist()


def _at_least(threshold: float, dtype: np.dtype) -> float | np.float32:
    """What `x >= threshold` compares x with: for float32 x, the smallest float32 that is not
    below the threshold (so the float32 comparison is the exact one of float(x) >= threshold)."""
    if dtype != np.float32:
        return threshold
    t = np.float32(threshold)
    if float(t) < threshold:
        t = np.nextafter(t, np.float32(np.inf))
    return t


def _pair_arrays(sims: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    n = sims.shape[1]
    flat = np.flatnonzero(sims >= _at_least(threshold, sims.dtype))  # one pass over a flat mask: cheaper than 2-D nonzero
    rows, cols = np.divmod(flat, n)
    upper = rows < cols
    return rows[upper], cols[upper]


def stack(rows: Sequence[np.ndarray]) -> np.ndarray:
    """np.stack for equal-length 1-D rows, without its per-row Python work (10x faster at 200)."""
    if not rows:
        return np.zeros((0, 1), dtype=np.float32)
    shape = rows[0].shape
    flat = None
    if len(shape) == 1:
        try:  # the lengths read by a C call per row, no Python step; a row of other dimensions fails or is caught below
            if set(map(len, rows)) == {shape[0]}:
                flat = np.concatenate(rows)
        except (TypeError, ValueError):
            flat = None
    if flat is None or flat.ndim != 1:
        return np.stack(rows)  # the same result, or the same error np.stack gives for ragged rows
    return flat.reshape(len(rows), shape[0])


def check_vectors(chunks: Sequence[Chunk], embedder: Embedder | None) -> None:
    """Caller-supplied vectors must come from the embedder's model and be unit length, or
    every cosine downstream (floor, duplicates, MMR) is meaningless."""
    dim = getattr(embedder, "dim", None)
    for c in chunks:
        if c.vector is None:
            continue
        if dim is not None and len(c.vector) != dim:
            raise InputError(f"has {len(c.vector)} dimensions but the embedder ({getattr(embedder, 'name', '?')}) gives "
                             f"{dim}; embed with the same model or drop the vectors", where=f"chunk {c.id!r}", field="vector")
        norm = float(np.linalg.norm(np.asarray(c.vector, dtype=np.float64)))
        if abs(norm - 1.0) > 1e-3:
            raise InputError(f"is not unit length (norm {norm:.4f}); L2-normalise it so dot products are cosines",
                             where=f"chunk {c.id!r}", field="vector")


def check_entries(chunks: Sequence[Chunk], embedder: Embedder | None, features: FeatureCache,
                  entries: Sequence[Any] | None = None) -> None:
    """`check_vectors` from the cached norms (the same errors, in the same order); `entries`: the
    chunks' feature entries when the caller has them."""
    dim = getattr(embedder, "dim", None)
    entries = features.entries(chunks) if entries is None else entries
    if set(map(_CHECKED, entries)) <= {dim}:
        return  # every entry checked against this embedder already (a warm pool): nothing to check
    for e in entries:
        v = e.vector
        if v is not None and e.checked != dim:
            if (dim is not None and len(v) != dim) or abs(e.norm - 1.0) > 1e-3:  # type: ignore[operator]
                check_vectors([e.chunk], embedder)
            e.checked = dim
