"""text_words_bound at C speed (issue 21, first sight): the same numbers as the per-word reading it
replaced, on every path (ASCII printable, ASCII with control characters, non-ASCII printable, with a
character cleaning removes, with a no-break space), and linear on a long run without a space."""

from __future__ import annotations

import random
import re
import time

from docket.features import _PRINTABLE_REMOVED, _SURE, text_words_bound


def _reference(text: str) -> int:
    """The function as it was before: the words of a printable text, else the runs holding a sure character."""
    flat = text.replace("\n", " ")
    if flat.isprintable() and (flat.isascii() or _PRINTABLE_REMOVED.search(flat) is None):
        return len(flat.split())
    return sum(1 for w in re.split(r"[ \n]+", text) if _SURE.search(w))


_ALPHABET = list("ab Z9 ./-\n\n  \t\r\x00\x7f\x1c") + ["é", "\u00a0", "\u2003", "Ω", "中", "\u034f", "\ufe0f",
                                                      "\U000e0100", "\u200b", "ـ", "🙂", "\u3000", "\u2028", "·"]


def test_matches_the_per_word_reading_on_random_texts() -> None:
    rng = random.Random(21)
    for _ in range(4000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 40)))
        assert text_words_bound(text) == _reference(text), repr(text)


def test_matches_on_each_path() -> None:
    cases = ["", " ", "\n", "one", " two  words ", "line\nbreak", "tab\there", "nul\x00x", "café au lait",
             "a\u00a0b c", "x\u034fy z", "Ωμέγα λ", "中文 字", "\U000e0100 a", "//a /b", "é", " é ", "\u2003é\u2003"]
    for text in cases:
        assert text_words_bound(text) == _reference(text), repr(text)


def test_a_long_run_without_a_space_is_linear() -> None:
    text = "\u00a0" + "·" * 200_000  # not printable, no sure character, no space: one run scanned once
    t = time.perf_counter()
    assert text_words_bound(text) == 0
    assert time.perf_counter() - t < 0.5
    assert text_words_bound(text + "a") == 1


def test_every_removed_character_has_a_listed_first_byte() -> None:
    from docket.features import _REMOVED_LEADS

    every = "".join(chr(c) for c in range(0x80, 0xE0200) if not 0xD800 <= c < 0xE000)
    removed = set(_PRINTABLE_REMOVED.findall(every))
    assert len(removed) > 20
    assert {ch.encode("utf-8")[:1] for ch in removed} <= set(_REMOVED_LEADS)
    for ch in removed:  # each one found through its first byte: the text's words are read the general way
        text = f"ab{ch}cd ef"
        assert text_words_bound(text) == _reference(text)
