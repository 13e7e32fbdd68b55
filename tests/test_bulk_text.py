"""The import's faster text paths give exactly what the plain functions give: the batch keyword
terms (pyarrow kernels) those of `term_counts`, the folding of non-ASCII text the one it replaced,
and the Parquet column conversion `to_pylist`'s values."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.store.bulk_text import batch_terms, encode
from docket.store.terms import _fold, term_counts

#: ASCII words and separators, stopwords, one-letter words, accents (precomposed and combining),
#: letters that stay non-ASCII (ß, Σ, CJK), compatibility characters that fold to ASCII letters
#: (ℌ -> H, ™ -> TM, ﬁ -> fi) or to digits (², ①), dashes and quotes, NUL-free control characters
_PIECES = ["refund", "Refunds", "the", "a", "I", "x_y", "_", "42", " ", "  ", ".", ",", "-", "\n", "\t", "é", "e\u0301",
           "ï", "ß", "Σ", "σς", "中文", "ℌ", "™", "ﬁ", "²", "①", "İ", "–", "’", "\u00a0", "\u200b", "Ａ", "ǅ", "\u0308"]


def _rows(t: tuple[list[str], object, object, object]) -> list[list[tuple[str, int]]]:
    vocab, index, tf, sizes = t
    out, at = [], 0
    for n in sizes.tolist():  # type: ignore[attr-defined]
        out.append([(vocab[i], f) for i, f in zip(index[at:at + n].tolist(), tf[at:at + n].tolist(), strict=True)])  # type: ignore[index]
        at += n
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join), max_size=12))
def test_batch_terms_equal_term_counts(texts: list[str]) -> None:
    pytest.importorskip("pyarrow")
    assert _rows(batch_terms(texts)) == _rows(encode([term_counts(t) for t in texts]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=8))
def test_batch_terms_equal_term_counts_on_any_text(texts: list[str]) -> None:
    pytest.importorskip("pyarrow")
    texts = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # no lone surrogates (checked before)
    assert _rows(batch_terms(texts)) == _rows(encode([term_counts(t) for t in texts]))


def _fold_reference(text: str) -> str:
    """What terms._fold was before it walked only the non-ASCII runs."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def test_fold_equals_its_reference_on_every_code_point() -> None:
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    for sep in ("", "e", " a\u0301 "):
        text = sep.join(chars)
        assert _fold(text) == _fold_reference(text)


def test_pylist_equals_to_pylist() -> None:
    pa = pytest.importorskip("pyarrow")
    from docket.store.importer import _pylist

    cases = [pa.array([["a", "b"], None, [], ["c"], [None, "x"]]), pa.array([["a"], ["b", "c"], None]).slice(1),
             pa.array(["x", None, "é", ""]), pa.array(["x", "y"], type=pa.large_string()), pa.array([1, None, 3]),
             pa.array([1, 2, 3], type=pa.int8()), pa.array([["a"]], type=pa.large_list(pa.large_string())),
             pa.array([True, None]), pa.array([1.5, None]), pa.array([[1, 2], None])]
    for col in cases:
        got, want = _pylist(pa, col), col.to_pylist()
        assert got == want and [type(x) for x in got] == [type(x) for x in want], col.type
