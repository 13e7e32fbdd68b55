"""Tables inside table cells: their rows are read (each row's cells joined as " | ", one row per
line inside the outer cell), under the same hidden-text rules. They used to be dropped: only a
cell's own paragraphs were read, so a fee schedule nested in a layout table was lost."""

from __future__ import annotations

import io
from collections import Counter

import pytest

pytest.importorskip("docx")

from docket.ingest.office import MAX_TABLE_DEPTH, read_docx  # noqa: E402


def _nested(depth: int, hidden_inner: bool = False) -> bytes:
    import docx

    d = docx.Document()
    d.add_paragraph("Fee schedule follows.")
    table = d.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Outer"
    cell = table.cell(0, 1)
    for level in range(depth):
        inner = cell.add_table(rows=1, cols=2)
        inner.cell(0, 0).text = f"level{level + 1}"
        cell = inner.cell(0, 1)
    run = cell.paragraphs[0].add_run("Cancellation fee 25 EUR")
    if hidden_inner:
        run.font.hidden = True
    cell.add_paragraph("Refund within 30 days")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _text(data: bytes, counts: Counter[str] | None = None) -> str:
    return "\n".join(s.text for s in read_docx(data, "t.docx", counts=counts).segments)


def test_a_nested_table_is_read_row_by_row() -> None:
    text = _text(_nested(1))
    assert "Outer | level1 | Cancellation fee 25 EUR\nRefund within 30 days" in text


@pytest.mark.parametrize("depth", [2, MAX_TABLE_DEPTH, MAX_TABLE_DEPTH + 3])
def test_deep_nesting_loses_no_text(depth: int) -> None:
    text = _text(_nested(depth))
    assert "Cancellation fee 25 EUR" in text and "Refund within 30 days" in text
    assert all(f"level{k}" in text for k in range(1, depth + 1))


def test_hidden_text_in_a_nested_table_stays_out() -> None:
    counts: Counter[str] = Counter()
    text = _text(_nested(2, hidden_inner=True), counts)
    assert "Cancellation fee" not in text and "Refund within 30 days" in text
    assert counts["docx_hidden_vanish"] == 1
