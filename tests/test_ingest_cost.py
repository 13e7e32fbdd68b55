"""Files and attachments that would cost more than they should (issue 20 §3, §6; issue 25 §5).

Each class is refused (or bounded) before the expensive step, with one line that names the file
and the limit: pipes, sockets and devices where a file is expected (reading a FIFO blocks
forever); a DOCX whose parts inflate far past its size; a PDF with too many pages; an attachment
with more text than `attach.max_chars`; a history file nested too deeply. Lone surrogates in
attachment text are replaced by U+FFFD and counted, the same way from the CLI, the service and
Python.
"""

from __future__ import annotations

import base64
import io
import os
import re
import socket
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cli_run import run
from hypothesis import given, settings
from hypothesis import strategies as st
from office_files import make_docx, make_pdf

from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.history import load_history
from docket.modes.attach import Attachment, as_attachment, read
from docket.policy import Policy, load_policy_dict
from docket.safeio import NOT_REGULAR, decode, read_bytes
from docket.store.base import MemoryStore

EMB = HashEmbedder(64)
POLICY = Policy()


def brief(files: list[Any], policy: Policy | None = None):
    from docket.assemble import assemble

    return assemble("What does it say?", store=MemoryStore([]), attachments=files, embedder=EMB,
                    policy=policy or POLICY)


def one_line(e: BaseException, name: str) -> str:
    msg = str(e)
    assert "\n" not in msg and name in msg, msg
    return msg


# --- non-regular files ------------------------------------------------------------------------------


@pytest.fixture()
def specials(tmp_path: Path):
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock.txt"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    yield {"fifo": fifo, "socket": sock_path, "device": Path("/dev/null")}
    sock.close()


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_a_file_that_is_not_regular_is_refused_without_blocking(specials, kind: str) -> None:
    path = specials[kind]
    t = time.perf_counter()
    for call in (lambda: read_bytes(path), lambda: Attachment.from_path(path), lambda: load_history(path),
                 lambda: brief([str(path)])):
        with pytest.raises(InputError) as e:
            call()
        assert NOT_REGULAR in one_line(e.value, str(path))
    assert time.perf_counter() - t < 5


def test_a_folder_attached_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        Attachment.from_path(tmp_path)


def test_cli_file_and_history_of_a_fifo_exit_2_in_one_line(specials, tmp_path: Path) -> None:
    fifo = str(specials["fifo"])
    store = tmp_path / "c.jsonl"
    store.write_text('{"id": "a", "doc": "d", "text": "Refunds take 14 days."}\n', encoding="utf-8")
    for args in (["assemble", "-q", "q?", "--file", fifo],
                 ["assemble", "-q", "q?", "--store", str(store), "--history", fifo]):
        proc = subprocess.run([sys.executable, "-m", "docket", *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "COLUMNS": "200"})
        assert proc.returncode == 2, proc.stderr
        assert "not a regular file" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_read_bytes_never_reads_past_its_limit(tmp_path: Path) -> None:
    f = tmp_path / "big.txt"
    f.write_bytes(b"x" * 5000)
    assert read_bytes(f, 5000) == b"x" * 5000
    with pytest.raises(InputError, match="more than attach.max_bytes 4,999"):
        read_bytes(f, 4999, limit="attach.max_bytes")


# --- lone surrogates ----------------------------------------------------------------------------------


def test_a_lone_surrogate_in_attachment_text_is_replaced_and_counted() -> None:
    removed: Counter[str] = Counter()
    text = read(as_attachment(("notes.md", "Refunds \ud800take 14 days.\udfff")), POLICY, removed)
    assert text.segments[0].text == "Refunds \ufffdtake 14 days.\ufffd"
    assert removed == {"lone_surrogates": 2}
    b = brief([("notes.md", "Refunds \ud800take 14 days.")])
    ev = next(e for e in b.trace if e["move"] == "attach")
    assert ev["numbers"]["removed"] == {"lone_surrogates": 1}
    assert "\ud800" not in b.user and "\ufffd" in b.user


def test_surrogate_bytes_in_a_file_are_replaced_and_a_pair_is_joined(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    lone = "a\ud800b".encode("utf-8", "surrogatepass")
    pair = "\ud83d\ude00".encode("utf-8", "surrogatepass")  # CESU-8 of an emoji
    assert decode(lone + pair, "f.txt", counts=counts) == "a\ufffdb\U0001f600"
    assert counts == {"lone_surrogates": 1}
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 0xff"):
        decode(b"ok\xff", "f.txt")  # other bad bytes are still refused


def test_index_counts_lone_surrogates_in_its_report(tmp_path: Path) -> None:
    from docket.ingest import IndexOptions, index_paths
    from docket.store.sqlite import SQLiteStore

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_bytes("# A\n\nRefunds \ud800 take 14 days.\n".encode("utf-8", "surrogatepass"))
    store = SQLiteStore(tmp_path / "i.db")
    try:
        report = index_paths(store, [tmp_path / "docs"], IndexOptions(embedder=EMB))
        assert report.ok, report.problems
        assert report.removed["lone_surrogates"] == 1
        assert "\ufffd" in store.chunks_of("a.md", 1)[0].text
    finally:
        store.close()


_SURR = st.integers(0xD800, 0xDFFF).map(chr)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.text(min_size=1, max_size=8).filter(lambda t: not re.search("[\ud800-\udfff]", t)),
                          _SURR), min_size=1, max_size=30))
def test_any_surrogates_in_attachment_text_never_crash_and_are_all_counted(parts: list[str]) -> None:
    text = "word " + "".join(parts)
    lone = sum(1 for p in parts if len(p) == 1 and 0xD800 <= ord(p) <= 0xDFFF)
    removed: Counter[str] = Counter()
    try:
        out = read(as_attachment(("t.txt", text)), POLICY, removed)
    except InputError as e:  # only ever "holds no text" style refusals, never an encoder error
        assert "t.txt" in str(e)
        return
    joined = "".join(s.text for s in out.segments)
    assert not re.search("[\ud800-\udfff]", joined)
    # a high surrogate followed by a low one is the character they encode; the rest are replaced
    assert removed["lone_surrogates"] <= lone
    replaced = removed["lone_surrogates"] + removed["nul_chars"]  # NUL too: no store keeps it
    assert replaced == joined.count("\ufffd") - text.count("\ufffd")


# --- DOCX that inflate --------------------------------------------------------------------------------


def _inflated_docx(extra_bytes: int) -> bytes:
    """A real DOCX whose document.xml carries `extra_bytes` of empty paragraphs (compresses ~1000:1)."""
    base = make_docx([("h1", "Terms"), ("p", "The deposit is two months of rent.")])
    src = zipfile.ZipFile(io.BytesIO(base))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "word/document.xml":
                pad = b"<w:p/>" * (extra_bytes // 6)
                data = data.replace(b"<w:body>", b"<w:body>" + pad, 1)
            z.writestr(info.filename, data)
    return out.getvalue()


def _forge_sizes(data: bytes, name: str, size: int) -> bytes:
    """The zip with `name`'s uncompressed size rewritten to `size` in both headers (a lying zip)."""
    buf = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(name)
    local = info.header_offset
    buf[local + 22 : local + 26] = size.to_bytes(4, "little")
    cd = bytes(buf).find(b"PK\x01\x02" + bytes(buf[local + 4 : local + 6]))
    while cd != -1:
        n = int.from_bytes(buf[cd + 28 : cd + 30], "little")
        if bytes(buf[cd + 46 : cd + 46 + n]) == name.encode():
            buf[cd + 24 : cd + 28] = size.to_bytes(4, "little")
            break
        cd = bytes(buf).find(b"PK\x01\x02", cd + 4)
    return bytes(buf)


def test_a_docx_that_inflates_past_the_cap_is_refused_before_parsing() -> None:
    bomb = _inflated_docx(50_000_000)
    assert len(bomb) < 200_000  # a small file...
    t = time.perf_counter()
    with pytest.raises(InputError) as e:
        brief([Attachment("lease.docx", bomb)])
    assert time.perf_counter() - t < 5  # ...refused in well under the minutes python-docx would take
    msg = one_line(e.value, "lease.docx")
    assert "attach.max_unzipped_bytes 20,000,000" in msg


def test_a_docx_with_forged_sizes_never_inflates_past_them() -> None:
    bomb = _forge_sizes(_inflated_docx(30_000_000), "word/document.xml", 2_000)
    t = time.perf_counter()
    with pytest.raises(InputError) as e:
        brief([Attachment("forged.docx", bomb)])
    assert time.perf_counter() - t < 5
    one_line(e.value, "forged.docx")


def test_the_unzipped_cap_is_a_policy_key() -> None:
    doc = _inflated_docx(300_000)
    pol = Policy().updated(attach={"max_unzipped_bytes": 100_000})
    with pytest.raises(InputError, match="attach.max_unzipped_bytes 100,000"):
        brief([Attachment("a.docx", doc)], pol)
    assert brief([Attachment("a.docx", doc)]).found  # under the default it reads


def test_a_docx_of_too_many_paragraphs_is_refused_before_the_walk() -> None:
    doc = _inflated_docx(6 * 120_000)  # 120,000 empty paragraphs: 720 KB of XML, well under the byte cap
    t = time.perf_counter()
    with pytest.raises(InputError) as e:
        brief([Attachment("long.docx", doc)])
    assert time.perf_counter() - t < 5  # python-docx's walk took ~100 us a paragraph
    assert "paragraphs and table rows" in one_line(e.value, "long.docx") and "attach.max_pages 500" in str(e.value)


# --- PDF pages and text -----------------------------------------------------------------------------------


def test_a_pdf_with_more_pages_than_the_cap_is_refused_before_reading_them() -> None:
    pdf = make_pdf([f"Page {i}." for i in range(12)])
    pol = Policy().updated(attach={"max_pages": 10})
    with pytest.raises(InputError) as e:
        brief([Attachment("long.pdf", pdf)], pol)
    assert "has 12 pages, more than attach.max_pages 10" in one_line(e.value, "long.pdf")
    assert brief([Attachment("long.pdf", pdf)]).found


def test_the_default_page_cap_refuses_a_long_pdf_fast() -> None:
    pdf = make_pdf(["x"] * 501)
    t = time.perf_counter()
    with pytest.raises(InputError, match="501 pages, more than attach.max_pages 500"):
        brief([Attachment("many.pdf", pdf)])
    assert time.perf_counter() - t < 10


def test_pdf_text_is_capped_page_by_page() -> None:
    pdf = make_pdf(["word " * 20] * 6)
    pol = Policy().updated(attach={"max_chars": 250})
    with pytest.raises(InputError, match="more than 250 characters of text by page"):
        brief([Attachment("wordy.pdf", pdf)], pol)


# --- text size ----------------------------------------------------------------------------------------------


def test_an_attachment_over_max_chars_is_refused_before_chunking() -> None:
    text = "no sentence end " * 70_000  # 1.1 M characters in one paragraph
    t = time.perf_counter()
    with pytest.raises(InputError) as e:
        brief([("huge.txt", text)])
    assert time.perf_counter() - t < 5
    assert "more than attach.max_chars 1,000,000" in one_line(e.value, "huge.txt")


def test_cli_a_14_mb_one_paragraph_file_is_one_line_in_seconds(tmp_path: Path) -> None:
    f = tmp_path / "one.txt"
    f.write_bytes(b"lorem ipsum dolor " * 800_000)  # 14.4 MB, no sentence end
    t = time.perf_counter()
    out = run("assemble", "-q", "What is it?", "--file", str(f))
    assert time.perf_counter() - t < 20
    assert out.returncode == 2 and "attach.max_chars" in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("key", ["max_unzipped_bytes", "max_pages", "max_chars"])
def test_bad_cap_settings_name_the_field(key: str) -> None:
    with pytest.raises(InputError) as e:
        load_policy_dict({"attach": {key: 0}}, where="p.toml")
    assert f"attach.{key}" in str(e.value)


# --- history nesting -------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", ["[" * 5000 + "]" * 5000,
                                  '{"messages": ' + "[" * 3000 + "]" * 3000 + "}",
                                  '{"role": "user", "content": "hi"}\n' + '{"a": ' * 3000 + "1" + "}" * 3000])
def test_a_deeply_nested_history_file_is_one_error(tmp_path: Path, body: str) -> None:
    f = tmp_path / "h.json"
    f.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_history(f)
    assert "nested" in one_line(e.value, str(f))
    store = tmp_path / "c.jsonl"
    store.write_text('{"id": "a", "doc": "d", "text": "Refunds take 14 days."}\n', encoding="utf-8")
    out = run("assemble", "-q", "q?", "--store", str(store), "--history", str(f))
    assert out.returncode == 2 and "nested" in out.stderr and "Traceback" not in out.stderr


# --- the service ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from docket.api import Session
    from docket.server import ServerConfig, create_app

    db = str(tmp_path_factory.mktemp("cost") / "s.db")
    with Session.open(db, create=True, embedder=EMB) as s:
        s.index(records=[{"id": "a", "doc": "d", "text": "Refunds take 14 days."}])
    return TestClient(create_app(ServerConfig(db=db), session=Session.open(db, embedder=EMB)))


def test_service_a_lone_surrogate_in_attachment_text_is_not_a_500(client) -> None:
    body = '{"question": "How long?", "attachments": [{"name": "n.md", "text": "Refunds \\ud800 take 14 days."}]}'
    r = client.post("/v1/ask", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    ev = next(e for e in r.json()["trace"] if e["move"] == "attach")
    assert ev["numbers"]["removed"] == {"lone_surrogates": 1}


@pytest.mark.parametrize("name, data, limit", [
    ("lease.docx", _inflated_docx(30_000_000), "attach.max_unzipped_bytes"),
    ("many.pdf", make_pdf(["x"] * 501), "attach.max_pages"),
])
def test_service_refuses_costly_files_naming_file_and_limit(client, name: str, data: bytes, limit: str) -> None:
    body = {"question": "q?", "attachments": [{"name": name, "data_base64": base64.b64encode(data).decode()}]}
    t = time.perf_counter()
    r = client.post("/v1/ask", json=body)
    assert time.perf_counter() - t < 10
    assert r.status_code in (413, 422), r.text
    msg = r.json()["error"]["message"]
    assert name in msg and limit in msg


def test_service_refuses_text_over_max_chars(client) -> None:
    body = {"question": "q?", "attachments": [{"name": "big.txt", "text": "many words here " * 70_000}]}
    r = client.post("/v1/ask", json=body)
    assert r.status_code in (413, 422) and "attach.max_chars" in r.json()["error"]["message"]


def test_docx_style_names_read_once_are_python_docx_names() -> None:
    import docx
    from docx.text.paragraph import Paragraph

    from docket.ingest.office import _W, _paragraph_styles, _style_name

    d = docx.Document()
    d.add_heading("Title text", level=0)
    for level in (1, 2, 3):
        d.add_heading(f"Heading {level}", level=level)
    for style in ("Normal", "List Bullet", "Quote", "Intense Quote", None):
        d.add_paragraph(f"Paragraph in {style}", style=style)
    buf = io.BytesIO()
    d.save(buf)
    doc = docx.Document(io.BytesIO(buf.getvalue()))
    styles, default = _paragraph_styles(doc)
    paras = [c for c in doc.element.body.iterchildren() if c.tag == f"{_W}p"]
    assert len(paras) == 9
    for p in paras:
        assert _style_name(p, styles, default) == (Paragraph(p, doc).style.name or "")


def test_an_attachment_searched_inside_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from docket.modes import attach

    calls: list[str] = []
    real = attach.read
    monkeypatch.setattr(attach, "read", lambda att, *a, **k: calls.append(att.name) or real(att, *a, **k))
    pdf = make_pdf([f"Section {i}. " + "The tenant pays the rent on the first day of the month. " * 8
                    for i in range(6)])
    b = brief([Attachment("lease.pdf", pdf)], Policy().updated(attach={"whole_max_tokens": 100}))
    assert next(e for e in b.trace if e["move"] == "attach")["action"] == "search"
    assert calls == ["lease.pdf"]  # not once for the whole block and again for the search
