"""Markdown as a viewer shows it, before it is chunked.

Every CommonMark viewer (GitHub, GitLab, a docs site) passes raw HTML through to the browser, so
a Markdown file can hide text exactly as a web page can: an HTML comment, a `<script>`, a
`<div style="display:none">`, a `<p hidden>`, a `<style>` rule that hides a class, or a hidden
`<div>` opened in one block that swallows the Markdown paragraphs after it. A reader of the
rendered file never sees that text, so it must not reach the prompt either. Reference
definitions (`[//]: # (a note)`, a link's URL and title) render as nothing at all.

The file is parsed as a viewer parses it (markdown-it, CommonMark with raw HTML on, GFM tables),
rendered to HTML, and cleaned by the same code as an HTML file (docket.ingest.html: the browser's
tree, the page's CSS cascade). The result is spliced back block by block: a top-level block
whose visible text is what it shows on its own keeps its Markdown source (headings, lists and
code fences stay Markdown for the chunker); a block with raw HTML, or one the page's HTML hides
in part, becomes its visible text; a block hidden whole is dropped. A file without raw HTML and
without reference definitions is returned unchanged, so most Markdown costs one parse.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from docket.errors import InputError
from docket.ingest.html import clean_html

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

#: a GFM footnote definition (`[^note]: text`): GitHub shows it at the page's foot, so it is kept
_FOOTNOTE = re.compile(r" {0,3}\[\^[^\]\s]+\]:")
#: a line that may start a reference definition (CommonMark: up to 3 spaces, then `[`)
_DEFINITION = re.compile(r" {0,3}\[")
_SPACES = re.compile(r"[ \t]{2,}")
#: markdown-it's own tags (their attributes are escaped, so `>` closes each) and the cleaner's
#: marks at a line's start: "- " for a list item (nested ones too; "-" alone before an item's
#: paragraph), "# " for a heading
_TAG = re.compile(r"<[^>]*>")
_MARKS = re.compile(r"^(?:-(?: |$))+|^#{1,6}(?: |$)", re.MULTILINE)
_HTML_TYPES = frozenset({"html_block", "html_inline"})


#: block quotes, lists, list items and inline elements nested deeper than this: markdown-it stops
#: parsing there (what lies deeper is neither rendered nor cleaned), a viewer does not
MAX_NESTING = 100
_TOO_DEEP = "docket.too_deep"


def viewer_parser() -> MarkdownIt:
    """A new markdown-it as a viewer reads Markdown: CommonMark, raw HTML on, GFM tables and
    strikethrough, its nesting limit raised to MAX_NESTING, and every place it stops at that limit
    reported (`too_deep(env)` after `parse(text, env)`). Here and for the links in an answer
    (docket.checks.answer_links), which wraps its own rules around it."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True, "maxNesting": MAX_NESTING}).enable(["table", "strikethrough"])
    # (its third stop, in skipToken, only decides whether a run of `[` is a link: the text after it
    # is still tokenised, raw HTML included, so it is left alone)
    block_tokenize, inline_tokenize = md.block.tokenize, md.inline.tokenize

    def block(state: Any, start: int, end: int) -> None:
        if state.level >= MAX_NESTING and any(not state.isEmpty(n) for n in range(start, end)):
            state.env[_TOO_DEEP] = True
        block_tokenize(state, start, end)

    def inline(state: Any) -> None:
        if state.level >= MAX_NESTING and state.pos < state.posMax:
            state.env[_TOO_DEEP] = True
        inline_tokenize(state)

    md.block.tokenize, md.inline.tokenize = block, inline  # type: ignore[method-assign,assignment]
    return md


def too_deep(env: dict[str, Any]) -> bool:
    """Whether the parse that filled `env` stopped somewhere at MAX_NESTING (`viewer_parser`)."""
    return bool(env.get(_TOO_DEEP))


_parser = lru_cache(maxsize=1)(viewer_parser)


def _has_html(tokens: list[Token]) -> bool:
    return any(t.type in _HTML_TYPES or any(c.type in _HTML_TYPES for c in t.children or ()) for t in tokens)


def _blocks(tokens: list[Token]) -> list[tuple[int, int, list[Token]]]:
    """The top-level blocks as (first line, end line, their tokens), in order."""
    out: list[tuple[int, int, list[Token]]] = []
    depth = 0
    for t in tokens:
        if depth == 0:
            assert t.map is not None, t.type  # every top-level opening token carries its lines
            out.append((t.map[0], t.map[1], [t]))
        else:
            out[-1][2].append(t)
        depth += t.nesting
    return out


def _all_shown(shown: str, rendered: str) -> bool:
    """Whether the cleaned text of a block without raw HTML still holds every character of text
    its rendering has (whitespace aside): then nothing of it is hidden, and its Markdown source
    can stand. The cleaner's own list bullets and heading marks are set aside first; any other
    difference counts as hidden (the safe answer: the block becomes its visible text)."""
    text = html.unescape(_TAG.sub("", rendered))
    own = _MARKS.sub("", shown)
    return "".join(own.split()) == "".join(text.split())


def _lines(text: str) -> list[str]:
    """The lines as markdown-it numbers them: split at "\n" only, after "\r\n" and "\r" became
    "\n" (not at U+2028, a form feed or the other breaks `str.splitlines` knows)."""
    parts = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _marker(text: str) -> str:
    """A word the source cannot hold (a digest of the source itself), to find each block again in
    the cleaned text."""
    word = "docketblock" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    while word in text:
        word += "x"
    return word


def _page(rendered: list[str], marker: str) -> str:
    """One HTML page of the rendered blocks, each preceded by `marker`+its number as a text run of
    its own, at the point in the tree the browser reaches it (inside whatever earlier raw HTML left
    open, so a marker is hidden along with the block it announces)."""
    parts = [f"\n{marker}{k}n\n{r}" for k, r in enumerate(rendered)]
    return "<!doctype html><html><head></head><body>" + "".join(parts) + "</body></html>"


def _by_block(text: str, marker: str, n: int) -> list[str | None]:
    """The cleaned text of each block (None: its marker is hidden, so the block starts hidden)."""
    out: list[str | None] = [None] * n
    pieces = re.split(rf"{marker}(\d+)n", text)
    for k, piece in zip(pieces[1::2], pieces[2::2]):
        # a browser draws a run of spaces as one: what an element taken out of a line leaves
        out[int(k)] = "\n".join(_SPACES.sub(" ", line).strip() for line in piece.strip().split("\n"))
    return out


def _definitions(lines: list[str], covered: list[bool], counts: Counter[str]) -> list[bool]:
    """Which uncovered lines to keep: blank lines, and GFM footnote definitions with their indented
    continuation; every other line no block holds is part of a reference definition (CommonMark
    renders nothing for it) and is dropped, counted once per definition."""
    keep = [True] * len(lines)
    footnote = False
    for i, line in enumerate(lines):
        if covered[i] or not line.strip():
            continue
        if _FOOTNOTE.match(line):
            footnote = True
        elif _DEFINITION.match(line):
            footnote = False
            counts["markdown_reference_definitions"] += 1
        elif footnote and line[:1] in (" ", "\t"):
            pass
        else:
            footnote = False
        keep[i] = footnote
    return keep


def visible_markdown(text: str, counts: Counter[str] | None = None, *, where: str | None = None) -> str:
    """`text` (a Markdown body, front matter already split off) with what a viewer does not show
    removed, each removal counted in `counts` by kind (the HTML kinds of docket.ingest.html, and
    `markdown_reference_definitions`). Unchanged when there is nothing of the kind."""
    counts = counts if counts is not None else Counter()
    if "<" not in text and "[" not in text:
        return text
    md = _parser()
    env: dict[str, object] = {}
    tokens = md.parse(text, env)
    if too_deep(env):
        raise InputError(f"nests Markdown deeper than {MAX_NESTING} levels (each block quote, list and list item "
                         "is one); a viewer would still render what lies deeper, so docket refuses the file rather "
                         "than index text it cannot check", where=where)
    lines = _lines(text)
    blocks = _blocks(tokens)
    covered = [False] * len(lines)
    for a, b, _ in blocks:
        covered[a:b] = [True] * (b - a)
    keep_line = _definitions(lines, covered, counts)
    raw_html = _has_html(tokens)
    if not raw_html and all(keep_line):
        return text
    replace: dict[int, str] = {}  # block number -> its visible text ("": hidden whole); the others keep their source
    if raw_html:
        marker = _marker(text)
        toks = [t for _, _, t in blocks]
        rendered = [md.renderer.render(t, md.options, env) for t in toks]
        page = _page(rendered, marker)
        shown = _by_block(clean_html(page, counts, where=where).text, marker, len(blocks))
        for k, t in enumerate(toks):
            seen = shown[k]
            if seen is None or _has_html(t) or not _all_shown(seen, rendered[k]):
                replace[k] = seen or ""
    out: list[str] = []
    starts = {a: (k, b) for k, (a, b, _) in enumerate(blocks)}
    i = 0
    while i < len(lines):
        if i in starts:
            k, end = starts[i]
            if k in replace:  # on lines of its own, a blank line either side: a paragraph as the browser draws it
                visible = replace[k]
                if out and not "".join(out[-2:]).endswith("\n\n"):
                    out.append("\n" if out[-1].endswith("\n") else "\n\n")
                if visible:
                    out.append(visible + "\n\n")
            else:
                out.extend(lines[i:end])
            i = end
            continue
        if keep_line[i]:
            out.append(lines[i])
        i += 1
    return "".join(out)
