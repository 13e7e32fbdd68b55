"""`sanitize`'s fast path (a printable text with no invisible character is returned as it is)
removes what the full path removes: checked against the full path (kept here as the reference)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.brief import clean as C


def reference(text: str) -> tuple[str, int]:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    before = len(text)
    if text.isascii():
        text = C._CONTROL.sub("", text)
        return text, before - len(text)
    text = C._INVISIBLE.sub("", text)
    text = C._CONTROL.sub("", text)
    text = C._NONCHAR.sub("", text)
    text = text.translate(C._DROP_FORMAT)
    return text, before - len(text)


_ODD = [chr(c) for c in (0xAD, 0x34F, 0x61C, 0x115F, 0x17B4, 0x180E, 0x200B, 0x202E, 0x2066, 0x3164, 0xFE0F, 0xFEFF,
                         0xFFA0, 0xFFF0, 0xE0001, 0xE0100, 0x1, 0x9, 0x7F, 0x85, 0xFDD0, 0xFFFE, 0x1FFFE, 0x2028,
                         0xA0, 0x3000, 0xE000, 0x378, 0x110BD, 0x13430)] + ["é", "x", " ", "\n", "\r\n", "中"]


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(_ODD), max_size=12).map("".join), st.text(max_size=40)))
def test_sanitize_is_the_full_path(text: str) -> None:
    assert C.sanitize.__wrapped__(text) == reference(text)


@pytest.mark.slow
def test_sanitize_is_the_full_path_for_every_code_point() -> None:
    f = C.sanitize.__wrapped__
    assert not [c for c in range(0x110000) if f("é" + chr(c) + "x") != reference("é" + chr(c) + "x")]
