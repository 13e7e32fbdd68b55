"""The render shortcuts of issue 21 write what the plain code wrote: XML escaping skips
`str.translate` only for a text without a look-alike, and a title's variant phrases come from
docket.features.title_terms (once per title) instead of being rebuilt for every passage."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.brief.formats import XmlFormat
from docket.brief.render import ALWAYS, DOCKET_FIELDS, IMPLICIT, coverage, header_fields, opens_with_title, sections_of
from docket.model import Chunk, Passage
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


def header_fields_before(p: Passage, fields: list[str], implicit_defaults: bool = False,
                         repeated_title: bool = False) -> list[tuple[str, str]]:
    """render.header_fields as it was (main 9046948): every value read, then filtered and sorted."""
    c = p.first
    values: dict[str, str] = {
        "title": c.title if repeated_title or not opens_with_title(c.title, p.text) else "",
        "section": sections_of(p), "version": f"v{c.version}", "date": c.date.isoformat() if c.date else "",
        "status": c.status, "trust": p.trust_level, "source": c.source_type or "", "doc": c.doc,
    }
    if c.version == 1:
        values["version"] = ""
    wanted = list(dict.fromkeys(list(fields) + [f for f in ALWAYS if f not in fields]))
    out = [(f, values.get(f, "")) for f in wanted]
    out = [(k, v) for k, v in out if v or k in ALWAYS]
    if implicit_defaults:
        out = [(k, v) for k, v in out if IMPLICIT.get(k) != v]
    if p.compressed:
        out.append(("excerpt", "compressed"))
    if p.derived:
        out.append(("covers", coverage(p)))
    first = {k: n for n, k in enumerate(DOCKET_FIELDS)}
    return sorted(out, key=lambda kv: first.get(kv[0], len(first)))


_FIELD_NAMES = ["title", "section", "version", "date", "source", "status", "trust", "doc", "excerpt", "covers", "other"]


@st.composite
def _passage(draw: st.DrawFn) -> Passage:
    n = draw(st.integers(1, 3))
    chunks = tuple(Chunk(id=f"c{k}", doc="d", text=draw(st.sampled_from(["Pearl Jam is a band.", "x", "The fee is 5."])),
                         title=draw(st.sampled_from(["", "Pearl Jam", "Fees"])), version=draw(st.integers(1, 3)),
                         section=draw(st.sampled_from(["", "A", "B"])), position=k,
                         status=draw(st.sampled_from(["current", "superseded", "user-generated"])),
                         source_type=draw(st.sampled_from([None, "policy", "forum"])),
                         trust=draw(st.sampled_from([None, "trusted", "untrusted", "user-provided"])),
                         date=draw(st.sampled_from([None, "2024-01-02"])))
                   for k in range(n))
    p = Passage(chunks=chunks, score=0.5, rank=1, hits=(chunks[0].id,))
    if draw(st.booleans()):
        p = p.with_(text_override="short")
    if draw(st.booleans()):
        p = p.with_(covers=({"doc": "d", "title": "T", "trust": draw(st.sampled_from(["trusted", "untrusted"]))},))
    return p


@settings(max_examples=600, deadline=None)
@given(_passage(), st.lists(st.sampled_from(_FIELD_NAMES), max_size=8), st.booleans(), st.booleans())
def test_header_fields_are_unchanged(p: Passage, fields: list[str], implicit: bool, repeated: bool) -> None:
    assert header_fields(p, fields, implicit, repeated) == header_fields_before(p, fields, implicit, repeated)
