"""What leaving hidden text out costs each reader (session 37): the same input read with the
hidden-text step and with it swapped out, wall seconds, median of `--repeat` runs.

- Markdown: 50,000 paragraphs and one HTML comment (the whole page is rendered and cleaned),
  against cleaning the same rendered page as an `.html` file.
- PDF: 400 pages of 50 lines (the content-stream walk), the same in a TrueType font embedded by
  reportlab (DejaVu Sans: its program read with fontTools, its glyphs tested), and 2 pages of
  5,000 filled cells and 5,000 words (the painted-area look-ups).
- DOCX: 20,000 paragraphs (run properties resolved per run), and 2,000 paragraphs each anchoring
  a text box written both ways (Choice and Fallback; the boxes found, one branch read).

    .venv/bin/python benchmarks/hidden_text_cost.py [--repeat 3] [--quick] [--only docx]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # office_files: the test suite's PDF and DOCX makers


def _timed(fn: Callable[[], Any], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def _cells_pdf(pages: int, cells: int) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=1)
    for _ in range(pages):
        c.setFillColorRGB(0.9, 0.9, 0.9)
        for i in range(cells):
            c.rect((i % 50) * 11, (i // 50) * 8, 10, 7, stroke=0, fill=1)
        c.setFillColorRGB(0, 0, 0)
        c.setFont("Helvetica", 6)
        for i in range(cells):
            c.drawString((i % 50) * 11 + 1, (i // 50) * 8 + 1, "c")
        c.showPage()
    c.save()
    return buf.getvalue()


def _embedded_pdf(pages: int, lines: int) -> bytes:
    """`pages` pages of `lines` lines in DejaVu Sans (matplotlib's copy), which reportlab embeds
    as TrueType subsets (/FontFile2) with a /ToUnicode CMap."""
    import matplotlib
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("DejaVuBench", str(Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans.ttf")))
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=1)
    for _ in range(pages):
        c.setFont("DejaVuBench", 10)
        for i in range(lines):
            c.drawString(50, 800 - 15 * i, f"line {i} of the page with some words in it — café")
        c.showPage()
    c.save()
    return buf.getvalue()


def _boxes_docx(n: int) -> bytes:
    """`n` paragraphs, each anchoring a text box as Word writes one (a wps shape and its VML copy)."""
    import docx
    from docx.oxml import parse_xml
    from office_files import box_alternate, box_drawing, box_paragraph, box_pict

    d = docx.Document()
    body = d.element.body
    for i in range(n):
        words = f"Boxed note {i} with a few words"
        body.insert(len(body) - 1, parse_xml(box_paragraph(box_alternate(box_drawing(words), box_pict(words)),
                                                           before=f"Paragraph {i} with a few words of text in it.")))
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a tenth of each input, one run")
    ap.add_argument("--only", choices=("markdown", "pdf", "docx"), help="time one reader's inputs only")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    scale, repeat = (10, 1) if args.quick else (1, args.repeat)

    from markdown_it import MarkdownIt
    from office_files import make_docx, make_pdf

    import docket.ingest.office as office
    from docket.ingest.html import clean_html
    from docket.ingest.markdown import visible_markdown

    limits = office.OfficeLimits(max_pages=5_000, max_chars=50_000_000)
    only = args.only
    md_text = "<!-- a note -->\n\n" + "".join(f"paragraph {i} text.\n\n" for i in range(50_000 // scale))
    page = MarkdownIt("commonmark", {"html": True}).render(md_text)
    lines_pdf = make_pdf(["\n".join(f"line {i} of the page with some words in it" for i in range(50))] * (400 // scale))
    embedded_pdf = _embedded_pdf(400 // scale, 50)
    cells_pdf = _cells_pdf(2, 5_000 // scale)
    docx = make_docx([("p", f"Paragraph {i} with a few words of text in it.") for i in range(20_000 // scale)])
    boxes = _boxes_docx(2_000 // scale)

    rows: list[tuple[str, float, float, str]] = []
    if only in (None, "markdown"):
        rows.append(("Markdown, 50k paragraphs + 1 comment", _timed(lambda: visible_markdown(md_text), repeat),
                     _timed(lambda: clean_html(page), repeat), "the rendered page cleaned as .html"))
    strip, text_of = office.strip_hidden_text, office.Visibility.text
    for name, data in (("PDF, 400 pages of 50 lines", lines_pdf),
                       ("PDF, 400 pages of 50 lines in an embedded TrueType font", embedded_pdf),
                       ("PDF, 2 pages of 5,000 cells + words", cells_pdf)):
        if only not in (None, "pdf"):
            continue
        with_step = _timed(lambda d=data: office.read_pdf(d, "x.pdf", limits), repeat)
        office.strip_hidden_text = lambda *args, **kwargs: 0  # type: ignore[assignment]
        without = _timed(lambda d=data: office.read_pdf(d, "x.pdf", limits), repeat)
        office.strip_hidden_text = strip
        rows.append((name, with_step, without, "pypdf's extraction alone"))
    for name, data in (("DOCX, 20,000 paragraphs", docx), ("DOCX, 2,000 paragraphs + a text box each", boxes)):
        if only not in (None, "docx"):
            continue
        with_step = _timed(lambda d=data: office.read_docx(d, "x.docx", limits), repeat)
        office.Visibility.text = lambda self, p: p.text  # type: ignore[assignment,method-assign]
        without = _timed(lambda d=data: office.read_docx(d, "x.docx", limits), repeat)
        office.Visibility.text = text_of  # type: ignore[method-assign]
        rows.append((name, with_step, without, "python-docx's paragraph text"))

    print(f"hidden-text cost, median of {repeat} run(s){' (--quick: a tenth of each input)' if args.quick else ''}\n")
    print("| input | with the step, s | without, s | ratio | without = |")
    print("|---|---|---|---|---|")
    for name, a, b, what in rows:
        print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f}x | {what} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
