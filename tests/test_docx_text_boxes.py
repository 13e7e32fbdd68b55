"""Text boxes in DOCX files: read once, in order, under the hidden-text rules.

A text box's text (`w:txbxContent`) was not read at all: a user's boxed text was lost. Word
writes a box twice, a Word 2010 shape (`mc:Choice`) and its VML copy (`mc:Fallback`), and shows
one: docket reads the one Word reads, as blocks of its own after the paragraph that anchors the
box. A box Word does not draw (its shape hidden, its anchoring run hidden) is left out, and a
hidden run inside a box is left out as anywhere else. The colour cases (a box's fill under its
text) are in tests/test_docx_hidden.py's CASES, judged by LibreOffice's pixels; here LibreOffice's
text (PDF, then pdftotext) is the oracle of which boxes are read, and how often (slow test).
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

docx = pytest.importorskip("docx")
from docx.oxml import parse_xml  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from office_files import BOX_NS, box_alternate, box_drawing, box_paragraph, box_pict  # noqa: E402

from docket.ingest.office import read_docx  # noqa: E402

FIRST, LAST = "Refunds take 14 days.", "Contact billing for help."


def _doc(*paragraphs: str, header: str = "") -> bytes:
    """The frame's first line, the raw paragraphs (and tables) given, the frame's last line."""
    d = docx.Document()
    d.add_paragraph(FIRST)
    body = d.element.body
    for xml in paragraphs:
        body.insert(len(body) - 1, parse_xml(xml))
    d.add_paragraph(LAST)
    if header:
        hdr = d.sections[0].header._element
        hdr.append(parse_xml(header))
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _read(data: bytes, counts: Counter[str] | None = None) -> list[str]:
    """The blocks docket keeps, one a line."""
    text = "\n\n".join(s.text for s in read_docx(data, "t.docx", counts=counts).segments)
    return [b for b in text.split("\n\n") if b.strip()]


def _word_para(*words: str, rpr: str = "") -> str:
    runs = "".join(f'<w:r>{rpr}<w:t xml:space="preserve">{w} </w:t></w:r>' for w in words)
    return f"<w:p>{runs}</w:p>"


def _boxed(choice_words: str, fallback_words: str | None = None, **kw: str) -> str:
    """A paragraph anchoring one text box written both ways (Choice and Fallback)."""
    fb = choice_words if fallback_words is None else fallback_words
    return box_paragraph(box_alternate(box_drawing(choice_words), box_pict(fb)), **kw)


_TABLE_IN_BOX = ("<w:tbl><w:tr><w:tc><w:p><w:r><w:t>CELLONE</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r>"
                 "<w:t>CELLTWO</w:t></w:r></w:p></w:tc></w:tr></w:tbl><w:p/>")
_BOX_IN_CELL = (f"<w:tbl {BOX_NS}><w:tr><w:tc><w:p><w:r><w:t xml:space='preserve'>CELLTEXT </w:t></w:r><w:r>"
                f"{box_alternate(box_drawing('CELLBOX'), box_pict('CELLBOX'))}</w:r></w:p></w:tc></w:tr></w:tbl>")
_TWO_BOXES = (f"<w:p {BOX_NS}><w:r><w:t>Anchor</w:t></w:r><w:r>{box_alternate(box_drawing('FIRSTBOX'), box_pict('FIRSTBOX'))}"
              f"</w:r><w:r>{box_alternate(box_drawing('SECONDBOX', n=2), box_pict('SECONDBOX', n=2))}</w:r></w:p>")
_INLINE_ALTERNATE = (f"<w:p {BOX_NS}><w:r><w:t xml:space='preserve'>Fee: </w:t></w:r>"
                     "<mc:AlternateContent><mc:Choice Requires='w14'><w:r><w:t>CHOSENRUN</w:t></w:r></mc:Choice>"
                     "<mc:Fallback><w:r><w:t>FALLBACKRUN</w:t></w:r></mc:Fallback></mc:AlternateContent></w:p>")
_UNKNOWN_CHOICE = _boxed("UNKNOWNCHOICE", "KNOWNFALLBACK").replace(
    'Requires="wps"', 'Requires="zz"').replace("<w:p ", '<w:p xmlns:zz="urn:x-not-word" ', 1)

#: (name, paragraphs, the blocks docket keeps after FIRST and before LAST) — each also judged by
#: LibreOffice's text in the slow test below
STRUCTURE: list[tuple[str, list[str], list[str]]] = [
    ("Choice read, Fallback not", [_boxed("CHOICEWORD", "FALLBACKWORD")], ["Anchor line", "CHOICEWORD"]),
    ("the same text in both, read once", [_boxed("BOTHWORD")], ["Anchor line", "BOTHWORD"]),
    ("a Choice Word cannot read: the Fallback", [_UNKNOWN_CHOICE], ["Anchor line", "KNOWNFALLBACK"]),
    ("VML text box alone", [box_paragraph(box_pict("PICTWORD"))], ["Anchor line", "PICTWORD"]),
    ("drawing text box alone", [box_paragraph(box_drawing("DRAWWORD"))], ["Anchor line", "DRAWWORD"]),
    ("table in a text box", [_boxed(_TABLE_IN_BOX, "<w:p><w:r><w:t>TFALLBACK</w:t></w:r></w:p>")],
     ["Anchor line", "CELLONE | CELLTWO"]),
    ("text box in a table cell", [_BOX_IN_CELL], ["CELLTEXT", "CELLBOX"]),
    ("two text boxes in one paragraph, in order", [_TWO_BOXES], ["Anchor", "FIRSTBOX", "SECONDBOX"]),
    ("hidden run in a text box", [_boxed(_word_para("SHOWNRUN") + _word_para("SECRETRUN", rpr="<w:rPr><w:vanish/></w:rPr>"))],
     ["Anchor line", "SHOWNRUN"]),
    ("paragraph of its own text box only", [box_paragraph(box_alternate(box_drawing("ONLYBOX"), box_pict("ONLYBOX")),
                                                          before="")], ["ONLYBOX"]),
    ("runs in a paragraph's AlternateContent: the Choice", [_INLINE_ALTERNATE], ["Fee: CHOSENRUN"]),
]


@pytest.mark.parametrize(("name", "paragraphs", "kept"), STRUCTURE, ids=[c[0] for c in STRUCTURE])
def test_text_boxes_are_read_once_in_order(name: str, paragraphs: list[str], kept: list[str]) -> None:
    counts: Counter[str] = Counter()
    assert _read(_doc(*paragraphs), counts) == [FIRST, *kept, LAST]
    assert set(counts) <= {"docx_hidden_vanish"}, counts


@pytest.mark.parametrize(("name", "paragraph", "kind"), [
    ("docPr hidden", box_paragraph(box_alternate(box_drawing("GONE", docpr='hidden="1"'),
                                                 box_pict("GONE", style="visibility:hidden"))), "shape"),
    ("docPr hidden=true, VML copy visible", box_paragraph(box_alternate(box_drawing("GONE", docpr='hidden="true"'),
                                                                        box_pict("GONE"))), "shape"),
    ("VML visibility:hidden", box_paragraph(box_pict("GONE", style="visibility:hidden")), "shape"),
    ("VML display:none, the last declaration winning", box_paragraph(box_pict(
        "GONE", style="visibility:hidden;visibility:visible;display: NONE")), "shape"),
    ("anchoring run hidden", _boxed("GONE", rpr="<w:rPr><w:vanish/></w:rPr>"), "vanish"),
])
def test_a_text_box_word_does_not_draw_is_left_out(name: str, paragraph: str, kind: str) -> None:
    counts: Counter[str] = Counter()
    assert _read(_doc(paragraph), counts) == [FIRST, "Anchor line", LAST]
    assert counts == Counter({f"docx_hidden_{kind}": 1}), counts


def test_a_choice_whose_prefix_names_another_namespace_is_not_read() -> None:
    """Word knows a Choice by its namespaces, not its prefixes: `wps` bound to a stranger's
    namespace is not Word's shape, so the Fallback is read (LibreOffice, reading prefixes, differs)."""
    para = _boxed("FORGED", "REAL").replace(
        'Requires="wps"', 'Requires="wps" xmlns:wps="urn:x-not-word"')
    assert _read(_doc(para)) == [FIRST, "Anchor line", "REAL", LAST]


def test_a_text_box_in_a_tracked_deletion_is_not_read() -> None:
    para = (f"<w:p {BOX_NS}><w:r><w:t>Anchor</w:t></w:r><w:del w:id='1' w:author='a'><w:r>"
            f"{box_alternate(box_drawing('DELETED'), box_pict('DELETED'))}</w:r></w:del></w:p>")
    assert _read(_doc(para)) == [FIRST, "Anchor", LAST]


def test_a_hidden_shape_in_a_group_hides_its_box_only() -> None:
    """A Word group (wpg) of two boxes, one hidden through its own `wps:cNvPr`."""
    def shape(words: str, hidden: str) -> str:
        return (f'<wps:wsp><wps:cNvPr id="9" name="s" {hidden}/><wps:cNvSpPr txBox="1"/><wps:spPr/><wps:txbx>'
                f'<w:txbxContent><w:p><w:r><w:t>{words}</w:t></w:r></w:p></w:txbxContent></wps:txbx><wps:bodyPr/>'
                f'</wps:wsp>')
    group = box_drawing("x").replace(
        "http://schemas.microsoft.com/office/word/2010/wordprocessingShape\"><wps:wsp>",
        "http://schemas.microsoft.com/office/word/2010/wordprocessingGroup\"><wpg:wgp><wpg:cNvGrpSpPr/><wpg:grpSpPr/>"
        + shape("GROUPSHOWN", "") + shape("GROUPHIDDEN", 'hidden="1"') + "</wpg:wgp><wps:wsp>")
    group = group.replace("<wps:wsp><wps:cNvSpPr txBox=\"1\"/><wps:spPr><a:xfrm>", "<wps:wsp><wps:cNvSpPr/><wps:spPr><a:xfrm>")
    para = box_paragraph(box_alternate(group, box_pict("FALLBACK"), requires="wpg")).replace(
        "<w:p ", '<w:p xmlns:wpg="http://schemas.microsoft.com/office/word/2010/wordprocessingGroup" ', 1)
    counts: Counter[str] = Counter()
    blocks = _read(_doc(para), counts)
    assert "GROUPSHOWN" in blocks and not any("GROUPHIDDEN" in b or "FALLBACK" in b for b in blocks), blocks
    assert counts["docx_hidden_shape"] == 1


def test_a_box_in_a_table_cell_does_not_take_the_cells_shading() -> None:
    """White text in a black cell is shown; black text in a white box anchored in that cell is
    drawn on the box, not on the cell, so it is shown too (it was judged against the cell)."""
    black = _word_para("BLACKBOX", rpr='<w:rPr><w:color w:val="000000"/></w:rPr>')
    cell = (f"<w:tbl {BOX_NS}><w:tr><w:tc><w:tcPr><w:shd w:val='clear' w:color='auto' w:fill='000000'/></w:tcPr>"
            f"<w:p><w:r><w:rPr><w:color w:val='FFFFFF'/></w:rPr><w:t>WHITECELL</w:t></w:r><w:r>"
            f"{box_alternate(box_drawing(black), box_pict('x'))}"
            f"</w:r></w:p></w:tc></w:tr></w:tbl>")
    counts: Counter[str] = Counter()
    assert _read(_doc(cell), counts) == [FIRST, "WHITECELL", "BLACKBOX", LAST]
    assert not counts


@pytest.mark.parametrize(("name", "fill", "kept"), [
    ("the default theme's light colour", '<a:solidFill><a:schemeClr val="lt1"/></a:solidFill>', False),
    ("the theme's dark colour, lightened (not computed)",
     '<a:solidFill><a:schemeClr val="tx1"><a:lumMod val="50000"/></a:schemeClr></a:solidFill>', True),
    ("an accent colour (not computed)", '<a:solidFill><a:schemeClr val="accent2"/></a:solidFill>', True),
    ("a gradient (not computed)", '<a:gradFill><a:gsLst/></a:gradFill>', True),
    ("the shape style's fill (not computed)", '<wps:style><a:fillRef idx="1"><a:schemeClr val="accent1"/></a:fillRef>'
     '</wps:style>', True),
    ("the shape style's fill 0: none", '<wps:style><a:fillRef idx="0"><a:schemeClr val="accent1"/></a:fillRef>'
     '</wps:style>', False),
    ("no fill", "<a:noFill/>", False),
])
def test_white_text_in_a_box_is_judged_only_on_a_fill_docket_computes(name: str, fill: str, kept: bool) -> None:
    """White words on a fill docket can compute (white, or none over the white page) are left
    out; on one it cannot (a theme's accent, a changed theme colour, a gradient) they are kept,
    as the HTML cleaner keeps text whose colours it cannot compute."""
    white = _word_para("WHITEWORD", rpr='<w:rPr><w:color w:val="FFFFFF"/></w:rPr>')
    shape = box_drawing(white, fill="")
    if fill.startswith("<wps:style"):
        shape = shape.replace("<a:noFill/>", "").replace("<wps:txbx>", fill + "<wps:txbx>")
    else:
        shape = shape.replace("<a:noFill/>", fill)
    counts: Counter[str] = Counter()
    blocks = _read(_doc(box_paragraph(shape)), counts)
    assert ("WHITEWORD" in blocks) is kept, blocks
    assert counts == (Counter() if kept else Counter({"docx_hidden_color": 1})), counts


def test_boxes_nested_past_the_limit_stop_reading_without_failing() -> None:
    from docket.ingest.office import MAX_BOX_DEPTH

    inner = "<w:p><w:r><w:t>LEVEL0</w:t></w:r></w:p>"
    for level in range(1, 15):  # libxml2 parses 256 levels deep at most
        inner = f"<w:p><w:r><w:t>LEVEL{level}</w:t></w:r><w:r>{box_drawing(inner, n=level)}</w:r></w:p>"
    para = inner.replace("<w:p>", f"<w:p {BOX_NS}>", 1)
    blocks = _read(_doc(para))
    assert blocks[1:-1] == [f"LEVEL{14 - k}" for k in range(MAX_BOX_DEPTH + 1)]


def test_a_text_box_is_on_its_anchors_page() -> None:
    brk = f'<w:p {BOX_NS}><w:r><w:t>Page one</w:t></w:r><w:r><w:br w:type="page"/></w:r></w:p>'
    data = _doc(brk, _boxed("PAGETWOBOX"))
    segments = read_docx(data, "t.docx").segments
    assert [s.page for s in segments if "PAGETWOBOX" in s.text] == [2]


def test_a_text_box_in_the_header_is_read_with_it() -> None:
    """A printed header is read before the body (docs/security.md), its text boxes with it."""
    assert _read(_doc(header=_boxed("HEADERBOX"))) == ["Header: Anchor line\nHEADERBOX", FIRST, LAST]


def test_a_hidden_text_box_in_the_header_is_not_read() -> None:
    counts: Counter[str] = Counter()
    hidden = box_paragraph(box_alternate(box_drawing("HEADERBOX", docpr='hidden="1"'),
                                         box_pict("HEADERBOX", style="visibility:hidden")))
    assert _read(_doc(header=hidden), counts) == ["Header: Anchor line", FIRST, LAST]
    assert counts["docx_hidden_shape"] == 1


# --- a property: any arrangement of boxes reads the words Word shows, each once ------------------

_HIDE = ("", "docpr", "vml", "anchor", "run")


@st.composite
def _tree(draw: st.DrawFn, depth: int = 0) -> tuple[str, list[str]]:
    """(paragraph XML, the words Word shows in it, in docket's order) of a paragraph anchoring
    0-2 boxes, each written one of three ways and maybe hidden one of four ways."""
    n = draw(st.integers(0, 2 if depth < 2 else 0))
    own = f"W{draw(st.integers(0, 10**6))}"
    runs, shown = [f"<w:r><w:t>{own}</w:t></w:r>"], [own]
    for k in range(n):
        inner, words = draw(_tree(depth + 1))
        hide = draw(st.sampled_from(_HIDE))
        form = draw(st.sampled_from(("alt", "drawing", "pict")))
        if hide == "run":
            inner = inner.replace("<w:r><w:t>", "<w:r><w:rPr><w:vanish/></w:rPr><w:t>", 1)
            words = words[1:]  # the box's own line; the boxes it anchors are in another run
        drawing = box_drawing(inner, docpr='hidden="1"' if hide == "docpr" else "", n=depth * 10 + k)
        pict = box_pict(inner, style="visibility:hidden" if hide == "vml" else "", n=depth * 10 + k)
        shape = {"alt": box_alternate(drawing, pict), "drawing": drawing, "pict": pict}[form]
        rpr = "<w:rPr><w:vanish/></w:rPr>" if hide == "anchor" else ""
        runs.append(f"<w:r>{rpr}{shape}</w:r>")
        gone = hide == "anchor" or (hide == "docpr" and form != "pict") or (hide == "vml" and form == "pict")
        if not gone:
            shown += words
    return f"<w:p>{''.join(runs)}</w:p>", shown


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_tree())
def test_any_arrangement_of_boxes_reads_each_shown_word_once(tree: tuple[str, list[str]]) -> None:
    xml, shown = tree
    blocks = _read(_doc(xml.replace("<w:p>", f"<w:p {BOX_NS}>", 1)))
    words = re.findall(r"W\d+", " ".join(blocks))
    assert words == shown


# --- the oracle: LibreOffice's text ---------------------------------------------------------------


def _soffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def _words(text: str) -> Counter[str]:
    return Counter(w for w in re.split(r"[\s|#]+", text) if w)


@pytest.mark.slow
def test_redteam_docx_text_boxes_vs_libreoffice(tmp_path: Path) -> None:
    """Each STRUCTURE case converted to PDF by LibreOffice: the words of its text (pdftotext)
    are the words docket keeps, as often (a box read twice, or not at all, fails)."""
    from redteam_log import record

    office, totext = _soffice(), shutil.which("pdftotext")
    if office is None or totext is None:
        pytest.skip("needs LibreOffice and pdftotext (apt-get install libreoffice-writer-nogui poppler-utils)")
    files = []
    for k, (_name, paragraphs, _kept) in enumerate(STRUCTURE):
        path = tmp_path / f"s{k:02d}.docx"
        path.write_bytes(_doc(*paragraphs))
        files.append(path)
    subprocess.run([office, "--headless", "--convert-to", "pdf", "--outdir", str(tmp_path), *map(str, files)],
                   check=True, capture_output=True, timeout=600)
    differ = []
    for (name, _paragraphs, _kept), f in zip(STRUCTURE, files, strict=True):
        shown = subprocess.run([totext, str(f.with_suffix(".pdf")), "-"], check=True, capture_output=True,
                               timeout=120).stdout.decode()
        kept = "\n".join(_read(f.read_bytes()))
        if _words(shown) != _words(kept):
            differ.append((name, sorted((_words(shown) - _words(kept)).elements()),
                           sorted((_words(kept) - _words(shown)).elements())))
    record("hidden/docx-textbox-libreoffice", tried=len(STRUCTURE), escaped=len(differ),
           note=f"DOCX text boxes, LibreOffice's PDF text vs docket's; (case, only shown, only kept): {differ}")
    assert not differ, differ


def test_only_the_first_choices_are_looked_at() -> None:
    """A compatibility block of many Choices costs a namespace lookup each: past MAX_CHOICES the
    Fallback is read (Word writes one Choice)."""
    from docket.ingest.docx_hidden import MAX_CHOICES

    junk = "<mc:Choice Requires='zz'/>" * MAX_CHOICES
    para = _boxed("LATECHOICE", "FALLBACKREAD").replace("<mc:AlternateContent>", "<mc:AlternateContent>" + junk, 1)
    assert _read(_doc(para.replace("<w:p ", '<w:p xmlns:zz="urn:x-not-word" ', 1))) == [
        FIRST, "Anchor line", "FALLBACKREAD", LAST]
    para = _boxed("EARLYCHOICE", "FALLBACK").replace("<mc:AlternateContent>", "<mc:AlternateContent>" + junk[:-26], 1)
    assert _read(_doc(para.replace("<w:p ", '<w:p xmlns:zz="urn:x-not-word" ', 1))) == [
        FIRST, "Anchor line", "EARLYCHOICE", LAST]
