"""Type 3 fonts whose glyphs paint nothing: text drawn with them is a hidden line a text extractor
reads and no viewer paints ("SECRET" in blank glyphs), as is text in a font whose matrix shrinks
its glyphs to nothing. Left out and counted (`pdf_hidden_blank_glyphs`, `pdf_hidden_font_size`).
A glyph that may paint (any painting operator in its stream, a stream docket does not read) is
kept. poppler's pixels are the oracle (slow test)."""

from __future__ import annotations

import io
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

pypdf = pytest.importorskip("pypdf")
from pypdf.generic import (  # noqa: E402
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    NameObject,
    NumberObject,
)

from docket.ingest.office import read_pdf  # noqa: E402

BOX = b"0 0 500 700 re f"
USUAL = (0.001, 0.0, 0.0, 0.001, 0.0, 0.0)


def _name(key: str) -> NameObject:
    return NameObject("/" + key)


def _pdf(word: str, glyph: bytes = b"", matrix: tuple[float, ...] = USUAL, show: bytes | None = None,
         glyphs: dict[str, bytes] | None = None, encoding: object = None, mapped: str | None = None,
         compress: bool = False) -> bytes:
    """A page with a Helvetica line, then `word` shown in a Type 3 font whose glyph for each letter
    (`mapped`: the letters the encoding names, all of `word`'s by default) is `glyph` after its
    `d1` (`glyphs` per letter overrides it)."""
    w = pypdf.PdfWriter()
    page = w.add_blank_page(595, 842)
    letters = sorted(set(mapped if mapped is not None else word))
    procs = DictionaryObject()
    diffs = ArrayObject()
    for ch in letters:
        st = DecodedStreamObject()
        st.set_data(b"500 0 0 0 500 700 d1\n" + (glyphs or {}).get(ch, glyph))
        procs[_name(ch)] = w._add_object(st.flate_encode() if compress else st)
        diffs += [NumberObject(ord(ch)), _name(ch)]
    enc = encoding if encoding is not None else DictionaryObject({_name("Type"): _name("Encoding"),
                                                                  _name("Differences"): diffs})
    codes = [ord(c) for c in word] + [ord(c) for c in letters]
    first, last = min(codes), max(codes)
    font = DictionaryObject({
        _name("Type"): _name("Font"), _name("Subtype"): _name("Type3"),
        _name("FontBBox"): ArrayObject([NumberObject(0), NumberObject(0), NumberObject(500), NumberObject(700)]),
        _name("FontMatrix"): ArrayObject([FloatObject(x) for x in matrix]), _name("CharProcs"): procs,
        _name("Encoding"): enc, _name("FirstChar"): NumberObject(first), _name("LastChar"): NumberObject(last),
        _name("Widths"): ArrayObject([NumberObject(500)] * (last - first + 1)), _name("Resources"): DictionaryObject(),
    })
    helv = DictionaryObject({_name("Type"): _name("Font"), _name("Subtype"): _name("Type1"),
                             _name("BaseFont"): _name("Helvetica")})
    page[_name("Resources")] = DictionaryObject({_name("Font"): DictionaryObject({
        _name("F3"): w._add_object(font), _name("F1"): w._add_object(helv)})})
    content = DecodedStreamObject()
    shown = show if show is not None else b"(" + word.encode() + b") Tj"
    content.set_data(b"BT /F1 12 Tf 50 760 Td (Refunds take 14 days.) Tj ET\nBT /F3 24 Tf 50 700 Td " + shown +
                     b" ET\n")
    page[_name("Contents")] = w._add_object(content)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


#: (name, pdf, word, whether docket keeps it, the count it adds, whether poppler paints it)
CASES: list[tuple[str, bytes, str, bool, str, bool]] = [
    ("glyphs that paint nothing", _pdf("SECRET"), "SECRET", False, "blank_glyphs", False),
    ("glyphs that paint a box", _pdf("SHOWN", BOX), "SHOWN", True, "", True),
    ("blank glyphs shown by TJ", _pdf("SECRET", show=b"[(SEC) -20 (RET)] TJ"), "SECRET", False, "blank_glyphs",
     False),
    ("codes the encoding does not name", _pdf("SECRET", BOX, mapped="Q"), "SECRET", False, "blank_glyphs", False),
    ("a matrix that shrinks glyphs to nothing", _pdf("TINY", BOX, matrix=(1e-7, 0, 0, 1e-7, 0, 0)), "TINY", False,
     "font_size", False),
    ("a matrix ten times the usual", _pdf("LARGE", BOX, matrix=(0.01, 0, 0, 0.01, 0, 0)), "LARGE", True, "", True),
    ("one glyph that paints among blank ones", _pdf("MIXED", glyphs={"X": BOX}), "MIXED", True, "", True),
    ("a glyph drawn with a stroke", _pdf("STROKED", b"10 w 0 0 m 500 700 l S"), "STROKED", True, "", True),
    ("blank glyphs, compressed", _pdf("SECRET", compress=True), "SECRET", False, "blank_glyphs", False),
    ("box glyphs, compressed", _pdf("SHOWN", BOX, compress=True), "SHOWN", True, "", True),
    # by policy, kept where poppler paints nothing: a painting operator's name anywhere counts as paint,
    # and a glyph that inflates past 64 KB is not read
    ("an operator's name in a glyph's comment", _pdf("COMMENT", b"% f"), "COMMENT", True, "", False),
    ("a small glyph stream that inflates past the limit", _pdf("INFLATED", b"%" + b" " * 200_000 + b"\n",
                                                               compress=True), "INFLATED", True, "", False),
]


def _text(data: bytes, counts: Counter[str] | None = None) -> str:
    return "\n".join(s.text for s in read_pdf(data, "t.pdf", counts=counts).segments)


@pytest.mark.parametrize(("name", "data", "word", "kept", "kind", "painted"), CASES, ids=[c[0] for c in CASES])
def test_text_in_glyphs_that_paint_nothing_is_left_out(name: str, data: bytes, word: str, kept: bool, kind: str,
                                                       painted: bool) -> None:
    counts: Counter[str] = Counter()
    text = _text(data, counts)
    assert (word in text) is kept, text
    assert "Refunds take 14 days." in text
    assert counts == (Counter({f"pdf_hidden_{kind}": 1}) if kind else Counter()), counts


@pytest.mark.parametrize(("name", "data"), [
    ("an encoding by name", _pdf("NAMED", encoding=NameObject("/WinAnsiEncoding"))),
    ("an encoding over a base", _pdf("BASED", encoding=DictionaryObject({
        _name("BaseEncoding"): _name("WinAnsiEncoding"), _name("Differences"): ArrayObject()}))),
    ("a glyph stream past the read limit", _pdf("LONG", b"%" + b"x" * 70_000 + b"\n")),
    ("a matrix docket cannot read", _pdf("ODDMATRIX", matrix=(0.001, 0.0, 0.0))),
])
def test_a_type3_font_docket_cannot_read_is_not_judged(name: str, data: bytes) -> None:
    counts: Counter[str] = Counter()
    word = {"an encoding by name": "NAMED", "an encoding over a base": "BASED",
            "a glyph stream past the read limit": "LONG", "a matrix docket cannot read": "ODDMATRIX"}[name]
    assert word in _text(data, counts) and not counts


def _painted(png: Path) -> bool:
    """Anything dark in the band where the Type 3 line is drawn (y 700 pt, 24 pt tall)."""
    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(png).convert("L")).astype(int)
    dpi = 50
    top, bottom = int((842 - 700 - 30) * dpi / 72), int((842 - 700 + 10) * dpi / 72)
    return bool((img[top:bottom] < 200).sum() >= 4)


@pytest.mark.slow
def test_type3_glyphs_vs_poppler(tmp_path: Path) -> None:
    from redteam_log import record

    raster = shutil.which("pdftoppm")
    if raster is None:
        pytest.skip("needs poppler (apt-get install poppler-utils)")
    wrong, differ = [], []
    for k, (name, data, word, kept, _kind, painted) in enumerate(CASES):
        pdf = tmp_path / f"t{k:02d}.pdf"
        pdf.write_bytes(data)
        subprocess.run([raster, "-png", "-r", "50", "-singlefile", str(pdf), str(pdf.with_suffix(""))],
                       check=True, capture_output=True, timeout=60)
        shown = _painted(pdf.with_suffix(".png"))
        if shown is not painted:
            wrong.append(name)
        if (word in _text(data)) is not kept or (shown and not kept):
            differ.append(name)
    record("hidden/pdf-type3-poppler", tried=len(CASES), escaped=len(differ),
           note=f"PDF Type 3 glyphs, poppler's pixels vs docket's text; table wrong: {wrong}; differ: {differ}")
    assert not wrong and not differ, (wrong, differ)


def test_a_show_of_spaces_alone_is_not_hidden_text() -> None:
    """A space glyph paints nothing by design: words shown one by one with blank spaces between
    them keep their spaces, and nothing is counted."""
    words = b"(SH) Tj ( ) Tj (OWN) Tj"
    counts: Counter[str] = Counter()
    text = _text(_pdf("SH OWN", BOX, show=words, glyphs={" ": b""}, mapped="SHOWN"), counts)
    assert "SH" in text and "OWN" in text and not counts, (text, counts)


def test_glyph_reads_are_bounded_by_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the document's glyph reads, a glyph counts as painting: its text is kept, never refused."""
    import docket.ingest.pdf_type3 as pdf_type3

    monkeypatch.setattr(pdf_type3, "MAX_GLYPH_READS", 0)
    counts: Counter[str] = Counter()
    assert "SECRET" in _text(_pdf("SECRET"), counts) and not counts


def test_a_matplotlib_chart_in_type3_fonts_reads_as_pypdf_reads_it() -> None:
    """matplotlib writes PDF text in Type 3 fonts by default (`pdf.fonttype` 3): every glyph that
    paints is read, spaces and all, and nothing is counted."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [3, 1, 2], label="refund latency")
    ax.set_title("Refunds take 14 days, median 3.2")
    ax.set_xlabel("Week of the quarter")
    ax.legend()
    ax.text(1.5, 2.5, "Policy v3 (effective 2025-01-01)")
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf")
    plt.close(fig)
    data = buf.getvalue()
    reader = pypdf.PdfReader(io.BytesIO(data))
    assert {f.get_object()["/Subtype"] for f in reader.pages[0]["/Resources"]["/Font"].values()} == {"/Type3"}
    counts: Counter[str] = Counter()
    assert _text(data, counts) == reader.pages[0].extract_text().strip() and not counts
