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
MAX_FORM_DEPTH is not drawn at all (fail closed). Annotations are not extracted, so not walked.
Not read: soft masks, blend modes, and
the colour of a pattern or shading (taken as unknown: the text is kept).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from docket.ingest import cssvalues as cv
from docket.ingest.visibility import MIN_CONTRAST, MIN_FONT_PX

KINDS = ("color", "render_mode", "font_size", "offscreen", "clipped", "too_deep")
MIN_FONT_PT = MIN_FONT_PX * 0.75
Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_SHOW = frozenset({b"Tj", b"TJ", b"'", b'"'})
_FILLS = frozenset({b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"})
_PATH_ENDS = _FILLS | {b"S", b"s", b"n"}
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


class _Areas:
    """The filled areas painted so far (device space) with their colour or UNKNOWN, clipped to the
    page (with a margin: text beyond it is off the page anyway) and indexed by a grid of CELL-point
    squares, so finding what lies under a point reads the areas of its cell, not every area of
    the page (a page of thousands of table cells and words was quadratic)."""

    CELL = 32.0

    def __init__(self, box: tuple[float, float, float, float]) -> None:
        margin = 2 * self.CELL
        self.bounds = (box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin)
        self.boxes: list[tuple[float, float, float, float, cv.RGBA | None]] = []
        self.grid: dict[tuple[int, int], list[int]] = {}

    def add(self, points: list[tuple[float, float]], colour: cv.RGBA | None) -> None:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        lo_x, lo_y, hi_x, hi_y = self.bounds
        x0, y0, x1, y1 = max(min(xs), lo_x), max(min(ys), lo_y), min(max(xs), hi_x), min(max(ys), hi_y)
        if x1 < x0 or y1 < y0:
            return  # wholly off the page: under no text that could show
        k = len(self.boxes)
        self.boxes.append((x0, y0, x1, y1, colour))
        c = self.CELL
        for cx in range(math.floor(x0 / c), math.floor(x1 / c) + 1):
            for cy in range(math.floor(y0 / c), math.floor(y1 / c) + 1):
                self.grid.setdefault((cx, cy), []).append(k)

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


    def __post_init__(self) -> None:
        if self.areas is None:
            self.areas = _Areas(self.box)

    def area(self, points: list[tuple[float, float]], colour: cv.RGBA | None) -> None:
        assert self.areas is not None
        self.areas.add(points, colour)

    def under(self, x: float, y: float) -> cv.RGBA | None:
        assert self.areas is not None
        return self.areas.under(x, y)

    def reason(self, text_len: int) -> str | None:
        """Why the text shown now would not be painted, or None."""
        s = self.state
        trm = _mul(self.tm, s.ctm)
        x, y = trm[4], trm[5]
        size = abs(s.font_size) * math.hypot(trm[2], trm[3])
        back = self.under(x, y)
        if s.render_mode in (3, 7):  # neither filled nor stroked: over a scan, maybe its OCR layer (see below)
            return "ocr" if back is UNKNOWN else "render_mode"
        if size < MIN_FONT_PT or size * abs(s.hscale) / 100 * math.hypot(trm[0], trm[1]) / max(
                math.hypot(trm[2], trm[3]), 1e-9) < MIN_FONT_PT / 4:
            return "font_size"  # too small, or squeezed to a sliver by Tz or the matrix
        if s.clip is not None:
            x0, y0, x1, y1 = s.clip
            if x1 <= x0 or y1 <= y0 or not (x0 - text_len * size <= x <= x1 and y0 - size <= y <= y1 + size):
                return "clipped"
        left, bottom, right, top = self.box
        width = text_len * size
        if y < bottom - size or y > top + size or x > right or x + width < left:
            return "offscreen"
        if back is UNKNOWN:
            return None
        shown = []
        if s.render_mode in (0, 2, 4, 6):
            shown.append(s.fill)
        if s.render_mode in (1, 2, 5, 6):
            shown.append(s.stroke)
        if all(c is not None and cv.contrast(c, back) < MIN_CONTRAST for c in shown):
            return "color"
        return None


def _within(clip: tuple[float, float, float, float] | None,
            path: list[tuple[float, float]]) -> tuple[float, float, float, float] | None:
    """The clip's bounds intersected with the path's (an empty path clips everything away)."""
    if not path:
        return (0.0, 0.0, 0.0, 0.0)
    xs, ys = [p[0] for p in path], [p[1] for p in path]
    box = (min(xs), min(ys), max(xs), max(ys))
    if clip is None:
        return box
    return (max(box[0], clip[0]), max(box[1], clip[1]), min(box[2], clip[2]), min(box[3], clip[3]))


def _text_len(operator: bytes, operands: list[Any]) -> int:
    if operator == b"TJ":
        arr = operands[0] if operands else []
        return sum(len(x) for x in arr if isinstance(x, (bytes, str)))
    last = operands[-1] if operands else b""
    return len(last) if isinstance(last, (bytes, str)) else 0


def _emptied(operator: bytes, operands: list[Any]) -> list[Any]:
    """The operands with their text taken out: the operator still moves the line as before."""
    from pypdf.generic import ArrayObject, ByteStringObject

    if operator == b"TJ":
        return [ArrayObject()]
    return [*operands[:-1], ByteStringObject(b"")]


def strip_hidden_text(page: Any, reader: Any, counts: Counter[str] | None = None) -> int:
    """Empty, in `page`'s content (in memory), every text-showing operator whose text a viewer
    would not paint, in the page's stream and in the forms it draws (each form once, whatever it
    is drawn over); returns how many, each counted in `counts` as `pdf_hidden_<kind>`."""
    from pypdf.generic import ContentStream, NameObject

    counts = counts if counts is not None else Counter()
    contents = page.get_contents()
    if contents is None:
        return 0
    stream = ContentStream(contents, reader)
    box = page.cropbox
    res = page.get("/Resources")
    walk = _Walk(box=(float(box.left), float(box.bottom), float(box.right), float(box.top)),
                 resources=res.get_object() if res is not None else None, reader=reader)

    def write_page() -> None:  # the page in memory only (pypdf's replace_contents is for a writer's pages)
        stream.operations = top.ops
        page[NameObject("/Contents")] = stream

    top = _Stream(stream.operations, write_page)
    walk.page.streams["page"] = top
    removed = _run(walk, top, counts)
    # invisible text over an image is a scan's OCR layer only on a page that paints no text of its
    # own; beside painted text it is text hidden behind a picture, and goes too
    if walk.page.painted:
        for rec, i in walk.page.ocr:
            operands, operator = rec.ops[i]
            rec.ops[i] = (_emptied(operator, operands), operator)
            rec.changed = True
            counts["pdf_hidden_render_mode"] += 1
        removed += len(walk.page.ocr)
    for rec in walk.page.streams.values():
        if rec.changed:
            rec.write()
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
    key = (id(xobjects), str(name))
    rec = walk.page.streams.get(key)
    if rec is None:
        cs = ContentStream(xobj, walk.reader)

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
    sub = _Walk(box=walk.box, state=replace(walk.state, ctm=_mul(m, walk.state.ctm)),  # type: ignore[arg-type]
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
    elif operator in (b"m", b"l", b"c", b"v", b"y") and operands and len(operands) % 2 == 0:
        nums = list(map(float, operands))
        walk.path += [_apply(s.ctm, nums[k], nums[k + 1]) for k in range(0, len(nums), 2)]
    elif operator in (b"W", b"W*"):
        walk.clipping = True  # the path, once ended, bounds what follows (until Q)
    elif operator in _PATH_ENDS:
        if operator in _FILLS and walk.path:
            walk.area(walk.path, s.fill)
        if walk.clipping:
            walk.state = replace(s, clip=_within(s.clip, walk.path))
            walk.clipping = False
        walk.path = []
    elif operator == b"Do" and operands and walk.resources is not None and (
            drawn := _form(walk, operands[0], counts)) != "image":
        if drawn == "too deep":
            rec.ops[i] = ([], b"n")  # not drawn: `n` alone ends no path and paints nothing
            counts["pdf_hidden_too_deep"] += 1
            return 1
    elif operator in (b"Do", b"INLINE IMAGE", b"sh"):
        corners = [_apply(s.ctm, 0, 0), _apply(s.ctm, 1, 0), _apply(s.ctm, 0, 1), _apply(s.ctm, 1, 1)]
        if operator == b"sh":  # a shading fills the clip: the page, as far as this walk knows
            corners = [(walk.box[0], walk.box[1]), (walk.box[2], walk.box[3])]
        walk.area(corners, UNKNOWN)
    elif operator == b"BT":
        walk.tm = walk.tlm = IDENTITY
    elif operator == b"Tf" and len(operands) == 2:
        walk.state = replace(s, font_size=float(operands[1]))
    elif operator == b"Tr" and operands:
        walk.state = replace(s, render_mode=int(operands[0]))
    elif operator == b"Tz" and operands:
        walk.state = replace(s, hscale=float(operands[0]))
    elif operator == b"TL" and operands:
        walk.state = replace(s, leading=float(operands[0]))
    elif operator == b"Tm" and len(operands) == 6:
        walk.tm = walk.tlm = tuple(map(float, operands))  # type: ignore[assignment]
    elif operator in (b"Td", b"TD") and len(operands) == 2:
        tx, ty = float(operands[0]), float(operands[1])
        if operator == b"TD":
            walk.state = replace(s, leading=-ty)
        walk.tm = walk.tlm = _mul((1.0, 0.0, 0.0, 1.0, tx, ty), walk.tlm)
    elif operator in (b"T*", b"'", b'"'):
        walk.tm = walk.tlm = _mul((1.0, 0.0, 0.0, 1.0, 0.0, -walk.state.leading), walk.tlm)
    if operator in _SHOW:
        n = _text_len(operator, operands)
        why = walk.reason(n) if n else None
        if why == "ocr":
            walk.page.ocr.append((rec, i))
        elif why is None and n:
            walk.page.painted = True
        elif why is not None:
            rec.ops[i] = (_emptied(operator, operands), operator)
            counts[f"pdf_hidden_{why}"] += 1
            return 1
    return 0
