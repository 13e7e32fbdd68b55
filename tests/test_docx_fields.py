"""A complex field's code is not shown: Word (and LibreOffice) print a field's result, the part
after `separate`; plain text written between `begin` and `separate` (or `end`, for a field with
no result), or a result nested in another field's code, is a hidden line. It is left out and
counted (`docx_hidden_field_code`); a field's code may run over several paragraphs, and a table
of contents' result over many. LibreOffice's PDF of every case is the oracle (slow test)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

docx = pytest.importorskip("docx")
from docx.oxml import parse_xml  # noqa: E402
from docx.oxml.ns import nsdecls  # noqa: E402
from office_files import box_drawing, box_paragraph, libreoffice_texts  # noqa: E402

from docket.ingest.office import read_docx  # noqa: E402

W = nsdecls("w")
B = '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
S = '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
E = '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
CODE = '<w:r><w:instrText xml:space="preserve"> QUOTE "q" </w:instrText></w:r>'


def t(word: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{word}</w:t></w:r>'


def p(*runs: str) -> str:
    return f"<w:p {W}>{''.join(runs)}</w:p>"


#: (name, paragraphs between the frame's two lines, words kept, words left out, runs counted)
CASES: list[tuple[str, list[str], list[str], list[str], int]] = [
    ("text in a field's code", [p(t("Before "), B, t("CODEWORD"), CODE, S, t("RESULTWORD"), E, t(" after"))],
     ["Before", "RESULTWORD", "after"], ["CODEWORD"], 1),
    ("a field's result only", [p(t("Fee: "), B, CODE, S, t("SHOWNRESULT"), E)], ["SHOWNRESULT"], [], 0),
    ("a field with no result", [p(t("Page "), B, CODE, t("NORESULT"), E, t(" end"))], ["Page", "end"], ["NORESULT"], 1),
    ("code over three paragraphs", [p(t("Lead "), B, CODE), p(t("SPANCODE")), p(S, t("SPANRESULT"), E)],
     ["Lead", "SPANRESULT"], ["SPANCODE"], 1),
    ("a result over three paragraphs (a table of contents)",
     [p(B, CODE, S, t("TOCONE")), p(t("TOCTWO")), p(t("TOCTHREE"), E)], ["TOCONE", "TOCTWO", "TOCTHREE"], [], 0),
    ("a field inside another's code", [p(B, CODE, B, CODE, S, t("INNERRESULT"), E, S, t("OUTERRESULT"), E)],
     ["OUTERRESULT"], ["INNERRESULT"], 1),
    ("a field inside another's result", [p(B, CODE, S, t("OUTERA "), B, CODE, S, t("INNERB"), E, E)],
     ["OUTERA", "INNERB"], [], 0),
    ("an end or separate with no field open", [p(E, t("AFTEREND"), S, t("AFTERSEP"))], ["AFTEREND", "AFTERSEP"], [], 0),
    ("field characters and text in one run",
     [p(t("Lead "), '<w:r><w:fldChar w:fldCharType="begin"/><w:t>ONERUNCODE</w:t>'
        '<w:fldChar w:fldCharType="separate"/><w:t>ONERUNRESULT</w:t><w:fldChar w:fldCharType="end"/></w:r>')],
     ["Lead", "ONERUNRESULT"], ["ONERUNCODE"], 1),
    # a text box is a story of its own: the field open around its anchor does not hide it
    ("a text box anchored in a field's result", [p(B, CODE, S, t("BOXLEAD"), E),
                                                  box_paragraph(box_drawing(p(t("BOXWORD"))))],
     ["BOXLEAD", "BOXWORD"], [], 0),
]


def _doc(paragraphs: list[str], last: bool = True) -> bytes:
    d = docx.Document()
    d.add_paragraph("Refunds take 14 days.")
    body = d.element.body
    for x in paragraphs:
        body.insert(len(body) - 1, parse_xml(x))
    if last:
        d.add_paragraph("Contact billing.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _text(data: bytes, counts: Counter[str] | None = None) -> str:
    return "\n\n".join(s.text for s in read_docx(data, "f.docx", counts=counts).segments)


@pytest.mark.parametrize(("name", "paragraphs", "kept", "gone", "counted"), CASES, ids=[c[0] for c in CASES])
def test_a_fields_code_is_left_out(name: str, paragraphs: list[str], kept: list[str], gone: list[str],
                                   counted: int) -> None:
    counts: Counter[str] = Counter()
    text = _text(_doc(paragraphs), counts)
    for word in kept:
        assert word in text, (word, text)
    for word in gone:
        assert word not in text, (word, text)
    assert counts["docx_hidden_field_code"] == counted, counts
    assert "Refunds take 14 days." in text and "Contact billing." in text


def test_a_field_never_closed_hides_the_rest_of_its_story_as_word_does() -> None:
    counts: Counter[str] = Counter()
    text = _text(_doc([p(t("Lead"), B, CODE), p(t("UNCLOSED"))]), counts)
    assert "Lead" in text and "UNCLOSED" not in text and "Contact billing." not in text
    assert counts["docx_hidden_field_code"] == 2


def test_a_header_field_does_not_reach_into_the_body() -> None:
    d = docx.Document()
    hdr = d.sections[0].header
    hdr.is_linked_to_previous = False
    hdr._element.append(parse_xml(p(t("Handbook "), B, CODE)))  # a field the header never closes
    d.add_paragraph("Refunds take 14 days.")
    buf = io.BytesIO()
    d.save(buf)
    text = _text(buf.getvalue())
    assert "Refunds take 14 days." in text and "Header: Handbook" in text


def test_deeply_nested_fields_cost_linear_time() -> None:
    """20,000 open fields over 20,000 runs: each run is judged in one step, not by a pass over
    the open fields (which took minutes); 20 s is a bound for a loaded machine, not a claim."""
    import time

    many = p(*([B] * 20_000), *([t("x")] * 20_000), *([E] * 20_000), t("AFTERDEEP"))
    start = time.perf_counter()
    counts: Counter[str] = Counter()
    text = _text(_doc([many]), counts)
    assert "x" not in text.split() and "AFTERDEEP" in text and counts["docx_hidden_field_code"] == 20_000
    assert time.perf_counter() - start < 20


@pytest.mark.slow
def test_docx_fields_vs_libreoffice(tmp_path: Path) -> None:
    """LibreOffice prints each case; every kept word is in its text and no left-out word is."""
    from redteam_log import record

    printed_texts = libreoffice_texts([_doc(paragraphs) for _name, paragraphs, *_rest in CASES], tmp_path)
    differ = []
    for printed, (name, paragraphs, kept, gone, _n) in zip(printed_texts, CASES, strict=True):
        text = _text(_doc(paragraphs))
        differ += [f"{name}: {word}" for word in kept + gone if (word in printed) != (word in text)]
    record("hidden/docx-field-code-libreoffice", tried=len(CASES), escaped=len(differ),
           note=f"DOCX field codes, LibreOffice's PDF text vs docket's: {differ}")
    assert not differ, differ
