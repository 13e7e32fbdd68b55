"""The page's own CSS: parse it (tinycss2), match it (soupsieve), cascade it per element.

Only what decides whether text is visible is kept: declarations of the properties in
`RELEVANT` (and custom properties, which those may read through `var()`). The cascade follows
CSS: origin (a small user-agent sheet, presentational attributes, the page), `!important`,
`@layer` order, inline `style`, specificity, then source order. `@media` blocks apply when they
match one desktop screen (`SCREEN`); `@supports`, `@container` and `@scope` blocks apply.
External stylesheets (`<link rel=stylesheet>`, `@import`) are not fetched: ingestion is offline.
Selectors that need a user's action (`:hover`, `:focus`) or that soupsieve cannot read never
match, and pseudo-elements are skipped (their content is not in the document).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import soupsieve
import tinycss2
from bs4 import BeautifulSoup, Tag
from tinycss2 import ast

from docket.ingest import cssvalues as cv

Tokens = list[Any]

#: the viewport media queries are evaluated against: a desktop browser window, light scheme
SCREEN = {"width": 1280.0, "height": 800.0, "resolution": 1.0, "color": 8.0, "monochrome": 0.0}
_SCREEN_KEYWORDS = {"orientation": "landscape", "hover": "hover", "any-hover": "hover", "pointer": "fine",
                    "any-pointer": "fine", "prefers-color-scheme": "light", "prefers-reduced-motion": "no-preference",
                    "prefers-contrast": "no-preference", "scripting": "enabled", "display-mode": "browser",
                    "update": "fast", "forced-colors": "none", "inverted-colors": "none", "scan": "progressive",
                    "grid": "0", "overflow-block": "scroll", "overflow-inline": "scroll", "color-gamut": "srgb",
                    "dynamic-range": "standard", "prefers-reduced-transparency": "no-preference"}

#: longhands the visibility decision reads, with the shorthands that also set them
SHORTHANDS: dict[str, tuple[str, ...]] = {
    "font-size": ("font",), "line-height": ("font",),
    "background-color": ("background",), "background-image": ("background",),
    "overflow-x": ("overflow",), "overflow-y": ("overflow",),
    "margin-top": ("margin",), "margin-left": ("margin",), "margin-right": ("margin",),
    "top": ("inset",), "left": ("inset",), "right": ("inset",), "bottom": ("inset",),
}
RELEVANT = frozenset(
    "display visibility opacity color -webkit-text-fill-color background-clip -webkit-background-clip "
    "font-size line-height background-color background-image position top left right bottom inset "
    "margin-top margin-left margin-right text-indent width height max-width max-height min-width min-height "
    "overflow overflow-x overflow-y clip clip-path -webkit-clip-path transform scale translate rotate zoom filter "
    "content-visibility font background margin float text-shadow -webkit-text-stroke "
    # read to fail closed: they can hide text in ways docket does not compute
    "mask mask-image -webkit-mask -webkit-mask-image -webkit-mask-box-image mix-blend-mode -webkit-text-security "
    "animation animation-name letter-spacing offset-path offset color-scheme "
    # read for text an opaque positioned box covers (what is painted in a layer of its own, and how)
    "z-index isolation will-change contain perspective backdrop-filter border-radius content".split()
)
#: other names a browser reads as one of the properties above (prefixed aliases, logical
#: properties in a left-to-right, horizontal page); a pair sets both sides
ALIASES: dict[str, tuple[str, ...]] = {
    "-webkit-transform": ("transform",), "-webkit-filter": ("filter",), "-webkit-opacity": ("opacity",),
    "-webkit-animation": ("animation",), "-webkit-animation-name": ("animation-name",),
    "inset-inline-start": ("left",), "inset-inline-end": ("right",), "inset-block-start": ("top",),
    "inset-block-end": ("bottom",), "inset-inline": ("left", "right"), "inset-block": ("top", "bottom"),
    "margin-inline-start": ("margin-left",), "margin-inline-end": ("margin-right",),
    "margin-block-start": ("margin-top",), "margin-inline": ("margin-left", "margin-right"),
    "margin-block": ("margin-top",), "inline-size": ("width",), "block-size": ("height",),
    "max-inline-size": ("max-width",), "max-block-size": ("max-height",), "-webkit-text-fill": ("color",),
}

#: what a browser's own stylesheet hides or colours (a page's rules override it, as in a browser)
UA_CSS = """
[hidden]:not([hidden="until-found" i]) { display: none }
[hidden="until-found" i] { content-visibility: hidden }
[popover] { display: none }
area, base, basefont, datalist, head, link, meta, noembed, noframes, param, rp, script, style, template, title,
  dialog:not([open]), input[type="hidden" i] { display: none }
a:any-link { color: #0000ee }
mark { background-color: yellow; color: black }
"""


@dataclass(frozen=True)
class Decl:
    """One declaration as it takes part in the cascade; `key` orders them (the greatest wins)."""

    name: str
    value: Tokens
    key: tuple[int, int, int, int, tuple[int, int, int], int]


@dataclass
class _Rule:
    selector: Any  # a compiled soupsieve selector
    index: tuple[str, str] | None  # the rightmost compound's id, class or type (None: any element)
    needs: frozenset[tuple[str, str]]  # ids and classes the selector requires somewhere in the page
    specificity: tuple[int, int, int]
    origin: int  # 0 user agent, 1 presentational attribute, 2 the page
    layer: int  # unlayered rules rank above every layer
    order: int
    decls: list[tuple[str, Tokens, bool]]


UNLAYERED = 1 << 20
#: rule blocks (nested rules, @media, @layer, ...) nested deeper than this are not read
MAX_NESTING = 32


@dataclass
class Styles:
    """Declared values per element (by `id(tag)`): property -> the winning Decl."""

    declared: dict[int, dict[str, Decl]] = field(default_factory=dict)
    rules: int = 0
    skipped_selectors: int = 0
    #: rule blocks nested past MAX_NESTING: the cascade is unknown, so the page fails closed
    too_deep: int = 0
    #: @property initial values, and the @keyframes that animate what can hide text
    initial: dict[str, Tokens] = field(default_factory=dict)
    keyframes: frozenset[str] = frozenset()
    #: `<meta name=color-scheme content=...>`, lower case ("" when the page has none)
    meta_scheme: str = ""

    def of(self, tag: Tag) -> dict[str, Decl]:
        return self.declared.get(id(tag), {})


def value_tokens(text: str) -> Tokens:
    return [t for t in tinycss2.parse_component_value_list(text, skip_comments=True)]


def parse_inline(style: str) -> list[tuple[str, Tokens, bool]]:
    """A `style="..."` attribute as (name, value, important) triples."""
    out = []
    for d in tinycss2.parse_declaration_list(style, skip_comments=True, skip_whitespace=True):
        if isinstance(d, ast.Declaration):
            name = d.name if d.name.startswith("--") else d.lower_name
            out.append((name, list(d.value), bool(d.important)))
    return out


def _keep(name: str) -> bool:
    return name.startswith("--") or name in RELEVANT or name in ALIASES


def normalise(name: str, value: Tokens) -> list[tuple[str, Tokens]]:
    """A declaration as the properties it sets, or [] when a browser would drop it as invalid
    (`display:none; display:bogus` keeps `none`)."""
    if name.startswith("--"):
        return [(name, value)]
    if name in ALIASES:
        targets = ALIASES[name]
        if len(targets) == 2:  # `inset-inline: a b` sets the start side to a and the end side to b
            vals = [t for t in value if not isinstance(t, (ast.WhitespaceToken, ast.Comment))]
            if len(vals) == 2 and not any(isinstance(t, ast.FunctionBlock) and t.lower_name == "var" for t in vals):
                pairs = [(targets[0], [vals[0]]), (targets[1], [vals[1]])]
            else:
                pairs = [(t, value) for t in targets]
        else:
            pairs = [(targets[0], value)]
    else:
        pairs = [(name, value)]
    return [(n, v) for n, v in pairs if cv.valid(n, v)]


# -- selectors ---------------------------------------------------------------------------------


def _split_commas(tokens: Sequence[Any]) -> list[Tokens]:
    parts: list[Tokens] = [[]]
    for t in tokens:
        if isinstance(t, ast.LiteralToken) and t.value == ",":
            parts.append([])
        else:
            parts[-1].append(t)
    return [p for p in parts if any(not isinstance(t, (ast.WhitespaceToken, ast.Comment)) for t in p)]


def specificity(tokens: Sequence[Any]) -> tuple[int, int, int]:
    """(ids, classes/attributes/pseudo-classes, types/pseudo-elements) of one complex selector."""
    a = b = c = 0
    prev: Any = None
    for t in tokens:
        if isinstance(t, ast.HashToken):
            a += 1
        elif isinstance(t, ast.SquareBracketsBlock):
            b += 1
        elif isinstance(t, ast.IdentToken):
            if isinstance(prev, ast.LiteralToken) and prev.value == ".":
                b += 1
            elif isinstance(prev, ast.LiteralToken) and prev.value == ":":
                b += 1  # a pseudo-class like :first-child (pseudo-elements are skipped before this)
            else:
                c += 1
        elif isinstance(t, ast.FunctionBlock) and isinstance(prev, ast.LiteralToken) and prev.value == ":":
            name = t.lower_name
            if name == "where":
                pass
            elif name in ("is", "not", "has", "matches", "-webkit-any", "-moz-any"):
                inner = [specificity(p) for p in _split_commas(t.arguments)]
                if inner:
                    m = max(inner)
                    a, b, c = a + m[0], b + m[1], c + m[2]
            else:
                b += 1
        prev = t
    return (a, b, c)


#: what a `::first-line` rule sets that can hide the line, kept under this prefix on its element
FIRST_LINE = "first-line:"
_FIRST_LINE_PROPS = frozenset({"color", "-webkit-text-fill-color", "font-size", "font", "background-color",
                               "background", "letter-spacing"})


#: what a `::before` / `::after` rule sets that can make the pseudo-element an opaque box over text
_BOX_PROPS = frozenset({"content", "display", "position", "top", "left", "right", "bottom", "inset", "width",
                        "height", "background", "background-color", "background-image", "opacity", "visibility",
                        "z-index", "transform", "translate", "scale", "rotate", "filter", "clip", "clip-path",
                        "-webkit-clip-path", "border-radius", "zoom", "mask", "mask-image", "-webkit-mask",
                        "-webkit-mask-image", "mix-blend-mode"})
#: the pseudo-elements read, each kept on its element under a prefix ("before:background-color")
PSEUDO_PROPS = {"first-line": _FIRST_LINE_PROPS, "before": _BOX_PROPS, "after": _BOX_PROPS}


def _pseudo_of(tokens: Sequence[Any]) -> tuple[str, Tokens] | None:
    """(pseudo-element, element part) of `X::first-line`, `X::before` or `X::after` (or the
    legacy one-colon spellings), or None for any other selector (a pseudo-element elsewhere, or
    none)."""
    toks = list(tokens)
    while toks and isinstance(toks[-1], (ast.WhitespaceToken, ast.Comment)):
        toks.pop()
    if len(toks) < 2 or not (isinstance(toks[-1], ast.IdentToken) and toks[-1].lower_value in PSEUDO_PROPS):
        return None
    pseudo = toks[-1].lower_value
    head = toks[:-1]
    if not (isinstance(head[-1], ast.LiteralToken) and head[-1].value == ":"):
        return None
    head.pop()
    if head and isinstance(head[-1], ast.LiteralToken) and head[-1].value == ":":
        head.pop()
    if not head or _has_pseudo_element(head) or isinstance(head[-1], ast.WhitespaceToken):
        return None  # `X ::first-line` or `::first-line` alone: left to the general rule (skipped)
    return pseudo, head


def _has_pseudo_element(tokens: Sequence[Any]) -> bool:
    prev: Any = None
    for t in tokens:
        if isinstance(t, (ast.IdentToken, ast.FunctionBlock)) and isinstance(prev, ast.LiteralToken) and prev.value == ":":
            name = t.lower_value if isinstance(t, ast.IdentToken) else t.lower_name
            if name in ("before", "after", "first-line", "first-letter", "selection", "placeholder", "marker",
                        "backdrop", "file-selector-button", "cue", "part", "slotted", "highlight") or name.startswith("-"):
                return True
        if isinstance(t, ast.LiteralToken) and t.value == ":" and isinstance(prev, ast.LiteralToken) and prev.value == ":":
            return True
        prev = t
    return False


#: pseudo-classes and pseudo-elements a browser accepts that soupsieve cannot compile: a rule
#: naming them stays (that selector never matches); any other unreadable selector drops the rule
BROWSER_PSEUDOS = frozenset(
    "hover active focus focus-visible focus-within visited target target-within popover-open modal open closed "
    "fullscreen picture-in-picture autofill -webkit-autofill user-invalid user-valid blank playing paused seeking "
    "buffering stalled muted volume-locked state host host-context current past future local-link "
    "before after first-line first-letter selection placeholder marker backdrop file-selector-button cue part "
    "slotted highlight spelling-error grammar-error target-text view-transition view-transition-group "
    "view-transition-image-pair view-transition-old view-transition-new details-content picker "
    "picker-icon checkmark scroll-marker scroll-marker-group scroll-button column search-text".split())
_PSEUDO = re.compile(r"::?([-\w]+)")


def _browser_accepts(tokens: Sequence[Any]) -> bool:
    """Would a browser accept this complex selector? soupsieve's parse decides, but what it
    cannot read that a browser knows (BROWSER_PSEUDOS, `-webkit-` pseudo-elements) is accepted."""
    text = tinycss2.serialize(tokens).strip()
    if not text:
        return False
    try:
        soupsieve.compile(text)
    except Exception:  # noqa: BLE001 - soupsieve raises several types
        names = [m.group(1).lower() for m in _PSEUDO.finditer(text)]
        return bool(names) and all(n in BROWSER_PSEUDOS or n.startswith("-webkit-") for n in names)
    for m in re.finditer(r"::([-\w]+)", text):
        n = m.group(1).lower()
        if n not in BROWSER_PSEUDOS and not n.startswith("-webkit-"):
            return False
    return True


def _requirements(tokens: Sequence[Any]) -> frozenset[tuple[str, str]]:
    """The ids and classes a selector names outside any :not()/:is(): the page must have them all."""
    out: set[tuple[str, str]] = set()
    prev: Any = None
    for t in tokens:
        if isinstance(t, ast.HashToken) and t.is_identifier:
            out.add(("id", t.value))
        elif isinstance(t, ast.IdentToken) and isinstance(prev, ast.LiteralToken) and prev.value == ".":
            out.add(("class", t.value))
        prev = t
    return frozenset(out)


def _key_of(tokens: Sequence[Any]) -> tuple[str, str] | None:
    """The rightmost compound selector's id, class or type, for indexing (None: test every element)."""
    last: Tokens = []
    boundary = False
    for t in tokens:
        if isinstance(t, (ast.WhitespaceToken, ast.Comment)) or (isinstance(t, ast.LiteralToken) and t.value in (">", "+", "~")):
            boundary = True
            continue
        if boundary:
            last, boundary = [], False
        last.append(t)
    prev: Any = None
    for t in last:
        if isinstance(t, ast.HashToken) and t.is_identifier:
            return ("id", t.value)
    for t in last:
        if isinstance(t, ast.IdentToken) and isinstance(prev, ast.LiteralToken) and prev.value == ".":
            return ("class", t.value)
        prev = t
    if last and isinstance(last[0], ast.IdentToken):
        return ("tag", last[0].lower_value)
    return None


# -- media queries -----------------------------------------------------------------------------


def _length_px(t: Any) -> float | None:
    if isinstance(t, ast.NumberToken):
        return float(t.value)
    if isinstance(t, ast.DimensionToken):
        unit = t.lower_unit
        scale = {"px": 1.0, "em": 16.0, "rem": 16.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54,
                 "mm": 96 / 25.4, "q": 96 / 101.6, "vw": SCREEN["width"] / 100, "vh": SCREEN["height"] / 100,
                 "dpi": 1 / 96, "dppx": 1.0, "x": 1.0, "dpcm": 2.54 / 96}.get(unit)
        return float(t.value) * scale if scale is not None else None
    return None


def _feature(block: Any) -> bool:
    """One `(feature: value)` or range `(width >= 600px)` test against SCREEN."""
    toks = [t for t in block.content if not isinstance(t, (ast.WhitespaceToken, ast.Comment))]
    if not toks:
        return True
    if isinstance(toks[0], ast.IdentToken) and toks[0].lower_value in ("not", "only"):
        return not _feature(_Block(toks[1:])) if toks[0].lower_value == "not" else _feature(_Block(toks[1:]))
    if any(isinstance(t, ast.ParenthesesBlock) for t in toks):
        return _condition(toks)
    ops = "".join(t.value for t in toks if isinstance(t, ast.LiteralToken) and t.value in "<>=")
    if ops and ops != ":":
        return _range(toks)
    if not isinstance(toks[0], ast.IdentToken):
        return True
    name = toks[0].lower_value
    value = toks[2:] if len(toks) > 2 and isinstance(toks[1], ast.LiteralToken) and toks[1].value == ":" else []
    prefix = ""
    for p in ("min-", "max-"):
        if name.startswith(p):
            prefix, name = p, name[len(p):]
    name = name.removeprefix("device-").removeprefix("-webkit-")
    if name in ("pixel-ratio", "device-pixel-ratio"):
        name = "resolution"
    if not value:
        return SCREEN.get(name, 1.0) != 0 if name in SCREEN else _SCREEN_KEYWORDS.get(name, "x") not in ("none", "0")
    if name in SCREEN:
        if name == "resolution" and isinstance(value[0], ast.NumberToken):
            v: float | None = float(value[0].value)
        else:
            v = _length_px(value[0])
        if v is None:
            return True
        have = SCREEN[name]
        return have >= v if prefix == "min-" else have <= v if prefix == "max-" else abs(have - v) < 1e-6
    if name == "aspect-ratio":
        return True
    want = value[0].lower_value if isinstance(value[0], ast.IdentToken) else None
    if want is None or name not in _SCREEN_KEYWORDS:
        return True  # unknown: assume it applies, as rules meant for a screen should
    return _SCREEN_KEYWORDS[name] == want


def _range(toks: Tokens) -> bool:
    """`(width >= 600px)`, `(400px <= width < 700px)`."""
    items: list[Any] = []
    for t in toks:
        if isinstance(t, ast.LiteralToken) and t.value in "<>=":
            if items and isinstance(items[-1], str) and items[-1] in ("<", ">") and t.value == "=":
                items[-1] += "="
            else:
                items.append(t.value)
        elif isinstance(t, ast.IdentToken):
            name = t.lower_value.removeprefix("device-")
            items.append(("feature", name))
        else:
            items.append(_length_px(t))
    vals = [SCREEN.get(i[1]) if isinstance(i, tuple) else i for i in items]
    for i in range(1, len(vals) - 1, 2):
        op, x, y = vals[i], vals[i - 1], vals[i + 1]
        if not isinstance(x, float) or not isinstance(y, float) or not isinstance(op, str):
            return True
        ok = {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "=": abs(x - y) < 1e-6}.get(op, True)
        if not ok:
            return False
    return True


@dataclass
class _Block:
    content: Tokens


def _condition(toks: Tokens) -> bool:
    """`(a) and (b)`, `(a) or (b)`, `not (a)` over parenthesised tests."""
    result: bool | None = None
    op = "and"
    negate = False
    for t in toks:
        if isinstance(t, ast.IdentToken):
            v = t.lower_value
            if v in ("and", "or"):
                op = v
            elif v == "not":
                negate = True
            elif v == "only":
                continue
            else:  # a media type
                ok = v in ("all", "screen")
                ok = not ok if negate else ok
                negate = False
                result = ok if result is None else (result and ok if op == "and" else result or ok)
        elif isinstance(t, ast.ParenthesesBlock):
            ok = _feature(t)
            ok = not ok if negate else ok
            negate = False
            result = ok if result is None else (result and ok if op == "and" else result or ok)
    if negate and result is None:
        return False
    return True if result is None else result


def media_matches(prelude: Sequence[Any] | str) -> bool:
    """Does a media query list (`screen and (min-width: 600px), print`) match SCREEN?"""
    toks = value_tokens(prelude) if isinstance(prelude, str) else list(prelude)
    queries = _split_commas(toks)
    if not queries:
        return True
    return any(_query(q) for q in queries)


def _query(toks: Tokens) -> bool:
    toks = [t for t in toks if not isinstance(t, (ast.WhitespaceToken, ast.Comment))]
    if toks and isinstance(toks[0], ast.IdentToken) and toks[0].lower_value == "not" and len(toks) > 1 and \
            isinstance(toks[1], ast.IdentToken):  # `not print and (...)`: negates the whole query
        return not _condition(toks[1:])
    return _condition(toks)


# -- stylesheets -------------------------------------------------------------------------------


class _Collector:
    def __init__(self) -> None:
        self.rules: list[_Rule] = []
        self.layers: dict[str, int] = {}
        self.order = 0
        self.skipped = 0
        self.depth = 0
        self.too_deep = 0
        self.initial: dict[str, Tokens] = {}  # @property initial values
        self.keyframes: set[str] = set()  # @keyframes names whose frames set a property in RELEVANT

    def layer_rank(self, name: str) -> int:
        return self.layers.setdefault(name, len(self.layers))

    def sheet(self, css: str, origin: int, scope: str = "") -> None:
        rules = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
        self.rules_of(rules, origin, UNLAYERED, [scope] if scope else [])

    def rules_of(self, rules: Iterable[Any], origin: int, layer: int, parents: list[str]) -> None:
        if self.depth >= MAX_NESTING:
            self.too_deep += 1
            return
        self.depth += 1
        try:
            self._rules_of(rules, origin, layer, parents)
        finally:
            self.depth -= 1

    def _rules_of(self, rules: Iterable[Any], origin: int, layer: int, parents: list[str]) -> None:
        leading = True  # @import only counts before every other rule (@charset and @layer aside)
        for r in rules:
            if isinstance(r, ast.QualifiedRule):
                leading = False
                self.qualified(r.prelude, r.content, origin, layer, parents)
            elif isinstance(r, ast.AtRule):
                kw = r.lower_at_keyword
                if kw == "import" and (not leading or parents):
                    continue
                if kw not in ("import", "charset", "layer") or r.content is not None:
                    leading = False
                self.at_rule(r, origin, layer, parents)

    def at_rule(self, r: Any, origin: int, layer: int, parents: list[str]) -> None:
        kw = r.lower_at_keyword
        if r.content is None:
            if kw == "layer":  # `@layer a, b;` fixes the layers' order
                for part in _split_commas(r.prelude):
                    self.layer_rank(tinycss2.serialize(part).strip())
            elif kw == "import":  # only a data: URL can be read offline
                target = next((t for t in r.prelude if isinstance(t, (ast.URLToken, ast.StringToken))), None)
                if target is None:
                    fn = next((t for t in r.prelude if isinstance(t, ast.FunctionBlock) and t.lower_name == "url"), None)
                    target = next((a for a in fn.arguments if isinstance(a, ast.StringToken)), None) if fn else None
                css = data_url_text(target.value) if target is not None else None
                rest = [t for t in r.prelude if t is not target and not isinstance(t, ast.WhitespaceToken)]
                media = [t for t in rest if not isinstance(t, ast.FunctionBlock)]
                if css is not None and (not media or media_matches(media)):
                    self.rules_of(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True),
                                  origin, layer, parents)
            return
        inner = tinycss2.parse_blocks_contents(r.content, skip_comments=True, skip_whitespace=True) \
            if parents else tinycss2.parse_rule_list(r.content, skip_comments=True, skip_whitespace=True)
        if kw == "media":
            if media_matches(r.prelude):
                self.nested(inner, origin, layer, parents)
        elif kw == "supports":  # a browser supports what pages test for; `not (...)` is the fallback branch
            first = next((t for t in r.prelude if not isinstance(t, (ast.WhitespaceToken, ast.Comment))), None)
            if not (isinstance(first, ast.IdentToken) and first.lower_value == "not"):
                self.nested(inner, origin, layer, parents)
        elif kw in ("container", "document", "-moz-document", "starting-style"):
            self.nested(inner, origin, layer, parents)
        elif kw == "import":
            pass
        elif kw == "property":  # a registered custom property's initial value applies where none is set
            name = tinycss2.serialize(r.prelude).strip()
            for d in tinycss2.parse_declaration_list(r.content, skip_comments=True, skip_whitespace=True):
                if isinstance(d, ast.Declaration) and d.lower_name == "initial-value" and name.startswith("--"):
                    self.initial[name] = list(d.value)
        elif kw in ("keyframes", "-webkit-keyframes"):  # an animation that touches what can hide text
            name = tinycss2.serialize(r.prelude).strip().strip("'\"")
            for frame in tinycss2.parse_rule_list(r.content, skip_comments=True, skip_whitespace=True):
                for d in tinycss2.parse_blocks_contents(getattr(frame, "content", None) or [], skip_comments=True,
                                                        skip_whitespace=True):
                    if isinstance(d, ast.Declaration) and _keep(d.lower_name) and not d.lower_name.startswith("anim"):
                        self.keyframes.add(name)
        elif kw == "layer":
            name = tinycss2.serialize(r.prelude).strip() or f"(anonymous {self.order})"
            self.nested(inner, origin, self.layer_rank(name), parents)
        elif kw == "scope":
            scope = next((t for t in r.prelude if isinstance(t, ast.ParenthesesBlock)), None)
            prefix = tinycss2.serialize(scope.content).strip() if scope is not None else ""
            self.nested(inner, origin, layer, parents + ([prefix] if prefix else []))

    def nested(self, inner: list[Any], origin: int, layer: int, parents: list[str]) -> None:
        decls = [d for d in inner if isinstance(d, ast.Declaration)]
        if decls and parents:  # declarations directly inside a nested at-rule belong to the parent selector
            self.add(parents[-1], (0, 0, 0), origin, layer, decls, nested=True, parents=parents[:-1])
        self.rules_of([r for r in inner if not isinstance(r, ast.Declaration)], origin, layer, parents)

    def qualified(self, prelude: Tokens, content: Tokens, origin: int, layer: int, parents: list[str]) -> None:
        items = tinycss2.parse_blocks_contents(content, skip_comments=True, skip_whitespace=True)
        decls = [d for d in items if isinstance(d, ast.Declaration)]
        selectors = _split_commas(prelude)
        if not all(_browser_accepts(sel) for sel in selectors):
            self.skipped += len(selectors)  # one invalid selector drops the whole rule in a browser
            return
        for sel in selectors:
            if _has_pseudo_element(sel):
                found = _pseudo_of(sel)
                if found is not None and decls:  # a first line it can hide, a box over the element's text
                    spec = specificity(sel)
                    self.add(_nest(tinycss2.serialize(found[1]).strip(), parents), spec, origin, layer, decls,
                             prefix=found[0] + ":")
                continue
            text = tinycss2.serialize(sel).strip()
            full = _nest(text, parents)
            if decls:
                spec = specificity(sel)
                if parents:
                    spec = tuple(x + y for x, y in zip(spec, _parent_specificity(parents), strict=True))  # type: ignore[assignment]
                self.add(full, spec, origin, layer, decls)
        nested = [r for r in items if not isinstance(r, ast.Declaration)]
        if nested:
            here = ", ".join(_nest(tinycss2.serialize(s).strip(), parents) for s in selectors if not _has_pseudo_element(s))
            if here:
                self.rules_of(nested, origin, layer, [here])

    def add(self, selector: str, spec: tuple[int, int, int], origin: int, layer: int, decls: list[Any],
            nested: bool = False, parents: list[str] | None = None, prefix: str = "") -> None:
        kept = [(n, v, bool(d.important)) for d in decls if _keep(d.name if d.name.startswith("--") else d.lower_name)
                for n, v in normalise(d.name if d.name.startswith("--") else d.lower_name, list(d.value))]
        if prefix:  # a pseudo-element's declarations, under their own names on its element
            wanted = PSEUDO_PROPS[prefix[:-1]]
            kept = [(prefix + n, v, imp) for n, v, imp in kept if n in wanted]
        if not kept:
            return
        if nested and parents:
            selector = _nest(selector, parents)
        try:
            compiled = soupsieve.compile(selector)
        except Exception:  # noqa: BLE001 - soupsieve raises several types; an unreadable selector matches nothing
            self.skipped += 1
            return
        self.order += 1
        parts = _split_commas(value_tokens(selector))
        index = _key_of(parts[0]) if len(parts) == 1 else None
        needs = _requirements(parts[0]) if len(parts) == 1 else frozenset()
        self.rules.append(_Rule(compiled, index, needs, spec, origin, layer, self.order, kept))


def _nest(selector: str, parents: list[str]) -> str:
    if not parents:
        return selector
    parent = f":is({parents[-1]})"
    full = selector.replace("&", parent) if "&" in selector else f"{parent} {selector}"
    return _nest(full, parents[:-1]) if len(parents) > 1 else full


def _parent_specificity(parents: list[str]) -> tuple[int, int, int]:
    toks = value_tokens(parents[-1])
    return max((specificity(p) for p in _split_commas(toks)), default=(0, 0, 0))


_UA: list[_Rule] | None = None


def _ua_rules() -> list[_Rule]:
    global _UA
    if _UA is None:
        c = _Collector()
        c.sheet(UA_CSS, origin=0)
        _UA = c.rules
    return _UA


def _presentational(tag: Tag) -> list[tuple[str, Tokens, bool]]:
    """Old HTML attributes that style text: `<font color>`, `bgcolor`, `<body text>`."""
    out: list[tuple[str, Tokens, bool]] = []
    if tag.name == "font" and tag.get("color"):
        out.append(("color", value_tokens(_legacy_color(str(tag["color"]))), False))
    if tag.name == "body" and tag.get("text"):
        out.append(("color", value_tokens(_legacy_color(str(tag["text"]))), False))
    if tag.get("bgcolor"):
        out.append(("background-color", value_tokens(_legacy_color(str(tag["bgcolor"]))), False))
    return out


def _legacy_color(v: str) -> str:
    v = v.strip()
    return f"#{v}" if re.fullmatch(r"[0-9a-fA-F]{3}|[0-9a-fA-F]{6}", v) else v


def data_url_text(url: str) -> str | None:
    """The text of a `data:text/css,...` URL (percent- or base64-encoded); None for anything else."""
    import base64
    from urllib.parse import unquote_to_bytes

    m = re.match(r"\s*data:([^,]*),(.*)", url, re.S | re.I)
    if not m or (m.group(1).strip() and "css" not in m.group(1).lower()):
        return None
    raw = unquote_to_bytes(m.group(2))
    if m.group(1).lower().endswith(";base64"):
        try:
            raw = base64.b64decode(raw, validate=False)
        except ValueError:
            return None
    return raw.decode("utf-8", errors="replace")


def page_stylesheets(soup: BeautifulSoup) -> Iterator[str]:
    """The text of every `<style>` (and `<link rel=stylesheet>` to a data: URL, the one kind that
    needs no fetch) that applies on a screen, in document order. The tree is html5.parse_soup's:
    template contents are not in it and `<noscript>` holds raw text, so neither adds a sheet."""
    for st in soup.find_all(["style", "link"]):
        media = st.get("media")
        if media and not media_matches(str(media)):
            continue
        if st.name == "link":
            rel: Any = st.get("rel") or []
            rels = [str(x).lower() for x in (rel if isinstance(rel, list) else str(rel).split())]
            css = data_url_text(str(st.get("href", ""))) if "stylesheet" in rels and "alternate" not in rels else None
            if css is not None:
                yield css
            continue
        kind = str(st.get("type", "text/css")).strip().lower()
        if kind not in ("", "text/css"):
            continue
        yield st.get_text()


def resolve(soup: BeautifulSoup) -> Styles:
    """Cascade the user-agent sheet, presentational attributes, `<style>` and `style=` per element."""
    c = _Collector()
    for css in page_stylesheets(soup):
        c.sheet(css, origin=2)
    rules = _ua_rules() + c.rules
    tags = [t for t in soup.find_all(True)]
    by_id: dict[str, list[Tag]] = {}
    by_class: dict[str, list[Tag]] = {}
    by_tag: dict[str, list[Tag]] = {}
    for t in tags:
        if t.get("id"):
            by_id.setdefault(str(t["id"]), []).append(t)
        classes: Any = t.get("class") or []
        for cl in classes if isinstance(classes, list) else str(classes).split():
            by_class.setdefault(cl, []).append(t)
        by_tag.setdefault(t.name, []).append(t)
    matched: dict[int, list[Decl]] = {}
    index = {"id": by_id, "class": by_class, "tag": by_tag}
    for r in rules:
        if any(need[1] not in index[need[0]] for need in r.needs):
            continue  # names a class or id the page does not have
        cands = tags if r.index is None else index[r.index[0]].get(r.index[1], [])
        if not cands:
            continue
        try:
            hits = r.selector.filter(cands)  # one matcher (and its caches) for all candidates
        except Exception:  # noqa: BLE001 - a selector soupsieve compiled but cannot apply here matches nothing
            continue
        for t in hits:
            lst = matched.setdefault(id(t), [])
            for name, value, important in r.decls:
                lst.append(Decl(name, value, _cascade_key(important, r.origin, r.layer, False, r.specificity, r.order)))
    scheme = next((str(m.get("content", "")).lower() for m in soup.find_all("meta")
                   if str(m.get("name", "")).strip().lower() == "color-scheme"), "")
    styles = Styles(rules=len(c.rules), skipped_selectors=c.skipped, too_deep=c.too_deep, initial=c.initial,
                    keyframes=frozenset(c.keyframes), meta_scheme=scheme)
    for t in tags:
        lst = matched.get(id(t), [])
        for name, value, important in _presentational(t):
            lst.append(Decl(name, value, _cascade_key(important, 1, UNLAYERED, False, (0, 0, 0), 0)))
        style = t.get("style")
        if style:
            for raw_name, raw_value, important in parse_inline(str(style)):
                if not _keep(raw_name):
                    continue
                for name, value in normalise(raw_name, raw_value):
                    lst.append(Decl(name, value, _cascade_key(important, 2, UNLAYERED, True, (0, 0, 0), 0)))
        if lst:
            won: dict[str, Decl] = {}
            for d in lst:
                if d.name not in won or d.key >= won[d.name].key:
                    won[d.name] = d
            styles.declared[id(t)] = won
    return styles


def _cascade_key(important: bool, origin: int, layer: int, inline: bool, spec: tuple[int, int, int],
                 order: int) -> tuple[int, int, int, int, tuple[int, int, int], int]:
    if important:  # important declarations: the user agent's win, then earlier layers over later ones
        return (1, -origin, int(inline), -layer, spec, order)
    return (0, origin, int(inline), layer, spec, order)


def declared(decls: dict[str, Decl], name: str) -> Decl | None:
    """The winning declaration for a longhand, whether it was set directly or by a shorthand."""
    best = decls.get(name)
    for sh in SHORTHANDS.get(name, ()):
        d = decls.get(sh)
        if d is not None and (best is None or d.key > best.key):
            best = d
    return best
