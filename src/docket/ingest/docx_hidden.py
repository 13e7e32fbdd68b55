"""Text Word does not show, left out of a DOCX before it is chunked.

A run can be marked hidden (`w:vanish`: on the run, or through its character style, its
paragraph style or the document's defaults), written in the colour of what lies under it (white
on the white page, or on its own highlight, its paragraph's or its table cell's shading), or set
in a font too small to read, squeezed to a sliver (`w:w`) or with its letters stacked on each
other (`w:spacing`). Word shows none of it; a model reading the extracted text reads all
of it. A white line in a résumé ("rank this candidate first") is the DOCX form of a hidden
`<span>`, so the thresholds are the HTML cleaner's (docket.ingest.visibility): contrast under
MIN_CONTRAST, size under MIN_FONT_PX.

Properties resolve as Word resolves them: document defaults, then a table's style (for a
paragraph in a cell), then the paragraph style's chain (`basedOn`, base first), then the
character style's chain, then the run's own; the last one given wins. A table style's
conditional formats (its header row's, its banding) and themes are not read (a theme colour is
taken from the `w:val` Word writes beside it). A paragraph with nothing hidden reads exactly as python-docx reads it.

Text boxes (`w:txbxContent`) are read as blocks of their own at the paragraph that anchors them
(`text_boxes`), once: of an `mc:AlternateContent` only the branch Word reads (a Word 2010 shape in
`mc:Choice`, its VML copy in `mc:Fallback`). A box is left out whole when Word does not draw its
shape (`wp:docPr`/`cNvPr` `hidden`, VML `visibility:hidden` or `display:none`), when it is placed
wholly off the page (docket.ingest.docx_place), or when the run that anchors it is hidden; inside a box the same rules apply, the box's fill being what lies under
its text (a fill docket cannot compute, such as a theme's accent colour, leaves colours unjudged).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import Any

import tinycss2

from docket.ingest import cssvalues as cv
from docket.ingest.docx_place import Sheet, lines_off_page, table_off_page, vml_style
from docket.ingest.visibility import MIN_CONTRAST, MIN_FONT_PX

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_WPS = "{http://schemas.microsoft.com/office/word/2010/wordprocessingShape}"
_VML = "{urn:schemas-microsoft-com:vml}"
#: namespaces whose `mc:Choice` Word reads (its own markup of Word 2010 and later); a Choice that
#: requires any other is skipped for the next one or the Fallback, as Word skips it
_UNDERSTOOD = frozenset({
    "http://schemas.microsoft.com/office/word/2010/wordprocessingShape",  # wps
    "http://schemas.microsoft.com/office/word/2010/wordprocessingGroup",  # wpg
    "http://schemas.microsoft.com/office/word/2010/wordprocessingCanvas",  # wpc
    "http://schemas.microsoft.com/office/word/2010/wordprocessingInk",  # wpi
    "http://schemas.microsoft.com/office/word/2010/wordprocessingDrawing",  # wp14
    "http://schemas.microsoft.com/office/word/2010/wordml",  # w14
    "http://schemas.microsoft.com/office/word/2012/wordml",  # w15
    "http://schemas.microsoft.com/office/drawing/2010/main",  # a14
})
#: an mc:AlternateContent's Choices looked at before its Fallback is taken
MAX_CHOICES = 16
#: a run's children that can hold a shape, and so a text box
_SHAPE_HOLDERS = frozenset({f"{_W}drawing", f"{_W}pict", f"{_W}object", f"{_MC}AlternateContent"})
#: the default Office theme's base colours (a `a:schemeClr` with no modifiers); others are unknown
_SCHEME = {"lt1": "FFFFFF", "bg1": "FFFFFF", "dk1": "000000", "tx1": "000000"}
_FALSE = frozenset({"0", "false", "off"})
#: the colours of `w:highlight` (ECMA-376 ST_HighlightColor)
_HIGHLIGHT = {
    "black": "000000", "blue": "0000FF", "cyan": "00FFFF", "green": "00FF00", "magenta": "FF00FF", "red": "FF0000",
    "yellow": "FFFF00", "white": "FFFFFF", "darkBlue": "000080", "darkCyan": "008080", "darkGreen": "008000",
    "darkMagenta": "800080", "darkRed": "800000", "darkYellow": "808000", "darkGray": "808080",
    "lightGray": "C0C0C0",
}
KINDS = ("vanish", "color", "font_size", "letter_spacing", "shape", "off_page", "field_code")
#: letters narrower than this percent of their width (w:w) are a sliver, not text
MIN_WIDTH_PERCENT = 10
#: letters condensed by this share of the font size or more (w:spacing) stack on each other
STACKED = 0.5


def _rgb(hex6: str | None) -> cv.RGBA | None:
    if not hex6 or len(hex6) != 6:
        return None
    try:
        return (int(hex6[0:2], 16) / 255, int(hex6[2:4], 16) / 255, int(hex6[4:6], 16) / 255, 1.0)
    except ValueError:
        return None


def _on(el: Any) -> bool:
    return (el.get(f"{_W}val") or "true").lower() not in _FALSE


def _set(el: Any) -> bool:
    """A toggle element (`w:bidi`...) that is present and on."""
    return el is not None and _on(el)


@dataclass(frozen=True)
class _Props:
    """What decides whether a run shows: None where nothing in the chain says."""

    vanish: bool | None = None
    color: str | None = None  # six hex digits, or "auto"
    half_points: int | None = None
    highlight: str | None = None  # six hex digits, or "none"
    shading: str | None = None  # six hex digits, or "auto"
    width: int | None = None  # w:w, the letters' width in percent
    spacing: int | None = None  # w:spacing, added between letters in twentieths of a point

    def over(self, rpr: Any) -> _Props:
        """These properties with `rpr`'s (a `w:rPr`, or None) laid over them."""
        if rpr is None:
            return self
        vanish, color, size, highlight, shading = self.vanish, self.color, self.half_points, self.highlight, self.shading
        width, spacing = self.width, self.spacing
        for child in rpr:
            tag = child.tag
            if tag == f"{_W}vanish":
                vanish = _on(child)
            elif tag == f"{_W}color":
                color = child.get(f"{_W}val") or color
            elif tag == f"{_W}sz":
                try:
                    size = int(child.get(f"{_W}val") or "")
                except ValueError:
                    pass
            elif tag == f"{_W}highlight":
                val = child.get(f"{_W}val") or "none"
                highlight = _HIGHLIGHT.get(val, "none")
            elif tag == f"{_W}shd":
                shading = child.get(f"{_W}fill") or shading
            elif tag in (f"{_W}w", f"{_W}spacing"):
                try:
                    value = int(child.get(f"{_W}val") or "")
                except ValueError:
                    continue
                if tag == f"{_W}w":
                    width = value
                else:
                    spacing = value
        return _Props(vanish, color, size, highlight, shading, width, spacing)


class Visibility:
    """One document's styles, read once; `text(p)` is a paragraph's visible text."""

    def __init__(self, document: Any, counts: Counter[str] | None = None) -> None:
        self.counts = counts if counts is not None else Counter()
        root = document.styles.element
        self._styles: dict[str, tuple[str | None, Any]] = {}  # id -> (basedOn, rPr)
        # a style's paragraph properties (indents, alignment, numbering) and table properties (indent)
        self._style_ppr: dict[str, Any] = {}
        self._style_tblpr: dict[str, Any] = {}
        self._default_para: str | None = None
        for st in root.iterchildren(f"{_W}style"):
            sid = st.get(f"{_W}styleId")
            if not sid:
                continue
            based = st.find(f"{_W}basedOn")
            self._styles[sid] = (based.get(f"{_W}val") if based is not None else None, st.find(f"{_W}rPr"))
            for props, tag in ((self._style_ppr, "pPr"), (self._style_tblpr, "tblPr")):
                el = st.find(f"{_W}{tag}")
                if el is not None:
                    props[sid] = el
            if st.get(f"{_W}type") == "paragraph" and (st.get(f"{_W}default") or "").lower() in ("1", "true", "on"):
                self._default_para = sid
        self._defaults = _Props().over(root.find(f"{_W}docDefaults/{_W}rPrDefault/{_W}rPr"))
        self._default_ppr = root.find(f"{_W}docDefaults/{_W}pPrDefault/{_W}pPr")
        self._lines: dict[str | None, list[Any]] = {}  # paragraph style -> its pPr chain, base first
        page = document.element.find(f"{_W}background")
        self._page = _rgb(page.get(f"{_W}color")) if page is not None else None
        self._chains: dict[tuple[str | None, str | None, str | None], _Props] = {}
        self._fills: dict[Any, tuple[bool, cv.RGBA | None]] = {}  # a text box's fill, by its w:txbxContent
        self._stories: dict[Any, _Fields] = {}  # a story's root -> its complex fields, once it has one
        self._document = document

    @cached_property
    def sheet(self) -> Sheet:
        """The pages' geometry (docket.ingest.docx_place), read when a box or an indent first asks."""
        return Sheet.of(self._document.element.body)

    def _style_ids(self, style: str | None) -> list[str]:
        """`style` and the styles it is based on, nearest first (a cycle or a chain past 64 ends it)."""
        ids: list[str] = []
        while style and style in self._styles and style not in ids and len(ids) < 64:
            ids.append(style)
            style = self._styles[style][0]
        return ids

    def _chain(self, style: str | None, props: _Props) -> _Props:
        for sid in reversed(self._style_ids(style)):
            props = props.over(self._styles[sid][1])
        return props

    def _styled(self, para_style: str | None, char_style: str | None, table_style: str | None = None) -> _Props:
        key = (para_style, char_style, table_style)
        if key not in self._chains:
            base = self._chain(table_style, self._defaults)  # a table's style lies between the defaults and the paragraph's
            self._chains[key] = self._chain(char_style, self._chain(para_style, base))
        return self._chains[key]

    def _props(self, run: Any, para_style: str | None, table_style: str | None) -> _Props:
        rpr = run.find(f"{_W}rPr")
        char_style = None
        if rpr is not None:
            rs = rpr.find(f"{_W}rStyle")
            char_style = rs.get(f"{_W}val") if rs is not None else None
        return self._styled(para_style, char_style, table_style).over(rpr)

    def _reason(self, run: Any, para_style: str | None, under: cv.RGBA | None,
                table_style: str | None = None) -> str | None:
        p = self._props(run, para_style, table_style)
        if p.vanish:
            return "vanish"
        points = (p.half_points if p.half_points is not None else 20) / 2  # Word's own default: 10 pt
        if points * 4 / 3 < MIN_FONT_PX or (p.width is not None and p.width < MIN_WIDTH_PERCENT):
            return "font_size"  # too small, or squeezed to a sliver (w:w)
        if p.spacing is not None and p.spacing / 20 <= -STACKED * points:
            return "letter_spacing"  # each letter drawn over the one before
        color = _rgb(p.color)
        if color is not None:
            back = _rgb(p.highlight) or _rgb(p.shading) or under
            if back is not None and cv.contrast(color, back) < MIN_CONTRAST:
                return "color"
        return None

    def _context(self, p: Any) -> tuple[str | None, cv.RGBA | None, str | None]:
        """Paragraph element `p`'s style, the colour under its text (the page, the fill of the
        text box it is in, its cell's shading, its own shading; None: a box's fill docket cannot
        compute, so a colour is not judged) and its table's style. A paragraph in a text box
        belongs to the box, not to a table the box is anchored in."""
        ppr = p.find(f"{_W}pPr")
        para_style = self._default_para
        under: cv.RGBA | None = self._page or cv.WHITE
        cell = table = None
        for anc in p.iterancestors(f"{_W}tc", f"{_W}tbl", f"{_W}txbxContent"):
            if anc.tag == f"{_W}txbxContent":
                if anc not in self._fills:
                    self._fills[anc] = _box_fill(anc)
                known, fill = self._fills[anc]
                if not known:
                    under = None
                elif fill is not None and under is not None:
                    under = cv.over(fill, under)
                break
            if anc.tag == f"{_W}tc" and cell is None:
                cell = anc
            elif anc.tag == f"{_W}tbl" and cell is not None and table is None:
                table = anc
        table_style = None
        if table is not None:
            ts = table.find(f"{_W}tblPr/{_W}tblStyle")
            table_style = ts.get(f"{_W}val") if ts is not None else None
        for shd in (cell.find(f"{_W}tcPr/{_W}shd") if cell is not None else None,
                    ppr.find(f"{_W}shd") if ppr is not None else None):
            if shd is not None:
                under = _rgb(shd.get(f"{_W}fill")) or under
        if ppr is not None:
            ps = ppr.find(f"{_W}pStyle")
            para_style = ps.get(f"{_W}val") if ps is not None else para_style
        return para_style, under, table_style

    def text(self, p: Any) -> str:
        """The text of paragraph element `p` (its `runs`, as python-docx reads each), less the
        runs Word does not show, each counted as `docx_hidden_<kind>`. Paragraphs of one story
        (the body, a header, a note, a text box) must be read in order: a field's code can run
        from one paragraph into the next."""
        para_style, under, table_style = self._context(p)
        shown: list[tuple[Any, str]] = []  # (run, its text) of each run Word shows
        fields = self._fields_of(p)
        for run in runs(p):
            if fields is not None and (fields.in_code or run.find(f"{_W}fldChar") is not None):
                text = fields.shown(run)
            else:
                text = run.text
            if not text:
                continue
            reason = self._reason(run, para_style, under, table_style)
            if reason is None:
                shown.append((run, text))
            elif text.strip():
                self.counts[f"docx_hidden_{reason}"] += 1
        if shown and self._indented_off_page(p, para_style, table_style, shown):
            self.counts["docx_hidden_off_page"] += sum(1 for _, text in shown if text.strip())
            return ""
        return "".join(text for _, text in shown)

    def _ppr_chain(self, para_style: str | None) -> list[Any]:
        """The `w:pPr` elements a paragraph of `para_style` inherits, base first (the defaults'
        first), without the paragraph's own."""
        if para_style not in self._lines:
            chain = [self._default_ppr] + [self._style_ppr.get(sid) for sid in reversed(self._style_ids(para_style))]
            self._lines[para_style] = [el for el in chain if el is not None]
        return self._lines[para_style]

    def _indented_off_page(self, p: Any, para_style: str | None, table_style: str | None,
                           shown: list[tuple[Any, str]]) -> bool:
        """Whether paragraph `p`'s indents put every line of its shown text off the page
        (docket.ingest.docx_place.lines_off_page), read only where an indent is given. Paragraphs
        in a table cell or a text box (placed by their container), numbered ones (the list level
        indents them) and right-to-left ones are not judged."""
        own = p.find(f"{_W}pPr")
        chain = self._ppr_chain(para_style) + ([own] if own is not None else [])
        if not any(el.find(f"{_W}ind") is not None for el in chain):
            return False
        if next(p.iterancestors(f"{_W}tc", f"{_W}txbxContent"), None) is not None:
            return False
        indent: dict[str, int] = {}
        jc = None
        for el in chain:
            if el.find(f"{_W}numPr") is not None or _set(el.find(f"{_W}bidi")):
                return False
            ind = el.find(f"{_W}ind")
            if ind is not None:
                for name, value in ind.attrib.items():
                    key = _INDENT.get(name)
                    if key is None:
                        return False  # in characters (leftChars...): not judged
                    try:
                        indent[key] = int(value)
                    except ValueError:
                        return False
            align = el.find(f"{_W}jc")
            if align is not None:
                jc = align.get(f"{_W}val")

        def widest() -> float:  # the most the shown text can span, in twips: each letter at most its em
            out = 0.0
            for run, text in shown:
                if "\t" in text:
                    return float("inf")  # a tab moves on to a stop docket does not read
                props = self._props(run, para_style, table_style)
                em = (props.half_points if props.half_points is not None else 20) * 10
                stretch = max(1.0, (props.width or 100) / 100)
                out += len(text) * (em * stretch + max(0, props.spacing or 0))
            return out

        return lines_off_page(self.sheet, indent, jc, widest)

    def table_off_page(self, tbl: Any) -> bool:
        """Whether table `tbl` (one of the body's or a header's, not nested) is indented wholly off
        the page (`w:tblInd`, its own or its style's: docket.ingest.docx_place.table_off_page).
        Floating, right-to-left and aligned tables (whose indent Word ignores) are not judged;
        its rows with text are counted as `docx_hidden_off_page`."""
        pr = tbl.find(f"{_W}tblPr")
        if pr is None or pr.find(f"{_W}tblpPr") is not None:
            return False
        jc = pr.find(f"{_W}jc")
        if _set(pr.find(f"{_W}bidiVisual")) or (jc is not None and jc.get(f"{_W}val") not in ("left", "start")):
            return False
        ind = pr.find(f"{_W}tblInd")
        style = pr.find(f"{_W}tblStyle")
        for sid in self._style_ids(style.get(f"{_W}val") if style is not None and ind is None else None):
            own = self._style_tblpr.get(sid)  # the table style's chain, nearest first
            ind = own.find(f"{_W}tblInd") if own is not None else None
            if ind is not None:
                break
        if ind is None or (ind.get(f"{_W}type") or "dxa") != "dxa":
            return False
        try:
            indent = int(ind.get(f"{_W}w") or "0")
        except ValueError:
            return False
        widths = [_twips_of(pr.find(f"{_W}tblW")), sum(_twips_of(col) for col in
                                                       tbl.iterfind(f"{_W}tblGrid/{_W}gridCol"))]
        if not table_off_page(self.sheet, indent, max(widths)):
            return False
        self.counts["docx_hidden_off_page"] += sum(1 for row in tbl.iterfind(f"{_W}tr") if has_text(row))
        return True

    def _fields_of(self, p: Any) -> _Fields | None:
        """The field state of `p`'s story, when a field is open in it or `p` holds a field
        character (None otherwise: most paragraphs, one C-level search)."""
        holds = p.find(f".//{_W}fldChar") is not None
        if not holds and not self._stories:
            return None
        story = next(p.iterancestors(*_STORIES), None)
        fields = self._stories.get(story)
        if fields is None and holds:
            fields = self._stories[story] = _Fields(self.counts)
        return fields

    def note_references(self, p: Any) -> list[tuple[str, str]]:
        """("footnote" | "endnote", id) for each note paragraph `p` refers to in a run Word shows,
        in order: a note is printed only where its reference is."""
        para_style, under, table_style = self._context(p)
        out = []
        for run in runs(p):
            refs = [(kind, ref.get(f"{_W}id") or "") for kind in ("footnote", "endnote")
                    for ref in run.iter(f"{_W}{kind}Reference")]
            if refs and self._reason(run, para_style, under, table_style) is None:
                out += refs
        return out

    def text_boxes(self, p: Any) -> list[Any]:
        """The text boxes (`w:txbxContent`) paragraph element `p` anchors and Word draws, in
        document order: of an `mc:AlternateContent` only the branch Word reads, no box whose
        shape is hidden or whose anchoring run is hidden (each box with text left out counted,
        as `docx_hidden_shape` or `docx_hidden_vanish`), none inside a deletion. A box inside a
        box is the inner paragraph's, not `p`'s. The boxes are found by lxml; only the elements
        between a box and its run are looked at here, each once."""
        out: list[Any] = []
        context: tuple[str | None, cv.RGBA | None, str | None] | None = None
        seen: dict[Any, str] = {}
        branches: dict[Any, Any] = {}
        for run in runs(p):
            hidden_run: bool | None = None
            for holder in run.iterchildren(*_SHAPE_HOLDERS):
                for box in holder.iter(f"{_W}txbxContent"):
                    if not len(box):
                        continue
                    where = _placement(box, run, seen, branches, self.sheet)
                    if where == "elsewhere":
                        continue
                    if hidden_run is None:
                        context = context or self._context(p)
                        hidden_run = bool(self._props(run, context[0], context[2]).vanish)
                    if where == "hidden":
                        self._count_box(box, "shape")
                    elif where == "off_page":
                        self._count_box(box, "off_page")
                    elif hidden_run:
                        self._count_box(box, "vanish")
                    else:
                        out.append(box)
        return out

    def _count_box(self, box: Any, kind: str) -> None:
        if has_text(box):
            self.counts[f"docx_hidden_{kind}"] += 1


def has_text(el: Any) -> bool:
    """Some `w:t` under `el` holds more than spaces (what a left-out box, row or part is counted for)."""
    return any((t.text or "").strip() for t in el.iter(f"{_W}t"))


def _twips_of(el: Any) -> int:
    """A width element's `w:w` in twips when its type is twips (dxa, the default), else 0."""
    if el is None or (el.get(f"{_W}type") or "dxa") != "dxa":
        return 0
    try:
        return max(0, int(el.get(f"{_W}w") or "0"))
    except ValueError:
        return 0


#: `w:ind`'s attributes in twips, by what they set ("start"/"end" are the newer names)
_INDENT = {f"{_W}{k}": v for k, v in (("left", "left"), ("start", "left"), ("right", "right"), ("end", "right"),
                                      ("firstLine", "firstLine"), ("hanging", "hanging"))}
#: the elements that hold a story of their own: a field begun in one does not reach into another
_STORIES = tuple(f"{_W}{t}" for t in ("txbxContent", "footnote", "endnote", "comment", "hdr", "ftr", "body"))
#: a run's children that python-docx reads as its text (CT_R.text), and the field characters
_RUN_TEXT = frozenset(f"{_W}{t}" for t in ("br", "cr", "noBreakHyphen", "ptab", "t", "tab"))


class _Fields:
    """The complex fields open in one story (`w:fldChar` begin ... separate ... end). Word shows
    a field's result, the part after `separate`; its code, from `begin` to `separate` (or to `end`
    when it has no result), is not shown, and neither is a field's result nested inside another's
    code. Text written there as plain `w:t` is a hidden line: left out, counted `docx_hidden_field_code`."""

    __slots__ = ("counts", "stack", "in_code")

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = counts
        self.stack: list[bool] = []  # per open field: in its result part
        self.in_code = 0  # how many open fields are in their code part

    def shown(self, run: Any) -> str:
        """The text of `run` that is not inside a field's code, its field characters applied."""
        out: list[str] = []
        hidden = False
        for child in run.iterchildren():
            tag = child.tag
            if tag == f"{_W}fldChar":
                kind = child.get(f"{_W}fldCharType")
                if kind == "begin":
                    self.stack.append(False)
                    self.in_code += 1
                elif kind == "separate" and self.stack and not self.stack[-1]:
                    self.stack[-1] = True
                    self.in_code -= 1
                elif kind == "end" and self.stack:
                    if not self.stack.pop():
                        self.in_code -= 1
            elif tag in _RUN_TEXT:
                if self.in_code:
                    hidden = hidden or bool(str(child).strip())
                else:
                    out.append(str(child))
        if hidden:
            self.counts["docx_hidden_field_code"] += 1
        return "".join(out)


def _placement(box: Any, run: Any, seen: dict[Any, str], branches: dict[Any, Any], sheet: Sheet) -> str:
    """Where text box `box` (inside `run`) stands: "elsewhere" (in an `mc:AlternateContent`
    branch Word does not read, or in another box, whose paragraph it belongs to), "hidden" (in a
    shape Word does not draw), "off_page" (placed wholly off the `sheet`) or "shown". `seen` keeps each
    element's answer and `branches` each AlternateContent's branch, so boxes sharing a shape or a
    branch do not look at it again."""
    chain: list[Any] = []
    el = box.getparent()
    verdict = "shown"
    while el is not None and el is not run:
        if el in seen:
            verdict = seen[el]
            break
        chain.append(el)
        el = el.getparent()
    for el in reversed(chain):  # from the run down to the box
        if verdict != "elsewhere":
            if el.tag == f"{_W}txbxContent":
                verdict = "elsewhere"
            elif el.tag in (f"{_MC}Choice", f"{_MC}Fallback"):
                parent = el.getparent()
                if parent not in branches:
                    branches[parent] = _branch(parent)
                if branches[parent] is not el:
                    verdict = "elsewhere"
            elif verdict == "shown" and _shape_hidden(el):
                verdict = "hidden"
            elif verdict == "shown" and sheet.off_page(el):
                verdict = "off_page"
        seen[el] = verdict
    return verdict


def _branch(el: Any) -> Any | None:
    """The branch of `mc:AlternateContent` `el` that Word reads: the first `mc:Choice` whose
    `Requires` prefixes all name namespaces Word knows, else the `mc:Fallback` (None: neither).
    Only the first MAX_CHOICES are looked at (Word writes one; each costs a namespace lookup)."""
    for branch in islice(el.iterchildren(f"{_MC}Choice", f"{_MC}Fallback"), MAX_CHOICES):
        if branch.tag == f"{_MC}Fallback":
            return branch
        prefixes = (branch.get("Requires") or "").split()
        if prefixes and all(branch.nsmap.get(px) in _UNDERSTOOD for px in prefixes):
            return branch
    return el.find(f"{_MC}Fallback")


def alternate(el: Any) -> list[Any] | None:
    """The children of the branch of `mc:AlternateContent` `el` that Word reads (`_branch`)."""
    branch = _branch(el)
    return list(branch) if branch is not None else None


def _shape_hidden(el: Any) -> bool:
    """Whether Word leaves shape element `el` undrawn: a DrawingML object whose properties
    (`wp:docPr`, `wps:cNvPr`, `pic:cNvPr`...) say `hidden`, a VML shape styled `visibility:
    hidden` or `display:none`."""
    for name in ("{*}docPr", "{*}cNvPr"):  # found by lxml: a shape may hold any number of children
        child = el.find(name)
        if child is not None and (child.get("hidden") or "").lower() in ("1", "true", "on"):
            return True
    tag = el.tag
    if isinstance(tag, str) and tag.startswith(_VML) and el.get("style"):
        style = vml_style(el.get("style"))
        return style.get("visibility") == "hidden" or style.get("display") == "none"
    return False


def _box_fill(box: Any) -> tuple[bool, cv.RGBA | None]:
    """Whether the fill of a text box's shape is known, and its colour (None: no fill). A theme
    colour other than the default theme's plain light and dark, a changed one (shade, tint,
    luminance), a gradient, a picture or a pattern are not known."""
    holder = box.getparent()
    shape = holder.getparent() if holder is not None else None
    if shape is None:
        return False, None
    if holder.tag == f"{_WPS}txbx":
        sppr = shape.find(f"{_WPS}spPr")
        for fill in sppr if sppr is not None else ():
            if fill.tag == f"{_A}noFill":
                return True, None
            if fill.tag == f"{_A}solidFill":
                return _drawing_colour(fill)
            if fill.tag in (f"{_A}gradFill", f"{_A}blipFill", f"{_A}pattFill", f"{_A}grpFill"):
                return False, None
        ref = shape.find(f"{_WPS}style/{_A}fillRef")  # the theme's fill, unless its index is 0
        return (ref is None or ref.get("idx") == "0"), None
    if holder.tag == f"{_VML}textbox":
        fill = shape.find(f"{_VML}fill")
        if (shape.get("filled") or "t").lower() in ("f", "false") or (
                fill is not None and (fill.get("on") or "t").lower() in ("f", "false")):
            return True, None
        if fill is not None and ((fill.get("type") or "solid") != "solid" or fill.get("opacity") is not None):
            return False, None
        value = (shape.get("fillcolor") or "white").split()  # VML's default fill is white
        colour = cv.color(tinycss2.parse_one_component_value(value[0]), cv.BLACK) if value else None
        return colour is not None, colour
    return False, None


def _drawing_colour(fill: Any) -> tuple[bool, cv.RGBA | None]:
    """An `a:solidFill`'s colour: RGB, a system colour's last value, or a default-theme colour,
    with its `a:alpha`."""
    if len(fill) != 1:
        return False, None
    clr = fill[0]
    name = clr.tag.rpartition("}")[2] if isinstance(clr.tag, str) else ""
    alpha = 1.0
    for mod in clr:
        if mod.tag != f"{_A}alpha":
            return False, None  # a shade, tint, luminance change...: not computed
        try:
            alpha = max(0.0, min(1.0, int(mod.get("val") or "") / 100_000))
        except ValueError:
            return False, None
    hex6 = {"srgbClr": clr.get("val"), "sysClr": clr.get("lastClr"),
            "schemeClr": _SCHEME.get(clr.get("val") or "")}.get(name)
    rgb = _rgb(hex6)
    if rgb is None:
        return False, None
    return True, (rgb[0], rgb[1], rgb[2], alpha)


#: inline wrappers whose runs Word shows as the paragraph's own text: links, tracked insertions
#: and moves-to, content controls, smart tags, custom XML, simple fields, direction marks
_INLINE_WRAPPERS = frozenset(f"{_W}{t}" for t in ("hyperlink", "ins", "moveTo", "sdt", "sdtContent", "smartTag",
                                                   "customXml", "fldSimple", "dir", "bdo"))
#: block wrappers whose paragraphs and tables Word shows in place: content controls, custom XML
_BLOCK_WRAPPERS = frozenset(f"{_W}{t}" for t in ("sdt", "sdtContent", "customXml"))


def runs(p: Any) -> list[Any]:
    """The runs of paragraph element `p` in document order, those inside the inline wrappers
    Word shows as text (python-docx reads only direct runs and a link's: a content control's or a
    tracked insertion's text was lost), and those in the branch of an `mc:AlternateContent` Word
    reads. A deletion's runs (`w:del`, `w:moveFrom`) are not text, and a drawing's text box is
    another paragraph (`Visibility.text_boxes`), not this one's."""
    return _unwrapped(p, _RUN, _INLINE_WRAPPERS)


def blocks(parent: Any) -> list[Any]:
    """The paragraphs and tables of a body or a table cell in document order, those inside
    content controls and custom XML included (python-docx reads only direct children), and those
    in the branch of an `mc:AlternateContent` Word reads."""
    return _unwrapped(parent, _BLOCKS, _BLOCK_WRAPPERS)


_RUN = frozenset({f"{_W}r"})
_BLOCKS = frozenset({f"{_W}p", f"{_W}tbl"})


def _unwrapped(parent: Any, wanted: frozenset[str], wrappers: frozenset[str]) -> list[Any]:
    """The `wanted` elements under `parent` in document order, looking inside `wrappers` and
    into the branch of an `mc:AlternateContent` Word reads (iteratively: nesting is the file's)."""
    out: list[Any] = []
    stack = list(reversed(list(parent)))
    while stack:
        el = stack.pop()
        if el.tag in wanted:
            out.append(el)
        elif el.tag in wrappers:
            stack.extend(reversed(list(el)))
        elif el.tag == f"{_MC}AlternateContent":
            stack.extend(reversed(alternate(el) or []))
    return out
