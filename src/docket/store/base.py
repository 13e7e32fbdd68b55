"""What the assembler asks of a chunk store.

The moves need four look-ups: a chunk by id, the chunks of one document version (for
neighbours and sections), and the versions of a document (for "the version in force").
`ChunkLookup` is that protocol; every backend (memory, SQLite, PostgreSQL) implements it, and
the moves only ever see it, so a move is testable with an in-memory list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date as Date
from typing import Protocol, runtime_checkable

from docket.model import Chunk, is_draft, is_retired


@dataclass(frozen=True)
class VersionInfo:
    doc: str
    version: int
    status: str
    date: Date | None
    effective_to: Date | None


@runtime_checkable
class ChunkLookup(Protocol):
    def get(self, chunk_id: str) -> Chunk | None: ...

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        """All chunks of one document version, in position order."""
        ...

    def versions(self, doc: str) -> list[VersionInfo]:
        """Every stored version of a document, lowest first."""
        ...


def version_in_force(versions: Sequence[VersionInfo], as_of: Date | None = None) -> VersionInfo | None:
    """The version that is the rule on `as_of` (the assembler passes today's date by default).

    A version is in force from its `date` (undated: from the start) until its `effective_to`,
    and the highest-numbered version that has started wins, so a version dated in the future
    does not replace today's rule, whatever its status says. Drafts never count. A retired
    status (superseded, archived, ...) without an `effective_to` means "until a later stored
    version took effect": a retired version with no later one is not in force on any date (we
    cannot tell when it ended). The wall clock is never read here.

    Without a date (kept for callers that have none) the status alone decides: the highest
    version that is not retired.
    """
    if as_of is None:
        live = [v for v in versions if not is_retired(v.status)]
        return max(live, key=lambda v: v.version) if live else None
    ordered = sorted((v for v in versions if not is_draft(v.status)), key=lambda v: v.version)
    best: VersionInfo | None = None
    for i, v in enumerate(ordered):
        if v.date is not None and v.date > as_of:
            continue
        if v.effective_to is not None and v.effective_to <= as_of:
            continue
        if is_retired(v.status) and v.effective_to is None and i == len(ordered) - 1:
            continue
        best = v
    return best


def versions_in_force(store: ChunkLookup, docs: Sequence[str], as_of: Date | None = None) -> dict[str, VersionInfo | None]:
    """`version_in_force` for several documents at once; a store may answer it in one go (an
    optional `in_force(docs, as_of)` method), the others are asked document by document."""
    many = getattr(store, "in_force", None)
    if many is not None:
        return many(docs, as_of)  # type: ignore[no-any-return]
    return {d: version_in_force(store.versions(d), as_of) for d in docs}


def neighbours(store: ChunkLookup, chunk: Chunk, window: int) -> list[Chunk]:
    """The chunk and up to `window` chunks either side of it in the same document version."""
    siblings = store.chunks_of(chunk.doc, chunk.version)
    idx = next((i for i, c in enumerate(siblings) if c.id == chunk.id), None)
    if idx is None:
        return [chunk]
    if chunk.position is not None:
        lo, hi = chunk.position - window, chunk.position + window
        return [c for c in siblings if c.position is not None and lo <= c.position <= hi]
    return siblings[max(0, idx - window) : idx + window + 1]


def section_of(store: ChunkLookup, doc: str, version: int, section: str) -> list[Chunk]:
    """The chunks of one section of one document version, in position order."""
    return [c for c in store.chunks_of(doc, version) if c.section == section]


def _position_key(c: Chunk) -> tuple[int, int, str]:
    return (0 if c.position is not None else 1, c.position if c.position is not None else 0, c.id)


class MemoryStore:
    """The chunks of a JSONL file (or any list) held in memory."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        from docket.model import check_unique

        check_unique(chunks)
        self._by_id = {c.id: c for c in chunks}
        self._by_docver: dict[tuple[str, int], list[Chunk]] = {}
        for c in chunks:
            self._by_docver.setdefault((c.doc, c.version), []).append(c)
        for lst in self._by_docver.values():
            lst.sort(key=_position_key)
        self._order = list(chunks)
        self._versions: dict[str, list[VersionInfo]] = {}
        for (d, v), cs in self._by_docver.items():
            # a version's status and dates are its first chunk's, and a trusted chunk's when it has one: a
            # stranger's chunk stored under an official document's id and version ("superseded", first
            # position) must not retire the official text (the importers refuse chunks that disagree)
            c = next((x for x in cs if not x.untrusted), cs[0])
            self._versions.setdefault(d, []).append(VersionInfo(d, v, c.status, c.date, c.effective_to))
        for infos in self._versions.values():
            infos.sort(key=lambda x: x.version)
        #: as-of date -> document -> its version in force then (memoised: the store never changes)
        self._in_force: dict[Date | None, dict[str, VersionInfo | None]] = {}
        self._in_force_size = 0
        #: documents with no acl on any chunk: every reader sees all of them
        restricted = {d for (d, _), cs in self._by_docver.items() if any(c.acl is not None for c in cs)}
        self.public_docs = frozenset(d for d, _ in self._by_docver) - restricted

    def __len__(self) -> int:
        return len(self._by_id)

    def all(self) -> list[Chunk]:
        return list(self._order)

    def get(self, chunk_id: str) -> Chunk | None:
        return self._by_id.get(chunk_id)

    def chunks_of(self, doc: str, version: int) -> list[Chunk]:
        return list(self._by_docver.get((doc, version), []))

    def versions(self, doc: str) -> list[VersionInfo]:
        return list(self._versions.get(doc, ()))

    def versions_many(self, docs: Sequence[str]) -> dict[str, list[VersionInfo]]:
        """`versions` of each document, in one call."""
        got = self._versions.get
        return {d: list(got(d, ())) for d in docs}

    def in_force(self, docs: Sequence[str], as_of: Date | None = None) -> dict[str, VersionInfo | None]:
        """The version in force of each document (the store never changes, so this is memoised,
        one table per as-of date: a pool already seen is answered by one dict comprehension)."""
        memo = self._in_force.get(as_of)
        if memo is None:
            if self._in_force_size > 200_000:  # many as-of dates: start again rather than grow without bound
                self._in_force.clear()
                self._in_force_size = 0
            memo = self._in_force[as_of] = {}
        try:
            return {d: memo[d] for d in docs}
        except KeyError:
            pass
        versions = self._versions
        for d in docs:
            if d not in memo:
                memo[d] = version_in_force(versions.get(d, ()), as_of)
                self._in_force_size += 1
        return {d: memo[d] for d in docs}
