"""PDF and Word files to text, page by page, through maintained parsers (pypdf, python-docx).

Both return `Segment`s: Markdown-ish text (headings as `#` lines, so the chunker finds the
sections) with the page number it sits on, so a citation can point at a page. A PDF's pages are
its own; a DOCX has pages only where Word recorded them (explicit page breaks and the
`lastRenderedPageBreak` marks Word writes on save): without those, `page` is None.

Every failure is one `InputError` naming the file: an encrypted PDF, a file that is not a PDF or
not a DOCX, a document with no text (a scanned PDF needs OCR first), and a file over one of the
`OfficeLimits`. Those are checked before the parsers do the expensive part: a DOCX's parts are
unzipped once under a byte counter first (the sizes the archive declares are checked too, but a
zip can lie about them), a PDF's pages are counted before any is read, and the text is counted
page by page, so a small file that inflates to minutes of parsing is refused in milliseconds.
"""

from __future__ import annotations

import io
import logging
import re
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from docket.errors import InputError, UnavailableError
from docket.ingest.chunking import ChunkSize, Piece, chunk_text
from docket.ingest.docx_hidden import Visibility, blocks
from docket.ingest.docx_margins import read_margins
from docket.ingest.pdf_hidden import (
    MAX_ANNOTATIONS,
    MAX_FILE_ANNOTATIONS,
    DocumentFonts,
    annotation_count,
    strip_hidden_text,
)
from docket.tokens import TokenCounter


@dataclass(frozen=True)
class OfficeLimits:
    """What one PDF or DOCX may cost (the `attach.*` policy keys of the same names)."""

    max_unzipped_bytes: int = 20_000_000
    max_pages: int = 500
    max_chars: int = 1_000_000
    #: the policy section that sets these, named in a refusal ("" for docket index's fixed limits)
    keys: str = "attach"


def _over(what: str, limit: str, value: int, where: str, keys: str = "attach") -> InputError:
    if not keys:  # docket index's own limits: no policy key sets them
        return InputError(f"{what}, more than a file to index may have ({limit} {value:,}); split the file",
                          where=where)
    return InputError(f"{what}, more than {keys}.{limit} {value:,}; split the file or raise {keys}.{limit} "
                      "in the policy", where=where)


@dataclass(frozen=True)
class Segment:
    text: str
    page: int | None = None


@dataclass(frozen=True)
class OfficeText:
    title: str
    segments: list[Segment]


def paged_pieces(text: OfficeText, counter: TokenCounter, size: ChunkSize,
                 title: str) -> Iterator[tuple[Piece, int | None]]:
    """Each segment chunked on its own, so no chunk spans two pages, with its page: in the
    section path ("Termination > page 4") and beside it for the chunk's metadata."""
    for seg in text.segments:
        for piece in chunk_text(seg.text, counter, size, title=title):
            section = " > ".join(x for x in (piece.section, f"page {seg.page}" if seg.page else "") if x)
            yield Piece(section, piece.text), seg.page


def _clean(text: str) -> str:
    text = text.replace("\x00", "")
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines()]
    out = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


#: the Latin ligature characters (U+FB00-FB06) as their letters, as NFKC spells them: a font's
#: fi ligature reads as "ﬁ" (pypdf reads the glyph name /fi so), which a search for
#: "specification" or a tokenizer's word does not match; pdftotext spells them out too
_LIGATURES = str.maketrans({chr(c): unicodedata.normalize("NFKC", chr(c)) for c in range(0xFB00, 0xFB07)})


#: control characters (C0 and C1 but tab, line feed, carriage return) in a PDF's extracted text:
#: codes whose glyph the font names nothing pypdf or docket reads (pdf_fonts.repair_reading), read
#: as the code's own number; never text a reader sees, they go and are counted (`pdf_unread_glyphs`)
_CONTROLS = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


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


def read_pdf(data: bytes, where: str, limits: OfficeLimits | None = None,
             counts: Counter[str] | None = None) -> OfficeText:
    """The text a viewer paints, page by page (docket.ingest.pdf_hidden: text in the colour under
    it, invisible away from a scan, too small or off the page is left out and counted in `counts`),
    each page's shown FreeText annotations and filled form fields after its own text."""
    try:
        import pypdf
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UnavailableError("reading PDF needs pypdf: pip install 'docket[files]'") from e
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise InputError("is not a PDF (it does not start with %PDF); check the file or its extension", where=where)
    try:
        with _quiet("pypdf"):
            return _read_pdf(pypdf, data, where, limits or OfficeLimits(), counts if counts is not None else Counter())
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged file can fail anywhere inside the parser
        raise InputError(f"is not a readable PDF ({type(e).__name__}: {e})", where=where) from None


def _read_pdf(pypdf: object, data: bytes, where: str, limits: OfficeLimits, counts: Counter[str]) -> OfficeText:
    reader = pypdf.PdfReader(io.BytesIO(data))  # type: ignore[attr-defined]
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # an owner-password-only PDF opens with the empty user password
        except Exception:  # noqa: BLE001 - pypdf raises several kinds (a missing crypto backend too)
            opened = 0
        if not opened:
            raise InputError("is an encrypted PDF; decrypt it first (for example: qpdf --decrypt in.pdf out.pdf)",
                             where=where)
    count = len(reader.pages)  # the page tree only: no page's content is read yet
    if count > limits.max_pages:
        raise _over(f"has {count:,} pages", "max_pages", limits.max_pages, where, limits.keys)
    pages: list[str] = []
    chars, annots_left = 0, MAX_FILE_ANNOTATIONS
    fonts = DocumentFonts()  # read once for every page
    for page in reader.pages:
        annotations: list[str] = []
        strip_hidden_text(page, reader, counts, annotations, min(MAX_ANNOTATIONS, annots_left), fonts)
        annots_left = max(annots_left - annotation_count(page), 0)
        text, unread = _CONTROLS.subn("", "\n".join([page.extract_text() or "", *annotations]))
        if unread:
            counts["pdf_unread_glyphs"] += unread
        pages.append(_clean(text.strip("\n").translate(_LIGATURES)))
        chars += len(pages[-1])
        if chars > limits.max_chars:
            raise _over(f"holds more than {limits.max_chars:,} characters of text by page {len(pages):,}",
                        "max_chars", limits.max_chars, where, limits.keys)
    meta = reader.metadata
    title = str(meta.title).strip() if meta is not None and meta.title else ""
    segments = [Segment(text, n) for n, text in enumerate(pages, 1) if text]
    if not segments:
        raise InputError(f"holds no text in its {len(pages)} page(s) (a scanned PDF needs OCR first)", where=where)
    return OfficeText(title, segments)


_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.I)


def read_docx(data: bytes, where: str, limits: OfficeLimits | None = None,
              counts: Counter[str] | None = None) -> OfficeText:
    """The document's text as Word shows it (docket.ingest.docx_hidden: runs Word hides, or
    draws in the colour under them or too small to read, are left out and counted in `counts`),
    in page segments, headings as Markdown."""
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UnavailableError("reading DOCX needs python-docx: pip install 'docket[files]'") from e
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise InputError("is not a DOCX (not a zip archive; an old .doc must be saved as .docx first)", where=where)
    limits = limits or OfficeLimits()
    check_unzipped(data, where, limits.max_unzipped_bytes, limits.keys)
    try:
        document = docx.Document(io.BytesIO(data))
        title = (document.core_properties.title or "").strip()
        _check_blocks(document, where, limits)
        shown = Visibility(document, counts)
        blocks = list(_docx_blocks(document, shown))
        last = blocks[-1][0] if blocks else 1
        heads, feet = read_margins(document, lambda root: [t for _, t in _docx_blocks(document, shown, root, False)],
                                   shown.counts)
        blocks = [(1, t) for t in heads] + blocks + _docx_notes(document, shown, last) + [(last, t) for t in feet]
    except InputError:
        raise
    except PackageNotFoundError:
        raise InputError("is a zip archive but not a Word document", where=where) from None
    except KeyError as e:
        raise InputError(f"is a zip archive but not a Word document (no {e})", where=where) from None
    except Exception as e:  # noqa: BLE001 - a damaged file can fail anywhere inside the parser
        raise InputError(f"is not a readable DOCX ({type(e).__name__}: {e})", where=where) from None
    chars = sum(len(text) for _, text in blocks)
    if chars > limits.max_chars:
        raise _over(f"holds {chars:,} characters of text", "max_chars", limits.max_chars, where, limits.keys)
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


#: more entries than any Word file has (a zip of many tiny entries costs per entry)
MAX_ZIP_ENTRIES = 10_000


def check_unzipped(data: bytes, where: str, max_bytes: int, keys: str = "attach") -> None:
    """Refuse a zip whose entries unzip to more than `max_bytes` in all: first by the sizes it
    declares, then by inflating every entry under a counter that stops at the limit (a forged
    header cannot make it read further; zipfile also stops at the declared size and checks the
    CRC). Costs at most `max_bytes` of inflating, once."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                raise InputError(f"is a zip of {len(infos):,} entries, more than a Word file has ({MAX_ZIP_ENTRIES:,})",
                                 where=where)
            declared = sum(i.file_size for i in infos)
            if declared > max_bytes:
                raise _over(f"unzips to {declared:,} bytes", "max_unzipped_bytes", max_bytes, where, keys)
            total = 0
            for info in infos:
                with zf.open(info) as fh:
                    while block := fh.read(1 << 16):
                        total += len(block)
                        if total > max_bytes:
                            raise _over(f"unzips to more than {max_bytes:,} bytes", "max_unzipped_bytes", max_bytes,
                                        where, keys)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged or encrypted zip fails in many ways
        raise InputError(f"is not a readable DOCX ({type(e).__name__}: {e})", where=where) from None


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
#: a DOCX has no fixed pages: its paragraphs and table rows are counted against attach.max_pages
#: at this many per page (a dense page has about 50; reading one costs python-docx ~20 us)
BLOCKS_PER_PAGE = 200


def _related(document: object, kinds: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """(kind, part) of each part of the document's own package related to its main part as one of
    `kinds` (the last word of the relationship type: "header", "footnotes"...)."""
    for rel in document.part.rels.values():  # type: ignore[attr-defined]
        kind = rel.reltype.rsplit("/", 1)[-1]
        if not rel.is_external and kind in kinds:
            yield kind, rel.target_part


def _check_blocks(document: object, where: str, limits: OfficeLimits) -> None:
    """Refuse a body (with its headers and footers) of more paragraphs and rows than `max_pages`
    allows, counted by lxml in C (no python-docx object is made) before the per-paragraph walk."""
    body = document.element.body  # type: ignore[attr-defined]
    n = int(body.xpath("count(.//w:p | .//w:tr)"))  # python-docx's xpath knows the w: prefix
    for _kind, part in _related(document, ("header", "footer")):
        n += int(part.element.xpath("count(.//w:p | .//w:tr)"))  # read once each, as the body
    if n > limits.max_pages * BLOCKS_PER_PAGE:
        raise _over(f"has {n:,} paragraphs and table rows (counted at {BLOCKS_PER_PAGE} a page)", "max_pages",
                    limits.max_pages, where, limits.keys)


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


def _paragraph_page(p: object, pages: _Pages) -> tuple[int | None, bool]:
    """Walk one paragraph's marks and text; the page its first text is on (None: no text), and
    whether it holds a text box (whose marks and text are the box's paragraphs', not this one's)."""
    first: int | None = None
    boxed = False
    if p.find(f"{_W}pPr/{_W}pageBreakBefore") is not None:  # type: ignore[attr-defined]
        pages.mark()
    for el in p.iter(f"{_W}br", f"{_W}lastRenderedPageBreak", f"{_W}t", f"{_W}txbxContent"):  # type: ignore[attr-defined]
        if el.tag == f"{_W}txbxContent":
            boxed = True
        elif boxed and next(el.iterancestors(f"{_W}p"), None) is not p:
            continue  # a text box's paragraph's
        elif el.tag == f"{_W}t":
            if (el.text or "").strip():
                if first is None:
                    first = pages.page
                pages.text()
        elif el.tag == f"{_W}lastRenderedPageBreak" or el.get(f"{_W}type") == "page":
            pages.mark()
    return first, boxed


def _paragraph_styles(document: object) -> tuple[dict[str, str], str]:
    """Paragraph style names by id, and the default one's name: read once per file.
    (`Paragraph.style` searches every style of the file for each paragraph: 5 ms a paragraph.)"""
    from docx.enum.style import WD_STYLE_TYPE

    names: dict[str, str] = {}
    seen: set[str] = set()
    default = ""
    for st in document.styles:  # type: ignore[attr-defined]
        paragraph = st.type == WD_STYLE_TYPE.PARAGRAPH
        if st.style_id not in seen:  # python-docx takes the first style with an id, then checks its type
            seen.add(st.style_id)
            if paragraph:
                names[st.style_id] = st.name or ""
        if paragraph and st.element.get(f"{_W}default") in ("1", "true", "on"):
            default = st.name or ""  # the last default one, as the spec (and python-docx) say
    return names, default


def _style_name(p: object, styles: dict[str, str], default: str) -> str:
    """What `Paragraph.style.name` gives: the pStyle's paragraph style, else the default one."""
    el = p.find(f"{_W}pPr/{_W}pStyle")  # type: ignore[attr-defined]
    sid = el.get(f"{_W}val") if el is not None else None
    return styles[sid] if sid in styles else default


def _docx_notes(document: object, shown: Visibility, page: int) -> list[tuple[int, str]]:
    """The footnotes and endnotes a reader sees, after the body ("Footnote 1: ..."), numbered
    in the order the body refers to them: Word prints a note only where a shown run refers to
    it, and the same hidden-text rules apply to its own text."""
    from docx.oxml import parse_xml

    body = document.element.body  # type: ignore[attr-defined]
    order: dict[tuple[str, str], int] = {}
    numbered = {"footnote": 0, "endnote": 0}
    for p in body.iter(f"{_W}p"):
        if p.find(f".//{_W}footnoteReference") is None and p.find(f".//{_W}endnoteReference") is None:
            continue
        for ref in shown.note_references(p):
            if ref not in order:
                numbered[ref[0]] += 1
                order[ref] = numbered[ref[0]]
    if not order:
        return []
    notes: dict[tuple[str, str], object] = {}
    for kind, target in _related(document, ("footnotes", "endnotes")):
        try:
            part = parse_xml(target.blob)
        except Exception:  # noqa: BLE001 - a damaged notes part costs its notes, not the document's body
            continue
        for note in part.iterchildren(f"{_W}{kind[:-1]}"):
            notes.setdefault((kind[:-1], note.get(f"{_W}id") or ""), note)
    out = []
    for (kind, nid), n in sorted(order.items(), key=lambda item: (item[0][0] != "footnote", item[1])):
        note = notes.get((kind, nid))
        if note is None:
            continue
        paragraphs = note.iter(f"{_W}p")  # type: ignore[attr-defined]
        text = "\n".join(t for p in paragraphs if (t := shown.text(p).strip()))
        if text:
            out.append((page, f"{kind.capitalize()} {n}: {text}"))
    return out


#: text boxes inside text boxes read this deep (Word draws none; the XML allows any depth)
MAX_BOX_DEPTH = 8
#: tables inside table cells read row by row this deep; deeper ones as their paragraphs
MAX_TABLE_DEPTH = 8


def _docx_blocks(document: object, shown: Visibility, root: object = None,
                 headings: bool = True) -> list[tuple[int, str]]:
    """(page, text) for each paragraph and table row of the body (or of `root`, a header's or a
    footer's), in order; headings as Markdown (`headings`); only the text Word shows (`shown`). A
    text box's paragraphs and rows come after the paragraph (or the table row) that anchors it,
    on its page."""
    from docx.table import Table

    out: list[tuple[int, str]] = []
    pages = _Pages()
    styles, default = _paragraph_styles(document) if headings else ({}, "")  # (a header's lines are no headings)

    def cell_text(tc: object, depth: int) -> str:
        """A cell's paragraphs, and the rows of a table nested in it (cells joined as " | "),
        one per line; nesting past MAX_TABLE_DEPTH is read as the paragraphs it holds."""
        lines = []
        for child in blocks(tc):
            if child.tag == f"{_W}p":
                lines.append(shown.text(child))
            elif child.tag == f"{_W}tbl" and depth < MAX_TABLE_DEPTH:
                for row in Table(child, document).rows:  # type: ignore[arg-type]
                    inner = [cell_text(t, depth + 1) for t in dict.fromkeys(c._tc for c in row.cells)]
                    lines.append(" | ".join(dict.fromkeys(t for t in inner if t)))
            elif child.tag == f"{_W}tbl":
                lines += [shown.text(p) for p in child.iter(f"{_W}p")]
        return "\n".join(t for t in lines if t.strip()).strip()

    def cell_paragraphs(tc: object, depth: int) -> list[object]:
        """The paragraphs of a cell and of the tables nested in it (where text boxes anchor)."""
        out: list[object] = []
        for child in blocks(tc):
            if child.tag == f"{_W}p":
                out.append(child)
            elif child.tag == f"{_W}tbl":
                out += [p for p in child.iter(f"{_W}p")]
        return out

    def walk(parent: object, depth: int) -> None:
        for child in blocks(parent):
            if child.tag == f"{_W}p":
                page, boxed = _paragraph_page(child, pages)
                # no text: skipped before python-docx's costly paragraph and style objects, unless
                # it opens or closes a field (whose code may run on into the next paragraphs)
                if page is not None or child.find(f".//{_W}noBreakHyphen") is not None \
                        or child.find(f".//{_W}fldChar") is not None:
                    text = shown.text(child).strip()
                    if text and headings:
                        style = _style_name(child, styles, default)
                        m = _HEADING_STYLE.search(style)
                        if m:
                            text = "#" * min(int(m.group(1)), 6) + " " + " ".join(text.split())
                        elif style.lower() == "title":
                            text = "# " + " ".join(text.split())
                    if text:
                        out.append((page or pages.page, text))
                if boxed and depth < MAX_BOX_DEPTH:
                    for box in shown.text_boxes(child):
                        walk(box, depth + 1)
            elif child.tag == f"{_W}tbl":
                if depth == 0 and shown.table_off_page(child):
                    continue  # indented wholly off the page (a table in a text box is placed by the box)
                table = Table(child, document)  # type: ignore[arg-type]
                boxed = depth < MAX_BOX_DEPTH and child.find(f".//{_W}txbxContent") is not None
                seen: set[object] = set()  # a cell merged down several rows is in each of them
                for row in table.rows:
                    paras = {c._tc: cell_paragraphs(c._tc, 0) for c in row.cells}
                    cells = [cell_text(tc, 0) for tc in paras]
                    line = " | ".join(dict.fromkeys(c for c in cells if c))
                    if line:
                        out.append((pages.page, line))
                        pages.text()
                    if boxed:
                        for p in (p for ps in paras.values() for p in ps):
                            for box in shown.text_boxes(p):
                                if box not in seen:
                                    seen.add(box)
                                    walk(box, depth + 1)

    walk(document.element.body if root is None else root, 0)  # type: ignore[attr-defined]
    return out
