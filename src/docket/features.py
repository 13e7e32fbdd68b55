"""Per-chunk features, computed once and reused by every query that sees the chunk.

Most of what the moves read about a candidate does not depend on the question: its folded words
and term frequencies (BM25), its title variants as phrases (title match, links), its claims
(the statements conflict detection compares), the hash of its
normalised text (exact copies), its vector as an array, and the token count of the passage as
rendered in each format. Computing them on every query was most of the assembler's time; here
they are computed the first time a chunk is seen and kept in a bounded in-memory cache.

Two keys:

- the chunk object itself (a frozen pydantic model): the hot path, one dict look-up;
- `content_key(chunk)`: the id, text and every field that reaches a passage header. A new object
  with the same content (a store row read again, a caller rebuilding its candidates) finds the
  features already computed. `digest` is the sha256 of that key, for stores that persist features.

The vector is not part of the content key (the same text can come with vectors of another
model), so it is kept per object.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from docket.model import Chunk
from docket.text import content_words, copy_hash, phrase, title_variants, words

#: chunks (and chunk objects) kept in memory by the default cache
DEFAULT_CAPACITY = 100_000

ContentKey = tuple[Any, ...]


def content_key(c: Chunk) -> ContentKey:
    """Everything about a chunk that a feature depends on: id, text and header metadata."""
    return (c.id, c.text, c.title, c.section, c.version, c.date, c.status, c.trust, c.source_type, c.doc)


def digest(key: ContentKey) -> str:
    """A stable hex digest of a content key (for persisting features next to a chunk)."""
    h = hashlib.sha256()
    for part in key:
        h.update(b"\x1f" + repr(part).encode("utf-8"))
    return h.hexdigest()


class RescoreTerms(NamedTuple):
    words: frozenset[str]
    repeats: dict[str, int]  # count of each word seen more than once (the others occur once)
    length: int
    title_phrases: tuple[str, ...]
    title_words: frozenset[str]
    probes: tuple[str, ...]


class ChunkFeatures:
    """What the moves need to know about one chunk's content, computed at most once each.

    Groups are filled on first use: a pool that never re-scores never tokenises for BM25, and
    statements are split only for chunks in a pair similar enough to be a conflict."""

    __slots__ = (
        "key", "untrusted", "retired", "_rescore", "_text_phrase", "_text_words", "_copy_hash", "_statements",
        "costs", "text_tokens",
    )

    def __init__(self, chunk: Chunk, key: ContentKey) -> None:
        self.key = key
        self.untrusted = chunk.untrusted
        self.retired = chunk.retired
        self._rescore: RescoreTerms | None = None
        self._text_phrase: str | None = None
        self._text_words: frozenset[str] | None = None
        self._copy_hash: str | None = None
        self._statements: list[Any] | None = None
        #: token counts of the rendered passage, by (render key, label class, what)
        self.costs: dict[tuple[Any, ...], int] = {}
        #: tokens of the sanitised text, by counter name
        self.text_tokens: dict[str, int] = {}

    # --- re-scoring -------------------------------------------------------------------------
    def rescore_terms(self, chunk: Chunk) -> RescoreTerms:
        """What re-scoring reads: the words of "title text" (a set, plus the counts of the words
        that occur more than once), their number, the title variants as phrases, the content
        words of the last variant, and one probe word per variant phrase."""
        r = self._rescore
        if r is None:
            title = chunk.title
            toks = words(f"{title} {chunk.text}" if title else chunk.text)
            tf = Counter(toks)
            variants = title_variants(title)
            phrases = tuple(phrase(v) for v in variants)
            # a phrase can only occur where its longest word does: a cheap set test before `in`
            probes = tuple(max(p.split(), key=len) for p in phrases)
            tw = frozenset(content_words(variants[-1] if variants else title)) if title.strip() else frozenset()
            r = self._rescore = RescoreTerms(frozenset(tf), {w: n for w, n in tf.items() if n > 1}, len(toks), phrases,
                                             tw, probes)
        return r

    def text_phrase(self, chunk: Chunk) -> str:
        """`phrase(text)`: where title phrases are looked for."""
        p = self._text_phrase
        if p is None:
            p = self._text_phrase = phrase(chunk.text)
        return p

    def text_words(self, chunk: Chunk) -> frozenset[str]:
        """The folded words of the text, for the probe test before a phrase search."""
        w = self._text_words
        if w is None:
            w = self._text_words = frozenset(self.text_phrase(chunk).split())
        return w

    def copy_hash(self, chunk: Chunk) -> str:
        h = self._copy_hash
        if h is None:
            h = self._copy_hash = copy_hash(chunk.text)
        return h

    def statements(self, chunk: Chunk) -> list[Any]:
        """moves.versions.statements of the text: its claims (conflict detection)."""
        s = self._statements
        if s is None:
            from docket.moves.versions import statements

            s = self._statements = statements(chunk.text)
        return s


_UNCHECKED = object()


class _Entry:
    """One chunk object: its content features and its vector as a float32 array."""

    __slots__ = ("chunk", "features", "vector", "norm", "checked")

    def __init__(self, chunk: Chunk, features: ChunkFeatures) -> None:
        self.chunk = chunk
        self.features = features
        self.vector: np.ndarray | None = None
        self.norm: float | None = None
        #: the embedder dimension the vector was last checked against (unchecked: a fresh object)
        self.checked: Any = _UNCHECKED
        if chunk.vector is not None:
            self.vector = np.asarray(chunk.vector, dtype=np.float32)
            self.norm = float(np.linalg.norm(np.asarray(chunk.vector, dtype=np.float64)))


class _Generations:
    """A bounded map with near-LRU eviction at O(1): look-ups read the young generation, then the
    old one (promoting the hit); when the young one is full it becomes the old one."""

    __slots__ = ("capacity", "young", "old")

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity // 2)
        self.young: dict[Any, Any] = {}
        self.old: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        v = self.young.get(key)
        if v is None:
            v = self.old.get(key)
            if v is not None:
                self.put(key, v)
        return v

    def put(self, key: Any, value: Any) -> None:
        if len(self.young) >= self.capacity:
            self.old = self.young
            self.young = {}
        self.young[key] = value

    def __len__(self) -> int:
        return len(self.young) + len(self.old)

    def clear(self) -> None:
        self.young, self.old = {}, {}


class FeatureCache:
    """Features of the chunks seen so far, bounded to about `capacity` chunks (and as many chunk
    objects). Safe to share between threads: a race computes a feature twice, never wrongly."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._objects = _Generations(capacity)  # id(chunk) -> _Entry (which holds the chunk)
        self._content = _Generations(capacity)  # content key -> ChunkFeatures
        self.computed = 0

    def entry(self, chunk: Chunk) -> _Entry:
        e = self._objects.get(id(chunk))
        if e is not None and e.chunk is chunk:
            return e  # type: ignore[no-any-return]
        key = content_key(chunk)
        f = self._content.get(key)
        if f is None:
            f = ChunkFeatures(chunk, key)
            self._content.put(key, f)
            self.computed += 1
        e = _Entry(chunk, f)
        self._objects.put(id(chunk), e)
        return e

    def features(self, chunk: Chunk) -> ChunkFeatures:
        e = self._objects.young.get(id(chunk))
        if e is None or e.chunk is not chunk:
            e = self.entry(chunk)
        return e.features  # type: ignore[no-any-return]

    def entries(self, chunks: Sequence[Chunk]) -> list[_Entry]:
        get = self._objects.young.get
        out = []
        for c in chunks:
            e = get(id(c))
            if e is None or e.chunk is not c:
                e = self.entry(c)
            out.append(e)
        return out

    def of_passages(self, passages: Sequence[Any]) -> list[ChunkFeatures | None]:
        """The features of each passage that is one whole chunk (its text is the chunk's), else None."""
        get = self._objects.young.get
        out: list[ChunkFeatures | None] = []
        for p in passages:
            if p.text_override is not None or len(p.chunks) != 1:
                out.append(None)
                continue
            c = p.first
            e = get(id(c))
            if e is None or e.chunk is not c:
                e = self.entry(c)
            out.append(e.features)
        return out

    def adopt(self, chunk: Chunk, features: ChunkFeatures) -> None:
        """Register features computed elsewhere (e.g. loaded from a store) for this chunk."""
        self._content.put(features.key, features)
        self._objects.put(id(chunk), _Entry(chunk, features))

    def __len__(self) -> int:
        return len(self._content)

    def clear(self) -> None:
        self._objects.clear()
        self._content.clear()


_default: FeatureCache | None = None
_lock = threading.Lock()


def default_cache() -> FeatureCache:
    """The process-wide cache every assembly uses unless given another."""
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = FeatureCache()
    return _default


def render_key(policy: Any) -> tuple[Any, ...]:
    """A hashable summary of every render setting (anything that can change a rendered passage)."""
    out = []
    for name in type(policy).model_fields:
        v = getattr(policy, name)
        if isinstance(v, list):
            v = tuple(v)
        elif isinstance(v, dict):
            v = tuple(sorted(v.items()))
        out.append(v)
    return tuple(out)
