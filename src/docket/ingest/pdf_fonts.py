"""Embedded fonts whose glyphs paint nothing: TrueType, CFF, OpenType and Type 1 programs.

A PDF can embed a font program (`/FontFile`, `/FontFile2`, `/FontFile3` in its font descriptor)
in which the glyphs for letters have empty outlines, then show "ignore the policy" in it: no
viewer paints a thing, yet a text extractor reads the letters through the font's `/ToUnicode` or
encoding. This module answers, for the character codes of one show, whether every glyph a viewer
would draw for them paints nothing (spaces aside), as docket.ingest.pdf_type3 does for Type 3
fonts, so the walk of docket.ingest.pdf_hidden leaves such text out (`pdf_hidden_blank_glyphs`).

Codes go to glyphs as a viewer sends them: a simple font's code through its encoding
(`/Differences` over the base, or the program's own) to a glyph name, or, for TrueType, through
the program's (3,0), (1,0) and (3,1) cmaps and `post` names; a composite font (Type0, Identity-H/V
only) reads two-byte CIDs, through `/CIDToGIDMap` (TrueType) or the CFF charset (CID-keyed CFF).
Where viewers take different routes, every glyph any of them may draw is tested, and the code is
blank only when all are; a code with no glyph at all draws `.notdef` (glyph 0). A glyph paints
nothing when drawing its outline makes no line or curve (components drawn through).

Budgets, as for Type 3: a program over MAX_FONT_BYTES decoded (or under a filter other than
plain FlateDecode) is not read, nor any past MAX_DOCUMENT_FONT_BYTES a document; glyphs past a
document's first MAX_GLYPH_TESTS drawn count as painting, as does a glyph whose drawing takes
more than MAX_GLYPH_WORK (subroutines calling subroutines, components of components: a hostile
program can make one glyph billions of steps), and every glyph once the document's
MAX_DOCUMENT_WORK is spent; each font is read once a document and only when text is shown in it.
A Type 1 program is PostScript: it is read by its tokens, never run. A program fontTools cannot read, an encoding or CMap docket does
not know, anything uncertain: the glyphs count as painting, and the text is kept. fontTools is
imported only when a shown font embeds a program (or has no program but a /ToUnicode CMap).

Remapped codes: the same reading tells what each glyph drawn *is* by the program's own word (its
Unicode cmaps, its glyph names through the Adobe Glyph List), and `Embedded.remapped` compares
that with the text pypdf reads for the code (pypdf's own reading of the font dictionary): a
/ToUnicode CMap that makes glyphs painting "see the report" read "ignore the rules" is found. A
simple font with no program (`Named`), or one whose program is not read, is judged by the glyph
names of its encoding. Letters and digits are compared, compatibility-decomposed, accents and case
dropped; a glyph the font does not name, a reading with no letter or in private-use characters
agree. A program that lies about its own glyphs is not caught (that takes OCR).

Repaired readings (`repair_reading`): a simple font's code that pypdf reads as nothing of its
glyph (a control character, U+FFFD, a glyph name its table lacks read as the name) reads as the
glyph the font names, through an in-memory /ToUnicode CMap; done before the font's first show is
judged, so the remap check compares the repaired reading (which agrees by construction).
"""

from __future__ import annotations

import array
import bisect
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from docket.ingest.pdf_type3 import differences, stream_bytes

#: a font program longer than this (decoded) is not read: its glyphs count as painting
MAX_FONT_BYTES = 2_000_000
#: font program bytes one document may read in all; the fonts past it are not read
MAX_DOCUMENT_FONT_BYTES = 32_000_000
#: glyphs drawn (tested) in one document at most; past it, glyphs count as painting
MAX_GLYPH_TESTS = 2_000
#: a ToUnicode CMap longer than this is not read (its codes' text is then unknown)
MAX_CMAP_BYTES = 1_000_000
#: glyph names of glyphs that paint nothing by design
_SPACE_NAMES = frozenset({"space", "nbspace", "nonbreakingspace", "uni0020", "uni00A0", "tab", "CR",
                          "nonmarkingreturn", ".null", "NULL"})
_SIMPLE = frozenset({"/TrueType", "/Type1", "/MMType1"})


def _space_text(text: str) -> bool:
    """Text that is only spaces, controls or format characters (what a blank glyph stands for)."""
    return bool(text) and all(c.isspace() or unicodedata.category(c)[0] in "ZC" for c in text)


def _space_name(name: str | None) -> bool:
    if name is None:
        return False
    if name in _SPACE_NAMES:
        return True
    from fontTools import agl

    return _space_text(agl.toUnicode(name))


@dataclass
class _Budget:
    """What one document may still spend: glyph tests, font program bytes, and drawing work."""

    glyphs: int = field(default_factory=lambda: MAX_GLYPH_TESTS)
    font_bytes: int = field(default_factory=lambda: MAX_DOCUMENT_FONT_BYTES)
    work: int = field(default_factory=lambda: MAX_DOCUMENT_WORK)


class _Program:
    """A font program read with fontTools: its glyphs by name, in glyph order, and the ways a
    viewer finds one (a TrueType or OpenType font's cmaps; a CFF or Type 1 font's own encoding;
    whether its CFF is CID-keyed)."""

    def __init__(self, glyphs: Any, order: list[str], cmaps: dict[tuple[int, int], dict[int, str]] | None = None,
                 builtin: list[str] | None = None, cid_keyed: bool = False) -> None:
        self.glyphs, self.order, self.cmaps = glyphs, order, cmaps or {}
        self.names = set(order)
        self.builtin, self.cid_keyed = builtin, cid_keyed
        self._own: dict[str, list[str]] | None = None

    def own(self, name: str) -> list[str]:
        """What glyph `name` is by the program's own word: the characters its Unicode cmaps send
        to it and the character its name stands for (the Adobe Glyph List: "A", "uni0041", "fi",
        "a.sc"); none that is a control, unassigned or private-use character. [] where the
        program does not say (a subset's "glyph00012", "g123", "cid00042")."""
        if self._own is None:
            self._own = {}
            for key in ((3, 1), (3, 10), (0, 3), (0, 4), (0, 6), (0, 1), (0, 0)):
                for cp, glyph in (self.cmaps.get(key) or {}).items():
                    ch = chr(cp)
                    if _meaningful(ch):
                        self._own.setdefault(glyph, []).append(ch)
        own = self._own.get(name, [])
        if not name.startswith(("glyph", "cid")):
            from fontTools import agl

            text = agl.toUnicode(name)
            if text and _meaningful(text):
                own = [*own, text]
        return own

    def notdef(self) -> str | None:
        return self.order[0] if self.order else None

    def by_gid(self, gid: int) -> str | None:
        """The glyph a glyph id draws (.notdef past the font's end)."""
        return self.order[gid] if 0 <= gid < len(self.order) else self.notdef()

    def paints(self, name: str, budget: _Budget) -> bool:
        """Whether drawing glyph `name` makes any line or curve: a glyph docket cannot draw, or
        whose drawing takes more than MAX_GLYPH_WORK (or the document's budget), paints."""
        ink = _tools()
        allowed = min(MAX_GLYPH_WORK, budget.work)
        pen = ink.Pen(self.glyphs, allowed)
        try:
            glyph = self.glyphs[name]
            if hasattr(getattr(glyph, "glyphSet", None), "charStrings"):  # an OpenType font's CFF glyph
                glyph = glyph.glyphSet.charStrings[glyph.name]
            if isinstance(glyph, ink.T1CharString):  # (a subclass of T2CharString: first)
                ink.T1(pen, glyph.subrs).execute(glyph)
            elif isinstance(glyph, ink.T2CharString):
                private = glyph.private
                ink.T2(pen, getattr(private, "Subrs", []), glyph.globalSubrs, private.nominalWidthX,
                       private.defaultWidthX, private).execute(glyph)
            else:  # a TrueType glyph, its components drawn through the pen
                glyph.draw(pen)
        except Exception:  # noqa: BLE001 - it inked, or docket cannot draw it (or not in its share of work)
            return True
        finally:
            budget.work -= allowed - pen.left[0]
        return False


#: the work drawing one glyph may take (charstring bytes run, subroutines included, and pen
#: calls, 16 each), and one document's glyphs in all: a hostile program's subroutines can call
#: each other into billions of steps, and a composite glyph's components likewise
MAX_GLYPH_WORK = 20_000
MAX_DOCUMENT_WORK = 4_000_000


class _Spent(Exception):
    """A glyph's drawing took more than its share of work: it counts as painting."""


_TOOLS: list[Any] = []


def _tools() -> Any:
    """The pen and charstring runners that count their work, made once (fontTools imported here)."""
    if _TOOLS:
        return _TOOLS[0]
    from types import SimpleNamespace

    from fontTools.misc.psCharStrings import T1CharString, T1OutlineExtractor, T2CharString, T2OutlineExtractor
    from fontTools.pens.basePen import BasePen

    class Inked(Exception):  # noqa: N818 - not an error: the glyph paints, drawing stops
        """The glyph made a line or a curve."""

    class Pen(BasePen):  # type: ignore[misc]
        skipMissingComponents = False  # a component that is not there: fontTools raises, the glyph paints

        def __init__(self, glyphs: Any, allowed: int) -> None:
            super().__init__(glyphs)
            self.left = [allowed]

        def spend(self, n: int) -> None:
            self.left[0] -= n
            if self.left[0] < 0:
                raise _Spent

        def _moveTo(self, pt: Any) -> None:
            self.spend(16)

        def _lineTo(self, pt: Any) -> None:
            raise Inked

        def _curveToOne(self, a: Any, b: Any, c: Any) -> None:
            raise Inked

        def _qCurveToOne(self, a: Any, b: Any) -> None:
            raise Inked

        def _closePath(self) -> None:
            self.spend(16)

        def _endPath(self) -> None:
            self.spend(16)

        def addComponent(self, name: str, transformation: Any) -> None:
            self.spend(16)
            super().addComponent(name, transformation)

    def counted(base: Any) -> Any:
        class Counted(base):  # type: ignore[misc,valid-type]
            def execute(self, charString: Any, **kw: Any) -> Any:
                code = charString.bytecode if charString.bytecode is not None else charString.program or ()
                self.pen.spend(len(code) + 16)
                return super().execute(charString, **kw)
        return Counted

    _TOOLS.append(SimpleNamespace(Pen=Pen, Inked=Inked, T1CharString=T1CharString, T2CharString=T2CharString,
                                  T1=counted(T1OutlineExtractor), T2=counted(T2OutlineExtractor)))
    return _TOOLS[0]


def _read_program(data: bytes, kind: str, descriptor: Any) -> _Program | None:
    """The program `data` of kind "TrueType", "OpenType", "CFF" or "Type1" read with fontTools;
    None where fontTools cannot read it."""
    import io

    if kind in ("TrueType", "OpenType"):
        from fontTools.ttLib import TTFont

        tt = TTFont(io.BytesIO(data), lazy=True, fontNumber=0)
        order = tt.getGlyphOrder()
        cmaps: dict[tuple[int, int], dict[int, str]] = {}
        if "cmap" in tt:
            for table in tt["cmap"].tables:
                if table.format in (0, 4, 6, 12) and (table.platformID, table.platEncID) not in cmaps:
                    cmaps[(table.platformID, table.platEncID)] = dict(table.cmap)
        cid_keyed = False
        if "CFF " in tt:
            cid_keyed = hasattr(tt["CFF "].cff.topDictIndex[0], "ROS")
        return _Program(tt.getGlyphSet(), order, cmaps, cid_keyed=cid_keyed)
    if kind == "CFF":
        from fontTools.cffLib import CFFFontSet

        cff = CFFFontSet()
        cff.decompile(io.BytesIO(data), otFont=None)
        top = cff[cff.fontNames[0]]
        enc = getattr(top, "Encoding", None)
        builtin = None
        if isinstance(enc, list):
            builtin = list(enc)
        elif enc == "StandardEncoding" or enc is None:
            from fontTools.encodings.StandardEncoding import StandardEncoding

            builtin = list(StandardEncoding)
        return _Program(top.CharStrings, list(top.charset), builtin=builtin, cid_keyed=hasattr(top, "ROS"))
    if kind == "Type1":
        return _read_type1(data, descriptor)
    return None  # pragma: no cover - every kind _program_of names is read above


#: a Type 1 program's binary entries: a subroutine (`dup 5 23 RD <23 bytes> NP`) or a charstring
#: (`/A 40 RD <40 bytes> ND`), `RD` also spelled `-|`
_T1_ENTRY = re.compile(rb"(?:dup\s+(\d+)|/([^\s/\[\]{}()<>%]+))\s+(\d+)\s+(?:RD|-\|)\s")
_T1_CODE = re.compile(rb"dup\s+(\d+)\s*/([^\s/\[\]{}()<>%]+)\s+put")
_HEX_ONLY = re.compile(rb"[0-9A-Fa-f\s]+")


def _read_type1(data: bytes, descriptor: Any) -> _Program | None:
    """A Type 1 program as PDF embeds it (/Length1 bytes of cleartext, then /Length2 of the eexec
    part, binary or hex), read by its tokens as viewers read it, never run: fontTools' PostScript
    interpreter would run a hostile program's loops. None where no charstring is found."""
    from fontTools.encodings.StandardEncoding import StandardEncoding
    from fontTools.misc import eexec
    from fontTools.misc.psCharStrings import T1CharString

    length1 = int(descriptor.get_object()["/FontFile"].get_object().get("/Length1", 0) or 0)
    start = data.find(b"eexec")
    clear_end = length1 if 0 < length1 <= len(data) else (start + 5 if start >= 0 else -1)
    if clear_end < 0:
        return None
    clear, cipher = data[:clear_end], data[clear_end:].lstrip(b"\r\n\t ")
    if _HEX_ONLY.fullmatch(cipher[:64] or b"x"):
        cipher = bytes.fromhex(re.sub(rb"[^0-9A-Fa-f]", b"", cipher).decode("ascii")[: 2 * (len(cipher) // 2)])
    plain, _ = eexec.decrypt(cipher, 55665)
    plain = plain[4:]
    found = re.search(rb"/lenIV\s+(-?\d+)", plain)
    skip = int(found.group(1)) if found else 4
    subrs: list[Any] = []
    glyphs: dict[str, Any] = {}
    pos = 0
    while (m := _T1_ENTRY.search(plain, pos)) is not None:
        size = int(m.group(3))
        body = plain[m.end():m.end() + size]
        pos = m.end() + size
        if skip >= 0:
            body, _ = eexec.decrypt(body, 4330)
            body = body[skip:]
        if m.group(1) is not None:
            index = int(m.group(1))
            if index < 65536:
                subrs.extend([None] * (index + 1 - len(subrs)))
                subrs[index] = body
        else:
            glyphs[m.group(2).decode("latin-1")] = body
    if not glyphs:
        return None
    subr_list = [T1CharString(b if b is not None else b"\x0b", subrs=None) for b in subrs]  # 11: return
    for subr in subr_list:
        subr.subrs = subr_list
    charstrings = {name: T1CharString(body, subrs=subr_list) for name, body in glyphs.items()}
    builtin: list[str] | None = None
    if re.search(rb"/Encoding\s+StandardEncoding", clear):
        builtin = list(StandardEncoding)
    else:
        codes = _T1_CODE.findall(clear)
        if codes:
            builtin = [".notdef"] * 256
            for code, name in codes:
                if int(code) < 256:
                    builtin[int(code)] = name.decode("latin-1")
    order = sorted(charstrings, key=lambda n: n != ".notdef")
    return _Program(charstrings, order, builtin=builtin)


def _base_encoding(name: str) -> list[str | None] | None:
    """A PDF base encoding's glyph names by code; None for one docket does not know."""
    if name == "/StandardEncoding":
        from fontTools.encodings.StandardEncoding import StandardEncoding

        return [None if n == ".notdef" else n for n in StandardEncoding]
    if name == "/MacRomanEncoding":
        from fontTools.encodings.MacRoman import MacRoman

        return [None if n == ".notdef" else n for n in MacRoman]
    if name == "/WinAnsiEncoding":
        from fontTools import agl

        out: list[str | None] = []
        for code in range(256):
            try:
                ch = bytes([code]).decode("cp1252")
            except UnicodeDecodeError:
                out.append("bullet" if code in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else None)
                continue
            out.append(agl.UV2AGL.get(ord(ch)) if code >= 32 else None)
        return out
    return None


_BFCHAR = re.compile(rb"beginbfchar(.*?)endbfchar", re.S)
_BFRANGE = re.compile(rb"beginbfrange(.*?)endbfrange", re.S)
_TOKEN = re.compile(rb"<([0-9A-Fa-f\s]*)>|(\[)|(\])")


def _hex(h: bytes) -> bytes:
    h = re.sub(rb"\s", b"", h)
    return bytes.fromhex((h + b"0" * (len(h) % 2)).decode("ascii"))


def _utf16(b: bytes) -> str:
    return b.decode("utf-16-be", "replace")


class _ToUnicode:
    """A /ToUnicode CMap's bfchar and bfrange entries: the text a code stands for, read as a text
    extractor reads it (None where the CMap says nothing)."""

    def __init__(self, data: bytes) -> None:
        self.chars: dict[bytes, str] = {}
        self.ranges: list[tuple[bytes, bytes, Any]] = []
        for block in _BFCHAR.findall(data):
            toks = [_hex(m.group(1)) for m in _TOKEN.finditer(block) if m.group(1) is not None]
            for k in range(0, len(toks) - 1, 2):
                self.chars[toks[k]] = _utf16(toks[k + 1])
        for block in _BFRANGE.findall(data):
            items: list[Any] = []
            arr: list[bytes] | None = None
            for m in _TOKEN.finditer(block):
                if m.group(2):
                    arr = []
                elif m.group(3):
                    items.append(arr or [])
                    arr = None
                elif arr is not None:
                    arr.append(_hex(m.group(1)))
                else:
                    items.append(_hex(m.group(1)))
            for k in range(0, len(items) - 2, 3):
                lo, hi, dst = items[k], items[k + 1], items[k + 2]
                if isinstance(lo, bytes) and isinstance(hi, bytes):
                    self.ranges.append((lo, hi, dst))
        # by (length, start), found by bisection: a CMap of many ranges costs no scan per code
        self.ranges.sort(key=lambda r: (len(r[0]), r[0]))
        self.starts = [(len(r[0]), r[0]) for r in self.ranges]

    def text(self, code: bytes) -> str | None:
        if code in self.chars:
            return self.chars[code]
        k = bisect.bisect_right(self.starts, (len(code), code)) - 1
        if k >= 0:
            lo, hi, dst = self.ranges[k]
            if len(lo) == len(code) and lo <= code <= hi:
                off = int.from_bytes(code, "big") - int.from_bytes(lo, "big")
                if isinstance(dst, list):
                    return _utf16(dst[off]) if off < len(dst) else None
                if not dst:
                    return None
                last = dst[-2:] if len(dst) >= 2 else dst
                value = int.from_bytes(last, "big") + off
                return _utf16(dst[:-2] + (value & 0xFFFF).to_bytes(2, "big")) if len(dst) >= 2 else None
        return None


@dataclass
class _Judged:
    """The codes of one font judged (`remapped`): those whose reading agrees with the glyph drawn,
    and those whose reading does not. A show of codes all judged before costs a set's look-up."""

    good: set[int] = field(default_factory=set)
    bad: set[int] = field(default_factory=set)

    def any_bad(self, codes: bytes, width: int, agrees: Any) -> bool:
        """Whether some code of `codes` (`width` bytes each, big-endian) disagrees; `agrees(code)`
        judges a code not judged before (raising: docket cannot tell, and the code agrees)."""
        if width == 1:
            keys = set(codes)
        else:
            wide = array.array("H", codes)
            if sys.byteorder == "little":
                wide.byteswap()
            keys = set(wide)
        if keys <= self.good:
            return False
        for code in keys - self.good - self.bad:
            try:
                ok = agrees(code)
            except Exception:  # noqa: BLE001 - a font docket cannot read here: not judged, the text is kept
                ok = True
            (self.good if ok else self.bad).add(code)
        return not self.bad.isdisjoint(keys)


@dataclass
class Embedded:
    """One font with an embedded program, as shown: `composite` (two-byte CIDs) or simple (one
    byte a code); by code, what its glyphs are (filled in as codes are met). The program is read
    at the first code tested."""

    font: Any  # the font dictionary shown (a Type0 font's descendant for a composite one)
    descriptor: Any
    program_stream: Any
    kind: str  # "TrueType", "OpenType", "CFF", "Type1"
    composite: bool
    budget: _Budget
    tounicode: Any = None
    names: dict[int, str | None] = field(default_factory=dict)  # a simple font's encoding, by code
    #: by code, what its glyphs are: "paint", "blank", or "space" (a space's, whatever it draws)
    verdicts: dict[int, str] = field(default_factory=dict)
    scale: tuple[float, float] = (1.0, 1.0)  # glyph space is the usual 1/1000 of text space
    _program: _Program | None = None
    _read: bool = False
    _cmap: _ToUnicode | None = None
    top: Any = None  # the font dictionary the page names (a Type0 font itself), for the text pypdf reads
    judged: _Judged = field(default_factory=lambda: _Judged())  # by code: see `remapped`
    _reading: Any = None  # pypdf's reading of the font, once: (encoding, map) or False

    def remapped(self, codes: bytes) -> bool:
        """Some code of `codes` reads (as pypdf reads it: the /ToUnicode CMap over the encoding)
        as letters or digits other than those of the glyph a viewer draws for it, by the font
        program's own word (`_Program.own`): the show paints one text and an extractor reads
        another. A glyph the program says nothing of, and a code read as no letter, agree. A
        simple font whose program docket does not read (past the size limits: an honest font
        padded) is judged by its encoding's glyph names, as a font with no program is."""
        if self.composite and len(codes) % 2:
            return False
        program = self.program()
        if self.top is None or (program is None and self.composite):
            return False
        step = 2 if self.composite else 1

        def agrees(code: int) -> bool:
            read = _pypdf_text(self, code, step)
            own = ([t for name in self._candidates(code, program) for t in program.own(name)]
                   if program is not None else _name_text(self.names.get(code)))
            return read is None or _agree(read, own)

        return self.judged.any_bad(codes, step, agrees)

    def all_blank(self, codes: bytes) -> bool:
        """Every code of `codes` draws glyphs that paint nothing, and some code is not a space's.
        Codes are judged in order, once each a font: the first that paints ends the look."""
        if self.composite and len(codes) % 2:
            return False  # not whole two-byte codes: docket does not know what is drawn
        program = self.program()
        if program is None:
            return False
        verdicts, letter = self.verdicts, False
        step = 2 if self.composite else 1
        for k in range(0, len(codes), step):
            code = codes[k] << 8 | codes[k + 1] if step == 2 else codes[k]
            verdict = verdicts.get(code)
            if verdict is None:
                verdict = verdicts[code] = ("space" if self._is_space(code, program)
                                            else "blank" if self._blank(code, program) else "paint")
            if verdict == "paint":
                return False
            letter = letter or verdict == "blank"
        return letter

    def program(self) -> _Program | None:
        """The font program, read once (None where it is not read: the glyphs then count as painting)."""
        if not self._read:
            self._read = True
            self._program = self._load()
            if self._program is not None and self.tounicode is not None:
                try:
                    data = stream_bytes(self.tounicode.get_object(), MAX_CMAP_BYTES)
                    self._cmap = _ToUnicode(data) if data is not None else None
                except Exception:  # noqa: BLE001 - an unreadable CMap: text by the glyph names
                    self._cmap = None
        return self._program

    def _load(self) -> _Program | None:
        try:
            data = stream_bytes(self.program_stream.get_object(), MAX_FONT_BYTES)
        except Exception:  # noqa: BLE001 - a stream docket cannot read: not judged
            return None
        if data is None or len(data) > self.budget.font_bytes:
            return None
        self.budget.font_bytes -= len(data)
        try:
            return _read_program(data, self.kind, self.descriptor)
        except Exception:  # noqa: BLE001 - a program fontTools cannot read: its glyphs count as painting
            return None

    def _candidates(self, code: int, program: _Program) -> set[str]:
        """Every glyph a viewer may draw for `code`."""
        if self.composite:
            return self._cid_glyphs(code, program)
        return self._simple_glyphs(code, program)

    def _cid_glyphs(self, cid: int, program: _Program) -> set[str]:
        if program.cid_keyed:  # CID-keyed CFF: the CID names the glyph through the charset
            name = f"cid{cid:05d}"
            return {name if name in program.names else program.notdef() or name}
        if self.font.get("/Subtype") == "/CIDFontType2":
            gid = _cid_to_gid(self.font.get("/CIDToGIDMap"), cid)
            if gid is None:
                return set()
        else:
            gid = cid  # a name-keyed CFF program drawn as a CIDFont: the CID is the glyph index
        drawn = program.by_gid(gid)
        return {drawn} if drawn is not None else set()

    def _simple_glyphs(self, code: int, program: _Program) -> set[str]:
        name = self.names.get(code)
        if name is None and program.builtin is not None and 0 <= code < len(program.builtin):
            builtin = program.builtin[code]
            name = builtin if builtin and builtin != ".notdef" else None
        out: set[str] = set()
        if program.cmaps:
            from fontTools import agl

            for key, keys in (((3, 0), (code, 0xF000 + code, 0xF100 + code, 0xF200 + code)), ((1, 0), (code,))):
                table = program.cmaps.get(key)
                if table is not None:
                    out |= {table[k] for k in keys if k in table}
            uni = program.cmaps.get((3, 1)) or program.cmaps.get((3, 10)) or program.cmaps.get((0, 3))
            if uni is not None:
                chars = agl.toUnicode(name) if name is not None else ""
                if name is None and 32 <= code < 256:
                    chars = bytes([code]).decode("cp1252", "replace")
                if len(chars) == 1 and ord(chars) in uni:
                    out.add(uni[ord(chars)])
        if name is not None and name in program.names:
            out.add(name)
        if not out and not program.cmaps and self.kind == "TrueType":
            gid_name = program.by_gid(code)  # no cmap at all: a viewer takes the code as the glyph index
            if gid_name is not None:
                out.add(gid_name)
        if not out:
            notdef = program.notdef()
            if notdef is not None:
                out.add(notdef)
        return out

    def _blank(self, code: int, program: _Program) -> bool:
        glyphs = self._candidates(code, program)
        if not glyphs:
            return False  # docket does not know which glyph is drawn: it may paint
        for name in glyphs:
            if self.budget.glyphs <= 0:
                return False  # the document's glyph tests are spent: the rest count as painting
            self.budget.glyphs -= 1
            if program.paints(name, self.budget):
                return False
        return True

    def _is_space(self, code: int, program: _Program) -> bool:
        """The code stands for a space (or a control or format character): its glyph paints
        nothing by design. The text an extractor reads for it decides where the CMap gives one."""
        width = 2 if self.composite else 1
        text = self._cmap.text(code.to_bytes(width, "big")) if self._cmap is not None else None
        name = None if self.composite else self.names.get(code)
        if text is not None:
            out = _space_text(text)
        elif name is not None:
            out = _space_name(name)
        else:  # no text for it but the code's own character, as pypdf reads it (a CID 3 is "\x03")
            out = _space_text(chr(code))
        return out


def _cid_to_gid(mapping: Any, cid: int) -> int | None:
    """A CIDFontType2's glyph index for `cid`: /Identity (or no map), or a stream of two-byte
    glyph indices (0 past its end); None for a map docket cannot read."""
    if mapping is None:
        return cid
    mapping = mapping.get_object()
    if mapping == "/Identity":
        return cid
    if not hasattr(mapping, "get_data"):
        return None
    data = stream_bytes(mapping, 2 * 65536)
    if data is None:
        return None
    pair = data[2 * cid:2 * cid + 2]
    return int.from_bytes(pair, "big") if len(pair) == 2 else 0


def _program_of(descriptor: Any) -> tuple[Any, str] | None:
    """The font program a descriptor embeds and its kind, or None."""
    if descriptor is None:
        return None
    descriptor = descriptor.get_object()
    for key, kind in (("/FontFile2", "TrueType"), ("/FontFile", "Type1")):
        if key in descriptor:
            return descriptor.raw_get(key), kind
    if "/FontFile3" in descriptor:
        stream = descriptor.raw_get("/FontFile3")
        sub = stream.get_object().get("/Subtype")
        kind3 = {"/Type1C": "CFF", "/CIDFontType0C": "CFF", "/OpenType": "OpenType"}.get(sub)
        return (stream, kind3) if kind3 is not None else None
    return None


def _simple_names(font: Any, kind: str) -> dict[int, str | None] | None:
    """A simple font's glyph names by code from its /Encoding (None: an encoding docket does not
    know). Without a base encoding, codes the /Differences leave out take the program's own."""
    enc = font.get("/Encoding")
    enc = enc.get_object() if enc is not None else None
    if enc is None:
        return {}
    if isinstance(enc, str):
        base = _base_encoding(enc)
        return None if base is None else dict(enumerate(base))
    if not hasattr(enc, "get"):
        return None
    names: dict[int, str | None] = {}
    base_name = enc.get("/BaseEncoding")
    if base_name is not None:
        base = _base_encoding(str(base_name))
        if base is None:
            return None
        names = dict(enumerate(base))
    elif kind == "TrueType":
        base = _base_encoding("/StandardEncoding")
        names = dict(enumerate(base or []))
    for code, name in differences(enc):
        names[code] = name[1:] if name.startswith("/") else name
    return names


@dataclass
class EmbeddedFonts:
    """One document's fonts with embedded programs, each read once (by its object key), and the
    glyph tests and program bytes the document may still spend, shared by them."""

    fonts: dict[Any, Embedded | None] = field(default_factory=dict)
    budget: _Budget = field(default_factory=_Budget)

    def of(self, key: Any, font: Any) -> Embedded | None:
        """The reading of font dictionary `font` (known in the document as `key`)."""
        if key not in self.fonts:
            self.fonts[key] = embedded(font, self.budget)
        return self.fonts[key]


def embedded(font: Any, budget: _Budget | None = None) -> Embedded | None:
    """The reading of font dictionary `font` when it embeds a program docket reads, else None
    (a standard font, a Type 3 font, an encoding or CMap docket does not map). Nothing is
    imported or decoded here: the program is read when text in the font is first tested."""
    budget = budget if budget is not None else _Budget()
    try:
        font = font.get_object()
        sub = font.get("/Subtype")
        if sub == "/Type0":
            if font.get("/Encoding") not in ("/Identity-H", "/Identity-V"):
                return None
            kids = font.get("/DescendantFonts")
            kids = kids.get_object() if kids is not None else None
            if not isinstance(kids, list) or len(kids) != 1:
                return None
            cid = kids[0].get_object()
            if cid.get("/Subtype") not in ("/CIDFontType0", "/CIDFontType2"):
                return None
            found = _program_of(cid.get("/FontDescriptor"))
            if found is None:
                return None
            return Embedded(cid, cid["/FontDescriptor"], found[0], found[1], True, budget,
                            tounicode=font.raw_get("/ToUnicode") if "/ToUnicode" in font else None, top=font)
        if sub not in _SIMPLE:
            return None
        found = _program_of(font.get("/FontDescriptor"))
        if found is None:
            return None
        names = _simple_names(font, found[1])
        if names is None:
            return None
        return Embedded(font, font["/FontDescriptor"], found[0], found[1], False, budget,
                        tounicode=font.raw_get("/ToUnicode") if "/ToUnicode" in font else None, names=names,
                        top=font)
    except Exception:  # noqa: BLE001 - a damaged font is judged as an ordinary one
        return None


def _meaningful(text: str) -> bool:
    """Text that says which character a glyph is: no control, unassigned, surrogate or
    private-use character in it (a symbol font's U+F041 says nothing)."""
    return bool(text) and not any(unicodedata.category(c) in ("Cc", "Cn", "Co", "Cs") for c in text)


#: letters compared as the ones they look like (after a compatibility decomposition): what a
#: reader sees is what matters, and fonts draw these with one glyph under one name (a CFF
#: program's "A" for the Latin, Greek and Cyrillic capitals alike, its cmap lost in embedding);
#: dotless i and j; and the Adobe Glyph List's symbols for Greek letters (Delta is U+2206)
_LOOKALIKE = ("АA ВB ЕE КK МM НH ОO РP СC ТT ХX ЅS ІI ЈJ УY ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX "
              "аa еe оo рp сc уy хx ѕs іi јj ıi ȷj οo νv κk ρp χx ϲc кk ∆Δ ∑Σ ∏Π")
_FOLD = str.maketrans({pair[0]: pair[1] for pair in _LOOKALIKE.split()})


def _letters(text: str) -> str:
    """The letters and digits of `text` as compared: compatibility-decomposed (a ligature's
    letters, a superscript's digit, a full-width letter's), accents dropped, case folded, and
    look-alikes of other scripts read as the Latin letter (`_LOOKALIKE`)."""
    folded = unicodedata.normalize("NFKD", text).translate(_FOLD).casefold()
    return "".join(c for c in folded if c.isalnum())


def _script(text: str) -> str:
    """The first word of the Unicode name of `text`'s first letter ("LATIN", "HEBREW"...)."""
    letter = next((c for c in text if c.isalpha()), "")
    return unicodedata.name(letter, " ").split(" ")[0] if letter else ""


def _agree(read: str, own: list[str]) -> bool:
    """Whether `read` (the text an extractor reads for a code) is what the glyph drawn is, by
    `own` (what the program says that glyph is; [] where it does not say): a reading with no
    letter or digit, or with a private-use character (no text at all), agrees with any glyph. A
    Hebrew glyph name read as Arabic agrees: the Adobe Glyph List's "alef", "lamed"... are
    Hebrew, and Arabic fonts name their letters so too."""
    want = _letters(read)
    if not want or not own or not _meaningful(read):
        return True
    if any(_letters(t) == want for t in own):
        return True
    return _script(read) in ("ARABIC", "SYRIAC") and all(_script(t) == "HEBREW" for t in own)


def _name_text(name: str | None) -> list[str]:
    """What the glyph named `name` is by the Adobe Glyph List ([] where the name does not say)."""
    if not name:
        return []
    from fontTools import agl

    text = agl.toUnicode(name)
    return [text] if _meaningful(text) else []


def _pypdf_text(font: Embedded | Named, code: int, width: int) -> str | None:
    """The text pypdf's extraction reads for one code of `font` (its own reading of the font
    dictionary: the encoding, then the /ToUnicode CMap over it); None where pypdf cannot read
    the font (nor then extract its text) or the code reads as nothing."""
    if font._reading is None:
        # pypdf's own reading, so what is compared is what it extracts; imported outside the try so
        # that a pypdf without it fails loudly (tests) instead of switching the check off
        from pypdf._cmap import get_encoding

        try:
            font._reading = get_encoding(font.top.get_object())
        except Exception:  # noqa: BLE001 - a font pypdf cannot read: nothing to compare
            font._reading = False
    if font._reading is False:
        return None
    encoding, cmap = font._reading
    raw = code.to_bytes(width, "big")
    try:
        ch = encoding.get(code, chr(code)) if isinstance(encoding, dict) else raw.decode(encoding, "surrogatepass")
    except (LookupError, UnicodeDecodeError, AttributeError):
        return None
    text = cmap.get(ch, ch) if isinstance(ch, str) else None
    return text if isinstance(text, str) and text else None


@dataclass
class Named:
    """A simple font without an embedded program but with a /ToUnicode CMap: a viewer draws, in
    the font it puts in its place, the glyph the encoding names for each code (a standard 14
    font's, or a system font's); the CMap may say those codes are other letters."""

    top: Any
    names: dict[int, str | None]
    judged: _Judged = field(default_factory=lambda: _Judged())
    _reading: Any = None

    def remapped(self, codes: bytes) -> bool:
        """Some code reads (as pypdf reads it) as letters or digits other than those of the glyph
        its encoding names; a code the encoding names no glyph for agrees."""
        def agrees(code: int) -> bool:
            name = self.names.get(code)
            read = _pypdf_text(self, code, 1) if name else None
            return read is None or _agree(read, _name_text(name))

        return self.judged.any_bad(codes, 1, agrees)


#: the standard 14 fonts whose built-in encodings are not the standard one: only the glyphs a
#: /Differences array names are judged in them (as in a font its descriptor flags Symbolic)
_SYMBOLIC = ("Symbol", "ZapfDingbats")


def named(font: Any) -> Named | None:
    """The reading of a simple font dictionary that embeds no program and has a /ToUnicode CMap
    (else None: an embedded program is read by `embedded`, and without the CMap an extractor
    reads the encoding's own names, the glyphs drawn)."""
    try:
        font = font.get_object()
        if font.get("/Subtype") not in _SIMPLE or "/ToUnicode" not in font:
            return None
        descriptor = font.get("/FontDescriptor")
        if descriptor is not None and _program_of(descriptor) is not None:
            return None
        flags = int(descriptor.get_object().get("/Flags", 0)) if descriptor is not None else 0
        symbolic = (str(font.get("/BaseFont", "")).lstrip("/").split("+")[-1] in _SYMBOLIC
                    or (flags & 4 and not flags & 32))  # the descriptor's Symbolic flag, not Nonsymbolic
        names = _simple_names(font, "Type1")
        if names is None:
            return None
        if not symbolic and ("/Encoding" not in font or (hasattr(font["/Encoding"].get_object(), "get")
                                                         and "/BaseEncoding" not in font["/Encoding"].get_object())):
            standard = dict(enumerate(_base_encoding("/StandardEncoding") or []))
            names = {**standard, **{k: v for k, v in names.items() if v is not None}}
        return Named(font, names)
    except Exception:  # noqa: BLE001 - a damaged font is judged as an ordinary one
        return None


def _unread(text: str | None) -> bool:
    """pypdf's reading of a code says nothing of its glyph: a control character (the code's own
    number: a pdfTeX font's fi at code 2 read "\\x02"), U+FFFD, or a glyph name it does not map,
    read as the name itself ("/a.sc", "/f_f_j")."""
    if not text:
        return False
    return (text[0] == "/" and len(text) > 1) or any(unicodedata.category(c) == "Cc" or c == "\ufffd" for c in text)


#: codes a simple font's reading can repair (one byte each)
_CODES = range(256)


def repair_reading(font: Any, reading: Embedded | None) -> int:
    """Make pypdf read, for each code of simple font dictionary `font` (no /ToUnicode of its own)
    that it reads as nothing of its glyph (`_unread`), the text the font itself says the glyph
    is: the Adobe Glyph List's for the name its encoding gives the code ("fi" for /fi, "ffj" for
    /f_f_j, "a" for /a.sc), else, where `reading` has the embedded program, what the program says
    of the glyph drawn (its Unicode cmap, its glyph names), when all it says is one text. Done in
    memory by a /ToUnicode CMap that reads every other code as pypdf read it before. Returns how
    many codes were repaired; a code the font says nothing of is left as pypdf reads it."""
    from pypdf._cmap import get_encoding
    from pypdf.generic import DecodedStreamObject, NameObject

    try:
        font = font.get_object()
        if font.get("/Subtype") not in _SIMPLE or "/ToUnicode" in font:
            return 0
        enc = font.get("/Encoding")
        enc = enc.get_object() if enc is not None else None
        if reading is None and not (enc is not None and hasattr(enc, "get") and "/Differences" in enc):
            return 0  # no program, a base encoding pypdf reads whole: the font says no more than pypdf reads
        encoding, cmap = get_encoding(font)
        if not isinstance(encoding, dict):
            return 0
        read: dict[int, str] = {}
        for code in _CODES:
            ch = encoding.get(code, chr(code))
            text = cmap.get(ch, ch) if isinstance(ch, str) else None
            if isinstance(text, str) and text:
                read[code] = text
        bad = [code for code, text in read.items() if _unread(text)]
        if not bad:
            return 0
        from fontTools import agl  # (only here: a document in the standard fonts never imports it)

        names = reading.names if reading is not None else _simple_names(font, "Type1") or {}
        program = reading.program() if reading is not None else None
        repaired = 0
        for code in bad:
            name = names.get(code)
            said = {agl.toUnicode(name)} if name and not name.startswith(("glyph", "cid")) else set()
            said = {t for t in said if _meaningful(t)}
            if not said and program is not None and reading is not None:
                said = {t for glyph in reading._candidates(code, program) for t in program.own(glyph)}
            if len(said) == 1:
                read[code] = said.pop()
                repaired += 1
        if not repaired:
            return 0
        lines = b"".join(f"<{code:02X}> <{text.encode('utf-16-be').hex().upper()}>\n".encode()
                         for code, text in sorted(read.items()))
        cmap_stream = DecodedStreamObject()
        cmap_stream.set_data(b"begincmap 1 begincodespacerange <00> <FF> endcodespacerange\n"
                             + f"{len(read)} beginbfchar\n".encode() + lines + b"endbfchar endcmap\n")
        font[NameObject("/ToUnicode")] = cmap_stream
        return repaired
    except Exception:  # noqa: BLE001 - a font docket cannot read here: pypdf reads it as before
        return 0
