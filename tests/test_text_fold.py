"""fold() drops exactly the combining marks of the NFKD form (the per-character rule it replaced)."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.text import fold


def _reference(text: str) -> str:
    text = text.lower()
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_fold_equals_the_per_character_rule(text: str) -> None:
    assert fold(text) == _reference(text)


def test_fold_examples() -> None:
    assert fold("Akinoshū") == "akinoshu"
    assert fold("Ærøskøbing Crème Brûlée") == "ærøskøbing creme brulee"
    assert fold("東京 Ｔｏｋｙｏ") == "東京 tokyo"  # NFKD widens nothing away: full-width letters fold to ASCII


def test_the_table_stays_bounded_and_right_beyond_its_size() -> None:
    from docket import text

    wide = "".join(chr(cp) for cp in range(0x4E00, 0x4E00 + 70_000) if not 0xD800 <= cp <= 0xDFFF) + "é"
    assert fold(wide) == _reference(wide)
    assert len(text._MARKS) <= 1 << 16
