"""docket inside LlamaIndex: a RetrieverQueryEngine with docket as the postprocessor and its
brief as the prompt, over LlamaIndex's own vector index and MockLLM, on the Nimbus refund
question (issue 12 acceptance)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from integration_cases import (
    CITED_ANSWER,
    TOP_K,
    assert_nimbus_prompt,
    assert_sources_map_back,
    records,
    text_of,
)

pytest.importorskip("llama_index.core")

from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.callbacks import CallbackManager, LlamaDebugHandler  # noqa: E402
from llama_index.core.callbacks.schema import EventPayload  # noqa: E402
from llama_index.core.llms import CompletionResponse, MockLLM  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.postprocessor import PrevNextNodePostprocessor  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from docket.demo import DISCOUNT_QUESTION, REFUND_QUESTION  # noqa: E402
from docket.errors import InputError  # noqa: E402
from docket.integrations.llamaindex import (  # noqa: E402
    DocketEmbedding,
    DocketPostprocessor,
    DocketSynthesizer,
    docket_query_engine,
)


class CannedLLM(MockLLM):
    """LlamaIndex's MockLLM answering with a fixed reply instead of echoing the prompt."""

    reply: str = CITED_ANSWER
    calls: int = 0

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text=self.reply)


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    nodes = [TextNode(id_=r["id"], text=r["text"], metadata=r["metadata"],
                      excluded_embed_metadata_keys=list(r["metadata"])) for r in records()]
    return VectorStoreIndex(nodes, embed_model=DocketEmbedding())


@pytest.fixture(scope="module")
def retriever(index):
    return index.as_retriever(similarity_top_k=TOP_K)


def received(debug: LlamaDebugHandler) -> list[Any]:
    """The chat messages the LLM was called with, from LlamaIndex's own debug callback (MockLLM's
    chat runs through its completion, and async chat through sync chat: one call, several events)."""
    calls = [pair[0].payload[EventPayload.MESSAGES] for pair in debug.get_llm_inputs_outputs()
             if EventPayload.MESSAGES in pair[0].payload]
    assert calls and all(c == calls[0] for c in calls)
    return calls[0]


def test_retriever_top_k_lacks_the_span_and_holds_the_traps(retriever):
    ids = [n.node.node_id for n in retriever.retrieve(REFUND_QUESTION)]
    assert {"pol3-4", "faq-12", "pol2-3", "forum-881"} <= set(ids)
    assert "pol3-3" not in ids and "pol3-5" not in ids


def test_query_engine_sends_the_brief_to_mockllm_and_checks_the_reply(index, retriever):
    debug = LlamaDebugHandler()
    llm = MockLLM(callback_manager=CallbackManager([debug]))
    engine = docket_query_engine(retriever, llm, docstore=index.docstore)
    assert isinstance(engine, RetrieverQueryEngine)
    response = engine.query(REFUND_QUESTION)
    system, user = received(debug)
    assert system.role.value == "system" and user.role.value == "user"
    assert_nimbus_prompt(system.content, user.content, REFUND_QUESTION)
    # MockLLM echoes its prompt: the reply is what the model received, flattened
    assert response.response.startswith("system: " + system.content) and user.content in response.response
    meta = response.metadata["docket"]
    assert_sources_map_back(meta["sources"])
    # the check ran on the reply: an echo of the prompt cites nothing, so it has findings
    assert meta["check"] is not None and meta["clean"] is False and meta["check"]["uncited_sentences"]


def test_sources_map_back_to_the_nodes(index, retriever):
    engine = docket_query_engine(retriever, CannedLLM(), docstore=index.docstore)
    response = engine.query(REFUND_QUESTION)
    assert response.response == CITED_ANSWER
    assert response.metadata["docket"]["clean"] is True
    nodes = response.source_nodes
    assert [n.node.metadata["label"] for n in nodes] == [f"S{i}" for i in range(1, len(nodes) + 1)]
    policy = next(n for n in nodes if n.node.metadata["docket"]["chunks"] == ["pol3-3", "pol3-4", "pol3-5"])
    assert policy.node.node_id == "pol3-3+pol3-4+pol3-5"
    assert [s["doc"] for s in policy.node.metadata["sources"]] == ["refund-policy", "help-faq"]
    assert all(index.docstore.get_node(i) for i in policy.node.metadata["docket"]["chunks"])
    # docket's keys stay out of what an LLM or an embedder would read
    from llama_index.core.schema import MetadataMode

    llm_text = policy.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "docket_brief" not in llm_text and "trace" not in llm_text and "Nimbus refund policy" in llm_text
    forum = next(n for n in nodes if n.node.node_id == "forum-881")
    assert forum.node.metadata["docket"]["trust"] == "untrusted"


def test_not_found_answers_the_refusal_without_calling_the_llm(retriever):
    llm = CannedLLM()
    response = docket_query_engine(retriever, llm).query(DISCOUNT_QUESTION)
    assert response.response == "I do not know from the provided sources."
    assert llm.calls == 0 and response.source_nodes == []
    meta = response.metadata["docket"]
    assert meta["found"] is False and meta["llm_called"] is False
    assert any(e["move"] == "floor" and e["action"] == "not_found" for e in meta["trace"])


def test_async_query_gives_the_same_prompt(index, retriever):
    debug = LlamaDebugHandler()
    engine = docket_query_engine(retriever, MockLLM(callback_manager=CallbackManager([debug])), docstore=index.docstore)
    response = asyncio.run(engine.aquery(REFUND_QUESTION))
    system, user = received(debug)
    assert_nimbus_prompt(system.content, user.content, REFUND_QUESTION)
    assert response.metadata["docket"]["found"] is True
    assert asyncio.run(docket_query_engine(retriever, CannedLLM()).aquery(DISCOUNT_QUESTION)).response == \
        "I do not know from the provided sources."


def test_without_a_docstore_the_trace_says_so(retriever):
    post = DocketPostprocessor()
    nodes = post.postprocess_nodes(retriever.retrieve(REFUND_QUESTION), query_str=REFUND_QUESTION)
    trace = nodes[0].node.metadata["docket_brief"]["trace"]
    assert "no LlamaIndex document store" in trace[0]["reason"]
    assert ["pol3-4"] in [n.node.metadata["docket"]["chunks"] for n in nodes]


def test_prev_next_neighbours_without_scores_are_scored_by_cosine(index, retriever):
    hits = retriever.retrieve(REFUND_QUESTION)
    neighbours = [NodeWithScore(node=index.docstore.get_node(i), score=None) for i in ("pol3-3", "pol3-5")]
    post = DocketPostprocessor(docstore=index)
    out = post.postprocess_nodes(hits + neighbours, query_str=REFUND_QUESTION)
    scores = next(e for e in out[0].node.metadata["docket_brief"]["trace"] if e["action"] == "scores")
    assert scores["numbers"] == {"source": "cosine", "documents": 6, "with_score": 4}
    assert "2 of 6" in scores["reason"]
    assert ["pol3-3", "pol3-4", "pol3-5"] in [n.node.metadata["docket"]["chunks"] for n in out]


def test_split_nodes_without_positions_expand_in_document_order():
    """SentenceSplitter nodes carry no position: their start_char_idx orders the document."""
    text = " ".join(f"Clause {i}: the refund window for plan tier {i} is {10 + i} days." for i in range(12))
    doc = Document(text=text, metadata={"doc": "terms", "title": "Terms"}, id_="terms-doc")
    splitter = SentenceSplitter(chunk_size=40, chunk_overlap=0)
    index = VectorStoreIndex.from_documents([doc], embed_model=DocketEmbedding(), transformations=[splitter])
    nodes = list(index.docstore.docs.values())
    assert len(nodes) > 4 and all("position" not in n.metadata for n in nodes)
    ordered = sorted(nodes, key=lambda n: n.start_char_idx)
    middle = ordered[len(ordered) // 2]
    post = DocketPostprocessor(docstore=index.docstore, floor=0.0)
    out = post.postprocess_nodes([NodeWithScore(node=middle, score=0.9)], query_str="What is the refund window?")
    chunks = out[0].node.metadata["docket"]["chunks"]
    k = len(ordered) // 2
    assert chunks == [ordered[k - 1].node_id, middle.node_id, ordered[k + 1].node_id]
    assert out[0].node.text.index(ordered[k - 1].text[:20]) < out[0].node.text.index(middle.text[:20])
    # LlamaIndex's own PrevNext postprocessor adds the neighbours with score None: docket scores
    # all three by cosine (one scale for the floor) and keeps them in document order
    with_neighbours = PrevNextNodePostprocessor(docstore=index.docstore, num_nodes=1, mode="both").postprocess_nodes(
        [NodeWithScore(node=middle, score=0.9)])
    assert [n.score for n in with_neighbours].count(None) == 2
    out = DocketPostprocessor(floor=0.0).postprocess_nodes(with_neighbours, query_str="What is the refund window?")
    scores = next(e for e in out[0].node.metadata["docket_brief"]["trace"] if e["action"] == "scores")
    assert scores["numbers"] == {"source": "cosine", "documents": 3, "with_score": 1}
    assert sorted(i for n in out for i in n.node.metadata["docket"]["chunks"]) == sorted(chunks)


def test_the_synthesizer_refuses_nodes_that_skipped_docket(retriever):
    engine = RetrieverQueryEngine(retriever=retriever, response_synthesizer=DocketSynthesizer(CannedLLM()))
    with pytest.raises(InputError, match="did not come through DocketPostprocessor"):
        engine.query(REFUND_QUESTION)


def test_postprocessor_needs_the_question(retriever):
    with pytest.raises(InputError, match="needs the question"):
        DocketPostprocessor().postprocess_nodes(retriever.retrieve(REFUND_QUESTION))


def test_missing_doc_without_ref_doc_id_is_a_clear_error():
    node = TextNode(id_="n1", text="Refunds take 10 days.")
    with pytest.raises(InputError) as err:
        DocketPostprocessor().postprocess_nodes([NodeWithScore(node=node, score=0.8)], query_bundle=QueryBundle("x?"))
    assert "llamaindex node 1 (id 'n1'), field 'doc': is required but missing" in str(err.value)
    assert "ref_doc_id" in str(err.value)


def test_ref_doc_id_is_the_doc_by_convention():
    nodes = SentenceSplitter(chunk_size=60, chunk_overlap=0).get_nodes_from_documents(
        [Document(text=text_of("pol3-4"), id_="refund-policy")])
    out = DocketPostprocessor(floor=0.0).postprocess_nodes([NodeWithScore(node=n, score=0.9) for n in nodes],
                                                           query_str=REFUND_QUESTION)
    assert out[0].node.metadata["docket"]["doc"] == "refund-policy"
    assert out[0].node.ref_doc_id == "refund-policy"


def test_bad_score_names_the_node():
    node = TextNode(id_="n1", text="Refunds take 10 days.", metadata={"doc": "d"})
    with pytest.raises(InputError, match=r"llamaindex node 1 \(id 'n1'\), field 'score': must be finite"):
        DocketPostprocessor().postprocess_nodes([NodeWithScore(node=node, score=float("nan"))], query_str="x?")


def test_assemble_takes_llamaindex_chat_history(retriever):
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    history = [ChatMessage(role=MessageRole.USER, content="I bought an annual plan."),
               ChatMessage(role=MessageRole.ASSISTANT, content="Noted.")]
    outcome = DocketPostprocessor().assemble(REFUND_QUESTION, retriever.retrieve(REFUND_QUESTION), history=history)
    assert [m["role"] for m in outcome.messages] == ["system", "user", "assistant", "user"]
    with pytest.raises(InputError, match="'system' is not allowed"):
        DocketPostprocessor().assemble(REFUND_QUESTION, [], history=[ChatMessage(role=MessageRole.SYSTEM, content="x")])


@pytest.mark.parametrize("settings, match", [
    ({"scores": "bm25"}, "DocketPostprocessor, field 'scores'"),
    ({"budget": "500"}, "DocketPostprocessor, field 'budget': Input should be a valid integer"),
    ({"bugdet": 500}, "field 'bugdet': is not a setting of DocketPostprocessor"),
    ({"docstore": object()}, "field 'docstore': must be a LlamaIndex docstore"),
    ({"policy": {"pack": {"flor": 0.3}}}, "policy.pack.flor"),
])
def test_bad_settings_are_one_clear_line(settings, match):
    with pytest.raises(InputError, match=match):
        DocketPostprocessor(**settings)


def test_streaming_is_refused_rather_than_ignored():
    with pytest.raises(InputError, match="field 'streaming': DocketSynthesizer answers in one piece"):
        DocketSynthesizer(CannedLLM(), streaming=True)
