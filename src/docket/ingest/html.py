"""HTML to clean, structured text, parsed as a browser parses it (html5.py: lexbor, the HTML5 tree builder).

Scripts, styles, comments and everything a browser would not show a person are removed before any
text is taken: text hidden from the reader is the classic place to plant instructions for a model.
What is hidden is decided from the page's own CSS (`<style>` sheets and `style=` attributes,
cascaded as a browser does: see css.py and visibility.py), not from a list of spellings. Headings
become Markdown headings so the chunker can follow the document's own structure. Every removal is
counted by kind (`html_hidden_display`, `html_hidden_color`, ...) so the index report can show
what was thrown away.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from bs4 import Comment, NavigableString, Tag
from bs4.element import Declaration, Doctype, PageElement, ProcessingInstruction

from docket.ingest.css import resolve
from docket.ingest.html5 import parse_soup
from docket.ingest.visibility import hide

#: elements whose content is never document text
_NON_CONTENT = ("script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "head",
                # fallback content, shown only by a browser that cannot play or frame
                "video", "audio", "noembed", "noframes", "frameset", "portal", "fencedframe")
_BLOCKS = frozenset(
    "p div section article main header footer nav aside ul ol li table thead tbody tr td th blockquote pre "
    "dl dt dd figure figcaption form fieldset address details summary hr body html".split()
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}


@dataclass(frozen=True)
class CleanHtml:
    title: str
    text: str  # paragraphs separated by blank lines; headings as "# ..." lines


def _collapse(text: str) -> str:
    return re.sub(r"[ \t\r\n\f\v]+", " ", text)


def _walk(root: Tag, out: list[str]) -> None:
    """Text of `root` in document order; iterative, so nesting depth never exhausts the stack."""
    stack: list[PageElement | str] = list(reversed(list(root.children)))
    while stack:
        child = stack.pop()
        if isinstance(child, str) and not isinstance(child, NavigableString):
            out.append(child)  # a separator queued after a block's children
        elif isinstance(child, (Comment, Doctype, Declaration, ProcessingInstruction)):
            continue
        elif isinstance(child, NavigableString):
            out.append(_collapse(str(child)))
        elif isinstance(child, Tag):
            name = child.name
            if name in _HEADINGS:
                heading = _collapse(child.get_text(" ")).strip()
                if heading:
                    out.append(f"\n\n{'#' * _HEADINGS[name]} {heading}\n\n")
                continue
            if name == "br":
                out.append("\n")
                continue
            block = name in _BLOCKS
            if block:
                out.append("\n\n")
                stack.append("\n\n")
            if name == "li":
                out.append("- ")
            stack.extend(reversed(list(child.children)))


def _outermost(root: Tag, names: tuple[str, ...]) -> list[Tag]:
    """The elements named `names` that are not inside another such element (one iterative pass)."""
    out: list[Tag] = []
    stack = [c for c in reversed(list(root.children)) if isinstance(c, Tag)]
    while stack:
        tag = stack.pop()
        if tag.name in names:
            out.append(tag)
        else:
            stack.extend(c for c in reversed(list(tag.children)) if isinstance(c, Tag))
    return out


def _closed_controls(soup: Tag, counts: Counter[str]) -> None:
    """What a browser does not draw although it is in the tree: the options of a closed `<select>`
    other than the one it shows, and the light-DOM children of an element whose declarative
    shadow root (`<template shadowrootmode>`) decides what shows (docket does not render shadow
    trees: fail closed, the children go)."""
    for sel in soup.find_all("select"):
        size = str(sel.get("size", "1")).strip()
        if sel.has_attr("multiple") or (size.isdigit() and int(size) > 1):
            continue
        options = sel.find_all("option")
        shown = next((o for o in options if o.has_attr("selected")), options[0] if options else None)
        gone = [o for o in options if o is not shown]
        if any(o.get_text().strip() for o in gone):
            counts["html_hidden_select_options"] += 1
        for o in gone:
            o.decompose()
    for tpl in soup.find_all("template"):
        host = tpl.parent
        if not tpl.has_attr("shadowrootmode") or not isinstance(host, Tag):
            continue
        rest = [c for c in host.children if c is not tpl]
        if any(str(c).strip() for c in rest):
            counts["html_hidden_unresolved_shadow_dom"] += 1
        for c in rest:
            c.extract()


def clean_html(source: str, counts: Counter[str] | None = None, *, where: str | None = None) -> CleanHtml:
    """Visible text of an HTML document; counts removed scripts, styles, comments and hidden text by kind."""
    counts = counts if counts is not None else Counter()
    # the browser's tree (a repeated attribute keeps its first value, `<p>` in `<head>` moves to the
    # body, a comment ends where a browser ends it); refused past html5.MAX_DEPTH
    soup = parse_soup(source, where=where)
    title_tag = soup.find("title")
    title = _collapse(title_tag.get_text(" ")).strip() if isinstance(title_tag, Tag) else ""
    _closed_controls(soup, counts)
    styles = resolve(soup)  # before the <style> elements go
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
        counts["html_comments"] += 1
    for tag in list(soup.find_all(["script", "style"])):
        counts[f"html_{tag.name}s"] += 1
        tag.decompose()
    for tag in _outermost(soup, _NON_CONTENT):
        if tag.name != "head":
            counts["html_non_content_elements"] += 1
        tag.decompose()
    for kind, n in hide(soup, styles).items():
        counts[f"html_hidden_{kind}"] += n
    parts: list[str] = []
    _walk(soup, parts)
    blocks = re.split(r"\n\s*\n", "".join(parts))
    paragraphs = ["\n".join(line.strip() for line in b.strip().split("\n") if line.strip()) for b in blocks]
    text = "\n\n".join(p for p in paragraphs if p)
    if not title:
        h1 = soup.find("h1")
        title = _collapse(h1.get_text(" ")).strip() if isinstance(h1, Tag) else ""
    return CleanHtml(title=title, text=text)
