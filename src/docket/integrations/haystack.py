"""docket in Haystack (haystack-ai): an assembler component and an answer-checker component.

    pip install 'docket[haystack]'

* `DocketAssembler` — a `@component` between a retriever and a chat generator. Inputs:
  `query`, `documents`, optional `history` (ChatMessages). Outputs: `prompt` (list[ChatMessage]:
  docket's rules, the kept history, the fenced documents and the question last), `sources`
  (label -> source), `trace`, `found`, and `brief` (the whole brief as JSON).
* `DocketAnswerChecker` — a `@component` that runs docket's citation check on the generator's
  `replies` against the assembler's `sources` (or its `brief`). Outputs `replies` (unchanged),
  `report`, `clean`.
* `DocketTextEmbedder` / `DocketDocumentEmbedder` — docket's offline MiniLM as Haystack
  embedders, for an `InMemoryEmbeddingRetriever` that needs no model hub.

    pipe.connect("retriever.documents", "docket.documents")
    pipe.connect("docket.prompt", "llm.messages")
    pipe.connect("llm.replies", "check.replies")
    pipe.connect("docket.sources", "check.sources")

`principal=` (a docket `Principal`, or a user name with `groups=`), at construction or per run
(the optional `principal` / `groups` inputs): a document whose `meta["acl"]` does not let the
principal in takes no part; without one, only documents without an acl do.

`document_store=` (any Haystack DocumentStore) is what neighbour expansion and version
look-ups read: docket asks it with one filter per query for the chunks of the retrieved
documents, so it works on stores too big to list (the InMemoryDocumentStore, whose filters
evaluate every document in Python, is read once instead). `split_id` (DocumentSplitter) is the position and `source_id` the
document when docket's own keys are absent. Field mapping and scores: docket.integrations.mapping
and .common. Nothing found: the prompt asks the model for the refusal sentence and `found` is
False, so the pipeline keeps its shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date as Date
from typing import Any

from docket.check import SupportJudge, check_answer
from docket.embed import Embedder, default_embedder
from docket.errors import InputError
from docket.integrations.common import DEFAULT_HISTORY_TOKENS, Options, Outcome, ScoreMode, missing_framework, run
from docket.integrations.lookup import QuerySource, ScanSource, Source
from docket.integrations.mapping import FieldMap, RawDoc
from docket.policy import DEFAULT_REFUSAL, Policy, load_policy_dict
from docket.store.access import Principal

try:
    from haystack import Document, component, default_from_dict, default_to_dict
    from haystack.dataclasses import ChatMessage
    from haystack.document_stores.in_memory import InMemoryDocumentStore
except ImportError as e:  # the extra is not installed
    raise missing_framework("haystack", "Haystack", e) from e

FRAMEWORK = "Haystack"
__all__ = ["DocketAnswerChecker", "DocketAssembler", "DocketDocumentEmbedder", "DocketTextEmbedder", "raw_document",
           "store_source"]


def raw_document(item: Any, n: int, where: str = "haystack document") -> RawDoc:
    """A Haystack `Document` as docket's plain RawDoc."""
    if not isinstance(item, Document):
        raise InputError(f"must be a Haystack Document, got {type(item).__name__}", where=f"{where} {n}")
    meta = item.meta if item.meta is not None else {}
    get = meta.get if isinstance(meta, Mapping) else (lambda _k: None)
    return RawDoc(where=f"{where} {n}", text=item.content, text_field="content", metadata=meta, meta_field="meta",
                  id=item.id, score=item.score, obj=item, order=get("split_idx_start"),
                  conventions={"doc": ("meta['source_id']", get("source_id")),
                               "position": ("meta['split_id']", get("split_id"))})


def _doc_keys(fields: FieldMap) -> list[str]:
    keys = list(fields.keys_for("doc"))
    if fields.conventions and not fields.custom("doc"):
        keys.append("source_id")
    return keys


def store_source(document_store: Any, fields: FieldMap) -> Source | None:
    """A Haystack DocumentStore, asked with filters (by id; by the meta fields that hold the doc);
    the in-memory store is read whole."""
    if document_store is None:
        return None
    if not callable(getattr(document_store, "filter_documents", None)):
        raise InputError(f"must be a Haystack DocumentStore (with filter_documents), got {type(document_store).__name__}",
                         field="document_store")
    storage = getattr(document_store, "storage", None)
    if isinstance(document_store, InMemoryDocumentStore) and isinstance(storage, dict):
        # its filters evaluate every document in Python (~0.1 ms each): read the dict once instead
        def scan() -> list[RawDoc]:
            return [raw_document(d, n, "haystack store document") for n, d in enumerate(list(storage.values()), 1)]

        return ScanSource("Haystack InMemoryDocumentStore", scan, fields, size=lambda: len(storage))
    keys = _doc_keys(fields)

    def by_id(chunk_id: str) -> list[RawDoc]:
        found = document_store.filter_documents({"field": "id", "operator": "==", "value": chunk_id})
        return [raw_document(d, n, "haystack store document") for n, d in enumerate(found, 1)]

    def by_docs(docs: Sequence[str]) -> list[RawDoc]:
        conditions = [{"field": f"meta.{k}", "operator": "in", "value": list(docs)} for k in keys]
        filters = conditions[0] if len(conditions) == 1 else {"operator": "OR", "conditions": conditions}
        found = document_store.filter_documents(filters)
        return [raw_document(d, n, "haystack store document") for n, d in enumerate(found, 1)]

    return QuerySource(f"Haystack {type(document_store).__name__}", by_id, by_docs, fields)


def history_dicts(history: Sequence[Any] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, m in enumerate(history or []):
        if isinstance(m, ChatMessage):
            out.append({"role": m.role.value, "content": m.text})
        elif isinstance(m, Mapping):
            out.append(dict(m))
        else:
            raise InputError(f"must be a ChatMessage, got {type(m).__name__}", where=f"history[{i}]")
    return out


def chat_messages(outcome: Outcome) -> list[ChatMessage]:
    make = {"system": ChatMessage.from_system, "user": ChatMessage.from_user, "assistant": ChatMessage.from_assistant}
    return [make[m["role"]](m["content"]) for m in outcome.messages]


@component
class DocketAssembler:
    """docket between a Haystack retriever and a chat generator: retrieved documents in, the
    brief out as chat messages, with the label map and the trace beside it."""

    def __init__(self, *, policy: Policy | None = None, budget: int | None = None, floor: float | None = None,
                 as_of: Date | str | None = None, field_map: FieldMap | None = None, scores: ScoreMode = "auto",
                 history_tokens: int = DEFAULT_HISTORY_TOKENS, document_store: Any = None,
                 counter: Any = None, embedder: Embedder | None = None, principal: Principal | str | None = None,
                 groups: Sequence[str] | None = None) -> None:
        self.options = Options(policy=policy, budget=budget, floor=floor, as_of=as_of, fields=field_map or FieldMap(),
                               scores=scores, history_tokens=history_tokens, counter=counter, embedder=embedder,
                               principal=principal, groups=groups)
        self.document_store = document_store
        self.source = store_source(document_store, self.options.fields)

    def assemble(self, query: str, documents: Sequence[Any], history: Sequence[Any] | None = None, *,
                 principal: Principal | str | None = None, groups: Sequence[str] | None = None) -> Outcome:
        """`principal` / `groups`: this call's asker instead of the component's."""
        if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
            raise InputError(f"must be a list of Documents, got {type(documents).__name__}", field="documents")
        raws = [raw_document(d, n) for n, d in enumerate(documents, 1)]
        return run(query, raws, self.options, framework=FRAMEWORK, source=self.source, history=history_dicts(history),
                   principal=principal, groups=groups)

    @component.output_types(prompt=list[ChatMessage], sources=dict[str, Any], trace=list[dict[str, Any]], found=bool,
                            brief=dict[str, Any])
    def run(self, query: str, documents: list[Document], history: list[ChatMessage] | None = None,
            principal: Any = None, groups: list[str] | None = None) -> dict[str, Any]:
        """`principal` / `groups` (optional inputs): this run's asker, a docket Principal or a user
        name, instead of the component's."""
        outcome = self.assemble(query, documents, history, principal=principal, groups=groups)
        return {"prompt": chat_messages(outcome), "sources": outcome.brief.sources, "trace": outcome.brief.trace,
                "found": outcome.found, "brief": outcome.brief_json()}

    def to_dict(self) -> dict[str, Any]:
        o = self.options
        if o.fields.hook is not None or o.counter is not None or o.embedder is not None:
            raise InputError("a DocketAssembler with a FieldMap hook, a counter or an embedder cannot be serialised; "
                             "build it in code", field="to_dict")
        store = self.document_store
        return default_to_dict(
            self, policy=o.policy.model_dump(mode="json") if isinstance(o.policy, Policy) else None, budget=o.budget, floor=o.floor,
            as_of=o.as_of.isoformat() if isinstance(o.as_of, Date) else o.as_of,
            field_map={"keys": {k: list(o.fields.keys_for(k)) for k in o.fields.keys}, "conventions": o.fields.conventions},
            scores=o.scores, history_tokens=o.history_tokens,
            principal=o.the_principal.name if o.the_principal else None,
            groups=sorted(o.the_principal.groups) if o.the_principal and o.the_principal.groups else None,
            document_store=store.to_dict() if store is not None and hasattr(store, "to_dict") else None,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocketAssembler:
        """The policy and field map rebuilt; the document store is rebuilt by Haystack itself."""
        params = dict(data.get("init_parameters", {}))
        if params.get("policy") is not None:
            params["policy"] = load_policy_dict(params["policy"], where="DocketAssembler.policy")
        if params.get("field_map") is not None:
            params["field_map"] = FieldMap(**params["field_map"])
        return default_from_dict(cls, {**data, "init_parameters": params})


@component
class DocketAnswerChecker:
    """docket's citation check on a chat generator's replies: unknown labels, uncited factual
    sentences, numbers and names missing from the cited passage, links off the allow-list."""

    def __init__(self, *, refusal: str = DEFAULT_REFUSAL, allowed_domains: Sequence[str] = (),
                 judge: SupportJudge | None = None) -> None:
        self.refusal = refusal
        self.allowed_domains = list(allowed_domains)
        self.judge = judge

    @component.output_types(replies=list[ChatMessage], report=dict[str, Any], clean=bool)
    def run(self, replies: list[ChatMessage], sources: dict[str, Any] | None = None,
            brief: dict[str, Any] | None = None) -> dict[str, Any]:
        if brief is None and sources is None:
            raise InputError("connect DocketAssembler's 'sources' (or 'brief') to the checker", field="sources")
        target = brief if brief is not None else {"sources": sources, "refusal": self.refusal, "found": bool(sources)}
        if not replies:
            raise InputError("the generator returned no reply to check", field="replies")
        text = replies[0].text or ""
        report = check_answer(text, target, judge=self.judge, allowed_domains=self.allowed_domains)
        return {"replies": replies, "report": report.to_json(), "clean": report.clean}

    def to_dict(self) -> dict[str, Any]:
        if self.judge is not None:
            raise InputError("a DocketAnswerChecker with a judge cannot be serialised; build it in code", field="to_dict")
        return default_to_dict(self, refusal=self.refusal, allowed_domains=self.allowed_domains)


@component
class DocketTextEmbedder:
    """docket's embedder (all-MiniLM-L6-v2, int8 ONNX, offline) for a query text."""

    def __init__(self) -> None:
        self._embedder: Embedder | None = None

    def _model(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        return {"embedding": [float(x) for x in self._model().embed([text])[0]]}


@component
class DocketDocumentEmbedder:
    """docket's embedder for documents (returns copies with `embedding` set)."""

    def __init__(self) -> None:
        self._embedder: Embedder | None = None

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        if self._embedder is None:
            self._embedder = default_embedder()
        vecs = self._embedder.embed([d.content or "" for d in documents])
        return {"documents": [replace(d, embedding=[float(x) for x in v]) for d, v in zip(documents, vecs)]}
