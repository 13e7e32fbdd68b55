"""Links in an answer: find them as a renderer would, allow-list them by domain, strip the others.

A planted document can tell the model to add a link ("send your card number to
nimbus-refund-desk.example") or an image whose URL carries conversation data out the moment a
client renders it (images are zero-click). Fencing lowers how often that works; an output check
bounds the damage.

`find_links` reads the answer as a Markdown renderer with HTML on reads it (answer_links.py:
markdown-it-py, entities and escapes decoded, raw `<a href>`/`<img src>` and every other URL
attribute), and `flagged_links` also reads the rendered answer and the raw answer as a browser
builds them (html_loads.py: the HTML5 tree, every attribute and CSS value that loads), and judges each destination as a browser parses it (urls.py: WHATWG URL rules via
ada-url, registrable domains by the public suffix list). A link is allowed when every reading of
its destination leads to an allowed host or a subdomain of one, or stays on the answer's own page
(`#fees`, a relative path). `strip_links` cuts out what a renderer would render for each
disallowed link and checks its own output again until nothing disallowed is left.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from docket.checks.answer_links import MEDIA_TAGS, Occurrence, occurrences, parser
from docket.checks.html_loads import Load, loads
from docket.checks.urls import HOST_SCHEMES, Destination, destination, host_allowed, normalize_allowed, registrable

REMOVED = "[link removed]"
_KIND = {"autolink": "url"}


@dataclass
class Link:
    url: str
    domain: str  # the host it leads to ("" for a link that stays on the page, "javascript:" for a scheme)
    kind: str  # image | markdown | reference | html | url | email | domain
    start: int
    end: int
    text: str = ""  # the visible text of a Markdown/HTML link
    registrable: str = ""  # the host's registrable domain (public suffix list)
    occurrence: Occurrence | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "domain": self.domain, "kind": self.kind, "text": self.text,
                "registrable_domain": self.registrable}


def host_of(url: str) -> str:
    """The host a URL (or a bare host name) leads to, as a browser parses it."""
    u = url.strip()
    if "://" not in u and not u.startswith("//") and ":" not in u.split("/")[0]:
        u = "//" + u
    return destination(u).domain


def _readings(occ: Occurrence) -> list[Destination]:
    out = []
    for url in occ.urls:
        if occ.kind == "domain" and "://" not in url:
            url = "//" + url
        out.append(destination(url))
    return out


def _is_allowed(d: Destination, domains: list[str]) -> bool:
    if d.relative:
        return True
    if d.scheme in HOST_SCHEMES or d.scheme == "mailto:":
        return bool(d.host) and host_allowed(d.host, domains)
    return False


def _link(occ: Occurrence, d: Destination) -> Link:
    start, end = occ.span if occ.span is not None else occ.block
    return Link(url=d.url if occ.kind != "domain" else occ.urls[0], domain=d.domain, kind=_KIND.get(occ.kind, occ.kind),
                start=start, end=end, text=occ.text if occ.kind in ("markdown", "html", "image") else "",
                registrable=registrable(d.host) if d.host and not d.relative else "", occurrence=occ)


def find_links(text: str) -> list[Link]:
    """Every link-like thing in `text`, in order: its first reading decides `domain`."""
    out = []
    for occ in occurrences(text):
        readings = [d for d in _readings(occ) if d.parsed] or _readings(occ)
        out.append(_link(occ, readings[0]))
    return out


def normalize_domains(domains: Iterable[str]) -> list[str]:
    """The allow-list as ASCII hosts; a public suffix (`com`, `github.io`) is refused (InputError)."""
    return normalize_allowed(domains)


def allowed(link: Link, domains: Iterable[str]) -> bool:
    """Is every reading of the link's destination an allowed host (or on the answer's own page)?"""
    doms = normalize_allowed(domains)
    if link.occurrence is None:
        return _is_allowed(destination(link.url), doms)
    readings = [d for d in _readings(link.occurrence) if d.parsed]
    return bool(readings) and all(_is_allowed(d, doms) for d in readings)


def _flagged(text: str, doms: list[str]) -> list[Link]:
    out = []
    seen: set[str] = set()
    for occ in occurrences(text):
        readings = _readings(occ)
        seen.update(d.url for d in readings)
        parsed = [d for d in readings if d.parsed]
        bad = next((d for d in parsed if not _is_allowed(d, doms)), None)
        if bad is None and not parsed:
            bad = readings[0]
        if bad is not None:
            out.append(_link(occ, bad))
    out.extend(_browser_loads(text, doms, seen))
    return out


def _rendered_loads(text: str) -> list[Load]:
    """What a browser loads from the answer rendered by a Markdown renderer (HTML on) and from the
    answer itself read as HTML: both trees built by the HTML5 rules."""
    return loads(parser().render(text)) + loads(text)


def _browser_loads(text: str, doms: list[str], seen: set[str]) -> list[Link]:
    """Disallowed loads the HTML5 trees hold that the source reading did not place (markup that
    Python's html.parser or markdown-it read differently from a browser): each is placed at the
    smallest Markdown block that loads it alone, else the whole answer."""
    extra: list[Destination] = []
    for ld in _rendered_loads(text):
        d = destination(ld.url)
        if d.url in seen or _is_allowed(d, doms):
            continue
        seen.add(d.url)
        extra.append(d)
    if not extra:
        return []
    blocks = _blocks(text)
    out = []
    for d in extra:
        where = next(((a, b) for a, b in blocks if any(destination(x.url).url == d.url
                                                       for x in _rendered_loads(text[a:b]))), (0, len(text)))
        occ = Occurrence("html", [d.url], None, where, tag="(html5)")
        out.append(_link(occ, d))
    return out


def _blocks(text: str) -> list[tuple[int, int]]:
    """The [start, end) of each top-level Markdown block of `text`."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    out = []
    for tok in parser().parse(text):
        if tok.level == 0 and tok.map and tok.nesting >= 0:
            a = starts[min(tok.map[0], len(starts) - 1)]
            b = starts[tok.map[1]] if tok.map[1] < len(starts) else len(text)
            out.append((a, b))
    return out


def flagged_links(text: str, domains: Iterable[str] = ()) -> list[Link]:
    """The links whose destination (in any reading) is not on the allow-list."""
    return _flagged(text, normalize_allowed(domains))


def _replacement(text: str, lk: Link) -> str:
    occ = lk.occurrence
    assert occ is not None
    if occ.kind == "image" or (occ.kind == "html" and occ.tag in MEDIA_TAGS) or occ.kind == "reference":
        return ""
    if occ.kind == "markdown":
        label = text[occ.label_span[0]:occ.label_span[1]] if occ.label_span else ""
        return label if label.strip() else REMOVED
    if occ.kind == "html" and occ.tag == "style":
        return ""  # the sheet's text (the span is its content)
    if occ.kind == "html":
        return _tag_without(occ)
    return REMOVED


def _tag_without(occ: Occurrence) -> str:
    """The start tag rebuilt without its disallowed URL attributes (its text stays)."""
    import html as _html

    keep = [(k, v) for k, v in occ.attrs if k not in occ.bad_attrs and not k.startswith("on")]
    attrs = "".join(f" {k}" if v is None else f' {k}="{_html.escape(v, quote=True)}"' for k, v in keep)
    return f"<{occ.tag}{attrs}>"


def strip_links(text: str, domains: Iterable[str] = ()) -> str:
    """`text` with every disallowed link removed: images and media tags vanish, Markdown links
    keep their visible text, HTML links lose the URL attribute, reference definitions go, and bare
    URLs, domains and e-mails become "[link removed]". Runs again on its own output until no
    disallowed link is left; what it cannot place exactly, it removes with its whole block."""
    doms = normalize_allowed(domains)
    for _ in range(12):
        bad = _flagged(text, doms)
        if not bad:
            return text
        edits: list[tuple[int, int, str]] = []
        placed = [lk for lk in bad if lk.occurrence is not None and lk.occurrence.span is not None]
        blind = [lk for lk in bad if lk.occurrence is None or lk.occurrence.span is None]
        if not placed:
            for lk in blind:
                assert lk.occurrence is not None
                a, b = lk.occurrence.block
                edits.append((a, b, REMOVED + ("\n" if text[a:b].endswith("\n") else "")))
        for lk in sorted(placed, key=lambda x: (x.start, -x.end)):
            edits.append((lk.start, lk.end, _replacement(text, lk)))
        text = _apply(text, edits)
    bad = _flagged(text, doms)
    if bad:  # edits that do not converge: take out the blocks that still hold a disallowed link
        text = _apply(text, [(*lk.occurrence.block, REMOVED + "\n") for lk in bad if lk.occurrence is not None])
    return text if not _flagged(text, doms) else UNSAFE


#: what strip_links returns when no edit of the answer leaves it free of disallowed links
UNSAFE = "[answer removed: it kept links to domains that are not on the allow-list]"


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply non-overlapping edits (the outermost of overlapping ones first; the rest wait for the
    next round), tidying the space an edit leaves."""
    chosen: list[tuple[int, int, str]] = []
    for a, b, repl in sorted(edits, key=lambda e: (e[0], -e[1])):
        if chosen and a < chosen[-1][1]:
            continue
        chosen.append((a, b, repl))
    parts: list[str] = []
    pos = 0
    for a, b, repl in chosen:
        if not repl and a > pos and b < len(text) and text[a - 1] == " " and text[b] in " .,;:!?":
            a -= 1
        parts += [text[pos:a], repl]
        pos = b
    parts.append(text[pos:])
    return "".join(parts)
