"""How a framework's documents become docket chunk records (and where each field came from).

Every framework keeps the same things under different names: LangChain's `Document` has
`page_content`, `metadata` and an optional `id`; LlamaIndex's `NodeWithScore` has the node's
text, `metadata`, `node_id`, `ref_doc_id` and a score; Haystack's `Document` has `content`,
`meta`, `id` and `score`. Each framework module turns its objects into `RawDoc`s; this module
maps a `RawDoc` onto docket's chunk record (docs/store.md) with `FieldMap`:

    docket field   read from (the first one present wins)
    id             the framework's id, then metadata "id", "chunk_id"
    text           page_content / the node's text / content
    doc            metadata "doc", "doc_id", then the framework's convention: LangChain
                   metadata "source", LlamaIndex ref_doc_id, Haystack meta "source_id"
    version, status, date, effective_to, title, section, source_type, trust, acl
                   metadata under the same name
    position       metadata "position"; Haystack: then meta "split_id"
    score          the framework's score, then metadata "score", "relevance_score",
                   "similarity_score" (what happens without one: docket.integrations.common)

`FieldMap(keys={"doc": "policy_id"})` reads a field from your own key(s) instead (no
framework fallback for that field); `FieldMap(hook=fn)` gets the framework object and returns
docket fields that win over everything. Metadata nobody mapped is kept in the chunk's
`metadata`. A missing id or doc, or a bad value, raises the CLI's InputError naming the
document, the field and the fix; nothing is silently defaulted beyond the chunk record's own
defaults (version 1, status current), and the trace says when a framework convention or those
defaults were used.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from docket.errors import InputError
from docket.model import CHUNK_FIELDS, Chunk, parse_chunk
from docket.store.access import check_acl

#: docket fields read from a framework document's metadata
MAPPED = ("id", "doc", "version", "status", "date", "effective_to", "title", "section", "position",
          "source_type", "trust", "acl")
#: where each field is looked up in the metadata by default, in order
DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    "id": ("id", "chunk_id"),
    "doc": ("doc", "doc_id"),
    **{name: (name,) for name in MAPPED[2:]},
}
#: metadata keys that hold a score when the framework passes none (rerankers write these)
SCORE_KEYS = ("score", "relevance_score", "similarity_score")
#: fields whose absence changes a decision: the trace says when no document had them
DECISION_FIELDS = ("version", "status", "date", "source_type", "trust")
#: what a hook may return
HOOK_FIELDS = tuple(f for f in CHUNK_FIELDS if f != "vector") + ("score",)

Hook = Callable[[Any], Mapping[str, Any]]


@dataclass(frozen=True)
class FieldMap:
    """Where docket finds each chunk field on a framework document.

    `keys`: docket field -> your metadata key (or keys, tried in order); replaces the default
    keys and the framework convention for that field. `hook`: called with the framework's
    object (Document, NodeWithScore, ...), returns docket fields (and "score") that win over
    everything; a value of None means "absent". `score_keys`: metadata keys read for a score
    when the framework gives none. `conventions=False` turns off the framework fallbacks
    (LangChain "source", LlamaIndex ref_doc_id, Haystack "source_id"/"split_id").
    """

    keys: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    hook: Hook | None = None
    score_keys: Sequence[str] = SCORE_KEYS
    conventions: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.keys, Mapping):
            raise InputError(f"must be a mapping of docket field -> metadata key, got {type(self.keys).__name__}",
                             field="FieldMap.keys")
        clean: dict[str, tuple[str, ...]] = {}
        for name, value in self.keys.items():
            if name not in MAPPED:
                raise InputError(f"{name!r} is not a docket field that can be mapped; choose from {', '.join(MAPPED)}",
                                 field="FieldMap.keys")
            keys = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, Sequence) else None
            if not keys or not all(isinstance(k, str) and k for k in keys):
                raise InputError(f"must be a metadata key or a list of keys, got {value!r}", field=f"FieldMap.keys.{name}")
            clean[name] = keys
        if self.hook is not None and not callable(self.hook):
            raise InputError(f"must be a function of the framework's document, got {type(self.hook).__name__}",
                             field="FieldMap.hook")
        if isinstance(self.score_keys, str) or not all(isinstance(k, str) and k for k in self.score_keys):
            raise InputError(f"must be a list of metadata keys, got {self.score_keys!r}", field="FieldMap.score_keys")
        object.__setattr__(self, "_keys", clean)

    def keys_for(self, name: str) -> tuple[str, ...]:
        return self._keys.get(name) or DEFAULT_KEYS[name]  # type: ignore[attr-defined,no-any-return]

    def custom(self, name: str) -> bool:
        return name in self._keys  # type: ignore[attr-defined]


@dataclass(frozen=True)
class RawDoc:
    """A framework's document, as plain data: what `to_chunk` reads.

    `conventions` holds the framework's own way of saying a field (docket field -> (where it
    was read, value)), used only when docket's keys are absent. `obj` is the original object
    (for the hook and for mapping results back); `order` a character offset that orders a
    document's chunks when they carry no position."""

    where: str
    text: Any
    text_field: str
    metadata: Mapping[str, Any]
    meta_field: str = "metadata"
    id: Any = None
    score: Any = None
    conventions: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    obj: Any = None
    #: the framework's order inside a document when there is no position (a character offset)
    order: Any = None


@dataclass
class MappingNotes:
    """What the mapping did that a user may want to know (goes into the trace)."""

    total: int = 0
    #: (field, where it was read) -> how many documents used a framework convention
    conventions: dict[tuple[str, str], int] = field(default_factory=dict)
    #: decision fields at least one document had
    present: set[str] = field(default_factory=set)
    #: ids dropped because the same document (same id and text) came twice
    repeats: list[str] = field(default_factory=list)

    def absent(self) -> list[str]:
        return [f for f in DECISION_FIELDS if f not in self.present]


def _present(value: Any) -> bool:
    return value is not None


def _as_date(value: Any) -> Any:
    return value.date() if isinstance(value, datetime) else value


def to_chunk(raw: RawDoc, fields: FieldMap, notes: MappingNotes | None = None) -> tuple[Chunk, float | None]:
    """The chunk record of one framework document, and its score (None when it has none)."""
    meta = raw.metadata
    if not isinstance(meta, Mapping):
        raise InputError(f"must be a dict, got {type(meta).__name__}", where=raw.where, field=raw.meta_field)
    label = raw.where
    record: dict[str, Any] = {}
    used: set[str] = set()
    for name in MAPPED:
        value: Any = None
        if name == "id" and _present(raw.id) and not fields.custom("id"):
            value = raw.id
        for key in fields.keys_for(name):
            if value is None and _present(meta.get(key)):
                value = meta[key]
                used.add(key)
        if value is None and fields.conventions and not fields.custom(name) and name in raw.conventions:
            source, conv = raw.conventions[name]
            if _present(conv):
                value = conv
                if notes is not None:
                    notes.conventions[(name, source)] = notes.conventions.get((name, source), 0) + 1
        if value is not None:
            record[name] = _as_date(value) if name in ("date", "effective_to") else value
    if "id" in record:
        label = f"{raw.where} (id {record['id']!r})"
    text = raw.text
    score = raw.score
    if fields.hook is not None:
        extra = fields.hook(raw.obj)
        if not isinstance(extra, Mapping):
            raise InputError(f"must return a dict of docket fields, got {type(extra).__name__}", where=label,
                             field="FieldMap.hook")
        for name, value in extra.items():
            if name not in HOOK_FIELDS:
                raise InputError(f"returned {name!r}, which is not a docket field; choose from {', '.join(HOOK_FIELDS)}",
                                 where=label, field="FieldMap.hook")
            if name == "text":
                text = value
            elif name == "score":
                score = value
            elif value is None:
                record.pop(name, None)
            else:
                record[name] = _as_date(value) if name in ("date", "effective_to") else value
    if not isinstance(text, str):
        raise InputError(f"must be text, got {type(text).__name__}", where=label, field=raw.text_field)
    if not text.strip():
        raise InputError("is empty; a chunk needs text (drop the document before docket or fill it)", where=label,
                         field=raw.text_field)
    record["text"] = text
    for name, tried in (("id", "id"), ("doc", "doc")):
        if name not in record:
            raise InputError(_missing(name, raw, fields), where=label, field=tried)
    rest = {k: v for k, v in meta.items() if k not in used}
    if rest:
        record["metadata"] = {str(k): v for k, v in rest.items()}
    if score is None:
        for key in fields.score_keys:
            if _present(meta.get(key)):
                score = meta[key]
                break
    chunk = parse_chunk(record, where=raw.where)
    if notes is not None:
        notes.total += 1
        notes.present.update(f for f in DECISION_FIELDS if f in record)
    return chunk, _score(score, label)


def acl_of(raw: RawDoc, fields: FieldMap) -> tuple[str, ...] | None:
    """The document's acl alone, read where `to_chunk` reads it (your key, else "acl"; the hook
    wins), validated: who may read a document is decided before anything else maps it, so a
    document the asker may not read never reaches a count, a note or an error message. A bad
    acl is an error for every asker (nobody can tell who may read it); it names the document's
    position, never its id or text."""
    meta = raw.metadata if isinstance(raw.metadata, Mapping) else {}
    value: Any = None
    for key in fields.keys_for("acl"):
        if _present(meta.get(key)):
            value = meta[key]
            break
    if fields.hook is not None:
        extra = fields.hook(raw.obj)
        if isinstance(extra, Mapping) and "acl" in extra:  # to_chunk reports a hook that returns no dict
            value = extra["acl"]
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (list, tuple)):
        raise InputError(f"must be a list of acl entries (user:NAME, group:NAME; a plain NAME is a group), got "
                         f"{type(value).__name__}", where=raw.where, field="acl")
    try:
        return check_acl(value)
    except ValueError as e:
        raise InputError(str(e), where=raw.where, field="acl") from None


def _missing(name: str, raw: RawDoc, fields: FieldMap) -> str:
    looked = [f"{raw.meta_field}[{k!r}]" for k in fields.keys_for(name)]
    if name == "id" and not fields.custom("id"):
        looked.insert(0, "the framework's own id")
    if fields.conventions and not fields.custom(name) and name in raw.conventions:
        looked.append(raw.conventions[name][0])
    fix = ("give every document an id (citations, neighbours and the document store find chunks by it)" if name == "id"
           else f"set {raw.meta_field}['doc'] to the id of the document the chunk belongs to")
    return (f"is required but missing (looked in {', '.join(looked)}); {fix}, or map your own key with "
            f"FieldMap(keys={{{name!r}: '...'}})")


def _score(value: Any, label: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy floats are Real too
        raise InputError(f"must be a number, got {value!r}", where=label, field="score")
    value = float(value)
    if not math.isfinite(value):
        raise InputError(f"must be finite, got {value!r}", where=label, field="score")
    return float(value)


@dataclass
class Mapped:
    """The documents of one call as chunks, with their scores, in the framework's order."""

    chunks: list[Chunk]
    scores: list[float | None]
    raws: list[RawDoc]
    notes: MappingNotes


def map_documents(raws: Sequence[RawDoc], fields: FieldMap) -> Mapped:
    """Every document mapped; the same document twice (same id, same text: a hybrid retriever
    returning one chunk from both lists) keeps its best-ranked copy; two different texts under
    one id are an error, since a citation could not say which one it means."""
    notes = MappingNotes()
    chunks: list[Chunk] = []
    scores: list[float | None] = []
    kept: list[RawDoc] = []
    seen: dict[str, int] = {}
    for raw in raws:
        chunk, score = to_chunk(raw, fields, notes)
        if chunk.id in seen:
            first = chunks[seen[chunk.id]]
            if first.text != chunk.text:
                raise InputError(f"is used by two different documents ({kept[seen[chunk.id]].where} and {raw.where}); "
                                 "ids must be unique", where=f"{raw.where} (id {chunk.id!r})", field="id")
            i = seen[chunk.id]
            if score is not None and (scores[i] is None or score > scores[i]):  # type: ignore[operator]
                scores[i] = score
            notes.repeats.append(chunk.id)
            continue
        seen[chunk.id] = len(chunks)
        chunks.append(chunk)
        scores.append(score)
        kept.append(raw)
    return Mapped(chunks, scores, kept, notes)
