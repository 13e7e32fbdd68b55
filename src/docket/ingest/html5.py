"""HTML parsed as a browser parses it: lexbor (through selectolax), the WHATWG tree builder.

Python's `html.parser` ends comments, CDATA and raw text where a browser does not
(`<!-- --!> <img>` , `<!-->`, `</style x>`, `<svg><style>`), keeps `<p>` in `<head>` and
does not move misnested markup: what it calls text is not what a person is shown, and what it
calls markup is not what a browser loads. The tree lexbor builds is the browser's; it is turned
into a BeautifulSoup tree (iteratively, so deep nesting cannot exhaust the stack) so the cascade
(css.py, soupsieve) and the visibility walk read it unchanged.

Parsing time grows with nesting depth (each block start tag checks the open elements), so a
document nested deeper than MAX_DEPTH is refused before it is parsed, with the limit named.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Comment
from bs4.element import Doctype
from selectolax.lexbor import LexborHTMLParser, LexborNode

from docket.errors import InputError

#: deepest element nesting accepted (browsers flatten at 512; this bounds parsing time, ~1 s)
MAX_DEPTH = 10_000

#: elements whose end tag may be left out, or that have none: they do not deepen an estimate
_NO_DEPTH = frozenset("p li dt dd tr td th option optgroup rb rt rp rtc thead tbody tfoot colgroup caption html head "
                      "body area base br col embed hr img input link meta param source track wbr keygen image "
                      "basefont bgsound frame".split())
_TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)[^>]*?(/?)>")


def nesting_estimate(source: str) -> int:
    """An upper estimate of how deep `source` nests its elements (linear scan, no parse). `<x/>`
    closes itself only inside `<svg>`/`<math>`: in HTML the slash is ignored."""
    depth = deepest = foreign = 0
    # a tag ends at a ">": none starts after the last one, and a start tag tried there would scan
    # to the end of the text for each "<" ("<a <a <a ..." was quadratic)
    for m in _TAG.finditer(source, 0, source.rfind(">") + 1):
        name = m.group(2).lower()
        if name in ("svg", "math"):
            foreign = max(0, foreign - 1) if m.group(1) else foreign + (not m.group(3))
        if name in _NO_DEPTH:
            continue
        if m.group(1):
            depth = max(0, depth - 1)
        elif not (m.group(3) and foreign):
            depth += 1
            deepest = max(deepest, depth)
    return deepest


def check_depth(source: str, where: str | None = None) -> None:
    """Refuse HTML nested deeper than MAX_DEPTH (InputError naming the limit)."""
    depth = nesting_estimate(source)
    if depth > MAX_DEPTH:
        raise InputError(f"is HTML nesting elements about {depth:,} deep; docket reads HTML nested at most "
                         f"{MAX_DEPTH:,} deep (html5.MAX_DEPTH): flatten the document or split it", where=where)


def lexbor(source: str, scripting: bool = True, where: str | None = None) -> LexborHTMLParser:
    """The browser's tree of `source` (depth checked first; `where` names it in the refusal).
    `scripting` as in a browser that runs scripts: `<noscript>` is then raw text."""
    check_depth(source, where)
    return LexborHTMLParser(source, scripting=scripting)


def parse_soup(source: str, scripting: bool = True, where: str | None = None) -> BeautifulSoup:
    """`source` parsed by the HTML5 rules, as a BeautifulSoup tree (template contents left out:
    a browser never shows them). The tree is replayed into BeautifulSoup's own builder events in
    document order, which keeps building linear in the size of the document."""
    doc = lexbor(source, scripting, where).root
    root = doc.parent if doc is not None and doc.parent is not None else doc
    soup = BeautifulSoup("", "html.parser")
    if root is None:
        return soup
    soup.reset()
    # (node, entering): a node is entered (start tag, then its children) and left (end tag)
    stack: list[tuple[LexborNode, bool]] = [(k, True) for k in reversed(_children(root))]
    while stack:
        node, entering = stack.pop()
        tag = node.tag or ""
        if not entering:
            soup.endData()
            soup.handle_endtag(tag)
        elif tag == "-text":
            soup.handle_data(node.text_content or "")
        elif tag == "-comment":
            soup.endData()
            soup.handle_data(node.comment_content or "")
            soup.endData(Comment)
        elif tag == "-doctype":
            soup.endData()
            soup.handle_data("html")
            soup.endData(Doctype)
        elif tag and not tag.startswith("-"):
            soup.endData()
            attrs = {str(a): ("" if v is None else str(v)) for a, v in node.attributes.items()}
            soup.handle_starttag(tag, None, None, attrs)
            stack.append((node, False))
            if tag != "template":
                stack.extend((k, True) for k in reversed(_children(node)))
    soup.endData()
    return soup


def _children(node: LexborNode) -> list[LexborNode]:
    out = []
    c = node.child
    while c is not None:
        out.append(c)
        c = c.next
    return out
