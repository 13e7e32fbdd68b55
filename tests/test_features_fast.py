"""The first-sight feature paths (issue 21, decision 3) build exactly what the per-chunk code they
replaced built: the same re-scoring rows, head and body bytes, and the same vocabulary ids given
in the same order. The reference below is that code, kept as it was."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.features import (
    ChunkFeatures,
    RescoreIndex,
    Vocabulary,
    _head,
    _Rows,
    content_key,
    rescore_indexes,
    title_terms,
)
from docket.model import Chunk
from docket.text import STOPWORDS, words

from helpers import mk


class _ReferenceRows(_Rows):
    def add(self, vocab: Vocabulary, tf: Mapping[str, int], tw: frozenset[str], probes: tuple[str, ...]) -> int:
        special = tw.union(probes)
        keys = [w for w in special if w in tf]
        n_special = len(keys)
        keys += [w for w in tf if w not in STOPWORDS and w not in special]
        n_text = len(keys)
        keys += [w for w in special if w not in tf]
        got = list(map(vocab.ids.get, keys))
        if None in got:
            id_of = vocab.id_of
            got = [id_of(w) if i is None else i for w, i in zip(keys, got)]
        start = len(self.ids)
        self.ids += got  # type: ignore[arg-type]
        self.counts += map(tf.__getitem__, keys[:n_text])
        self.counts += [0] * (len(keys) - n_text)
        for j in [*range(n_special), *range(n_text, len(keys))]:
            w = keys[j]
            self.bit_at.append(start + j)
            self.bits.append((w in probes) * 2 + (w in tw))
        return len(keys)


def reference_indexes(chunks: list[Chunk], vocab: Vocabulary) -> list[RescoreIndex]:
    """rescore_indexes of fresh chunks, one chunk at a time (the code before the batch paths)."""
    rows = _ReferenceRows()
    made = []
    for chunk in chunks:
        title = chunk.title
        toks = words(f"{title} {chunk.text}" if title else chunk.text)
        tf = Counter(toks)
        phrases, tw, probes = title_terms(chunk.title)
        start = len(rows.ids)
        made.append((start, rows.add(vocab, tf, tw, probes), len(toks), phrases, tw, chunk.untrusted))
    body = rows.body() if made else b""
    return [RescoreIndex(vocab, _head(n, length, untrusted, phrases), body[start * 8 : (start + n) * 8], phrases, tw)
            for start, n, length, phrases, tw, untrusted in made]


#: words, stop words (a probe may be one), apostrophes, accents precomposed and combining, letters
#: that fold to ASCII, astral characters, separators, parentheses (title variants)
PIECES = ["the", "of", "Kenji", "kenji's", "Rock", "rock", "band", "'", "don't", " ", "  ", ",", ".", "-", "\n", "(",
          ")", "1945 film", "Akinoshū", "e\u0301", "\u0301", "ﬁ", "𝔘", "\U0001f600", "中文", "Σ", "İ", "’", "\u00a0", "x"]
_TEXT = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def _chunk(i: int, title: str, text: str, untrusted: bool) -> Chunk:
    return mk(f"c{i}", text.strip() or "x", title=title, trust="untrusted" if untrusted else "trusted")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(_TEXT, st.text(max_size=20)), st.one_of(_TEXT, st.text(max_size=60)),
                          st.booleans()), min_size=1, max_size=10),
       st.lists(st.sampled_from(["kenji", "rock", "band", "akinoshu", "the", "x"]), max_size=4))
def test_rescore_indexes_equal_the_per_chunk_reference(rows: list[tuple[str, str, bool]], known: list[str]) -> None:
    chunks = [_chunk(i, title, text, untrusted) for i, (title, text, untrusted) in enumerate(rows)]
    ours, theirs = Vocabulary(), Vocabulary()
    for w in known:  # a vocabulary that knows some words already: new ids follow on in the same order
        ours.id_of(w)
        theirs.id_of(w)
    got = rescore_indexes([(ChunkFeatures(c, content_key(c)), c) for c in chunks], ours)
    want = reference_indexes(chunks, theirs)
    assert [r[1:] for r in got] == [r[1:] for r in want]
    assert ours.ids == theirs.ids
    assert all(r.vocab is ours for r in got)


def test_rescore_indexes_examples() -> None:
    chunks = [mk("a", "Kiss and Tell is a 1945 film. The film's star...", title="Kiss and Tell (1945 film)"),
              mk("b", "Akinoshū Kenji's rock band; the band played.", title="Akinoshū"),
              mk("c", "No title here, of the the.")]
    got = rescore_indexes([(ChunkFeatures(c, content_key(c)), c) for c in chunks], Vocabulary())
    want = reference_indexes(chunks, Vocabulary())
    assert [r[1:] for r in got] == [r[1:] for r in want]
    assert all(len(r.body) > 0 for r in got)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e30, max_value=1e30),
                min_size=1, max_size=40))
def test_entry_vector_and_norm_are_numpys(values: list[float]) -> None:
    """_Entry reads a chunk's vector through array.array and takes its norm as sqrt(dot): the same
    float32 array and the same float as np.asarray and np.linalg.norm (issue 21)."""
    import numpy as np

    from docket.features import FeatureCache

    c = mk("v", "some text", vector=values)
    e = FeatureCache().entry(c)
    v64 = np.asarray(c.vector, dtype=np.float64)
    assert e.vector is not None and e.vector.tobytes() == v64.astype(np.float32).tobytes()
    assert e.norm == float(np.linalg.norm(v64))
    f32 = v64.astype(np.float32)
    offered = FeatureCache()
    offered.offer(c, None, f32)
    assert offered.entry(c).norm == float(np.linalg.norm(f32.astype(np.float64)))
