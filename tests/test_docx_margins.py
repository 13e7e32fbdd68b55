"""Page headers and footers of a DOCX: read once each when Word prints them, left out (and
counted) when no page prints them (a first-page header without `titlePg`, an even-page one
without `evenAndOddHeaders` or on a one-page document, the default one of a one-page section with
a distinct first page). LibreOffice's PDF of every case is the oracle (slow test): a marker word
is in its text exactly when docket keeps it."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

docx = pytest.importorskip("docx")
from docx.enum.section import WD_SECTION  # noqa: E402
from docx.enum.text import WD_BREAK  # noqa: E402
from docx.oxml import parse_xml  # noqa: E402
from docx.oxml.ns import nsdecls  # noqa: E402
from office_files import BOX_NS, box_drawing, libreoffice_texts  # noqa: E402

from docket.errors import InputError  # noqa: E402
from docket.ingest.docx_margins import LINE_CHARS, PAGE_LINES, margin_text  # noqa: E402
from docket.ingest.office import OfficeLimits, read_docx  # noqa: E402

Build = Callable[[Any], None]


def _docx(build: Build, pages: int = 1) -> bytes:
    """A document of `pages` pages (explicit page breaks), its first section's headers and
    footers set by `build`."""
    d = docx.Document()
    d.add_paragraph("Refunds take 14 days.")
    for n in range(2, pages + 1):
        d.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
        d.add_paragraph(f"Body of page {n}.")
    build(d)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _header(d: Any, text: str, kind: str = "header", which: str = "") -> None:
    """`text` into the first section's header or footer: the default one, or `which` = first/even."""
    s = d.sections[0]
    part = getattr(s, f"{which}_page_{kind}" if which else kind)
    part.is_linked_to_previous = False
    part.paragraphs[0].text = text


def _title_page(d: Any) -> None:
    d.sections[0].different_first_page_header_footer = True


def _even_odd(d: Any) -> None:
    d.settings.odd_and_even_pages_header_footer = True


def _both(*steps: Build) -> Build:
    def build(d: Any) -> None:
        for step in steps:
            step(d)
    return build


def _hidden_run(d: Any) -> None:
    p = d.sections[0].header.paragraphs[0]
    p.text = "Policy manual "
    p.add_run("HDRVANISH").font.hidden = True


def _header_table(d: Any) -> None:
    h = d.sections[0].header
    h.is_linked_to_previous = False
    t = h.add_table(1, 2, docx.shared.Inches(4))
    t.cell(0, 0).text = "HDRCELLA"
    t.cell(0, 1).text = "HDRCELLB"


def _header_box(d: Any) -> None:
    h = d.sections[0].header
    h.is_linked_to_previous = False
    p = h.paragraphs[0]
    p.text = "Letterhead"
    p._p.append(parse_xml(f'<w:r {BOX_NS}>{box_drawing("HDRBOX")}</w:r>'))


def _page_field(d: Any) -> None:
    f = d.sections[0].footer
    f.is_linked_to_previous = False
    p = f.paragraphs[0]
    p.text = "Page "
    p._p.append(parse_xml(f'<w:fldSimple {nsdecls("w")} w:instr="PAGE"><w:r><w:t>1</w:t></w:r></w:fldSimple>'))
    f.add_paragraph("FTRCOMPANY Ltd")


def _second_section(own: bool) -> Build:
    """A second section (new page); with `own`, its own default header, else the first's."""
    def build(d: Any) -> None:
        _header(d, "HDRSECTIONONE")
        s = d.add_section(WD_SECTION.NEW_PAGE)
        d.add_paragraph("Second section text.")
        if own:
            s.header.is_linked_to_previous = False
            s.header.paragraphs[0].text = "HDRSECTIONTWO"
    return build


def _long_section(lines: int) -> Build:
    """A distinct first page and `lines` one-line paragraphs of body text (no page marks)."""
    def build(d: Any) -> None:
        _title_page(d)
        _header(d, "HDRFIRSTLONG", which="first")
        _header(d, "HDRDEFAULTLONG")
        for n in range(lines):
            d.add_paragraph(f"Line {n} of the body.")
    return build


#: (name, build, pages, markers docket keeps, markers it leaves out, headers counted as not printed)
CASES: list[tuple[str, Build, int, list[str], list[str], int]] = [
    ("default header and footer", _both(lambda d: _header(d, "HDRDEFAULT"),
                                        lambda d: _header(d, "FTRDEFAULT", "footer")), 1,
     ["HDRDEFAULT", "FTRDEFAULT"], [], 0),
    ("first-page header without titlePg", _both(lambda d: _header(d, "HDRPLAIN"),
                                                lambda d: _header(d, "HDRFIRSTOFF", which="first")), 2,
     ["HDRPLAIN"], ["HDRFIRSTOFF"], 1),
    ("titlePg, one page: the default header is never printed",
     _both(_title_page, lambda d: _header(d, "HDRFIRSTON", which="first"), lambda d: _header(d, "HDRDEFAULTONE")), 1,
     ["HDRFIRSTON"], ["HDRDEFAULTONE"], 1),
    ("titlePg, two pages: both printed",
     _both(_title_page, lambda d: _header(d, "HDRFIRSTTWO", which="first"), lambda d: _header(d, "HDRDEFAULTTWO")), 2,
     ["HDRFIRSTTWO", "HDRDEFAULTTWO"], [], 0),
    ("titlePg footer, one page", _both(_title_page, lambda d: _header(d, "FTRFIRST", "footer", "first"),
                                       lambda d: _header(d, "FTRDEFAULTONE", "footer")), 1,
     ["FTRFIRST"], ["FTRDEFAULTONE"], 1),
    ("even pages off: the even header is never printed",
     _both(lambda d: _header(d, "HDRODD"), lambda d: _header(d, "HDREVENOFF", which="even")), 2,
     ["HDRODD"], ["HDREVENOFF"], 1),
    ("even pages on, one page: no even page",
     _both(_even_odd, lambda d: _header(d, "HDRODDONE"), lambda d: _header(d, "HDREVENONE", which="even")), 1,
     ["HDRODDONE"], ["HDREVENONE"], 1),
    ("even pages on, two pages", _both(_even_odd, lambda d: _header(d, "HDRODDTWO"),
                                       lambda d: _header(d, "HDREVENTWO", which="even")), 2,
     ["HDRODDTWO", "HDREVENTWO"], [], 0),
    ("a hidden run in a header", _hidden_run, 1, ["Policy manual"], ["HDRVANISH"], 0),
    ("a table in a header", _header_table, 1, ["HDRCELLA", "HDRCELLB"], [], 0),
    ("a text box in a header", _header_box, 1, ["Letterhead", "HDRBOX"], [], 0),
    ("a page-number field in a footer", _page_field, 1, ["FTRCOMPANY"], [], 0),
    ("a second section keeps the first's header", _second_section(own=False), 1, ["HDRSECTIONONE"], [], 0),
    ("a second section with its own header", _second_section(own=True), 1, ["HDRSECTIONONE", "HDRSECTIONTWO"], [], 0),
    ("titlePg, a long section without page marks", _long_section(PAGE_LINES + 30), 1,
     ["HDRFIRSTLONG", "HDRDEFAULTLONG"], [], 0),
    ("titlePg, a short section without page marks", _long_section(5), 1, ["HDRFIRSTLONG"], ["HDRDEFAULTLONG"], 1),
]


def _read(data: bytes, counts: Counter[str] | None = None) -> str:
    doc = read_docx(data, "case.docx", counts=counts)
    return "\n\n".join(s.text for s in doc.segments)


@pytest.mark.parametrize(("name", "build", "pages", "kept", "gone", "unprinted"), CASES, ids=[c[0] for c in CASES])
def test_headers_and_footers_word_prints_are_read_once(name: str, build: Build, pages: int, kept: list[str],
                                                       gone: list[str], unprinted: int) -> None:
    counts: Counter[str] = Counter()
    text = _read(_docx(build, pages), counts)
    for word in kept:
        assert text.count(word) == 1, (word, text)
    for word in gone:
        assert word not in text, (word, text)
    assert counts["docx_hidden_header"] == unprinted, counts
    assert "Refunds take 14 days." in text


def test_headers_come_first_and_footers_last() -> None:
    data = _docx(_both(lambda d: _header(d, "Acme refund policy, version 3"),
                       lambda d: _header(d, "Acme Ltd, registered in Leeds", "footer")), pages=2)
    text = _read(data)
    assert text.startswith("Header: Acme refund policy, version 3"), text
    assert text.rstrip().endswith("Footer: Acme Ltd, registered in Leeds"), text
    assert text.index("Refunds take 14 days.") < text.index("Body of page 2.") < text.index("Footer:")


def test_a_document_without_headers_reads_as_before() -> None:
    assert _read(_docx(lambda d: None)) == "Refunds take 14 days."


def test_a_heading_style_in_a_header_does_not_open_a_section() -> None:
    def build(d: Any) -> None:
        h = d.sections[0].header
        h.is_linked_to_previous = False
        h.paragraphs[0].text = "Handbook"
        h.paragraphs[0].style = d.styles["Heading 1"]
    text = _read(_docx(build))
    assert "Header: Handbook" in text and "# Handbook" not in text, text


@pytest.mark.parametrize(("line", "kept"), [
    ("Page 3", False), ("page 3 of 9", False), ("3 / 9", False), ("12", False), ("Page3", False),
    ("Page 3 of the policy", True), ("Version 3", True), ("Section 12 applies", True),
])
def test_only_a_bare_page_number_is_dropped(line: str, kept: bool) -> None:
    assert (margin_text([line]) == line) is kept


def test_header_paragraphs_count_against_the_page_limit() -> None:
    def build(d: Any) -> None:
        h = d.sections[0].header
        h.is_linked_to_previous = False
        for n in range(400):
            h.add_paragraph(f"header line {n}")
    limits = OfficeLimits(max_pages=2)  # 400 blocks a page: the body alone is 1
    with pytest.raises(InputError, match="max_pages"):
        read_docx(_docx(build), "many.docx", limits)


def test_a_long_paragraph_counts_as_several_lines() -> None:
    # one paragraph of PAGE_LINES + 10 lines' worth of text: past page one
    build = _both(_title_page, lambda d: _header(d, "HDRFIRSTP", which="first"),
                  lambda d: _header(d, "HDRDEFAULTP"),
                  lambda d: d.add_paragraph("word " * (LINE_CHARS // 5 * (PAGE_LINES + 10))))
    assert "HDRDEFAULTP" in _read(_docx(build))


@pytest.mark.slow
def test_docx_headers_vs_libreoffice(tmp_path: Path) -> None:
    """LibreOffice lays out each case and exports every page; a marker word is printed when
    pdftotext finds it. docket keeps it exactly then."""
    from redteam_log import record

    documents = [_docx(build, pages) for _name, build, pages, *_rest in CASES]
    escaped, lost = [], []
    for data, printed, (name, _build, _pages, kept, gone, _n) in zip(
            documents, libreoffice_texts(documents, tmp_path), CASES, strict=True):
        text = _read(data)
        escaped += [f"{name}: {w}" for w in kept + gone if w in text and w not in printed]
        lost += [f"{name}: {w}" for w in kept + gone if w in printed and w not in text]
    record("hidden/docx-headers-libreoffice", tried=len(CASES), escaped=len(escaped) + len(lost),
           note=f"DOCX headers and footers printed by LibreOffice; escaped: {escaped}; lost: {lost}")
    assert not escaped and not lost, (escaped, lost)
