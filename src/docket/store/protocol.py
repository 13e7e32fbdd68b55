"""The full store protocol: what indexing, retrieval and export need on top of `ChunkLookup`.

Two backends implement it with the same behaviour (one test suite runs against both): SQLite,
the embedded default (one file, no server), and PostgreSQL + pgvector for when one machine is
not enough. Rules that do not depend on the backend live here as pure functions, so the two
cannot drift apart: which older versions a new version supersedes, when a lower version is
refused, who may read a chunk, and the principal-scoped view the assembler reads through.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any, Protocol, runtime_checkable

import numpy as np

from docket.errors import InputError
from docket.model import Chunk, is_retired
from docket.store.access import AclResolution, Principal, may_read, readable_chunks
from docket.store.base import ChunkLookup, VersionInfo, version_in_force
from docket.text import SEARCH_STOPWORDS, search_terms

# --- access control (the rule and the types live in docket.store.access) --------------------

@dataclass(frozen=True)
class Filters:
    """Metadata filters applied inside the search query, before anything is ranked.

    `principal` None means anonymous: only public chunks. `unrestricted` skips the ACL and is for
    administrative work (export, copying a store) only, never for answering a question. A date
    range keeps chunks whose `date` falls in it (inclusive); undated chunks do not match a range.
    """

    docs: tuple[str, ...] = ()
    source_types: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    date_from: Date | None = None
    date_to: Date | None = None
    principal: Principal | None = None
    unrestricted: bool = False
    #: dense search exact whatever the store's size (`docket ask --exact`); without it a large
    #: SQLite store searches approximately (docs/store.md, approximate dense search)
    exact: bool = False

    @property
    def acl_names(self) -> list[str] | None:
        """Names a chunk's acl must intersect; None when the ACL is not checked."""
        if self.unrestricted:
            return None
        return sorted(self.principal.keys) if self.principal else []


# --- document versions ----------------------------------------------------------------------


@dataclass
class DocumentVersion:
    """One version of one document, the unit written in one transaction."""

    doc: str
    version: int
    status: str
    date: Date | None
    effective_to: Date | None
    title: str
    source: str  # file (and line) it came from, for reports
    chunks: list[Chunk]
    content_hash: str = ""
    supersedes: bool = True
    vectors: np.ndarray | None = None  # one unit row per chunk, float32
    tokens: list[int] | None = None
    #: one model-written context per chunk (index --contextualize), embedded and keyword-indexed
    #: with the chunk but never shown in a prompt; None = no contexts
    contexts: list[str] | None = None

    def __post_init__(self) -> None:
        if not self.content_hash:
            self.content_hash = content_hash(self.chunks, self.supersedes)


@dataclass(frozen=True)
class StoredVersion:
    doc: str
    version: int
    status: str
    date: Date | None
    effective_to: Date | None
    content_hash: str
    n_chunks: int
    source: str

    def info(self) -> VersionInfo:
        return VersionInfo(self.doc, self.version, self.status, self.date, self.effective_to)


@dataclass
class WriteResult:
    status: str  # the status the version was stored with (the one it was given)
    #: older current versions this one replaces from its date (reported; their stored status is unchanged)
    superseded: list[int] = field(default_factory=list)
    acl: AclResolution = field(default_factory=AclResolution)  # how plain acl entries were read
    replaced: bool = False  # the same document version was stored before (rewritten in place)


def content_hash(chunks: Iterable[Chunk], supersedes: bool = True) -> str:
    """sha256 of the records as they would be stored: the same input gives the same hash, so an
    unchanged document is skipped without re-embedding."""
    h = hashlib.sha256()
    h.update(b"supersedes" if supersedes else b"keeps")
    for c in chunks:
        h.update(json.dumps(c.to_record(with_vector=True), sort_keys=True, ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def check_version(existing: Sequence[StoredVersion], dv: DocumentVersion) -> None:
    """Refuse a document id reused with a lower version than the store holds.

    History may be back-filled (a lower version whose status is retired, e.g. superseded), but a
    lower version claiming to be current would silently compete with the newer rule.
    """
    if any(v.version == dv.version for v in existing):
        return  # same version: unchanged or changed in place
    higher = [v.version for v in existing if v.version > dv.version]
    if higher and not is_retired(dv.status):
        raise InputError(
            f"document {dv.doc!r} version {dv.version} is lower than stored version {max(higher)}; "
            "give it a higher version, mark it superseded, or delete the newer one",
            where=dv.source,
            field="version",
        )


def plan_write(existing: Sequence[StoredVersion], dv: DocumentVersion) -> WriteResult:
    """The status to store `dv` with (always the one it was given), and which older versions it
    supersedes once it takes effect (reported, never written).

    Which version is in force is decided at query time, per reader and per as-of date
    (`version_in_force` over the versions that reader may read): a newer version restricted to a
    group must not retire the older one for everybody else, and a version published ahead of
    time (dated next year) must not retire today's rule before its date. So indexing never
    rewrites an older version's status; the brief a principal gets is the one a store that never
    held the versions it may not read would give. `superseded` lists the lower versions stored
    as `current` that `dv` (stored `current`, without `supersedes: false`) replaces from its date.
    """
    others = [v for v in existing if v.version != dv.version]
    superseded: list[int] = []
    if dv.status == "current" and dv.supersedes:
        superseded = sorted(v.version for v in others if v.version < dv.version and v.status == "current")
    return WriteResult(status=dv.status, superseded=superseded, replaced=len(others) < len(existing))


# --- the protocol ---------------------------------------------------------------------------


@runtime_checkable
class Snapshots(Protocol):
    """A store whose reads can share one state of the data (SQLite's read transaction)."""

    def snapshot(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class Store(ChunkLookup, Protocol):
    """A chunk store. `get`, `chunks_of` and `versions` are unrestricted (administration);
    anything that serves a question goes through `scoped(principal)` or a search with `Filters`."""

    location: str

    def meta(self) -> dict[str, str]:
        """Store-wide settings, e.g. `embedder` and `dim` fixed by the first index run."""
        ...

    def set_meta(self, values: dict[str, str]) -> None: ...

    def stored_versions(self, doc: str) -> list[StoredVersion]: ...

    def stored_versions_of(self, docs: Sequence[str]) -> dict[str, list[StoredVersion]]:
        """`stored_versions` of many documents in one query (an index run plans a batch at once)."""
        ...

    def write_version(self, dv: DocumentVersion) -> WriteResult:
        """Write (or replace) one document version in one transaction: all or nothing."""
        ...

    def delete(self, doc: str, version: int | None = None) -> int:
        """Remove a document (or one version); returns the number of chunks removed."""
        ...

    def search_dense(self, qvec: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        """(chunk id, cosine) best first, only chunks passing `filters` (ACL included)."""
        ...

    def search_bm25(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        """(chunk id, BM25-like score, higher is better) best first, filtered like search_dense."""
        ...

    def get_many(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id (with their vectors), unrestricted; missing ids are absent."""
        ...

    def export(self) -> Iterator[DocumentVersion]:
        """Every document version with its chunks, vectors and token counts."""
        ...

    def documents(self) -> list[str]: ...

    def count(self) -> int: ...

    def set_principal(self, name: str, groups: Sequence[str]) -> None: ...

    def principal(self, name: str, extra_groups: Sequence[str] = ()) -> Principal:
        """The principal with its stored groups (from the principals table) plus `extra_groups`."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Every read inside the block sees one consistent state of the store (searches, fetches,
        the assembler's look-ups): a write committed meanwhile is seen by the next block."""
        ...

    def close(self) -> None: ...


class ScopedView:
    """A `ChunkLookup` that only shows what `principal` may read.

    The assembler reads neighbours, sections and versions through this view, so neighbour
    expansion can never pull a forbidden chunk into the prompt. `versions` lists only versions
    with at least one readable chunk, so even a version's existence does not leak.
    """

    def __init__(self, store: ChunkLookup, principal: Principal | None, *, memo: bool = True) -> None:
        self._store = store
        self.principal = principal
        # one view serves one question: remembering look-ups saves the assembler's repeated
        # round trips (versions and neighbours of the same documents) without going stale
        self._memo = memo
        self._chunks: dict[tuple[str, int], list[Chunk]] = {}
        self._versions: dict[str, list[VersionInfo]] = {}

    def get(self, chunk_id: str) -> Chunk | None:
        c = self._store.get(chunk_id)
        return c if c is not None and may_read(self.principal, c.acl) else None

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        key = (doc, version)
        if key not in self._chunks or not self._memo:
            self._chunks[key] = [c for c in self._store.chunks_of(doc, version) if may_read(self.principal, c.acl)]
        return list(self._chunks[key])

    def versions(self, doc: str) -> list[VersionInfo]:
        self._fill_versions([doc])
        return list(self._versions[doc])

    def _fill_versions(self, docs: Sequence[str]) -> None:
        """The readable versions of `docs` not yet remembered (all of them without the memo). A
        store that can say which versions have a chunk the principal may read
        (`readable_versions`, one query) is asked that together with `versions_many`; otherwise
        each version's chunks are read and filtered. A store that answers both at once
        (`readable_versions_of`, SQLite) is asked that."""
        docs = [d for d in dict.fromkeys(docs) if d not in self._versions or not self._memo]
        if not docs:
            return
        at_once = getattr(self._store, "readable_versions_of", None)
        if at_once is not None:
            self._versions.update(at_once(docs, self.principal))
            return
        readable = getattr(self._store, "readable_versions", None)
        many = getattr(self._store, "versions_many", None)
        if readable is not None and many is not None:
            infos, ok = many(docs), readable(docs, self.principal)
            for d in docs:
                self._versions[d] = [v for v in infos.get(d, []) if v.version in ok.get(d, ())]
            return
        for d in docs:
            self._versions[d] = [v for v in self._store.versions(d) if self.chunks_of(d, v.version)]

    def versions_many(self, docs: Sequence[str]) -> dict[str, list[VersionInfo]]:
        """`versions` of each document. Documents with no acl on any chunk (the store's
        `public_docs`) are seen whole by anyone, so the store lists theirs in one call (when it
        can: `versions_many`); the others go through the filtered `versions`."""
        public = getattr(self._store, "public_docs", None)
        inner = getattr(self._store, "versions_many", None)
        known: dict[str, list[VersionInfo]] = {}
        if public is not None and inner is not None:
            easy = [d for d in dict.fromkeys(docs) if d in public]
            if easy:
                known = inner(easy)
        self._fill_versions([d for d in docs if d not in known])
        return {d: known[d] if d in known else list(self._versions[d]) for d in docs}

    def in_force(self, docs: Sequence[str], as_of: Date | None = None) -> dict[str, VersionInfo | None]:
        """`version_in_force` of each document as this view sees it. A document whose every chunk
        is public is seen whole by anyone, so the store answers for those at once (when it says
        which they are: `public_docs`); the others go through the filtered `versions`."""
        public = getattr(self._store, "public_docs", None)
        inner = getattr(self._store, "in_force", None)
        known: dict[str, VersionInfo | None] = {}
        if docs and public is not None and inner is not None and all(map(public.__contains__, docs)):
            known = inner(list(docs), as_of)  # every document public (the common case): no pass to sort them out
            return {d: known[d] for d in docs}
        if public is not None and inner is not None:
            easy = [d for d in docs if d in public]
            if easy:
                known = inner(easy, as_of)
        self._fill_versions([d for d in docs if d not in known])
        return {d: known[d] if d in known else version_in_force(self._versions[d], as_of) for d in docs}

    def all(self) -> list[Chunk]:
        """The readable chunks of a store that can list its chunks (MemoryStore)."""
        everything = getattr(self._store, "all", None)
        if everything is None:
            raise InputError("no candidates given and the store cannot list its chunks; pass ranked candidates")
        return readable_chunks(everything(), self.principal)


def scoped(store: ChunkLookup, principal: Principal | None) -> ScopedView:
    """`store` as `principal` sees it (a view of a view of the same principal is not stacked)."""
    if isinstance(store, ScopedView) and store.principal == principal:
        return store
    return ScopedView(store, principal)


# --- helpers shared by the backends ----------------------------------------------------------

# Keyword search: questions are natural language, not query syntax, so both backends search for
# the same terms (docket.text.search_terms: the question's words without common function words).
STOPWORDS = SEARCH_STOPWORDS
fts_terms = search_terms


def search_text(context: str | None, text: str) -> str:
    """What is embedded and keyword-indexed for a chunk: its context (index --contextualize), a
    blank line, its text. The chunk's own text, not this, is what a prompt shows."""
    return f"{context}\n\n{text}" if context else text



class StoredRow(Protocol):
    """A stored chunk row read by column name (a dict, a sqlite3.Row, a psycopg dict row)."""

    def __getitem__(self, key: str) -> Any: ...


def chunk_from_row(row: StoredRow, vector: np.ndarray | Sequence[float] | None) -> Chunk:
    """A Chunk from stored columns, without re-validation (it was validated when written).

    Built like `Chunk.model_construct` (the same `__dict__`, fields set, extra and private
    state; tests/test_store_fetch.py holds them equal) without its per-field alias and default
    look-ups: a fetch of 50 rows spent most of its time there."""
    acl = row["acl"]
    if isinstance(acl, str):
        acl = json.loads(acl)
    meta = row["metadata"]
    if isinstance(meta, str):
        meta = json.loads(meta)
    if vector is not None and not isinstance(vector, tuple):
        vector = tuple(vector.tolist()) if isinstance(vector, np.ndarray) else tuple(vector)
    date, effective_to = row["date"], row["effective_to"]
    return _trusted_chunk({
        "id": row["id"],
        "doc": row["doc"],
        "text": row["text"],
        "version": row["version"],
        "status": row["status"],
        "date": date if date is None or type(date) is Date else _as_date(date),
        "effective_to": effective_to if effective_to is None or type(effective_to) is Date else _as_date(effective_to),
        "title": row["title"] or "",
        "section": row["section"] or "",
        "position": row["position"],
        "source_type": row["source_type"],
        "trust": row["trust"],
        "acl": tuple(acl) if acl is not None else None,
        "metadata": meta or {},
        "vector": vector,
    })


_CHUNK_FIELDS = tuple(Chunk.model_fields)
_new_chunk = Chunk.__new__
_set = object.__setattr__
#: the shortcut holds only while Chunk has no post-init hook, private attributes or root type
_PLAIN_MODEL = (not Chunk.__pydantic_post_init__ and not Chunk.__private_attributes__
                and not Chunk.__pydantic_root_model__ and Chunk.model_config.get("extra") != "allow")


def _trusted_chunk(fields: dict[str, Any]) -> Chunk:
    """`Chunk.model_construct(**fields)` for a dict that names every field, in field order."""
    if not _PLAIN_MODEL or len(fields) != len(_CHUNK_FIELDS):
        return Chunk.model_construct(**fields)
    c = _new_chunk(Chunk)
    _set(c, "__dict__", fields)
    _set(c, "__pydantic_fields_set__", set(_CHUNK_FIELDS))
    _set(c, "__pydantic_extra__", None)
    _set(c, "__pydantic_private__", None)
    return c


def _as_date(value: Any) -> Date | None:
    if value is None or isinstance(value, Date):
        return value
    return Date.fromisoformat(str(value))
