"""Text boxes placed wholly off the page are left out (counted `docx_hidden_off_page`): Word and
LibreOffice print none of their text, a hidden line like a `<div>` at -9999px. A box that may
show any part of itself stays. LibreOffice's PDF of every case is the oracle (slow test)."""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import pytest

docx = pytest.importorskip("docx")
from docx.oxml import parse_xml  # noqa: E402
from office_files import box_alternate, box_drawing, box_paragraph, box_pict, libreoffice_texts  # noqa: E402

from docket.ingest.docx_place import Sheet  # noqa: E402
from docket.ingest.office import read_docx  # noqa: E402

P = "<wp:posOffset>{}</wp:posOffset>"
#: the python-docx template's page: Letter, one-inch margins (EMU)
WIDTH, HEIGHT = 7_772_400, 10_058_400


def _d(word: str, **kw: object) -> str:
    return box_paragraph(box_drawing(word, **kw))  # type: ignore[arg-type]


#: (name, anchoring paragraph, whether docket keeps the box's word, whether LibreOffice prints it)
CASES: list[tuple[str, str, bool, bool]] = [
    ("off the page's left", _d("OFFLEFT", h=P.format(-5_000_000), h_from="page"), False, False),
    ("off the page's right", _d("OFFRIGHT", h=P.format(8_000_000), h_from="page"), False, False),
    ("above the page", _d("OFFABOVE", v=P.format(-1_000_000), v_from="page"), False, False),
    ("below the page", _d("OFFBELOW", v=P.format(11_000_000), v_from="page"), False, False),
    ("a paragraph's offset past the page's foot", _d("OFFPARA", v=P.format(20_000_000)), False, False),
    ("left of the margin by more than the page", _d("OFFMARGIN", h=P.format(-6_000_000), h_from="margin"),
     False, False),
    ("aligned across, placed below the page",
     _d("OFFALIGNED", h="<wp:align>center</wp:align>", v=P.format(12_000_000), v_from="page"), False, False),
    ("VML left of the page", box_paragraph(box_pict("OFFVML", style="margin-left:-500pt;"
                                                    "mso-position-horizontal-relative:page")), False, False),
    ("both ways of writing it, off the page", box_paragraph(box_alternate(
        box_drawing("OFFBOTH", h=P.format(-6_000_000), h_from="page"),
        box_pict("OFFBOTH", style="margin-left:-500pt;mso-position-horizontal-relative:page"))), False, False),
    ("near the page's right edge", _d("EDGERIGHT", h=P.format(6_000_000), h_from="page"), True, True),
    ("aligned to the right margin", _d("ALIGNRIGHT", h="<wp:align>right</wp:align>", h_from="margin"), True, True),
    ("on the page, placed from the page",
     _d("PLACEDON", h=P.format(2_000_000), v=P.format(3_000_000), h_from="page", v_from="page"), True, True),
    ("VML on the page", box_paragraph(box_pict("ONVML", style="margin-left:100pt;"
                                               "mso-position-horizontal-relative:page")), True, True),
    # simplePos: LibreOffice places by positionH/V, the standard by simplePos: off only when off both ways
    ("simplePos off the page, positionH on it", _d("SIMPLEOFF", simple="-6000000,0"), True, True),
    # by policy, kept where LibreOffice prints nothing: what part of a box shows decides nothing here
    ("partly on the page's left, its words in the part off it",
     _d("EDGELEFT", h=P.format(-3_000_000), h_from="page"), True, False),
    ("rotated: the circle around it reaches the page",
     _d("ROTATED", v=P.format(-1_500_000), v_from="page", rot=5_400_000), True, False),
]


def _doc(paragraph: str) -> bytes:
    d = docx.Document()
    d.add_paragraph("Refunds take 14 days.")
    body = d.element.body
    body.insert(len(body) - 1, parse_xml(paragraph))
    d.add_paragraph("Contact billing.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _word(paragraph: str) -> str:
    return re.findall(r"<w:t>([A-Z]+)</w:t>", paragraph)[0]


def _text(data: bytes, counts: Counter[str] | None = None) -> str:
    return "\n\n".join(s.text for s in read_docx(data, "t.docx", counts=counts).segments)


@pytest.mark.parametrize(("name", "paragraph", "kept", "printed"), CASES, ids=[c[0] for c in CASES])
def test_a_box_off_the_page_is_left_out(name: str, paragraph: str, kept: bool, printed: bool) -> None:
    counts: Counter[str] = Counter()
    text = _text(_doc(paragraph), counts)
    assert (_word(paragraph) in text) is kept, text
    assert counts == (Counter() if kept else Counter({"docx_hidden_off_page": 1})), counts
    assert "Refunds take 14 days." in text and "Anchor line" in text and "Contact billing." in text


def _sheet() -> Sheet:
    body = parse_xml(
        '<w:body xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:sectPr>'
        '<w:pgSz w:w="12240" w:h="15840"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440"/>'
        "</w:sectPr></w:body>")
    return Sheet.of(body)


def _anchor(**kw: object) -> object:
    para = parse_xml(_d("X", **kw))
    return next(para.iter("{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}anchor"))


@pytest.mark.parametrize(("kw", "off"), [
    ({"h": P.format(-4_572_000), "h_from": "page"}, True),  # its right edge on the page's left edge
    ({"h": P.format(-4_571_999), "h_from": "page"}, False),  # one EMU on the page
    ({"h": P.format(WIDTH), "h_from": "page"}, True),
    ({"h": P.format(WIDTH - 1), "h_from": "page"}, False),
    ({"h": P.format(-4_572_000 - 914_400), "h_from": "margin"}, True),  # the left margin is 914,400
    ({"h": P.format(-4_572_000 - 914_399), "h_from": "margin"}, False),
    # the column and the character may be anywhere between the margins (914,400 to 6,858,000):
    # off only when off from both ends
    ({"h": P.format(WIDTH - 914_400 - 1), "h_from": "character"}, False),
    ({"h": P.format(WIDTH - 914_400), "h_from": "character"}, True),
    ({"h": P.format(-4_572_000 - 6_858_000 + 1), "h_from": "column"}, False),
    ({"h": P.format(-4_572_000 - 6_858_000), "h_from": "column"}, True),
    ({"v": P.format(HEIGHT), "v_from": "paragraph"}, True),
    ({"v": P.format(-914_400), "v_from": "line"}, False),  # a line may be at the page's foot
    ({"v": P.format(-HEIGHT - 914_400), "v_from": "line"}, True),
    ({"h": P.format(-9_000_000), "h_from": "somewhere"}, False),  # a reference docket does not know
    ({"h": "<wp:posOffset>lots</wp:posOffset>", "h_from": "page"}, False),
    ({"h": P.format(-10**13), "h_from": "page"}, False),  # a broken number: not judged
    # rotated: the circle through its corners (radius 2,331,000 about its centre) must be off
    ({"h": P.format(-5_000_000), "h_from": "page", "rot": 5_400_000}, False),
    ({"h": P.format(-7_000_000), "h_from": "page", "rot": 5_400_000}, True),
])
def test_the_edges_of_off_the_page(kw: dict[str, object], off: bool) -> None:
    assert _sheet().off_page(_anchor(**kw)) is off


@pytest.mark.parametrize("width", ["inf", "1e999", "nan", "wide"])
def test_a_page_size_that_is_no_number_is_the_default_page(width: str) -> None:
    body = parse_xml(
        '<w:body xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f'<w:sectPr><w:pgSz w:w="{width}" w:h="15840"/></w:sectPr></w:body>')
    assert Sheet.of(body).width == 12240 * 635


def test_the_largest_section_is_the_page() -> None:
    """A box off a small section's page but on a larger one's stays (its section is not looked up)."""
    body = parse_xml(
        '<w:body xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        '<w:p><w:pPr><w:sectPr><w:pgSz w:w="12240" w:h="15840"/></w:sectPr></w:pPr></w:p>'
        '<w:sectPr><w:pgSz w:w="24480" w:h="15840" w:orient="landscape"/></w:sectPr></w:body>')
    sheet = Sheet.of(body)
    assert not sheet.off_page(_anchor(h=P.format(WIDTH), h_from="page"))
    assert sheet.off_page(_anchor(h=P.format(2 * WIDTH), h_from="page"))


@pytest.mark.parametrize(("style", "off"), [
    ("margin-left:-500pt;mso-position-horizontal-relative:page", True),
    ("margin-left:-6.95in;mso-position-horizontal-relative:page", True),
    ("margin-left:-5in;mso-position-horizontal-relative:page", True),  # its right edge on the page's left edge
    ("margin-left:-5in;mso-position-horizontal-relative:margin", False),  # the margin is an inch in
    ("margin-left:-4.9in;mso-position-horizontal-relative:page", False),
    ("margin-left:-500;mso-position-horizontal-relative:page", False),  # no unit: not judged
    ("margin-left:-500pt;mso-position-horizontal:center;mso-position-horizontal-relative:page", False),
    ("margin-top:900pt;mso-position-vertical-relative:page", True),
    ("margin-top:900pt", True),  # from the text: anywhere on the page, still past its foot
    ("margin-top:700pt", False),
    ("position:static;margin-left:-500pt;mso-position-horizontal-relative:page", False),
])
def test_vml_boxes_off_the_page(style: str, off: bool) -> None:
    para = parse_xml(box_paragraph(box_pict("X", style=style)))
    shape = next(para.iter("{urn:schemas-microsoft-com:vml}shape"))
    assert _sheet().off_page(shape) is off


def _oracle(table: list[tuple[str, str, str, bool, bool]], tmp_path: Path, what: str) -> None:
    """LibreOffice prints each case (name, document body XML, word, kept, printed): its text holds
    the word as the table says, and docket keeps the word exactly when the table says (where it
    differs from LibreOffice, by the policy the table states)."""
    from redteam_log import record

    printed_texts = libreoffice_texts([_doc(xml) for _name, xml, *_rest in table], tmp_path)
    wrong, differ = [], []
    for shown_text, (name, xml, word, kept, printed) in zip(printed_texts, table, strict=True):
        if (word in shown_text.split()) is not printed:
            wrong.append(name)
        if (word in _text(_doc(xml))) is not kept or (printed and not kept):
            differ.append(name)
    record(f"hidden/docx-{what}-libreoffice", tried=len(table), escaped=len(differ),
           note=f"DOCX {what}, LibreOffice's PDF text vs docket's; table wrong: {wrong}; differ: {differ}")
    assert not wrong and not differ, (wrong, differ)


@pytest.mark.slow
def test_docx_boxes_off_the_page_vs_libreoffice(tmp_path: Path) -> None:
    _oracle([(name, xml, _word(xml), kept, printed) for name, xml, kept, printed in CASES], tmp_path,
            "off-page-boxes")


# --- paragraphs indented off the page -----------------------------------------------------------

def _indented(word: str, ind: str, ppr: str = "") -> str:
    return (f'<w:p xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:pPr>{ppr}'
            f"<w:ind {ind}/></w:pPr><w:r><w:t xml:space='preserve'>{word}</w:t></w:r></w:p>")


#: ~250 letters on one line from 20 inches left of the page: LibreOffice prints from w038 on
_LONG = " ".join(f"w{n:03d}" for n in range(50))
_NUMBERED = '<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>'

#: (name, paragraph, its word, whether docket keeps it, whether LibreOffice prints it)
INDENTS: list[tuple[str, str, str, bool, bool]] = [
    ("indented off the left, both edges", _indented("INDBOTH", 'w:left="-30000" w:right="30000"'), "INDBOTH",
     False, False),
    ("indented off the left, a short line", _indented("INDSHORT", 'w:left="-30000"'), "INDSHORT", False, False),
    ("indented past the right edge: laid out on the page", _indented("INDRIGHT", 'w:left="30000"'), "INDRIGHT",
     True, True),
    ("a first line pulled off the left", _indented("INDFIRST", 'w:firstLine="-30000"'), "INDFIRST", False, False),
    ("hanging off the left", _indented("INDHANG", 'w:left="0" w:hanging="30000"'), "INDHANG", False, False),
    ("start and end, the newer names", _indented("INDSTART", 'w:start="-30000" w:end="30000"'), "INDSTART",
     False, False),
    ("right-aligned, its room off the left", _indented("INDJCRIGHT", 'w:left="-30000" w:right="20000"',
                                                       '<w:jc w:val="right"/>'), "INDJCRIGHT", False, False),
    ("an ordinary indent", _indented("INDPLAIN", 'w:left="720" w:hanging="360"'), "INDPLAIN", True, True),
    ("into the margin a little", _indented("INDMARGIN", 'w:left="-1000"'), "INDMARGIN", True, True),
    ("a long line that runs onto the page", _indented("INDLONG " + _LONG, 'w:left="-28800"'), "w045", True, True),
    # by policy, kept where LibreOffice prints nothing: docket does not lay a line out
    ("centred in a room mostly off the page", _indented("INDCENTRE", 'w:left="-30000"', '<w:jc w:val="center"/>'),
     "INDCENTRE", True, False),
    ("its indent in characters", _indented("INDCHARS", 'w:leftChars="-9000" w:left="-30000"'), "INDCHARS",
     True, False),
]


@pytest.mark.parametrize(("name", "paragraph", "word", "kept", "printed"), INDENTS, ids=[c[0] for c in INDENTS])
def test_a_paragraph_indented_off_the_page_is_left_out(name: str, paragraph: str, word: str, kept: bool,
                                                       printed: bool) -> None:
    counts: Counter[str] = Counter()
    text = _text(_doc(paragraph), counts)
    assert (word in text) is kept, text
    assert counts == (Counter() if kept else Counter({"docx_hidden_off_page": 1})), counts
    assert "Refunds take 14 days." in text and "Contact billing." in text


def test_an_indent_from_the_paragraphs_style_counts() -> None:
    d = docx.Document()
    style = d.styles.add_style("Aside", docx.enum.style.WD_STYLE_TYPE.PARAGRAPH)
    style.paragraph_format.left_indent = docx.shared.Inches(-22)
    style.paragraph_format.right_indent = docx.shared.Inches(22)
    d.add_paragraph("Refunds take 14 days.")
    d.add_paragraph("STYLEDOFF", style="Aside")
    override = d.add_paragraph("STYLEDBACK", style="Aside")  # its own indents bring it back
    override.paragraph_format.left_indent = docx.shared.Inches(0)
    override.paragraph_format.right_indent = docx.shared.Inches(0)
    buf = io.BytesIO()
    d.save(buf)
    text = _text(buf.getvalue())
    assert "STYLEDOFF" not in text and "STYLEDBACK" in text


@pytest.mark.parametrize("ppr", [_NUMBERED, '<w:bidi/>'])
def test_numbered_and_right_to_left_paragraphs_are_not_judged(ppr: str) -> None:
    assert "INDNOTJUDGED" in _text(_doc(_indented("INDNOTJUDGED", 'w:left="-30000" w:right="30000"', ppr)))


def test_a_paragraph_in_a_table_cell_is_placed_by_its_cell() -> None:
    cell = ('<w:tbl xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:tr><w:tc>'
            + _indented("INDCELL", 'w:left="-30000" w:right="30000"').replace(
                ' xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"', "")
            + "</w:tc></w:tr></w:tbl>")
    assert "INDCELL" in _text(_doc(cell))


@pytest.mark.slow
def test_docx_indents_vs_libreoffice(tmp_path: Path) -> None:
    _oracle(INDENTS, tmp_path, "indents")


def test_a_tab_leaves_a_line_unjudged() -> None:
    """A tab moves the text after it to a tab stop docket does not read: no bound on the line."""
    tabbed = _indented("INDTAB", 'w:left="-30000"').replace("<w:r>", "<w:r><w:tab/>", 1)
    assert "INDTAB" in _text(_doc(tabbed))


# --- tables indented off the page ---------------------------------------------------------------

def _table(word: str, tblpr: str, grid: tuple[int, ...] = (2500, 2500)) -> str:
    cols = "".join(f'<w:gridCol w:w="{w}"/>' for w in grid)
    cells = "".join(f"<w:tc><w:p><w:r><w:t>{word}{k}</w:t></w:r></w:p></w:tc>" for k in range(len(grid)))
    return (f'<w:tbl xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:tblPr>{tblpr}'
            f"</w:tblPr><w:tblGrid>{cols}</w:tblGrid><w:tr>{cells}</w:tr></w:tbl>")


_W5000 = '<w:tblW w:w="5000" w:type="dxa"/>'

#: (name, table, its first cell's word, whether docket keeps it, whether LibreOffice prints it)
TABLES: list[tuple[str, str, str, bool, bool]] = [
    ("indented off the left", _table("TBLOFF", _W5000 + '<w:tblInd w:w="-30000" w:type="dxa"/>'), "TBLOFF0",
     False, False),
    ("indented off the left, fixed layout", _table("TBLFIXED", _W5000 + '<w:tblLayout w:type="fixed"/>'
                                                   '<w:tblInd w:w="-30000" w:type="dxa"/>'), "TBLFIXED0", False, False),
    ("into the margin a little", _table("TBLNEAR", _W5000 + '<w:tblInd w:w="-1000" w:type="dxa"/>'), "TBLNEAR0",
     True, True),
    ("right-aligned: Word ignores the indent", _table("TBLJC", _W5000 + '<w:jc w:val="right"/>'
                                                      '<w:tblInd w:w="-30000" w:type="dxa"/>'), "TBLJC0", True, True),
    ("a wide table reaching back onto the page", _table("TBLWIDE", '<w:tblW w:w="30000" w:type="dxa"/>'
                                                        '<w:tblLayout w:type="fixed"/><w:tblInd w:w="-20000" '
                                                        'w:type="dxa"/>', (22000, 8000)), "TBLWIDE1", True, True),
    ("an indent as a percentage: not judged", _table("TBLPCT", _W5000 + '<w:tblInd w:w="-30000" w:type="pct"/>'),
     "TBLPCT0", True, True),
]


@pytest.mark.parametrize(("name", "table", "word", "kept", "printed"), TABLES, ids=[c[0] for c in TABLES])
def test_a_table_indented_off_the_page_is_left_out(name: str, table: str, word: str, kept: bool,
                                                   printed: bool) -> None:
    counts: Counter[str] = Counter()
    text = _text(_doc(table), counts)
    assert (word in text) is kept, text
    assert counts == (Counter() if kept else Counter({"docx_hidden_off_page": 1})), counts
    assert "Refunds take 14 days." in text and "Contact billing." in text


def test_a_table_style_indent_counts_and_a_nested_table_is_placed_by_its_cell() -> None:
    d = docx.Document()
    style = d.styles.add_style("OffTable", docx.enum.style.WD_STYLE_TYPE.TABLE)
    style.element.append(parse_xml('<w:tblPr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
                                   '<w:tblInd w:w="-30000" w:type="dxa"/></w:tblPr>'))
    d.add_paragraph("Refunds take 14 days.")
    t = d.add_table(rows=1, cols=1)
    t.style = style
    t.cell(0, 0).text = "STYLEDTABLE"
    outer = d.add_table(rows=1, cols=1)
    outer.cell(0, 0)._tc.append(parse_xml(_table("NESTED", _W5000 + '<w:tblInd w:w="-30000" w:type="dxa"/>')))
    outer.cell(0, 0)._tc.append(parse_xml(
        '<w:p xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>'))
    buf = io.BytesIO()
    d.save(buf)
    text = _text(buf.getvalue())
    assert "STYLEDTABLE" not in text and "NESTED0" in text


@pytest.mark.slow
def test_docx_tables_off_the_page_vs_libreoffice(tmp_path: Path) -> None:
    _oracle(TABLES, tmp_path, "table-indents")
