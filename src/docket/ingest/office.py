"""PDF and Word files to text, page by page, through maintained parsers (pypdf, python-docx).

Both return `Segment`s: Markdown-ish text (headings as `#` lines, so the chunker finds the
sections) with the page number it sits on, so a citation can point at a page. A PDF's pages are
its own; a DOCX has pages only where Word recorded them (explicit page breaks and the
`lastRenderedPageBreak` marks Word writes on save): without those, `page` is None.

Every failure is one `InputError` naming the file: an encrypted PDF, a file that is not a PDF or
not a DOCX, a document with no text (a scanned PDF needs OCR first).
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from docket.errors import InputError, UnavailableError


@dataclass(frozen=True)
class Segment:
    text: str
    page: int | None = None


@dataclass(frozen=True)
class OfficeText:
    title: str
    segments: list[Segment]


def _clean(text: str) -> str:
    text = text.replace("\x00", "")
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines()]
    out = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """The parser's own log warnings ("EOF marker not found") would print past the one-line error."""
    log = logging.getLogger(name)
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def read_pdf(data: bytes, where: str) -> OfficeText:
    try:
        import pypdf
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UnavailableError("reading PDF needs pypdf: pip install 'docket[files]'") from e
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise InputError("is not a PDF (it does not start with %PDF); check the file or its extension", where=where)
    try:
        with _quiet("pypdf"):
            return _read_pdf(pypdf, data, where)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged file can fail anywhere inside the parser
        raise InputError(f"is not a readable PDF ({type(e).__name__}: {e})", where=where) from None


def _read_pdf(pypdf: object, data: bytes, where: str) -> OfficeText:
    reader = pypdf.PdfReader(io.BytesIO(data))  # type: ignore[attr-defined]
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # an owner-password-only PDF opens with the empty user password
        except Exception:  # noqa: BLE001 - pypdf raises several kinds (a missing crypto backend too)
            opened = 0
        if not opened:
            raise InputError("is an encrypted PDF; decrypt it first (for example: qpdf --decrypt in.pdf out.pdf)",
                             where=where)
    pages = [_clean(page.extract_text() or "") for page in reader.pages]
    meta = reader.metadata
    title = str(meta.title).strip() if meta is not None and meta.title else ""
    segments = [Segment(text, n) for n, text in enumerate(pages, 1) if text]
    if not segments:
        raise InputError(f"holds no text in its {len(pages)} page(s) (a scanned PDF needs OCR first)", where=where)
    return OfficeText(title, segments)


_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.I)


def read_docx(data: bytes, where: str) -> OfficeText:
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UnavailableError("reading DOCX needs python-docx: pip install 'docket[files]'") from e
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise InputError("is not a DOCX (not a zip archive; an old .doc must be saved as .docx first)", where=where)
    try:
        document = docx.Document(io.BytesIO(data))
        title = (document.core_properties.title or "").strip()
        blocks = list(_docx_blocks(document))
    except PackageNotFoundError:
        raise InputError("is a zip archive but not a Word document", where=where) from None
    except KeyError as e:
        raise InputError(f"is a zip archive but not a Word document (no {e})", where=where) from None
    except Exception as e:  # noqa: BLE001 - a damaged file can fail anywhere inside the parser
        raise InputError(f"is not a readable DOCX ({type(e).__name__}: {e})", where=where) from None
    paged = any(page > 1 for page, _ in blocks)
    segments: list[Segment] = []
    headings: dict[int, str] = {}  # level -> heading, carried onto the next page so a section keeps its path
    page_lines: list[str] = []
    current = 1

    def flush() -> None:
        text = _clean("\n\n".join(page_lines))
        if text and not all(line.startswith("#") for line in text.splitlines() if line.strip()):
            segments.append(Segment(text, current if paged else None))

    for page, text in blocks:
        if page != current:
            flush()
            page_lines = [headings[level] for level in sorted(headings)]
            current = page
        if text.startswith("#"):
            level = len(text) - len(text.lstrip("#"))
            headings = {lv: h for lv, h in headings.items() if lv < level} | {level: text}
        page_lines.append(text)
    flush()
    if not segments:
        raise InputError("holds no text (an empty document, or only images)", where=where)
    return OfficeText(title, segments)


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


class _Pages:
    """Counts pages from Word's marks. Marks with no text between them are one break (Word writes
    a `lastRenderedPageBreak` after an explicit break too); marks before any text do not count."""

    def __init__(self) -> None:
        self.page = 1
        self._seen_text = False
        self._pending = False

    def mark(self) -> None:
        if self._seen_text and not self._pending:
            self.page += 1
            self._pending = True

    def text(self) -> None:
        self._seen_text = True
        self._pending = False


def _paragraph_page(p: object, pages: _Pages) -> int | None:
    """Walk one paragraph's marks and text; the page its first text is on (None: no text)."""
    first: int | None = None
    if p.find(f"{_W}pPr/{_W}pageBreakBefore") is not None:  # type: ignore[attr-defined]
        pages.mark()
    for el in p.iter(f"{_W}br", f"{_W}lastRenderedPageBreak", f"{_W}t"):  # type: ignore[attr-defined]
        if el.tag == f"{_W}t":
            if (el.text or "").strip():
                if first is None:
                    first = pages.page
                pages.text()
        elif el.tag == f"{_W}lastRenderedPageBreak" or el.get(f"{_W}type") == "page":
            pages.mark()
    return first


def _docx_blocks(document: object) -> list[tuple[int, str]]:
    """(page, text) for each paragraph and table row, in body order; headings as Markdown."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    out: list[tuple[int, str]] = []
    pages = _Pages()
    body = document.element.body  # type: ignore[attr-defined]
    for child in body.iterchildren():
        if child.tag == f"{_W}p":
            para = Paragraph(child, document)  # type: ignore[arg-type]
            page = _paragraph_page(child, pages)
            text = para.text.strip()
            if not text:
                continue
            style = (para.style.name if para.style is not None else "") or ""
            m = _HEADING_STYLE.search(style)
            if m:
                text = "#" * min(int(m.group(1)), 6) + " " + " ".join(text.split())
            elif style.lower() == "title":
                text = "# " + " ".join(text.split())
            out.append((page or pages.page, text))
        elif child.tag == f"{_W}tbl":
            table = Table(child, document)  # type: ignore[arg-type]
            for row in table.rows:
                cells = [c.text.strip() for c in row.cells]
                line = " | ".join(dict.fromkeys(c for c in cells if c))
                if line:
                    out.append((pages.page, line))
                    pages.text()
    return out
