"""The render shortcuts of issue 21 write what the plain code wrote: XML escaping skips
`str.translate` only for a text without a look-alike, and a title's variant phrases come from
docket.features.title_terms (once per title) instead of being rebuilt for every passage."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.brief.formats import XmlFormat
from docket.brief.render import opens_with_title
from docket.text import phrase, title_variants

LOOKALIKES = "".join(map(chr, XmlFormat._TEXT))
TEXT = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(LOOKALIKES + "<>&é ")), max_size=80)


def escape_before(text: str) -> str:
    """XmlFormat.escape as it was (main 3deb547)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text if text.isascii() else text.translate(XmlFormat._TEXT)


def opens_before(title: str, text: str) -> bool:
    """render.opens_with_title as it was (main 3deb547)."""
    if not title.strip():
        return False
    head = phrase(text[: len(title) + 40])
    return any(head.startswith(phrase(v)) or head.startswith(" the" + phrase(v)) for v in title_variants(title))


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_xml_escape_is_unchanged(text: str) -> None:
    assert XmlFormat().escape(text) == escape_before(text)


def test_every_look_alike_is_still_escaped() -> None:
    for ch in LOOKALIKES:
        assert XmlFormat().escape(f"é {ch} x") == escape_before(f"é {ch} x") != f"é {ch} x"


TITLE = st.one_of(st.text(max_size=30), st.sampled_from(["Pearl Jam", "Kiss and Tell (1945 film)", "The Band", "(a)",
                                                          "of the", "Akinoshū", "It's", ""]))


@settings(max_examples=400, deadline=None)
@given(TITLE, st.one_of(st.text(max_size=60), TITLE.map(lambda t: "The " + t + " is a band."),
                        TITLE.map(lambda t: t + " (x) was")))
def test_opens_with_title_is_unchanged(title: str, text: str) -> None:
    opens_with_title.cache_clear()
    assert opens_with_title(title, text) == opens_before(title, text)
