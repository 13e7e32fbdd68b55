"""Fonts made at test time with fontTools' FontBuilder, whose glyphs for some characters are
empty outlines (no contour, or a charstring that draws nothing), and PDFs that embed them by hand
written objects: a simple TrueType font (/FontFile2), a CFF-based OpenType font (/FontFile3
/OpenType), a bare CFF (/FontFile3 /Type1C), and a composite Type0 font over a CIDFontType2
(Identity-H, /CIDToGIDMap /Identity or a stream). No committed binaries."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

#: every character the test fonts hold, after .notdef; each glyph is 600 units wide
CHARS = " " + "".join(chr(c) for c in range(33, 127))
WIDTH = 600


def _names() -> list[str]:
    from fontTools import agl

    return [".notdef"] + [agl.UV2AGL[ord(c)] for c in CHARS]


def font_program(blank: Iterable[str] = "", kind: str = "ttf", notdef_blank: bool = True,
                 missing: Iterable[str] = "", family: str = "TestBlank",
                 outline_of: dict[str, str] | None = None, extra: Iterable[str] = ()) -> bytes:
    """A font of CHARS (`kind` "ttf": TrueType outlines; "otf": CFF-based OpenType; "cff": the
    bare CFF table) whose glyphs for `blank` (and the space, and .notdef when `notdef_blank`) are
    empty and the rest a filled box (.notdef's 700 units tall, a character's 300 to 660 by its
    code); `missing` characters have no glyph (nor cmap entry) at all. `family`: its name (reportlab
    knows a font by it: two fonts of one name are one to it). `outline_of`: the glyph named (and
    mapped) for a character draws the box of another (a font that lies about its glyphs). `extra`:
    glyphs of these names after CHARS' (drawn, 500 units tall; in no cmap)."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.t2CharStringPen import T2CharStringPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    blank, missing = set(blank) | {" "}, set(missing)
    extra = [n for n in extra if n not in _names()]
    names = [n for n, c in zip(_names(), ["\0", *CHARS], strict=True) if c not in missing] + extra
    empty = {".notdef"} if notdef_blank else set()
    empty |= {n for n, c in zip(_names(), ["\0", *CHARS], strict=True) if c in blank}
    fb = FontBuilder(1000, isTTF=kind == "ttf")
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({ord(c): n for n, c in zip(_names()[1:], CHARS, strict=True) if c not in missing})
    pens: dict[str, Any] = {}
    for n, c in [*zip(_names(), ["\0", *CHARS], strict=True), *((n, "\x7f") for n in extra)]:
        if n not in names:
            continue
        pen = TTGlyphPen(None) if kind == "ttf" else T2CharStringPen(WIDTH, None)
        if n not in empty:  # a box, its height by the character: a swap of letters changes pixels
            drawn = (outline_of or {}).get(c, c)
            top = 700 if n == ".notdef" else 300 + ord(drawn) % 7 * 60
            pen.moveTo((50, 0))
            pen.lineTo((550, 0))
            pen.lineTo((550, top))
            pen.lineTo((50, top))
            pen.closePath()
        pens[n] = pen
    if kind == "ttf":
        fb.setupGlyf({n: p.glyph() for n, p in pens.items()})
    else:
        fb.setupCFF(family, {"FullName": family}, {n: p.getCharString() for n, p in pens.items()}, {})
    fb.setupHorizontalMetrics({n: (WIDTH, 0) for n in names})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": family, "styleName": "Regular"})
    fb.setupOS2(sTypoAscender=800, usWinAscent=800, usWinDescent=200)
    fb.setupPost()
    buf = io.BytesIO()
    fb.save(buf)
    if kind == "cff":
        from fontTools.ttLib import TTFont

        return TTFont(io.BytesIO(buf.getvalue())).getTableData("CFF ")
    return buf.getvalue()


def _name(key: str) -> Any:
    from pypdf.generic import NameObject

    return NameObject("/" + key)


def _stream(w: Any, data: bytes, compress: bool = True, **entries: Any) -> Any:
    from pypdf.generic import DecodedStreamObject

    st = DecodedStreamObject()
    st.set_data(data)
    for k, v in entries.items():
        st[_name(k)] = v
    return w._add_object(st.flate_encode() if compress else st)


def tounicode(codes: dict[int, str], width: int = 2) -> bytes:
    """A /ToUnicode CMap of one bfchar entry per code."""
    lines = [f"<{code:0{2 * width}X}> <{''.join(f'{ord(c):04X}' for c in text)}>" for code, text in codes.items()]
    return ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T def 1 "
            f"begincodespacerange <{'0' * 2 * width}> <{'F' * 2 * width}> endcodespacerange {len(lines)} beginbfchar\n"
            + "\n".join(lines) + "\nendbfchar endcmap CMapName currentdict /CMap defineresource pop end end").encode()


def font_pdf(program: bytes | None, text: str, kind: str = "ttf", show: bytes | None = None,
             cid_to_gid: bytes | None = None, pages: int = 1, font_file: str | None = None,
             compress: bool = True, encoding: str = "/WinAnsiEncoding", to_unicode: dict[int, str] | None = None,
             differences: dict[int, str] | None = None) -> bytes:
    """A page with a Helvetica line ("Refunds take 14 days.") at y 760, then `text` shown at y 700
    in 24 pt in the embedded font `program`. `kind`: "ttf" (simple TrueType, /FontFile2), "otf"
    (simple, /FontFile3 /OpenType), "cff" (simple, /FontFile3 /Type1C), "type0" (Type0 Identity-H
    over a CIDFontType2 whose /CIDToGIDMap is /Identity or the stream `cid_to_gid`; codes are the
    glyph ids, with a /ToUnicode). `show` replaces the show operator; `pages` repeats the page
    (one font object for all); `font_file` overrides the descriptor's key. `to_unicode`: a
    /ToUnicode CMap of these codes (replacing a Type0 font's own; {} for none); `differences`: a
    simple font's /Differences over `encoding` (code: glyph name); `program` None: no program
    (a simple font named Helvetica, which viewers draw in their own)."""
    import pypdf
    from pypdf.generic import ArrayObject, DictionaryObject, NumberObject, TextStringObject

    w = pypdf.PdfWriter()
    order = _names()
    if kind == "type0":
        key = font_file or "FontFile2"
        ff = _stream(w, program or b"", compress, Length1=NumberObject(len(program or b"")))
    elif kind == "ttf":
        key = font_file or "FontFile2"
        ff = _stream(w, program or b"", compress, Length1=NumberObject(len(program or b"")))
    else:
        key = font_file or "FontFile3"
        ff = _stream(w, program or b"", compress, Subtype=_name("OpenType" if kind == "otf" else "Type1C"))
    desc = DictionaryObject({
        _name("Type"): _name("FontDescriptor"), _name("FontName"): _name("TestBlank"), _name("Flags"): NumberObject(32),
        _name("FontBBox"): ArrayObject([NumberObject(0), NumberObject(-200), NumberObject(1000), NumberObject(800)]),
        _name("ItalicAngle"): NumberObject(0), _name("Ascent"): NumberObject(800), _name("Descent"): NumberObject(-200),
        _name("CapHeight"): NumberObject(700), _name("StemV"): NumberObject(80)})
    if program is not None or kind == "type0":
        desc[_name(key)] = ff
    desc_ref = w._add_object(desc)
    if kind == "type0":
        gids = [order.index(_names()[1 + CHARS.index(c)]) for c in text]
        cid = DictionaryObject({
            _name("Type"): _name("Font"), _name("Subtype"): _name("CIDFontType2"), _name("BaseFont"): _name("TestBlank"),
            _name("CIDSystemInfo"): DictionaryObject({_name("Registry"): TextStringObject("Adobe"),
                                                      _name("Ordering"): TextStringObject("Identity"),
                                                      _name("Supplement"): NumberObject(0)}),
            _name("FontDescriptor"): desc_ref, _name("DW"): NumberObject(WIDTH),
            _name("CIDToGIDMap"): _name("Identity") if cid_to_gid is None else _stream(w, cid_to_gid, compress)})
        font = DictionaryObject({
            _name("Type"): _name("Font"), _name("Subtype"): _name("Type0"), _name("BaseFont"): _name("TestBlank"),
            _name("Encoding"): _name("Identity-H"), _name("DescendantFonts"): ArrayObject([w._add_object(cid)]),
            _name("ToUnicode"): _stream(w, tounicode({g: c for g, c in zip(gids, text, strict=True)}
                                                     if to_unicode is None else to_unicode), compress)})
        if to_unicode == {}:
            del font[_name("ToUnicode")]
        shown = show if show is not None else b"<" + "".join(f"{g:04X}" for g in gids).encode() + b"> Tj"
    else:
        font = DictionaryObject({
            _name("Type"): _name("Font"), _name("Subtype"): _name("TrueType" if kind == "ttf" else "Type1"),
            _name("BaseFont"): _name("TestBlank"), _name("FirstChar"): NumberObject(32),
            _name("LastChar"): NumberObject(255), _name("Widths"): ArrayObject([NumberObject(WIDTH)] * 224),
            _name("FontDescriptor"): desc_ref})
        if program is None:
            font[_name("BaseFont")] = _name("Helvetica")
            del font[_name("FontDescriptor")]
        if differences:
            diffs = ArrayObject()
            for code, glyph in sorted(differences.items()):
                diffs += [NumberObject(code), _name(glyph)]
            font[_name("Encoding")] = DictionaryObject({_name("Type"): _name("Encoding"), _name("Differences"): diffs})
            if encoding:
                font[_name("Encoding")][_name("BaseEncoding")] = _name(encoding[1:])
        elif encoding:
            font[_name("Encoding")] = _name(encoding[1:])
        if to_unicode:
            font[_name("ToUnicode")] = _stream(w, tounicode(to_unicode, width=1), compress)
        shown = show if show is not None else b"(" + text.encode() + b") Tj"
    helv = DictionaryObject({_name("Type"): _name("Font"), _name("Subtype"): _name("Type1"),
                             _name("BaseFont"): _name("Helvetica")})
    fonts = DictionaryObject({_name("F2"): w._add_object(font), _name("F1"): w._add_object(helv)})
    for _ in range(pages):
        page = w.add_blank_page(595, 842)
        page[_name("Resources")] = DictionaryObject({_name("Font"): fonts})
        content = b"BT /F1 12 Tf 50 760 Td (Refunds take 14 days.) Tj ET\nBT /F2 24 Tf 50 700 Td " + shown + b" ET\n"
        page[_name("Contents")] = _stream(w, content, compress=False)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def type1_pdf(text: str, blank: bool) -> bytes:
    """A page with the Helvetica line, then `text` at y 700 in 24 pt in a Type 1 font embedded
    (/FontFile) by reportlab: reportlab's own DarkGardenMK, its letters' charstrings made empty
    (`hsbw endchar`) when `blank`."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return _type1_pdf(tmp, text, blank)


def _type1_pdf(tmp: str, text: str, blank: bool) -> bytes:
    import shutil
    from pathlib import Path

    import reportlab
    from fontTools.misc.psCharStrings import T1CharString
    from fontTools.t1Lib import T1Font
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfgen import canvas

    src = Path(reportlab.__file__).parent / "fonts"
    font = T1Font(str(src / "DarkGardenMK.pfb"))
    font.parse()
    if blank:
        glyphs = font["CharStrings"]
        for name in list(glyphs):
            if len(name) == 1 and name.isalpha():
                glyphs[name] = T1CharString(program=[0, 600, "hsbw", "endchar"], subrs=font["Private"]["Subrs"])
    tag = "Blank" if blank else "Drawn"
    pfb, afm = Path(tmp) / f"{tag}.pfb", Path(tmp) / f"{tag}.afm"
    font.saveAs(str(pfb), "PFB")
    shutil.copy(src / "DarkGardenMK.afm", afm)
    face = pdfmetrics.EmbeddedType1Face(str(afm), str(pfb))
    pdfmetrics.registerTypeFace(face)
    name = f"T1{tag}"
    pdfmetrics.registerFont(pdfmetrics.Font(name, face.name, "WinAnsiEncoding"))
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(595, 842), invariant=1)
    c.setFont("Helvetica", 12)
    c.drawString(50, 760, "Refunds take 14 days.")
    c.setFont(name, 24)
    c.drawString(50, 700, text)
    c.showPage()
    c.save()
    return buf.getvalue()


def composite_bomb(depth: int = 24) -> bytes:
    """A TrueType font whose every non-space glyph is built of two copies of a glyph built of two
    copies of ... `depth` levels down to an empty one: 2**depth components, painting nothing."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    levels = [f"n{k}" for k in range(depth + 1)]
    names = _names() + levels
    glyphs: dict[str, Any] = {}
    for k, name in enumerate(levels):
        pen = TTGlyphPen(dict.fromkeys(names))
        if k < depth:
            pen.addComponent(levels[k + 1], (1, 0, 0, 1, 0, 0))
            pen.addComponent(levels[k + 1], (1, 0, 0, 1, 1, 0))
        glyphs[name] = pen.glyph()
    for name in _names():
        pen = TTGlyphPen(dict.fromkeys(names))
        if name not in (".notdef", "space"):
            pen.addComponent(levels[0], (1, 0, 0, 1, 0, 0))
        glyphs[name] = pen.glyph()
    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({ord(c): n for n, c in zip(_names()[1:], CHARS, strict=True)})
    fb.setupGlyf(glyphs)
    fb.setupHorizontalMetrics({n: (WIDTH, 0) for n in names})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": "Bomb", "styleName": "Regular"})
    fb.setupOS2(sTypoAscender=800, usWinAscent=800, usWinDescent=200)
    fb.setupPost()
    buf = io.BytesIO()
    fb.save(buf)
    return buf.getvalue()


def remapped_pdf(painted: str, read: str, kind: str = "ttf", program: bytes | None = b"", tounicode_map: bool = True,
                 **kw: Any) -> bytes:
    """A line that paints `painted` and reads `read`: each character of `painted` shown by a code
    of its own (128 on for a simple font, named by /Differences; CID 1000 on for "type0", sent to
    the glyph by a /CIDToGIDMap) whose /ToUnicode entry is its share of `read`. Without
    `tounicode_map` a Type0 font's CIDs are the characters of `read` (an extractor reads a CID
    the CMap does not map as its own number), `painted` and `read` of one length, a character of
    `read` always standing for the same one of `painted`. `program` b"":
    the test font (every glyph drawn); None: no program (Helvetica)."""
    from fontTools import agl

    program = font_program("", kind if kind != "type0" else "ttf") if program == b"" else program
    cuts = [len(read) * k // len(painted) for k in range(len(painted) + 1)]
    pieces = [read[cuts[k]:cuts[k + 1]] for k in range(len(painted))]
    if kind == "type0":
        order = _names()
        cids = [ord(c) for c in read] if not tounicode_map else [1000 + k for k in range(len(painted))]
        gid_map = bytearray(2 * (max(cids) + 1))
        for cid, c in zip(cids, painted, strict=True):
            gid_map[2 * cid:2 * cid + 2] = order.index(agl.UV2AGL[ord(c)]).to_bytes(2, "big")
        show = b"<" + "".join(f"{c:04X}" for c in cids).encode() + b"> Tj"
        return font_pdf(program, painted, kind="type0", show=show, cid_to_gid=bytes(gid_map),
                        to_unicode=dict(zip(cids, pieces, strict=True)) if tounicode_map else {}, **kw)
    codes = [128 + k for k in range(len(painted))]
    show = b"(" + bytes(codes) + b") Tj"
    return font_pdf(program, painted, kind=kind, show=show,
                    differences={c: agl.UV2AGL[ord(ch)] for c, ch in zip(codes, painted, strict=True)},
                    to_unicode=dict(zip(codes, pieces, strict=True)), **kw)


def glyphs_pdf(glyphs: list[str], reads: list[str], kind: str = "ttf", embed: bool = True, **kw: Any) -> bytes:
    """A line that shows the glyphs named `glyphs` (codes 128 on, named by /Differences; the
    program holds every name as a drawn glyph) and reads `reads`, one entry each, through the
    font's /ToUnicode CMap. `embed` False: no program (Helvetica, drawn by the viewer's own)."""
    program = font_program("", kind, extra=glyphs) if embed else None
    codes = [128 + k for k in range(len(glyphs))]
    return font_pdf(program, "", kind=kind, show=b"(" + bytes(codes) + b") Tj",
                    differences=dict(zip(codes, glyphs, strict=True)), to_unicode=dict(zip(codes, reads, strict=True)),
                    **kw)


def gs_font_pdf(read: str, painted: str, same: bool = False) -> bytes:
    """A line shown in Helvetica (`Tf`), then a graphics state (`gs`) whose /Font sets the test
    font, in which its codes (those of `read`) are named by /Differences as the glyphs of
    `painted`: a viewer paints `painted` in the test font, pypdf reads `read` with Helvetica.
    `same`: the graphics state's /Font is the `Tf` font itself (nothing changes)."""
    import pypdf
    from fontTools import agl
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

    codes = {ord(c): agl.UV2AGL[ord(p)] for c, p in zip(read, painted, strict=True)}
    data = font_pdf(font_program(""), "", show=b"/GS1 gs (" + read.encode() + b") Tj", differences=codes)
    w = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    page = w.pages[0]
    fonts = page["/Resources"]["/Font"]
    content = page.get_contents().get_data().replace(b"/F2 24 Tf", b"/F1 24 Tf")
    stream = DecodedStreamObject()
    stream.set_data(content)
    page[NameObject("/Contents")] = w._add_object(stream)
    gs = DictionaryObject({NameObject("/Font"): ArrayObject([fonts.raw_get("/F1" if same else "/F2"),
                                                            NumberObject(24)])})
    page["/Resources"][NameObject("/ExtGState")] = DictionaryObject({NameObject("/GS1"): gs})
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()
