"""The caches one Session owns, each bounded, so two sessions in a process never share or evict
each other's entries and a long-lived service does not grow with the questions it is asked.

A `Session` makes one `Caches` and hands it down: to the stores it opens (they offer each row's
stored feature record to `features` as they read it), on the assembler's `Context` (the steps read
`ctx.caches`) and to the brief's renderer. A caller without a session (`docket.assemble(...)`
called directly, the framework integrations, a Context built by hand) gets `default_caches()`, the
process-wide fallback. The tables are opaque here: the layer that fills one decides what goes in
(the conflict pair memo is docket.moves.versions', the rendered passages docket.brief.render's),
so this module sits in the features layer and imports nothing above it.
"""

from __future__ import annotations

import threading

from docket.embed import CachedEmbedder, Embedder
from docket.features import DEFAULT_CAPACITY, FeatureCache, _Generations, default_cache

#: conflict pair decisions kept (docket.moves.versions): two generations, a few hundred bytes each
PAIR_CAPACITY = 1 << 16
#: rendered passages kept (docket.brief.render), and as many label-free preparations: a few KiB each
RENDERED_CAPACITY = 16_384
#: question embeddings kept by the session's embedder cache (10,000 MiniLM vectors: ~15 MB)
EMBEDDING_CAPACITY = 10_000


class Caches:
    """Every per-session cache, each bounded (sizes in docs/architecture.md, "Caches and their
    bounds"): per-chunk features, conflict pair decisions, rendered passages and the question
    embeddings of the session's default embedder."""

    def __init__(self, *, features: FeatureCache | None = None, feature_capacity: int = DEFAULT_CAPACITY,
                 pair_capacity: int = PAIR_CAPACITY, rendered_capacity: int = RENDERED_CAPACITY,
                 embedding_capacity: int = EMBEDDING_CAPACITY) -> None:
        #: per-chunk features (words, titles, statements, rendered counts), filled by the stores too
        self.features = features if features is not None else FeatureCache(feature_capacity)
        #: (features key of a, of b, overlap, embedder) -> why the pair disagrees, or "" (moves.versions)
        self.pairs = _Generations(pair_capacity)
        #: (content key, label, settings id) -> a rendered passage (brief.render.Entry)
        self.rendered = _Generations(rendered_capacity)
        #: (content key, settings id) -> its label-free preparation, shared by its labels' entries
        self.prepared = _Generations(rendered_capacity)
        self.embedding_capacity = embedding_capacity
        self._embedder: CachedEmbedder | None = None
        self._lock = threading.Lock()

    def embedder(self, inner: Embedder) -> CachedEmbedder:
        """`inner` behind this session's own bounded cache of embedded texts (one at a time: a new
        model replaces the cache of the last)."""
        e = self._embedder
        if e is None or e.inner is not inner:
            with self._lock:
                e = self._embedder
                if e is None or e.inner is not inner:
                    e = self._embedder = CachedEmbedder(inner, self.embedding_capacity)
        return e

    def sizes(self) -> dict[str, int]:
        """How many entries each cache holds now (what the bounds bound)."""
        f = self.features
        return {"features": len(f._content), "feature_objects": len(f._objects), "feature_offers": len(f._offered),
                "pairs": len(self.pairs), "rendered": len(self.rendered), "prepared": len(self.prepared),
                "embeddings": len(self._embedder) if self._embedder is not None else 0}

    def bounds(self) -> dict[str, int]:
        """The most entries each cache of `sizes` can hold."""
        f = self.features
        return {"features": 2 * f._content.capacity, "feature_objects": 2 * f._objects.capacity,
                "feature_offers": 2 * f._offered.capacity, "pairs": 2 * self.pairs.capacity,
                "rendered": 2 * self.rendered.capacity, "prepared": 2 * self.prepared.capacity,
                "embeddings": self.embedding_capacity}

    def clear(self) -> None:
        self.features.clear()
        self.pairs.clear()
        self.rendered.clear()
        self.prepared.clear()
        if self._embedder is not None:
            self._embedder.clear()


_default: Caches | None = None
_default_lock = threading.Lock()


def default_caches() -> Caches:
    """The process-wide caches of callers without a session (its feature cache is
    `docket.features.default_cache()`, which stores opened without a cache fill)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Caches(features=default_cache())
    return _default


__all__ = ["Caches", "default_caches", "EMBEDDING_CAPACITY", "PAIR_CAPACITY", "RENDERED_CAPACITY"]
