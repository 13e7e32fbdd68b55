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
