"""No adapter, session or service object carries one request's brief, trace or sources into
another's (issue 25 §6): two principals' calls interleaved through one shared object give,
each, the bytes of a run of its own on a fresh object. The LlamaIndex synthesizer answering
"not found" used to report the previous caller's trace."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from acl_cases import (
    Request,
    client,
    dump,
    framework_records,
    indexed,
    key_file,
    sqlite_locations,
    via_haystack,
    via_http,
    via_langchain,
    via_llamaindex,
    via_session,
)

from docket.store.access import Principal

ANN = Principal("ann", frozenset({"finance"}))
BOB = Principal("bob")
SECRET = "Salary band F3 pays 91 thousand EUR a year, under the finance table."
RECORDS: list[dict[str, Any]] = [
    {"id": "bands-1", "doc": "salary", "text": SECRET, "acl": ["group:finance"], "title": "Salary bands",
     "score": 0.9},
    {"id": "pay-1", "doc": "pay-day", "text": "Salaries are paid on the 25th of every month.", "score": 0.3},
]
REQ = Request(question="What does salary band F3 pay?")
#: ann (finance) finds the band; bob, whose only readable document says nothing of it, gets
#: "not found" at this floor: the case where a leftover brief or trace would show
CALLS = [ANN, BOB, BOB, ANN, BOB]


def _interleaved(shared: Any, fresh: Any) -> None:
    for who in CALLS:
        got = shared(who)
        assert got == fresh(who), who
        if who == BOB:
            assert "bands-1" not in got and "91 thousand" not in got and "Salary bands" not in got


@pytest.mark.parametrize("framework", ["langchain", "llamaindex", "haystack"])
def test_one_adapter_object_interleaving_two_principals_gives_each_its_own_run(framework: str) -> None:
    pytest.importorskip({"langchain": "langchain_core", "llamaindex": "llama_index.core",
                         "haystack": "haystack"}[framework])
    run = {"langchain": via_langchain, "llamaindex": via_llamaindex, "haystack": via_haystack}[framework]
    if framework == "langchain":
        from langchain_core.documents import Document

        from docket.integrations.langchain import DocketPrompt

        store = [Document(id=r["id"], page_content=r["text"], metadata=r["metadata"]) for r in framework_records(RECORDS)]
        obj: Any = DocketPrompt(floor=0.5, docstore=store, as_of=date(2026, 1, 1))
    elif framework == "llamaindex":
        from docket.integrations.llamaindex import DocketPostprocessor

        obj = DocketPostprocessor(floor=0.5, as_of=date(2026, 1, 1))
    else:
        from docket.integrations.haystack import DocketAssembler

        obj = DocketAssembler(floor=0.5, as_of=date(2026, 1, 1))

    def fresh(who: Principal | None) -> str:
        if framework == "llamaindex":
            from docket.integrations.llamaindex import DocketPostprocessor

            return run(RECORDS, who, REQ, DocketPostprocessor(floor=0.5, as_of=date(2026, 1, 1)))
        return run(RECORDS, who, REQ, type(obj)(**_settings(framework, obj)))

    _interleaved(lambda who: run(RECORDS, who, REQ, obj), fresh)


def _settings(framework: str, obj: Any) -> dict[str, Any]:
    if framework == "langchain":
        from langchain_core.documents import Document

        store = [Document(id=r["id"], page_content=r["text"], metadata=r["metadata"]) for r in framework_records(RECORDS)]
        return {"floor": 0.5, "docstore": store, "as_of": date(2026, 1, 1)}
    return {"floor": 0.5, "as_of": date(2026, 1, 1)}


def test_the_llamaindex_query_engine_not_found_reports_its_own_trace_never_the_previous_callers() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from docket.integrations import acting_as
    from docket.integrations.llamaindex import docket_query_engine

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_=r["id"], text=r["text"], metadata=r["metadata"]), score=r["score"])
                    for r in framework_records(RECORDS)]

    from llama_index.core.llms import MockLLM

    def engine() -> Any:
        return docket_query_engine(Fixed(), MockLLM(), floor=0.5, as_of=date(2026, 1, 1), check=False)

    def answer(e: Any, who: Principal) -> str:
        with acting_as(who):
            r = e.query(REQ.question)
        meta = dict(r.metadata["docket"])
        return dump({"response": str(r.response), "docket": meta})

    shared = engine()
    _interleaved(lambda who: answer(shared, who), lambda who: answer(engine(), who))
    bob = answer(shared, BOB)
    assert '"found": false' in bob and "floor" in bob  # its own not-found trace is there
    # a synthesis this postprocessor never saw (no nodes: e.g. another request's empty retrieval)
    # reports no trace at all, not the latest one of this thread
    answer(shared, ANN)
    alone = shared._response_synthesizer.synthesize(QueryBundle(REQ.question), [])
    assert alone.metadata["docket"]["trace"] == [] and alone.metadata["docket"]["found"] is False
    assert "bands-1" not in dump(alone.metadata)


def test_one_session_and_one_service_interleaving_two_principals(tmp_path_factory: pytest.TempPathFactory) -> None:
    keys, tokens = key_file(tmp_path_factory.mktemp("keys"))
    with sqlite_locations() as new:
        db = new()
        indexed(db, [{k: v for k, v in r.items() if k != "score"} for r in RECORDS]).close()
        from docket.api import Session

        shared = Session.open(db, new_store_embedder="hash")
        req = Request(question=REQ.question)
        try:
            def fresh_session(who: Principal | None) -> str:
                with Session.open(db, new_store_embedder="hash") as s:
                    return via_session(s, who, req)

            _interleaved(lambda who: via_session(shared, who, req), fresh_session)
        finally:
            shared.close()
        c = client(db, keys)
        _interleaved(lambda who: via_http(c, tokens, who, req), lambda who: via_http(client(db, keys), tokens, who, req))
