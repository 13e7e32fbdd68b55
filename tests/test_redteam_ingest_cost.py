"""Red team: inputs that cost docket more than they cost the sender, at ingestion and attachment.

Each case is a small input built to take minutes or gigabytes (a quadratic chunker, a cubic
heading regex, a DOCX that inflates, a PDF of many pages, a FIFO where a file is expected, a
history nested thousands deep, lone surrogates). An *escape* is a case that neither finishes nor
is refused within its time budget, or that ends in anything but one InputError line (a
traceback, a 500, a read that blocks). Counts go to `scripts/redteam.sh` through redteam_log.
"""

from __future__ import annotations

import base64
import io
import os
import random
import re
import socket
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redteam_log
from office_files import box_alternate, box_drawing, box_paragraph, box_pict, make_docx, make_pdf

from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.history import load_history
from docket.ingest.chunking import ChunkSize, chunk_text
from docket.modes.attach import Attachment, as_attachment, read
from docket.policy import Policy
from docket.safeio import read_bytes
from docket.store.base import MemoryStore
from docket.tokens import default_counter

pytestmark = pytest.mark.slow
EMB = HashEmbedder(64)


def _outcome(fn: Callable[[], Any], budget: float) -> str:
    """"ok", "refused" (one InputError line), "blocked" (over budget) or "crash: ..."."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            fn()
            box["r"] = "ok"
        except InputError as e:
            box["r"] = "refused" if "\n" not in str(e) else f"crash: multi-line {e!s:.80}"
        except BaseException as e:  # noqa: BLE001 - any other exception is the finding
            box["r"] = f"crash: {type(e).__name__}: {e!s:.80}"

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(budget)
    return "blocked" if t.is_alive() else box["r"]


def _brief(files: list[Any], policy: Policy | None = None) -> Any:
    from docket.assemble import assemble

    return assemble("What does it say?", store=MemoryStore([]), attachments=files, embedder=EMB,
                    policy=policy or Policy())


def _docx_with(xml_extra: bytes, forge: int | None = None) -> bytes:
    base = make_docx([("h1", "Terms"), ("p", "The deposit is two months of rent.")])
    src = zipfile.ZipFile(io.BytesIO(base))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "word/document.xml":
                data = data.replace(b"<w:body>", b"<w:body>" + xml_extra, 1)
            z.writestr(info.filename, data)
    data = out.getvalue()
    if forge is not None:  # rewrite the declared size of document.xml in the central directory
        buf = bytearray(data)
        at = buf.find(b"PK\x01\x02")
        while at != -1:
            n = int.from_bytes(buf[at + 28 : at + 30], "little")
            if bytes(buf[at + 46 : at + 46 + n]) == b"word/document.xml":
                buf[at + 24 : at + 28] = forge.to_bytes(4, "little")
            at = buf.find(b"PK\x01\x02", at + 4)
        data = bytes(buf)
    return data


def _costly_attachments() -> list[tuple[str, Callable[[], Any]]]:
    words = " ".join(random.Random(7).choice(["alpha", "beta", "refund", "12", "naïve"]) for _ in range(200_000))
    many_entries = io.BytesIO()
    with zipfile.ZipFile(many_entries, "w") as z:
        z.writestr("[Content_Types].xml", "<x/>")
        for i in range(12_000):
            z.writestr(f"word/media/{i}.bin", b"")
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("200k-word paragraph, no sentence end (whole size)", lambda: chunk_text(words, default_counter(),
                                                                                ChunkSize(100_000, 0))),
        ("200k-word paragraph through assemble", lambda: _brief([("one.txt", words)])),
        ("14 MB one-paragraph text", lambda: _brief([("big.txt", "lorem ipsum dolor " * 800_000)])),
        ("2 MB word without a space", lambda: chunk_text("A" * 2_000_000, default_counter(), ChunkSize(300, 40))),
        ("heading of 100k spaces", lambda: chunk_text("# a" + " " * 100_000 + "x\n\nbody", default_counter())),
        ("heading of ' #' x 50k", lambda: chunk_text("# a" + " #" * 50_000 + "x\n\nbody", default_counter())),
        ("300k chars of CJK, no space", lambda: _brief([("zh.txt", "".join(chr(0x4E00 + i % 3000)
                                                                          for i in range(300_000)))])),
        ("50k-line fenced code block", lambda: _brief([("code.md", "```\n" + "\n".join(
            f"    x{i} = f({i})" for i in range(50_000)) + "\n```")])),
        ("many tiny sentences", lambda: _brief([("s.txt", "A. " * 300_000)])),
        ("Markdown of 60k inline HTML elements (cleaned as a page)",
         lambda: _brief([("spans.md", "Para " + "<span style='color:#fff'>x</span> " * 60_000)])),
        ("HTML of 3,000 nested boxes, each with a white box over it (the covered-text rule)",
         lambda: _brief([("nest.html", "<html><body>" + "<div style='position:relative'><p>x</p>"
                          "<div style='position:absolute;inset:0;background:#fff'></div>" * 3_000
                          + "</div>" * 3_000 + "</body></html>")])),
        ("HTML of 20,000 paragraphs under one white box", lambda: _brief([("many.html", "<html><body>"
                          "<div style='position:relative'>" + "<p>word</p>" * 20_000
                          + "<div style='position:absolute;inset:0;background:#fff'></div></div></body></html>")])),
        ("Markdown of 50k paragraphs and one comment", lambda: _brief([("c.md", "<!-- c -->\n\n" + "".join(
            f"paragraph {i}.\n\n" for i in range(50_000)))])),
    ]
    for mb in (20, 50, 200):
        cases.append((f"DOCX inflating to {mb} MB of <w:p/>",
                      lambda mb=mb: _brief([Attachment("bomb.docx", _docx_with(b"<w:p/>" * (mb * 1_000_000 // 6)))])))
    cases.append(("DOCX of 2 MB of empty paragraphs (under the byte cap)",
                  lambda: _brief([Attachment("p.docx", _docx_with(b"<w:p/>" * 333_000))])))
    cases.append(("DOCX of 1 MB of one-word paragraphs", lambda: _brief([Attachment("w.docx", _docx_with(
        b"<w:p><w:r><w:t>word</w:t></w:r></w:p>" * 27_000))])))
    box = box_paragraph(box_alternate(box_drawing("Boxed"), box_pict("Boxed"))).encode()
    cases.append(("DOCX of one text box beside 3M elements in its drawing", lambda: _brief([Attachment(
        "junk.docx", _docx_with(box.replace(b"<w:drawing>", b"<w:drawing>" + b"<a:x/>" * 3_000_000, 1)))])))
    cases.append(("DOCX of 27,000 one-word text boxes in one drawing", lambda: _brief([Attachment(
        "boxes.docx", _docx_with(box.replace(b"<w:drawing>", b"<w:drawing>" + b"<w:txbxContent><w:p><w:r><w:t>"
                                             b"word</w:t></w:r></w:p></w:txbxContent>" * 27_000, 1)))])))
    cases.append(("DOCX of a compatibility block of 300k Choices", lambda: _brief([Attachment(
        "choices.docx", _docx_with(box.replace(b"<mc:AlternateContent>", b"<mc:AlternateContent>"
                                               + b"<mc:Choice Requires='zz'/>" * 300_000, 1)))])))
    for forged in (100, 10_000, 2_000_000):
        cases.append((f"DOCX of 30 MB declaring {forged} bytes", lambda f=forged: _brief([Attachment(
            "forged.docx", _docx_with(b"<w:p/>" * 5_000_000, forge=f))])))
    cases.append(("zip of 12,000 entries", lambda: _brief([Attachment("e.docx", many_entries.getvalue())])))
    for pages in (501, 2000):
        cases.append((f"PDF of {pages} pages", lambda p=pages: _brief([Attachment("p.pdf", make_pdf(["x"] * p))])))
    cases.append(("PDF of 500 pages sharing one list of 1,000 FreeText notes", lambda: _brief([Attachment(
        "notes.pdf", _pdf_of_shared_notes(500, 1000))])))
    return cases


def _pdf_of_shared_notes(pages: int, notes: int) -> bytes:
    """`pages` pages whose /Annots is one array of `notes` FreeText annotations sharing one
    appearance: a small file, each annotation drawn and read per page (pdf_hidden's limits)."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, FloatObject, NameObject, NumberObject

    one = PdfReader(io.BytesIO(make_pdf(["x"])))
    w = PdfWriter()
    for _ in range(pages):
        w.add_page(one.pages[0])
    ap = DecodedStreamObject()
    ap.update({NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Form"),
               NameObject("/BBox"): ArrayObject([FloatObject(0), FloatObject(0), FloatObject(100), FloatObject(20)])})
    ap.set_data(b"0 g 0 0 100 20 re S BT /F1 12 Tf 2 5 Td (note) Tj ET")
    note = w._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"): NameObject("/FreeText"),
        NameObject("/Rect"): ArrayObject([FloatObject(v) for v in (50, 50, 150, 70)]),
        NameObject("/F"): NumberObject(4), NameObject("/AP"): DictionaryObject({NameObject("/N"): w._add_object(ap)})}))
    shared = w._add_object(ArrayObject([note] * notes))
    for page in w.pages:
        page[NameObject("/Annots")] = shared
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


def test_redteam_costly_attachments_finish_or_are_refused_in_seconds() -> None:
    cases = _costly_attachments()
    escapes = []
    for name, fn in cases:
        t = time.perf_counter()
        r = _outcome(fn, budget=60)
        took = time.perf_counter() - t
        if r not in ("ok", "refused") or took > 30:
            escapes.append((name, r, round(took, 1)))
    redteam_log.record("bad-input/attach-cost", tried=len(cases), escaped=len(escapes),
                       note="each within 30 s (old: >600 s for the paragraph, minutes for DOCX/PDF)")
    assert escapes == []


def test_redteam_special_files_never_block(tmp_path: Path) -> None:
    fifo = tmp_path / "p.md"
    os.mkfifo(fifo)
    link = tmp_path / "link.md"
    link.symlink_to(fifo)
    sock_path = tmp_path / "s.txt"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    paths = [fifo, link, sock_path, Path("/dev/zero"), Path("/dev/urandom"), Path("/dev/null"), tmp_path]
    readers: list[tuple[str, Callable[[Path], Any]]] = [
        ("read_bytes", read_bytes), ("Attachment.from_path", Attachment.from_path), ("load_history", load_history),
        ("assemble attachments", lambda p: _brief([str(p)])), ("as_attachment", as_attachment),
    ]
    escapes = []
    try:
        for p in paths:
            for name, fn in readers:
                r = _outcome(lambda fn=fn, p=p: fn(p), budget=10)
                if r != "refused":
                    escapes.append((str(p), name, r))
    finally:
        sock.close()
    redteam_log.record("bad-input/special-files", tried=len(paths) * len(readers), escaped=len(escapes))
    assert escapes == []


def test_redteam_lone_surrogates_are_replaced_and_counted_everywhere(tmp_path: Path) -> None:
    rng = random.Random(11)
    escapes, tried = [], 0
    for _ in range(120):
        text = list("The deposit is two months of rent. " * 3)
        n = rng.randint(1, 6)
        for _ in range(n):
            text.insert(rng.randrange(len(text)), chr(rng.choice([0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xDA12])))
        s = "".join(text)
        expect = len(re.findall("[\ud800-\udfff]", s.encode("utf-16-le", "surrogatepass").decode("utf-16-le",
                                                                                                "surrogatepass")))
        for kind in ("str", "bytes"):
            tried += 1
            removed: Counter[str] = Counter()
            item = ("n.md", s) if kind == "str" else ("n.md", s.encode("utf-8", "surrogatepass"))
            try:
                out = "".join(seg.text for seg in read(as_attachment(item), Policy(), removed).segments)
            except Exception as e:  # noqa: BLE001
                escapes.append((kind, repr(e)[:80]))
                continue
            if re.search("[\ud800-\udfff]", out) or removed["lone_surrogates"] != expect:
                escapes.append((kind, removed["lone_surrogates"], expect))
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from docket.api import Session
    from docket.server import ServerConfig, create_app

    db = str(tmp_path / "s.db")
    with Session.open(db, create=True, embedder=EMB) as s:
        s.index(records=[{"id": "a", "doc": "d", "text": "Refunds take 14 days."}])
    client = TestClient(create_app(ServerConfig(db=db), session=Session.open(db, embedder=EMB)))
    for esc in ("\\ud800", "\\udfff", "\\ud83d", "x\\udc00y", "\\ud800\\ud800"):
        for route in ("/v1/ask", "/v1/assemble"):
            tried += 1
            body = '{"question": "How long?", "attachments": [{"name": "n.md", "text": "Refunds ' + esc + ' take."}]}'
            r = client.post(route, content=body, headers={"content-type": "application/json"})
            if r.status_code != 200:
                escapes.append((route, esc, r.status_code))
    redteam_log.record("bad-input/attach-surrogates", tried=tried, escaped=len(escapes))
    assert escapes == []


def test_redteam_history_files_nested_deep_are_one_error(tmp_path: Path) -> None:
    bodies = []
    for depth in (65, 100, 1_000, 10_000, 100_000):
        bodies += ["[" * depth + "]" * depth, '{"messages": ' + "[" * depth + "]" * depth + "}",
                   '[{"role": "user", "content": "hi", "x": ' + "{\"a\": " * depth + "1" + "}" * depth + "}]",
                   '{"role": "user", "content": "hi"}\n' + '{"a": ' * depth + "1" + "}" * depth]
    escapes = []
    for i, body in enumerate(bodies):
        f = tmp_path / f"h{i}.json"
        f.write_text(body, encoding="utf-8")
        r = _outcome(lambda f=f: load_history(f), budget=20)
        if r != "refused":
            escapes.append((i, r))
    redteam_log.record("bad-input/history-depth", tried=len(bodies), escaped=len(escapes))
    assert escapes == []


def test_redteam_service_refuses_costly_files_with_a_4xx(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from docket.api import Session
    from docket.server import ServerConfig, create_app

    db = str(tmp_path / "s.db")
    with Session.open(db, create=True, embedder=EMB) as s:
        s.index(records=[{"id": "a", "doc": "d", "text": "Refunds take 14 days."}])
    client = TestClient(create_app(ServerConfig(db=db), session=Session.open(db, embedder=EMB)))
    files = [("bomb.docx", _docx_with(b"<w:p/>" * 8_000_000)), ("paras.docx", _docx_with(b"<w:p/>" * 333_000)),
             ("forged.docx", _docx_with(b"<w:p/>" * 5_000_000, forge=1000)), ("many.pdf", make_pdf(["x"] * 600)),
             ("big.txt", b"no sentence end " * 70_000)]
    escapes = []
    for name, data in files:
        body = {"question": "q?", "attachments": [{"name": name, "data_base64": base64.b64encode(data).decode()}]}
        t = time.perf_counter()
        r = client.post("/v1/ask", json=body)
        msg = r.json().get("error", {}).get("message", "") if r.status_code < 500 else ""
        if r.status_code not in (413, 422) or name not in msg or time.perf_counter() - t > 20:
            escapes.append((name, r.status_code, msg[:80]))
    redteam_log.record("bad-input/attach-cost-service", tried=len(files), escaped=len(escapes))
    assert escapes == []
