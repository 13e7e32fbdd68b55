"""Access control inside LangChain, LlamaIndex and Haystack: a document with an `acl` takes part
only for a principal who may read it, and nothing the integration returns (prompt, trace,
sources, warnings, counts, errors, the framework store's problems) says that a restricted one
was retrieved. The strongest form of "nothing says": for a principal who may not read them,
the whole output is byte-identical to a run where the restricted documents were never
retrieved."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from docket.errors import InputError
from docket.store.access import Principal

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")
pytest.importorskip("haystack")

QUESTION = "What does salary band F3 pay, and when are salaries paid?"
SECRET = "Salary band F3 pays 91,500 EUR a year"
MEMO = "Carol's memo: the F3 band will be frozen in 2027"
RECORDS: list[dict[str, Any]] = [
    {"id": "bands-1", "text": f"{SECRET}; band F4 pays 104,000 EUR.", "score": 0.95,
     "metadata": {"doc": "salary-bands", "title": "Salary bands", "acl": ["group:finance"]}},
    {"id": "memo-1", "text": MEMO + ", pending the budget review.", "score": 0.9,
     "metadata": {"doc": "hr-memo", "title": "HR memo", "acl": ["user:carol"]}},
    {"id": "pay-1", "text": "Salaries are paid on the 25th of every month by bank transfer.", "score": 0.8,
     "metadata": {"doc": "pay-day", "title": "Pay day", "position": 0}},
    {"id": "hol-1", "text": "Staff get 28 days of paid holiday a year, plus public holidays.", "score": 0.6,
     "metadata": {"doc": "holidays", "title": "Holidays"}},
]
RESTRICTED = ("bands-1", "memo-1")
#: what may not appear anywhere in a stranger's output
TELLTALES = ("bands-1", "memo-1", "salary-bands", "hr-memo", "Salary bands", "HR memo", "91,500", "frozen", "carol",
             "group:finance")
ANN = Principal("ann", frozenset({"finance"}))  # a member of finance
BOB = Principal("bob", frozenset({"sales"}))  # not a member
FINANCE_USER = Principal("finance")  # a *user* named like the group: not a member
SETTINGS = {"floor": 0.0}


# -- one way in per framework: documents of that framework, output as plain JSON ---------------


def _langchain(records: list[dict[str, Any]], principal: Any, groups: Any, construct: bool) -> dict[str, Any]:
    from langchain_core.documents import Document

    from docket.integrations.langchain import DocketPrompt

    docs = [(Document(id=r["id"], page_content=r["text"], metadata=r["metadata"]), r["score"]) for r in records]
    if construct:
        value = DocketPrompt(**SETTINGS, principal=principal, groups=groups).invoke(
            {"question": QUESTION, "documents": docs})
    else:
        value = DocketPrompt(**SETTINGS).invoke({"question": QUESTION, "documents": docs, "principal": principal,
                                                 "groups": groups})
    return {"prompt": [m.content for m in value.messages], "trace": value.trace, "sources": value.sources,
            "warnings": value.brief["warnings"], "brief": value.brief}


def _llamaindex(records: list[dict[str, Any]], principal: Any, groups: Any, construct: bool) -> dict[str, Any]:
    from llama_index.core.schema import NodeWithScore, TextNode

    from docket.integrations.llamaindex import DocketPostprocessor

    nodes = [NodeWithScore(node=TextNode(id_=r["id"], text=r["text"], metadata=r["metadata"]), score=r["score"])
             for r in records]
    if construct:
        outcome = DocketPostprocessor(**SETTINGS, principal=principal, groups=groups).assemble(QUESTION, nodes)
    else:
        outcome = DocketPostprocessor(**SETTINGS).assemble(QUESTION, nodes, principal=principal, groups=groups)
    brief = outcome.brief_json()
    return {"prompt": [m["content"] for m in outcome.messages], "trace": brief["trace"], "sources": brief["sources"],
            "warnings": brief["warnings"], "brief": brief}


def _haystack(records: list[dict[str, Any]], principal: Any, groups: Any, construct: bool) -> dict[str, Any]:
    from haystack import Document

    from docket.integrations.haystack import DocketAssembler

    docs = [Document(id=r["id"], content=r["text"], meta=r["metadata"], score=r["score"]) for r in records]
    if construct:
        out = DocketAssembler(**SETTINGS, principal=principal, groups=groups).run(QUESTION, docs)
    else:
        out = DocketAssembler(**SETTINGS).run(QUESTION, docs, principal=principal, groups=groups)
    return {"prompt": [m.text for m in out["prompt"]], "trace": out["trace"], "sources": out["sources"],
            "warnings": out["brief"]["warnings"], "brief": out["brief"]}


FRAMEWORKS: dict[str, Callable[..., dict[str, Any]]] = {"langchain": _langchain, "llamaindex": _llamaindex,
                                                        "haystack": _haystack}
WAYS = pytest.mark.parametrize("construct", [True, False], ids=["at-construction", "per-call"])
EACH = pytest.mark.parametrize("framework", list(FRAMEWORKS))


def _as_args(who: Principal | None) -> tuple[Any, Any]:
    """A Principal as the user-name form (name + groups), to test that form too."""
    return (None, None) if who is None else (who.name, sorted(who.groups) or None)


def _dump(part: Any) -> str:
    return json.dumps(part, sort_keys=True, default=str)


@EACH
@WAYS
@pytest.mark.parametrize("who", [None, BOB, FINANCE_USER], ids=["anonymous", "non-member", "user-named-finance"])
def test_restricted_documents_leave_no_trace_for_a_stranger(framework: str, construct: bool,
                                                            who: Principal | None) -> None:
    run = FRAMEWORKS[framework]
    got = run(RECORDS, *_as_args(who), construct)
    for part in ("prompt", "trace", "sources", "warnings"):
        text = _dump(got[part])
        for telltale in TELLTALES:
            assert telltale not in text, (part, telltale)
    assert "pay-1" in _dump(got["sources"])  # the public answer still goes in
    # nothing counts them either: the same bytes as a run that never retrieved them
    public = [r for r in RECORDS if r["id"] not in RESTRICTED]
    assert _dump(got["brief"]) == _dump(run(public, *_as_args(who), construct)["brief"])
    assert got["prompt"] == run(public, *_as_args(who), construct)["prompt"]


@EACH
@WAYS
def test_a_member_reads_what_the_group_may_read(framework: str, construct: bool) -> None:
    got = FRAMEWORKS[framework](RECORDS, "ann", ["finance"], construct)
    prompt = "\n".join(got["prompt"])
    assert SECRET in prompt and MEMO not in prompt  # finance's bands, not carol's memo
    assert "bands-1" in _dump(got["sources"]) and "memo-1" not in _dump(got["brief"])
    access = next(e for e in got["trace"] if e.get("action") == "access")
    assert "'ann'" in access["reason"] and "finance" in access["reason"]
    # the named user reads the memo, not the bands
    carol = "\n".join(FRAMEWORKS[framework](RECORDS, Principal("carol"), None, construct)["prompt"])
    assert MEMO in carol and SECRET not in carol


@EACH
def test_a_call_principal_wins_over_the_constructions(framework: str) -> None:
    """Built for ann, called for bob: bob's view (and the other way round)."""
    run = FRAMEWORKS[framework]
    if framework == "langchain":
        from langchain_core.documents import Document

        from docket.integrations.langchain import DocketPrompt
        docs = [(Document(id=r["id"], page_content=r["text"], metadata=r["metadata"]), r["score"]) for r in RECORDS]
        as_bob = DocketPrompt(**SETTINGS, principal=ANN).invoke({"question": QUESTION, "documents": docs,
                                                                 "principal": "bob"})
        as_ann = DocketPrompt(**SETTINGS, principal="bob").invoke({"question": QUESTION, "documents": docs,
                                                                   "principal": ANN})
        assert SECRET not in _dump(as_bob.brief) and SECRET in _dump(as_ann.brief)
    else:
        assert SECRET in "\n".join(run(RECORDS, ANN, None, True)["prompt"])
        assert SECRET in "\n".join(run(RECORDS, ANN, None, False)["prompt"])


BAD = [
    (5, None, "principal"),
    ("", None, "principal"),
    ("group:finance", None, "principal"),
    (["ann"], None, "principal"),
    ("ann", "finance", "groups"),  # one string, not a list
    ("ann", [""], "groups"),
    ("ann", ["user:bob"], "groups"),
    ("ann", [3], "groups"),
    (None, ["finance"], "groups"),  # groups without whose
]


@EACH
@WAYS
@pytest.mark.parametrize("principal, groups, field", BAD)
def test_bad_principal_or_groups_is_one_clear_error(framework: str, construct: bool, principal: Any, groups: Any,
                                                    field: str) -> None:
    with pytest.raises(InputError) as err:
        FRAMEWORKS[framework](RECORDS, principal, groups, construct)
    assert err.value.field == field and f"field '{field}'" in str(err.value) and "\n" not in str(err.value)


@EACH
def test_a_bad_acl_is_an_error_for_everyone_naming_the_position_not_the_document(framework: str) -> None:
    bad = [*RECORDS[2:], {"id": "x-1", "text": "Secret text.", "score": 0.5,
                          "metadata": {"doc": "secret-doc", "acl": {"group": "finance"}}}]
    for who in (None, "ann"):
        with pytest.raises(InputError) as err:
            FRAMEWORKS[framework](bad, who, None, True)
        assert err.value.field == "acl" and "x-1" not in str(err.value) and "secret" not in str(err.value).lower()


# -- what the framework store holds: neighbours and problems of restricted documents ----------


def _store_records() -> list[dict[str, Any]]:
    """pay-day has a restricted second chunk; a restricted store document cannot be mapped."""
    return [
        *RECORDS,
        {"id": "pay-2", "text": "Executive bonuses are paid on the 28th of March.", "score": 0.0,
         "metadata": {"doc": "pay-day", "title": "Pay day", "position": 1, "acl": ["group:board"]}},
        {"id": "broken-1", "text": "Board minutes.", "score": 0.0, "metadata": {"title": "Board", "acl": ["group:board"]}},
    ]


@pytest.mark.parametrize("framework", ["langchain", "haystack"])
def test_the_framework_store_speaks_only_of_what_the_asker_may_read(framework: str) -> None:
    stored = _store_records()
    retrieved = [r for r in RECORDS if r["id"] == "pay-1"]
    if framework == "langchain":
        from langchain_core.documents import Document

        from docket.integrations.langchain import DocketPrompt

        store = [Document(id=r["id"], page_content=r["text"], metadata=r["metadata"]) for r in stored]

        def ask(who: Principal | None) -> dict[str, Any]:
            docs = [(Document(id=r["id"], page_content=r["text"], metadata=r["metadata"]), r["score"])
                    for r in retrieved]
            return DocketPrompt(**SETTINGS, docstore=store, principal=who).invoke(
                {"question": QUESTION, "documents": docs}).brief
    else:
        from haystack import Document
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        from docket.integrations.haystack import DocketAssembler

        hs = InMemoryDocumentStore()
        hs.write_documents([Document(id=r["id"], content=r["text"], meta=r["metadata"]) for r in stored])

        def ask(who: Principal | None) -> dict[str, Any]:
            docs = [Document(id=r["id"], content=r["text"], meta=r["metadata"], score=r["score"]) for r in retrieved]
            return DocketAssembler(**SETTINGS, document_store=hs, principal=who).run(QUESTION, docs)["brief"]

    for who in (None, BOB):
        text = _dump(ask(who))
        assert "Executive bonuses" not in text and "pay-2" not in text  # no neighbour pulled in
        assert "could not be mapped" not in text and "broken-1" not in text  # no problem reported
    board = Principal("zoe", frozenset({"board"}))
    text = _dump(ask(board))
    assert "Executive bonuses" in text  # the span grows for the board
    assert "could not be mapped" in text  # and the board hears of its broken document


# -- a block of calls the framework makes for you ---------------------------------------------


def test_acting_as_reaches_a_compressor_inside_a_compression_retriever() -> None:
    import warnings

    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from docket.integrations import acting_as
    from docket.integrations.langchain import DocketCompressor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_classic.retrievers import ContextualCompressionRetriever

    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [Document(id=r["id"], page_content=r["text"], metadata={**r["metadata"], "score": r["score"]})
                    for r in RECORDS]

    ccr = ContextualCompressionRetriever(base_compressor=DocketCompressor(**SETTINGS), base_retriever=Fixed())
    anonymous = ccr.invoke(QUESTION)
    assert anonymous and not any(SECRET in d.page_content for d in anonymous)
    assert "bands-1" not in _dump([d.metadata for d in anonymous])
    with acting_as("ann", groups=["finance"]):
        assert any(SECRET in d.page_content for d in ccr.invoke(QUESTION))
    assert not any(SECRET in d.page_content for d in ccr.invoke(QUESTION))  # the block is over
    compressor = DocketCompressor(**SETTINGS)
    docs = Fixed().invoke(QUESTION)
    assert any(SECRET in d.page_content for d in compressor.compress_documents(docs, QUESTION, principal=ANN))


def test_acting_as_reaches_the_postprocessor_of_a_query_engine() -> None:
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from docket.integrations import acting_as
    from docket.integrations.llamaindex import docket_query_engine

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_=r["id"], text=r["text"], metadata=r["metadata"]), score=r["score"])
                    for r in RECORDS]

    engine = docket_query_engine(Fixed(), MockLLM(), check=False, **SETTINGS)
    anonymous = engine.query(QUESTION)
    assert "bands-1" not in _dump(anonymous.metadata) and SECRET not in _dump(anonymous.metadata)
    with acting_as(ANN):
        assert "bands-1" in _dump(engine.query(QUESTION).metadata)
    built_for_ann = docket_query_engine(Fixed(), MockLLM(), check=False, principal="ann", groups=["finance"],
                                        **SETTINGS)
    assert "bands-1" in _dump(built_for_ann.query(QUESTION).metadata)
    with acting_as(None):  # a block can also narrow a postprocessor built for someone to anonymous
        assert "bands-1" not in _dump(built_for_ann.query(QUESTION).metadata)


def test_a_haystack_pipeline_takes_the_principal_as_an_input() -> None:
    from haystack import Document, Pipeline

    from docket.integrations.haystack import DocketAssembler

    p = Pipeline()
    p.add_component("docket", DocketAssembler(**SETTINGS))
    docs = [Document(id=r["id"], content=r["text"], meta=r["metadata"], score=r["score"]) for r in RECORDS]
    anon = p.run({"docket": {"query": QUESTION, "documents": docs}})["docket"]
    ann = p.run({"docket": {"query": QUESTION, "documents": docs, "principal": "ann", "groups": ["finance"]}})["docket"]
    assert "bands-1" not in _dump(anon) and "bands-1" in _dump(ann["sources"])
    # and it survives serialisation
    again = DocketAssembler.from_dict(DocketAssembler(**SETTINGS, principal="ann", groups=["finance"]).to_dict())
    assert again.options.the_principal == ANN
