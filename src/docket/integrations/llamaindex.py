"""docket in LlamaIndex (llama-index-core): a node postprocessor and a brief-based synthesizer.

    pip install 'docket[llamaindex]'

* `DocketPostprocessor` — a `BaseNodePostprocessor`: retrieved nodes in, one node per passage
  docket chose out (in prompt order, spans merged, duplicates folded, retired versions gone),
  each with `metadata["label"]`, `["sources"]`, `["docket"]` (the brief's source record: its
  `chunks` are the original node ids) and `["trace"]`; those keys are hidden from the LLM and
  embedding text. The first node also carries the whole brief (`metadata["docket_brief"]`).
* `DocketSynthesizer` — a response synthesizer that sends docket's brief (system rules,
  fenced documents, question last) to the LLM as chat messages, instead of a text-QA template,
  and runs docket's citation check on the reply: `response.metadata["docket"]` holds `sources`,
  `trace`, `check`. When docket found nothing it answers the refusal sentence without calling
  the LLM (the trace is in `response.metadata["docket"]` too).
* `docket_query_engine(retriever, llm, docstore=index.docstore)` — a `RetrieverQueryEngine`
  with docket as the postprocessor and its brief as the prompt.
* `DocketEmbedding` — docket's offline MiniLM as a LlamaIndex embedding model.

`principal=` (a docket `Principal`, or a user name with `groups=`) on the postprocessor (and so
on `docket_query_engine(..., principal=...)`), per call on `assemble(...)`, or for a block
(`with docket.integrations.acting_as("ann", groups=["finance"]): engine.query(...)`): a node
whose `metadata["acl"]` does not let the principal in takes no part; without one, only nodes
without an acl do.

`docstore=` (a docstore, or an index / StorageContext that has one) is what neighbour expansion
and version look-ups read; without it docket sees only the retrieved nodes, and says so in the
trace. Nodes without a position are ordered by `start_char_idx`. Field mapping and scores:
docket.integrations.mapping and .common (PrevNext neighbours have score None: then every node
is scored by cosine, so the floor compares one scale).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Sequence
from datetime import date as Date
from typing import Any

from docket.check import SupportJudge, check_answer
from docket.embed import Embedder, default_embedder
from docket.errors import InputError
from docket.integrations.common import Options, Outcome, ScoreMode, missing_framework, passages, run, settings_error
from docket.integrations.lookup import ScanSource, Source
from docket.integrations.mapping import FieldMap, RawDoc
from docket.policy import Policy
from docket.store.access import Principal

try:
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.base.response.schema import Response
    from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, ValidationError
    from llama_index.core.callbacks.schema import CBEventType, EventPayload
    from llama_index.core.llms import LLM
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.response_synthesizers.base import BaseSynthesizer, QueryTextType
    from llama_index.core.schema import (
        BaseNode,
        MetadataMode,
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        TextNode,
    )
    from llama_index.core.storage.docstore.types import BaseDocumentStore
except ImportError as e:  # the extra is not installed
    raise missing_framework("llamaindex", "LlamaIndex", e) from e

FRAMEWORK = "LlamaIndex"
#: the metadata keys docket adds to its nodes (kept out of the LLM and embedding text)
DOCKET_KEYS = ["label", "sources", "docket", "trace", "docket_brief"]
__all__ = ["DocketEmbedding", "DocketPostprocessor", "DocketSynthesizer", "docket_query_engine", "raw_node",
           "store_source"]


def raw_node(item: Any, n: int, where: str = "llamaindex node") -> RawDoc:
    """A `NodeWithScore` (or a bare node) as docket's plain RawDoc."""
    score = None
    if isinstance(item, NodeWithScore):
        score, item = item.score, item.node
    if not isinstance(item, BaseNode):
        raise InputError(f"must be a LlamaIndex NodeWithScore or node, got {type(item).__name__}", where=f"{where} {n}")
    text = item.text if isinstance(item, TextNode) else item.get_content(metadata_mode=MetadataMode.NONE)
    return RawDoc(where=f"{where} {n}", text=text, text_field="text", metadata=item.metadata or {}, id=item.node_id,
                  score=score, conventions={"doc": ("ref_doc_id", item.ref_doc_id)}, obj=item,
                  order=getattr(item, "start_char_idx", None))


def store_source(docstore: Any, fields: FieldMap) -> Source | None:
    """A LlamaIndex docstore (or an index / StorageContext holding one), read whole."""
    if docstore is None:
        return None
    store = docstore if isinstance(docstore, BaseDocumentStore) else getattr(docstore, "docstore", None)
    if not isinstance(store, BaseDocumentStore):
        raise InputError(f"must be a LlamaIndex docstore (or an index / StorageContext with one), got "
                         f"{type(docstore).__name__}", field="docstore")

    def scan() -> list[RawDoc]:
        return [raw_node(node, n, "llamaindex docstore node") for n, node in enumerate(store.docs.values(), 1)]

    return ScanSource(f"LlamaIndex {type(store).__name__}", scan, fields, size=lambda: len(store.docs))


def _nodes(items: Any) -> list[RawDoc]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InputError(f"must be a list of nodes, got {type(items).__name__}", field="nodes")
    return [raw_node(x, n) for n, x in enumerate(items, 1)]


def passage_nodes(outcome: Outcome) -> list[NodeWithScore]:
    """One node per passage, in prompt order; the first carries the whole brief."""
    out = []
    for k, p in enumerate(passages(outcome)):
        meta = {**p.metadata, "label": p.label, "sources": p.provenance, "docket": p.source, "trace": p.trace}
        if k == 0:
            meta["docket_brief"] = outcome.brief_json()
        original = p.raw.obj if p.raw is not None else None
        relationships = {}
        if isinstance(original, BaseNode) and NodeRelationship.SOURCE in original.relationships:
            relationships[NodeRelationship.SOURCE] = original.relationships[NodeRelationship.SOURCE]
        node = TextNode(id_=p.chunks[0] if len(p.chunks) == 1 else "+".join(p.chunks), text=p.text, metadata=meta,
                        relationships=relationships, excluded_llm_metadata_keys=list(DOCKET_KEYS),
                        excluded_embed_metadata_keys=list(DOCKET_KEYS))
        out.append(NodeWithScore(node=node, score=p.score))
    return out


_LAST: contextvars.ContextVar[Outcome | None] = contextvars.ContextVar("docket_llamaindex_last", default=None)


class _Pending:
    """Outcomes by the identity of the query bundle they answer (a strong reference to the
    bundle is kept with each, so an id is never reused while its entry lives), taken once by
    the synthesizer; bounded, oldest dropped first. One request's outcome can reach only the
    synthesis of that same request, never another caller's."""

    LIMIT = 256

    def __init__(self) -> None:
        self._items: dict[int, tuple[Any, Outcome]] = {}
        self._lock = threading.Lock()

    def put(self, bundle: Any, outcome: Outcome) -> None:
        with self._lock:
            self._items.pop(id(bundle), None)
            self._items[id(bundle)] = (bundle, outcome)
            while len(self._items) > self.LIMIT:
                del self._items[next(iter(self._items))]

    def take(self, bundle: Any) -> Outcome | None:
        with self._lock:
            entry = self._items.get(id(bundle))
            if entry is None or entry[0] is not bundle:
                return None
            del self._items[id(bundle)]
            return entry[1]


class DocketPostprocessor(BaseNodePostprocessor):
    """docket as a LlamaIndex node postprocessor. Nothing found gives no nodes (a query engine
    with `DocketSynthesizer` then answers the refusal without an LLM call)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, strict=True, extra="forbid")

    policy: Policy | None = None
    budget: int | None = None
    floor: float | None = None
    as_of: Date | str | None = None
    field_map: FieldMap = Field(default_factory=FieldMap)
    scores: ScoreMode = "auto"
    docstore: Any = Field(default=None, exclude=True)
    counter: Any = Field(default=None, exclude=True)
    embedder: Any = Field(default=None, exclude=True)
    #: who is asking: a docket Principal, or a user name with `groups`; None = public nodes only
    principal: Any = Field(default=None, exclude=True)
    groups: Any = Field(default=None, exclude=True)
    _options: Options = PrivateAttr()
    _source: Source | None = PrivateAttr(default=None)
    #: the outcome of each query bundle this postprocessor saw, until the synthesizer takes it
    _pending: _Pending = PrivateAttr(default_factory=lambda: _Pending())

    def __init__(self, **settings: Any) -> None:
        try:
            super().__init__(**settings)
        except ValidationError as e:
            raise settings_error(e, "DocketPostprocessor") from None

    def model_post_init(self, context: Any, /) -> None:
        self._options = Options(policy=self.policy, budget=self.budget, floor=self.floor, as_of=self.as_of,
                                fields=self.field_map, scores=self.scores, counter=self.counter, embedder=self.embedder,
                                principal=self.principal, groups=self.groups)
        self._source = store_source(self.docstore, self.field_map)

    @classmethod
    def class_name(cls) -> str:
        return "DocketPostprocessor"

    @property
    def last_outcome(self) -> Outcome | None:
        """The latest outcome in this context (thread or task): the brief, even when nothing was
        found. For your own code right after your own call; the synthesizer never reads it (in a
        server one thread serves many callers), it takes the outcome of its own query bundle."""
        return _LAST.get()

    def outcome_of(self, query: Any) -> Outcome | None:
        """The outcome of this very query bundle (the object the query engine passed to the
        postprocessor and then to the synthesizer), taken once; None for any other query."""
        return self._pending.take(query)

    def assemble(self, question: str, nodes: Sequence[Any], history: Sequence[Any] | None = None, *,
                 principal: Principal | str | None = None, groups: Sequence[str] | None = None) -> Outcome:
        """The whole outcome for these nodes; `history` (LlamaIndex ChatMessages or role/content
        dicts) for callers that build a chat prompt from `outcome.messages` themselves;
        `principal` / `groups`: this call's asker instead of the postprocessor's."""
        turns = [{"role": m.role.value, "content": m.content} if isinstance(m, ChatMessage) else m
                 for m in (history or [])]
        outcome = run(question, _nodes(nodes), self._options, framework=FRAMEWORK, source=self._source,
                      history=turns, principal=principal, groups=groups)
        _LAST.set(outcome)
        return outcome

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None:
            raise InputError("docket needs the question: call postprocess_nodes(nodes, query_str=...) or "
                             "query_bundle=...", field="query_bundle")
        outcome = self.assemble(query_bundle.query_str, nodes)
        self._pending.put(query_bundle, outcome)
        return passage_nodes(outcome)

    async def _apostprocess_nodes(self, nodes: list[NodeWithScore],
                                  query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return self._postprocess_nodes(nodes, query_bundle)  # CPU-bound and short; keeps last_outcome in this task


def _brief_of(nodes: Sequence[NodeWithScore]) -> dict[str, Any] | None:
    for n in nodes:
        brief = n.node.metadata.get("docket_brief")
        if isinstance(brief, dict):
            return brief
    return None


def _chat(messages: Sequence[dict[str, str]]) -> list[ChatMessage]:
    return [ChatMessage(role=MessageRole(m["role"]), content=m["content"]) for m in messages]


class DocketSynthesizer(BaseSynthesizer):
    """Answers from docket's brief: its messages go to the LLM as they are, and the reply is
    checked against its label map (`check=False` skips the check)."""

    def __init__(self, llm: LLM | None = None, *, postprocessor: DocketPostprocessor | None = None, check: bool = True,
                 judge: SupportJudge | None = None, allowed_domains: Sequence[str] = (), **kwargs: Any) -> None:
        if kwargs.get("streaming") or kwargs.get("output_cls") is not None:
            raise InputError("DocketSynthesizer answers in one piece (the check reads the whole reply); streaming and "
                             "structured output are not supported", field="streaming" if kwargs.get("streaming")
                             else "output_cls")
        super().__init__(llm=llm, **kwargs)
        self._postprocessor = postprocessor
        self._check = check
        self._judge = judge
        self._domains = tuple(allowed_domains)

    def _get_prompts(self) -> dict[str, Any]:
        return {}  # the prompt is docket's brief, not a template

    def _update_prompts(self, prompts: dict[str, Any]) -> None:
        if prompts:
            raise InputError("DocketSynthesizer has no prompt templates to update: the prompt is docket's brief "
                             "(change it through the policy's [brief] section)", field="prompts")

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise InputError("DocketSynthesizer answers from docket's brief; use it with DocketPostprocessor "
                         "(docket_query_engine), not with bare text chunks", field="text_chunks")

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        return self.get_response(query_str, text_chunks)

    def _plan(self, query: QueryTextType, nodes: list[NodeWithScore]) -> tuple[dict[str, Any] | None, str]:
        query_str = query.query_str if isinstance(query, QueryBundle) else str(query)
        brief = _brief_of(nodes)
        if brief is None and nodes:
            raise InputError("these nodes did not come through DocketPostprocessor; put it in the query engine's "
                             "node_postprocessors (or use docket_query_engine)", field="nodes")
        if brief is not None and self._postprocessor is not None:
            self._postprocessor.outcome_of(query)  # the brief rides on the nodes: drop this query's entry
        return brief, query_str

    def _not_found(self, query: QueryTextType, nodes: list[NodeWithScore]) -> Response:
        """The refusal without an LLM call, with the trace of this query's own outcome (taken by
        the query bundle's identity): never another request's, whoever asked it."""
        post = self._postprocessor
        outcome = post.outcome_of(query) if post is not None else None
        policy = post._options.the_policy if post is not None else Policy()
        refusal = outcome.brief.refusal if outcome is not None else policy.brief.refusal
        meta: dict[str, Any] = {"found": False, "sources": {}, "trace": outcome.brief.trace if outcome else [],
                                "check": None, "llm_called": False}
        return Response(refusal, source_nodes=list(nodes), metadata={"docket": meta})

    def _finish(self, brief: dict[str, Any], reply: str, nodes: list[NodeWithScore]) -> Response:
        report = check_answer(reply, brief, judge=self._judge, allowed_domains=self._domains) if self._check else None
        meta = {"found": True, "sources": brief["sources"], "trace": brief["trace"], "tokens": brief["tokens"],
                "check": report.to_json() if report else None, "clean": report.clean if report else None,
                "llm_called": True}
        return Response(reply, source_nodes=list(nodes), metadata={"docket": meta})

    def synthesize(self, query: QueryTextType, nodes: list[NodeWithScore],
                   additional_source_nodes: Sequence[NodeWithScore] | None = None, **kwargs: Any) -> Response:
        brief, query_str = self._plan(query, nodes)
        if brief is None:
            return self._not_found(query, nodes)
        with self._callback_manager.event(CBEventType.SYNTHESIZE, payload={EventPayload.QUERY_STR: query_str}) as event:
            reply = self._llm.chat(_chat(brief["messages"])).message.content or ""
            response = self._finish(brief, reply, [*nodes, *(additional_source_nodes or [])])
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    async def asynthesize(self, query: QueryTextType, nodes: list[NodeWithScore],
                          additional_source_nodes: Sequence[NodeWithScore] | None = None, **kwargs: Any) -> Response:
        brief, query_str = self._plan(query, nodes)
        if brief is None:
            return self._not_found(query, nodes)
        with self._callback_manager.event(CBEventType.SYNTHESIZE, payload={EventPayload.QUERY_STR: query_str}) as event:
            reply = (await self._llm.achat(_chat(brief["messages"]))).message.content or ""
            response = self._finish(brief, reply, [*nodes, *(additional_source_nodes or [])])
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response


def docket_query_engine(retriever: BaseRetriever, llm: LLM | None = None, *, check: bool = True,
                        judge: SupportJudge | None = None, allowed_domains: Sequence[str] = (),
                        **docket: Any) -> BaseQueryEngine:
    """A `RetrieverQueryEngine`: `retriever` -> DocketPostprocessor(**docket) -> the brief to `llm`
    -> docket's check. `docket` takes the postprocessor's settings (docstore, budget, policy, ...)."""
    post = DocketPostprocessor(**docket)
    synth = DocketSynthesizer(llm, postprocessor=post, check=check, judge=judge, allowed_domains=allowed_domains)
    return RetrieverQueryEngine(retriever=retriever, response_synthesizer=synth, node_postprocessors=[post])


class DocketEmbedding(BaseEmbedding):
    """docket's embedder (all-MiniLM-L6-v2, int8 ONNX, offline) as a LlamaIndex embedding model."""

    model_name: str = "all-MiniLM-L6-v2-onnx-int8"
    _embedder: Embedder | None = PrivateAttr(default=None)

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "DocketEmbedding"

    def _model(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._model().embed([query])[0]]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in self._model().embed([text])[0]]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._model().embed(list(texts))]
