"""Type 3 fonts: glyphs that are little programs, and can paint nothing.

A Type 3 font draws each glyph with a content stream of its own (`/CharProcs`), picked by the
glyph name its `/Encoding` gives a character code. A glyph whose stream paints nothing, or a code
the font has no glyph for, shows nothing on the page, yet a text extractor reads the character
its name spells: a line of such glyphs is a hidden line no viewer paints ("SECRET" in blank
glyphs). A font whose `/FontMatrix` shrinks its glyphs to nothing hides them the same way, so the
matrix's scale counts in the size a viewer draws (1 for the usual 0.001).

Whether a glyph paints is read from its stream's bytes, not parsed: any painting operator (a fill,
a stroke, a shading, an image or form, shown text) between delimiters counts as paint, so a
glyph that may paint counts as painting. A stream too long to read cheaply (over 64 KB, raw or
inflated), one under a filter other than plain FlateDecode, and every glyph past the document's
first 2,000 read count as painting. Fonts are read once a document.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: an operator that paints, standing alone between PDF delimiters (whitespace, brackets, slashes)
_PAINTS = re.compile(rb"(?<![^\s()<>\[\]{}/%])(?:f\*?|F|B\*?|b\*?|S|s|sh|Do|BI|Tj|TJ|'|\")(?![^\s()<>\[\]{}/%])")
#: a glyph stream longer than this (decoded) is taken to paint, unread
MAX_GLYPH_BYTES = 65_536
#: glyph names of spaces, whose glyphs paint nothing by design
_SPACES = frozenset({"/space", "/nbspace", "/nonbreakingspace", "/uni0020", "/uni00A0", "/tab"})
#: glyph streams read in one document at most (each up to MAX_GLYPH_BYTES); past it, glyphs count as painting
MAX_GLYPH_READS = 2_000
#: the glyph space a Type 3 font's matrix usually maps (1/1000 of text space): scale 1
_USUAL = 0.001


@dataclass
class Type3:
    """One Type 3 font: its glyph scale against the usual matrix (horizontal, vertical) and, by
    character code, whether the glyph paints nothing (filled in as codes are met)."""

    font: Any
    scale: tuple[float, float]
    names: dict[int, str]
    blank: dict[int, bool] = field(default_factory=dict)
    #: glyph streams the whole document may still read (shared by its fonts: one list)
    budget: list[int] = field(default_factory=lambda: [MAX_GLYPH_READS])

    def all_blank(self, codes: bytes) -> bool:
        """Every code of `codes` draws a glyph that paints nothing (a Type 3 code is one byte),
        and some code is not a space's (a space paints nothing anyway: a show of spaces alone is
        not hidden text)."""
        letters = {c for c in codes if c != 32 and self.names.get(c) not in _SPACES}
        if not letters:
            return False
        for code in letters:
            if code not in self.blank:
                self.blank[code] = self._blank(code)
            if not self.blank[code]:
                return False
        return True

    def _blank(self, code: int) -> bool:
        name = self.names.get(code)
        if name is None:
            return True  # no glyph for the code: nothing is drawn
        if self.budget[0] <= 0:
            return False  # the document's glyph reads are spent: the rest count as painting
        self.budget[0] -= 1
        try:
            proc = self.font["/CharProcs"].get(name)
            if proc is None:
                return True
            data = stream_bytes(proc.get_object(), MAX_GLYPH_BYTES)
        except Exception:  # noqa: BLE001 - a glyph docket cannot read may paint
            return False
        return data is not None and _PAINTS.search(data) is None


def stream_bytes(proc: Any, limit: int) -> bytes | None:
    """A stream's bytes, decoded only as far as `limit`: unfiltered or one plain FlateDecode (a
    small compressed stream can inflate to megabytes; it is cut off, not read whole). None
    (counts as painting) for a longer stream or any other filter."""
    raw = getattr(proc, "_data", None)
    if not isinstance(raw, bytes) or len(raw) > limit:
        return None
    filters = proc.get("/Filter")
    if filters is None:
        return raw
    if hasattr(filters, "__len__") and not isinstance(filters, str):
        filters = filters[0] if len(filters) == 1 else None
    if filters != "/FlateDecode" or proc.get("/DecodeParms") is not None:
        return None
    inflate = zlib.decompressobj()
    data = inflate.decompress(raw, limit + 1)
    return None if len(data) > limit else data


@dataclass
class Type3Fonts:
    """One document's Type 3 fonts, each read once (by its object key), and the glyph streams the
    document may still read, shared by them. A reader of the document makes one and hands it to
    every page's walk."""

    fonts: dict[Any, Type3 | None] = field(default_factory=dict)
    budget: list[int] = field(default_factory=lambda: [MAX_GLYPH_READS])

    def of(self, key: Any, font: Any) -> Type3 | None:
        """The Type 3 reading of font dictionary `font` (known in the document as `key`)."""
        if key not in self.fonts:
            self.fonts[key] = type3(font, self.budget)
        return self.fonts[key]


def differences(enc: Any) -> Iterator[tuple[int, str]]:
    """The (code, glyph name) pairs an encoding dictionary's /Differences array gives, in order (a
    number sets the next code, each name takes it and moves on); names keep their slash, and codes
    outside one byte are left out. Shared by the Type 3 and the embedded-font readings."""
    code = None
    for item in enc.get("/Differences", []) or []:
        item = item.get_object() if hasattr(item, "get_object") else item
        if isinstance(item, int) and not isinstance(item, bool):
            code = int(item)
        elif isinstance(item, str) and code is not None:
            if 0 <= code <= 255:
                yield code, item
            code += 1


def type3(font: Any, budget: list[int] | None = None) -> Type3 | None:
    """The Type 3 reading of font dictionary `font`, or None for any other kind of font (or one
    whose matrix or encoding docket cannot read: then nothing is judged by it). `budget`: the
    document's glyph reads left, shared by its fonts."""
    try:
        font = font.get_object()
        if font.get("/Subtype") != "/Type3":
            return None
        fm = [float(x) for x in font.get("/FontMatrix", [_USUAL, 0, 0, _USUAL, 0, 0])]
        if len(fm) != 6:
            return None
        names: dict[int, str] = {}
        raw = font.get("/Encoding")
        enc: Any = raw.get_object() if raw is not None else None
        if not hasattr(enc, "get") or enc.get("/BaseEncoding") is not None:
            return None  # an encoding by name, or one over a base: codes docket does not map
        names.update(differences(enc))  # a later entry for a code replaces an earlier one
    except Exception:  # noqa: BLE001 - a damaged font is judged as an ordinary one
        return None
    scale = (math.hypot(fm[0], fm[1]) / _USUAL, math.hypot(fm[2], fm[3]) / _USUAL)
    return Type3(font, scale, names, budget=budget if budget is not None else [MAX_GLYPH_READS])
