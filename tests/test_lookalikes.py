"""The look-alike table of structural characters is Unicode's, and every format escapes it."""

from __future__ import annotations

import unicodedata

import pytest

from docket.brief import formats, lookalikes
from docket.brief._lookalikes_data import TABLE

RECORDED_UNICODE = "14.0.0"  # the Unicode version _lookalikes_data.py was generated with (its docstring)


def test_the_committed_table_is_the_installed_data() -> None:
    """Regenerate with `python -m docket.brief.lookalikes` when this fails after an upgrade."""
    assert set(TABLE) == set(lookalikes.STRUCTURAL)
    for c in lookalikes.STRUCTURAL:
        if unicodedata.unidata_version == RECORDED_UNICODE:
            assert lookalikes.build(c) == lookalikes.lookalikes(c), c
        else:  # another Python's Unicode tables: the UTS #39 part must still be covered
            assert lookalikes.uts39_class(c) <= lookalikes.lookalikes(c), c


@pytest.mark.parametrize("char, expected", [
    ("<", "\u2039\u27e8\u3008\u2329\u276e\u02c2\u1438\uff1c\ufe64\u226e"),
    (">", "\u203a\u27e9\u3009\u232a\u276f\u02c3\u1433\uff1e\ufe65\u226f"),
    (":", "\u2236\ua789\u02d0\uff1a\ufe55\ufe13\u2a74"),
    ('"', "\u201c\u201d\uff02\u2033"),
    ("'", "\u2018\u2019\uff07\u02bc\u2032"),
    ("=", "\uff1d\ufe66\u207c\u2260\u30a0\u2e40"),
    ("|", "\uff5c\u2223\u01c0\u2502"),
])
def test_the_issue_s_look_alikes_are_in_the_table(char: str, expected: str) -> None:
    assert set(expected) <= lookalikes.lookalikes(char)


def test_letters_are_not_pipes() -> None:
    """`|`'s UTS #39 prototype is `l`: the letters of that class (I, 1, Greek iota, Hebrew vav,
    Arabic alef) are text, not look-alikes of the bar."""
    bar = lookalikes.lookalikes("|")
    assert not {"l", "I", "1", "\u0399", "\u05d5", "\u0627"} & bar


def test_docket_s_own_replacements_are_not_look_alikes() -> None:
    lines = formats.text_format("lines")
    assert isinstance(lines, formats.LinesFormat)
    for ch in (lines.BAR, lines.COLON, "\ua78a"):
        for s in lines.STRUCTURE:
            assert ch != s and ch not in lookalikes.lookalikes(s), (ch, s)
    assert "\u2236" in lookalikes.lookalikes(":")  # what docket wrote before: a colon to a reader


def test_fold_reads_look_alikes_as_the_character() -> None:
    assert lookalikes.fold("\u2039/document\u203a \u276ex\u276f \u1438y\u1433", "<>") == "</document> <x> <y>"
    assert lookalikes.fold("TRUST\u2236 trusted \uff5c", "|:") == "TRUST: trusted |"
    assert lookalikes.weight("\u2a76", "=") == 3 and lookalikes.weight("\uff1d", "=") == 1


def test_only_structural_characters_have_a_table() -> None:
    with pytest.raises(ValueError, match="not a structural character"):
        lookalikes.lookalikes("a")
    with pytest.raises(ValueError, match="one ASCII character"):
        lookalikes.build("\u2039")
