"""Everything a browser would load or follow from a piece of HTML, found in the tree a browser builds.

The HTML is parsed by lexbor (html5.py), twice: with scripting off and on, because the two parse
`<noscript>` differently and a renderer may run either way. Every element of both trees is read:

* attributes that hold a URL (`href`, `src`, `*:href`, `srcset`, `poster`, `action`, `data`, ...),
  event handlers (`on*`: code), `<script>` (code runs wherever the HTML is rendered);
* `<iframe srcdoc>`: its HTML is read the same way (to SRCDOC_DEPTH levels; deeper fails closed);
* SVG animation (`<set>`, `<animate*>`): `to`, `from`, `by` and each of `values` can set an href;
* `<meta http-equiv=refresh content="0;https://...">` read by the HTML standard's algorithm, with
  or without `url=`; `<param value>`;
* CSS wherever a browser reads it: `<style>` sheets (url(), image-set(), @import, @font-face src)
  and every other attribute whose value a browser may read as CSS (`style`, SVG `fill`, `mask`,
  `filter`, `clip-path`, `marker-*`, `cursor`...): any url() in any attribute counts.

What cannot be read (nesting past html5.MAX_DEPTH or SRCDOC_DEPTH) is reported as a load of
UNREADABLE, which no allow-list admits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tinycss2
from tinycss2 import ast

from docket.errors import InputError
from docket.ingest.html5 import lexbor

#: a destination no allow-list admits: stands for HTML docket could not read to the end
UNREADABLE = "about:docket-unreadable-html"
#: `<iframe srcdoc>` inside `<iframe srcdoc>` is read this many levels deep
SRCDOC_DEPTH = 4

#: attributes holding one URL a browser loads or follows (any name ending in href or src counts too)
URL_ATTRS = frozenset({"href", "src", "poster", "action", "formaction", "data", "background", "ping", "cite",
                       "longdesc", "lowsrc", "dynsrc", "manifest", "codebase", "archive", "code", "icon", "profile",
                       "usemap", "itemtype", "classid", "imagesrcset", "srcset", "attributionsrc"})
_ANIMATIONS = frozenset({"set", "animate", "animatemotion", "animatetransform", "animatecolor", "discard"})
_ANIMATION_VALUES = ("to", "from", "by", "values")


@dataclass(frozen=True)
class Load:
    """One URL a browser would request or follow: the element and attribute it came from."""

    tag: str
    attr: str
    url: str


def loads(html: str) -> list[Load]:
    """Every load in `html`, in document order, both scripting modes, duplicates dropped."""
    out: list[Load] = []
    work: list[tuple[str, int]] = [(html, 0)]
    while work:
        source, depth = work.pop()
        if depth > SRCDOC_DEPTH:
            out.append(Load("iframe", "srcdoc", UNREADABLE))
            continue
        for scripting in (False, True):
            try:
                tree = lexbor(source, scripting=scripting)
            except InputError:
                out.append(Load("(document)", "nesting", UNREADABLE))
                break
            root = tree.root
            if root is None:
                continue
            for node in root.traverse():
                tag = (node.tag or "").lower()
                if not tag or tag.startswith("-"):
                    continue
                attrs: dict[str, Any] = dict(node.attributes)
                if tag == "style":
                    out.extend(Load(tag, "(sheet)", u) for u in css_urls(node.text(deep=True), sheet=True))
                for name, raw in attrs.items():
                    if name.lower() == "srcdoc" and raw is not None:
                        work.append((str(raw), depth + 1))
                out.extend(element_loads(tag, attrs))
    return list(dict.fromkeys(out))


def element_loads(tag: str, attrs: dict[str, Any]) -> list[Load]:
    """The loads of one element from its name and (decoded) attributes."""
    tag = tag.lower()
    out: list[Load] = []
    if tag == "script":
        out.append(Load(tag, "", "javascript:"))
    low = {str(k).lower(): ("" if v is None else str(v)) for k, v in attrs.items()}
    refresh = tag == "meta" and low.get("http-equiv", "").strip().lower() == "refresh"
    for name, value in low.items():
        if name.startswith("on"):
            out.append(Load(tag, name, "javascript:" + value))
        elif name in ("srcset", "imagesrcset"):
            out.extend(Load(tag, name, words.split()[0]) for words in value.split(",") if words.split())
        elif name == "ping":
            out.extend(Load(tag, name, v) for v in value.split())
        elif name in URL_ATTRS or name.endswith("href") or name.endswith("src"):
            out.append(Load(tag, name, value))
        elif name == "content" and refresh:
            url = refresh_url(value)
            if url is not None:
                out.append(Load(tag, name, url))
        elif name == "value" and tag == "param":
            out.append(Load(tag, name, value))
        elif tag in _ANIMATIONS and name in _ANIMATION_VALUES:
            parts = value.split(";") if name == "values" else [value]
            out.extend(Load(tag, name, p.strip()) for p in parts if p.strip() and "(" not in p)
        if name != "srcdoc" and ("(" in value or "\\" in value):
            out.extend(Load(tag, name, u) for u in css_urls(value, value_only=True))
    return out


def refresh_url(content: str) -> str | None:
    """The URL of a `<meta http-equiv=refresh>` content, by the HTML standard's parsing: a time,
    then `;` or `,`, then the URL with or without `url=` and quotes. None when it names none."""
    s = content.lstrip(" \t\n\f\r")
    m = re.match(r"[0-9.]*", s)
    s = s[m.end() if m else 0:].lstrip(" \t\n\f\r")
    if s[:1] in (";", ","):
        s = s[1:].lstrip(" \t\n\f\r")
    if not s:
        return None
    m = re.match(r"url[ \t\n\f\r]*=[ \t\n\f\r]*", s, re.I)
    if m:
        s = s[m.end():]
    if s[:1] in ("'", '"'):
        q = s[0]
        s = s[1:].split(q, 1)[0]
    return s.strip() or None


def css_urls(css: str, sheet: bool = False, value_only: bool = False) -> list[str]:
    """The url(), src(), image-set() / image() / cross-fade() strings and @import targets of a
    `style` attribute, a whole `sheet`, or one property value (`value_only`), read by the CSS
    tokenizer (escapes decoded, comments skipped); walked with a stack, not recursion."""
    urls: list[str] = []
    if sheet:
        roots: list[Any] = []
        for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
            if isinstance(rule, ast.AtRule) and rule.lower_at_keyword == "import":
                urls.extend(t.value for t in rule.prelude if isinstance(t, ast.StringToken))
            roots.extend(getattr(rule, "prelude", None) or [])
            roots.extend(getattr(rule, "content", None) or [])
    elif value_only:
        roots = list(tinycss2.parse_component_value_list(css, skip_comments=True))
    else:
        roots = []
        for d in tinycss2.parse_declaration_list(css, skip_comments=True, skip_whitespace=True):
            if isinstance(d, ast.Declaration):
                roots.extend(d.value)
        if not roots:  # not declarations: read it as a value (an SVG `fill="url(...)"`)
            roots = list(tinycss2.parse_component_value_list(css, skip_comments=True))
    stack: list[tuple[Any, bool]] = [(t, False) for t in reversed(roots)]
    while stack:
        t, strings_load = stack.pop()
        if isinstance(t, ast.URLToken):
            urls.append(t.value)
        elif isinstance(t, ast.StringToken) and strings_load:
            urls.append(t.value)
        elif isinstance(t, ast.FunctionBlock):
            name = t.lower_name
            loads_strings = name in ("url", "src", "image", "cross-fade") or name.endswith("image-set")
            stack.extend((a, loads_strings) for a in reversed(t.arguments))
        elif isinstance(getattr(t, "content", None), list):
            stack.extend((a, False) for a in reversed(t.content))
    return urls
