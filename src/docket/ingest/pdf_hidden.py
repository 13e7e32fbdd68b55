"""Text a PDF viewer does not paint, taken out of a page before its text is extracted.

A PDF can show text in the colour of what lies under it (white on the white page, the classic
"ignore all previous instructions" line in a paper or a résumé), in the invisible render modes
(3, 7) away from any image, too small to read, or off the page. A viewer paints none of it; a
text extractor returns all of it. Thresholds are the HTML cleaner's (docket.ingest.visibility):
contrast under MIN_CONTRAST, size under MIN_FONT_PX (3 pt).

The page's content stream is walked once with the graphics state a viewer keeps (the `q`/`Q`
stack, the transformation matrix, fill and stroke colours in the device spaces and by operand
count elsewhere, the text matrix, font size and render mode) and the filled areas painted so far
(rectangles and path bounds with their colour; images and forms as "unknown"). A text-showing
operator whose text would not show keeps its place but loses its text, so what stays is
extracted exactly as before; a page with nothing hidden is not touched. Invisible text over an
image is kept on a page that paints no text: it is a scan's OCR layer, the only text the page
has. On a page that paints text too, it is text hidden behind a picture, and goes.

A clipping path bounds what follows it by its bounds (text wholly outside goes: an empty clip
hides everything); text squeezed to a sliver by `Tz` or the matrix counts as too small.
Forms (XObjects) are walked where they are drawn, with the matrix and the paint under them; a
form drawn twice is one stream, emptied of what is hidden in either drawing; a form nested past
MAX_FORM_DEPTH is not drawn at all (fail closed). Not read: soft masks, blend modes, and
the colour of a pattern or shading (taken as unknown: the text is kept).

Text painted as one thing and read as another goes too ("remapped"): a show in a font whose
/ToUnicode CMap reads some code as letters other than the glyph it draws (docket.ingest.pdf_fonts).

Annotations are drawn after the page's content, as a viewer draws them over it (when the caller
asks for their text): none that its flags hide (Hidden, NoView), whose optional content is off,
whose Rect has no size or lies off the page, nor a /Popup. The rest are walked like forms: the
normal appearance stream (the one /AS names), fitted from its /BBox to the Rect, over the
areas the page painted; without one (or for form fields under /NeedAppearances) the appearance
a viewer would make, the value in /DA's font size and colour over the field's /MK /BG. So text
an appearance hides goes by the same rules, and an opaque box an appearance paints covers the
page text under it. What the walk leaves of a FreeText annotation and a text or choice field
(not a checkbox, a signature or a sticky note, which poppler paints as an icon) is the text read.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from docket.ingest import cssvalues as cv
from docket.ingest.pdf_fonts import Embedded, EmbeddedFonts, Named, named, repair_reading
from docket.ingest.pdf_type3 import Type3, Type3Fonts
from docket.ingest.visibility import MIN_CONTRAST, MIN_FONT_PX, MIN_OPACITY

KINDS = ("color", "opacity", "render_mode", "font_size", "offscreen", "clipped", "covered", "optional_content",
         "too_deep", "annotation", "too_many", "blank_glyphs", "remapped")
MIN_FONT_PT = MIN_FONT_PX * 0.75
Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_SHOW = frozenset({b"Tj", b"TJ", b"'", b'"'})
_FILLS = frozenset({b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"})
_PATH_ENDS = _FILLS | {b"S", b"s", b"n"}
#: text-state operators of one operand: the state field each sets, and the operand's type
_TEXT_STATE: dict[bytes, tuple[str, type]] = {b"Tc": ("char_spacing", float), b"Tw": ("word_spacing", float),
                                              b"Ts": ("rise", float), b"Tr": ("render_mode", int),
                                              b"Tz": ("hscale", float), b"TL": ("leading", float)}
#: a region whose colour is not known (an image, a form, a pattern): text over it is kept
UNKNOWN = None


def _mul(m: Matrix, n: Matrix) -> Matrix:
    a1, b1, c1, d1, e1, f1 = m
    a2, b2, c2, d2, e2, f2 = n
    return (a1 * a2 + b1 * c2, a1 * b2 + b1 * d2, c1 * a2 + d1 * c2, c1 * b2 + d1 * d2,
            e1 * a2 + f1 * c2 + e2, e1 * b2 + f1 * d2 + f2)


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    return (x * m[0] + y * m[2] + m[4], x * m[1] + y * m[3] + m[5])


def _colour(values: list[float]) -> cv.RGBA | None:
    """A colour from its operands by count (gray, RGB, CMYK); None when it is not one of those."""
    try:
        v = [min(max(float(x), 0.0), 1.0) for x in values]
    except (TypeError, ValueError):
        return None
    if len(v) == 1:
        return (v[0], v[0], v[0], 1.0)
    if len(v) == 3:
        return (v[0], v[1], v[2], 1.0)
    if len(v) == 4:
        c, m, y, k = v
        return ((1 - c) * (1 - k), (1 - m) * (1 - k), (1 - y) * (1 - k), 1.0)
    return None


@dataclass(frozen=True)
class _State:
    ctm: Matrix = IDENTITY
    fill: cv.RGBA | None = cv.BLACK
    stroke: cv.RGBA | None = cv.BLACK
    render_mode: int = 0
    font_size: float = 0.0
    leading: float = 0.0
    hscale: float = 100.0  # Tz, percent
    clip: tuple[float, float, float, float] | None = None  # the clipping path's bounds, device space
    clip_exact: bool = True  # the clip (if any) is exactly its bounds: only axis-aligned rectangles made it
    char_spacing: float = 0.0  # Tc
    word_spacing: float = 0.0  # Tw
    rise: float = 0.0  # Ts
    fill_alpha: float = 1.0  # the graphics state's /ca (set by `gs`)
    stroke_alpha: float = 1.0  # /CA
    plain_paint: bool = True  # normal blend mode and no soft mask: what is painted covers what lies under it
    #: the current font, when docket reads its glyphs: a Type 3 font (docket.ingest.pdf_type3) or
    #: one with an embedded program (docket.ingest.pdf_fonts)
    glyphs: Type3 | Embedded | None = None
    #: the current font, when docket knows both what its glyphs are and what an extractor reads
    #: for them (an embedded program's, or a simple font's encoding names under a /ToUnicode CMap)
    remap: Embedded | Named | None = None
    #: the font an extractor reads the text with (the last `Tf`'s) and the one a viewer paints it
    #: in: another when a graphics state's /Font (set by `gs`) changed it, which pypdf ignores
    read_font: Any = None
    paint_font: Any = None


@dataclass
class _Stream:
    """One content stream walked: its operators (emptied in place) and how to write them back."""

    ops: list[Any]
    write: Any  # () -> None
    changed: bool = False


@dataclass
class _Page:
    """What the walks of one page share: its streams (the page's, each form's, once), the
    invisible text over images met anywhere, and whether any text is painted."""

    streams: dict[Any, _Stream] = field(default_factory=dict)
    ocr: list[tuple[_Stream, int]] = field(default_factory=list)
    painted: bool = False
    shown: _Shown | None = None  # text painted so far, for what a later opaque shape covers
    layers: _Layers | None = None  # which optional content is off (the document's default view)
    fonts: DocumentFonts = field(default_factory=lambda: DocumentFonts())  # the document's (one per page if not given)


@dataclass
class DocumentFonts:
    """The fonts of one document whose glyphs docket reads, each read once for all its pages: a
    reader of the document makes one and hands it to every page's walk."""

    type3: Type3Fonts = field(default_factory=Type3Fonts)
    embedded: EmbeddedFonts = field(default_factory=EmbeddedFonts)
    named: dict[Any, Named | None] = field(default_factory=dict)
    #: fonts whose reading was repaired (or found sound), by key: codes pypdf reads as nothing of
    #: their glyph read as the glyph the font names (pdf_fonts.repair_reading), once a font
    repaired: dict[Any, int] = field(default_factory=dict)

    def of(self, key: Any, font: Any) -> Type3 | Embedded | None:
        """The reading of font dictionary `font` (known in the document as `key`): a Type 3
        font's, or an embedded program's; None for any other font."""
        return self.type3.of(key, font) or self.embedded.of(key, font)

    def remap(self, key: Any, font: Any, glyphs: Type3 | Embedded | None) -> Embedded | Named | None:
        """What tells, for font `font` (read as `glyphs`), whether its text reads as the glyphs it
        paints: its embedded program's reading, or for a simple font with no program but a
        /ToUnicode CMap, its encoding's names (a Type 3 font's glyph names say nothing)."""
        if isinstance(glyphs, Embedded):
            return glyphs
        if glyphs is not None:
            return None
        if key not in self.named:
            self.named[key] = named(font)
        return self.named[key]


Box = tuple[float, float, float, float]


def _bounds(points: list[tuple[float, float]]) -> Box:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return (min(xs), min(ys), max(xs), max(ys))


class _Grid:
    """Boxes (device space) clipped to `bounds` and indexed by a grid of CELL-point squares, so
    a look-up reads the boxes of the cells it touches, not every box of the page (a page of
    thousands of table cells and words was quadratic)."""

    CELL = 32.0

    def __init__(self, bounds: Box) -> None:
        self.bounds = bounds
        self.grid: dict[tuple[int, int], list[int]] = {}

    def clipped(self, box: Box) -> Box | None:
        lo_x, lo_y, hi_x, hi_y = self.bounds
        x0, y0, x1, y1 = max(box[0], lo_x), max(box[1], lo_y), min(box[2], hi_x), min(box[3], hi_y)
        return None if x1 < x0 or y1 < y0 else (x0, y0, x1, y1)

    def cells(self, box: Box) -> list[tuple[int, int]]:
        c = self.CELL
        return [(cx, cy) for cx in range(math.floor(box[0] / c), math.floor(box[2] / c) + 1)
                for cy in range(math.floor(box[1] / c), math.floor(box[3] / c) + 1)]

    def index(self, k: int, box: Box) -> None:
        for cell in self.cells(box):
            self.grid.setdefault(cell, []).append(k)


class _Areas(_Grid):
    """The filled areas painted so far with their colour or UNKNOWN, clipped to the page (with a
    margin: text beyond it is off the page anyway)."""

    def __init__(self, box: Box) -> None:
        margin = 2 * self.CELL
        super().__init__((box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin))
        self.boxes: list[tuple[float, float, float, float, cv.RGBA | None]] = []

    def add(self, points: list[tuple[float, float]], colour: cv.RGBA | None) -> None:
        box = self.clipped(_bounds(points))
        if box is None:
            return  # wholly off the page: under no text that could show
        self.index(len(self.boxes), box)
        self.boxes.append((*box, colour))

    def under(self, x: float, y: float) -> cv.RGBA | None:
        """The colour last painted at (x, y): the page's white where nothing was. A point beyond
        the margin reads at the nearest point within it (text starting off the page shows, if at
        all, from the page's edge on)."""
        lo_x, lo_y, hi_x, hi_y = self.bounds
        x, y = min(max(x, lo_x), hi_x), min(max(y, lo_y), hi_y)
        for k in reversed(self.grid.get((math.floor(x / self.CELL), math.floor(y / self.CELL)), ())):
            x0, y0, x1, y1, colour = self.boxes[k]
            if x0 <= x <= x1 and y0 <= y <= y1:
                return colour
        return cv.WHITE


class _Shown(_Grid):
    """The text painted so far on a page (each show's bounds, on the page, and where its operator
    is), so an opaque shape painted later finds the text it covers without a scan of every show."""

    def __init__(self, box: Box) -> None:
        super().__init__(box)
        self.items: list[tuple[float, float, float, float, _Stream, int]] = []
        self.gone: set[int] = set()

    def add(self, bounds: Box, rec: _Stream, i: int) -> None:
        box = self.clipped(bounds)
        if box is None:
            return
        self.index(len(self.items), box)
        self.items.append((*box, rec, i))

    def covered(self, box: Box) -> list[tuple[_Stream, int]]:
        """The shows wholly inside `box` (an opaque rectangle painted now), each given once."""
        x0, y0, x1, y1 = box
        out = []
        on_page = self.clipped(box)
        for cell in self.cells(on_page) if on_page is not None else ():
            for k in self.grid.get(cell, ()):
                a0, b0, a1, b1, rec, i = self.items[k]
                if k not in self.gone and x0 <= a0 and y0 <= b0 and a1 <= x1 and b1 <= y1:
                    self.gone.add(k)
                    out.append((rec, i))
        return out


class _Layers:
    """Which optional content (layers: OCGs, and membership dictionaries over them) the
    document's default view shows, from the catalog's /OCProperties /D: every group on unless
    /BaseState says off, then the /ON and /OFF lists. Anything unreadable counts as shown (a
    viewer that cannot read it shows it too)."""

    def __init__(self, reader: Any) -> None:
        self.base_on, self.on, self.off = True, set(), set()
        try:
            d = reader.trailer["/Root"]["/OCProperties"]["/D"]
        except (KeyError, TypeError, AttributeError):
            return
        try:
            self.base_on = d.get("/BaseState", "/ON") != "/OFF"
            self.on = {_key(x) for x in d.get("/ON", [])}
            self.off = {_key(x) for x in d.get("/OFF", [])}
        except (TypeError, AttributeError):
            self.base_on, self.on, self.off = True, set(), set()

    def shows(self, obj: Any, depth: int = 0) -> bool:
        """Whether content marked with `obj` (an OCG or an OCMD dictionary) is shown."""
        try:
            obj = obj.get_object()
            if not hasattr(obj, "get") or depth > 16:
                return True
            if obj.get("/Type") == "/OCMD":
                if "/VE" in obj:
                    return self._expression(obj["/VE"], depth + 1)
                groups = obj.get("/OCGs")
                if groups is None:
                    return True
                groups = groups.get_object()
                states = [self._group(g) for g in (groups if isinstance(groups, list) else [groups])]
                if not states:
                    return True
                policy = obj.get("/P", "/AnyOn")
                return {"/AllOn": all(states), "/AnyOff": not all(states),
                        "/AllOff": not any(states)}.get(policy, any(states))
            return self._group(obj)
        except (KeyError, TypeError, AttributeError, ValueError):
            return True

    def _group(self, ocg: Any) -> bool:
        k = _key(ocg)
        return k in self.on if not self.base_on else k not in self.off

    def _expression(self, ve: Any, depth: int) -> bool:
        ve = ve.get_object()
        if not isinstance(ve, list):
            return self.shows(ve, depth)
        if not ve or depth > 16:
            return True
        op, args = ve[0], [self._expression(a, depth + 1) for a in ve[1:]]
        if op == "/Not":
            return not args[0] if args else True
        if op == "/And":
            return all(args)
        return any(args) if args else True


def _key(obj: Any) -> Any:
    """An object's identity across look-ups: its indirect reference, else the object itself."""
    ref = getattr(obj, "indirect_reference", None)
    if ref is None and hasattr(obj, "idnum"):
        ref = obj
    if ref is not None:
        return (ref.idnum, ref.generation)
    return id(obj.get_object()) if hasattr(obj, "get_object") else id(obj)


@dataclass
class _Walk:
    """The walk over one content stream: state, text matrices, the current path's corners, and
    the filled areas painted so far (device space, with their colour or UNKNOWN)."""

    box: tuple[float, float, float, float]
    state: _State = field(default_factory=_State)
    stack: list[_State] = field(default_factory=list)
    tm: Matrix = IDENTITY
    tlm: Matrix = IDENTITY
    path: list[tuple[float, float]] = field(default_factory=list)
    areas: _Areas | None = None  # the page's, shared with the forms it draws (made from `box` when None)
    resources: Any = None  # the stream's /Resources (a form's own, else its page's)
    reader: Any = None
    depth: int = 0  # forms inside forms
    page: _Page = field(default_factory=_Page)
    clipping: bool = False  # a W or W* waits for its path's end
    rects: int = 0  # how many `re` the current path holds; -1 once it holds anything else
    marked: list[bool] = field(default_factory=list)  # marked-content nesting: True where optional content is off
    off: bool = False  # drawn inside optional content that is off (a form's drawing)
    advance: float = 0.0  # the most the text shown since the last positioning can have moved (text space)


    def __post_init__(self) -> None:
        if self.areas is None:
            self.areas = _Areas(self.box)

    def area(self, points: list[tuple[float, float]], colour: cv.RGBA | None) -> None:
        assert self.areas is not None
        self.areas.add(points, colour)

    def under(self, x: float, y: float) -> cv.RGBA | None:
        assert self.areas is not None
        return self.areas.under(x, y)

    def reason(self, text_len: int, codes: bytes = b"") -> str | None:
        """Why the text shown now (`codes`: its character codes) would not be painted, or would be
        read as other text than is painted ("remapped"), or None."""
        why = self.unpainted(text_len, codes)
        s = self.state
        if why is None and (s.paint_font != s.read_font or (s.remap is not None and s.remap.remapped(codes))):
            return "remapped"
        return why

    def unpainted(self, text_len: int, codes: bytes = b"") -> str | None:
        """Why the text shown now (`codes`: its character codes) would not be painted, or None."""
        s = self.state
        if self.hidden():
            return "optional_content"
        if s.glyphs is not None and s.glyphs.all_blank(codes):
            return "blank_glyphs"
        trm = _mul(self.tm, s.ctm)
        x, y = trm[4], trm[5]
        glyph_x, glyph_y = s.glyphs.scale if s.glyphs is not None else (1.0, 1.0)
        size = abs(s.font_size) * math.hypot(trm[2], trm[3]) * glyph_y
        back = self.under(x, y)
        if s.render_mode in (3, 7):  # neither filled nor stroked: over a scan, maybe its OCR layer (see below)
            return "ocr" if back is UNKNOWN else "render_mode"
        if size < MIN_FONT_PT or size * abs(s.hscale) / 100 * math.hypot(trm[0], trm[1]) * glyph_x / max(
                math.hypot(trm[2], trm[3]) * glyph_y, 1e-9) < MIN_FONT_PT / 4:
            return "font_size"  # too small, or squeezed to a sliver by Tz or the matrix
        if s.clip is not None:
            x0, y0, x1, y1 = s.clip
            if x1 <= x0 or y1 <= y0 or not (x0 - text_len * size <= x <= x1 and y0 - size <= y <= y1 + size):
                return "clipped"
        left, bottom, right, top = self.box
        width = text_len * size
        if y < bottom - size or y > top + size or x > right or x + width < left:
            return "offscreen"
        shown: list[tuple[cv.RGBA | None, float]] = []
        if s.render_mode in (0, 2, 4, 6):
            shown.append((s.fill, s.fill_alpha))
        if s.render_mode in (1, 2, 5, 6):
            shown.append((s.stroke, s.stroke_alpha))
        if all(alpha < MIN_OPACITY for _, alpha in shown):
            return "opacity"  # transparent paint: nothing shows over anything
        if back is UNKNOWN:
            return None
        if all(c is not None and cv.contrast(cv.over((*c[:3], alpha), back), back) < MIN_CONTRAST
               for c, alpha in shown):
            opaque = all(c is not None and cv.contrast(c, back) < MIN_CONTRAST for c, _ in shown)
            return "color" if opaque else "opacity"
        return None

    def hidden(self) -> bool:
        """Inside optional content the document's default view turns off."""
        return self.off or any(self.marked)

    def text_box(self, operator: bytes, operands: list[Any], n: int) -> tuple[float, float, float, float]:
        """Device-space bounds that hold the text shown now wherever its glyphs fall: each glyph
        taken as at most an em wide plus the spacing, from the furthest the earlier text of this
        line can have moved it; kerning that moves back widens it leftwards."""
        s = self.state
        size, th = abs(s.font_size), s.hscale / 100
        back = 0.0
        if operator == b"TJ":
            for x in operands[0] if operands else []:
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    back += max(float(x), 0.0) / 1000 * size * th
        step = (size + abs(s.char_spacing) + abs(s.word_spacing)) * th
        left, right = -back - n * max(-s.char_spacing, 0.0) * th, self.advance + n * step
        self.advance += n * step
        low, high = s.rise - 0.35 * size, s.rise + 1.1 * size
        trm = _mul(self.tm, s.ctm)
        return _bounds([_apply(trm, x, y) for x in (left, right) for y in (low, high)])


def _within(clip: Box | None, path: list[tuple[float, float]]) -> Box:
    """The clip's bounds intersected with the path's (an empty path clips everything away)."""
    if not path:
        return (0.0, 0.0, 0.0, 0.0)
    box = _bounds(path)
    if clip is None:
        return box
    return (max(box[0], clip[0]), max(box[1], clip[1]), min(box[2], clip[2]), min(box[3], clip[3]))


def _strings(operator: bytes, operands: list[Any]) -> list[bytes | str]:
    """The strings a show operator paints (TJ's, between its kerning numbers; the others' last operand)."""
    if operator == b"TJ":
        return [x for x in operands[0] if isinstance(x, (bytes, str))] if operands else []
    last = operands[-1] if operands else b""
    return [last] if isinstance(last, (bytes, str)) else []


def _text_len(operator: bytes, operands: list[Any]) -> int:
    return sum(map(len, _strings(operator, operands)))


def _codes(operator: bytes, operands: list[Any]) -> bytes:
    """The character codes a show operator paints (each string's bytes as written, TJ's strings
    joined: a string pypdf decoded as text keeps its original bytes)."""
    return b"".join(x if isinstance(x, bytes) else getattr(x, "original_bytes", None) or x.encode("latin-1", "replace")
                    for x in _strings(operator, operands))


_Fonted = tuple[Type3 | Embedded | None, Embedded | Named | None, Any]


def _font(walk: _Walk, name: Any) -> _Fonted:
    """The glyph reading of font resource `name` of the stream walked (a Type 3 font's or an
    embedded program's; None for another kind), its remap reading (DocumentFonts.remap) and its
    key (None where there is no such font), read once a document (`walk.page.fonts`)."""
    try:
        ref = walk.resources["/Font"].raw_get(name) if walk.resources is not None else None
    except Exception:  # noqa: BLE001 - no such font: the viewer draws with a default one
        return None, None, None
    return _font_of(walk, ref) if ref is not None else (None, None, None)


def _font_of(walk: _Walk, ref: Any) -> _Fonted:
    """`_font` for a font dictionary (or a reference to one)."""
    fonts, key = walk.page.fonts, _key(ref)
    glyphs = fonts.of(key, ref)
    remap = fonts.remap(key, ref, glyphs)
    if key not in fonts.repaired:  # after the readings above, which read the font as it came
        fonts.repaired[key] = repair_reading(ref, glyphs if isinstance(glyphs, Embedded) else None)
    return glyphs, remap, key


def _emptied(operator: bytes, operands: list[Any]) -> list[Any]:
    """The operands with their text taken out: the operator still moves the line as before."""
    from pypdf.generic import ArrayObject, ByteStringObject

    if operator == b"TJ":
        return [ArrayObject()]
    return [*operands[:-1], ByteStringObject(b"")]


#: annotations drawn on one page, and in one file, at most; those after are neither drawn nor
#: read (each costs about 2 ms, and one /Annots array can be shared by every page of a file)
MAX_ANNOTATIONS = 1000
MAX_FILE_ANNOTATIONS = 5000


def strip_hidden_text(page: Any, reader: Any, counts: Counter[str] | None = None,
                      annotations: list[str] | None = None, max_annotations: int = MAX_ANNOTATIONS,
                      fonts: DocumentFonts | None = None) -> int:
    """Empty, in `page`'s content (in memory), every text-showing operator whose text a viewer
    would not paint, in the page's stream and in the forms it draws (each form once, whatever it
    is drawn over); returns how many, each counted in `counts` as `pdf_hidden_<kind>`.

    With `annotations` (a list), the page's annotations are drawn too, over its content as a
    viewer draws them (an opaque box in one covers the page text under it), and the text each
    shown FreeText annotation and filled text or choice field paints is appended to the list;
    past `max_annotations` they are neither drawn nor read (counted as `pdf_hidden_too_many`).
    `fonts`: the document's Type 3 and embedded fonts, read once for all its pages (a new one when
    not given)."""
    from pypdf.generic import ContentStream, NameObject

    counts = counts if counts is not None else Counter()
    contents = page.get_contents()
    if contents is None and (annotations is None or "/Annots" not in page):
        return 0
    # strings as bytes, as pypdf's own extraction parses a page: the stream written back is
    # extracted from as it stands, and a string pypdf had decoded (PDFDocEncoding) would be read
    # as that text, not through its font (a TeX font's fi at code 2 as "\x02", WinAnsi's ’ as ™)
    stream = ContentStream(contents, reader, "bytes")  # a page of annotations only: no operators
    box = page.cropbox
    res = page.get("/Resources")
    walk = _Walk(box=(float(box.left), float(box.bottom), float(box.right), float(box.top)),
                 resources=res.get_object() if res is not None else None, reader=reader)

    def write_page() -> None:  # the page in memory only (pypdf's replace_contents is for a writer's pages)
        stream.operations = top.ops
        page[NameObject("/Contents")] = stream

    top = _Stream(stream.operations, write_page)
    walk.page.streams["page"] = top
    walk.page.shown = _Shown(walk.box)
    walk.page.layers = _Layers(reader)
    if fonts is not None:
        walk.page.fonts = fonts
    removed = _run(walk, top, counts)
    body_painted, body_ocr = walk.page.painted, len(walk.page.ocr)
    drawn: list[_Painted] = []
    if annotations is not None:
        annots = _annots(page)
        if len(annots) > max_annotations:
            counts["pdf_hidden_too_many"] += len(annots) - max(max_annotations, 0)
            annots = annots[:max(max_annotations, 0)]
        for annot in annots:
            try:
                removed += _annotation(walk, annot, counts, drawn)
            except (ValueError, TypeError, IndexError, OverflowError, KeyError, AttributeError):
                continue  # an annotation a viewer could not draw either: its text is not read
    # invisible text over an image is a scan's OCR layer only on a page that paints no text of its
    # own (text an annotation paints, a filled field on a scanned form, does not count); beside
    # painted text it is text hidden behind a picture, and goes too, as does any in an annotation
    ocr = walk.page.ocr if body_painted else walk.page.ocr[body_ocr:]
    if ocr:
        for rec, i in ocr:
            operands, operator = rec.ops[i]
            rec.ops[i] = (_emptied(operator, operands), operator)
            rec.changed = True
            counts["pdf_hidden_render_mode"] += 1
        removed += len(ocr)
    for rec in walk.page.streams.values():
        if rec.changed:
            rec.write()
    if annotations is not None:
        for painted in drawn:
            try:
                text = " ".join(painted.text(reader).split())
            except (ValueError, TypeError, IndexError, KeyError, AttributeError):
                continue  # an appearance pypdf cannot extract from: its text is not read
            if text:
                annotations.append(f"{painted.label}{text}")
    return removed


def _run(walk: _Walk, rec: _Stream, counts: Counter[str]) -> int:
    removed = 0
    for i, (operands, operator) in enumerate(rec.ops):
        try:
            n = _step(walk, rec, i, operands, operator, counts)
        except (ValueError, TypeError, IndexError, OverflowError, KeyError, AttributeError):
            continue  # an operator with operands a viewer would reject too: it draws nothing, nor changes state
        if n:
            rec.changed = True
            removed += n
    return removed


#: a form drawn inside forms this deep is not drawn at all (its text, and its forms', goes): the
#: walk does not follow it, so neither may the extraction (fail closed; a loop of forms ends here)
MAX_FORM_DEPTH = 8


def _form(walk: _Walk, name: Any, counts: Counter[str]) -> str:
    """Walk the form XObject `name` as drawn now (the current matrix times its /Matrix, over what
    is painted so far): "form"; "image" when `name` is not a form; "too deep" past MAX_FORM_DEPTH."""
    from pypdf.generic import ContentStream, DecodedStreamObject, NameObject

    xobjects = walk.resources.get("/XObject").get_object()
    xobj = xobjects[name].get_object()
    if xobj.get("/Subtype") != "/Form":
        return "image"
    if walk.depth >= MAX_FORM_DEPTH:
        return "too deep"
    layers = walk.page.layers
    if walk.hidden() or ("/OC" in xobj and layers is not None and not layers.shows(xobj.raw_get("/OC"))):
        return "off"
    key = (id(xobjects), str(name))
    rec = walk.page.streams.get(key)
    if rec is None:
        cs = ContentStream(xobj, walk.reader, "bytes")  # (strings as bytes: see strip_hidden_text)

        def write() -> None:  # a decoded copy of the form with the emptied operators, in memory only
            cs.operations = form.ops
            new = DecodedStreamObject()
            for k, v in xobj.items():
                if k not in ("/Filter", "/DecodeParms", "/Length"):
                    new[NameObject(k)] = v
            new.set_data(cs.get_data())
            xobjects[NameObject(str(name))] = new

        form = rec = _Stream(cs.operations, write)
        walk.page.streams[key] = rec
    m = tuple(float(x) for x in xobj.get("/Matrix", IDENTITY))
    own = xobj.get("/Resources")
    ctm = _mul(m, walk.state.ctm)  # type: ignore[arg-type]
    state = replace(walk.state, ctm=ctm)
    bbox = xobj.get("/BBox")
    if bbox is not None and len(bbox) == 4:  # the form paints nothing outside its box: a clip
        x0, y0, x1, y1 = (float(v) for v in bbox)
        corners = [_apply(ctm, x, y) for x in (x0, x1) for y in (y0, y1)]
        state = replace(state, clip=_within(walk.state.clip, corners),
                        clip_exact=walk.state.clip_exact and _upright(ctm))
    sub = _Walk(box=walk.box, state=state,
                areas=walk.areas, resources=own.get_object() if own is not None else walk.resources,
                reader=walk.reader, depth=walk.depth + 1, page=walk.page)
    if _run(sub, rec, counts):
        rec.changed = True
    # (the areas are the page's, shared: what the form painted lies under what follows)
    return "form"


def _step(walk: _Walk, rec: _Stream, i: int, operands: list[Any], operator: bytes, counts: Counter[str]) -> int:
    """One operator of the walk; 1 when it showed text that is now taken out."""
    s = walk.state
    if operator == b"q":
        walk.stack.append(s)
    elif operator == b"Q":
        walk.state = walk.stack.pop() if walk.stack else _State()
    elif operator == b"cm" and len(operands) == 6:
        walk.state = replace(s, ctm=_mul(tuple(map(float, operands)), s.ctm))  # type: ignore[arg-type]
    elif operator in (b"rg", b"g", b"k", b"sc", b"scn"):
        walk.state = replace(s, fill=_colour(list(operands)))
    elif operator in (b"RG", b"G", b"K", b"SC", b"SCN"):
        walk.state = replace(s, stroke=_colour(list(operands)))
    elif operator == b"cs":
        walk.state = replace(s, fill=cv.BLACK if operands and operands[0] in ("/DeviceGray", "/DeviceRGB",
                                                                                "/DeviceCMYK") else None)
    elif operator == b"CS":
        walk.state = replace(s, stroke=cv.BLACK if operands and operands[0] in ("/DeviceGray", "/DeviceRGB",
                                                                                  "/DeviceCMYK") else None)
    elif operator == b"re" and len(operands) == 4:
        x, y, w, h = map(float, operands)
        walk.path += [_apply(s.ctm, x, y), _apply(s.ctm, x + w, y), _apply(s.ctm, x, y + h),
                      _apply(s.ctm, x + w, y + h)]
        walk.rects = walk.rects + 1 if walk.rects >= 0 and _upright(s.ctm) else -1
    elif operator in (b"m", b"l", b"c", b"v", b"y") and operands and len(operands) % 2 == 0:
        nums = list(map(float, operands))
        walk.path += [_apply(s.ctm, nums[k], nums[k + 1]) for k in range(0, len(nums), 2)]
        walk.rects = -1
    elif operator in (b"W", b"W*"):
        walk.clipping = True  # the path, once ended, bounds what follows (until Q)
    elif operator in _PATH_ENDS:
        path, one_rect = walk.path, walk.rects == 1
        walk.path, walk.rects = [], 0
        if operator in _FILLS and path and not walk.hidden():
            walk.area(path, s.fill)
            if one_rect and s.fill is not None:
                n = _cover(walk, path, counts)
                if n:
                    return n
        if walk.clipping:
            walk.state = replace(s, clip=_within(s.clip, path), clip_exact=s.clip_exact and one_rect)
            walk.clipping = False
    elif operator == b"gs" and operands and walk.resources is not None:
        gs = walk.resources["/ExtGState"][operands[0]]
        walk.state = _graphics_state(s, gs)
        font = gs.get_object().get("/Font")
        if font is not None:  # a font to paint in, which text extractors do not follow: see reason()
            ref, size = font.get_object()
            glyphs, remap, key = _font_of(walk, ref)
            walk.state = replace(walk.state, font_size=float(size), glyphs=glyphs, remap=remap,
                                 paint_font=key if key is not None else ("gs", id(font)))
    elif operator == b"BDC" and len(operands) == 2:
        walk.marked.append(operands[0] == "/OC" and not _layer_shows(walk, operands[1]))
    elif operator == b"BMC":
        walk.marked.append(False)
    elif operator == b"EMC":
        if walk.marked:
            walk.marked.pop()
    elif operator == b"Do" and operands and walk.resources is not None and (
            drawn := _form(walk, operands[0], counts)) != "image":
        if drawn in ("too deep", "off"):
            rec.ops[i] = ([], b"n")  # not drawn: `n` alone ends no path and paints nothing
            counts["pdf_hidden_too_deep" if drawn == "too deep" else "pdf_hidden_optional_content"] += 1
            return 1
    elif operator in (b"Do", b"INLINE IMAGE", b"sh") and not walk.hidden():
        corners = [_apply(s.ctm, 0, 0), _apply(s.ctm, 1, 0), _apply(s.ctm, 0, 1), _apply(s.ctm, 1, 1)]
        if operator == b"sh":  # a shading fills the clip: the page, as far as this walk knows
            corners = [(walk.box[0], walk.box[1]), (walk.box[2], walk.box[3])]
        walk.area(corners, UNKNOWN)
        if operator != b"sh" and _upright(s.ctm) and _opaque_image(walk, operator, operands):
            n = _cover(walk, corners, counts)
            if n:
                return n
    elif operator == b"BT":
        walk.tm = walk.tlm = IDENTITY
        walk.advance = 0.0
    elif operator in _TEXT_STATE and operands:
        name, kind = _TEXT_STATE[operator]
        walk.state = replace(s, **{name: kind(operands[0])})
    elif operator == b"Tf" and len(operands) == 2:
        glyphs, remap, key = _font(walk, operands[0])
        walk.state = replace(s, font_size=float(operands[1]), glyphs=glyphs, remap=remap, read_font=key,
                             paint_font=key)
    elif operator == b"Tm" and len(operands) == 6:
        walk.tm = walk.tlm = tuple(map(float, operands))  # type: ignore[assignment]
        walk.advance = 0.0
    elif operator in (b"Td", b"TD") and len(operands) == 2:
        tx, ty = float(operands[0]), float(operands[1])
        if operator == b"TD":
            walk.state = replace(s, leading=-ty)
        walk.tm = walk.tlm = _mul((1.0, 0.0, 0.0, 1.0, tx, ty), walk.tlm)
        walk.advance = 0.0
    elif operator in (b"T*", b"'", b'"'):
        if operator == b'"' and len(operands) == 3:
            walk.state = replace(s, word_spacing=float(operands[0]), char_spacing=float(operands[1]))
        walk.tm = walk.tlm = _mul((1.0, 0.0, 0.0, 1.0, 0.0, -walk.state.leading), walk.tlm)
        walk.advance = 0.0
    if operator in _SHOW:
        n = _text_len(operator, operands)
        why = walk.reason(n, _codes(operator, operands) if s.glyphs is not None or s.remap is not None
                          else b"") if n else None
        if why == "ocr":
            walk.page.ocr.append((rec, i))
        elif why is None and n:
            walk.page.painted = True
            if walk.page.shown is not None:
                walk.page.shown.add(walk.text_box(operator, operands, n), rec, i)
        elif why is not None:
            rec.ops[i] = (_emptied(operator, operands), operator)
            counts[f"pdf_hidden_{why}"] += 1
            return 1
    return 0


def _upright(m: Matrix) -> bool:
    """The matrix keeps rectangles axis-aligned (no rotation or skew but quarter turns)."""
    return (m[1] == 0 and m[2] == 0) or (m[0] == 0 and m[3] == 0)


def _cover(walk: _Walk, points: list[tuple[float, float]], counts: Counter[str]) -> int:
    """An opaque rectangle painted now, in plain paint: the text painted before that it covers
    whole goes (the classic white box over a line, or an image laid over it). Only where the clip,
    if any, is exactly its bounds; otherwise the paint may fall short of them and nothing goes."""
    s, shown = walk.state, walk.page.shown
    if shown is None or not s.plain_paint or s.fill_alpha < 1.0 or not s.clip_exact:
        return 0
    box = _within(s.clip, points)
    if s.clip is not None and (box[2] <= box[0] or box[3] <= box[1]):
        return 0
    gone = shown.covered(box)
    for rec, i in gone:
        operands, operator = rec.ops[i]
        rec.ops[i] = (_emptied(operator, operands), operator)
        rec.changed = True
        counts["pdf_hidden_covered"] += 1
    return len(gone)


def _opaque_image(walk: _Walk, operator: bytes, operands: list[Any]) -> bool:
    """An image that paints every point of its square: no mask, soft mask (its own, or a JPEG 2000
    alpha channel) or stencil."""
    if operator == b"INLINE IMAGE":
        settings = operands[0] if operands and hasattr(operands[0], "get") else {}
        return not (settings.get("/IM") or settings.get("/ImageMask"))
    image = walk.resources["/XObject"][operands[0]]
    return image.get("/Subtype") == "/Image" and not any(image.get(k) for k in ("/SMask", "/Mask", "/ImageMask",
                                                                               "/SMaskInData"))


def _layer_shows(walk: _Walk, props: Any) -> bool:
    """Whether `/OC props BDC` content shows: `props` names an entry of /Properties (or is the
    dictionary itself)."""
    layers = walk.page.layers
    if layers is None:
        return True
    if not hasattr(props, "get_object") or isinstance(props, str):
        props = walk.resources["/Properties"].raw_get(props) if walk.resources is not None else None
    return props is None or layers.shows(props)


def _graphics_state(s: _State, gs: Any) -> _State:
    """`s` with what a /ExtGState dictionary sets that decides whether paint shows."""
    gs = gs.get_object()
    fill, stroke = gs.get("/ca"), gs.get("/CA")
    blend = gs.get("/BM")
    blend = blend[0] if isinstance(blend, list) and blend else blend
    mask = gs.get("/SMask")
    plain = s.plain_paint
    if blend is not None:
        plain = blend in ("/Normal", "/Compatible")
    if mask is not None:
        plain = plain and mask == "/None"
    return replace(s, fill_alpha=s.fill_alpha if fill is None else min(max(float(fill), 0.0), 1.0),
                   stroke_alpha=s.stroke_alpha if stroke is None else min(max(float(stroke), 0.0), 1.0),
                   plain_paint=plain)


#: annotations not drawn: a /Popup paints nothing on the page, and text markup (a highlight, an
#: underline...) marks the text it lies on, never hides it: a highlight's appearance written
#: without its Multiply blend mode must not count as a box over the highlighted words
_NOT_DRAWN = frozenset({"/Popup", "/Highlight", "/Underline", "/StrikeOut", "/Squiggly"})
#: annotation flags (/F) a viewer draws nothing for: Hidden (bit 2) and NoView (bit 6)
_NOT_SHOWN_FLAGS = 2 | 32
#: a text field's flag (/Ff bit 14) for a password: a viewer shows asterisks, not /V
_PASSWORD = 1 << 13
#: annotations whose text a viewer paints on the page and docket reads: FreeText, and form fields
#: (widgets) of text and choice fields; a sticky note (/Text) paints an icon, a /Popup nothing
_READ = frozenset({"/FreeText", "/Widget"})


def _annots_array(page: Any) -> list[Any]:
    annots = page.get("/Annots")
    annots = annots.get_object() if annots is not None else None
    return annots if isinstance(annots, list) else []


def annotation_count(page: Any) -> int:
    """How many annotations `page` lists (none read)."""
    return len(_annots_array(page))


def _annots(page: Any) -> list[Any]:
    return [a.get_object() for a in _annots_array(page)]


def _lineage(node: Any) -> Iterator[Any]:
    """A widget and the fields above it, up its /Parent chain (32 at most: a loop ends there)."""
    for _ in range(32):
        if node is None:
            return
        yield node
        node = node.get("/Parent")
        node = node.get_object() if node is not None else None


def _inherited(field_: Any, key: str) -> Any:
    """A form field's entry, looked up its /Parent chain (a widget holds its field's entries or
    sits under the field that does)."""
    return next((node[key] for node in _lineage(field_) if key in node), None)


def _field_name(widget: Any) -> str:
    return ".".join(reversed([str(node["/T"]) for node in _lineage(widget) if "/T" in node]))


def _read_field(widget: Any) -> bool:
    """A text or choice field whose value a viewer paints: not a password's (shown as asterisks
    where the viewer makes the appearance; an appearance stream of its own is read as it paints)."""
    kind = _inherited(widget, "/FT")
    return kind == "/Ch" or (kind == "/Tx" and not int(_inherited(widget, "/Ff") or 0) & _PASSWORD)


def _value(annot: Any) -> str:
    """The text the annotation stands for: a FreeText's /Contents, a text or choice field's /V
    (a multiple choice joined with ", "); "" for anything else (a checkbox, a signature)."""
    if annot.get("/Subtype") == "/FreeText":
        return str(annot.get("/Contents") or "")
    if not _read_field(annot):
        return ""
    v = _inherited(annot, "/V")
    if v is None:
        return ""
    v = v.get_object() if hasattr(v, "get_object") else v
    return ", ".join(str(x) for x in v) if isinstance(v, list) else str(v)


def _appearance(annot: Any, reader: Any) -> Any:
    """The annotation's normal appearance stream, the one its /AS names where there are several;
    None when there is none, or when the document asks the viewer to make form fields' own
    (/NeedAppearances)."""
    if annot.get("/Subtype") == "/Widget" and _form_default(reader, "/NeedAppearances"):
        return None
    ap = annot.get("/AP")
    n = ap.get_object().get("/N") if ap is not None else None
    n = n.get_object() if n is not None else None
    if n is None or hasattr(n, "get_data"):
        return n
    state = annot.get("/AS")
    s = n.get(state) if state is not None else None
    return s.get_object() if s is not None else None


@dataclass
class _Painted:
    """An annotation drawn with text to read: from its appearance stream `cs` (as the walk left
    it), or, where the viewer makes the appearance, its `value` if the walk kept the show."""

    label: str
    rec: _Stream
    value: str = ""
    cs: Any = None
    resources: Any = None
    bbox: list[float] = field(default_factory=list)

    def text(self, reader: Any) -> str:
        if self.cs is None:
            return self.value if any(op in _SHOW and _text_len(op, o) for o, op in self.rec.ops) else ""
        return _extract(reader, self.cs, self.resources, self.bbox)


def _annotation(walk: _Walk, annot: Any, counts: Counter[str], drawn: list[_Painted]) -> int:
    """Draw one annotation over the page as a viewer does: nothing when it is hidden (flags, an
    optional content group that is off, a Rect of no size or off the page); else its appearance
    (or, without one, the appearance a viewer would make from /DA), walked like a form. What it
    paints with text to read is added to `drawn`."""
    from pypdf.generic import ContentStream, DecodedStreamObject

    kind = annot.get("/Subtype")
    if kind in _NOT_DRAWN:
        return 0
    value = _value(annot) if kind in _READ else ""
    layers = walk.page.layers
    rect = [float(x) for x in annot["/Rect"]]
    x0, y0, x1, y1 = min(rect[0], rect[2]), min(rect[1], rect[3]), max(rect[0], rect[2]), max(rect[1], rect[3])
    left, bottom, right, top = walk.box
    if (int(annot.get("/F", 0)) & _NOT_SHOWN_FLAGS or x1 - x0 <= 0 or y1 - y0 <= 0
            or x1 <= left or x0 >= right or y1 <= bottom or y0 >= top
            or ("/OC" in annot and layers is not None and not layers.shows(annot.raw_get("/OC")))):
        if value.strip():
            counts["pdf_hidden_annotation"] += 1
            return 1
        return 0
    label = f"Form field {_field_name(annot)}: " if kind == "/Widget" else ""
    reads = kind == "/FreeText" or (kind == "/Widget" and _inherited(annot, "/FT") in ("/Tx", "/Ch"))
    ap = _appearance(annot, walk.reader)
    if ap is not None and "/BBox" in ap:
        bbox = [float(v) for v in ap["/BBox"]]
        m = tuple(float(v) for v in ap.get("/Matrix", IDENTITY))
        res = ap.get("/Resources")
        res = res.get_object() if res is not None else _form_resources(walk.reader)
        cs = ContentStream(ap, walk.reader, "bytes")  # (strings as bytes: see strip_hidden_text)
        rec = _Stream(cs.operations, lambda: None)
        rec.write = lambda: setattr(cs, "operations", rec.ops)
        painted = _Painted(label, rec, cs=cs, resources=res, bbox=bbox)
    elif value.strip():  # the appearance a viewer makes: the value in /DA's font and colour
        bbox, m, res = [0.0, 0.0, x1 - x0, y1 - y0], IDENTITY, None
        da = str(_inherited(annot, "/DA") or _form_default(walk.reader, "/DA") or "0 g /Helv 12 Tf")
        da = re.sub(r"(/\S+)\s+0(?:\.0*)?\s+Tf", r"\1 12 Tf", da)  # size 0: fitted to the box
        bg = annot.get("/MK", {}).get("/BG") if kind == "/Widget" else None
        back = _colour(list(bg)) if bg is not None else None  # a field's background, painted first
        fill = f"{back[0]:.3f} {back[1]:.3f} {back[2]:.3f} rg 0 0 {bbox[2]:.2f} {bbox[3]:.2f} re f " if back else ""
        line = f"1 0 0 1 2 {max(bbox[3] / 2 - 4, 0):.2f} Tm ({'x' * min(len(value), 200)}) Tj"
        data = DecodedStreamObject()
        data.set_data(f"{fill}BT {da} {line} ET".encode("latin-1", "replace"))
        rec = _Stream(ContentStream(data, walk.reader, "bytes").operations, lambda: None)
        painted = _Painted(label, rec, value=value)
    else:
        return 0
    ctm = _fit(m, bbox, (x0, y0, x1, y1))  # type: ignore[arg-type]
    if ctm is None:
        return 0
    corners = [_apply(ctm, x, y) for x in (bbox[0], bbox[2]) for y in (bbox[1], bbox[3])]
    state = _State(ctm=ctm, clip=_within(None, corners), clip_exact=_upright(ctm))
    walk.page.streams[("annot", id(annot))] = rec
    sub = _Walk(box=walk.box, state=state, areas=walk.areas, resources=res, reader=walk.reader, depth=1,
                page=walk.page)
    removed = _run(sub, rec, counts)
    if removed:
        rec.changed = True
    if reads:
        drawn.append(painted)
    return removed


def _fit(m: Matrix, bbox: list[float], rect: tuple[float, float, float, float]) -> Matrix | None:
    """The matrix a viewer draws an appearance with: its /Matrix, then the map of the /BBox so
    transformed onto the annotation's Rect (PDF 32000 12.5.5)."""
    bx0, by0, bx1, by1 = _bounds([_apply(m, x, y) for x in (bbox[0], bbox[2]) for y in (bbox[1], bbox[3])])
    if bx1 - bx0 <= 0 or by1 - by0 <= 0:
        return None
    sx, sy = (rect[2] - rect[0]) / (bx1 - bx0), (rect[3] - rect[1]) / (by1 - by0)
    return _mul(m, (sx, 0.0, 0.0, sy, rect[0] - bx0 * sx, rect[1] - by0 * sy))


def _form_default(reader: Any, key: str) -> Any:
    try:
        return reader.trailer["/Root"]["/AcroForm"].get(key)
    except (KeyError, TypeError, AttributeError):
        return None


def _form_resources(reader: Any) -> Any:
    dr = _form_default(reader, "/DR")
    return dr.get_object() if dr is not None else None


def _extract(reader: Any, cs: Any, resources: Any, bbox: list[float]) -> str:
    """The text an appearance stream paints (after the walk emptied what it hides), extracted as
    a page's is."""
    from pypdf import PageObject
    from pypdf.generic import DictionaryObject, NameObject, RectangleObject

    page = PageObject(reader)
    page[NameObject("/Resources")] = resources if resources is not None else DictionaryObject()
    page[NameObject("/MediaBox")] = RectangleObject(bbox)
    page[NameObject("/Contents")] = cs
    return page.extract_text() or ""
