"""The text docket reads for a PDF's glyphs: what the font says each code is, as pypdf reads it,
on every page, also where docket took hidden text out (docket.ingest.pdf_hidden rewrites such a
page's content, and pypdf extracts from the rewritten operators); ligatures as their letters.

The fault these guard: the rewritten content was parsed with pypdf's default string decoding
(PDFDocEncoding), so on a page with anything hidden every string was read as that text and not
through its font: a pdfTeX font's fi at code 2 read "\\x02" ("con\\x02guration"), WinAnsi's curly
quotes (0x93, 0x94) read as the ligatures "ﬁ" and "ﬂ", its apostrophe (0x92) as "™". pdftotext
(poppler) is the reference where it is installed.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("fontTools")
pytest.importorskip("reportlab")

from font_files import font_pdf, font_program  # noqa: E402

from docket.ingest.office import read_pdf  # noqa: E402

#: a pdfTeX font's /Differences (no /BaseEncoding, no /ToUnicode): ligatures at control codes
TEX_DIFFERENCES = {2: "fi", 3: "fl", 11: "ff", 14: "ffi", 15: "ffl", 16: "dotlessi", 21: "endash", 39: "quoteright"}
TEX_SHOW = b"(con\x02guration \x03ow e\x0bort o\x0ece ba\x0fe na\x10ve 1\x152 it\x27s) Tj"
TEX_TEXT = "configuration flow effort office baffle na\u0131ve 1\u20132 it\u2019s"
WHITE = b" 1 g (hidden words) Tj"


def _text(data: bytes, counts: Counter[str] | None = None) -> str:
    return "\n".join(s.text for s in read_pdf(data, "t.pdf", counts=counts).segments)


def _controls(text: str) -> list[str]:
    return [c for c in text if (unicodedata.category(c) == "Cc" and c not in "\t\n\r") or c == "\ufffd"]


def _tex_pdf(embed: bool, hidden: bool) -> bytes:
    program = font_program("", extra=list(TEX_DIFFERENCES.values())) if embed else None
    return font_pdf(program, "", show=TEX_SHOW + (WHITE if hidden else b""), differences=TEX_DIFFERENCES,
                    encoding="")


@pytest.mark.parametrize("embed", [True, False], ids=["TrueType program", "no program"])
@pytest.mark.parametrize("hidden", [False, True], ids=["nothing hidden", "a hidden line on the page"])
def test_tex_ligatures_at_control_codes_read_as_their_letters(embed: bool, hidden: bool) -> None:
    """The pdfTeX case: /Differences naming /fi, /fl, /ff, /ffi, /ffl, /dotlessi, /endash at
    codes under 32. Read as the letters, whether or not the page had hidden text taken out."""
    counts: Counter[str] = Counter()
    out = _text(_tex_pdf(embed, hidden), counts)
    assert TEX_TEXT in out, repr(out)
    assert not _controls(out), repr(out)
    assert "hidden" not in out
    assert counts == (Counter({"pdf_hidden_color": 1}) if hidden else Counter())


def test_winansi_quotes_read_as_quotes_on_a_page_with_hidden_text() -> None:
    """Helvetica in WinAnsiEncoding (a word processor's export): curly quotes and the apostrophe
    at 0x91-0x94 read as themselves beside a hidden line (PDFDocEncoding reads them as ™, ﬁ, ﬂ)."""
    data = font_pdf(None, "", show=b"(\x93quoted\x94 it\x92s) Tj" + WHITE)
    counts: Counter[str] = Counter()
    out = _text(data, counts)
    assert "\u201cquoted\u201d it\u2019s" in out, repr(out)
    assert counts["pdf_hidden_color"] == 1


def test_a_page_with_hidden_text_reads_its_other_text_as_pypdf_reads_the_page() -> None:
    """Taking the hidden show out changes no other character pypdf reads (ligatures aside)."""
    plain = pypdf.PdfReader(io.BytesIO(_tex_pdf(True, False))).pages[0].extract_text()
    assert _text(_tex_pdf(True, True)) == _text(_tex_pdf(True, False))
    assert "\ufb01" in plain  # pypdf's own reading: the ligature character, which docket spells out


def test_ligature_characters_read_as_their_letters() -> None:
    """U+FB00-FB06 (ff, fi, fl, ffi, ffl, long st, st) as their letters, so a search for
    "specification" finds the text however the font spelled it."""
    data = font_pdf(None, "", show=b"(speci\x02cation \x0bort) Tj", differences={2: "fi", 11: "ff"}, encoding="")
    out = _text(data)
    assert "specification fort" in out.replace("ffort", "fort") and "\ufb01" not in out and "\ufb00" not in out


_TEX_MANUALS = [Path("/usr/share/doc/fontconfig/fontconfig-user.pdf.gz"),
                Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
                Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")]


def _manual(path: Path) -> bytes:
    import gzip

    if not path.exists():
        pytest.skip(f"{path} is not installed")
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


@pytest.mark.parametrize("path", _TEX_MANUALS, ids=lambda p: p.name)
def test_tex_manuals_read_no_control_characters(path: Path) -> None:
    """pdfTeX manuals of the system's documentation (skipped where not installed): no control
    character nor U+FFFD in the text (the fontconfig manual's page 10, which has an offscreen
    line taken out, read "con\\x02guration \\x02le"), no ligature character."""
    data = _manual(path)
    out = _text(data)
    assert not _controls(out), Counter(_controls(out))
    assert not any("\ufb00" <= c <= "\ufb06" for c in out)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_fontconfig_manual_reads_the_words_pdftotext_reads(tmp_path: Path) -> None:
    """Page 10 of the fontconfig manual (an offscreen line taken out): the words with ligatures
    read as pdftotext reads them."""
    data = _manual(_TEX_MANUALS[0])
    pdf = tmp_path / "f.pdf"
    pdf.write_bytes(data)
    ref = subprocess.run(["pdftotext", "-f", "10", "-l", "10", str(pdf), "-"], capture_output=True, check=True,
                         text=True).stdout
    segments = {s.page: s.text for s in read_pdf(data, "f.pdf").segments}
    assert "system-wide configuration file" in " ".join(ref.split())
    assert "system-wide configuration file" in " ".join(segments[10].split())


def test_an_annotation_appearance_reads_through_its_font() -> None:
    """A FreeText annotation's appearance in Courier (StandardEncoding: fi at 0xAE, curly double
    quotes at 0xAA, 0xBA) reads as its font says, not as PDFDocEncoding ("speci®cation ªqº")."""
    from test_pdf_hidden import _annot, _pdf

    data = _pdf(_annot("/FreeText", "BT /Cour 10 Tf 2 10 Td (speci\\256cation \\252WORD\\272) Tj ET"), "quoted")
    out = _text(data)
    assert "specification \u201cquoted\u201d" in out, repr(out)


SMALL_CAPS = {2: "a.sc", 3: "f_f_j", 4: "T_h", 5: "one.oldstyle", 6: "uni00660069", 7: "fi.alt"}


@pytest.mark.parametrize("embed", [True, False], ids=["TrueType program", "no program"])
def test_glyph_names_pypdf_does_not_map_read_as_the_glyph_list_says(embed: bool) -> None:
    """Glyph names the Adobe Glyph List reads but pypdf's table does not (pypdf reads them as the
    name itself, "/a.sc"): read as the list says. With the program embedded, the line read
    "/a.sc/f_f_j..." was taken for remapped text and left out whole."""
    program = font_program("", extra=list(SMALL_CAPS.values())) if embed else None
    data = font_pdf(program, "", show=b"(Big \x02\x03\x04\x05\x06\x07 end) Tj", differences=SMALL_CAPS, encoding="")
    counts: Counter[str] = Counter()
    out = _text(data, counts)
    assert "Big affjTh1fifi end" in out, (out, counts)
    assert not counts


def _program_with_mac_cmap(codes: dict[int, str]) -> bytes:
    """The test TrueType font with the glyphs `codes` names added and a (1,0) cmap sending each
    code to its glyph: a subset as PDF producers embed one, the codes its own."""
    from fontTools.ttLib import TTFont
    from fontTools.ttLib.tables._c_m_a_p import CmapSubtable

    tt = TTFont(io.BytesIO(font_program("", extra=list(codes.values()))))
    table = CmapSubtable.newSubtable(0)
    table.platformID, table.platEncID, table.language = 1, 0, 0
    table.cmap = dict(codes)
    tt["cmap"].tables.append(table)
    buf = io.BytesIO()
    tt.save(buf)
    return buf.getvalue()


def test_a_code_the_program_names_reads_as_its_glyph() -> None:
    """A TrueType subset with no /Encoding and no /ToUnicode whose own (1,0) cmap sends codes 2
    and 3 to glyphs named "fi" and "endash": pypdf reads "\\x02" and "\\x03"; docket reads the
    glyphs the program names."""
    data = font_pdf(_program_with_mac_cmap({2: "fi", 3: "endash"}), "", show=b"(speci\x02c 1\x032) Tj", encoding="")
    assert "\x02" in pypdf.PdfReader(io.BytesIO(data)).pages[0].extract_text()
    counts: Counter[str] = Counter()
    out = _text(data, counts)
    assert "specific 1\u20132" in out, (out, counts)
    assert not counts


def test_codes_the_font_says_nothing_of_go_and_are_counted() -> None:
    """A code no encoding, /Differences or program names (Helvetica, no program, code 2): pypdf
    reads "\\x02"; nothing is invented, the control character goes, counted."""
    data = font_pdf(None, "", show=b"(ab\x02cd) Tj", encoding="")
    counts: Counter[str] = Counter()
    out = _text(data, counts)
    assert "abcd" in out and not _controls(out), repr(out)
    assert counts == Counter({"pdf_unread_glyphs": 1})


def test_a_subset_coded_from_one_reads_through_its_cmap_beside_hidden_text() -> None:
    """A LibreOffice-style export: a TrueType subset whose codes are 1, 2, 3... with a /ToUnicode
    CMap, on a page with a hidden line. The page read as control characters only ("\\x01\\x02...")
    before: every string of the rewritten page was taken as PDFDocEncoding text."""
    word = "Refund policy"
    codes = {k + 1: c for k, c in enumerate(word)}
    from fontTools import agl

    program = _program_with_mac_cmap({code: agl.UV2AGL[ord(c)] for code, c in codes.items()})
    data = font_pdf(program, "", show=b"(" + bytes(codes) + b") Tj" + WHITE, to_unicode=codes, encoding="")
    counts: Counter[str] = Counter()
    out = _text(data, counts)
    assert word in out and not _controls(out), repr(out)
    assert counts == Counter({"pdf_hidden_color": 1})
