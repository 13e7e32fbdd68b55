"""The store look-ups docket's moves need (ChunkLookup), answered by a framework's store.

Neighbour expansion asks for the other chunks of a document version, and version handling asks
which versions of a document exist. Inside a framework those live in its document store
(LangChain's in-memory vector store or a `BaseStore`, LlamaIndex's docstore, Haystack's
`DocumentStore`). A `Source` reads that store through the framework module's mapping; the
`CallLookup` of one call answers from the retrieved documents first and the store second, so a
retrieved chunk the store lacks still counts. Without a store docket sees only the retrieved
documents, and the trace says so.

Two kinds of source: `ScanSource` reads a store that can list itself once and groups it by
document (re-read when the store's size changes, or on `refresh()`); `QuerySource` asks the
store for one document's chunks at a time (Haystack's filters), for stores too big to list.
A store document that cannot be mapped is skipped and counted, never fatal to an unrelated query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from docket.errors import InputError
from docket.integrations.mapping import FieldMap, RawDoc, to_chunk
from docket.model import Chunk
from docket.store.base import VersionInfo

#: a chunk with the framework's order hint (a character offset: LlamaIndex start_char_idx,
#: Haystack split_idx_start, LangChain start_index) for chunks without a position
Entry = tuple[Chunk, float | None]


def order_key(entry: Entry, seen: int) -> tuple[int, float, float, int, str]:
    chunk, hint = entry
    return (0 if chunk.position is not None else 1, chunk.position if chunk.position is not None else 0,
            hint if hint is not None else float("inf"), seen, chunk.id)


def hint_of(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class Source(Protocol):
    """A framework store as docket reads it."""

    name: str
    #: True when `get` is a memory look-up (so docket may check every retrieved id)
    cheap: bool

    def get(self, chunk_id: str) -> Entry | None: ...

    def group(self, doc: str) -> list[Entry]:
        """Every chunk of one document, all versions."""
        ...

    def prepare(self, ids: Sequence[str]) -> None:
        """Called once per query with the retrieved ids (a chance to re-read a changed store)."""
        ...

    def notes(self) -> list[str]: ...


@dataclass
class _Problems:
    count: int = 0
    first: str = ""

    def add(self, err: InputError) -> None:
        self.count += 1
        self.first = self.first or str(err)

    def notes(self, name: str) -> list[str]:
        if not self.count:
            return []
        return [f"{self.count} document(s) of the {name} could not be mapped and are not used for look-ups "
                f"(first: {self.first})"]


def _map(raw: RawDoc, fields: FieldMap, problems: _Problems) -> Entry | None:
    try:
        chunk, _ = to_chunk(raw, fields)
    except InputError as e:
        problems.add(e)
        return None
    return chunk, hint_of(raw.order)


class ScanSource:
    """A store read whole: `scan()` yields its RawDocs; `size()` (cheap) says when to re-read."""

    def __init__(self, name: str, scan: Callable[[], Iterable[RawDoc]], fields: FieldMap,
                 size: Callable[[], int] | None = None) -> None:
        self.name = name
        self.cheap = True
        self._scan = scan
        self._size = size
        self._fields = fields
        self._by_id: dict[str, Entry] = {}
        self._by_doc: dict[str, list[Entry]] = {}
        self._read_size: int | None = None
        self._loaded = False
        self._problems = _Problems()

    def refresh(self) -> None:
        """Read the store again (after you add or delete documents)."""
        self._problems = _Problems()
        by_id: dict[str, Entry] = {}
        by_doc: dict[str, list[Entry]] = {}
        for raw in self._scan():
            entry = _map(raw, self._fields, self._problems)
            if entry is None or entry[0].id in by_id:
                continue
            by_id[entry[0].id] = entry
            by_doc.setdefault(entry[0].doc, []).append(entry)
        self._by_id, self._by_doc = by_id, by_doc
        self._read_size = self._size() if self._size else None
        self._loaded = True

    def prepare(self, ids: Sequence[str]) -> None:
        if not self._loaded:
            self.refresh()
        elif any(i not in self._by_id for i in ids) and self._size is not None and self._size() != self._read_size:
            self.refresh()

    def get(self, chunk_id: str) -> Entry | None:
        return self._by_id.get(chunk_id)

    def group(self, doc: str) -> list[Entry]:
        return list(self._by_doc.get(doc, []))

    def notes(self) -> list[str]:
        return self._problems.notes(self.name)

    def __len__(self) -> int:
        return len(self._by_id)


class QuerySource:
    """A store asked per document: `by_id(id)` and `by_doc(doc)` return RawDocs (candidates for
    that doc: the mapping has the last word on which chunks belong to it)."""

    def __init__(self, name: str, by_id: Callable[[str], Iterable[RawDoc]], by_doc: Callable[[str], Iterable[RawDoc]],
                 fields: FieldMap) -> None:
        self.name = name
        self.cheap = False
        self._by_id = by_id
        self._by_doc = by_doc
        self._fields = fields
        self._problems = _Problems()

    def prepare(self, ids: Sequence[str]) -> None:
        self._problems = _Problems()

    def get(self, chunk_id: str) -> Entry | None:
        for raw in self._by_id(chunk_id):
            entry = _map(raw, self._fields, self._problems)
            if entry is not None and entry[0].id == chunk_id:
                return entry
        return None

    def group(self, doc: str) -> list[Entry]:
        out: dict[str, Entry] = {}
        for raw in self._by_doc(doc):
            entry = _map(raw, self._fields, self._problems)
            if entry is not None and entry[0].doc == doc:
                out.setdefault(entry[0].id, entry)
        return list(out.values())

    def notes(self) -> list[str]:
        return self._problems.notes(self.name)


@dataclass
class CallLookup:
    """The ChunkLookup of one query: the retrieved chunks first, then the store (if any).

    Results are memoised for the call, so a store is asked about each document once."""

    retrieved: list[Entry]
    source: Source | None = None
    _by_id: dict[str, Entry] = field(default_factory=dict)
    _groups: dict[str, list[Entry]] = field(default_factory=dict)
    _seen: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for n, entry in enumerate(self.retrieved):
            self._by_id.setdefault(entry[0].id, entry)
            self._seen.setdefault(entry[0].id, n)
        if self.source is not None:
            self.source.prepare([e[0].id for e in self.retrieved])

    def get(self, chunk_id: str) -> Chunk | None:
        entry = self._by_id.get(chunk_id)
        if entry is None and self.source is not None:
            entry = self.source.get(chunk_id)
            if entry is not None:
                self._by_id[chunk_id] = entry
        return entry[0] if entry else None

    def _group(self, doc: str) -> list[Entry]:
        if doc not in self._groups:
            merged: dict[str, Entry] = {}
            if self.source is not None:
                for entry in self.source.group(doc):
                    merged.setdefault(entry[0].id, entry)
            for entry in self.retrieved:  # the retrieved copy wins: it is the text the moves work on
                if entry[0].doc == doc:
                    merged[entry[0].id] = entry
            base = len(self.retrieved)
            ordered = sorted(merged.values(), key=lambda e: order_key(e, self._seen.get(e[0].id, base)))
            self._groups[doc] = ordered
        return self._groups[doc]

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        return [c for c, _ in self._group(doc) if c.version == version]

    def versions(self, doc: str) -> list[VersionInfo]:
        firsts: dict[int, Chunk] = {}
        for c, _ in self._group(doc):
            firsts.setdefault(c.version, c)
        return [VersionInfo(doc, v, c.status, c.date, c.effective_to) for v, c in sorted(firsts.items())]

    def missing_from_store(self) -> list[str]:
        """Retrieved ids the store does not hold (their neighbours cannot be found there)."""
        if self.source is None or not self.source.cheap:
            return []
        return [c.id for c, _ in self.retrieved if self.source.get(c.id) is None]
