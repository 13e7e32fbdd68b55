"""Contextual retrieval at index time (`docket index --contextualize --llm URL`).

A fake OpenAI-compatible server (tests/test_llm_openai.py) writes the contexts; each holds a
word no document contains ("zebrafee"), so keyword search can tell whether contexts are indexed.
Both backends; the prompt must still show the chunk's own text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from typer.testing import CliRunner

from docket.cli import _register, app
from docket.embed import HashEmbedder
from docket.ingest import IndexOptions, index_paths
from docket.ingest.contextualize import CHUNK, DOCUMENT, Contextualizer, clean_context, document_text
from docket.llm.errors import EndpointTimeout, EndpointUnreachable
from docket.model import Chunk
from docket.store.factory import open_store
from docket.store.protocol import Filters, search_text

from helpers import newest_schema as newest

_register()
runner = CliRunner()
CONTEXT = "This chunk is from the Nimbus refund policy; it states the zebrafee rules for annual plans."


class Scripted:
    name = "scripted-ctx"

    def __init__(self, reply: Any = CONTEXT) -> None:
        self.reply = reply
        self.calls: list[list[dict[str, Any]]] = []

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        self.calls.append(messages)
        r = self.reply(messages) if callable(self.reply) else self.reply
        if isinstance(r, Exception):
            raise r
        return str(r)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "refund.md").write_text("---\ndoc: refund\nversion: 2\n---\n# Refund policy\n\n"
                                 "## Annual plans\n\nAnnual plans refund within 14 days of purchase.\n\n"
                                 "## Fees\n\nThe early termination fee is 50 euros. It is waived in the EU.\n")
    (d / "shipping.md").write_text("---\ndoc: shipping\n---\n# Shipping\n\nParcels leave the warehouse daily.\n")
    return d


def index(store: Any, docs: Path, gen: Any, **kw: Any) -> Any:
    from docket.ingest.chunking import ChunkSize

    ctx = Contextualizer(gen, **kw) if gen is not None else None
    return index_paths(store, [docs], IndexOptions(embedder=HashEmbedder(), chunk=ChunkSize(40, 0), contextualizer=ctx))


# -- the prompt and the document ---------------------------------------------------------------


def test_spec_prompt_document_first_and_prefix_shared() -> None:
    gen = Scripted()
    chunks = [Chunk(id=f"c{i}", doc="d", text=f"Sentence number {i} of the document.", position=i) for i in range(3)]
    ctx = Contextualizer(gen)
    out = ctx.contexts(chunks, "Refund policy")
    assert out == [CONTEXT] * 3 and len(gen.calls) == 3
    prompts = [c[0]["content"] for c in gen.calls]
    doc = document_text(chunks, "Refund policy")
    head = DOCUMENT.format(document=doc)
    assert all(p.startswith(head) for p in prompts)  # the shared, cacheable prefix
    assert prompts[1] == head + CHUNK.format(chunk=chunks[1].text)
    assert "Give a short, succinct context that situates this chunk within the document" in prompts[0]
    assert doc.startswith("Refund policy\n\n")


def test_document_text_writes_chunk_overlap_once() -> None:
    a = Chunk(id="a", doc="d", text="Annual plans refund within 14 days of purchase. The fee is 50 euros.")
    b = Chunk(id="b", doc="d", text="The fee is 50 euros. It is waived in the EU.")
    assert document_text([a, b]) == "Annual plans refund within 14 days of purchase. The fee is 50 euros.\n\nIt is waived in the EU."


def test_long_documents_are_windowed_by_whole_chunks() -> None:
    gen = Scripted()
    chunks = [Chunk(id=f"c{i}", doc="d", text=" ".join(["word"] * 40) + f" end{i}.") for i in range(6)]
    ctx = Contextualizer(gen, max_document_tokens=100)
    ctx.contexts(chunks)
    docs = [c[0]["content"].split("</document>")[0] for c in gen.calls]
    assert len(set(docs)) == 3  # windows of two chunks: neighbours share their document prefix
    assert "end0." in docs[0] and "end1." in docs[1] and "end2." not in docs[0]


def test_clean_context() -> None:
    assert clean_context('  Context: "This chunk is about fees."\n') == "This chunk is about fees."


def test_anthropic_requests_mark_the_document_for_caching(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("anthropic")
    from docket.llm.anthropic_gen import AnthropicGenerator

    gen = AnthropicGenerator("claude-test", api_key="k", base_url="http://127.0.0.1:9")
    ctx = Contextualizer(gen)
    msg = ctx.messages("The document.", "The chunk.")[0]
    assert msg["content"][0]["cache_control"] == {"type": "ephemeral"} and "<document>" in msg["content"][0]["text"]
    assert "<chunk>" in msg["content"][1]["text"] and "cache_control" in ctx.stats.prefix_cache


def test_local_sends_cache_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    from docket.llm import generator_from_url, local

    monkeypatch.setattr(local, "local_url", lambda: "http://127.0.0.1:9/v1")
    ctx = Contextualizer(generator_from_url("local", model="m"))
    assert ctx.generator.extra_body == {"cache_prompt": True} and ctx.stats.prefix_cache.startswith("llama.cpp")


# -- indexing, on both backends -----------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    return str(request.getfixturevalue("pg_url"))


def test_contexts_are_indexed_but_never_shown(location: str, docs: Path) -> None:
    gen = Scripted()
    store = open_store(location)
    try:
        report = index(store, docs, gen)
        assert report.ok and report.contexts is not None and report.contexts["generated"] == len(gen.calls) > 0
        n = store.count()
        assert len(gen.calls) == n
        # keyword search finds the word only the contexts hold; the chunks keep their own text
        hits = store.search_bm25("zebrafee", 10, Filters())
        assert len(hits) == n
        chunks = store.get_many([h[0] for h in hits])
        assert all("zebrafee" not in c.text for c in chunks.values())
        # the vector is the embedding of context + text
        c = next(iter(chunks.values()))
        want = HashEmbedder().embed([search_text(CONTEXT, c.text)])[0]
        assert np.allclose(np.asarray(c.vector, dtype=np.float32), want, atol=1e-5)
        # export carries the contexts
        dvs = list(store.export())
        assert all(dv.contexts == [CONTEXT] * len(dv.chunks) for dv in dvs)
        # asking: the prompt shows the chunk, not the context
        from docket.api import Session

        brief = Session(store, embedder=HashEmbedder()).ask("zebrafee annual plans", floor=-1.0).brief
        assert brief.found and "zebrafee" not in brief.documents and "Annual plans refund" in brief.documents
    finally:
        store.close()


def test_unchanged_documents_do_not_call_the_model_again(location: str, docs: Path) -> None:
    gen = Scripted()
    store = open_store(location)
    try:
        index(store, docs, gen)
        first = len(gen.calls)
        again = index(store, docs, gen)
        assert len(gen.calls) == first and again.unchanged == 2 and again.chunks_embedded == 0
        (docs / "shipping.md").write_text("---\ndoc: shipping\n---\n# Shipping\n\nParcels leave the warehouse at noon.\n")
        third = index(store, docs, gen)
        assert third.unchanged == 1 and len(third.updated) == 1
        assert 0 < len(gen.calls) - first < first  # only the changed document's chunks
        # a store indexed without contexts is re-indexed when contexts are asked for (the hash says so)
        plain = index(store, docs, None)
        assert plain.unchanged == 0 and len(plain.updated) == 2
        assert store.search_bm25("zebrafee", 10, Filters()) == []
        back = index(store, docs, gen)
        assert len(back.updated) == 2 and back.contexts is not None and back.contexts["generated"] == 0  # disk cache
    finally:
        store.close()


def test_a_failing_document_is_reported_the_rest_indexed(tmp_path: Path, docs: Path) -> None:
    def reply(messages: list[dict[str, Any]]) -> Any:
        text = messages[0]["content"]
        return EndpointTimeout("http://x: no answer within 5 s") if "Shipping" in text.split("</document>")[0] else CONTEXT

    store = open_store(str(tmp_path / "s.db"))
    try:
        report = index(store, docs, Scripted(reply))
        assert [p[1] for p in report.problems] and "no contexts for 'shipping'" in report.problems[0][1]
        assert store.documents() == ["refund"]
    finally:
        store.close()


def test_an_unreachable_model_stops_the_run(tmp_path: Path, docs: Path) -> None:
    store = open_store(str(tmp_path / "s.db"))
    try:
        with pytest.raises(EndpointUnreachable):
            index(store, docs, Scripted(EndpointUnreachable("cannot reach the model endpoint http://x (refused)")))
        assert store.count() == 0
    finally:
        store.close()


def test_a_schema_3_store_is_migrated(location: str, docs: Path) -> None:
    """A store written before contexts existed (schema 3: chunk features, no context column) opens
    migrated to schema 4."""
    s = open_store(location)
    index(s, docs, None)
    if location.startswith("postgresql"):
        s._conn.execute("ALTER TABLE chunks DROP COLUMN context")  # type: ignore[attr-defined]
    else:
        s._conn.execute("ALTER TABLE chunks DROP COLUMN context")  # type: ignore[attr-defined]
    s.set_meta({"schema": "3"})
    s.close()
    s = open_store(location)
    try:
        assert s.meta()["schema"] == newest(s)
        assert s.count() > 0 and all(dv.contexts is None for dv in s.export())
        assert s.search_bm25("annual", 10, Filters())
        index(s, docs, Scripted())
        assert s.search_bm25("zebrafee", 10, Filters())
    finally:
        s.close()


# -- the command line ---------------------------------------------------------------------------


def test_cli_contextualize_with_a_fake_server(tmp_path: Path, docs: Path) -> None:
    pytest.importorskip("openai")
    from test_llm_openai import FakeServer, completion

    s = FakeServer()
    try:
        s.script += [(200, completion(CONTEXT), {}, 0.0)] * 20
        db = str(tmp_path / "s.db")
        r = runner.invoke(app, ["index", str(docs), "--db", db, "--embedder", "hash", "--contextualize", "--llm", s.url,
                                "--model", "tiny", "--json"])
        assert r.exit_code == 0, r.output
        rep = json.loads(r.output)
        calls = len(s.calls)
        assert rep["contexts"]["generated"] == calls > 0 and "<document>" in s.calls[0]["messages"][0]["content"]
        assert s.calls[0]["max_tokens"] == 100 and s.calls[0]["temperature"] == 0.0
        # again: nothing changed, so no model call (the flag follows the store: --llm is needed, not --contextualize)
        r = runner.invoke(app, ["index", str(docs), "--db", db, "--llm", s.url, "--model", "tiny", "--json"])
        assert r.exit_code == 0 and json.loads(r.output)["unchanged"] == 2 and len(s.calls) == calls
        # readable report names the prefix caching
        r = runner.invoke(app, ["index", str(docs), "--db", db, "--llm", s.url, "--model", "tiny"])
        assert "prefix caching" in r.output
        r = runner.invoke(app, ["ask", "zebrafee", "--db", db, "--floor", "0", "--mode", "bm25", "--json"])
        out = json.loads(r.output)
        assert out["found"] and out["sources"] and "zebrafee" not in json.dumps(out["sources"])
        assert "zebrafee" not in out["messages"][1]["content"].split("Question:")[0]
    finally:
        s.close()


@pytest.mark.parametrize(("args", "expect"), [
    (["--contextualize"], "--llm URL"),
    (["--llm", "local"], "only used with --contextualize"),
    (["--contextualize", "--llm", "local", "--context-tokens", "0"], "--context-tokens"),
    (["--contextualize", "--llm", "local", "--context-window", "10"], "--context-window"),
])
def test_cli_bad_flags_are_one_line(tmp_path: Path, docs: Path, args: list[str], expect: str) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "docket", "index", str(docs), "--db", str(tmp_path / "s.db"),
                           "--embedder", "hash", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and expect in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_cli_contextualized_store_needs_llm_or_no_contextualize(tmp_path: Path, docs: Path) -> None:
    import subprocess
    import sys

    db = tmp_path / "s.db"
    store = open_store(str(db))
    index(store, docs, Scripted())
    store.set_meta({"contextualized": "scripted-ctx|prompt 1|100|3000"})
    store.close()
    base = [sys.executable, "-m", "docket", "index", str(docs), "--db", str(db), "--embedder", "hash"]
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "scripted-ctx" in proc.stderr and "--no-contextualize" in proc.stderr
    assert proc.stderr.count("\n") == 1
    proc = subprocess.run(base + ["--no-contextualize", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["updated"]) == 2  # re-indexed without contexts, as asked
