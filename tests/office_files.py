"""Small PDF and DOCX files made at test time (reportlab, python-docx), so the tests need no
committed binaries and every page's text is known."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any


def make_pdf(pages: Sequence[str], title: str = "") -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=1)  # invariant: the same bytes every run
    if title:
        c.setTitle(title)
    for text in pages:
        y = 800
        for line in text.split("\n"):
            c.drawString(50, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def encrypt_pdf(data: bytes, password: str = "secret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(data)).pages:
        writer.add_page(page)
    writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(blocks: Sequence[tuple[str, str]], title: str = "") -> bytes:
    """blocks: ("h1"|"h2"|"p"|"pagebreak"|"table", text); a table's text is rows of cells, "a|b;c|d"."""
    import docx
    from docx.enum.text import WD_BREAK

    d = docx.Document()
    if title:
        d.core_properties.title = title
    for kind, text in blocks:
        if kind == "h1":
            d.add_heading(text, level=1)
        elif kind == "h2":
            d.add_heading(text, level=2)
        elif kind == "pagebreak":
            d.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
        elif kind == "table":
            rows = [r.split("|") for r in text.split(";")]
            t = d.add_table(rows=len(rows), cols=len(rows[0]))
            for i, row in enumerate(rows):
                for j, cell in enumerate(row):
                    t.cell(i, j).text = cell
        else:
            d.add_paragraph(text)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def replace_in_part(data: bytes, part: str, old: bytes, new: bytes) -> bytes:
    """The same zip (a DOCX) with `old` replaced by `new` in its part `part` (word/document.xml)."""
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            body = src.read(info)
            z.writestr(info, body.replace(old, new) if info.filename == part else body)
    return out.getvalue()


def check_left_out(text: str, counts: Any, hidden: bool, kind: str) -> None:
    """A hidden-text case's verdict (tests/test_docx_hidden.py, test_pdf_hidden.py): WORD gone
    exactly when hidden, the frame's two lines kept, one removal counted as `kind` or none."""
    assert ("WORD" not in text) is hidden, text
    assert "Refunds take 14 days." in text and "Contact billing for help." in text
    if hidden:
        assert counts[kind] == 1, counts
    else:
        assert not counts, counts


# --- text boxes, as Word 2010 and later writes them --------------------------------------------

#: the namespaces a text box's XML uses, declared on the paragraph that anchors it
BOX_NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
          'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
          'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
          'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
          'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
          'xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office"')


def _box_content(inner: str) -> str:
    """`inner` as a text box's content: w: block XML as given, plain words as one paragraph."""
    return inner if inner.startswith("<") else f"<w:p><w:r><w:t>{inner}</w:t></w:r></w:p>"


def box_drawing(inner: str, docpr: str = "", fill: str = '<a:srgbClr val="FFFFFF"/>', n: int = 1,
                h: str = '<wp:posOffset>0</wp:posOffset>', v: str = '<wp:posOffset>0</wp:posOffset>',
                h_from: str = "column", v_from: str = "paragraph", rot: int = 0, simple: str = "") -> str:
    """A Word 2010 text box (`w:drawing`, wps shape) holding `inner`, anchored at its paragraph,
    filled with `fill` (a DrawingML colour element, "" for no fill); `docpr`: more attributes of
    `wp:docPr` (`hidden="1"`); `h`, `v`: the offset (or alignment) from `h_from` and `v_from`;
    `rot`: its rotation (60,000ths of a degree); `simple`: "x,y" to place it by `wp:simplePos`."""
    fill_xml = f"<a:solidFill>{fill}</a:solidFill>" if fill else "<a:noFill/>"
    sx, sy = simple.split(",") if simple else ("0", "0")
    return (f'<w:drawing><wp:anchor distT="0" distB="0" distL="0" distR="0" simplePos="{1 if simple else 0}" '
            f'relativeHeight="{251659264 + n}" behindDoc="0" locked="0" layoutInCell="1" allowOverlap="1">'
            f'<wp:simplePos x="{sx}" y="{sy}"/><wp:positionH relativeFrom="{h_from}">{h}'
            f'</wp:positionH><wp:positionV relativeFrom="{v_from}">{v}</wp:positionV>'
            f'<wp:extent cx="4572000" cy="914400"/><wp:effectExtent l="0" t="0" r="0" b="0"/><wp:wrapTopAndBottom/>'
            f'<wp:docPr id="{n}" name="Text Box {n}" {docpr}/><wp:cNvGraphicFramePr/><a:graphic>'
            f'<a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"><wps:wsp>'
            f'<wps:cNvSpPr txBox="1"/><wps:spPr><a:xfrm rot="{rot}"><a:off x="0" y="0"/><a:ext cx="4572000" cy="914400"/>'
            f'</a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom>{fill_xml}<a:ln w="6350"><a:solidFill>'
            f'<a:srgbClr val="808080"/></a:solidFill></a:ln></wps:spPr><wps:txbx><w:txbxContent>'
            f'{_box_content(inner)}</w:txbxContent></wps:txbx><wps:bodyPr rot="0" vert="horz" wrap="square" '
            f'lIns="91440" tIns="45720" rIns="91440" bIns="45720" anchor="t"><a:noAutofit/></wps:bodyPr>'
            f'</wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing>')


def box_pict(inner: str, style: str = "", fill: str = "white", n: int = 1) -> str:
    """The same text box in VML (`w:pict`), as Word writes it for older readers; `style`: more
    CSS-like declarations (`visibility:hidden`)."""
    return (f'<w:pict><v:shape id="Text Box {n}" type="#_x0000_t202" style="position:absolute;margin-left:0;'
            f'margin-top:0;width:5in;height:1in;z-index:{n};{style}" fillcolor="{fill}" strokeweight=".5pt">'
            f'<v:textbox><w:txbxContent>{_box_content(inner)}</w:txbxContent></v:textbox></v:shape></w:pict>')


def box_alternate(choice: str, fallback: str, requires: str = "wps") -> str:
    """What Word writes for a text box: the wps shape as the Choice, its VML copy as the Fallback."""
    return (f'<mc:AlternateContent><mc:Choice Requires="{requires}">{choice}</mc:Choice>'
            f'<mc:Fallback>{fallback}</mc:Fallback></mc:AlternateContent>')


def box_paragraph(run_inner: str, before: str = "Anchor line", rpr: str = "") -> str:
    """A paragraph of `before`, then one run (with `rpr`) holding `run_inner` (a text box)."""
    return (f'<w:p {BOX_NS}><w:r><w:t xml:space="preserve">{before} </w:t></w:r>'
            f'<w:r>{rpr}{run_inner}</w:r></w:p>')


def libreoffice_texts(documents: Sequence[bytes], tmp_path: Any, prefix: str = "d") -> list[str]:
    """Each DOCX as LibreOffice prints it: converted to PDF in one LibreOffice run, then read by
    pdftotext (LibreOffice's own text export drops text boxes). Skips the calling test where
    either is missing."""
    import shutil
    import subprocess
    from pathlib import Path

    import pytest

    office, totext = shutil.which("soffice") or shutil.which("libreoffice"), shutil.which("pdftotext")
    if office is None or totext is None:
        pytest.skip("needs LibreOffice and pdftotext (apt-get install libreoffice-writer-nogui poppler-utils)")
    files = []
    for k, data in enumerate(documents):
        path = Path(tmp_path) / f"{prefix}{k:03d}.docx"
        path.write_bytes(data)
        files.append(path)
    subprocess.run([office, "--headless", "--convert-to", "pdf", "--outdir", str(tmp_path), *map(str, files)],
                   check=True, capture_output=True, timeout=600)
    return [subprocess.run([totext, str(f.with_suffix(".pdf")), "-"], check=True, capture_output=True, text=True,
                           timeout=60).stdout for f in files]
