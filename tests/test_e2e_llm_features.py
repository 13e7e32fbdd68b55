"""Structured answers, Option C and contextual retrieval with a real local model (issue 13 §6-8).

Slow (a llama.cpp server on Qwen2.5-Coder 0.5B, a few minutes on 2 shared cores) and skipped
unless scripts/install_local_llm.sh installed llama-cpp-python and the model parts. The figures
are measured by the scripts in benchmarks/ (scripts/eval_llm_features.sh); these tests check
that each feature works end to end with a real model: the grammar holds the reply to the schema,
the summary lands in the budget as derived text, the contexts are written and indexed.
`DOCKET_E2E_MODELS=1.5b` for the larger model. Run with `pytest -m slow tests/test_e2e_llm_features.py -s`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def server(local_llm):  # conftest.local_llm: one server per model in DOCKET_E2E_MODELS
    return local_llm


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))


def generator(server):  # type: ignore[no-untyped-def]
    from docket.llm.openai_compat import OpenAICompatGenerator

    return OpenAICompatGenerator(server.url, None, structured_dialect="llama.cpp", extra_body={"cache_prompt": True},
                                 timeout=900)


def test_structured_answer_is_held_to_the_schema(server) -> None:  # type: ignore[no-untyped-def]
    from docket.assemble import assemble
    from docket.demo import REFUND_QUESTION, nimbus_chunks
    from docket.llm.answer import run_and_check
    from docket.store.base import MemoryStore

    b = assemble(REFUND_QUESTION, store=MemoryStore(nimbus_chunks()))
    rep = run_and_check(b, generator=generator(server), structured=True, max_tokens=300)
    assert rep.ok and rep.answer is not None and rep.check is not None, rep.error
    print(f"\n[{server.model}] {json.dumps(rep.answer.structured)}\n  check: {json.dumps(rep.check.to_json()['structured'])}")
    assert rep.answer.mode == "structured" and "llama.cpp" in (rep.answer.note or "")
    assert rep.check.malformed is None, rep.check.malformed  # the grammar held (or max_tokens cut it: raise it)
    assert rep.check.unknown_labels == []  # the grammar only offers the brief's labels
    assert rep.check.uncited_sentences == []  # every sentence carries at least one label


def test_option_c_summary_with_a_real_model(server) -> None:  # type: ignore[no-untyped-def]
    from docket.assemble import assemble
    from docket.demo import REFUND_QUESTION, nimbus_chunks
    from docket.policy import Policy
    from docket.store.base import MemoryStore

    pol = Policy().updated(compress={"summary": True, "summary_tokens": 60})
    b = assemble(REFUND_QUESTION, store=MemoryStore(nimbus_chunks()), policy=pol, budget=300, floor=0.0,
                 generator=generator(server))
    derived = [s for s in b.sources.values() if s.get("derived")]
    print(f"\n[{server.model}] summary: {derived[0]['text'] if derived else None!r}\n  warnings: {b.warnings}")
    assert b.tokens["documents"] <= 300
    if not derived:  # a tiny model may write nothing usable: then the brief must say so and use the whole budget
        assert any("no summary" in w for w in b.warnings)
        return
    assert derived[0]["status"] == "derived" and derived[0]["covers"]
    again = assemble(REFUND_QUESTION, store=MemoryStore(nimbus_chunks()), policy=pol, budget=300, floor=0.0,
                     generator=generator(server))
    assert again.user == b.user  # cached: the same prompt


def test_contextualize_with_a_real_model(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from docket.embed import HashEmbedder
    from docket.ingest import IndexOptions, index_paths
    from docket.ingest.chunking import ChunkSize
    from docket.ingest.contextualize import Contextualizer
    from docket.store.factory import open_store

    d = tmp_path / "docs"
    d.mkdir()
    (d / "refund.md").write_text("---\ndoc: refund\n---\n# Nimbus refund policy\n\n## Annual plans\n\nAnnual plans can be "
                                 "cancelled within 30 days for a full refund.\n\n## Fees\n\nAfter 30 days an "
                                 "early-termination fee of 15% applies. It is waived in the EU.\n")
    store = open_store(str(tmp_path / "s.db"))
    try:
        ctx = Contextualizer(generator(server), max_tokens=60)
        opts = IndexOptions(embedder=HashEmbedder(), chunk=ChunkSize(30, 0), contextualizer=ctx)
        rep = index_paths(store, [d], opts)
        assert rep.ok and rep.contexts is not None and rep.contexts["generated"] == store.count() > 1
        contexts = [c for dv in store.export() for c in (dv.contexts or [])]
        print(f"\n[{server.model}] contexts: {contexts}")
        assert len(contexts) == store.count() and all(c.strip() for c in contexts)
        again = index_paths(store, [d], IndexOptions(embedder=HashEmbedder(), chunk=ChunkSize(30, 0),
                                                     contextualizer=Contextualizer(generator(server), max_tokens=60)))
        assert again.unchanged == 1 and again.contexts is not None and again.contexts["chunks"] == 0
    finally:
        store.close()
