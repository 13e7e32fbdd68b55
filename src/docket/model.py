"""The plain data docket passes between its moves.

`Chunk` is one record of the chunk contract (docs/store.md). `Candidate` is a chunk with the score the
ranker gave it. `Passage` is what reaches the prompt: one chunk or a span of adjacent chunks of
one document version. Everything here is immutable or copied, so a move never changes its input.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date as Date
from itertools import repeat
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from docket.errors import InputError
from docket.results import WireMapping
from docket.safeio import check_tree, scrub, shown

#: the status vocabulary and how a spelling reads as one of its words (docket.statuses), re-exported:
#: docket.model is where callers import them from
from docket.statuses import (  # noqa: F401
    CURRENT_STATUSES,
    KNOWN_STATUSES,
    RETIRED_STATUSES,
    UNTRUSTED_STATUSES,
    is_draft,
    is_retired,
    is_untrusted,
    status_word,
)

#: versions and positions are stored in 32-bit integer columns (PostgreSQL `integer`)
MAX_SMALL_INT = 2**31 - 1
_TEXT_FIELDS = ("id", "doc", "text", "status", "title", "section", "source_type", "trust")

CHUNK_FIELDS = (
    "id", "doc", "text", "version", "status", "date", "effective_to", "title", "section",
    "position", "source_type", "trust", "acl", "metadata", "vector",
)


class Chunk(BaseModel):
    """One chunk record. Unknown fields are kept in `metadata`, never dropped."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

    id: str
    doc: str
    text: str
    version: int = 1
    status: str = "current"
    date: Date | None = None
    effective_to: Date | None = None
    title: str = ""
    section: str = ""
    position: int | None = None
    source_type: str | None = None
    #: "user-provided": a file the user attached to the request (docket.modes.attach)
    trust: Literal["trusted", "untrusted", "user-provided"] | None = None
    acl: tuple[str, ...] | None = None
    metadata: dict[str, Any] = {}
    vector: tuple[float, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _unknown_into_metadata(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = _scrubbed(data)
            extra = {k: v for k, v in data.items() if k not in CHUNK_FIELDS}
            for k in extra:
                meant = misnamed_field(k)
                if meant is not None:  # (an InputError, as the metadata check raises: it names the key)
                    raise InputError(misnamed_message(k, meant), field=meant)
            if extra:
                data = {k: v for k, v in data.items() if k in CHUNK_FIELDS}
                meta = dict(data.get("metadata") or {})
                for k, v in extra.items():
                    if k in meta and meta[k] != v:  # which copy counts would be a guess
                        raise InputError(twice_in_metadata_message(k), field=f"metadata.{k}")
                    meta.setdefault(k, v)
                data["metadata"] = meta
            if data.get("metadata") is None:
                data["metadata"] = {}
        return data

    @field_validator("id", "doc")
    @classmethod
    def _non_empty_id(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must be a non-empty string")
        return v

    @field_validator("text")
    @classmethod
    def _non_empty_text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("is empty; a chunk needs text (drop the record or fill it)")
        return v

    @field_validator("version", "position", mode="before")
    @classmethod
    def _strict_int(cls, v: Any) -> Any:
        if v is None or isinstance(v, bool):
            if isinstance(v, bool):
                raise ValueError("must be an integer, not a boolean")
            return v
        if isinstance(v, float):
            if not v.is_integer():
                raise ValueError(f"must be an integer, got {v!r}")
            v = int(v)
        elif isinstance(v, str):
            try:
                v = int(v.strip())
            except ValueError:
                raise ValueError(f"must be an integer, got {v!r}") from None
        if isinstance(v, int) and not 0 <= v <= MAX_SMALL_INT:
            raise ValueError(f"must be between 0 and {MAX_SMALL_INT:,}, got {v:.3g}" if abs(v) > 1e15
                             else f"must be between 0 and {MAX_SMALL_INT:,}, got {v}")
        return v

    @field_validator("date", "effective_to", mode="before")
    @classmethod
    def _date_not_number(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):  # pydantic would read seconds since 1970
            raise ValueError(f"must be an ISO date like 2026-03-01, got the number {shown(v)} (a number is not "
                             "read as a date: 0 would be 1970-01-01)")
        return v

    @field_validator("status", mode="before")
    @classmethod
    def _status_text(cls, v: Any) -> Any:
        if not isinstance(v, str):  # a number, null, a list: pydantic would say only "a valid string"
            raise ValueError(f"must be a word such as current, superseded or user-generated, got {shown(v)} "
                             "(leave the field out for current)")
        return v

    @field_validator("status")
    @classmethod
    def _status_lower(cls, v: str) -> str:
        v = v.strip().lower()
        if not v:
            raise ValueError("must not be empty (e.g. current, superseded, user-generated)")
        return v

    @field_validator("vector")
    @classmethod
    def _finite_vector(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is not None:
            if len(v) == 0:
                raise ValueError("is empty")
            if not all(math.isfinite(x) for x in v):
                raise ValueError("holds NaN or infinite values")
        return v

    @field_validator("acl", mode="before")
    @classmethod
    def _acl_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            if "," in v:  # "finance, hr" would be one group of that name: nobody could read the chunk, silently
                raise ValueError(f"is one string holding commas ({shown(v)}); give a list, one entry per user or "
                                 f"group: {json.dumps([e.strip() for e in v.split(',') if e.strip()])} (a single "
                                 f"name that holds commas, such as an LDAP DN, as a list of one: {json.dumps([v])})")
            v = (v,)
        if isinstance(v, (list, tuple)):
            from docket.store.access import check_acl  # user:NAME / group:NAME / plain (= group)

            return check_acl(v)
        return v

    @model_validator(mode="after")
    def _date_order(self) -> Chunk:
        if self.date and self.effective_to and self.effective_to < self.date:
            raise ValueError(f"effective_to {self.effective_to} is before date {self.date}")
        return self

    # --- derived views -------------------------------------------------------------------
    @property
    def retired(self) -> bool:
        return is_retired(self.status)  # "Superseded by v4", "ｒｅｔｉｒｅｄ", "rеtired" (Cyrillic е) too

    @property
    def untrusted(self) -> bool:
        if self.trust is not None:
            return self.trust == "untrusted"
        return is_untrusted(self.status)  # "user_submitted", "User Submitted" too

    @property
    def trust_level(self) -> str:
        return "untrusted" if self.untrusted else "user-provided" if self.trust == "user-provided" else "trusted"

    @property
    def doc_version(self) -> tuple[str, int]:
        return (self.doc, self.version)

    def to_record(self, with_vector: bool = False) -> dict[str, Any]:
        """The JSON-ready record (the chunk contract, docs/store.md)."""
        out = self.model_dump(mode="json", exclude_none=True)
        if not with_vector:
            out.pop("vector", None)
        if not out.get("metadata"):
            out.pop("metadata", None)
        return out


def misnamed_field(key: Any, fields: Collection[str] = CHUNK_FIELDS) -> str | None:
    """The chunk field a record's key spells in another case or separator style ("ACL",
    "Status", "effectiveTo", "source-type"), or None. Such a key would go into metadata like any
    unknown one, and the field it meant would be absent: an `ACL` would leave the chunk readable
    by everyone, a `Status: superseded` would leave a retired rule in force. `fields`: the names
    a reader knows (`docket import` knows `tokens` too)."""
    if not isinstance(key, str) or key in fields:
        return None
    snake = _SEPARATOR_RUN.sub("_", _CAMEL.sub("_", key.strip())).lower().strip("_")
    return snake if snake in fields else None


def misnamed_message(key: str, meant: str) -> str:
    return (f"has the key {key!r}, which docket would keep as metadata, not as the field {meant!r} it spells: "
            f"name it {meant!r} (field names are lower case, words joined by '_'), or put it under 'metadata'")


def twice_in_metadata_message(key: str) -> str:
    return (f"gives {key!r} twice, at the top level and under 'metadata', with different values (every "
            f"unknown key is kept as metadata, so one copy would silently replace the other); keep one")


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATOR_RUN = re.compile(r"[\s\-_.]+")


def _scrubbed(data: dict[str, Any]) -> dict[str, Any]:
    """The record with lone surrogates replaced in every text field, acl entry and metadata
    value, and metadata checked for depth and number range (what any store can hold)."""
    out = dict(data)
    for k in _TEXT_FIELDS:
        v = out.get(k)
        if isinstance(v, str):
            out[k] = scrub(v)
    acl = out.get("acl")
    if isinstance(acl, (list, tuple)):
        out["acl"] = [scrub(a) if isinstance(a, str) else a for a in acl]
    elif isinstance(acl, str):
        out["acl"] = scrub(acl)
    extra = {k: v for k, v in out.items() if k not in CHUNK_FIELDS}
    meta = out.get("metadata")
    if isinstance(meta, dict) and meta:
        out["metadata"] = check_tree(dict(meta), "", max_depth=32, field="metadata")
    for k, v in extra.items():
        out[k] = check_tree(v, "", max_depth=31, field=scrub(str(k)))
    return out


def _describe(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "record"
    msg = first.get("msg", "invalid")
    msg = msg.removeprefix("Value error, ")
    if first.get("type") == "missing":
        msg = "is required but missing"
    elif first.get("type") == "extra_forbidden":
        msg = "is not a known field"
    elif loc in ("date", "effective_to") and "date" in first.get("type", ""):
        msg = f"must be an ISO date like 2026-03-01, got {first.get('input')!r}"
    return loc, msg


def _not_a_record(record: Any) -> str:
    """What a line that is not a chunk record holds, and what to write instead."""
    if isinstance(record, list):
        return ("a JSON array: write one record per line (JSONL; `jq -c '.[]' FILE` turns an array into lines), "
                "each an object with id, doc and text")
    if isinstance(record, str):
        return "a string: each line is one object with id, doc and text, not the text alone"
    return type(record).__name__


#: the text and metadata keys of LangChain (page_content, metadata), LlamaIndex (text, metadata) and
#: Haystack (content, meta) documents: a record holding them came from a framework, not docket
_FRAMEWORK_KEYS = ("page_content", "content", "meta")


def _framework_hint(record: dict[str, Any]) -> str:
    given = [k for k in _FRAMEWORK_KEYS if k in record]
    if not given:
        return ""
    return (f" (the record has {', '.join(repr(k) for k in given)}: a LangChain/LlamaIndex/Haystack document; "
            "write docket's keys id, doc and text, or pass the framework's documents through "
            "docket.integrations: docs/integrations/index.md)")


def parse_chunk(record: Any, where: str = "chunk") -> Chunk:
    """Validate one record; raise InputError naming the record and the field on failure."""
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object, got {_not_a_record(record)}", where=where)
    rid = record.get("id")
    label = f"{where} (id {shown(rid)})" if rid is not None else where
    try:
        return Chunk.model_validate(record)
    except ValidationError as e:
        loc, msg = _describe(e)
        if msg == "is required but missing" and loc in ("id", "doc", "text"):
            msg += _framework_hint(record)
        raise InputError(msg, where=label, field=loc) from None
    except InputError as e:  # raised by the metadata check, which knows the key but not the record
        raise InputError(e.detail, where=label, field=e.field) from None


def check_unique(chunks: Iterable[Chunk]) -> None:
    """Duplicate ids would make citations ambiguous: reject them, naming the id."""
    seen: set[str] = set()
    for c in chunks:
        if c.id in seen:
            raise InputError("is used by more than one chunk; ids must be unique", where=f"chunk {c.id!r}", field="id")
        seen.add(c.id)


_NO_RANK: Any = object()  # Candidate(chunk, score) without a rank: said in words, not as a bare TypeError


@dataclass(frozen=True, init=False)
class Candidate:
    """A chunk as ranked by the retriever or reranker (higher score = better).

    `rank` is the candidate's 1-based place in that ranking (1 = best). It is required: the moves
    break score ties and pick what to drop by it, so docket never guesses it from list order;
    a ranking held as a list gets it from `enumerate(ranked, 1)`."""

    chunk: Chunk
    score: float
    rank: int  # 1-based rank in the input ranking

    if TYPE_CHECKING:  # the signature type checkers see: all three required

        def __init__(self, chunk: Chunk, score: float, rank: int) -> None: ...

    else:

        def __init__(self, chunk, score, rank=_NO_RANK):
            if rank is _NO_RANK:
                raise TypeError("Candidate(chunk, score, rank) needs rank: the candidate's 1-based place in your "
                                "ranking (1 = best), e.g. [Candidate(c, s, r) for r, (c, s) in enumerate(ranked, 1)]")
            object.__setattr__(self, "chunk", chunk)
            object.__setattr__(self, "score", score)
            object.__setattr__(self, "rank", rank)


_T = TypeVar("_T")


class _derived(Generic[_T]):
    """A property computed on first read and then stored on the (immutable) instance, like
    functools.cached_property but without its lock: the moves read these for every passage."""

    def __init__(self, fn: Callable[[Any], _T]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    @overload
    def __get__(self, obj: None, cls: Any = None) -> _derived[_T]: ...

    @overload
    def __get__(self, obj: object, cls: Any = None) -> _T: ...

    def __get__(self, obj: object | None, cls: Any = None) -> _T | _derived[_T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


@dataclass(frozen=True)
class Passage:
    """What goes into the prompt: adjacent chunks of one document version, in document order.

    `hits` are the chunk ids the ranker returned; the other chunks were added by Move 3.
    `also_in` holds the provenance of duplicate copies that Move 2 folded into this passage.
    `text_override` is set only by Move 6 (compression); `covers` only on the summary of the rest.
    """

    chunks: tuple[Chunk, ...]
    score: float
    rank: int
    hits: tuple[str, ...]
    also_in: tuple[dict[str, Any], ...] = ()
    text_override: str | None = None
    #: set only on docket's summary of the passages that did not fit (compress.summary): the
    #: sources it covers ({"doc", "version", "chunks", "title", "trust"}); its text is derived
    covers: tuple[dict[str, Any], ...] = ()

    # derived once per passage (it is immutable): the moves read them for every passage of the pool
    @_derived
    def first(self) -> Chunk:
        return self.chunks[0]

    @_derived
    def doc(self) -> str:
        return self.first.doc

    @_derived
    def version(self) -> int:
        return self.first.version

    @_derived
    def ids(self) -> tuple[str, ...]:
        chunks = self.chunks
        return (chunks[0].id,) if len(chunks) == 1 else tuple(c.id for c in chunks)

    @_derived
    def text(self) -> str:
        if self.text_override is not None:
            return self.text_override
        return " ".join(c.text.strip() for c in self.chunks)

    @_derived
    def untrusted(self) -> bool:
        return any(c.untrusted for c in self.chunks)

    @property
    def trust_level(self) -> str:
        """untrusted if any chunk is; else user-provided if any chunk is; else trusted."""
        levels = {c.trust_level for c in self.chunks}
        for level in ("untrusted", "user-provided"):
            if level in levels:
                return level
        return "trusted"

    @property
    def compressed(self) -> bool:
        return self.text_override is not None

    @property
    def derived(self) -> bool:
        """docket wrote this text (a summary), no source did."""
        return bool(self.covers)

    def with_(self, **changes: Any) -> Passage:
        return replace(self, **changes)

    @classmethod
    def of_chunk(cls, chunk: Chunk, score: float, rank: int, untrusted: bool | None = None) -> Passage:
        """`Passage((chunk,), score, rank, (chunk.id,))`, built the fast way: the assembler makes
        one per candidate, so it fills the fields (and the derived values it knows already)
        directly instead of through the frozen dataclass's __init__. Equal to the slow way."""
        p = object.__new__(cls)
        ids = (chunk.id,)
        fields = {"chunks": (chunk,), "score": score, "rank": rank, "hits": ids, "also_in": (), "text_override": None,
                  "first": chunk, "doc": chunk.doc, "version": chunk.version, "ids": ids}
        if untrusted is not None:
            fields["untrusted"] = untrusted
        object.__setattr__(p, "__dict__", fields)  # the instance's dict given whole: no keyword dict to copy in
        return p


_PLAIN_NUMBERS = frozenset({int, float})
_ONLY_CANDIDATES = frozenset({Candidate})
_ONLY_CHUNKS = frozenset({Chunk})


def check_kinds(candidates: Any) -> list[Candidate]:
    """Caller-built candidates as a list, each a `Candidate` holding a `Chunk`: anything else (ids,
    tuples, dicts, a string) would fail deep inside a move. The error names the position, never a
    chunk id: it comes before the access filter."""
    if isinstance(candidates, (str, bytes, Mapping)) or not isinstance(candidates, Iterable):
        raise InputError(f"must be a list of docket Candidate(chunk, score, rank), got {type(candidates).__name__}",
                         field="candidates")
    given = candidates if isinstance(candidates, list) else list(candidates)
    if set(map(type, given)) <= _ONLY_CANDIDATES and {type(c.chunk) for c in given} <= _ONLY_CHUNKS:
        return given
    for n, c in enumerate(given, 1):
        if not isinstance(c, Candidate):
            raise InputError(f"must be a docket Candidate(chunk, score, rank), got {type(c).__name__}",
                             where=f"candidate {n}", field="candidates")
        if not isinstance(c.chunk, Chunk):
            raise InputError(f"must be a docket Chunk, got {type(c.chunk).__name__}", where=f"candidate {n}",
                             field="chunk")
    return given


def check_scores(candidates: list[Candidate]) -> list[Candidate]:
    """Caller-built candidates: a NaN score compares false with every floor and would pass or
    fail silently; refuse it, naming the chunk, and a rank that is no number (None, "1"), which
    would fail deep inside a move. A NumPy scalar score or rank (what a reranker or
    `np.argsort` hands back: `np.float32` is no Python float) is read as the plain number it holds,
    so the brief and its JSON hold plain numbers; the list returned is the one to use."""
    if candidates:
        scores = [getattr(c, "score", None) for c in candidates]
        ranks = [getattr(c, "rank", None) for c in candidates]
        try:  # every score and rank a plain int or float, none NaN or infinite (then neither is their exact sum)
            if (set(map(type, scores)) <= _PLAIN_NUMBERS and math.isfinite(math.fsum(scores))  # type: ignore[arg-type]
                    and set(map(type, ranks)) <= _PLAIN_NUMBERS and math.isfinite(math.fsum(ranks))):  # type: ignore[arg-type]
                return candidates
        except (OverflowError, ValueError):
            pass  # huge or infinite values: the check below names the candidate
    out = candidates
    for n, c in enumerate(candidates, 1):
        s = getattr(c, "score", None)
        s = _numpy_plain(s)
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not _finite(s):
            cid = getattr(getattr(c, "chunk", None), "id", "?")
            raise InputError(f"must be a finite number, got {shown(s)}", where=f"candidate {n} (id {shown(cid)})",
                             field="score")
        rank = _numpy_plain(c.rank)
        if isinstance(rank, bool) or not isinstance(rank, (int, float)) or not _finite(rank):  # None, "1": a crash in a move
            cid = getattr(getattr(c, "chunk", None), "id", "?")
            raise InputError(f"must be a number, the candidate's 1-based place in the ranking (1 = best), got "
                             f"{shown(rank)}", where=f"candidate {n} (id {shown(cid)})", field="rank")
        if s is not c.score or rank is not c.rank:  # a NumPy scalar (np.float64 too, a float subclass) made plain
            if out is candidates:
                out = list(candidates)
            out[n - 1] = Candidate(c.chunk, float(s) if isinstance(s, float) else s, rank)  # type: ignore[arg-type]  # a float rank as given
    return out


def _numpy_plain(x: Any) -> Any:
    """A NumPy scalar as the Python number it holds (numpy is not imported here for it)."""
    return x.item() if type(x).__module__ == "numpy" and hasattr(x, "item") else x


def _finite(x: float) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:  # an int too large for a float: no floor or cosine can be compared with it
        return False


def passage_of(c: Candidate) -> Passage:
    return Passage.of_chunk(c.chunk, c.score, c.rank)


@dataclass(eq=False)
class TraceEvent(WireMapping):
    """One decision of one move, with the numbers behind it (reads like its JSON object too)."""

    move: str
    action: str
    chunks: list[str]
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)

    _KEYS: ClassVar[tuple[str, ...]] = ("move", "action", "chunks", "reason", "numbers")
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"numbers"})

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> TraceEvent:
        if isinstance(data, TraceEvent):
            return data
        return cls(str(data["move"]), str(data["action"]), list(data.get("chunks", [])), str(data.get("reason", "")),
                   dict(data.get("numbers") or {}))

    def to_json(self) -> dict[str, Any]:
        return _event_json(self.move, self.action, self.chunks, self.reason, self.numbers)


def _event_json(move: str, action: str, chunks: list[str], reason: str, numbers: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"move": move, "action": action, "chunks": chunks, "reason": reason}
    if numbers:
        out["numbers"] = numbers
    return out


class Trace:
    """The assembler's log: every drop, merge, expansion, skip, compression and reorder.

    A pool of a thousand candidates logs a skip or a promotion for most of them, so an event is
    kept as a plain tuple: `add_format` even keeps the reason as a template and its arguments,
    formatted (exactly as an f-string with the same specs would) when the trace is read
    (`events`, `to_json`). An assembly whose trace nobody reads never formats it."""

    __slots__ = ("_raw", "_events")

    def __init__(self, events: Iterable[TraceEvent] = ()) -> None:
        #: (move, action, chunks, reason, numbers); a deferred event holds None (add_deferred) or its
        #: function (add_deferred_many) as numbers until it is read
        self._raw: list[tuple[str, str, Any, Any, Any]] = [
            (e.move, e.action, e.chunks, e.reason, e.numbers) for e in events]
        self._events: list[TraceEvent] = []

    def add(self, move: str, action: str, chunks: Iterable[str], reason: str, **numbers: Any) -> None:
        self._raw.append((move, action, list(chunks), reason, numbers))

    def add_format(self, move: str, action: str, chunks: Sequence[str], template: str, args: tuple[Any, ...],
                   **numbers: Any) -> None:
        """`add(move, action, chunks, template.format(*args), **numbers)`, formatted when read."""
        self._raw.append((move, action, chunks, (template, args), numbers))

    def add_deferred(self, move: str, action: str, chunks: Sequence[str],
                     event: Callable[[], tuple[str, dict[str, Any]]]) -> None:
        """An event whose reason and numbers `event()` computes when the trace is first read: for
        numbers that cost work and that no decision needs (the lower bound on the tokens of a
        passage the packer ruled out on it, made by the hundred in a large pool). `event` must be a pure function of what
        it holds, so the trace reads the same whenever it is read; it should hold no more than
        that (a trace may be kept long after its assembly)."""
        self._raw.append((move, action, chunks, event, None))  # numbers None: the reason is the event

    def add_deferred_many(self, move: str, action: str, chunks: Sequence[Sequence[str]],
                          event: Callable[[Any], tuple[str, dict[str, Any]]], held: Sequence[Any]) -> None:
        """`add_deferred(move, action, c, lambda: event(h))` for each pair of `chunks` and `held`, in
        order, added in one step and without a function object per event (the packer rules out
        most of a large pool on their bounds). The same rules as `add_deferred` hold for `event`."""
        self._raw.extend(zip(repeat(move), repeat(action), chunks, held, repeat(event)))

    @staticmethod
    def _event(r: tuple[str, str, Any, Any, Any]) -> tuple[str, str, list[str], str, dict[str, Any]]:
        move, action, chunks, reason, maybe = r
        if maybe is None:  # add_deferred: the event makes both now
            reason, numbers = reason()
        elif type(maybe) is not dict:  # add_deferred_many: the event makes both from what it held
            reason, numbers = maybe(reason)
        else:
            numbers = maybe
            if type(reason) is tuple:
                reason = reason[0].format(*reason[1])
        return move, action, chunks if type(chunks) is list else list(chunks), reason, numbers

    def _settle(self) -> list[tuple[str, str, list[str], str, dict[str, Any]]]:
        raw = self._raw
        for i, r in enumerate(raw):
            if type(r[3]) is not str or type(r[2]) is not list or type(r[4]) is not dict:
                raw[i] = self._event(r)
        return raw  # type: ignore[return-value]

    @property
    def events(self) -> list[TraceEvent]:
        """The events so far, in order (built on first read of each)."""
        have = self._events
        if len(have) != len(self._raw):
            have.extend(TraceEvent(*r) for r in self._settle()[len(have):])
        return have

    def __len__(self) -> int:
        return len(self._raw)

    def truncate(self, n: int) -> None:
        """Drop the events after the first `n`: a move that backs out of a decision (a summary that
        failed after its reservation) takes back the entries of the path it abandoned."""
        del self._raw[n:]
        del self._events[n:]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self._settle() == other._settle()

    def __repr__(self) -> str:
        return f"Trace({len(self._raw)} events)"

    def to_json(self) -> list[dict[str, Any]]:
        return [_event_json(*r) for r in self._settle()]
