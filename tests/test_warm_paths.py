"""The warm assembly's shortcuts decide what the long way decides (issue 21): each is checked
here against the code it replaced, on generated inputs."""

from __future__ import annotations

import unicodedata
from datetime import date as Date

from hypothesis import given, settings
from hypothesis import strategies as st

from docket import dates

TODAY = Date(2026, 3, 1)

#: words that make the date patterns fire (years, months, cues, relative words) and words that do not
_WORDS = ["in", "on", "before", "after", "since", "until", "the", "update", "2024", "1995", "2199", "1799", "3000",
          "March", "1st", "q3", "third", "quarter", "of", "last", "year", "years", "ago", "two", "letztes", "Jahr",
          "l'année", "dernière", "el", "año", "pasado", "l'anno", "scorso", "vorig", "jaar", "2025-03-01",
          "01.03.2025", "2025年3月1日", "2024's", "and", "vs", "files", "%", "what", "was", "refund", "window",
          "Straße", "İstanbul", "١٩٩٥", "２０２４", "’s", "-"]


def _fold_reference(text: str) -> str:
    """docket.dates.fold before its ASCII shortcut."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


questions = st.one_of(
    st.lists(st.sampled_from(_WORDS), max_size=12).map(" ".join),
    st.text(max_size=60),
    st.text(alphabet="0123456789 -/.年月日yearnojhJa", max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(questions)
def test_fold_takes_the_ascii_shortcut_to_the_same_text(text: str) -> None:
    assert dates.fold(text) == _fold_reference(text)


@settings(max_examples=400, deadline=None)
@given(questions)
def test_find_dates_skips_only_questions_no_pattern_matches(question: str) -> None:
    assert dates.find_dates(question, TODAY) == dates._dates_in(_fold_reference(question), TODAY)


def test_the_shortcut_still_finds_dates() -> None:
    assert [r.text for r in dates.find_dates("What was the refund window in 2024?", TODAY)] == ["in 2024"]
    assert dates.find_dates("What is the refund window?", TODAY) == []
    assert dates.find_dates("What changed two years ago?", TODAY)
