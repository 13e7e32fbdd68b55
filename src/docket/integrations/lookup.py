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
A store document that cannot be mapped is skipped and counted (per call, in the trace), never
fatal to an unrelated query; it is reported only to an asker who may read it (its acl decides,
and one whose acl cannot be read is reported to nobody), so a restricted document's id or
problem never reaches a stranger's trace. Sources are shared across calls and threads: per-call state lives
in the CallLookup.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from docket.errors import InputError
from docket.integrations.mapping import FieldMap, RawDoc, acl_of, to_chunk
from docket.model import Chunk
from docket.store.access import Principal, may_read
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


#: the acl of a store document whose acl itself cannot be read: reported to nobody
NOBODY: tuple[str, ...] = ()


class Problems:
    """Store documents one call could not map: each message with the acl of its document, so
    that an asker hears only of documents it may read."""

    def __init__(self) -> None:
        self.found: list[tuple[str, tuple[str, ...] | None]] = []

    def add(self, err: InputError, acl: tuple[str, ...] | None = NOBODY) -> None:
        self.found.append((str(err), acl))

    def extend(self, other: Problems) -> None:
        self.found.extend(other.found)

    def notes(self, name: str, asker: Principal | None = None) -> list[str]:
        seen = [message for message, acl in self.found if may_read(asker, acl)]
        if not seen:
            return []
        return [f"{len(seen)} document(s) of the {name} could not be mapped and are not used for look-ups "
                f"(first: {seen[0]})"]


class Source(Protocol):
    """A framework store as docket reads it."""

    name: str
    #: True when `get` is a memory look-up (so docket may check every retrieved id)
    cheap: bool

    def prepare(self, ids: Sequence[str], problems: Problems) -> None:
        """Called once per query with the retrieved ids (a chance to re-read a changed store)."""
        ...

    def get(self, chunk_id: str, problems: Problems) -> Entry | None: ...

    def groups(self, docs: Sequence[str], problems: Problems) -> dict[str, list[Entry]]:
        """Every chunk of each document, all versions (one round trip where the store allows)."""
        ...


def _map(raw: RawDoc, fields: FieldMap, problems: Problems) -> Entry | None:
    try:
        chunk, _ = to_chunk(raw, fields)
    except InputError as e:
        try:
            acl = acl_of(raw, fields)
        except Exception:  # noqa: BLE001 - a hook or acl that fails: nobody can be told
            acl = NOBODY
        problems.add(e, acl)
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
        self._problems = Problems()
        self._lock = threading.Lock()

    def refresh(self) -> None:
        """Read the store again (after you add or delete documents)."""
        with self._lock:
            problems = Problems()
            by_id: dict[str, Entry] = {}
            by_doc: dict[str, list[Entry]] = {}
            for raw in self._scan():
                entry = _map(raw, self._fields, problems)
                if entry is None or entry[0].id in by_id:
                    continue
                by_id[entry[0].id] = entry
                by_doc.setdefault(entry[0].doc, []).append(entry)
            self._by_id, self._by_doc, self._problems = by_id, by_doc, problems
            self._read_size = self._size() if self._size else None
            self._loaded = True

    def prepare(self, ids: Sequence[str], problems: Problems) -> None:
        if not self._loaded:
            self.refresh()
        elif any(i not in self._by_id for i in ids) and self._size is not None and self._size() != self._read_size:
            self.refresh()
        problems.extend(self._problems)

    def get(self, chunk_id: str, problems: Problems) -> Entry | None:
        return self._by_id.get(chunk_id)

    def groups(self, docs: Sequence[str], problems: Problems) -> dict[str, list[Entry]]:
        return {d: list(self._by_doc.get(d, [])) for d in docs}

    def __len__(self) -> int:
        return len(self._by_id)

    def readable(self, asker: Principal | None) -> int:
        """How many of the store's documents `asker` may read (the only count a trace may give)."""
        return sum(1 for c, _ in self._by_id.values() if may_read(asker, c.acl))


class QuerySource:
    """A store asked per call: `by_id(id)` returns RawDocs with that id, `by_docs(docs)` the
    RawDocs that may belong to those documents (the mapping has the last word)."""

    def __init__(self, name: str, by_id: Callable[[str], Iterable[RawDoc]],
                 by_docs: Callable[[Sequence[str]], Iterable[RawDoc]], fields: FieldMap) -> None:
        self.name = name
        self.cheap = False
        self._by_id = by_id
        self._by_docs = by_docs
        self._fields = fields

    def prepare(self, ids: Sequence[str], problems: Problems) -> None:
        pass

    def get(self, chunk_id: str, problems: Problems) -> Entry | None:
        for raw in self._by_id(chunk_id):
            entry = _map(raw, self._fields, problems)
            if entry is not None and entry[0].id == chunk_id:
                return entry
        return None

    def groups(self, docs: Sequence[str], problems: Problems) -> dict[str, list[Entry]]:
        want = set(docs)
        out: dict[str, dict[str, Entry]] = {d: {} for d in docs}
        if not docs:
            return {}
        for raw in self._by_docs(list(docs)):
            entry = _map(raw, self._fields, problems)
            if entry is not None and entry[0].doc in want:
                out[entry[0].doc].setdefault(entry[0].id, entry)
        return {d: list(v.values()) for d, v in out.items()}


@dataclass
class CallLookup:
    """The ChunkLookup of one query: the retrieved chunks first, then the store (if any).

    The store is asked once for every retrieved chunk's document (one round trip for a
    QuerySource), and results are memoised for the call."""

    retrieved: list[Entry]
    source: Source | None = None
    #: who is asking (the problems the trace reports are the ones this asker may read)
    asker: Principal | None = None
    problems: Problems = field(default_factory=Problems)
    _by_id: dict[str, Entry] = field(default_factory=dict)
    _groups: dict[str, list[Entry]] = field(default_factory=dict)
    _seen: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for n, entry in enumerate(self.retrieved):
            self._by_id.setdefault(entry[0].id, entry)
            self._seen.setdefault(entry[0].id, n)
        if self.source is not None:
            self.source.prepare([e[0].id for e in self.retrieved], self.problems)
            docs = list(dict.fromkeys(e[0].doc for e in self.retrieved))
            fetched = self.source.groups(docs, self.problems)
            for doc in docs:
                self._groups[doc] = self._merge(doc, fetched.get(doc, []))

    def _merge(self, doc: str, stored: list[Entry]) -> list[Entry]:
        merged: dict[str, Entry] = {}
        for entry in stored:
            merged.setdefault(entry[0].id, entry)
        for entry in self.retrieved:  # the retrieved copy wins: it is the text the moves work on
            if entry[0].doc == doc:
                merged[entry[0].id] = entry
        base = len(self.retrieved)
        return sorted(merged.values(), key=lambda e: order_key(e, self._seen.get(e[0].id, base)))

    def get(self, chunk_id: str) -> Chunk | None:
        entry = self._by_id.get(chunk_id)
        if entry is None and self.source is not None:
            entry = self.source.get(chunk_id, self.problems)
            if entry is not None:
                self._by_id[chunk_id] = entry
        return entry[0] if entry else None

    def _group(self, doc: str) -> list[Entry]:
        if doc not in self._groups:
            stored = self.source.groups([doc], self.problems).get(doc, []) if self.source is not None else []
            self._groups[doc] = self._merge(doc, stored)
        return self._groups[doc]

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        return [c for c, _ in self._group(doc) if c.version == version]

    def versions(self, doc: str) -> list[VersionInfo]:
        firsts: dict[int, Chunk] = {}
        for c, _ in self._group(doc):
            firsts.setdefault(c.version, c)
        return [VersionInfo(doc, v, c.status, c.date, c.effective_to) for v, c in sorted(firsts.items())]

    def readable_in_store(self) -> int | None:
        """The store's documents this call's asker may read (None when the store cannot say
        without listing itself)."""
        count = getattr(self.source, "readable", None)
        return count(self.asker) if count is not None else None

    def missing_from_store(self) -> list[str]:
        """Retrieved ids the store does not hold (their neighbours cannot be found there)."""
        if self.source is None or not self.source.cheap:
            return []
        return [c.id for c, _ in self.retrieved if self.source.get(c.id, self.problems) is None]

    def notes(self) -> list[str]:
        return self.problems.notes(self.source.name, self.asker) if self.source is not None else []
