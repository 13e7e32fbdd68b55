"""Typed pieces of a brief: sources, token counts, conflicts (trace events live in `model`).

Each is a small dataclass with typed attributes and a `to_json()` that writes exactly the wire
format of docs/contract.md (key order included, optional keys left out when empty, so the same
brief still gives byte-identical JSON). Each also reads like its JSON object (`src["doc"]`,
`src.get("also_in", [])`, `dict(src)`): code written against the dicts, in docket and in users'
hands, keeps working while new code uses attributes. Keys the assembler adds later and these
classes do not know yet are kept in `extra`, written after the known ones, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


class WireMapping(Mapping[str, Any]):
    """Read-only mapping view of a typed object's JSON form (see the module docstring).

    Subclasses list their wire keys in `_KEYS` (in wire order) and name the ones left out when
    empty in `_OPTIONAL`; values come from attributes of the same name, then from `extra`.
    """

    _KEYS: ClassVar[tuple[str, ...]] = ()
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    def _present(self, key: str) -> bool:
        if key not in self._OPTIONAL:
            return True
        v = getattr(self, key)
        return v is not None and v != [] and v != {}

    def _wire_keys(self) -> list[str]:
        extra: dict[str, Any] = getattr(self, "extra", {})
        order: list[str] | None = getattr(self, "key_order", None)
        known = [k for k in self._KEYS if self._present(k)]
        if order:  # built from a dict: keep its key order (byte-identical JSON), then anything new
            keys = [k for k in order if (k in self._KEYS and self._present(k)) or (k not in self._KEYS and k in extra)]
            return keys + [k for k in known + list(extra) if k not in keys]
        return known + [k for k in extra if k not in self._KEYS]

    def __getitem__(self, key: str) -> Any:
        """The wire value (nested typed parts as plain dicts, as in the JSON)."""
        if key in self._KEYS:
            if self._present(key):
                return _plain(getattr(self, key))
            raise KeyError(key)
        extra: dict[str, Any] = getattr(self, "extra", {})
        return extra[key]

    def __setitem__(self, key: str, value: Any) -> None:
        """Code that edited the dicts keeps working: a known key sets the attribute, any other
        key is kept in `extra` (and written after the known ones)."""
        if key in self._KEYS:
            setattr(self, key, value)
        else:
            extra: dict[str, Any] = getattr(self, "extra", {})
            extra[key] = value

    def __iter__(self) -> Iterator[str]:
        return iter(self._wire_keys())

    def __len__(self) -> int:
        return len(self._wire_keys())

    def to_json(self) -> dict[str, Any]:
        return {k: self[k] for k in self._wire_keys()}

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The OpenAPI schema of the wire object: the dataclass fields without `extra`, and
        open to the keys a newer assembler adds."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        for private in ("extra", "key_order"):
            schema.get("properties", {}).pop(private, None)
        schema["additionalProperties"] = True
        return dict(schema)


def _plain(v: Any) -> Any:
    if isinstance(v, WireMapping):
        return v.to_json()
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _split(data: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    known = {k: data[k] for k in keys if k in data}
    extra = {k: v for k, v in data.items() if k not in keys}
    return known, extra


@dataclass(eq=False)
class Provenance(WireMapping):
    """A duplicate copy Move 2 folded into a passage: where else the same text lives."""

    chunks: list[str]
    doc: str
    version: int
    title: str = ""
    section: str = ""
    status: str = "current"
    source_type: str | None = None
    cosine: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: list[str] | None = field(default=None, repr=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("chunks", "doc", "version", "title", "section", "status", "source_type", "cosine")
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"source_type", "cosine"})

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Provenance:
        if isinstance(data, Provenance):
            return data
        known, extra = _split(data, cls._KEYS)
        return cls(**known, extra=extra, key_order=list(data))


@dataclass(eq=False)
class Source(WireMapping):
    """What label S<n> stands for: the passage's document, version, chunks, metadata and text."""

    doc: str
    version: int
    chunks: list[str]
    title: str = ""
    section: str = ""
    #: ISO date the version took effect, as on the wire
    date: str | None = None
    status: str = "current"
    trust: str = "trusted"
    source_type: str | None = None
    #: the chunk ids the ranker returned (the others were added by Move 3)
    hits: list[str] = field(default_factory=list)
    score: float = 0.0
    rank: int = 0
    compressed: bool = False
    #: what the model read, sanitised and unescaped (what a citation checker compares against)
    text: str = ""
    also_in: list[Provenance] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: list[str] | None = field(default=None, repr=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("doc", "version", "chunks", "title", "section", "date", "status", "trust",
                                        "source_type", "hits", "score", "rank", "compressed", "text", "also_in")
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"also_in"})

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Source:
        if isinstance(data, Source):
            return data
        known, extra = _split(data, cls._KEYS)
        known["also_in"] = [Provenance.of(a) for a in known.get("also_in") or []]
        return cls(**known, extra=extra, key_order=list(data))


@dataclass(eq=False)
class TokenCounts(WireMapping):
    """Tokens of each prompt section (o200k_base by default, or the caller's counter).

    `documents` is the evidence block (at most the budget); `tags` = documents - passage_text,
    what the formatting costs; `history` is present only when chat history was given. A brief
    that found nothing carries only system, documents, question, total and passages.
    """

    system: int = 0
    history: int | None = None
    documents: int = 0
    passage_text: int | None = None
    notes: int | None = None
    question: int = 0
    format: int | None = None
    user: int | None = None
    tags: int | None = None
    total: int = 0
    passages: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: list[str] | None = field(default=None, repr=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("system", "history", "documents", "passage_text", "notes", "question", "format",
                                        "user", "tags", "total", "passages")
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"history", "passage_text", "notes", "format", "user", "tags"})

    def _present(self, key: str) -> bool:
        return key not in self._OPTIONAL or getattr(self, key) is not None  # 0 is a count, not "empty"

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> TokenCounts:
        if isinstance(data, TokenCounts):
            return data
        known, extra = _split(data, cls._KEYS)
        return cls(**known, extra=extra)  # the canonical order: history after system



@dataclass(eq=False)
class Conflict(WireMapping):
    """Two sources that disagree (Move 1): equal authority (both shown, the model told to say
    so) or outranked (the weaker one dropped). `labels` when both are in the prompt, else
    `in_prompt` is false."""

    chunks: list[str]
    docs: list[str]
    kind: str
    reason: str
    cosine: float | None = None
    #: the chunk that outranks the other (outranked conflicts), and its label when in the prompt
    higher: str | None = None
    labels: list[str] | None = None
    higher_label: str | None = None
    in_prompt: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: list[str] | None = field(default=None, repr=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("chunks", "docs", "kind", "reason", "cosine", "higher", "labels",
                                        "higher_label", "in_prompt")
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"cosine", "higher", "labels", "higher_label", "in_prompt"})

    def _present(self, key: str) -> bool:
        return key not in self._OPTIONAL or getattr(self, key) is not None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Conflict:
        if isinstance(data, Conflict):
            return data
        known, extra = _split(data, cls._KEYS)
        return cls(**known, extra=extra, key_order=list(data))


__all__ = ["Conflict", "Provenance", "Source", "TokenCounts", "WireMapping"]
