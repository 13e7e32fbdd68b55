"""The exact-term screen searches only the texts whose lower case holds an ASCII term: it marks
exactly the texts the per-text search marks (the reference below), on generated terms and texts
with mixed case, word boundaries, hyphens and non-ASCII letters (the long s, the Kelvin sign and
the dotted I fold onto ASCII letters under IGNORECASE, which is why non-ASCII texts are searched)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.answerable import _holding, _holds, exact_terms

PIECES = ["A320", "a320", "LDG-4477", "ldg-4477", "x", "-", " ", "\n", "ſ", "K", "İ", "k", "s", "é", "12345",
          "iso", "ISO", "27001", "_", ".", "Ldg"]
TERMS = ["A320", "LDG-4477", "ISO-27001", "12345", "ks", "is", "Kelvin", "ſun", "naïve café"]


def _reference(terms: list[str], texts: list[str]) -> list[bool]:
    return [bool(terms) and any(_holds(x, t) for x in terms) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TERMS), max_size=3, unique=True),
       st.lists(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), max_size=6))
def test_the_screen_marks_what_the_search_marks(terms: list[str], texts: list[str]) -> None:
    assert _holding(terms, texts) == _reference(terms, texts)


@given(st.text(max_size=20), st.lists(st.text(max_size=30), max_size=4))
def test_any_text_and_question(question: str, texts: list[str]) -> None:
    terms = exact_terms(question)
    assert _holding(terms, texts) == _reference(terms, texts)


def test_a_kelvin_sign_still_matches_its_ascii_letter() -> None:
    assert _holding(["ks"], ["KS", "\u212as", "ab"]) == [True, True, False]
