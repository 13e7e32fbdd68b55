"""Which page headers and footers of a DOCX Word prints: each is read once, not once a page.

A header or footer is a part of its own, referred to by a section's properties (`w:sectPr`) as
the `default`, `first` or `even` one. Word prints, for each section:

- `first` on the section's first page, only when the section asks for a distinct first page
  (`w:titlePg`), and the `default` one on the pages after it;
- `even` on even pages, only when the document's settings ask for distinct odd and even pages
  (`w:evenAndOddHeaders`), and the `default` one on odd pages;
- a type the section does not name is the previous section's of that type (a first section that
  names none prints none).

So a part is read when some section prints it. Whether a section reaches a second page (where
`default` follows `first`, and where an `even` page exists) is taken from Word's own page marks
(`lastRenderedPageBreak`, page breaks) and, without them, from the amount of text: a header
Word prints only after page one of a one-page section is text no reader sees (a hidden line), and
is left out and counted as `docx_hidden_header`.

A header's text is read by the same rules as the body's (docket.ingest.docx_hidden); the value
a page-number field held when the file was saved ("Page 3 of 9") is not text of the document and
is dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from docket.ingest.docx_hidden import has_text

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_ON = frozenset({"", "1", "true", "on"})
#: when Word left no page marks to count, a section of more lines than this is taken to run past
#: its first page: each paragraph is a line a LINE_CHARS characters (a page of 11 pt body text
#: holds 46-50 lines; Word's default spacing after a paragraph makes it fewer). Near the edge the
#: guess can be wrong either way: a header printed only from page two is then read or lost.
PAGE_LINES = 50
LINE_CHARS = 100
#: a line that is only a page number as a field printed it when the file was saved
_PAGE_NUMBER = re.compile(r"(?:page\s*)?\d+(?:\s*(?:of|/)\s*\d+)?", re.I)


@dataclass(frozen=True)
class Margins:
    """The header and footer parts Word prints (their root elements, each once, in the order
    first printed), and the parts a section names that it never prints."""

    headers: list[Any]
    footers: list[Any]
    unprinted: list[Any]


def _on(el: Any) -> bool:
    return el is not None and (el.get(f"{_W}val") or "").lower() in _ON


def _sections(body: Any) -> list[tuple[Any, bool]]:
    """Each section's `w:sectPr` with whether the section runs past its first page, in order.
    A section ends at the paragraph whose properties hold a `w:sectPr`; the body's own last one
    closes the document."""
    out: list[tuple[Any, bool]] = []
    lines, marks = 0, 0
    for child in body.iterchildren():
        if child.tag == f"{_W}sectPr":
            out.append((child, marks > 0 or lines > PAGE_LINES))
            break
        for p in child.iter(f"{_W}p"):
            chars = 0
            for el in p.iter(f"{_W}t", f"{_W}br", f"{_W}lastRenderedPageBreak", f"{_W}pageBreakBefore"):
                if el.tag == f"{_W}t":
                    chars += len(el.text or "")
                elif (lines or chars) and (el.get(f"{_W}type") == "page" if el.tag == f"{_W}br" else
                                           el.tag != f"{_W}pageBreakBefore" or _on(el)):
                    marks += 1  # a page mark after some text: the section goes on to another page
            lines += max(1, -(-chars // LINE_CHARS))
        ended = child.find(f"{_W}pPr/{_W}sectPr") if child.tag == f"{_W}p" else None
        if ended is not None:
            out.append((ended, marks > 0 or lines > PAGE_LINES))
            lines, marks = 0, 0
    return out


def printed(document: Any) -> Margins:
    """The header and footer parts some section of `document` (a python-docx Document) prints."""
    settings = document.settings.element
    even_odd = _on(settings.find(f"{_W}evenAndOddHeaders"))
    related = document.part.related_parts
    shown: dict[str, dict[str, Any]] = {"header": {}, "footer": {}}
    named: dict[str, set[str]] = {"header": set(), "footer": set()}
    current: dict[tuple[str, str], str] = {}  # (header|footer, type) -> relationship id in force
    for n, (sect, multi) in enumerate(_sections(document.element.body)):
        for kind in ("header", "footer"):
            for ref in sect.iterchildren(f"{_W}{kind}Reference"):
                rid = ref.get(f"{_R}id") or ""
                current[(kind, ref.get(f"{_W}type") or "default")] = rid
                named[kind].add(rid)
        title_page = _on(sect.find(f"{_W}titlePg"))
        types = []
        if title_page:
            types.append("first")
        if not title_page or multi:
            types.append("default")  # (with even_odd: the odd pages')
        if even_odd and (multi or n > 0):  # a later section can open on an even page
            types.append("even")
        for kind in ("header", "footer"):
            for t in types:
                rid = current.get((kind, t))
                if rid and rid not in shown[kind] and rid in related:
                    shown[kind][rid] = related[rid].element
    unprinted = [related[rid].element for kind in shown for rid in sorted(named[kind])
                 if rid in related and rid not in shown[kind]]
    return Margins(list(shown["header"].values()), list(shown["footer"].values()), unprinted)


def margin_text(lines: list[str]) -> str:
    """A header's or footer's lines as one text, without the page numbers its fields printed."""
    kept = [line for line in (x.strip() for x in lines) if line and not _PAGE_NUMBER.fullmatch(line)]
    return "\n".join(kept)


def read_margins(document: Any, read: Callable[[Any], list[str]],
                 counts: Counter[str]) -> tuple[list[str], list[str]]:
    """("Header: ..." texts, "Footer: ..." texts) of the parts Word prints, each read with `read`
    (the body's reader, given a part's root element); parts it never prints are counted."""
    margins = printed(document)
    unprinted = sum(map(has_text, margins.unprinted))  # (read no further: no page prints them)
    if unprinted:
        counts["docx_hidden_header"] += unprinted
    heads = [f"Header: {t}" for root in margins.headers if (t := margin_text(read(root)))]
    feet = [f"Footer: {t}" for root in margins.footers if (t := margin_text(read(root)))]
    return heads, feet
