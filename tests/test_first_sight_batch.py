"""A pool's first-sight features computed together (issue 21, decision 3): the same values as the
per-chunk functions, text by text, on open-ended texts (non-ASCII, combining marks, control
characters, lone surrogates, empty, long without a space), in any mix of them in one pool.

- `text.copy_sketches` is `copy_sketch` of each text, and a function of `copy_key` (two copies
  always share a sketch: the reachable set never misses a copy);
- `features.copy_values` are equal exactly where the copy hashes are;
- `features.words_bounds` reads the held word bounds and keeps the computed ones.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.features import ChunkFeatures, content_key, copy_values, text_words_bound, words_bounds
from docket.model import Chunk
from docket.moves.dedup import collapse
from docket.text import copy_hash, copy_key, copy_sketch, copy_sketches

from helpers import context, mk, passages

#: pieces that meet every path: ASCII words and punctuation, control characters, accents and
#: combining marks, dashes and curly quotes, no-break and other spaces, CJK, a lone surrogate, a
#: final sigma, characters cleaning removes, the byte the batches lay texts between (U+00FF: its
#: UTF-8 is C3 BF, never FF)
PIECES = ["Kenji", "akinoshū", "Akinoshu\u0304", "–", "—", "’", "“", "\u00a0", "\u2009", "\u3000", "。", "中文", "東京",
          "\t", "\n", " ", "  ", "x", "İ", "\ud800", "\U0001f600", "_", "'", "1945", "е", "ß", "\u0301", "ΟΔΟΣ", "\u0130", "\u212a", "K",
          "\x00", "\x7f", "\x1c", "\u034f", "\ufe0f", "\U000e0100", "\u200b", "ÿ", ".", ",", "(a)", "\r\n"]

TEXTS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    st.text(max_size=60),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=80),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXTS, max_size=12))
def test_copy_sketches_are_each_texts_sketch(texts: list[str]) -> None:
    assert copy_sketches(texts) == [copy_sketch(t) for t in texts]
    assert copy_sketches(texts) == [_sketch_reference(t) for t in texts]


def _sketch_reference(text: str) -> int:
    """The definition: the hash of the ASCII word characters of the copy key."""
    return hash(bytes(c for c in copy_key(text).encode("utf-8", "surrogatepass") if c < 128 and c != 32))


def test_only_the_listed_characters_lower_case_into_ascii_word_characters() -> None:
    from docket.text import _LOWERS_TO_ASCII

    found = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000
             and any(ord(x) < 128 and (x.isalnum() or x == "_") for x in chr(c).lower())]
    assert sorted(found) == sorted(_LOWERS_TO_ASCII)
    for ch in found:  # each one read through str.lower, alone and beside other texts
        assert copy_sketches(["a b", f"x{ch}y", "é"]) == [_sketch_reference(t) for t in ["a b", f"x{ch}y", "é"]]


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.lists(st.sampled_from([" ", "  ", ",", "—", "\u00a0", "\n", "'", "’", "."]), min_size=1, max_size=6))
def test_copies_share_a_sketch(text: str, gaps: list[str]) -> None:
    """A copy that differs only in case and in the non-word characters between its words."""
    words = copy_key(text).split()
    rng = random.Random(len(text))
    copy = "".join(w.upper() + rng.choice(gaps) for w in words)
    if copy_key(copy) == copy_key(text):  # (upper case can change a word: "ß" -> "SS")
        assert copy_sketch(copy) == copy_sketch(text)
        assert copy_sketches([text, copy]) == [copy_sketch(text)] * 2


def test_copies_share_a_sketch_examples() -> None:
    for text, copy in [("Kenji's  film, 1945.", "kenji S FILM—1945"), ("中文。東京", "中文 東京"), ("a\u00a0b", "A  B"),
                       ("", "—"), ("Ωμέγα λ", "ΩΜΈΓΑ, Λ")]:
        assert copy_key(copy) == copy_key(text)
        assert copy_sketch(copy) == copy_sketch(text)


def test_batches_of_every_path_together() -> None:
    long_run = "\u00a0" + "·" * 50_000
    texts = ["", " ", "plain words here", "nul\x00x", "café au lait", "x\u034fy z", "中文 字", long_run, "a" * 100_000,
             "ÿ ÿ", "tab\there", "Ωμέγα λ", "\ud800 lone", "line\nbreak é", "\U000e0100 a"]
    assert copy_sketches(texts) == [_sketch_reference(t) for t in texts]
    assert copy_sketches([]) == []


def _features(texts: list[str]) -> tuple[list[ChunkFeatures], list[Chunk]]:
    # constructed as they are (validation refuses an empty text): these functions read only the text
    chunks = [Chunk.model_construct(id=f"c{i}", doc=f"d{i}", text=t) for i, t in enumerate(texts)]
    return [ChunkFeatures(c, content_key(c)) for c in chunks], chunks


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(TEXTS, st.sampled_from(["Same text.", "same  TEXT", "same—text", "Other text"])), max_size=10))
def test_copy_values_equal_exactly_where_copy_hashes_are(texts: list[str]) -> None:
    feats, chunks = _features(texts)
    values = copy_values(feats, chunks)
    hashes = [copy_hash(t) for t in texts]
    for i in range(len(texts)):
        for j in range(len(texts)):
            assert (values[i] == values[j]) == (hashes[i] == hashes[j]), (texts[i], texts[j])
    assert copy_values(feats, chunks) == values  # the sketches kept: read again, the same values
    assert all(f._copy_sketch == copy_sketch(c.text) for f, c in zip(feats, chunks))


def test_copy_values_of_copies_are_their_hashes() -> None:
    feats, chunks = _features(["Same text.", "an other", "same  TEXT", "one more"])
    values = copy_values(feats, chunks)
    assert values[0] == values[2] == copy_hash("Same text.")
    assert isinstance(values[1], int) and isinstance(values[3], int) and values[1] != values[3]


def test_words_bounds_read_the_held_ones_and_keep_the_rest() -> None:
    feats, chunks = _features(["one two", "three", "four five six"])
    feats[1]._words_bound = 7  # held: read, not recomputed
    assert words_bounds(feats, chunks) == [2, 7, 3]
    assert [f._words_bound for f in feats] == [2, 7, 3]
    assert words_bounds(feats, chunks) == [2, 7, 3]  # every one held
    assert text_words_bound("one two") == 2



TITLES = st.one_of(
    st.lists(st.sampled_from(["Kiss", "and", "Tell", "(1945 film)", "(", ")", "the", "Akinoshū", "Kenji's", " ", "of",
                              "中文", "\u0301", "''", "İ", "ΟΔΟΣ", "(a (b) c)", "x", "\u3000", "\n", "\u00a0"]),
             max_size=8).map("".join),
    st.text(max_size=30),
)


def _title_terms_reference(title: str) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]:
    """title_terms as it was before its one-variant path: every variant by the general reading."""
    import re

    from docket.text import STOPWORDS, words

    out = [title]
    bare = re.sub(r"\s*\([^)]*\)\s*", " ", title).strip()
    if bare and bare != title:
        out.append(bare)
    variants = [w for w in (words(t) for t in out) if not STOPWORDS.issuperset(w)]
    phrases = tuple(" " + " ".join(w) + " " for w in variants)
    probes = tuple(max(w, key=len) for w in variants)
    tw = frozenset(w for w in variants[-1] if w not in STOPWORDS) if variants else frozenset()
    return phrases, tw, probes


@settings(max_examples=400, deadline=None)
@given(TITLES)
def test_title_terms_of_one_variant_are_the_general_ones(title: str) -> None:
    from docket.features import title_terms

    assert title_terms.__wrapped__(title) == _title_terms_reference(title)


def test_title_terms_examples() -> None:
    from docket.features import title_terms

    for title in ["", " ", "the of", "Kiss and Tell (1945 film)", " Padded ", "\u3000Wide\u3000", "Akinoshū Kenji's",
                  "(only a qualifier)", "The", "x"]:
        assert title_terms.__wrapped__(title) == _title_terms_reference(title), repr(title)


def test_dedup_drops_copies_and_keeps_texts_that_only_share_a_sketch() -> None:
    """Move 2 reads copy values: copies go whatever their sketch (CJK text has the empty one), texts
    whose ASCII words agree but whose other words differ stay."""
    chunks = [mk("a", doc="a", text="中文。東京"), mk("b", doc="b", text="中文 東京"), mk("c", doc="c", text="北京 上海"),
              mk("d", doc="d", text="Café at noon"), mk("e", doc="e", text="Cafè at noon"), mk("f", doc="f", text="CAFÉ, at noon!")]
    assert copy_sketch("北京 上海") == copy_sketch("中文 東京") and copy_sketch("Café at noon") == copy_sketch("Cafè at noon")
    out = collapse(passages(chunks), context(chunks))  # no embedder: copies by their values only
    assert [p.first.id for p in out] == ["a", "c", "d", "e"]
    assert [p.also_in[0]["chunks"] for p in out if p.also_in] == [["b"], ["f"]]


@settings(max_examples=400, deadline=None)
@given(TITLES, st.lists(st.sampled_from(PIECES), max_size=12).map("".join), st.booleans())
def test_move_1_reads_a_title_in_a_text_as_rescore_does(title: str, text: str, named: bool) -> None:
    """Move 1's title test (versions._title_in: the title's phrases as title_terms keeps them) is
    rescore.title_in, for the title and for its head before a comma, in texts that name it or not."""
    from docket.moves.versions import _title_in
    from docket.rescore import title_in
    from docket.text import phrase

    hay = phrase(f"{text} {title} {text}" if named else text)
    for t in (title, title.split(",")[0].strip()):
        assert _title_in(t, hay) == title_in(t, hay)


def test_move_1_title_examples() -> None:
    from docket.moves.versions import _names_title, _title_in
    from docket.text import phrase

    assert _title_in("Kiss and Tell (1945 film)", phrase("In Kiss and Tell, a comedy"))
    assert not _title_in("Kiss and Tell (1945 film)", phrase("Kiss or Tell"))
    assert _names_title.__wrapped__("Wangcun, Jimo", "Wangcun is a town.")
    assert not _names_title.__wrapped__("Wangcun, Jimo", "A town in Jimo.")
