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

import array
import hashlib
import itertools
import json
import math
import operator
import re
import struct
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from itertools import filterfalse, repeat
from typing import Any, NamedTuple

import numpy as np

from docket.model import Chunk
from docket.text import (
    STOPWORDS,
    Folded,
    copy_hash,
    copy_sketches,
    folded_codes,
    iter_words,
    phrase,
    title_variant_words,
    words,
)

#: chunks whose features the default cache keeps in memory (no vectors: ~2-4 KiB each)
DEFAULT_CAPACITY = 100_000
#: chunk objects it keeps alive (each with its vector: ~13.5 KiB for 384 dimensions, so 100k of
#: them held ~1.3 GiB in a long-running service); a store builds new objects on every fetch, so
#: only callers that pass the same objects again (an in-memory pool) need these
OBJECT_CAPACITY = 20_000
#: feature records a store handed over with the rows it just read, kept until the query asks
#: for them (the same query, so a few thousand is plenty)
OFFERED_CAPACITY = 8_192

ContentKey = tuple[Any, ...]


def content_key(c: Chunk) -> ContentKey:
    """Everything about a chunk that a feature depends on: id, text and header metadata."""
    return (c.id, c.text, c.title, c.section, c.version, c.date, c.status, c.trust, c.source_type, c.doc)


def digest(key: ContentKey) -> str:
    """A stable hex digest of a content key (for persisting features next to a chunk)."""
    # one update of the joined bytes: the same digest as one update per part, at half the cost
    return hashlib.sha256("".join(["\x1f" + repr(part) for part in key]).encode("utf-8")).hexdigest()


class RescoreTerms(NamedTuple):
    words: frozenset[str]
    repeats: dict[str, int]  # count of each word seen more than once (the others occur once)
    length: int
    title_phrases: tuple[str, ...]
    title_words: frozenset[str]
    probes: tuple[str, ...]


class Vocabulary:
    """Folded word -> int id, so re-scoring can match a question's words against a whole pool's
    with numpy (docket.rescore). Safe to share between threads: an id is taken from a counter and
    the first writer of a word wins, so two words never share an id (ids may skip numbers)."""

    __slots__ = ("ids", "_next")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self._next = itertools.count()

    def id_of(self, word: str) -> int:
        i = self.ids.get(word)
        if i is None:
            i = self.ids.setdefault(word, next(self._next))
        return i

    def lookup(self, words: Sequence[str]) -> list[int]:
        """The ids of known words, -1 for a word no chunk indexed with this vocabulary has."""
        get = self.ids.get
        return [get(w, -1) for w in words]

    def __len__(self) -> int:
        return len(self.ids)


#: words the vocabulary keeps before a new one starts (~100 MiB); index arrays built with the
#: old one are rebuilt when next used, so memory stays bounded in a long-running service
VOCABULARY_CAPACITY = 1 << 20
_vocabulary = Vocabulary()


def current_vocabulary() -> Vocabulary:
    """The vocabulary re-scoring uses for this query (a fresh one once the old is full)."""
    global _vocabulary
    v = _vocabulary
    if len(v.ids) > VOCABULARY_CAPACITY:
        with _lock:
            if _vocabulary is v:
                _vocabulary = Vocabulary()
            v = _vocabulary
    return v


class RescoreIndex(NamedTuple):
    """`RescoreTerms` as packed int32 numbers for vectorised re-scoring (docket.rescore joins a
    pool's with `b"".join` and reads them with `np.frombuffer`: a copy at C speed, where
    concatenating a pool of small arrays costs a call per array).

    `head`: width, length, untrusted, linkable. `body`: a pair for each word of "title text" that
    is not a stop word (no question word is one), each title word and each probe: its vocabulary
    id, and its count in "title text" times 4, plus 2 if it is a probe, plus 1 if it is a title
    word (a word the text lacks counts 0)."""

    vocab: Vocabulary | None
    head: bytes
    body: bytes
    title_phrases: tuple[str, ...]
    title_words: frozenset[str]


HEAD_FIELDS = 4
NO_INDEX = RescoreIndex(None, b"", b"", (), frozenset())


def _title_text(chunk: Chunk) -> str:
    title = chunk.title
    return f"{title} {chunk.text}" if title else chunk.text


def _title_text_words(chunk: Chunk) -> list[str]:
    return words(_title_text(chunk))


@lru_cache(maxsize=1 << 14)  # a pure function of the title; the chunks of one document share it
def title_terms(title: str) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]:
    """A title's variants as phrases, the content words of the last variant, and one probe word
    per phrase (a phrase can only occur where its longest word does: a cheap set test before `in`)."""
    variants = title_variant_words(title)  # each variant's words (`phrase` is them between spaces)
    if len(variants) == 1:  # most titles: the same terms, without a generator per field
        w = variants[0]
        return (" " + " ".join(w) + " ",), frozenset(w).difference(STOPWORDS), (max(w, key=len),)
    phrases = tuple(" " + " ".join(w) + " " for w in variants)
    probes = tuple(max(w, key=len) for w in variants)
    tw = frozenset(filterfalse(STOPWORDS.__contains__, variants[-1])) if variants else frozenset()
    return phrases, tw, probes


class _Rows:
    """The bodies of many RescoreIndexes side by side, as plain lists (one numpy pass at the end):
    each row's vocabulary id, its count in the text, and the title/probe bits of the few rows
    that have them (at their positions)."""

    __slots__ = ("ids", "counts", "bit_at", "bits")

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.counts: list[int] = []
        self.bit_at: list[int] = []
        self.bits: list[int] = []

    def add(self, vocab: Vocabulary, tf: Mapping[str, int], tw: frozenset[str], probes: tuple[str, ...]) -> int:
        """One text's rows (see RescoreIndex); returns how many. The title words and probes in
        the text come first (so their rows are known without a search), then the text's other
        content words in order, then the title words and probes the text lacks; the word lists
        are filtered by C-level iteration (filterfalse, map), Python only touches the few
        special words."""
        special = tw.union(probes)  # title words are content words; a probe may be a stop word
        present = [w for w in special if w in tf]
        text = list(filterfalse(STOPWORDS.__contains__, tf))
        for w in present:
            if w not in STOPWORDS:
                text.remove(w)
        absent = [w for w in special if w not in tf] if len(present) < len(special) else []
        return self._put(vocab, present, list(map(tf.__getitem__, present)), text, list(map(tf.__getitem__, text)),
                         absent, tw, probes)

    def add_content(self, vocab: Vocabulary, tf: Mapping[str, int], toks: list[str], tw: frozenset[str],
                    probes: tuple[str, ...]) -> int:
        """`add` for a text seen for the first time, with `tf` counted over its content words only
        (stop words left out before counting, at C speed: fewer words to count, none to test
        here) and `toks` all its words (for a probe that is a stop word). The same rows."""
        present: list[str] = []
        counts: list[int] = []
        absent: list[str] = []
        for w in tw.union(probes):  # the order `add` reads them in
            n = toks.count(w) if w in STOPWORDS else tf.get(w, 0)
            if n:
                present.append(w)
                counts.append(n)
            else:
                absent.append(w)
        text = list(tf)
        text_counts = list(tf.values())
        for w in present:
            if w not in STOPWORDS:
                i = text.index(w)
                del text[i], text_counts[i]
        return self._put(vocab, present, counts, text, text_counts, absent, tw, probes)

    def _put(self, vocab: Vocabulary, present: list[str], present_counts: list[int], text: list[str],
             text_counts: list[int], absent: list[str], tw: frozenset[str], probes: tuple[str, ...]) -> int:
        """Append one text's rows: the title words and probes it holds, its other content words,
        then the title words and probes it lacks (count 0); the first and last kind carry bits."""
        keys = present + text + absent
        got = list(map(vocab.ids.get, keys))
        if None in got:
            id_of = vocab.id_of
            got = [id_of(w) if i is None else i for w, i in zip(keys, got)]
        start = len(self.ids)
        self.ids += got  # type: ignore[arg-type]  # every None replaced
        self.counts += present_counts
        self.counts += text_counts
        if absent:
            self.counts += [0] * len(absent)
        if present or absent:
            self.bit_at += range(start, start + len(present))
            self.bit_at += range(start + len(present) + len(text), start + len(keys))
            self.bits += [(w in probes) * 2 + (w in tw) for w in present]
            self.bits += [(w in probes) * 2 + (w in tw) for w in absent]
        return len(keys)

    def body(self) -> bytes:
        """Every row as (id, count * 4 + bits), int32 pairs."""
        out = np.empty((len(self.ids), 2), dtype=np.int32)
        out[:, 0] = self.ids
        out[:, 1] = self.counts
        out[:, 1] *= 4
        if self.bits:
            out[self.bit_at, 1] += np.asarray(self.bits, dtype=np.int32)
        return out.tobytes()


try:  # Counter's C counting loop, into a plain dict (what Counter() does, less its Python-level checks)
    from collections import _count_elements  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - an interpreter without it
    def _count_elements(mapping: dict[str, int], iterable: Any) -> None:
        get = mapping.get
        for w in iterable:
            mapping[w] = get(w, 0) + 1


_HEAD = struct.Struct(f"={HEAD_FIELDS}i")  # native int32s, as numpy's int32 tobytes writes them


def _head(rows: int, length: int, untrusted: bool, phrases: tuple[str, ...]) -> bytes:
    linkable = bool(phrases) and not untrusted
    return _HEAD.pack(rows, length, int(untrusted), int(linkable))


def rescore_indexes(pairs: Sequence[tuple[ChunkFeatures, Chunk]], vocab: Vocabulary) -> list[RescoreIndex]:
    """`rescore_index` of many chunks (a pool's first sight), built together: the rows of every
    stale one in one numpy pass instead of a handful of small arrays each."""
    out: list[RescoreIndex] = []
    rows = _Rows()
    #: (position in out, features, first row, rows, words, title phrases, title words)
    stale: list[tuple[int, ChunkFeatures, int, int, int, tuple[str, ...], frozenset[str]]] = []
    # each chunk's slots read once: another thread sharing the cache may fill them meanwhile, and
    # the words below are handed out in the order of this snapshot
    seen = [(f, chunk, f._rescore_index, f._rescore) for f, chunk in pairs]
    # the words of every chunk whose terms are not known, together (text.iter_words)
    fresh_words = iter_words([_title_text(chunk) for _, chunk, r, t in seen if r.vocab is not vocab and t is None])
    for f, chunk, r, t in seen:
        if r.vocab is not vocab:
            start = len(rows.ids)
            if t is None:
                toks = next(fresh_words)
                phrases, tw, probes = title_terms(chunk.title)
                tf: dict[str, int] = {}
                _count_elements(tf, filterfalse(STOPWORDS.__contains__, toks))
                n = rows.add_content(vocab, tf, toks, tw, probes)
                length = len(toks)
            else:
                tf = dict.fromkeys(t.words, 1) | t.repeats
                phrases, tw, probes, length = t.title_phrases, t.title_words, t.probes, t.length
                n = rows.add(vocab, tf, tw, probes)
            stale.append((len(out), f, start, n, length, phrases, tw))
        out.append(r)
    if stale:
        body = rows.body()
        for k, f, start, n, length, phrases, tw in stale:
            r = RescoreIndex(vocab, _head(n, length, f.untrusted, phrases), body[start * 8 : (start + n) * 8], phrases, tw)
            f._rescore_index = out[k] = r
    return out


class Glance(NamedTuple):
    """What re-scoring reads of chunks it has not indexed, for one question (`glance`): each
    chunk's index without word rows and its title's probe words, and where the wanted words
    occur: one (chunk, word, count) triple for each wanted word a chunk's "title text" holds, as
    three int64 arrays."""

    indexes: list[RescoreIndex]
    probes: list[tuple[str, ...]]
    rows: np.ndarray
    words: np.ndarray
    counts: np.ndarray


def glance(pairs: Sequence[tuple[ChunkFeatures, Chunk]], wanted: Sequence[str]) -> Glance:
    """First sight of chunks (issue 21, decision 3): only what this question needs of them. The
    "title text"s of those never seen are folded side by side (text.folded_codes) and the
    `wanted` words (folded, distinct: the question's content words) are found in them whole by
    numpy; a chunk whose terms a feature record gave is looked up in them. Nothing counts every
    word of every chunk into the vocabulary (a full `RescoreIndex`, ~35 µs a chunk from its text).
    Each chunk gets an index without word rows and without a vocabulary: re-scoring reads its
    head (width 0, length, untrusted, linkable) and title terms, and a later pool, finding it
    stale but not NO_INDEX, knows the chunk was seen and builds its full index."""
    terms = [f._rescore for f, _ in pairs]
    texts = [i for i, t in enumerate(terms) if t is None]
    laid = _LaidWords(folded_codes([_title_text(pairs[i][1]) for i in texts]))
    sizes = [0] * len(pairs)
    for i, size in zip(texts, laid.sizes()):
        sizes[i] = size
    index, probes = [], []
    for (f, chunk), t, size in zip(pairs, terms, sizes):
        phrases, tw, probe = title_terms(chunk.title) if t is None else (t.title_phrases, t.title_words, t.probes)
        r = RescoreIndex(None, _head(0, size if t is None else t.length, f.untrusted, phrases), b"", phrases, tw)
        if f._rescore_index is NO_INDEX:
            f._rescore_index = r
        index.append(r)
        probes.append(probe)
    # each (chunk, wanted word) as one number, chunk * width + word: found in the folded texts (an
    # occurrence each, counted by unique), then in the record terms (counted already)
    width = max(len(wanted), 1)
    found, counts = laid.found(wanted, np.asarray(texts, dtype=np.int64), width)
    recorded = _recorded_counts(terms, wanted)
    if recorded:
        found = np.concatenate((found, np.fromiter(recorded, dtype=np.int64, count=len(recorded))))
        counts = np.concatenate((counts, np.fromiter(recorded.values(), dtype=np.int64, count=len(recorded))))
    rows, words_ = np.divmod(found, width)
    return Glance(index, probes, rows, words_, counts)


class _LaidWords:
    """The words of texts laid side by side (text.Folded): where each begins and how long it is."""

    __slots__ = ("laid", "starts", "lengths")

    def __init__(self, laid: Folded) -> None:
        self.laid = laid
        space = laid.codes == 32
        self.starts = np.flatnonzero(space[:-1] & ~space[1:]) + 1
        self.lengths = np.flatnonzero(~space[:-1] & space[1:]) + 1 - self.starts

    def sizes(self) -> list[int]:
        """How many words each text has, in the order the texts were given."""
        laid = self.laid
        per_laid = np.diff(np.append(np.searchsorted(self.starts, laid.starts), len(self.starts))).tolist()
        out = [0] * len(per_laid)
        for k, size in zip(laid.order, per_laid):
            out[k] = size
        return out

    def found(self, wanted: Sequence[str], rows: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Each (text, wanted word) that occurs, as rows[text] * width + word, and how often."""
        at, k = _occurrences(self.laid.codes, self.starts, self.lengths, wanted)
        if not len(at):
            return _NONE, _NONE
        laid = self.laid
        text = np.asarray(laid.order, dtype=np.int64)[np.searchsorted(laid.starts, at, side="right") - 1]
        return np.unique(rows[text] * width + k, return_counts=True)  # type: ignore[no-any-return]


def _recorded_counts(terms: Sequence[RescoreTerms | None], wanted: Sequence[str]) -> dict[int, int]:
    """(chunk * len(wanted) + wanted word) -> its count, for the chunks whose terms a record gave:
    a word of the set occurs once unless `repeats` says more."""
    width = max(len(wanted), 1)
    out: dict[int, int] = {}
    for i, t in enumerate(terms):
        if t is not None:
            for k, w in enumerate(wanted):
                if w in t.words:
                    out[i * width + k] = t.repeats.get(w, 1)
    return out


def _occurrences(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                 wanted: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Where each wanted word occurs whole among the words at `starts` (of `lengths`) of `codes`,
    and which wanted word it is: a key of each word's length and first two code points narrows
    the candidates in one comparison per wanted word, then the rest is compared."""
    found: list[np.ndarray] = []
    which: list[np.ndarray] = []
    if len(starts) and wanted:
        key = _word_keys(codes, starts, lengths)
        for k, w in enumerate(wanted):
            at = _found(codes, starts, lengths, key, [ord(ch) for ch in w])
            if len(at):
                found.append(at)
                which.append(np.full(len(at), k, dtype=np.int64))
    if not found:
        return _NONE, _NONE
    return np.concatenate(found), np.concatenate(which)


#: words this long or longer get no key (-1) and are compared by length (a code point needs 21 bits)
_LONG = 1 << 20


def _word_keys(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each word's length, first and second code point (a space for a one-letter word) as one int64."""
    key = (lengths.astype(np.int64) << 42) | (codes[starts].astype(np.int64) << 21) | codes[starts + 1]
    key[lengths >= _LONG] = -1
    return key  # type: ignore[no-any-return]


def _found(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray, key: np.ndarray, cp: list[int]) -> np.ndarray:
    """Where the word of code points `cp` begins, at each of its whole occurrences."""
    if len(cp) < _LONG:
        at = starts[key == ((len(cp) << 42) | (cp[0] << 21) | (cp[1] if len(cp) > 1 else 32))]
        compared = 2
    else:
        at = starts[lengths == len(cp)]
        compared = 0
    for j in range(compared, len(cp)):
        if not len(at):
            break
        at = at[codes[at + j] == cp[j]]
    return at


_NONE = np.zeros(0, dtype=np.int64)


class ChunkFeatures:
    """What the moves need to know about one chunk's content, computed at most once each.

    Groups are filled on first use: a pool that never re-scores never tokenises for BM25, and
    statements are split only for chunks in a pair similar enough to be a conflict."""

    __slots__ = (
        "key", "untrusted", "retired", "_rescore", "_rescore_index", "_text_word_ids", "_text_phrase", "_text_words", "_copy_hash", "_statements",
        "_claims_record", "_subject", "_claims_read", "_head_folded", "_words_bound", "_copy_sketch",
        "costs",
    )

    def __init__(self, chunk: Chunk, key: ContentKey) -> None:
        self.key = key
        self.untrusted = chunk.untrusted
        self.retired = chunk.retired
        self._rescore: RescoreTerms | None = None
        #: rescore_terms as vocabulary ids: NO_INDEX until the chunk is first seen, then `glance`'s
        #: index without word rows (vocab None: stale, and the mark that it was seen), then the full
        #: one, built on its next pool; docket.rescore reads the slot directly on its hot path
        self._rescore_index: RescoreIndex = NO_INDEX
        self._text_word_ids: tuple[Vocabulary, np.ndarray] | None = None
        self._text_phrase: str | None = None
        self._text_words: frozenset[str] | None = None
        self._copy_hash: str | None = None
        self._statements: list[Any] | None = None
        #: the claims as a store persisted them, decoded on first use (most records never are)
        self._claims_record: list[Any] | None = None
        self._subject: frozenset[str] | None = None
        #: `claims_read`, filled on first use
        self._claims_read: Any = None
        #: `head_folded`, filled on first use
        self._head_folded: str | None = None
        #: `words_bound`, filled on first use
        self._words_bound: int | None = None
        #: `text.copy_sketch` of the text, filled on first use (`copy_values`); a `hash`, so this
        #: process's only: never written to a feature record (`record_of` keeps the copy hash)
        self._copy_sketch: int | None = None
        #: token counts of the rendered passage, by ("cost", counter name, render key, label class),
        #: and the lower bound pack reads before counting, by ("words", render key)
        self.costs: dict[tuple[Any, ...], int] = {}

    # --- re-scoring -------------------------------------------------------------------------
    def rescore_terms(self, chunk: Chunk) -> RescoreTerms:
        """What re-scoring reads: the words of "title text" (a set, plus the counts of the words
        that occur more than once), their number, the title variants as phrases, the content
        words of the last variant, and one probe word per variant phrase (a feature record keeps
        them; re-scoring itself reads `rescore_index`)."""
        r = self._rescore
        if r is None:
            toks = _title_text_words(chunk)
            tf = Counter(toks)
            phrases, tw, probes = title_terms(chunk.title)
            r = self._rescore = RescoreTerms(frozenset(tf), {w: n for w, n in tf.items() if n > 1}, len(toks), phrases,
                                             tw, probes)
        return r

    def rescore_index(self, chunk: Chunk, vocab: Vocabulary) -> RescoreIndex:
        """`rescore_terms` with its words as ids of `vocab` (rebuilt when another vocabulary is in
        use): from the terms when a record gave them, else straight from the text."""
        r = self._rescore_index
        if r.vocab is not vocab:
            r = rescore_indexes([(self, chunk)], vocab)[0]
        return r

    def text_word_ids(self, chunk: Chunk, vocab: Vocabulary) -> np.ndarray:
        """The `vocab` ids of `text_words` (int32): where link probes are looked for."""
        got = self._text_word_ids
        if got is None or got[0] is not vocab:
            got = self._text_word_ids = (vocab, np.asarray([vocab.id_of(w) for w in self.text_words(chunk)],
                                                           dtype=np.int32))
        return got[1]

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

    def head_folded(self, chunk: Chunk, fold: Callable[[str], str]) -> str:
        """`fold` of the chunk's "title\ntext", kept: the not-found gate looks for the question's
        exact terms in it on every query that has one (docket.answerable: one `fold` only, its
        `_folded`), and lower-casing a pool's texts again each time cost ~0.8 ms at 200."""
        h = self._head_folded
        if h is None:
            h = self._head_folded = fold(f"{chunk.title or ''}\n{chunk.text}")
        return h

    def copy_hash(self, chunk: Chunk) -> str:
        h = self._copy_hash
        if h is None:
            h = self._copy_hash = copy_hash(chunk.text)
        return h

    def words_bound(self, chunk: Chunk) -> int:
        """`text_words_bound(chunk.text)`, once per chunk (the reachable set reads it for every
        candidate of every pool the chunk is in)."""
        b = self._words_bound
        if b is None:
            b = self._words_bound = text_words_bound(chunk.text)
        return b

    def statements(self, chunk: Chunk) -> list[Any]:
        """The text's claims (docket.claims: the statements conflict detection compares)."""
        s = self._statements
        if s is None:
            rec = self._claims_record
            if rec is not None:
                from docket.claims import from_record as claims_from_record

                self._claims_record = None
                try:
                    s = claims_from_record(chunk.text, rec)
                except (ValueError, TypeError, IndexError):
                    s = None  # an unreadable record is recomputed, never trusted
            if s is None:
                from docket.claims import claims

                s = claims(chunk.text, self._subject)
            self._statements = s
        return s

    def claims_read(self, chunk: Chunk) -> Any:
        """What Moves 1-2 read of the statements to compare them (docket.claims.compare.PassageRead:
        a sketch, then the facts, their names and keys when a pair needs them), once per chunk: a
        warm query reads it for every chunk in a similar pair (~150 a query). Claims in hand (or in
        a record, which decodes cheaply) are read from; others are split only when a pair needs
        them, and kept there (not in `statements`: the split holds the text, not these features)."""
        r = self._claims_read
        if r is None:
            from docket.claims import claims
            from docket.claims.compare import PassageRead

            known = self._statements is not None or self._claims_record is not None
            r = self._claims_read = PassageRead(chunk.text, partial(claims, chunk.text, self._subject),
                                                self.statements(chunk) if known else None)
        return r

    def subject(self, chunk: Chunk) -> frozenset[str]:
        """Every claim's `subject` (docket.claims.subject; empty without claims), known before the
        claims are split: chunks that open with different names never conflict (docket.moves)."""
        if self._subject is None:
            from docket.claims import subject

            known = self._statements is not None or self._claims_record is not None  # (a record decodes cheaply)
            st = self.statements(chunk) if known else None
            self._subject = subject(chunk.text) if st is None else st[0].subject if st else frozenset()
        return self._subject


_COPY_SKETCH, _WORDS_BOUND_HELD = operator.attrgetter("_copy_sketch"), operator.attrgetter("_words_bound")


def copy_values(feats: Sequence[ChunkFeatures], chunks: Sequence[Chunk]) -> list[str | int]:
    """One value per chunk, equal for two chunks exactly when their texts are copies (the same
    `copy_key`): what a pool's first sight compares, without a `copy_hash` per chunk (a regex pass
    and a sha256 over each text, ~6 µs). Each chunk's `text.copy_sketch` (kept with its features;
    the pool's missing ones computed together) decides alone where no other chunk of the pool has
    the same sketch (then no other has the same copy key); chunks that share a sketch are told
    apart by their copy hashes (kept). A sketch is an int and a copy hash a str, so the two never
    meet as equal."""
    sk: list[int | None] = list(map(_COPY_SKETCH, feats))
    if None in sk:
        missing = [i for i, v in enumerate(sk) if v is None]
        for i, v in zip(missing, copy_sketches([chunks[i].text for i in missing])):
            feats[i]._copy_sketch = sk[i] = v
    if len(set(sk)) == len(sk):
        return sk  # type: ignore[return-value]  # no None among them
    repeated = {v for v, n in Counter(sk).items() if n > 1}
    return [feats[i].copy_hash(chunks[i]) if v in repeated else v for i, v in enumerate(sk)]  # type: ignore[misc]


def words_bounds(feats: Sequence[ChunkFeatures], chunks: Sequence[Chunk]) -> list[int]:
    """`ChunkFeatures.words_bound` of each chunk: the held ones read (one C-level pass), the
    missing ones computed and kept. (Laying a pool's texts side by side saves nothing here:
    `text_words_bound` of a text is already a few C passes over its bytes.)"""
    bound: list[int | None] = list(map(_WORDS_BOUND_HELD, feats))
    if None in bound:
        return [f.words_bound(c) for f, c in zip(feats, chunks)]
    return bound  # type: ignore[return-value]  # no None among them


_UNCHECKED = object()


class _Entry:
    """One chunk object: its content features and its vector as a float32 array."""

    __slots__ = ("chunk", "features", "vector", "norm", "checked")

    def __init__(self, chunk: Chunk, features: ChunkFeatures, vector: np.ndarray | None = None) -> None:
        self.chunk = chunk
        self.features = features
        self.vector: np.ndarray | None = None
        self.norm: float | None = None
        #: the embedder dimension the vector was last checked against (unchecked: a fresh object)
        self.checked: Any = _UNCHECKED
        if chunk.vector is not None:
            if _is_float32_of(vector, chunk):
                # the store's float32 array: its float64 values are the tuple's, so the norm is the same
                self.vector = vector
                self.norm = _norm(vector.astype(np.float64))  # type: ignore[union-attr]
            else:  # the tuple read once: float64 -> float32 rounds each value as converting it directly does
                v64 = _doubles(chunk.vector)
                self.vector = v64.astype(np.float32)
                self.norm = _norm(v64)


def _doubles(values: Sequence[float]) -> np.ndarray:
    """The values as a float64 array: packed by a struct of their length (one C call over the
    arguments, ~2.5 µs for 384 where array.array's item-by-item loop takes ~6: a first sight
    reads every candidate's vector tuple once), else as array.array reads them."""
    try:
        return np.frombuffer(_packer(len(values)).pack(*values))
    except struct.error:  # a value struct will not take as a double: the general path says what it is
        return np.frombuffer(array.array("d", values))


@lru_cache(maxsize=64)
def _packer(n: int) -> struct.Struct:
    return struct.Struct(f"{n}d")


def _norm(v64: np.ndarray) -> float:
    """`float(np.linalg.norm(v64))` of a 1-D float64 array without its argument checks: numpy
    computes it as sqrt(v64.dot(v64)), and a correctly rounded square root is the same in math."""
    return math.sqrt(v64.dot(v64))


def _is_float32_of(vector: np.ndarray | None, chunk: Chunk) -> bool:
    """`vector` is an offered float32 array of the chunk's length (what a store built its tuple from)."""
    return (vector is not None and chunk.vector is not None and vector.dtype == np.float32
            and vector.shape == (len(chunk.vector),))


class _Generations:
    """A bounded map with near-LRU eviction at O(1): look-ups read the young generation, then the
    old one (promoting the hit); when the young one is full it becomes the old one. Safe to share
    between threads for caches: a race computes a value twice, never wrongly."""

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
    """Features of the chunks seen so far, bounded to about `capacity` chunks (and at most
    OBJECT_CAPACITY chunk objects, OFFERED_CAPACITY offered records). Safe to share between
    threads: a race computes a feature twice, never wrongly."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._objects = _Generations(min(capacity, OBJECT_CAPACITY))  # id(chunk) -> _Entry (holds the chunk)
        self._content = _Generations(capacity)  # content key -> ChunkFeatures
        self._offered = _Generations(min(capacity, OFFERED_CAPACITY))  # id(chunk) -> (chunk, record) just read
        self.computed = 0
        self.loaded = 0

    def entry(self, chunk: Chunk) -> _Entry:
        e = self._objects.get(id(chunk))
        if e is not None and e.chunk is chunk:
            return e  # type: ignore[no-any-return]
        key = content_key(chunk)
        offered = self._offered.get(id(chunk))
        if offered is not None and offered[0] is not chunk:
            offered = None  # another object at a recycled address
        f = self._content.get(key)
        if f is None:
            if offered is not None and offered[1]:
                f = from_record(chunk, key, offered[1])
                if f is not None:
                    self.loaded += 1
            if f is None:
                f = ChunkFeatures(chunk, key)
                self.computed += 1
            self._content.put(key, f)
        e = _Entry(chunk, f, offered[2] if offered is not None else None)
        self._objects.put(id(chunk), e)
        return e

    def vector_of(self, chunk: Chunk) -> np.ndarray | None:
        """`chunk.vector` as float32: the entry's or the array its store offered with it (no
        conversion of the tuple, no feature record parsed), else converted."""
        if chunk.vector is None:
            return None
        e = self._objects.young.get(id(chunk))
        if e is not None and e.chunk is chunk and e.vector is not None:
            return e.vector  # type: ignore[no-any-return]
        offered = self._offered.get(id(chunk))
        if offered is not None and offered[0] is chunk and _is_float32_of(offered[2], chunk):
            return offered[2]  # type: ignore[no-any-return]
        return np.asarray(chunk.vector, dtype=np.float32)

    def features(self, chunk: Chunk) -> ChunkFeatures:
        e = self._objects.young.get(id(chunk))
        if e is None or e.chunk is not chunk:
            e = self.entry(chunk)
        return e.features  # type: ignore[no-any-return]

    def entries(self, chunks: Sequence[Chunk]) -> list[_Entry]:
        get = self._objects.young.get
        # every chunk object's entry among the young ones (a warm pool): read by C-level look-ups
        found = list(map(get, map(id, chunks)))
        if not any(map(operator.is_, found, repeat(None))) and all(map(operator.is_, map(_ENTRY_CHUNK, found), chunks)):
            return found  # type: ignore[return-value]  # no None among them
        out = []
        for c in chunks:
            e = get(id(c))
            if e is None or e.chunk is not c:
                e = self.entry(c)
            out.append(e)
        return out

    def of_passages(self, passages: Sequence[Any]) -> list[ChunkFeatures | None]:
        """The features of each passage that is one whole chunk (its text is the chunk's), else None."""
        if set(map(len, map(_CHUNKS, passages))) <= {1} and set(map(_OVERRIDE, passages)) <= {None}:
            return list(map(_FEATURES, self.entries(list(map(_FIRST, passages)))))  # every one a whole chunk
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

    def offer(self, chunk: Chunk, record: str | bytes | None, vector: np.ndarray | None = None) -> None:
        """A store hands over the feature record it keeps for a row it just read: used (parsed)
        only if the chunk's features are not in memory when first asked for. Cheap to call.

        `vector`, when given, must be `chunk.vector` as float32 exactly (the array the store
        built the chunk's tuple from): the entry then uses it instead of converting the tuple
        back, twice (~15 µs a chunk, on every chunk a query sees for the first time)."""
        if record or vector is not None:
            self._offered.put(id(chunk), (chunk, record, vector))

    def adopt(self, chunk: Chunk, features: ChunkFeatures) -> None:
        """Register features computed elsewhere (e.g. loaded from a store) for this chunk."""
        self._content.put(features.key, features)
        self._objects.put(id(chunk), _Entry(chunk, features))

    def __len__(self) -> int:
        return len(self._content)

    def clear(self) -> None:
        self._objects.clear()
        self._content.clear()
        self._offered.clear()


_ENTRY_CHUNK, _FEATURES = operator.attrgetter("chunk"), operator.attrgetter("features")


#: the printable characters docket.brief.clean removes (its _INVISIBLE class less what is not printable)
_PRINTABLE_REMOVED = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
                                "\U000e0100-\U000e01ef]")
#: letters and digits that docket.brief.clean never removes and o200k_base never joins across a space
_SURE = re.compile(r"[0-9A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff\u4e00-\u9fff]")


def text_words_bound(text: str) -> int:
    """A lower bound of the o200k_base tokens of any rendering of `text`: its words. The
    tokenizer's pre-tokens never hold two runs of text a space apart, and each is one token or
    more. Only runs the renderer keeps whole count: a plain printable text's words, else the runs
    between spaces and newlines holding a letter or digit that cleaning never removes. (The
    reachable set's bound, docket.moves.reach; a pure function of the text, kept per chunk.)
    Never above `text.count(" ") + text.count("\n") + 1`, the runs between spaces and newlines
    (every branch counts some of those runs; docket.brief.sizer's `at_least` relies on it)."""
    if text.isascii():  # most texts: classed byte by byte in one C pass, no word list made
        b = text.encode("ascii").translate(_ASCII_WORD_CLASS)
        if b"\0" not in b:  # printable but for newlines: the words of the branch below, counted
            return b.count(b" x") + b.startswith(b"x")
    else:
        flat = text.replace("\n", " ")
        if flat.isprintable():
            u = flat.encode("utf-8")
            # cleaning removes nothing: none of its characters' first bytes is there (a few C scans), or none of them
            if not any(map(u.__contains__, _REMOVED_LEADS)) or _PRINTABLE_REMOVED.search(flat) is None:
                # printable: " " is its only space (no UTF-8 sequence holds its byte)
                b = u.translate(_UTF8_WORD_CLASS)
                return b.count(b" x") + b.startswith(b"x")
    # the runs between spaces and newlines holding a sure character, each found by one regex match
    return len(_SURE_RUN.findall(text))


#: the UTF-8 bytes of a printable text classed: the space -> " ", any other byte -> "x" (a word
#: starts at each "x" that opens the text or follows a " ": `len(flat.split())` without the list;
#: tests/test_cold_bounds.py checks every path against the per-word reading)
_UTF8_WORD_CLASS = bytes(32 if b == 32 else 120 for b in range(256))
#: the first UTF-8 byte of every character _PRINTABLE_REMOVED matches (U+034F: CD; U+115F-U+180F:
#: E1; U+3164: E3; U+FExx, U+FFA0: EF; U+E01xx: F3; tests/test_cold_bounds.py checks them all)
_REMOVED_LEADS = (b"\xcd", b"\xe1", b"\xe3", b"\xef", b"\xf3")
#: a run between spaces and newlines that holds a letter or digit of _SURE, matched whole from its
#: start (only there: a linear scan, never a retry inside a run) to its end, so each counted run is
#: one match
_SURE_RUN = re.compile(r"(?<![^ \n])[^ \n]*?" + _SURE.pattern + r"[^ \n]*")
#: ASCII bytes as `text_words_bound` classes them: space and newline -> " ", the other printable
#: ones -> "x", anything else (a control character: the text is not printable) -> NUL
_ASCII_WORD_CLASS = bytes(32 if b in (10, 32) else 120 if 32 < b < 127 else 0 for b in range(256))


_CHUNKS, _OVERRIDE, _FIRST = operator.attrgetter("chunks"), operator.attrgetter("text_override"), operator.attrgetter("first")

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


def render_key(policy: Any) -> str:
    """A short, stable digest of every render setting (anything that can change a rendered
    passage): rendered counts are cached, and persisted, under it."""
    return hashlib.sha256(policy.model_dump_json().encode()).hexdigest()[:16]


# --- persisted features -------------------------------------------------------------------------

#: the layout of a persisted feature record; a record of another version is ignored (recomputed).
#: 2 added the claims (conflict detection's statements); a version-1 record is still read, its
#: claims computed when first asked for. 3: claims read currency codes, number words, hyphenated
#: units and table rows (issue 24); a version-2 record is read without its (stale) claims.
RECORD_VERSION = 3
_READABLE = (1, 2, 3)


def record_of(chunk: Chunk, counter: Any = None, costs: CostWriter | None = None) -> str:
    """Every question-independent feature of `chunk` as JSON, for a store to keep next to the row
    (written at index time, read back by `FeatureCache.offer`): the re-scoring terms, the copy
    hash, the claims conflict detection compares (the costliest feature to compute on a first
    sight: ~1 ms a passage) and, when `costs` is given, the token counts of the passage as rendered
    (docket.brief.sizer.record_costs: this module knows nothing of rendering, so the wiring
    passes them in). Without them the counts are computed the first time a brief sizes the chunk."""
    from docket.tokens import default_counter

    counter = counter or default_counter()
    key = content_key(chunk)
    f = ChunkFeatures(chunk, key)
    t = f.rescore_terms(chunk)
    return json.dumps({
        "v": RECORD_VERSION,
        "key": digest(key),
        "words": sorted(t.words), "repeats": t.repeats, "length": t.length, "title_phrases": list(t.title_phrases),
        "title_words": sorted(t.title_words), "probes": list(t.probes),
        "copy_hash": f.copy_hash(chunk),
        "costs": costs(chunk, counter) if costs is not None else [],
        "claims": _claims_or_none(chunk, f),
    }, ensure_ascii=False, separators=(",", ":"))


#: the rendered token counts of a chunk for its feature record: [[counter, render key, label class, n], ...]
CostWriter = Callable[[Chunk, Any], list[list[Any]]]
#: what a store calls to write a chunk's feature record (record_of, or the wiring's with costs)
RecordWriter = Callable[[Chunk], str]


def _claims_or_none(chunk: Chunk, f: ChunkFeatures) -> list[Any] | None:
    """The claims for the record, or None (then computed when asked) if they cannot be written."""
    from docket.claims import to_record

    try:
        return to_record(chunk.text, f.statements(chunk))
    except ValueError:
        return None


def stored_features(chunk: Chunk, status: str, record: RecordWriter | None = None) -> str:
    """The chunk's feature record as a store writes it (with the status the store gives its
    version), by `record` (default `record_of`)."""
    write = record or record_of
    return write(chunk if chunk.status == status else chunk.model_copy(update={"status": status}))


def from_record(chunk: Chunk, key: ContentKey, record: str | bytes) -> ChunkFeatures | None:
    """The features a record holds, or None when it is of another layout or for other content
    (the row changed since it was written, e.g. a version was superseded: then they are recomputed)."""
    try:
        r = json.loads(record)
        if not isinstance(r, dict) or r.get("v") not in _READABLE or r.get("key") != digest(key):
            return None
        f = ChunkFeatures(chunk, key)
        f._rescore = RescoreTerms(frozenset(r["words"]), dict(r["repeats"]), int(r["length"]), tuple(r["title_phrases"]),
                                  frozenset(r["title_words"]), tuple(r["probes"]))
        f._copy_hash = r["copy_hash"]
        f.costs = {("cost", c, k, cls): int(n) for c, k, cls, n in r["costs"]}
        claims = r.get("claims") if r.get("v") == RECORD_VERSION else None
        if isinstance(claims, list) and claims:
            f._claims_record = claims
        return f
    except (ValueError, TypeError, KeyError, IndexError):
        return None  # an unreadable record is recomputed, never trusted
