"""Which parts of an HTML page a person cannot see, from the cascaded CSS (see css.py).

Two kinds of decision, as in a browser:

* an element whose whole box is invisible (`display:none`, near-zero `opacity`, a zero-area
  `clip`/`clip-path`, `transform: scale(0)`, pushed off-screen, zero size with overflow hidden)
  is removed with everything inside it: nothing a child declares can bring it back;
* text whose own, inherited style makes it unreadable (`visibility:hidden`, a font under
  MIN_FONT_PX, a colour (nearly) equal to the background behind it, a huge negative
  `text-indent`) is removed text node by text node, because a child can undo it
  (`visibility:visible`, its own colour or size).

What docket cannot compute but a browser could use to hide text (a colour function it cannot
convert, url() filters and clips, masks, blend modes, motion paths, keyframe animations of what can
hide text) fails closed: the text is treated as not shown and counted as `unresolved_<what>`.
The walk is iterative, so nesting depth never exhausts the stack.

`hide(soup)` removes both and returns what it removed, counted by kind at the element where the
hiding starts, counting only removals that held text.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bs4 import BeautifulSoup, NavigableString, Tag
from tinycss2 import ast

from docket.ingest import cssvalues as cv
from docket.ingest.css import FIRST_LINE, Decl, Styles, declared, resolve

#: text smaller than this (px) cannot be read
MIN_FONT_PX = 4.0
#: opacity (own, or multiplied down the tree) under this is invisible
MIN_OPACITY = 0.1
#: text whose contrast ratio with its background is under this is invisible (white on #eee is 1.16)
MIN_CONTRAST = 1.25
#: a box moved further than this to the left or the top (px) is off-screen
OFFSCREEN_PX = 250.0
#: ... or further than this to the right
FAR_PX = 5000.0
#: a box this small (px) with its overflow hidden shows nothing
TINY_BOX_PX = 1.0
#: `filter: blur()` at least this wide (px) leaves no readable text
BLUR_PX = 8.0

VIEW_W, VIEW_H = 1280.0, 800.0
_INLINE = frozenset("a abbr b bdi bdo cite code data dfn em font i kbd label mark q s samp small span strong sub "
                    "sup time tt u var big del ins nobr wbr".split())
_SIZE_KEYWORDS = {"xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0, "x-large": 24.0,
                  "xx-large": 32.0, "xxx-large": 48.0}
_OVERFLOW_CLIPS = frozenset({"hidden", "clip", "scroll", "auto", "overlay"})
_WIDE = ("inherit", "initial", "unset", "revert", "revert-layer")

#: kinds of removal (the index report counts `html_hidden_<kind>`)
KINDS = ("display", "hidden_attribute", "aria_hidden", "visibility", "opacity", "font_size", "color", "offscreen",
         "clip", "transform", "zero_size", "filter", "text_security", "letter_spacing", "covered",
         # fail closed: what docket cannot compute is not known to be shown
         "unresolved_color", "unresolved_filter", "unresolved_clip", "unresolved_mask", "unresolved_blend",
         "unresolved_motion", "unresolved_animation", "unresolved_css_nesting", "unresolved_first_line")
# (html.py counts two more: html_hidden_select_options, html_hidden_unresolved_shadow_dom)
#: filter functions that leave text readable at any argument (the others are read, or fail closed)
_SAFE_FILTERS = frozenset({"drop-shadow", "grayscale", "sepia", "saturate", "hue-rotate", "contrast"})
_CLIP_SHAPES = frozenset({"inset", "circle", "ellipse", "polygon", "rect", "xywh"})
_MASKS = ("mask", "mask-image", "-webkit-mask", "-webkit-mask-image", "-webkit-mask-box-image")


@dataclass
class _State:
    """The inherited part of the computed style, plus what the element's box sits on."""

    font_px: float = 16.0
    color: cv.RGBA = cv.BLACK
    fill: cv.RGBA | None = None  # -webkit-text-fill-color when set
    visibility: str = "visible"
    text_indent: float = 0.0
    line_height: tuple[str, float] = ("normal", 0.0)
    background: cv.RGBA | None = cv.WHITE  # opaque colour behind the text; None when an image makes it unknown
    opacity: float = 1.0  # product down the tree
    scale: float = 1.0  # how much transforms and zoom shrink text, multiplied down the tree
    text_decorated: bool = False  # background-clip:text paints the glyphs with the background
    shadows: tuple[cv.RGBA, ...] = ()  # text-shadow and -webkit-text-stroke colours: they draw the glyphs too
    custom: dict[str, list[Any]] = field(default_factory=dict)
    display: str = "block"
    text_reason: tuple[str, int] | None = None  # (kind, origin element id) for text hidden by inherited style
    security: bool = False  # -webkit-text-security draws every letter as a disc
    spacing_em: float = 0.0  # letter-spacing, in ems of the font size where it was set
    colour_unknown: bool = False  # a colour function docket cannot compute
    keyframes: frozenset[str] = frozenset()
    container: Any = None  # the nearest positioned ancestor (an absolute box's containing block)
    container_holds: bool = True  # that ancestor grows with its content (no set height) or clips what overflows
    # this element's own, not inherited (reset for every element):
    layered: bool = False  # positioned or a stacking context: painted in a layer of its own
    covers: Any = None  # the block this element (or its ::before/::after) covers whole as an opaque box (_covered_block)


@dataclass
class Removed:
    counts: Counter[str] = field(default_factory=Counter)
    origins: set[tuple[str, int]] = field(default_factory=set)
    overlays: list[tuple[Tag, Tag]] = field(default_factory=list)  # (opaque box, the element it covers)
    layered: set[int] = field(default_factory=set)  # ids of elements painted in a layer of their own

    def add(self, kind: str, origin: int) -> None:
        if (kind, origin) not in self.origins:
            self.origins.add((kind, origin))
            self.counts[kind] += 1


def hide(soup: BeautifulSoup, styles: Styles | None = None) -> Counter[str]:
    """Remove everything invisible from `soup` (in place); removals counted by kind."""
    styles = styles if styles is not None else resolve(soup)
    removed = Removed()
    root = soup.find("html") or soup
    if styles.too_deep:  # part of the page's CSS could not be read: nothing on it is known to show
        body = soup.find("body") or root
        if isinstance(body, Tag) and _has_text(body):
            removed.add("unresolved_css_nesting", id(body))
        if isinstance(body, Tag):
            body.clear()
        return removed.counts
    start = _State(custom=dict(styles.initial), keyframes=styles.keyframes)
    if _dark_scheme(soup, styles):  # the canvas and the default text colour follow a dark scheme
        start.background, start.color = (0.07, 0.07, 0.07, 1.0), cv.WHITE
    _visit(root if isinstance(root, Tag) else soup, start, styles, removed, is_root=True)
    _remove_covered(removed, root if isinstance(root, Tag) else soup)
    return removed.counts


def _remove_covered(removed: Removed, top: Tag | BeautifulSoup) -> None:
    """Text under an opaque positioned box that covers the whole of its containing block (or of
    the window, when fixed): a positioned box paints over the in-flow content of that block,
    before or after it in the page. Text inside the box, or inside anything painted in a layer of
    its own below the block (positioned, or a stacking context, which may paint above the box),
    is kept: only what certainly lies under the box goes. One walk of the tree, however many
    boxes (a page of nested boxes is not quadratic)."""
    if not removed.overlays:
        return
    blocks = {id(block): id(box) for box, block in removed.overlays if box.parent is not None}
    stack: list[tuple[Any, int]] = [(top, 0)]  # (element, id of the box over it; 0: none)
    while stack:
        node, box = stack.pop()
        if id(node) in removed.layered:
            box = 0
        box = blocks.get(id(node), box)
        for child in list(node.children):
            if isinstance(child, Tag):
                stack.append((child, box))
            elif box and type(child) is NavigableString and str(child).strip():
                removed.add("covered", box)
                child.extract()


def _dark_scheme(soup: BeautifulSoup, styles: Styles) -> bool:
    """Does the page ask for a dark colour scheme only (`color-scheme: dark` on the root, or
    `<meta name=color-scheme content=dark>`)? The reader's browser is taken to prefer light, so
    `light dark` stays light."""
    words: list[str] = []
    html = soup.find("html")
    if isinstance(html, Tag):
        d = styles.of(html).get("color-scheme")
        if d is not None:
            words = [t.lower_value for t in cv.significant(d.value) if isinstance(t, ast.IdentToken)]
    if not words:
        words = styles.meta_scheme.split()
    return "dark" in words and "light" not in words


def _has_text(tag: Tag) -> bool:
    return any(str(s).strip() for s in tag.find_all(string=True))


def _visit(top: Tag, parent: _State, styles: Styles, removed: Removed, is_root: bool = False) -> None:
    """Walk the tree from `top` with an explicit stack (deep nesting cannot exhaust Python's)."""
    stack: list[tuple[Tag, _State, bool]] = [(top, parent, is_root)]
    while stack:
        tag, inherited, root = stack.pop()
        decls = styles.of(tag) if not isinstance(tag, BeautifulSoup) else {}
        state, box_reason = _compute(tag, decls, inherited, root)
        if box_reason is not None:
            if _has_text(tag):
                removed.add(box_reason, id(tag))
            tag.decompose()
            continue
        if state.layered:
            removed.layered.add(id(tag))
        if state.covers is not None:
            removed.overlays.append((tag, state.covers))
        later: list[tuple[Tag, _State, bool]] = []
        for child in list(tag.children):
            if isinstance(child, Tag):
                later.append((child, state, False))
            elif isinstance(child, NavigableString) and type(child) is NavigableString and state.text_reason is not None:
                if str(child).strip():
                    removed.add(*state.text_reason)
                child.extract()
        stack.extend(reversed(later))


def _aria_hidden(tag: Tag) -> bool:
    return str(tag.get("aria-hidden", "")).strip().lower() == "true"


def _value(decls: dict[str, Decl], name: str, state: _State) -> list[Any] | None:
    """The declared tokens of a longhand (var() substituted); None when nothing is declared."""
    d = declared(decls, name)
    if d is None:
        return None
    toks = d.value
    if d.name != name:  # set through a shorthand: the caller reads the shorthand itself
        return None
    return _substitute(toks, state.custom)


def _shorthand(decls: dict[str, Decl], name: str, state: _State) -> tuple[str, list[Any]] | None:
    """(the declaration's own name, its tokens) for a longhand set directly or by a shorthand."""
    d = declared(decls, name)
    if d is None:
        return None
    toks = _substitute(d.value, state.custom)
    if toks is None:
        return None
    return d.name, toks


def _substitute(tokens: Sequence[Any], custom: dict[str, list[Any]], depth: int = 0) -> list[Any] | None:
    """`var(--x, fallback)` replaced by the custom property's tokens; None when one is missing."""
    if depth > 16:
        return None
    out: list[Any] = []
    for t in tokens:
        if isinstance(t, ast.FunctionBlock) and t.lower_name == "var":
            args = list(t.arguments)
            name_tok = next((a for a in args if isinstance(a, ast.IdentToken)), None)
            if name_tok is None:
                return None
            comma = next((i for i, a in enumerate(args) if isinstance(a, ast.LiteralToken) and a.value == ","), None)
            value = custom.get(name_tok.value)
            if value is None:
                if comma is None:
                    return None
                value = args[comma + 1:]
            sub = _substitute(value, custom, depth + 1)
            if sub is None:
                return None
            out.extend(sub)
        elif isinstance(t, ast.FunctionBlock):
            inner = _substitute(t.arguments, custom, depth + 1)
            if inner is None:
                return None
            out.append(ast.FunctionBlock(t.source_line, t.source_column, t.name, inner))
        else:
            out.append(t)
    return out


def _compute(tag: Tag, decls: dict[str, Decl], parent: _State, is_root: bool) -> tuple[_State, str | None]:
    """This element's inherited state and, when its whole box is invisible, the reason."""
    custom = dict(parent.custom)
    for name, d in decls.items():
        if name.startswith("--"):
            sub = _substitute(d.value, parent.custom)
            if sub is not None:
                custom[name] = sub
    state = replace(parent, custom=custom, layered=False, covers=None)

    def kw(name: str) -> str | None:
        toks = _value(decls, name, state)
        return cv.keyword(toks) if toks is not None else None

    # -- inherited properties first: the box decisions below read the font size
    fs = _value(decls, "font-size", state)
    font_short = _shorthand(decls, "font-size", state)
    if font_short is not None and font_short[0] == "font":
        size_toks, lh_toks = _font_shorthand(font_short[1])
        fs = size_toks
        if lh_toks is not None:
            state.line_height = _line_height(lh_toks, parent, None)
    if fs is not None:
        state.font_px = _font_size(fs, parent.font_px)
    lh = _value(decls, "line-height", state)
    if lh is not None:
        state.line_height = _line_height(lh, parent, state.font_px)
    ctx = cv.Ctx(em=state.font_px, percent=VIEW_W)
    col = _value(decls, "color", state)
    if col is not None:
        k = cv.keyword(col)
        if k in ("inherit", "unset", "revert", "revert-layer"):
            pass
        elif k == "initial":
            state.color = cv.BLACK
        else:
            c = cv.color(col, parent.color)
            if c is not None:
                state.color, state.colour_unknown = c, False
            else:  # a colour a browser accepted (css.normalise) that docket cannot compute
                state.colour_unknown = True
    fill = _value(decls, "-webkit-text-fill-color", state)
    if fill is not None:
        k = cv.keyword(fill)
        state.fill = None if k in ("currentcolor", "initial") else cv.color(fill, state.color) if k not in _WIDE else parent.fill
        if state.fill is None and k not in ("currentcolor", "initial", *_WIDE):
            state.colour_unknown = True
    sec = kw("-webkit-text-security")
    if sec is not None and sec not in _WIDE:
        state.security = sec != "none"
    ls = _value(decls, "letter-spacing", state)
    if ls is not None and cv.keyword(ls) not in _WIDE:
        px = 0.0 if cv.keyword(ls) == "normal" else cv.length(ls, cv.Ctx(em=state.font_px))
        if px is not None:
            state.spacing_em = px / state.font_px if state.font_px > 0 else 0.0
    vis = kw("visibility")
    if vis in ("visible", "hidden", "collapse"):
        state.visibility = vis
    elif vis == "initial":
        state.visibility = "visible"
    ti = _value(decls, "text-indent", state)
    if ti is not None and cv.keyword(ti) not in _WIDE:
        v = cv.length(cv.significant(ti)[:1], ctx)
        state.text_indent = v if v is not None else state.text_indent
    state.text_decorated = parent.text_decorated or _decorated(decls, state)
    state.shadows = _shadows(decls, state, parent)

    # -- the box
    display = kw("display")
    if display is None or display in _WIDE:
        display = "inline" if tag.name in _INLINE else "block"
    position = kw("position") or "static"
    floated = kw("float") in ("left", "right", "inline-start", "inline-end")
    blockified = position in ("absolute", "fixed") or floated or parent.display in ("flex", "inline-flex", "grid", "inline-grid")
    if blockified and display in ("inline", "contents"):
        display = "block"
    state.display = display
    reason: str | None = None
    d_display = declared(decls, "display")
    if display == "none":
        reason = "hidden_attribute" if tag.has_attr("hidden") and d_display is not None and d_display.key[1] == 0 else "display"
    elif _aria_hidden(tag):
        reason = "aria_hidden"
    elif kw("content-visibility") == "hidden":
        reason = "hidden_attribute" if tag.has_attr("hidden") else "display"
    if reason is None:
        reason = _box_reason(decls, state, parent, display, position, ctx)
    if reason is not None:
        return state, reason

    # -- the background behind this element's content
    state.background = _background(decls, state, parent)
    _layers(tag, decls, state, parent, position, is_root)
    if _first_line_hidden(decls, state):
        return state, "unresolved_first_line"

    # -- text hidden by the (inherited) style
    text_kind = _text_reason(state)
    if text_kind is None:
        state.text_reason = None
    elif parent.text_reason is not None and parent.text_reason[0] == text_kind and not is_root:
        state.text_reason = parent.text_reason
    else:
        state.text_reason = (text_kind, id(tag))
    return state, None


#: properties that put an element in a layer of its own (a stacking context) at any value but these
_LAYERING = {"transform": ("none",), "filter": ("none",), "isolation": ("auto",), "will-change": ("auto",),
             "contain": ("none",), "perspective": ("none",), "backdrop-filter": ("none",), "z-index": ("auto",),
             "translate": ("none",), "scale": ("none",), "rotate": ("none",)}


def _layers(tag: Tag, decls: dict[str, Decl], state: _State, parent: _State, position: str, is_root: bool) -> None:
    """Set what the covered-text rule needs: whether this element paints in a layer of its own,
    the containing block its absolute descendants cover, and whether it is itself an opaque box
    over the whole of its containing block (or of the window)."""
    own_opacity = parent.opacity <= 0 or state.opacity / parent.opacity < 0.999
    state.layered = position != "static" or own_opacity or any(
        _given(decls, name, keep, state) for name, keep in _LAYERING.items())
    if position != "static" or is_root:
        height = _len(decls, "height", state, cv.Ctx(em=state.font_px, percent=None))
        state.container, state.container_holds = tag, height is None or bool(_overflow_clips(decls, state))
    state.covers = _covered_block(tag, decls, state, position, state.visibility, state.opacity,
                                  parent.container, parent.container_holds)
    if state.covers is not None:
        return
    # a ::before or ::after box: a child of the element, so a positioned element is its block
    holder, holds = (tag, state.container_holds) if position != "static" else (parent.container, parent.container_holds)
    for prefix in ("before:", "after:"):
        own = {name[len(prefix):]: replace(d, name=d.name[len(prefix):]) for name, d in decls.items()
               if name.startswith(prefix)}
        content = _value(own, "content", state)
        if not own or content is None or cv.keyword(content) in ("none", "normal", *_WIDE):
            continue  # no content: no box
        if (kw_of(own, "display", state) or "inline") == "none":
            continue
        vis = kw_of(own, "visibility", state) or state.visibility
        op = _value(own, "opacity", state)
        alpha = state.opacity * (min(max(cv.number(op) or 0.0, 0.0), 1.0) if op is not None and cv.keyword(op)
                                 not in _WIDE else 1.0)
        block = _covered_block(tag, own, state, kw_of(own, "position", state) or "static", vis, alpha, holder, holds)
        if block is not None:
            state.covers = block
            return


def _covered_block(tag: Tag, decls: dict[str, Decl], state: _State, position: str, visibility: str, opacity: float,
                   container: Any, holds: bool) -> Any:
    """The block an opaque box (the element, or its ::before/::after) paints over whole: its
    containing block when it is absolute and spans it, the page when it is fixed over the window;
    None when it may not cover it all (see _remove_covered for what goes)."""
    if position not in ("absolute", "fixed") or visibility != "visible" or opacity < 0.999:
        return None
    block = _root_of(tag) if position == "fixed" else container
    if block is None or (position == "absolute" and not holds):
        return None
    z = _value(decls, "z-index", state)
    if z is not None and (cv.number(z) or 0) < 0:
        return None  # painted under the in-flow content
    if any(_given(decls, name, keep, state) for name, keep in (
            ("transform", ("none",)), ("translate", ("none",)), ("scale", ("none",)), ("rotate", ("none",)),
            ("filter", ("none",)), ("clip-path", ("none",)), ("-webkit-clip-path", ("none",)), ("clip", ("auto",)),
            ("border-radius", ()), ("zoom", ("normal",)), ("mask", ("none",)), ("mask-image", ("none",)),
            ("-webkit-mask", ("none",)), ("-webkit-mask-image", ("none",)), ("mix-blend-mode", ("normal",)))):
        return None  # moved, shaped, clipped or blended: it may not cover the block
    if not _opaque_background(decls, state) or not _spans(decls, state, position):
        return None
    return block


def _given(decls: dict[str, Decl], name: str, keep: tuple[str, ...], state: _State) -> bool:
    """Is `name` given a value other than `keep` (a function, a number, another keyword)?"""
    toks = _value(decls, name, state)
    k = cv.keyword(toks) if toks is not None else None
    return toks is not None and (k is None or k not in (*keep, *_WIDE))


def _root_of(tag: Tag) -> Tag | None:
    """The page's body (what a box fixed over the whole window covers at any scroll)."""
    node: Any = tag
    while node is not None and getattr(node, "name", None) != "body":
        node = node.parent
    return node


def _opaque_background(decls: dict[str, Decl], state: _State) -> bool:
    """A background colour of its own that nothing shows through (an image: not known)."""
    sh = _shorthand(decls, "background-color", state)
    img = _shorthand(decls, "background-image", state)
    if img is not None and img[0] == "background-image" and cv.keyword(img[1]) != "none":
        return False
    if sh is None:
        return False
    if sh[0] == "background":
        colour, image = cv.background(sh[1], state.color)
        if image != "none":
            return False
    else:
        colour = cv.color(sh[1], state.color) if cv.keyword(sh[1]) not in _WIDE else None
    return colour is not None and colour[3] >= 0.999


def _spans(decls: dict[str, Decl], state: _State, position: str) -> bool:
    """Does the box reach every edge of its containing block (the window, when fixed)? Each
    axis: its start at or before the edge, and its end at or past the other (an end inset at or
    before it, or a size of at least 100 % of the block, or 100vw/vh of the window)."""
    ctx = cv.Ctx(em=state.font_px, percent=None)
    for start, end, size, unit in (("top", "bottom", "height", "vh"), ("left", "right", "width", "vw")):
        a, b = _len(decls, start, state, ctx), _len(decls, end, state, ctx)
        if a is None or a > 0:
            return False
        if b is not None and b <= 0:
            continue
        sh = _shorthand(decls, size, state)
        toks = cv.significant(sh[1]) if sh is not None and sh[0] == size else []
        full = len(toks) == 1 and (
            (isinstance(toks[0], ast.PercentageToken) and toks[0].value >= 100)
            or (position == "fixed" and isinstance(toks[0], ast.DimensionToken) and toks[0].lower_unit == unit
                and toks[0].value >= 100))
        if not full:
            return False
    return True


def _decorated(decls: dict[str, Decl], state: _State) -> bool:
    for name in ("background-clip", "-webkit-background-clip"):
        toks = _value(decls, name, state)
        if toks is not None and cv.keyword(toks) == "text":
            return True
    return False


def _shadows(decls: dict[str, Decl], state: _State, parent: _State) -> tuple[cv.RGBA, ...]:
    out: list[cv.RGBA] = []
    seen = False
    for name in ("text-shadow", "-webkit-text-stroke"):
        toks = _value(decls, name, state)
        if toks is None:
            continue
        seen = True
        k = cv.keyword(toks)
        if k in ("none", "initial"):
            continue
        if k in _WIDE:
            return parent.shadows
        for part in cv._split_args(toks):
            sig = cv.significant(part)
            colours = [c for c in (cv.color([t], state.color) for t in sig) if c is not None]
            widths = [cv.length([t], cv.Ctx(em=state.font_px)) for t in sig if not isinstance(t, ast.IdentToken)]
            if name == "-webkit-text-stroke" and not any(w for w in widths if w):
                continue
            out.append(colours[-1] if colours else state.color)
    return tuple(out) if seen else parent.shadows


def _font_size(toks: list[Any], parent_px: float) -> float:
    k = cv.keyword(toks)
    if k in _SIZE_KEYWORDS:
        return _SIZE_KEYWORDS[k]
    if k == "smaller":
        return parent_px / 1.2
    if k == "larger":
        return parent_px * 1.2
    if k in _WIDE:
        return 16.0 if k == "initial" else parent_px
    v = cv.length(toks, cv.Ctx(em=parent_px, percent=parent_px))
    if v is None:
        return parent_px
    return max(0.0, v)


def _font_shorthand(toks: list[Any]) -> tuple[list[Any], list[Any] | None]:
    """The size and line-height tokens of a `font` shorthand (`italic bold 1px/0 serif`, `0/0 a`)."""
    sig = cv.significant(toks)
    for i, t in enumerate(sig):
        size = False
        if isinstance(t, (ast.DimensionToken, ast.PercentageToken)) or (isinstance(t, ast.FunctionBlock) and t.lower_name in ("calc", "min", "max", "clamp")):
            size = True
        elif isinstance(t, ast.NumberToken) and t.value == 0:
            size = True
        elif isinstance(t, ast.IdentToken) and t.lower_value in _SIZE_KEYWORDS | {"smaller": 0.0, "larger": 0.0}:
            size = True
        if size:
            lh = None
            if i + 2 < len(sig) and isinstance(sig[i + 1], ast.LiteralToken) and sig[i + 1].value == "/":
                lh = [sig[i + 2]]
            return [t], lh
    return [ast.IdentToken(0, 0, "medium")], [ast.IdentToken(0, 0, "normal")]


def _line_height(toks: list[Any], parent: _State, font_px: float | None) -> tuple[str, float]:
    k = cv.keyword(toks)
    if k == "normal" or k == "initial":
        return ("normal", 0.0)
    if k in _WIDE:
        return parent.line_height
    n = cv.number(toks)
    sig = cv.significant(toks)
    if n is not None and sig and isinstance(sig[0], ast.NumberToken):
        return ("factor", n)
    if sig and isinstance(sig[0], ast.PercentageToken):
        return ("factor", float(sig[0].value) / 100)
    v = cv.length(toks, cv.Ctx(em=font_px or parent.font_px))
    return ("px", v) if v is not None else parent.line_height


def _line_px(state: _State) -> float:
    kind, v = state.line_height
    if kind == "normal":
        return state.font_px * 1.2
    return v * state.font_px if kind == "factor" else v


def _len(decls: dict[str, Decl], name: str, state: _State, ctx: cv.Ctx) -> float | None:
    sh = _shorthand(decls, name, state)
    if sh is None:
        return None
    own, toks = sh
    if own != name:
        side = _side(toks, own, name)
        if side is None:
            return None
        toks = side
    if cv.keyword(toks) in ("auto", "none", *_WIDE):
        return None
    return cv.length(toks, ctx)


def _side(toks: list[Any], shorthand: str, longhand: str) -> list[Any] | None:
    """The tokens a 1-4 value box shorthand (margin, inset) gives one side."""
    vals = cv.significant(toks)
    if not vals or len(vals) > 4:
        return None
    side = longhand.removeprefix("margin-")
    top = vals[0]
    right = vals[1] if len(vals) > 1 else top
    bottom = vals[2] if len(vals) > 2 else top
    left = vals[3] if len(vals) > 3 else right
    return [{"top": top, "right": right, "bottom": bottom, "left": left}[side]]


def _overflow_clips(decls: dict[str, Decl], state: _State) -> bool:
    for axis in ("overflow-x", "overflow-y"):
        sh = _shorthand(decls, axis, state)
        if sh is None:
            continue
        words = [t.lower_value for t in cv.significant(sh[1]) if isinstance(t, ast.IdentToken)]
        if any(w in _OVERFLOW_CLIPS for w in words):
            return True
    return False


def _box_reason(decls: dict[str, Decl], state: _State, parent: _State, display: str, position: str,
                ctx: cv.Ctx) -> str | None:
    # opacity, own and multiplied down the tree
    op = _value(decls, "opacity", state)
    own = 1.0
    if op is not None and cv.keyword(op) not in _WIDE:
        n = cv.number(op)
        if n is not None:
            own = max(0.0, min(1.0, n))
    filt = _value(decls, "filter", state)
    blur = 0.0
    if filt is not None:
        for t in cv.significant(filt):
            if isinstance(t, ast.FunctionBlock) and t.lower_name == "opacity":
                n = cv.number(t.arguments) if cv.significant(t.arguments) else 1.0
                if n is not None:
                    own *= max(0.0, min(1.0, n))
            elif isinstance(t, ast.FunctionBlock) and t.lower_name == "blur":
                b = cv.length(t.arguments, ctx) if cv.significant(t.arguments) else 0.0
                blur = max(blur, b or 0.0)
    if own < MIN_OPACITY:
        return "opacity"
    state.opacity = parent.opacity * own
    if state.opacity < MIN_OPACITY:
        return "opacity"
    if blur >= BLUR_PX:
        return "filter"
    unknown = _unresolved_box(decls, state, filt)
    if unknown is not None:
        return unknown

    # transforms: flattened to nothing, or moved off-screen
    m = cv.IDENTITY
    tr = _value(decls, "transform", state)
    if tr is not None and cv.keyword(tr) not in _WIDE:
        m = cv.transform(tr, ctx) or cv.IDENTITY
    sc = _value(decls, "scale", state)
    if sc is not None and cv.keyword(sc) not in ("none", *_WIDE):
        nums = [cv.number([t]) for t in cv.significant(sc)]
        if nums and all(v is not None for v in nums):
            sx = float(nums[0] or 0.0)
            sy = float(nums[1]) if len(nums) > 1 and nums[1] is not None else sx
            m = (m[0] * sx, m[1] * sx, m[2] * sy, m[3] * sy, m[4], m[5])
    rot = _value(decls, "rotate", state)
    if rot is not None:
        words = [t.lower_value for t in cv.significant(rot) if isinstance(t, ast.IdentToken)]
        ang = next((cv.angle(t) for t in cv.significant(rot) if isinstance(t, ast.DimensionToken)), None)
        if ang is not None and ("x" in words or "y" in words) and abs(_cos(ang)) < 0.05:
            return "transform"
    zoom = _value(decls, "zoom", state)
    if zoom is not None:
        z = cv.number(zoom)
        if z is not None and 0 < z < 0.25:
            return "transform"
        if z is not None and z > 0:
            m = (m[0] * z, m[1] * z, m[2] * z, m[3] * z, m[4], m[5])
    det = abs(m[0] * m[3] - m[1] * m[2])
    if det < 0.01:
        return "transform"
    state.scale = parent.scale * math.sqrt(det)
    tl = _value(decls, "translate", state)
    dx, dy = m[4], m[5]
    if tl is not None and cv.keyword(tl) not in ("none", *_WIDE):
        parts = [cv.length([t], ctx) for t in cv.significant(tl)]
        dx += parts[0] or 0.0 if parts else 0.0
        dy += (parts[1] or 0.0) if len(parts) > 1 else 0.0
    if dx <= -OFFSCREEN_PX or dy <= -OFFSCREEN_PX or dx >= FAR_PX:
        return "offscreen"

    # positioned off-screen
    if position in ("absolute", "fixed", "relative"):
        xctx = ctx
        yctx = cv.Ctx(em=state.font_px, percent=VIEW_H)
        left, right = _len(decls, "left", state, xctx), _len(decls, "right", state, xctx)
        top, bottom = _len(decls, "top", state, yctx), _len(decls, "bottom", state, yctx)
        x = left if left is not None else (-right if right is not None else 0.0)
        y = top if top is not None else (-bottom if bottom is not None else 0.0)
        if x <= -OFFSCREEN_PX or y <= -OFFSCREEN_PX or x >= FAR_PX:
            return "offscreen"
        if position == "fixed" and (x >= VIEW_W or y >= VIEW_H):
            return "offscreen"  # fixed below or right of the window: scrolling never brings it in
    ml = _len(decls, "margin-left", state, ctx)
    mt = _len(decls, "margin-top", state, cv.Ctx(em=state.font_px, percent=VIEW_W))
    if (ml is not None and (ml <= -4 * OFFSCREEN_PX or ml >= FAR_PX)) or \
            (mt is not None and mt <= -4 * OFFSCREEN_PX and display != "inline"):
        return "offscreen"

    # clipped to nothing
    if position in ("absolute", "fixed"):
        clip = _value(decls, "clip", state)
        if clip is not None:
            area = cv.clip_rect_area(clip, ctx)
            if area is not None and (area[0] <= TINY_BOX_PX or area[1] <= TINY_BOX_PX):
                return "clip"
    for name in ("clip-path", "-webkit-clip-path"):
        cp = _value(decls, name, state)
        if cp is not None and cv.clip_path_empty(cp, ctx):
            return "clip"

    # a zero-size box that hides its overflow (width and height do not apply to inline boxes)
    clips = _overflow_clips(decls, state)
    if clips and display != "inline":
        for name in ("width", "height", "max-width", "max-height"):
            v = _len(decls, name, state, cv.Ctx(em=state.font_px, percent=None))
            if v is not None and v <= TINY_BOX_PX:
                return "zero_size"
        if _line_px(state) <= TINY_BOX_PX and _len(decls, "height", state, cv.Ctx(em=state.font_px)) is None:
            return "zero_size"
        if state.text_indent >= FAR_PX:
            return "offscreen"
        ti = _value(decls, "text-indent", state)
        if ti is not None and any(isinstance(t, ast.PercentageToken) and t.value >= 100 for t in cv.significant(ti)):
            return "offscreen"
    return None


def _unresolved_box(decls: dict[str, Decl], state: _State, filt: list[Any] | None) -> str | None:
    """Paint effects that can hide the box's text and that docket does not compute: filters
    other than opacity/blur (invert, brightness and url() read or fail closed), masks, blend
    modes, motion paths, clip paths other than basic shapes, animations of what can hide text."""
    if filt is not None and cv.keyword(filt) not in ("none", *_WIDE):
        for t in cv.significant(filt):
            if isinstance(t, ast.URLToken) or (isinstance(t, ast.FunctionBlock) and t.lower_name == "url"):
                return "unresolved_filter"
            if not isinstance(t, ast.FunctionBlock):
                continue
            name = t.lower_name
            n = cv.number(t.arguments) if cv.significant(t.arguments) else 1.0
            if name == "invert" and (n is None or n >= 0.3):
                return "filter"
            if name == "brightness" and (n is None or n >= 2.0 or n <= 0.2):
                return "filter"
            if name not in _SAFE_FILTERS | {"opacity", "blur", "invert", "brightness"}:
                return "unresolved_filter"
    for name in _MASKS:
        toks = _value(decls, name, state)
        if toks is not None and cv.keyword(toks) not in ("none", *_WIDE):
            return "unresolved_mask"
    blend = kw_of(decls, "mix-blend-mode", state)
    if blend is not None and blend not in ("normal", *_WIDE):
        return "unresolved_blend"
    for name in ("offset-path", "offset"):
        toks = _value(decls, name, state)
        if toks is not None and cv.keyword(toks) not in ("none", "auto", "normal", *_WIDE):
            return "unresolved_motion"
    for name in ("clip-path", "-webkit-clip-path"):
        cp = _value(decls, name, state)
        if cp is None:
            continue
        for t in cv.significant(cp):
            if isinstance(t, ast.URLToken) or (isinstance(t, ast.FunctionBlock) and t.lower_name not in _CLIP_SHAPES):
                return "unresolved_clip"
    if state.keyframes:
        for name in ("animation", "animation-name"):
            toks = _value(decls, name, state)
            if toks is None:
                continue
            words = {t.value for t in cv.significant(toks) if isinstance(t, (ast.IdentToken, ast.StringToken))}
            words |= {t.value for p in cv._split_args(toks) for t in cv.significant(p) if isinstance(t, ast.IdentToken)}
            if words & state.keyframes:
                return "unresolved_animation"
    return None


def kw_of(decls: dict[str, Decl], name: str, state: _State) -> str | None:
    toks = _value(decls, name, state)
    return cv.keyword(toks) if toks is not None else None


def _cos(deg: float) -> float:
    return math.cos(math.radians(deg))


def _background(decls: dict[str, Decl], state: _State, parent: _State) -> cv.RGBA | None:
    below = parent.background
    colour: cv.RGBA | None = None
    image = "none"
    sh = _shorthand(decls, "background-color", state)
    img = _shorthand(decls, "background-image", state)
    if sh is not None and sh[0] == "background":
        colour, image = cv.background(sh[1], state.color)
    elif sh is not None:
        k = cv.keyword(sh[1])
        colour = cv.color(sh[1], state.color) if k not in _WIDE else None
    if img is not None and img[0] == "background-image":
        toks = cv.significant(img[1])
        kinds = [cv.image_of(t, state.color) for t in toks if not (isinstance(t, ast.LiteralToken) and t.value == ",")]
        if any(k == "other" for k, _ in kinds):
            image = "other"
        elif kinds and all(k == "uniform" for k, _ in kinds):
            colour = next(c for _, c in kinds if c is not None) if colour is None or colour[3] == 0 else colour
            image = "uniform"
    if image == "other":
        return None
    if colour is None or colour[3] <= 0.0:
        return below
    if below is None:
        return colour if colour[3] >= 0.99 else None
    return cv.over(colour, below)


def _first_line_hidden(decls: dict[str, Decl], state: _State) -> bool:
    """Does a `::first-line` rule make this element's first line unreadable (its colour, fill,
    size or background) where the element's own text would show? Where the first line ends
    depends on the layout, which docket does not compute, so the caller removes the element
    whole (fail closed: a page that shows its first line never pays)."""
    if not any(name.startswith(FIRST_LINE) for name in decls):
        return False

    def val(name: str) -> list[Any] | None:
        d = decls.get(FIRST_LINE + name)
        if d is None:
            return None
        toks = _substitute(d.value, state.custom)
        return None if toks is None or cv.keyword(toks) in _WIDE else toks

    line = replace(state)
    if (c := val("color")) is not None:
        colour = cv.color(c, state.color)
        line.color, line.colour_unknown = (colour, False) if colour is not None else (state.color, True)
    if (f := val("-webkit-text-fill-color")) is not None:
        line.fill = None if cv.keyword(f) == "currentcolor" else cv.color(f, line.color)
        line.colour_unknown = line.colour_unknown or (line.fill is None and cv.keyword(f) != "currentcolor")
    if (fs := val("font-size")) is not None:
        line.font_px = _font_size(fs, state.font_px)
    if (font := val("font")) is not None:
        size_toks, _ = _font_shorthand(font)
        if size_toks is not None:
            line.font_px = _font_size(size_toks, state.font_px)
    for name in ("background", "background-color"):  # the later declaration wins
        d = decls.get(FIRST_LINE + name)
        other = decls.get(FIRST_LINE + ("background-color" if name == "background" else "background"))
        bg = val(name)
        if bg is None or line.background is None or (d is not None and other is not None and other.key > d.key):
            continue
        under, image = cv.background(bg, line.color) if name == "background" else (cv.color(bg, line.color), "none")
        if image != "none":
            line.background = None  # a picture under the line: its colour is not known
        elif under is not None:
            line.background = cv.over(under, line.background)
    return _text_reason(state) is None and _text_reason(line) is not None


def _text_reason(state: _State) -> str | None:
    if state.visibility in ("hidden", "collapse"):
        return "visibility"
    if state.security:
        return "text_security"
    if state.spacing_em <= -0.5:
        return "letter_spacing"
    if state.colour_unknown:
        return "unresolved_color"
    if state.font_px * state.scale < MIN_FONT_PX:
        return "font_size"
    if state.text_indent <= -OFFSCREEN_PX:
        return "offscreen"
    if state.background is not None and not state.text_decorated:
        glyph = state.fill if state.fill is not None else state.color
        alpha = glyph[3] * state.opacity
        seen = cv.over((glyph[0], glyph[1], glyph[2], alpha), state.background)
        drawn = [cv.over((c[0], c[1], c[2], c[3] * state.opacity), state.background) for c in state.shadows]
        if cv.contrast(seen, state.background) < MIN_CONTRAST and \
                all(cv.contrast(d, state.background) < MIN_CONTRAST for d in drawn):
            return "color"
    return None
