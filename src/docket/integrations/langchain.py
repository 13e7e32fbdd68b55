"""docket in LangChain (langchain-core): a document compressor, an LCEL prompt step, a check step.

    pip install 'docket[langchain]'

* `DocketCompressor` — a `BaseDocumentCompressor`: put it in `ContextualCompressionRetriever`
  (langchain-classic) and the retriever returns docket's chosen passages as `Document`s, in
  prompt order, each with `metadata["label"]` (S1, S2, ...), `metadata["sources"]` (every
  document the passage speaks for, folded duplicates included), `metadata["docket"]` (the
  brief's source record) and `metadata["trace"]` (the decisions about its chunks).
* `DocketPrompt` — a `Runnable` from `{"question", "documents"[, "history", "principal", "groups"]}` to the brief as a
  `ChatPromptValue` (system rules, history, documents + question last), so

      chain = {"question": RunnablePassthrough(), "documents": retriever} | DocketPrompt() | chat_model

  works as any LCEL chain. The output is a `DocketPromptValue`: its `.sources` (label -> source),
  `.trace`, `.found` and `.brief` stay reachable for the citation check.
* `DocketCheck` — a `Runnable` from `{"prompt": DocketPromptValue, "answer": AIMessage | str}` to
  docket's check report; `check_reply(answer, prompt)` is the same as a function.
* `DocketEmbeddings` — docket's offline MiniLM as LangChain `Embeddings` (for an in-memory store).

Access: `principal=` (a docket `Principal`, or a user name with `groups=`) on either class, per
call (`DocketPrompt`'s input keys `principal` / `groups`; `assemble(...)` and
`compress_documents(...)` keyword arguments) or for a block (`docket.integrations.acting_as`,
for a compressor inside `ContextualCompressionRetriever`): a document whose `metadata["acl"]`
does not let the principal in takes no part; without one, only documents without an acl do.

Documents may come as `Document`s or `(Document, score)` pairs (`similarity_search_with_score`).
`docstore=` takes what neighbour expansion and version look-ups read: an `InMemoryVectorStore`,
a `BaseStore` of Documents (`InMemoryStore`, as `ParentDocumentRetriever` uses) or a list of
Documents. Field mapping and scores: docket.integrations.mapping and .common.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date as Date
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError

from docket.check import CheckReport, SupportJudge
from docket.embed import Embedder, default_embedder
from docket.errors import InputError
from docket.integrations.common import (
    Options,
    Outcome,
    ScoreMode,
    missing_framework,
    passages,
    run,
    settings_error,
)
from docket.integrations.common import check_reply as _check
from docket.integrations.lookup import ScanSource, Source
from docket.integrations.mapping import FieldMap, RawDoc
from docket.policy import Policy
from docket.store.access import Principal
from docket.tokens import TokenCounter

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_core.prompt_values import ChatPromptValue
    from langchain_core.runnables import Runnable, RunnableConfig, RunnableParallel, RunnablePassthrough
    from langchain_core.stores import BaseStore
    from langchain_core.vectorstores import InMemoryVectorStore
except ImportError as e:  # the extra is not installed
    raise missing_framework("langchain", "LangChain", e) from e

FRAMEWORK = "LangChain"
__all__ = ["DocketCheck", "DocketCompressor", "DocketEmbeddings", "DocketPrompt", "DocketPromptValue", "check_reply",
           "raw_document", "store_source"]


# -- documents in ---------------------------------------------------------------------------------


def raw_document(item: Any, n: int, where: str = "langchain document") -> RawDoc:
    """A `Document` (or a `(Document, score)` pair) as docket's plain RawDoc."""
    score = None
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Document):
        item, score = item
    if not isinstance(item, Document):
        raise InputError(f"must be a LangChain Document or a (Document, score) pair, got {type(item).__name__}",
                         where=f"{where} {n}")
    meta = item.metadata if item.metadata is not None else {}
    source = meta.get("source") if isinstance(meta, Mapping) else None
    return RawDoc(where=f"{where} {n}", text=item.page_content, text_field="page_content", metadata=meta,
                  id=item.id, score=score, conventions={"doc": ("metadata['source']", source)}, obj=item,
                  order=meta.get("start_index") if isinstance(meta, Mapping) else None)


def store_source(docstore: Any, fields: FieldMap) -> Source | None:
    """What docket reads for neighbours and versions: an InMemoryVectorStore, a BaseStore of
    Documents, or a list of Documents."""
    if docstore is None:
        return None
    if isinstance(docstore, InMemoryVectorStore):
        store = docstore.store

        def scan_vs() -> list[RawDoc]:
            out = []
            for n, (key, rec) in enumerate(list(store.items()), 1):
                text, meta = rec.get("text"), rec.get("metadata") or {}
                if isinstance(text, str) and isinstance(meta, dict):
                    out.append(raw_document(Document(id=key, page_content=text, metadata=meta), n,
                                            "langchain store document"))
                else:  # mapped only to be reported as unusable
                    out.append(RawDoc(where=f"langchain store document {n}", text=text, text_field="page_content",
                                      metadata=meta, id=key))
            return out

        return ScanSource("LangChain InMemoryVectorStore", scan_vs, fields, size=lambda: len(store))
    if isinstance(docstore, BaseStore):
        def scan_bs() -> list[RawDoc]:
            keys = list(docstore.yield_keys())
            out = []
            for n, (key, doc) in enumerate(zip(keys, docstore.mget(keys)), 1):
                if isinstance(doc, Document):
                    out.append(raw_document(doc if doc.id else doc.model_copy(update={"id": key}), n,
                                            "langchain store document"))
            return out

        inner = getattr(docstore, "store", None)
        size = (lambda: len(inner)) if isinstance(inner, dict) else None
        return ScanSource(f"LangChain {type(docstore).__name__}", scan_bs, fields, size=size)
    if isinstance(docstore, Sequence) and not isinstance(docstore, (str, bytes)):
        docs = list(docstore)

        def scan_list() -> list[RawDoc]:
            return [raw_document(d, n, "langchain store document") for n, d in enumerate(docs, 1)]

        return ScanSource("list of LangChain Documents", scan_list, fields)  # no count: it would include restricted ones
    raise InputError(f"must be an InMemoryVectorStore, a BaseStore of Documents (InMemoryStore) or a list of "
                     f"Documents, got {type(docstore).__name__} (a store that cannot list its documents cannot answer "
                     "neighbour look-ups)", field="docstore")


def _options(policy: Policy | None, budget: int | None, floor: float | None, as_of: Date | str | None,
             fields: FieldMap | None, scores: str, history_tokens: int, counter: TokenCounter | None,
             embedder: Embedder | None, principal: Principal | str | None = None,
             groups: Sequence[str] | None = None) -> Options:
    return Options(policy=policy, budget=budget, floor=floor, as_of=as_of, fields=fields or FieldMap(),
                   scores=scores, history_tokens=history_tokens, counter=counter, embedder=embedder,  # type: ignore[arg-type]
                   principal=principal, groups=groups)


def _documents(items: Any) -> list[RawDoc]:
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise InputError(f"must be a list of Documents (what a retriever returns), got {type(items).__name__}",
                         field="documents")
    return [raw_document(d, n) for n, d in enumerate(items, 1)]


# -- the compressor ------------------------------------------------------------------------------


def passage_documents(outcome: Outcome) -> list[Document]:
    """The chosen passages as Documents, in prompt order, with label, sources and trace."""
    out = []
    for p in passages(outcome):
        meta = {**p.metadata, "label": p.label, "sources": p.provenance, "docket": p.source, "trace": p.trace}
        out.append(Document(page_content=p.text, metadata=meta, id=p.chunks[0] if len(p.chunks) == 1 else None))
    return out


class DocketCompressor(BaseDocumentCompressor):
    """docket as a LangChain document compressor: retrieved documents in, the passages docket
    would put in the prompt out (versions resolved, duplicates folded, spans restored, packed
    to the budget, ordered). Nothing found gives an empty list."""

    model_config = ConfigDict(arbitrary_types_allowed=True, strict=True, extra="forbid")

    policy: Policy | None = None
    budget: int | None = None
    floor: float | None = None
    as_of: Date | str | None = None
    field_map: FieldMap = Field(default_factory=FieldMap)
    scores: ScoreMode = "auto"
    docstore: Any = None
    counter: Any = None
    embedder: Any = None
    #: who is asking: a docket Principal, or a user name with `groups`; None = public documents only
    principal: Any = None
    groups: Any = None
    _options: Options = PrivateAttr()
    _source: Source | None = PrivateAttr(default=None)

    def __init__(self, **settings: Any) -> None:
        try:
            super().__init__(**settings)
        except ValidationError as e:
            raise settings_error(e, "DocketCompressor") from None

    def model_post_init(self, context: Any, /) -> None:
        self._options = _options(self.policy, self.budget, self.floor, self.as_of, self.field_map, self.scores,
                                 0, self.counter, self.embedder, self.principal, self.groups)
        self._source = store_source(self.docstore, self._options.fields)

    def assemble(self, documents: Sequence[Any], query: str, *, principal: Principal | str | None = None,
                 groups: Sequence[str] | None = None) -> Outcome:
        """The whole docket outcome (brief, messages, trace) for these documents; `principal` /
        `groups`: this call's asker instead of the compressor's."""
        return run(query, _documents(documents), self._options, framework=FRAMEWORK, source=self._source,
                   principal=principal, groups=groups)

    def compress_documents(self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None, *,
                           principal: Principal | str | None = None,
                           groups: Sequence[str] | None = None) -> Sequence[Document]:
        return passage_documents(self.assemble(documents, query, principal=principal, groups=groups))


# -- the prompt step ------------------------------------------------------------------------------


class DocketPromptValue(ChatPromptValue):
    """The brief as chat messages, with what the citation check needs kept on it."""

    found: bool = True
    #: label -> source (doc, version, chunks, title, section, status, trust, text, also_in, ...)
    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    trace: list[dict[str, Any]] = Field(default_factory=list)
    refusal: str = ""
    #: the brief's JSON (`docket assemble --json`), with these messages
    brief: dict[str, Any] = Field(default_factory=dict)


_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "system": "system"}


def history_dicts(history: Any) -> list[dict[str, Any]]:
    """LangChain messages, ("human", text) pairs or {"role", "content"} dicts as plain turns."""
    if history is None:
        return []
    if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Sequence):
        raise InputError("must be a list of messages", field="history")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(history):
        if isinstance(m, BaseMessage):
            out.append({"role": _ROLES.get(m.type, m.type), "content": m.content})
        elif isinstance(m, tuple) and len(m) == 2:
            out.append({"role": _ROLES.get(str(m[0]), m[0]), "content": m[1]})
        elif isinstance(m, Mapping):
            out.append(dict(m))
        else:
            raise InputError(f"must be a LangChain message, a (role, text) pair or a dict, got {type(m).__name__}",
                             where=f"history[{i}]")
    return out


def _message(m: Mapping[str, str]) -> BaseMessage:
    cls = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}[m["role"]]
    return cls(content=m["content"])


def prompt_value(outcome: Outcome) -> DocketPromptValue:
    brief = outcome.brief
    return DocketPromptValue(messages=[_message(m) for m in outcome.messages], found=brief.found,
                             sources=brief.sources, trace=brief.trace, refusal=brief.refusal, brief=outcome.brief_json())


class DocketPrompt(Runnable[dict[str, Any], DocketPromptValue]):
    """`{"question", "documents"[, "history"]}` -> the brief as a `DocketPromptValue`.

    Nothing found: the messages ask the model for the refusal sentence (`.found` is False), so a
    chain's shape never changes; skip the model on `.found` if you want to save the call."""

    INPUT_KEYS = ("question", "documents", "history", "principal", "groups")

    def __init__(self, *, policy: Policy | None = None, budget: int | None = None, floor: float | None = None,
                 as_of: Date | str | None = None, field_map: FieldMap | None = None, scores: ScoreMode = "auto",
                 history_tokens: int = 900, docstore: Any = None, counter: TokenCounter | None = None,
                 embedder: Embedder | None = None, principal: Principal | str | None = None,
                 groups: Sequence[str] | None = None) -> None:
        self.options = _options(policy, budget, floor, as_of, field_map, scores, history_tokens, counter, embedder,
                                principal, groups)
        self.source = store_source(docstore, self.options.fields)

    def assemble(self, question: str, documents: Sequence[Any], history: Any = None, *,
                 principal: Principal | str | None = None, groups: Sequence[str] | None = None) -> Outcome:
        """`principal` / `groups`: this call's asker, instead of the one the prompt was built with."""
        return run(question, _documents(documents), self.options, framework=FRAMEWORK, source=self.source,
                   history=history_dicts(history), principal=principal, groups=groups)

    def _run(self, input: Any) -> DocketPromptValue:
        if not isinstance(input, Mapping):
            raise InputError(f"must be a dict with 'question' and 'documents', got {type(input).__name__}",
                             field="input")
        unknown = [k for k in input if k not in self.INPUT_KEYS]
        if unknown:
            raise InputError(f"has unknown key(s) {', '.join(map(repr, unknown))}; DocketPrompt takes question, "
                             "documents, history, principal and groups", field="input")
        for key in ("question", "documents"):
            if key not in input:
                raise InputError("is required", field=key)
        return prompt_value(self.assemble(input["question"], input["documents"], input.get("history"),
                                          principal=input.get("principal"), groups=input.get("groups")))

    def invoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> DocketPromptValue:
        return self._call_with_config(self._run, input, config, run_type="prompt")

    def with_retriever(self, retriever: Runnable[Any, Any]) -> Runnable[Any, DocketPromptValue]:
        """`question -> retriever -> docket` as one Runnable (the input is the question string)."""
        return RunnableParallel(question=RunnablePassthrough(), documents=retriever) | self


# -- the check ------------------------------------------------------------------------------------


def _text(answer: Any) -> str:
    if isinstance(answer, BaseMessage):
        content = answer.content
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") if isinstance(b, Mapping) else str(b) for b in content)
    if isinstance(answer, str):
        return answer
    raise InputError(f"must be the model's message or its text, got {type(answer).__name__}", field="answer")


def check_reply(answer: Any, prompt: DocketPromptValue, *, judge: SupportJudge | None = None,
                allowed_domains: Sequence[str] = (), strip: bool = False) -> CheckReport:
    """docket's citation check of a reply (AIMessage or text) against the prompt it answered."""
    if not isinstance(prompt, DocketPromptValue):
        raise InputError(f"must be the DocketPromptValue the model answered, got {type(prompt).__name__}", field="prompt")
    brief = {"sources": prompt.sources, "refusal": prompt.refusal, "found": prompt.found}
    return _check(_text(answer), brief, judge=judge, allowed_domains=allowed_domains, strip=strip)


class DocketCheck(Runnable[dict[str, Any], dict[str, Any]]):
    """`{"prompt": DocketPromptValue, "answer": AIMessage | str}` -> `{"answer", "check", "clean",
    "sources", "found"}`: the reply with docket's citation report.

        chain = inputs | DocketPrompt() | RunnableParallel(prompt=RunnablePassthrough(), answer=model) | DocketCheck()
    """

    def __init__(self, *, judge: SupportJudge | None = None, allowed_domains: Sequence[str] = (),
                 strip: bool = False) -> None:
        self.judge = judge
        self.allowed_domains = tuple(allowed_domains)
        self.strip = strip

    def _run(self, input: Any) -> dict[str, Any]:
        if not isinstance(input, Mapping) or "prompt" not in input or "answer" not in input:
            raise InputError("must be a dict with 'prompt' (the DocketPromptValue) and 'answer' (the model's reply)",
                             field="input")
        prompt = input["prompt"]
        report = check_reply(input["answer"], prompt, judge=self.judge, allowed_domains=self.allowed_domains,
                             strip=self.strip)
        return {"answer": _text(input["answer"]), "check": report.to_json(), "clean": report.clean,
                "sources": prompt.sources, "found": prompt.found}

    def invoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> dict[str, Any]:
        return self._call_with_config(self._run, input, config, run_type="parser")


# -- embeddings -----------------------------------------------------------------------------------


class DocketEmbeddings(Embeddings):
    """docket's embedder (all-MiniLM-L6-v2, int8 ONNX, offline) as LangChain Embeddings."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.embed(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embedder.embed([text])[0]]
