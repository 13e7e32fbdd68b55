"""docket.text.words (str.translate and str.split) gives exactly the words of its definition: each
`[\\w']+` run of the folded text, apostrophes stripped, one trailing "'s" dropped, empty ones out."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.text import (
    _PAREN,
    STOPWORDS,
    copy_hash,
    copy_key,
    fold,
    folded_codes,
    iter_words,
    title_variant_words,
    words,
)

_RUN = re.compile(r"[\w']+")


def reference(text: str) -> list[str]:
    out = []
    for w in _RUN.findall(fold(text)):
        w = w.strip("'")
        if w.endswith("'s"):
            w = w[:-2]
        if w:
            out.append(w)
    return out


TRICKY = list("ab's S'_-1 ") + ["''", "'s", "’", "\n", "\t", "\u00a0", "\u3000", "\x1c", "É", "ß", "ŉ", "İ", "Σ", "ﬁ",
                                "\u0301", "中", "١", "²", "½", "Ⅻ", "\u200b", "🙂", "ǅ"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(TRICKY), max_size=40).map("".join))
def test_words_as_defined_on_tricky_text(text: str) -> None:
    assert words(text) == reference(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_words_as_defined_on_any_text(text: str) -> None:
    assert words(text) == reference(text)


def test_words_examples() -> None:
    assert words("Akinoshū Kenji's 'rock''s' don't x's' '''") == ["akinoshu", "kenji", "rock'", "don't", "x"]


def test_no_word_character_is_a_space() -> None:
    """str.split may cut the translated text: no character `\\w` matches is whitespace."""
    assert not [cp for cp in range(0x110000) if chr(cp).isspace() and (chr(cp).isalnum() or chr(cp) == "_")]


def copy_key_reference(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(TRICKY), max_size=40).map("".join), st.text(max_size=60)))
def test_copy_key_as_defined(text: str) -> None:
    """copy_key (str.translate and str.split) is `\\W+` runs as one space, ends stripped."""
    assert copy_key(text) == copy_key_reference(text)


# --- the batch and ASCII paths (issue 21, decision 3): the same words as the one-text functions ---

#: ASCII text with words, apostrophes and separators; accents precomposed and combining; letters
#: that fold to ASCII (ﬁ) or change length when lower-cased (İ); astral characters; a lone
#: surrogate; control characters; the empty string
def words_many(texts: list[str]) -> list[list[str]]:
    """`iter_words` of a whole list, as the pool's first sight reads it (docket.features)."""
    return list(iter_words(texts))


BATCH_PIECES = [*TRICKY, "Kenji", "don't", "'", "é", "e\u0301", "\u0308", "ﬁ", "𝔘", "\U0001f600", "\ud800", "\x00", "K",
                "Ａ", "Σς", "abc", "  ", "."]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.lists(st.sampled_from(BATCH_PIECES), max_size=30).map("".join), st.text(max_size=40)),
                max_size=12))
def test_words_many_is_words_of_each(texts: list[str]) -> None:
    assert words_many(texts) == [words(t) for t in texts]


def test_words_many_examples() -> None:
    texts = ["Akinoshū Kenji's", "", "plain ascii, text's", "ﬁne", "\u0301", "Σ x"]
    assert words_many(texts) == [words(t) for t in texts]
    assert words_many([]) == []


def folded_words(texts: list[str]) -> list[list[str]]:
    """The words `folded_codes` lays out for each text: the runs of non-space code points in its stretch."""
    laid = folded_codes(texts)
    ends = [*laid.starts.tolist()[1:], len(laid.codes)]
    out: list[list[str]] = [[] for _ in texts]
    for i, start, end in zip(laid.order, laid.starts.tolist(), ends):
        stretch = laid.codes[start:end].astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")
        out[i] = [w for w in stretch.split(" ") if w]
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.lists(st.sampled_from([*BATCH_PIECES, "'s", "''", "x's's", "s'"]), max_size=30).map("".join),
                          st.text(max_size=40), st.text(alphabet=st.characters(max_codepoint=127), max_size=40)),
                max_size=12))
def test_folded_codes_lay_out_the_words_of_each_text(texts: list[str]) -> None:
    assert folded_words(texts) == [words(t) for t in texts]
    laid = folded_codes(texts)
    assert sorted(laid.order) == list(range(len(texts))) and laid.codes[0] == 32 and laid.codes[-1] == 32


def test_folded_codes_examples() -> None:
    texts = ["Akinoshū Kenji's", "", "plain ascii, text's", "ﬁne", "\u0301", "Σ x", "'''", "rock''s' o'neil's", "x's's"]
    assert folded_words(texts) == [words(t) for t in texts]
    assert folded_words([]) == []


def copy_hash_reference(text: str) -> str:
    """copy_hash as it was: sha256 of copy_key, encoded."""
    return hashlib.sha256(copy_key(text).encode()).hexdigest()


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(BATCH_PIECES), max_size=40).map("".join), st.text(max_size=60),
                 st.text(alphabet=st.characters(max_codepoint=127), max_size=80)))
def test_copy_hash_is_sha256_of_copy_key(text: str) -> None:
    assert copy_hash(text) == copy_hash_reference(text)


#: what the non-ASCII path replaces one character at a time: dashes, curly quotes, no-break and
#: other spaces, CJK punctuation, tabs and line breaks next to words in several scripts
COPY_PIECES = ["Kenji", "Akinoshū", "–", "—", "’", "“", "”", "\u00a0", "\u2009", "\u3000", "。", "、", "中文", "東京",
               "\t", "\n", " ", "x", "İ", "\ud800", "\U0001f600", "_", "'", "1945", "е", "ß", "\u0301"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(COPY_PIECES), max_size=60).map("".join))
def test_copy_hash_of_mixed_scripts_is_sha256_of_copy_key(text: str) -> None:
    assert copy_hash(text) == copy_hash_reference(text)


def test_copy_hash_of_every_code_point_is_sha256_of_copy_key() -> None:
    """Every non-ASCII code point, 512 to a text, between ASCII words (the bytes path must agree
    with str.translate on each character: word character kept, any other one a space)."""
    for start in range(0x80, 0x110000, 512):
        text = "a " + "b".join(chr(cp) for cp in range(start, min(start + 512, 0x110000))) + " z"
        assert copy_hash(text) == copy_hash_reference(text), hex(start)


def title_variant_words_reference(title: str) -> list[list[str]]:
    """title_variant_words as it was: the parenthetical pattern run on every title."""
    out = [title]
    bare = _PAREN.sub(" ", title).strip()
    if bare and bare != title:
        out.append(bare)
    return [w for w in (words(t) for t in out) if not STOPWORDS.issuperset(w)]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*BATCH_PIECES, "(", ")", " (1945 film)", "The", "of", " "]), max_size=20).map("".join))
def test_title_variant_words_skips_the_pattern_only_where_it_cannot_match(title: str) -> None:
    assert title_variant_words(title) == title_variant_words_reference(title)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_words_as_defined_on_ascii_text(text: str) -> None:
    """words' ASCII path (bytes.translate) gives the words of the definition."""
    assert words(text) == reference(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["'", "''", "s", "'s", "a", "x", " ", "  ", "é", "\u0301", ".", "S", "'S"]),
                         max_size=14).map("".join), min_size=1, max_size=4))
def test_words_many_strips_apostrophes_as_words_does(texts: list[str]) -> None:
    """The batch drops opening/closing apostrophes and one final "'s" by replace: as words does."""
    assert words_many(texts) == [words(t) for t in texts]
