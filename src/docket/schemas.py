"""The service's request and response bodies as pydantic models (the OpenAPI schema is generated
from these, and the response models reuse the brief's own typed parts: `Source`, `TokenCounts`,
`TraceEvent`, `Conflict`, `ChatMessage`).

Requests refuse unknown fields (a typo is a 422 naming the field, not a silently ignored
option) and are strict: a JSON string is not a number or a boolean (`"k": "50"`, `"k": true`,
`"whole_corpus": "yes"` and `"score": true` are 422 naming the field), and a date is a
`YYYY-MM-DD` string, never a number of seconds. Two fields are accepted and ignored on purpose, `principal` and `groups`: who asks
comes from the API key only, and a client that sends them is told so in `warnings`. Candidate
records follow the chunk contract, so their unknown fields are kept in `metadata` as in a JSONL
file.
"""

from __future__ import annotations

import re
from datetime import date as Date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from docket.brief.formats import text_formats
from docket.history import ChatMessage
from docket.model import TraceEvent
from docket.results import Conflict, Source, TokenCounts

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_day(value: Any) -> Any:
    """A date only as JSON gives one: a `YYYY-MM-DD` string (pydantic's lax date would take a
    number as seconds since 1970, or a datetime string)."""
    if isinstance(value, Date):
        return value
    if not isinstance(value, str) or not _ISO_DAY.fullmatch(value):
        raise ValueError(f"must be a date as a YYYY-MM-DD string, got {value!r}"[:120])
    try:
        return Date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a calendar date") from None


#: a request's date: `YYYY-MM-DD` and nothing else
Day = Annotated[Date, BeforeValidator(_iso_day)]
#: strict everywhere: no string-to-number, number-to-boolean or other coercion
STRICT = ConfigDict(extra="forbid", strict=True)


class HistoryTurn(ChatMessage):
    """A chat turn as the service takes it: ChatMessage, strictly (a number is not a text)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


IGNORED = "Ignored: who asks comes from the API key only (a warning says so when it is sent)."


class _Request(BaseModel):
    model_config = STRICT

    principal: str | None = Field(None, description=IGNORED, json_schema_extra={"deprecated": True})
    groups: list[str] | None = Field(None, description=IGNORED, json_schema_extra={"deprecated": True})


class _ChunkFields(BaseModel):
    """The chunk contract's optional fields with their JSON types, checked strictly (a string is
    not a number, a number not a boolean); shared by a candidate and an indexed record."""

    model_config = ConfigDict(extra="allow", strict=True)

    doc: str | None = None
    text: str | None = None
    version: int | None = None
    status: str | None = None
    date: Day | None = None
    effective_to: Day | None = None
    title: str | None = None
    section: str | None = None
    position: int | None = None
    source_type: str | None = None
    trust: str | None = None
    acl: list[str] | None = None
    metadata: dict[str, Any] | None = None
    vector: list[float] | None = None


class CandidateIn(_ChunkFields):
    """One ranked candidate, best first: a full chunk record (`id`, `doc`, `text`, and any of the
    contract's optional fields) with its `score`, or only `id` and `score` for a chunk already in
    the server's store."""

    id: str = Field(min_length=1)
    score: float


class AttachmentIn(BaseModel):
    """A file the user handed over: it is the context (docs/modes.md). Text files as `text`; PDF
    and DOCX (or any file) as `data_base64`. Exactly one of the two."""

    model_config = STRICT

    name: str = Field(min_length=1, max_length=255, description="The file name, e.g. contract.pdf (its type comes "
                      "from the extension unless `kind` says)")
    text: str | None = Field(None, description="The content of a Markdown, HTML or text file.")
    data_base64: str | None = Field(None, description="The file's bytes, base64 (PDF, DOCX or any supported type).")
    kind: Literal["pdf", "docx", "markdown", "html", "text"] | None = None


class _BriefOptions(_Request):
    history: list[HistoryTurn] | None = Field(None, description="Earlier turns, oldest first (user / assistant).")
    attachments: list[AttachmentIn] = Field(default_factory=list, description="Files the user handed over: they are "
                                            "the context instead of candidates or retrieval.")
    whole_corpus: bool | None = Field(None, description="true: everything the key may read instead of retrieval (when "
                                      "it fits corpus.max_tokens); false: retrieve; null: the server policy's "
                                      "corpus.mode.")
    budget: int | None = Field(None, ge=1, le=1_000_000, description="Evidence budget: tokens of the documents block.")
    floor: float | None = Field(None, ge=-1.0, le=1.0, description="Score floor (cosine) for candidates.")
    as_of: Day | None = Field(None, description="Resolve versions as of this date.")
    format: str | None = Field(None, description="Fence format of the documents block (a registered text format).",
                               json_schema_extra={"enum": [*text_formats(), None]})

    @field_validator("format")
    @classmethod
    def _registered(cls, v: str | None) -> str | None:
        if v is not None and v not in text_formats():
            raise ValueError(f"must be one of {', '.join(text_formats())}, got {v!r}")
        return v


class AssembleRequest(_BriefOptions):
    question: str = Field(min_length=1)
    candidates: list[CandidateIn] = Field(default_factory=list,
                                          description="Your retriever's / reranker's ranking, best first.")


class FiltersIn(BaseModel):
    model_config = STRICT

    docs: list[str] = Field(default_factory=list)
    source_types: list[str] = Field(default_factory=list)
    statuses: list[str] = Field(default_factory=list)
    since: Day | None = None
    until: Day | None = None


class AskRequest(_BriefOptions):
    question: str = Field(min_length=1)
    k: int = Field(50, ge=1, le=500, description="How many retrieved chunks go to the assembler.")
    mode: Literal["fused", "dense", "bm25"] = "fused"
    filters: FiltersIn | None = None


class AnswerRequest(AskRequest):
    stream: bool = Field(True, description="Server-sent events (delta, answer, check, done); false: one JSON object.")
    allowed_domains: list[str] = Field(default_factory=list, description="Domains links in the answer may point to.")
    structured: bool = Field(False, description="Answer in JSON: sentences, each with its citations, or a typed "
                             "refusal with a reason (docs/modes.md). No delta events; the answer event carries it.")


class CheckRequest(_Request):
    answer: str | dict[str, Any] = Field(description="The answer text, or a structured answer "
                                         '({"sentences": [{"text", "citations"}], "refusal": {"reason"} | null}).')
    brief: dict[str, Any] = Field(description="The brief the answer was written from (what /v1/ask returned).")
    allowed_domains: list[str] = Field(default_factory=list)
    strip_links: bool = False
    names: bool = True


class DocumentIn(BaseModel):
    model_config = STRICT

    name: str = Field(min_length=1, description="Path-like document id, e.g. refunds/annual.md.")
    text: str
    kind: Literal["markdown", "html", "text"] | None = Field(None, description="Default: from the name's suffix.")
    meta: dict[str, Any] = Field(default_factory=dict, description="What a metadata sidecar would hold.")


class RecordTypes(_ChunkFields):
    """The JSON types of a chunk record's fields, checked strictly before `/v1/index` hands the
    record to the chunk contract (which, for JSONL files, reads `"version": "2"` as 2). Every
    field is optional here: a missing `id` or `text` stays a per-record problem of the report."""

    id: str | None = None


class IndexRequest(_Request):
    records: list[dict[str, Any]] = Field(default_factory=list, description="Chunk records (the JSONL contract).")
    documents: list[DocumentIn] = Field(default_factory=list)
    chunk_size: int = Field(300, ge=16, le=8000)
    overlap: int = Field(40, ge=0, le=4000)


# --- responses -------------------------------------------------------------------------------


class MessageOut(BaseModel):
    role: str
    content: str


class BriefOut(BaseModel):
    """The brief: the `docket assemble --json` contract (docs/contract.md)."""

    found: bool
    question: str
    messages: list[MessageOut]
    sources: dict[str, Source]
    tokens: TokenCounts
    budget: int
    refusal: str
    trace: list[TraceEvent]
    conflicts: list[Conflict]
    warnings: list[str]
    anthropic: dict[str, Any] | None
    mode: str = Field("retrieve", description="retrieve, whole_corpus, attachments or no_retrieve (docs/modes.md)")
    cache: dict[str, Any] | None = Field(None, description="The cacheable prefix and the cost with and without it.")
    tokenizer: dict[str, Any] | None = None
    trace_id: str | None = Field(None, description="GET /v1/trace/{trace_id} shows this brief's trace as a page.")


class AnswerOut(BriefOut):
    answer: dict[str, Any] | None
    check: dict[str, Any] | None
    llm_error: dict[str, Any] | None = None


class CheckOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    clean: bool
    unknown_labels: list[str]
    uncited_sentences: list[str]
    unsupported: list[dict[str, Any]]
    flagged_links: list[dict[str, Any]]
    refusal: bool
    counts: dict[str, int]


class IndexOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    added: list[str]
    updated: list[str]
    unchanged: int
    chunks_written: int
    problems: list[dict[str, str]]


class DeleteOut(BaseModel):
    doc: str
    version: int | None
    deleted_chunks: int


class ErrorBody(BaseModel):
    code: str
    message: str
    field: str | None = None


class ErrorOut(BaseModel):
    error: ErrorBody


__all__ = ["AnswerOut", "AnswerRequest", "AskRequest", "AssembleRequest", "BriefOut", "CandidateIn", "ChatMessage",
           "CheckOut", "CheckRequest", "DeleteOut", "DocumentIn", "ErrorOut", "FiltersIn", "HistoryTurn", "IndexOut",
           "IndexRequest", "RecordTypes"]
