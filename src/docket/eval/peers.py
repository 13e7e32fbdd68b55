"""The peers' usual context-assembly chains, run with the real libraries, plus two baselines.

Every system receives the SAME ranked candidates (best first, with the same scores) and is
measured with the SAME token counter. The peers never see a model hub: a tiny adapter hands
them the precomputed MiniLM vectors.

- langchain: EmbeddingsRedundantFilter(0.95) -> EmbeddingsFilter(k) -> LongContextReorder,
  stuffed with "\\n\\n" (StuffDocumentsChain's default separator), top-k.
- llamaindex: SimilarityPostprocessor(cutoff) -> LongContextReorder -> "compact" packing:
  PromptHelper.repack joins the nodes' LLM text and re-splits it to the window; the FIRST
  packed chunk is the first prompt (the rest would go to refine calls).
- haystack: LostInTheMiddleRanker(word_count_threshold), the budget converted to words at
  0.75 words per token (the usual rule of thumb), documents joined with "\\n\\n".
- topk: the first k candidates, joined.
- greedy: candidates in rank order until the first one that does not fit the budget.

The top-k systems take k, not a budget: the runner picks, per budget, the largest k whose
MEAN evidence tokens over the set stay within the budget (tuned on the set itself, which
flatters them; their p95 can exceed the budget).

Install the peers with `pip install 'docket[peers]'`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from docket.errors import UnavailableError
from docket.model import Candidate
from docket.tokens import TokenCounter

PEER_NAMES = ("langchain", "llamaindex", "haystack")
BASELINES = ("topk", "greedy")
#: systems that take k rather than a budget
TOPK_SYSTEMS = ("langchain", "topk")
WORDS_PER_TOKEN = 0.75

LANGCHAIN_TEMPLATE = (
    "Use the following pieces of context to answer the question at the end. If you don't know the answer, "
    "just say that you don't know, don't try to make up an answer.\n\n{context}\n\nQuestion: {question}\nHelpful Answer:"
)
LLAMAINDEX_TEMPLATE = (
    "Context information is below.\n---------------------\n{context}\n---------------------\n"
    "Given the context information and not prior knowledge, answer the query.\nQuery: {question}\nAnswer: "
)
HAYSTACK_TEMPLATE = (
    "Given the following information, answer the question.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
)
PLAIN_TEMPLATE = "Answer the question using the context.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"


@dataclass
class SystemOutput:
    """What one system put into the prompt for one question."""

    units: list[str]  # text units in prompt order, as the system renders them
    ids: list[str]  # chunk ids whose units were kept (a re-split unit keeps the id of no chunk)
    evidence: str  # the evidence block as sent
    evidence_tokens: int
    total_tokens: int
    found: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Query:
    """One question with its ranked pool and vectors (shared by every system)."""

    question: str
    ranked: list[Candidate]
    qvec: np.ndarray
    vecs: np.ndarray  # rows parallel to `ranked`

    @property
    def texts(self) -> list[str]:
        return [c.chunk.text for c in self.ranked]


def _require(extra_module: str, what: str) -> None:
    import importlib
    import warnings

    try:
        with warnings.catch_warnings():  # langchain-community announces its sunset on import
            warnings.simplefilter("ignore", DeprecationWarning)
            importlib.import_module(extra_module)
    except ImportError as e:
        raise UnavailableError(
            f"comparing with {what} needs its library: pip install 'docket[peers]' (module {extra_module!r} missing)"
        ) from e


def _out(units: list[str], ids: list[str], template: str, question: str, counter: TokenCounter, sep: str = "\n\n") -> SystemOutput:
    evidence = sep.join(units)
    total = counter.count(template.format(context=evidence, question=question))
    return SystemOutput(units, ids, evidence, counter.count(evidence) if evidence else 0, total, found=bool(units))


# --- an Embeddings adapter fed with precomputed vectors --------------------------------------


class VectorTable:
    """text -> vector for one query (the peers look vectors up by text)."""

    def __init__(self, q: Query) -> None:
        self.by_text = {t: v for t, v in zip(q.texts, q.vecs)}
        self.by_text.setdefault(q.question, q.qvec)
        self.question = q.question
        self.qvec = q.qvec

    def doc(self, text: str) -> list[float]:
        v = self.by_text.get(text)
        if v is None:
            raise KeyError("a peer asked for the vector of a text that was never embedded")
        return [float(x) for x in v]


def _lc_embeddings(table: VectorTable) -> Any:
    from langchain_core.embeddings import Embeddings

    class Precomputed(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [table.doc(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return table.doc(text)

    return Precomputed()


# --- LangChain ----------------------------------------------------------------------------------


def run_langchain(q: Query, k: int, counter: TokenCounter, floor: float | None = None) -> SystemOutput:
    _require("langchain_community", "LangChain")
    _require("langchain_classic", "LangChain")
    import warnings

    from langchain_core.documents import Document

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline
        from langchain_classic.retrievers.document_compressors.embeddings_filter import EmbeddingsFilter
        from langchain_community.document_transformers import EmbeddingsRedundantFilter, LongContextReorder

    emb = _lc_embeddings(VectorTable(q))
    pipeline = DocumentCompressorPipeline(
        transformers=[
            EmbeddingsRedundantFilter(embeddings=emb, similarity_threshold=0.95),
            EmbeddingsFilter(embeddings=emb, k=k, similarity_threshold=floor),
            LongContextReorder(),
        ]
    )
    docs = [Document(page_content=c.chunk.text, metadata={"id": c.chunk.id, "title": c.chunk.title}) for c in q.ranked]
    out = pipeline.compress_documents(docs, q.question)
    return _out([d.page_content for d in out], [d.metadata["id"] for d in out], LANGCHAIN_TEMPLATE, q.question, counter)


# --- LlamaIndex -------------------------------------------------------------------------------


def run_llamaindex(q: Query, budget: int, counter: TokenCounter, floor: float | None = None) -> SystemOutput:
    _require("llama_index.core", "LlamaIndex")
    from llama_index.core import PromptTemplate
    from llama_index.core.indices.prompt_helper import PromptHelper
    from llama_index.core.postprocessor import LongContextReorder, SimilarityPostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

    nodes = [
        NodeWithScore(node=TextNode(text=c.chunk.text, id_=c.chunk.id, metadata={"title": c.chunk.title}), score=c.score)
        for c in q.ranked
    ]
    bundle = QueryBundle(q.question)
    if floor is not None:
        nodes = SimilarityPostprocessor(similarity_cutoff=floor).postprocess_nodes(nodes, query_bundle=bundle)
    nodes = LongContextReorder().postprocess_nodes(nodes, query_bundle=bundle)
    if not nodes:
        return _out([], [], LLAMAINDEX_TEMPLATE, q.question, counter)
    template = PromptTemplate(LLAMAINDEX_TEMPLATE.replace("{context}", "{context_str}").replace("{question}", "{query_str}"))
    empty = template.partial_format(query_str=q.question).format(context_str="")
    padding = 5
    helper = PromptHelper(
        context_window=budget + counter.count(empty) + padding,
        num_output=0,
        tokenizer=lambda s: [0] * counter.count(s),
    )
    texts = [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]
    packed = helper.repack(template.partial_format(query_str=q.question), texts, padding=padding)
    first = packed[0] if packed else ""
    kept = [n.node.node_id for n in nodes if n.node.get_content() in first]
    out = _out([first] if first else [], kept, LLAMAINDEX_TEMPLATE, q.question, counter)
    out.extra["refine_calls"] = max(0, len(packed) - 1)
    return out


# --- Haystack ---------------------------------------------------------------------------------


def run_haystack(q: Query, budget: int, counter: TokenCounter, floor: float | None = None) -> SystemOutput:
    _require("haystack", "Haystack")
    from haystack import Document
    from haystack.components.rankers import LostInTheMiddleRanker

    docs = [Document(content=c.chunk.text, id=c.chunk.id, score=c.score, meta={"title": c.chunk.title}) for c in q.ranked]
    words = max(1, int(budget * WORDS_PER_TOKEN))
    out = LostInTheMiddleRanker(word_count_threshold=words).run(documents=docs)["documents"]
    return _out([d.content or "" for d in out], [d.id for d in out], HAYSTACK_TEMPLATE, q.question, counter)


# --- baselines --------------------------------------------------------------------------------


def run_topk(q: Query, k: int, counter: TokenCounter) -> SystemOutput:
    top = q.ranked[:k]
    return _out([c.chunk.text for c in top], [c.chunk.id for c in top], PLAIN_TEMPLATE, q.question, counter)


def run_greedy(q: Query, budget: int, counter: TokenCounter) -> SystemOutput:
    """Rank order, whole chunks, and stop at the first chunk that would overflow the budget."""
    units: list[str] = []
    ids: list[str] = []
    for c in q.ranked:
        trial = "\n\n".join([*units, c.chunk.text])
        if counter.count(trial) > budget:
            break
        units.append(c.chunk.text)
        ids.append(c.chunk.id)
    return _out(units, ids, PLAIN_TEMPLATE, q.question, counter)


def check_available(names: Sequence[str]) -> None:
    """Fail early, naming the extra, when a requested peer library is missing."""
    mods = {"langchain": ["langchain_community", "langchain_classic"], "llamaindex": ["llama_index.core"], "haystack": ["haystack"]}
    for n in names:
        for m in mods.get(n, []):
            _require(m, n)


def runner_for(name: str, counter: TokenCounter, floor: float | None) -> Callable[[Query, int], SystemOutput]:
    """A function (query, budget_or_k) -> output for a system name."""
    if name == "langchain":
        return lambda q, k: run_langchain(q, k, counter, floor)
    if name == "llamaindex":
        return lambda q, b: run_llamaindex(q, b, counter, floor)
    if name == "haystack":
        return lambda q, b: run_haystack(q, b, counter, floor)
    if name == "topk":
        return lambda q, k: run_topk(q, k, counter)
    if name == "greedy":
        return lambda q, b: run_greedy(q, b, counter)
    raise ValueError(f"unknown system {name!r}; choose from {', '.join(PEER_NAMES + BASELINES)}")
