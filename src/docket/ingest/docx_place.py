"""Whether a floating shape of a DOCX lies wholly off the page, where Word draws none of it.

A text box floats at an offset from a reference its anchor names: the page, a margin, the
column, the paragraph or line that anchors it. A box placed far enough off the page (a negative
offset from the page's edge, or one past its width or height) is drawn nowhere, so its text is
text no reader sees, like an `<div>` positioned at -9999px. Word and LibreOffice both leave it
unprinted.

Only what is certain is judged. The page is the largest of the document's sections, each
reference that moves with the text (a paragraph, a line, a character, the column) may lie
anywhere its kind can, a rotated box counts as the circle around it, an alignment (`left`,
`center`) or a unit docket does not know leaves the box on the page. A box that may show any part
of itself stays.

DrawingML anchors (`wp:anchor`: `wp:positionH` / `wp:positionV` with `wp:posOffset`, `wp:extent`,
`wp:simplePos`) and top-level VML shapes (`position:absolute` with `margin-left`, `margin-top`,
`width`, `height` and `mso-position-*-relative`) are read; lengths are in EMU (914,400 an inch).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_VML = "{urn:schemas-microsoft-com:vml}"
#: EMU a twip (a twentieth of a point): page sizes and margins are in twips
_TWIP = 635
#: Word's page when a section gives none: the larger of Letter and A4 on each side (twips)
_DEFAULT_PAGE = (12240, 16838)
_DEFAULT_MARGIN = 1440
#: EMU per unit of a VML length
_UNITS = {"pt": 12700, "in": 914400, "cm": 360000, "mm": 36000, "pc": 152400, "px": 9525, "emu": 1}
_LENGTH = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]*)")
#: reading every shape's offsets costs little, but a value this large is a broken file, not a page
_MAX_EMU = 10**12


@dataclass(frozen=True)
class Sheet:
    """The page a shape may land on, in EMU: its size and the range each margin edge can take
    over the document's sections."""

    width: int
    height: int
    left: tuple[int, int]
    right: tuple[int, int]  # the right margin's edge, from the page's left
    top: tuple[int, int]
    bottom: tuple[int, int]  # the bottom margin's edge, from the page's top

    @classmethod
    def of(cls, body: Any) -> Sheet:
        """The sheet of a document body (`w:body`): every section's `w:pgSz` and `w:pgMar`."""
        pages = []  # (width, height, left, right, top, bottom margins), twips
        for sect in body.iter(f"{_W}sectPr"):
            size, mar = sect.find(f"{_W}pgSz"), sect.find(f"{_W}pgMar")
            pages.append((_twips(size, "w", _DEFAULT_PAGE[0]), _twips(size, "h", _DEFAULT_PAGE[1]),
                          *(abs(_twips(mar, side, _DEFAULT_MARGIN)) for side in ("left", "right", "top", "bottom"))))
        if not pages:
            pages = [(*_DEFAULT_PAGE, *(_DEFAULT_MARGIN,) * 4)]
        lefts = [m[2] for m in pages]
        rights = [m[0] - m[3] for m in pages]
        tops = [m[4] for m in pages]
        bottoms = [m[1] - m[5] for m in pages]
        t = _TWIP
        return cls(max(m[0] for m in pages) * t, max(m[1] for m in pages) * t, (min(lefts) * t, max(lefts) * t),
                   (min(rights) * t, max(rights) * t), (min(tops) * t, max(tops) * t),
                   (min(bottoms) * t, max(bottoms) * t))

    def _h_origin(self, rel: str) -> tuple[int, int] | None:
        return {"page": (0, 0), "leftmargin": (0, 0), "left-margin-area": (0, 0),
                "margin": self.left, "rightmargin": self.right, "right-margin-area": self.right,
                "column": (self.left[0], self.right[1]), "character": (self.left[0], self.right[1]),
                "char": (self.left[0], self.right[1]), "text": (self.left[0], self.right[1]),
                "insidemargin": (0, self.right[1]), "outsidemargin": (0, self.right[1]),
                "inner-margin-area": (0, self.right[1]), "outer-margin-area": (0, self.right[1]),
                }.get(rel)

    def _v_origin(self, rel: str) -> tuple[int, int] | None:
        return {"page": (0, 0), "topmargin": (0, 0), "top-margin-area": (0, 0), "margin": self.top,
                "bottommargin": self.bottom, "bottom-margin-area": self.bottom,
                "insidemargin": (0, self.bottom[1]), "outsidemargin": (0, self.bottom[1]),
                "inner-margin-area": (0, self.bottom[1]), "outer-margin-area": (0, self.bottom[1]),
                # a paragraph or line can be anywhere on the page, a header's or a footer's too
                "paragraph": (0, self.height), "line": (0, self.height), "text": (0, self.height),
                }.get(rel)

    def off_page(self, el: Any) -> bool:
        """Whether shape element `el` (a `wp:anchor`, or a VML shape drawn at the top level) is
        certainly placed wholly outside the page."""
        tag = el.tag
        if tag == f"{_WP}anchor":
            return _anchor_off_page(el, self)
        if isinstance(tag, str) and tag.startswith(_VML) and el.getparent() is not None \
                and not el.getparent().tag.startswith(_VML):  # a group's children are in its own coordinates
            box = _vml_box(el, self)
            return box is not None and self._outside(box)
        return False

    def _outside(self, box: Box) -> bool:
        """Certainly off: even with its reference at the most favourable place, no part of the
        box reaches the page on one axis (an axis not known, None, reaches it)."""
        xs, ys, (w, h), spin = box
        grow = (math.hypot(w, h) - min(w, h)) / 2 if spin else 0.0  # rotated: the circle through its corners
        if xs is not None and (xs[1] + w + grow <= 0 or xs[0] - grow >= self.width):
            return True
        return ys is not None and (ys[1] + h + grow <= 0 or ys[0] - grow >= self.height)


#: a shape's left edge and top edge (each the range its reference allows; None: not known), its
#: size and whether it is rotated
Box = tuple[tuple[float, float] | None, tuple[float, float] | None, tuple[float, float], bool]


def vml_style(style: str) -> dict[str, str]:
    """A VML shape's `style` attribute as declarations, names and values lower case, the last one
    of a name winning."""
    out: dict[str, str] = {}
    for decl in style.split(";"):
        name, _, value = decl.partition(":")
        out[name.strip().lower()] = value.strip().lower()
    return out


def _twips(el: Any, attr: str, default: int) -> int:
    if el is None:
        return default
    try:
        return int(float(el.get(f"{_W}{attr}") or default))
    except (ValueError, OverflowError):  # "inf" and "1e999" overflow int(): the default, not a failed file
        return default


def _emu(text: str | None) -> int | None:
    try:
        v = int((text or "").strip())
    except ValueError:
        return None
    return v if abs(v) < _MAX_EMU else None


def _anchor_off_page(anchor: Any, sheet: Sheet) -> bool:
    """Whether a DrawingML anchor lies off the page as its `wp:positionH` and `wp:positionV`
    place it, and, when it asks for `wp:simplePos`, as that places it too: Word and LibreOffice
    differ on that flag, so the box is off the page only when it is off both ways. Not off when
    its size is not a plain number."""
    ext = anchor.find(f"{_WP}extent")
    w, h = (_emu(ext.get("cx")), _emu(ext.get("cy"))) if ext is not None else (None, None)
    if w is None or h is None or w < 0 or h < 0:
        return False
    xfrm = anchor.find(f".//{_A}xfrm")
    spin = xfrm is not None and (xfrm.get("rot") or "0").strip() not in ("0", "")
    placed: Box = (_axis(anchor.find(f"{_WP}positionH"), sheet._h_origin),
                   _axis(anchor.find(f"{_WP}positionV"), sheet._v_origin), (w, h), spin)
    if not sheet._outside(placed):
        return False
    if (anchor.get("simplePos") or "").lower() not in ("1", "true", "on"):
        return True
    pos = anchor.find(f"{_WP}simplePos")
    x, y = (_emu(pos.get("x")), _emu(pos.get("y"))) if pos is not None else (None, None)
    return sheet._outside(((x, x) if x is not None else None, (y, y) if y is not None else None, (w, h), spin))


def _axis(pos: Any, origin: Any) -> tuple[float, float] | None:
    """The range of one edge: the reference's range plus the offset; None for an alignment."""
    if pos is None:
        return None
    start = origin((pos.get("relativeFrom") or "").lower())
    offset = _emu(pos.findtext(f"{_WP}posOffset")) if pos.find(f"{_WP}posOffset") is not None else None
    if start is None or offset is None:
        return None
    return start[0] + offset, start[1] + offset


def _vml_box(shape: Any, sheet: Sheet) -> Box | None:
    """The same of a VML shape from its style: `position:absolute` at `margin-left`/`left` and
    `margin-top`/`top` (summed), from `mso-position-*-relative` (the text, by default)."""
    style = vml_style(shape.get("style") or "")
    if style.get("position") != "absolute":
        return None
    if "width" not in style or "height" not in style:
        return None  # sized by its text: no extent to judge
    w, h = _length(style["width"]), _length(style["height"])
    if w is None or h is None or w < 0 or h < 0:
        return None
    spin = style.get("rotation", "0") not in ("0", "", "0deg")
    xs = ys = None
    if style.get("mso-position-horizontal", "absolute") == "absolute":  # else aligned to its reference
        x, hx = _sum(style.get("margin-left"), style.get("left")), sheet._h_origin(
            style.get("mso-position-horizontal-relative", "text"))
        xs = (hx[0] + x, hx[1] + x) if x is not None and hx is not None else None
    if style.get("mso-position-vertical", "absolute") == "absolute":
        y, vy = _sum(style.get("margin-top"), style.get("top")), sheet._v_origin(
            style.get("mso-position-vertical-relative", "text"))
        ys = (vy[0] + y, vy[1] + y) if y is not None and vy is not None else None
    return xs, ys, (w, h), spin


def _length(text: str | None) -> float | None:
    """A VML length in EMU; None without a unit docket knows (a bare number's unit depends on
    the shape's coordinate space)."""
    if text is None:
        return 0.0
    m = _LENGTH.fullmatch(text.strip())
    if m is not None and float(m.group(1)) == 0:
        return 0.0
    if m is None or m.group(2) not in _UNITS:
        return None
    v = float(m.group(1)) * _UNITS[m.group(2)]
    return v if abs(v) < _MAX_EMU else None


def _sum(a: str | None, b: str | None) -> float | None:
    x, y = _length(a), _length(b)
    return None if x is None or y is None else x + y


def lines_off_page(sheet: Sheet, indent: dict[str, int], jc: str | None, widest: Callable[[], float]) -> bool:
    """Whether a paragraph's lines lie wholly off the page, from its indents (`left`, `right`,
    `firstLine`, `hanging`, in twips, as resolved through its styles), its alignment `jc` and
    `widest()`, the most its text can span (twips; asked only when the first line starts off the
    page). Off when the room its lines are laid out in ends before the page begins, or, for text
    set from the left, when even the widest the text can be ends before the page begins on the
    first line (it then fits on that line: the line runs on past the page's edge, so nothing
    wraps). Lines indented past the page's right edge are not judged: LibreOffice still lays
    them out on the page."""
    t = _TWIP
    left, right = indent.get("left", 0) * t, indent.get("right", 0) * t
    first = (indent.get("firstLine", 0) - indent.get("hanging", 0)) * t
    room_right = sheet.right[1] - right  # the right end of the lines at their rightmost
    if room_right <= 0:  # (lines that begin past the page's right edge are laid out on it: not judged)
        return True
    start = sheet.left[1] + left + first  # the first line's start at its rightmost
    return start < 0 and jc in (None, "left", "start", "both") and start + widest() * t <= 0


def table_off_page(sheet: Sheet, indent: int, width: int) -> bool:
    """Whether a table indented `indent` twips from the left margin lies wholly off the page's
    left edge. Its width is taken as the widest it can be: what it declares (`width`, twips), and
    at least twice the page, since a table that fits its cells to their text may grow past what it
    declares."""
    widest = max(width, 2 * sheet.width // _TWIP)
    return sheet.left[1] + (indent + widest) * _TWIP <= 0
