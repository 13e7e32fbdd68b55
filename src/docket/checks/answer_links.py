"""Every link in an answer, read the way a Markdown renderer (HTML on) and a browser read it.

The answer is parsed with markdown-it-py (CommonMark + tables + strikethrough, raw HTML on,
every destination accepted so `javascript:` links are seen too). Each inline rule is wrapped so
the parser reports where in the source each link, image, autolink, HTML tag, entity and escape
came from; that gives:

* the destinations a renderer would use: inline and reference links and images (entities and
  escapes decoded), autolinks, and the URL attributes of raw HTML tags (`href`, `src`, `srcset`,
  `poster`, `action`, `formaction`, `data`, `background`, `ping`, `xlink:href`, `style` `url()`,
  `<meta http-equiv=refresh>`), with their attribute entities decoded and newlines kept;
* the text a reader sees (entities decoded, escapes applied, markup gone, invisible characters
  dropped), searched for URLs, e-mail addresses and bare host names;
* for each, the exact span of the source that renders it, so it can be cut out.

Raw destinations are also judged as written: where two renderers could read a destination
differently (`https://evil.example\\@trusted.com` is `trusted.com` to CommonMark and
`evil.example` to a browser reading the raw text), both readings are judged.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from docket.checks.html_loads import css_urls, element_loads, loads
from docket.checks.urls import Found, bare_links, normalise_char
from docket.ingest.markdown import too_deep, viewer_parser

#: tags whose start tag goes when one of its URLs is disallowed (loading them is the harm)
MEDIA_TAGS = frozenset({"img", "image", "iframe", "frame", "embed", "object", "source", "track", "video", "audio",
                        "link", "base", "meta", "script", "input", "picture", "portal", "applet", "bgsound"})
_INLINE_TAGS = frozenset("a abbr b bdi bdo cite code data dfn em font i kbd mark q s samp small span strong sub sup "
                         "time u var del ins".split())


@dataclass
class Occurrence:
    """One link-like thing in the answer.

    `urls` are the readings of its destination (first = what the renderer uses); `span` is the
    [start, end) of the source that renders it, None when it could not be placed (the stripper then
    falls back to its block, `block`); `text` is what a reader sees of a link.
    """

    kind: str  # image | markdown | reference | autolink | html | url | email | domain
    urls: list[str]
    span: tuple[int, int] | None
    block: tuple[int, int]
    text: str = ""
    label_span: tuple[int, int] | None = None  # the source of a Markdown link's text (kept by strip)
    tag: str = ""
    attrs: list[tuple[str, str | None]] = field(default_factory=list)
    bad_attrs: list[str] = field(default_factory=list)


# -- the parser, with its rules reporting where they matched ------------------------------------

_Rec = tuple[str, int, int, list[Token]]  # rule name, start, end, tokens it pushed


def _wrap(name: str, fn: Callable[[StateInline, bool], bool]) -> Callable[[StateInline, bool], bool]:
    def rule(state: StateInline, silent: bool) -> bool:
        start = state.pos
        before = len(state.tokens)
        pending = bool(state.pending)
        ok = fn(state, silent)
        if ok and not silent:
            pushed = state.tokens[before:]
            if pending and pushed and pushed[0].type == "text":
                pushed = pushed[1:]
            state.env.setdefault("_docket_spans", {}).setdefault(id(state.tokens), []).append(
                (name, start, state.pos, list(pushed)))
        return ok

    return rule


def _wrap_block(fn: Callable[..., bool]) -> Callable[..., bool]:
    def rule(state: Any, start: int, end: int, silent: bool) -> bool:
        before = dict(state.env.get("references", {}))
        ok = fn(state, start, end, silent)
        if ok and not silent:
            added = [k for k in state.env.get("references", {}) if k not in before]
            state.env.setdefault("_docket_refs", []).append((start, state.line, added))
        return ok

    return rule


@lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    md = viewer_parser()  # nesting as deep as a viewer's (markdown-it's own limit of 20 hid deeper links)
    if "text_join" in [r.name for r in md.core.ruler.__rules__]:
        md.disable("text_join")  # it rebuilds each block's token list, which the spans are keyed by
    md.validateLink = lambda url: True  # type: ignore[method-assign]  # see javascript: links too
    wrapped = ("escape", "backticks", "strikethrough", "emphasis", "link", "image", "autolink", "html_inline",
               "entity", "newline")
    for rule in md.inline.ruler.__rules__:
        if rule.name in wrapped:
            md.inline.ruler.at(rule.name, _wrap(rule.name, rule.fn))
    for block_rule in md.block.ruler.__rules__:
        if block_rule.name == "reference":
            md.block.ruler.at("reference", _wrap_block(block_rule.fn), {"alt": list(block_rule.alt)})
    return md


# -- source positions -----------------------------------------------------------------------


class _Lines:
    """Offsets of the answer's lines, and the place of a block's inline content in them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for m in re.finditer("\n", text):
            self.starts.append(m.end())
        self.cursor: dict[int, int] = {}

    def line(self, n: int) -> str:
        if n >= len(self.starts):
            return ""
        end = self.starts[n + 1] - 1 if n + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[n]:end]

    def block_range(self, m: list[int] | None) -> tuple[int, int]:
        if not m:
            return (0, len(self.text))
        a = self.starts[min(m[0], len(self.starts) - 1)]
        b = self.starts[m[1]] if m[1] < len(self.starts) else len(self.text)
        return (a, b)

    def locate(self, content: str, m: list[int] | None) -> Callable[[int], int | None] | None:
        """A map from offsets in a block's inline `content` to offsets in the answer, or None."""
        if not m:
            return None
        pieces = content.split("\n")
        bases: list[int] = []
        for j, piece in enumerate(pieces):
            n = m[0] + j
            line = self.line(n)
            lo = self.cursor.get(n, 0)
            at = -1
            if line.endswith(piece) and len(line) - len(piece) >= lo:
                at = len(line) - len(piece)
            elif line.rstrip().endswith(piece) and len(line.rstrip()) - len(piece) >= lo:
                at = len(line.rstrip()) - len(piece)
            if at < 0:
                at = line.find(piece, lo)
            if at < 0 or n >= len(self.starts):
                return None
            self.cursor[n] = at + len(piece)
            bases.append(self.starts[n] + at)
        offsets = [0]
        for piece in pieces[:-1]:
            offsets.append(offsets[-1] + len(piece) + 1)

        def to_source(i: int) -> int | None:
            j = max(0, bisect.bisect_right(offsets, i) - 1)
            col = i - offsets[j]
            if col > len(pieces[j]):
                return None
            return bases[j] + col

        return to_source


# -- what a reader sees of an inline block ----------------------------------------------------


@dataclass
class _Seen:
    """Visible characters with the [start, end) of inline source that produced each."""

    chars: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    code: list[bool] = field(default_factory=list)

    def add(self, text: str, start: int, end: int, code: bool = False) -> None:
        for ch in text:
            for out in normalise_char(ch):
                self.chars.append(out)
                self.spans.append((start, end))
                self.code.append(code)

    def literal(self, src: str, start: int, end: int, code: bool = False) -> None:
        for i in range(start, end):
            self.add(src[i], i, i + 1, code)


@dataclass
class _Recs:
    """A block's records sorted by start (outermost first), with their starts for bisection."""

    recs: list[_Rec]
    starts: list[int]
    label_ends: dict[int, int | None] = field(default_factory=dict)

    @classmethod
    def of(cls, recs: list[_Rec]) -> _Recs:
        ordered = sorted(recs, key=lambda r: (r[1], -r[2]))
        return cls(ordered, [r[1] for r in ordered])

    def label_end(self, src: str, at: int, md: MarkdownIt, env: dict[str, Any]) -> int | None:
        if at not in self.label_ends:
            self.label_ends[at] = _label_end(src, at, md, env)
        return self.label_ends[at]


def _render(src: str, recs: _Recs, start: int, end: int, seen: _Seen, md: MarkdownIt, env: dict[str, Any]) -> None:
    """Append what a reader sees of src[start:end] (records inside that range) to `seen`."""
    pos = start
    i = bisect.bisect_left(recs.starts, start)
    while i < len(recs.recs) and recs.recs[i][1] < end:
        name, a, b, toks = recs.recs[i]
        if a < pos or b > end:
            i += 1
            continue
        seen.literal(src, pos, a)
        if name in ("escape", "entity"):
            for t in toks:
                if t.type == "text_special":
                    seen.add(t.content, a, b)
                elif t.type == "hardbreak":
                    seen.add("\n", a, b)
        elif name == "newline":
            seen.add("\n", a, b)
        elif name == "backticks":
            run = len(toks[0].markup) if toks else 0
            inner_a, inner_b = a + run, b - run
            inner = src[inner_a:inner_b]
            if len(inner) > 2 and inner[0] in " \n" and inner[-1] in " \n" and inner.strip():
                inner_a, inner_b = inner_a + 1, inner_b - 1
            for k in range(inner_a, inner_b):
                seen.add(" " if src[k] == "\n" else src[k], k, k + 1, code=True)
        elif name in ("emphasis", "strikethrough"):
            for t in toks:
                if t.type == "text" and t.content:
                    seen.add(t.content, a, b)
        elif name == "html_inline":
            tag = re.match(r"</?([A-Za-z][A-Za-z0-9-]*)", src[a:b])
            if tag and tag.group(1).lower() not in _INLINE_TAGS:
                seen.add("\n", a, b)
        elif name == "link":
            label_end = recs.label_end(src, a, md, env)
            if label_end is not None:
                _render(src, recs, a + 1, label_end, seen, md, env)
        # image, autolink: reported as links; nothing to read as text
        pos = b
        i += 1
        while i < len(recs.recs) and recs.recs[i][1] < b:
            i += 1
    seen.literal(src, pos, end)


def _label_end(src: str, start: int, md: MarkdownIt, env: dict[str, Any]) -> int | None:
    from markdown_it.helpers import parseLinkLabel

    state = StateInline(src, md, env, [])
    end = parseLinkLabel(state, start, True)
    return end if end >= 0 else None


# -- raw HTML ---------------------------------------------------------------------------------


class _Tags(HTMLParser):
    """Start tags (with their exact source) and text of a piece of raw HTML."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.tags: list[tuple[str, list[tuple[str, str | None]], int, int]] = []  # tag, attrs, start, end
        self.text: list[tuple[str, int, int]] = []  # visible text, its start and end
        self.styles: list[tuple[str, int, int]] = []  # <style> sheets (they load url()s too)
        self._in_style = False
        self._lines: list[int] = [0]
        self._skip = 0

    def run(self, source: str) -> None:
        self._lines = [0] + [m.end() for m in re.finditer("\n", source)]
        self.feed(source)
        self.close()

    def _at(self) -> int:
        line, col = self.getpos()
        return self._lines[line - 1] + col

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raw = self.get_starttag_text() or ""
        at = self._at()
        self.tags.append((tag, attrs, at, at + len(raw)))
        if tag in ("script", "style", "template", "title", "textarea"):
            self._skip += tag != "textarea"
        self._in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raw = self.get_starttag_text() or ""
        at = self._at()
        self.tags.append((tag, attrs, at, at + len(raw)))

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False
        if tag in ("script", "style", "template", "title") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._in_style:
            at = self._at()
            self.styles.append((data, at, at + len(data)))
        if not self._skip:
            at = self._at()
            self.text.append((data, at, at + len(data)))

    def handle_entityref(self, name: str) -> None:
        if not self._skip:
            at = self._at()
            self.text.append((html.unescape(f"&{name};"), at, at + len(name) + 2))

    def handle_charref(self, name: str) -> None:
        if not self._skip:
            at = self._at()
            self.text.append((html.unescape(f"&#{name};"), at, at + len(name) + 3))


def _attr_urls(tag: str, attrs: list[tuple[str, str | None]]) -> list[tuple[str, str]]:
    """(attribute, URL) pairs a browser would load or follow from one start tag (html_loads.py
    decides; a repeated attribute keeps its first value, as in a browser)."""
    first: dict[str, str | None] = {}
    for k, v in attrs:
        first.setdefault(k.lower(), v)
    out = [(ld.attr, ld.url) for ld in element_loads(tag, first)]
    doc = first.get("srcdoc")
    if doc:
        out.extend(("srcdoc", ld.url) for ld in loads(doc))
    return out


# -- the answer -------------------------------------------------------------------------------


def occurrences(text: str) -> list[Occurrence]:
    """Every link-like thing in `text`, in source order."""
    md = parser()
    env: dict[str, Any] = {}
    tokens = md.parse(text, env)
    lines = _Lines(text)
    spans: dict[int, list[_Rec]] = env.get("_docket_spans", {})
    out: list[Occurrence] = []
    used_refs: set[str] = set()
    refs = env.get("references", {})
    raw_refs: dict[str, list[str]] = {}
    for start, stop, labels in env.get("_docket_refs", []):
        a, b = lines.block_range([start, stop])
        for label in labels:
            raw_refs[label] = _raw_ref(text[a:b])
    env["_docket_raw_refs"] = raw_refs
    for tok in tokens:
        block = lines.block_range(tok.map)
        if tok.type == "inline":
            to_src = lines.locate(tok.content, tok.map)
            recs = spans.get(id(tok.children), [])
            out.extend(_inline(tok, recs, to_src, block, md, env, used_refs))
        elif tok.type == "html_block":
            to_src = lines.locate(tok.content.rstrip("\n"), tok.map)
            out.extend(_html(tok.content, to_src, block))
        elif tok.type in ("fence", "code_block"):
            to_src = lines.locate(tok.content.rstrip("\n"), [tok.map[0] + (tok.type == "fence"), tok.map[1]]) if tok.map else None
            seen = _Seen()
            seen.literal(tok.content, 0, len(tok.content), code=True)
            out.extend(_text_links(seen, to_src, block))
    for start, stop, labels in env.get("_docket_refs", []):
        block = lines.block_range([start, stop])
        raw = text[block[0]:block[1]]
        for label in labels:
            ref = refs.get(label)
            if ref is None or label in used_refs:
                continue
            out.append(Occurrence("reference", [ref["href"]] + _raw_ref(raw), block, block, text=label))
    if too_deep(env):  # nested past any limit a parse may take: every URL-like text counts, wherever it sits
        seen = _Seen()
        seen.literal(text, 0, len(text))
        out.extend(_text_links(seen, lambda i: i, (0, len(text))))
    for dup in env.get("duplicate_refs", []):
        block = lines.block_range(dup.get("map"))
        out.append(Occurrence("reference", [dup["href"]] + _raw_ref(text[block[0]:block[1]]), block, block,
                              text=dup.get("label", "")))
    for occ in out:  # text as written is a reading too: `\@` is an escaped @ to CommonMark, a path to a browser
        if occ.kind in ("url", "email", "domain") and occ.span is not None:
            raw = text[occ.span[0]:occ.span[1]]
            if occ.kind == "email" and not raw.lower().startswith("mailto:"):
                raw = "mailto:" + raw
            occ.urls.extend(u for u in _readings(raw) if u not in occ.urls)
    out.sort(key=lambda o: (o.span or o.block)[0])
    return out


def _raw_ref(raw: str) -> list[str]:
    m = re.search(r"\]:\s*(?:<([^>\n]*)>|(\S+))", raw)
    if not m:
        return []
    dest = m.group(1) if m.group(1) is not None else m.group(2)
    return _readings(dest)


def _readings(dest: str) -> list[str]:
    """The raw destination as written and with entities decoded (a browser's reading)."""
    outs = [dest, html.unescape(dest)]
    return list(dict.fromkeys(outs))


def _map_span(to_src: Callable[[int], int | None] | None, a: int, b: int) -> tuple[int, int] | None:
    if to_src is None:
        return None
    s, e = to_src(a), to_src(b) if b > a else to_src(a)
    if s is None or e is None or e < s:
        return None
    return (s, e)


def _inline(tok: Token, recs: list[_Rec], to_src: Callable[[int], int | None] | None, block: tuple[int, int],
            md: MarkdownIt, env: dict[str, Any], used_refs: set[str]) -> list[Occurrence]:
    src = tok.content
    out: list[Occurrence] = []
    index = _Recs.of(recs)
    for name, a, b, toks in recs:
        if name == "link":
            opener = next((t for t in toks if t.type == "link_open"), None)
            if opener is None:
                continue
            href = str(opener.attrGet("href") or "")
            label_end = index.label_end(src, a, md, env)
            raw = _raw_destination(src, label_end, b)
            label_span = _map_span(to_src, a + 1, label_end) if label_end is not None else None
            seen = _Seen()
            if label_end is not None:
                _render(src, index, a + 1, label_end, seen, md, env)
            ref = _ref_label(src, label_end, b, a)
            if ref:
                used_refs.add(ref)
                raw = env.get("_docket_raw_refs", {}).get(ref, [])
            out.append(Occurrence("markdown", [href] + raw, _map_span(to_src, a, b), block,
                                  text="".join(seen.chars).strip(), label_span=label_span))
        elif name == "image":
            img = next((t for t in toks if t.type == "image"), None)
            if img is None:
                continue
            label_end = index.label_end(src, a + 1, md, env)
            ref = _ref_label(src, label_end, b, a + 1)
            raw = _raw_destination(src, label_end, b)
            if ref:
                used_refs.add(ref)
                raw = env.get("_docket_raw_refs", {}).get(ref, [])
            out.append(Occurrence("image", [str(img.attrGet("src") or "")] + raw,
                                  _map_span(to_src, a, b), block, text=img.content))
        elif name == "autolink":
            opener = next((t for t in toks if t.type == "link_open"), None)
            if opener is not None:
                out.append(Occurrence("autolink", [str(opener.attrGet("href") or "")] + _readings(src[a + 1:b - 1]),
                                      _map_span(to_src, a, b), block, text=src[a + 1:b - 1]))
        elif name == "html_inline":
            for occ in _html(src[a:b], None, block):
                if occ.span is not None:
                    occ.span = _map_span(to_src, a + occ.span[0], a + occ.span[1])
                out.append(occ)
    seen = _Seen()
    _render(src, index, 0, len(src), seen, md, env)
    out.extend(_text_links(seen, to_src, block))
    return out


def _ref_label(src: str, label_end: int | None, end: int, start: int) -> str | None:
    """The reference label a `[text][ref]`, `[text][]` or `[text]` link used (None for inline links)."""
    from markdown_it.common.utils import normalizeReference

    if label_end is None:
        return None
    rest = src[label_end + 1:end]
    if rest.startswith("("):
        return None
    if rest.startswith("[") and rest.endswith("]") and len(rest) > 2:
        return normalizeReference(rest[1:-1])
    return normalizeReference(src[start + 1:label_end])


def _raw_destination(src: str, label_end: int | None, end: int) -> list[str]:
    if label_end is None:
        return []
    rest = src[label_end + 1:end]
    if not rest.startswith("("):
        return []
    inner = rest[1:-1].strip()
    m = re.match(r"<([^>\n]*)>|(\S+)", inner)
    if not m:
        return []
    return _readings(m.group(1) if m.group(1) is not None else m.group(2))


def _html(source: str, to_src: Callable[[int], int | None] | None, block: tuple[int, int]) -> list[Occurrence]:
    p = _Tags()
    try:
        p.run(source)
    except Exception:  # noqa: BLE001 - html.parser gives up on some broken markup; judge what it read
        pass
    out: list[Occurrence] = []
    for tag, attrs, a, b in p.tags:
        pairs = _attr_urls(tag, attrs)
        if not pairs:
            continue
        span = (a, b) if to_src is None else _map_span(to_src, a, b)
        kind = "image" if tag in ("img", "image", "picture", "source", "video", "input") else "html"
        out.append(Occurrence(kind, [u for _, u in pairs], span, block, tag=tag, attrs=attrs,
                              bad_attrs=[n for n, _ in pairs]))
    for sheet, a, b in p.styles:
        urls = css_urls(sheet, sheet=True)
        if urls:
            span = (a, b) if to_src is None else _map_span(to_src, a, b)
            out.append(Occurrence("html", urls, span, block, tag="style", bad_attrs=["(sheet)"]))
    if to_src is not None:  # text of an HTML block (inline HTML's text is part of its paragraph)
        seen = _Seen()
        for data, a, b in p.text:
            if b - a == len(data):
                seen.literal(source, a, b)
            else:
                seen.add(data, a, b)
        out.extend(_text_links(seen, to_src, block))
    return out


def _text_links(seen: _Seen, to_src: Callable[[int], int | None] | None, block: tuple[int, int]) -> list[Occurrence]:
    text = "".join(seen.chars)
    out: list[Occurrence] = []
    for f in _bare(text, seen):
        a, b = seen.spans[f.start][0], seen.spans[f.end - 1][1]
        out.append(Occurrence(f.kind, [f.url], _map_span(to_src, a, b), block, text=f.url))
    return out


def _bare(text: str, seen: _Seen) -> list[Found]:
    found = list(bare_links(text))
    in_code = [f for f in bare_links(text, in_code=True)]
    code_keys = {(f.start, f.end) for f in in_code}
    out = []
    for f in found:
        all_code = all(seen.code[i] for i in range(f.start, f.end))
        if all_code and (f.start, f.end) not in code_keys:
            continue  # a file name such as `main.py` inside code
        out.append(f)
    return out
